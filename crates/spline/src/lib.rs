//! `warpdrive-spline`: photospline B-spline tables and Millipede energy unfolding
//! (`../shared/specs/spline.md`).
//!
//! * [`fits`] — the FITS subset photospline uses (read and write).
//! * [`table`] — [`SplineTable`]: knots, orders, extents, float32 coefficients, aux keys.
//! * [`eval`] — value, gradient, batch and grid evaluation on the CPU.

pub mod eval;
pub mod fits;
pub mod table;

pub use table::SplineTable;
