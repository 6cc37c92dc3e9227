//! Detector geometry for EM showers (issue #31), on the CPU: solids with their navigation
//! primitives ([`solid`], built by [`shapes`]), the volume tree in flat arrays ([`volumes`]),
//! and the navigator ([`navigator`]). The GDML reader ([`crate::gdml`]) builds these.
//!
//! Units: mm and rad, f64 throughout. Tolerances: a surface is
//! [`solid::SURFACE_TOLERANCE`] = 0.5e-9 mm thick on each side; a crossing track is pushed
//! [`navigator::PUSH`] = 1e-9 mm past the boundary.
//!
//! GPU twin ([`gpu`], kernels/geo/): the flat records of [`device`], one CUDA function per Rust
//! function of [`vec3`], [`roots`], [`solid`], [`navigator`] and [`trace`].
//!
//! Why this layout: no trait objects or boxes in the hot paths. Solids are enum values in one arena
//! with operands by index; volumes and placements are flat arrays with index ranges; the
//! per-point algorithms (`contains`, roots, the segment walk, locate, next step) are loops over
//! those arrays and can be written line by line in CUDA (the polygon vertices of polycones
//! and polyhedra then go into one array with (start, count) per solid).

pub mod bvh;
pub mod crowd;
pub mod device;
pub mod gpu;
pub mod navigator;
pub mod overlaps;
pub mod roots;
pub mod shapes;
pub mod solid;
pub mod trace;
pub mod vec3;
pub mod volumes;
pub mod zoo;

pub use navigator::{Boundary, Navigator, VolumePath};
pub use solid::{Aabb, BoolOp, Inside, Solid, SolidId, Solids};
pub use vec3::{Rot3, Transform, Vec3};
pub use volumes::{LogicalVolume, Placement, TreeBuilder, VolumeTree};
