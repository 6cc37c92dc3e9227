//! Evaluation of a table at a batch of points on the device the user chose: the one entry point
//! behind `warpdrive spline eval` and the Python package's `Table.eval`.

use crate::gpu::{self, EvalOptions};
use crate::SplineTable;
use warpdrive_core::cuda::GpuError;

/// Where and how to evaluate.
#[derive(Clone, Debug)]
pub struct PointsOptions {
    /// Value and gradient (`ndim + 1` numbers per point) instead of the value alone.
    pub gradient: bool,
    /// GPU ordinals (`None`: the CPU path on the current rayon pool). Only the first is used.
    pub devices: Option<Vec<usize>>,
    /// GPU: the redundant window layout (default) instead of photospline's own.
    pub window: bool,
    /// GPU: IEEE arithmetic, no fast-math intrinsics.
    pub precise: bool,
}

/// Evaluate `t` at `points` (row-major, `ndim` coordinates per point). Returns one value per point,
/// or `ndim + 1` numbers per point (value, then ∂/∂x_d) with `gradient`, and a description of the
/// device ("cpu" or the GPU's name with "(float32)").
pub fn evaluate_points(t: &SplineTable, points: &[f64], opts: &PointsOptions) -> Result<(Vec<f64>, String), GpuError> {
    let nd = t.ndim();
    if nd == 0 || !points.len().is_multiple_of(nd) {
        return Err(GpuError::Other(format!("{} coordinates are not a multiple of {nd}", points.len())));
    }
    match &opts.devices {
        Some(devs) => {
            let ordinal = devs.first().copied().unwrap_or(0);
            let eo = EvalOptions {
                window: opts.window,
                gradient: opts.gradient,
                repeats: 1,
                precise: opts.precise,
            };
            let (v, st) = gpu::evaluate(t, points, ordinal, &eo)?;
            Ok((v.into_iter().map(f64::from).collect(), format!("{} (float32)", st.device)))
        }
        None if opts.gradient => Ok((t.gradient_many(points), "cpu".into())),
        None => Ok((t.evaluate_many(points), "cpu".into())),
    }
}
