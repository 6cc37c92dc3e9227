//! `warpdrive-spline`: photospline B-spline tables and Millipede energy unfolding
//! (`../shared/specs/spline.md`).
//!
//! * [`fits`] — the FITS subset photospline uses (read and write).
//! * [`table`] — [`SplineTable`]: knots, orders, extents, float32 coefficients, aux keys.
//! * [`eval`] — value, gradient, batch and grid evaluation on the CPU (the general routine).
//! * [`evaluator`] — the fast CPU evaluator of many points (cell knot search, de Boor basis, runs).
//! * [`fit`] — fitting tables: penalized tensor-product B-splines of histograms (GLAM).
//! * [`anchor`] — `bench spline --against photospline`: photospline and warpdrive side by side.
//! * [`millipede`] — response matrices, binning, NNLS/PCG Poisson unfolding, synthetic events.
//! * [`gpu`] — the CUDA evaluator and response-matrix builder (`kernels/spline.cu`).
//! * [`layout`] — coefficient layouts for the GPU (photospline's, and a redundant window copy).
//! * [`engine`] — the runs as validated requests (`Eval`, `Grid`, `Simulate`, `Unfold`) that the
//!   CLI and the Python package share.
//! * [`files`] — every input read once through a bounded reader that sniffs the format.
//! * [`points`] — points files, and evaluation in chunks with progress and cancellation.

// The evaluators and solvers index several arrays by one dimension/source index, as the
// equations do; iterator chains would hide that.
#![allow(clippy::needless_range_loop)]

pub mod anchor;
pub mod bench;
pub mod engine;
pub mod eval;
pub mod evaluator;
pub mod event_list;
pub mod files;
pub mod fit;
pub mod fits;
pub mod gpu;
pub mod gpu_check;
pub mod histogram;
pub mod layout;
pub mod millipede;
pub mod npz;
pub mod points;
pub mod table;

pub use table::SplineTable;
