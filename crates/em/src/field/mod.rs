//! Magnetic fields for charged tracks (issue #31): the uniform field and its analytic helix
//! ([`helix`]), field maps on an (r, z) grid ([`map`]) integrated with Dormand–Prince 5(4)
//! ([`rk`]), and boundary crossing along the curved path through the volume tree
//! ([`propagate`]).

pub mod helix;
pub mod map;
pub mod propagate;
pub mod rk;

pub use helix::{Helix, UniformField};
pub use map::FieldMap;

/// The field of a run: uniform, or a map (shared, read once).
#[derive(Clone, Debug, PartialEq)]
pub enum Field {
    Uniform(UniformField),
    Map(std::sync::Arc<FieldMap>),
}

impl Field {
    /// The largest |B| [T] (the uniform field's, the map's largest node value).
    #[must_use]
    pub fn b_max(&self) -> f64 {
        match self {
            Field::Uniform(u) => u.b.norm(),
            Field::Map(m) => m.b_max,
        }
    }
}
