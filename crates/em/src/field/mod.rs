//! Magnetic fields for charged tracks (issue #31): so far the uniform field, its analytic helix
//! ([`helix`]) and boundary crossing along the helix through the volume tree ([`propagate`]).
//! Field maps and the Dormand–Prince integrator are the next steps.

pub mod helix;
pub mod propagate;

pub use helix::{Helix, UniformField};
