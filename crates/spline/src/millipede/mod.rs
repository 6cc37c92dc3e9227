//! Millipede energy unfolding (spec §2): the forward model and response matrix ([`model`]),
//! event pulses and their binning ([`event`]), the non-negative Poisson solvers and Fisher
//! uncertainties ([`solve`]), synthetic events drawn from the same tables ([`synth`]), the model
//! files and hypothesis of a request ([`unfold`]) and the energies plot ([`plot`]); the runs
//! themselves are `crate::engine::{Simulate, Unfold}`.

pub mod event;
pub mod model;
pub mod plot;
pub mod solve;
pub mod synth;
pub mod unfold;
