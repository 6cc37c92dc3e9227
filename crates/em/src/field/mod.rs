//! Magnetic fields for charged tracks (issue #31): so far the uniform field and its analytic
//! helix ([`helix`]). Field maps, the Dormand–Prince integrator and boundary crossing along the
//! curved path are the next steps.

pub mod helix;

pub use helix::{Helix, UniformField};
