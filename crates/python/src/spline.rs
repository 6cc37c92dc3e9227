//! `warpdrive.spline`: photospline tables (`warpdrive spline info|eval`).

use crate::errors;
use numpy::{IntoPyArray, PyArray1, PyArrayMethods, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::{Path, PathBuf};
use warpdrive_spline::millipede::event::{Binning, Event};
use warpdrive_spline::millipede::model::Hypothesis;
use warpdrive_spline::millipede::solve::SolveOptions;
use warpdrive_spline::millipede::unfold::{model_and_geometry, unfold_event, UnfoldError, UnfoldOptions};
use warpdrive_spline::points::{evaluate_points, PointsOptions};
use warpdrive_spline::SplineTable as Table;

/// A photospline table read once (`warpdrive spline info`).
#[pyclass(module = "warpdrive._warpdrive", frozen)]
pub struct SplineTable {
    table: Table,
    path: PathBuf,
}

#[pymethods]
impl SplineTable {
    #[new]
    fn new(path: PathBuf) -> PyResult<Self> {
        let table = Table::read(&path).map_err(|e| errors::input(&e))?;
        Ok(Self { table, path })
    }

    #[getter]
    fn ndim(&self) -> usize {
        self.table.ndim()
    }

    #[getter]
    fn extents(&self) -> Vec<(f64, f64)> {
        self.table.extents.iter().map(|e| (e[0], e[1])).collect()
    }

    #[getter]
    fn order(&self) -> Vec<u32> {
        self.table.order.clone()
    }

    #[getter]
    fn knots(&self) -> Vec<Vec<f64>> {
        self.table.knots.clone()
    }

    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Evaluate at `points` (N, ndim) float64. Returns (N,) values, or with `gradient` an
    /// (N, ndim + 1) array: value then ∂/∂x_d per row (the layout the library computes; the Python
    /// wrapper hands out views of it). C-contiguous input is read in place.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (points, gradient=false, device="auto", threads=None, precise=false, standard_layout=false))]
    fn eval<'py>(
        &self,
        py: Python<'py>,
        points: PyReadonlyArray2<'py, f64>,
        gradient: bool,
        device: &str,
        threads: Option<usize>,
        precise: bool,
        standard_layout: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let nd = self.table.ndim();
        let shape = points.shape();
        if shape[1] != nd {
            return Err(errors::value(format!(
                "points have {} columns for a {nd}-D table ({})",
                shape[1],
                self.path.display()
            )));
        }
        let n = shape[0];
        let owned;
        // `as_slice` also accepts Fortran order, whose memory is column-major: only a
        // C-contiguous array is read in place, anything else is copied in row-major order.
        let flat: &[f64] = match points.as_slice() {
            Ok(s) if points.is_c_contiguous() => s,
            _ => {
                owned = points.as_array().iter().copied().collect::<Vec<f64>>();
                &owned
            }
        };
        let opts = PointsOptions {
            gradient,
            devices: crate::run::devices(device)?,
            window: !standard_layout,
            precise,
        };
        let table = &self.table;
        let (values, _how) =
            crate::run::legacy(py, threads, None, 0, |_| evaluate_points(table, flat, &opts))?.map_err(|e| errors::gpu(&e))?;
        let arr: Bound<'py, PyArray1<f64>> = values.into_pyarray(py);
        if gradient {
            Ok(arr.reshape([n, nd + 1])?.into_any())
        } else {
            Ok(arr.into_any())
        }
    }
}

/// An event's (string, om, time, charge) columns from Python.
type PulseColumns = (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>);

fn unfold_error(e: &UnfoldError) -> PyErr {
    match e {
        UnfoldError::Input(m) => errors::value(m.clone()),
        UnfoldError::File(e) => errors::input(e),
        UnfoldError::Gpu(e) => errors::gpu(e),
    }
}

/// Millipede (`warpdrive spline unfold`): the event from the Parquet file `event` or from the
/// columns `pulses` = (string, om, time, charge) with `window` (None: the default around the
/// pulses). Returns a dict: the energies table's columns as (name, array) pairs under `columns`,
/// the covariance (n, n) and the fit's numbers under the summary.json keys.
#[pyfunction]
#[pyo3(signature = (event, pulses, window, cascade, track, spacing, amplitude, timing, amplitude_only, geometry, noise_rate, solver, regularization, photons_per_bin, tolerance, max_iterations, device, threads, precise))]
#[allow(clippy::too_many_arguments)]
pub fn spline_unfold<'py>(
    py: Python<'py>,
    event: Option<PathBuf>,
    pulses: Option<PulseColumns>,
    window: Option<(f64, f64)>,
    cascade: Vec<f64>,
    track: Vec<f64>,
    spacing: f64,
    amplitude: Option<PathBuf>,
    timing: Option<PathBuf>,
    amplitude_only: bool,
    geometry: Option<PathBuf>,
    noise_rate: f64,
    solver: &str,
    regularization: f64,
    photons_per_bin: f64,
    tolerance: f64,
    max_iterations: usize,
    device: &str,
    threads: Option<usize>,
    precise: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let (model, geo) = model_and_geometry(amplitude.as_deref(), timing.as_deref(), amplitude_only, geometry.as_deref(), |_| {})
        .map_err(|e| unfold_error(&e))?;
    let h = Hypothesis::from_numbers(&cascade, &track, spacing).map_err(|e| unfold_error(&e))?;
    let opts = UnfoldOptions {
        solve: SolveOptions {
            solver: solver.parse().map_err(errors::value)?,
            regularization,
            tolerance,
            max_iterations,
        },
        binning: Binning {
            photons_per_bin,
            noise_rate_hz: noise_rate,
        },
        device: crate::run::devices(device)?.map(|d| d[0]),
        precise,
    };
    opts.check().map_err(|e| unfold_error(&e))?;
    let ev = match (event, pulses) {
        (Some(path), None) => Event::read(&path),
        (None, Some((s, o, t, q))) => Event::from_columns(Path::new("<arrays>"), &s, &o, &t, &q, window.map(|(a, b)| [a, b])),
        _ => return Err(errors::value("give the event as a Parquet path or as pulse arrays, not both")),
    }
    .map_err(|e| errors::input(&e))?;
    let u = crate::run::legacy(py, threads, None, 0, |_| unfold_event(&model, &geo, &h, &ev, &opts))?.map_err(|e| unfold_error(&e))?;
    let out = PyDict::new(py);
    let n = u.cols;
    let s = &u.solution;
    let (total, sigma) = u.total();
    out.set_item("columns", crate::photon::columns(py, u.energies_table())?)?;
    out.set_item("covariance", s.covariance.clone().into_pyarray(py).reshape([n, n])?)?;
    out.set_item("pe_per_gev", s.pe_per_gev.clone().into_pyarray(py))?;
    out.set_item("blind", u.blind())?;
    out.set_item("converged", s.converged)?;
    out.set_item("iterations", s.iterations)?;
    out.set_item("nnls_start_iterations", s.start_iterations)?;
    out.set_item("log_likelihood", s.log_likelihood)?;
    out.set_item("chi2", s.chi2)?;
    out.set_item("rows", u.rows)?;
    out.set_item("sources", n)?;
    out.set_item("hit_doms", u.hit_doms)?;
    out.set_item("charge_pe", u.charge_pe)?;
    out.set_item("total_energy_gev", total)?;
    out.set_item("total_energy_sigma_gev", sigma)?;
    out.set_item("response_device", u.device.clone())?;
    out.set_item("response_seconds", u.response_seconds)?;
    out.set_item("solve_seconds", u.solve_seconds)?;
    Ok(out)
}
