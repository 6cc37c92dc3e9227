//! warpdrive-beam: ELEGANT-style beam tracking (spec `../shared/specs/beam.md`).
//!
//! Status (issue #5): the element physics foundation — exact drift and multipole body maps,
//! order-2 power series, and the second-order transfer maps derived from them. Lattice input,
//! beams, LSCDRIFT, the CLI and the GPU kernels are not built yet.

// Index loops mirror the matrix notation R_ij, T_ijk of the spec.
#![allow(clippy::needless_range_loop)]

pub mod exact;
pub mod map;
pub mod tpsa;

pub use map::{Element, Map2};
