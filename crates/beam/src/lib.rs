//! warpdrive-beam: ELEGANT-style beam tracking (spec `../shared/specs/beam.md`).
//!
//! * [`tpsa`], [`exact`], [`map`]: element physics — exact drift and multipole maps, and the
//!   second-order maps (C, R, T) derived from them by order-2 power series.
//! * [`lattice`]: ELEGANT `.lte` input; [`program`]: a lattice compiled into runs of map elements
//!   and the collective/output steps between them, with the CPU map loops.
//! * [`beam`]: particles (struct-of-arrays, loss flags), Gaussian beams from Twiss parameters,
//!   Parquet in/out, moments; [`lsc`] and [`bessel`]: longitudinal space charge.
//! * [`track`]: the tracking driver (passes, watch points) over a CPU or GPU back end;
//!   [`gpu`]: generated map kernels and the LSC kernels; [`optics`]: linear envelope for plots.

// Index loops mirror the matrix notation R_ij, T_ijk of the spec.
#![allow(clippy::needless_range_loop)]

pub mod beam;
pub mod bessel;
pub mod exact;
pub mod gpu;
pub mod gpu_check;
pub mod lattice;
pub mod lsc;
pub mod map;
pub mod optics;
pub mod program;
pub mod setup;
pub mod tpsa;
pub mod track;

pub use map::{Element, Map2};
