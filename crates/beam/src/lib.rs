//! warpdrive-beam: ELEGANT-style beam tracking (spec `../shared/specs/beam.md`).
//!
//! * [`tpsa`], [`exact`], [`map`]: element physics — exact drift and multipole maps, and the
//!   second-order maps (C, R, T) derived from them by order-2 power series.
//! * [`lattice`]: ELEGANT `.lte` input; [`aperture`]: MAXAMP, RCOL, ECOL openings; [`program`]: a lattice compiled into runs of map elements
//!   and the collective/output steps between them, with the CPU map loops.
//! * [`beam`]: particles (struct-of-arrays, loss flags), Gaussian beams from Twiss parameters,
//!   Parquet in/out; [`moments`]: moments folded block by block (split-independent); [`lsc`] and [`bessel`]: longitudinal space charge.
//! * [`track`]: the tracking driver (passes, watch points, progress and cancellation) over a
//!   CPU or GPU back end; [`gpu`]: generated map kernels and the LSC kernels; [`optics`]: linear
//!   envelope for plots; [`watch`]: which watch records a run keeps and where they go.
//! * [`ele`]: ELEGANT `.ele` run files; [`matrix`]: a line's first/second-order transfer maps
//!   (`matrix_output`).
//! * [`engine`]: the runs as library calls shared by the CLI and Python (`Line`, `Bunch`,
//!   `Track`); [`beam_file`]: beam files and arrays checked into particles; [`species`].

// Index loops mirror the matrix notation R_ij, T_ijk of the spec.
#![allow(clippy::needless_range_loop)]

pub mod aperture;
pub mod beam;
pub mod beam_file;
pub mod bench;
pub mod bessel;
pub mod coupled;
pub mod ele;
pub mod elements;
pub mod engine;
pub mod exact;
pub mod gpu;
pub mod gpu_check;
pub mod lattice;
pub mod losses;
pub mod lsc;
pub mod map;
pub mod matrix;
pub mod moments;
pub mod optics;
pub mod program;
pub mod sdds;
pub mod sdds_out;
pub mod species;
pub mod tpsa;
pub mod track;
pub mod twiss;
pub mod watch;

pub use map::{Element, Map2};
