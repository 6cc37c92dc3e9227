//! Millipede energy unfolding (spec §2): the forward model and response matrix ([`model`]),
//! event pulses and their binning ([`event`]), the non-negative Poisson solvers and Fisher
//! uncertainties ([`solve`]), synthetic events drawn from the same tables ([`synth`]) and one
//! unfolding end to end as the CLI and Python run it ([`unfold`]).

pub mod event;
pub mod model;
pub mod solve;
pub mod synth;
pub mod unfold;
