//! `warpdrive.spline`: photospline tables and Millipede (`warpdrive spline info|eval|simulate|
//! unfold`), a translation of keyword arguments into `warpdrive_spline::engine` requests.

use crate::errors::{self, Count};
use crate::saved::{capture, SavedOutput};
use numpy::{IntoPyArray, PyArray1, PyArrayMethods, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::path::PathBuf;
use warpdrive_spline::engine::{
    self, Eval, EvalOptions, EventInput, FitOptions, FitTable, Grid, HistogramInput, Knots, ModelOptions, Points, Quantity, Simulate,
    SimulateOptions, SimulateResult, Unfold, UnfoldOptions, UnfoldResult,
};
use warpdrive_spline::millipede::unfold::ModelFiles;
use warpdrive_spline::SplineTable as Table;

/// A photospline table read once (`warpdrive spline info`).
#[pyclass(module = "warpdrive._warpdrive", frozen)]
pub struct SplineTable {
    table: Table,
    /// The file it was read from (None: made from FITS bytes, e.g. unpickled).
    path: Option<PathBuf>,
}

/// A C-contiguous 2-D float64 array as a slice (read in place), or its copy in row-major order
/// (a Fortran-order array's memory is column-major).
fn row_major<'a>(a: &'a PyReadonlyArray2<'_, f64>, owned: &'a mut Vec<f64>) -> &'a [f64] {
    match a.as_slice() {
        Ok(s) if a.is_c_contiguous() => s,
        _ => {
            *owned = a.as_array().iter().copied().collect();
            owned
        }
    }
}

impl SplineTable {
    /// Evaluate `points` (`Points::Rows` or `Points::Coordinates` of `values`) and hand the
    /// values to NumPy without a copy.
    #[allow(clippy::too_many_arguments)]
    fn evaluate<'py>(
        &self,
        py: Python<'py>,
        points: Points<'_>,
        gradient: bool,
        derivatives: i64,
        device: &str,
        threads: Option<Count>,
        precise: bool,
        standard_layout: bool,
        progress: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let (ctl, notes) = crate::run::control(device, threads, precise)?;
        let quantity = Quantity::new(gradient, derivatives, self.table.ndim()).map_err(|e| errors::param(&e))?;
        let opts = EvalOptions {
            quantity,
            standard_layout,
            ..EvalOptions::default()
        };
        let req = Eval::new(&self.table, self.path.as_deref(), points, opts).map_err(|e| errors::engine(&e))?;
        let r = crate::run::run(py, &ctl, &notes, progress, || req.run(&ctl))?;
        Ok(r.values.into_pyarray(py))
    }
}

#[pymethods]
impl SplineTable {
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let table = py.allow_threads(|| engine::read_table(&path)).map_err(|e| errors::engine(&e))?;
        Ok(Self { table, path: Some(path) })
    }

    /// A table from the bytes of a FITS file (`path` only names it in errors and reprs).
    #[staticmethod]
    #[pyo3(signature = (data, path=None))]
    fn from_fits(data: &[u8], path: Option<PathBuf>) -> PyResult<Self> {
        let label = path.clone().unwrap_or_else(|| PathBuf::from("<fits bytes>"));
        let table = Table::from_bytes(&label, data).map_err(|e| errors::input(&e))?;
        Ok(Self { table, path })
    }

    /// The table as FITS bytes in photospline's layout (what pickling stores).
    fn to_fits<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.table.to_fits())
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
    fn periods(&self) -> Vec<f64> {
        self.table.periods.clone()
    }

    /// Coefficients per dimension (the shape of the coefficient array).
    #[getter]
    fn naxes(&self) -> Vec<usize> {
        self.table.naxes.clone()
    }

    /// The float32 coefficients in the table's shape (C order, dimension 0 slowest).
    #[getter]
    fn coefficients<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let a = self.table.coefficients.clone().into_pyarray(py);
        Ok(a.reshape(self.table.naxes.clone())?.into_any())
    }

    /// Auxiliary header keys and their values as text.
    #[getter]
    fn aux(&self) -> Vec<(String, String)> {
        self.table.aux.iter().map(|(k, v)| (k.clone(), v.text())).collect()
    }

    #[getter]
    fn path(&self) -> Option<PathBuf> {
        self.path.clone()
    }

    /// Evaluate at `points`, rows of (N, ndim) float64: (N,) values, or (N, ndim + 1) numbers
    /// (value, then ∂/∂x_d) with `gradient`, or (N,) partial derivatives for the bitmask
    /// `derivatives`. A C-contiguous array is read in place.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (points, gradient=false, derivatives=0, device="auto", threads=None, precise=false, standard_layout=false, progress=None))]
    fn eval<'py>(
        &self,
        py: Python<'py>,
        points: PyReadonlyArray2<'py, f64>,
        gradient: bool,
        derivatives: i64,
        device: &str,
        threads: Option<Count>,
        precise: bool,
        standard_layout: bool,
        progress: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let shape = [points.shape()[0], points.shape()[1]];
        let mut owned = Vec::new();
        let values = row_major(&points, &mut owned);
        let v = self.evaluate(
            py,
            Points::Rows { values, shape },
            gradient,
            derivatives,
            device,
            threads,
            precise,
            standard_layout,
            progress,
        )?;
        if gradient {
            Ok(v.reshape([shape[0], self.table.ndim() + 1])?.into_any())
        } else {
            Ok(v.into_any())
        }
    }

    /// Evaluate at one array per coordinate, `coords` of shape (ndim, N) (photospline's form):
    /// (N,) values, or partial derivatives for the bitmask `derivatives`.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (coords, derivatives=0, device="auto", threads=None, precise=false, standard_layout=false, progress=None))]
    fn eval_coordinates<'py>(
        &self,
        py: Python<'py>,
        coords: PyReadonlyArray2<'py, f64>,
        derivatives: i64,
        device: &str,
        threads: Option<Count>,
        precise: bool,
        standard_layout: bool,
        progress: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let shape = [coords.shape()[0], coords.shape()[1]];
        let mut owned = Vec::new();
        let values = row_major(&coords, &mut owned);
        self.evaluate(
            py,
            Points::Coordinates { values, shape },
            false,
            derivatives,
            device,
            threads,
            precise,
            standard_layout,
            progress,
        )
    }

    /// Values on the outer-product grid of `axes` (one 1-D array per dimension), in the grid's
    /// shape (C order).
    #[pyo3(signature = (axes, threads=None, progress=None))]
    fn grideval<'py>(
        &self,
        py: Python<'py>,
        axes: Vec<Vec<f64>>,
        threads: Option<Count>,
        progress: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (ctl, notes) = crate::run::control("cpu", threads, false)?;
        let req = Grid::new(&self.table, axes).map_err(|e| errors::engine(&e))?;
        let v = crate::run::run(py, &ctl, &notes, progress, || req.run(&ctl))?;
        Ok(v.into_pyarray(py).reshape(req.shape())?.into_any())
    }
}

/// The model and hypothesis keywords shared by `simulate` and `unfold`.
#[allow(clippy::too_many_arguments)]
fn model(
    cascade: Option<Vec<f64>>,
    track: Option<Vec<f64>>,
    spacing: f64,
    amplitude: Option<PathBuf>,
    timing: Option<PathBuf>,
    amplitude_only: bool,
    geometry: Option<PathBuf>,
    noise_rate: f64,
    source_axes: Option<Vec<String>>,
) -> PyResult<ModelOptions> {
    let source_axes = source_axes
        .map(|a| warpdrive_spline::millipede::unfold::parse_source_axes(&a))
        .transpose()
        .map_err(|e| errors::param(&e))?;
    Ok(ModelOptions {
        files: ModelFiles {
            amplitude,
            timing,
            source_axes,
            amplitude_only,
            geometry,
        },
        cascade,
        track,
        spacing,
        noise_rate,
    })
}

/// A synthetic event (`warpdrive spline simulate`).
#[pyclass(module = "warpdrive._warpdrive", frozen)]
pub struct SimulatedEvent {
    r: SimulateResult,
    inputs: Vec<PathBuf>,
}

#[pymethods]
impl SimulatedEvent {
    /// The event table of the CLI's output file (string, om, time, charge; window, true
    /// energies and the request in its metadata).
    fn table<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, crate::arrow_c::ArrowTable>> {
        crate::photon::columns(py, self.r.table())
    }

    /// Write the CLI's Parquet file; an existing `path` is refused unless `force`.
    #[pyo3(signature = (path, force=false))]
    fn save(&self, py: Python<'_>, path: PathBuf, force: bool) -> PyResult<()> {
        py.allow_threads(|| {
            let out = engine::prepare_file(&path, force, &self.inputs)?;
            self.r.save(out)
        })
        .map_err(|e| errors::engine(&e))
    }

    #[getter]
    fn window(&self) -> (f64, f64) {
        (self.r.event.window[0], self.r.event.window[1])
    }

    #[getter]
    fn true_energy(&self) -> Vec<f64> {
        self.r.true_energy.clone()
    }

    #[getter]
    fn total_charge(&self) -> f64 {
        self.r.event.total_charge()
    }

    #[getter]
    fn hit_doms(&self) -> usize {
        self.r.event.hit_doms()
    }

    #[getter]
    fn pulses(&self) -> usize {
        self.r.event.pulses.len()
    }

    /// The event file `save` writes, captured for pickling.
    fn snapshot(&self, py: Python<'_>) -> PyResult<SavedOutput> {
        capture(py, false, &self.inputs, |out| self.r.save(out).map(|()| Vec::new()))
    }
}

/// `warpdrive spline simulate`.
#[pyfunction]
#[pyo3(signature = (cascade, track, spacing, amplitude, timing, amplitude_only, geometry, noise_rate, energy, window, seed, event, device, threads, progress, source_axes=None))]
#[allow(clippy::too_many_arguments)]
pub fn spline_simulate(
    py: Python<'_>,
    cascade: Option<Vec<f64>>,
    track: Option<Vec<f64>>,
    spacing: f64,
    amplitude: Option<PathBuf>,
    timing: Option<PathBuf>,
    amplitude_only: bool,
    geometry: Option<PathBuf>,
    noise_rate: f64,
    energy: Vec<f64>,
    window: Vec<f64>,
    seed: Count,
    event: Count,
    device: &str,
    threads: Option<Count>,
    progress: Option<&Bound<'_, PyAny>>,
    source_axes: Option<Vec<String>>,
) -> PyResult<SimulatedEvent> {
    let opts = SimulateOptions {
        model: model(
            cascade,
            track,
            spacing,
            amplitude,
            timing,
            amplitude_only,
            geometry,
            noise_rate,
            source_axes,
        )?,
        energy,
        window,
        seed: errors::count("seed", seed)?,
        event: errors::count("event", event)?,
    };
    let (ctl, notes) = crate::run::control(device, threads, false)?;
    let req = py.allow_threads(|| Simulate::new(&opts)).map_err(|e| errors::engine(&e))?;
    let r = crate::run::run(py, &ctl, &notes, progress, || req.run(&ctl))?;
    Ok(SimulatedEvent {
        r,
        inputs: req.inputs().to_vec(),
    })
}

/// An unfolded event (`warpdrive spline unfold`).
#[pyclass(module = "warpdrive._warpdrive", frozen)]
pub struct UnfoldRun {
    r: UnfoldResult,
    inputs: Vec<PathBuf>,
}

#[pymethods]
impl UnfoldRun {
    /// The table of the CLI's energies.parquet.
    fn energies<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, crate::arrow_c::ArrowTable>> {
        crate::photon::columns(py, self.r.energies_table())
    }

    /// F⁻¹ on the sources with E > 0, (n, n).
    fn covariance<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let n = self.r.cols;
        Ok(self.r.solution.covariance.clone().into_pyarray(py).reshape([n, n])?.into_any())
    }

    /// Photo-electrons per GeV of each source (Σ_i Λ_ij).
    fn pe_per_gev<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.r.solution.pe_per_gev.clone().into_pyarray(py)
    }

    /// Sources no DOM sees (< 1 PE per PeV).
    fn blind(&self) -> Vec<usize> {
        self.r.blind()
    }

    /// The CLI's summary.json (the request's and the fit's numbers), as JSON text.
    fn summary_json(&self) -> String {
        format!("{:#}", self.r.summary())
    }

    /// The CLI's run.json (device, timings), as JSON text.
    fn run_json(&self) -> String {
        format!("{:#}", self.r.run_info(INVOCATION))
    }

    /// Write the CLI's output directory; an existing `dir` is refused unless `force`.
    #[pyo3(signature = (dir, force=false, plot=true))]
    fn save(&self, py: Python<'_>, dir: PathBuf, force: bool, plot: bool) -> PyResult<()> {
        py.allow_threads(|| {
            let out = engine::prepare_dir(&dir, force, &self.inputs)?;
            self.r.save(out, plot, INVOCATION)
        })
        .map_err(|e| errors::engine(&e))
    }

    /// The output directory `save` writes (with its plot), captured for pickling.
    fn snapshot(&self, py: Python<'_>) -> PyResult<SavedOutput> {
        capture(py, true, &self.inputs, |out| {
            self.r.save(out, true, INVOCATION).map(|()| Vec::new())
        })
    }
}

/// How run.json names a Python call.
const INVOCATION: &str = "python: warpdrive.spline.unfold";

/// An event's (string, om, time, charge) columns from Python.
type PulseColumns = (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>);

/// Millipede (`warpdrive spline unfold`): the event from the Parquet file `event` or from the
/// columns `pulses` = (string, om, time, charge) with `window` (None: the default around the
/// pulses).
#[pyfunction]
#[pyo3(signature = (event, pulses, window, cascade, track, spacing, amplitude, timing, amplitude_only, geometry, noise_rate, solver, regularization, photons_per_bin, tolerance, max_iterations, device, threads, precise, progress, source_axes=None))]
#[allow(clippy::too_many_arguments)]
pub fn spline_unfold(
    py: Python<'_>,
    event: Option<PathBuf>,
    pulses: Option<PulseColumns>,
    window: Option<(f64, f64)>,
    cascade: Option<Vec<f64>>,
    track: Option<Vec<f64>>,
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
    max_iterations: Count,
    device: &str,
    threads: Option<Count>,
    precise: bool,
    progress: Option<&Bound<'_, PyAny>>,
    source_axes: Option<Vec<String>>,
) -> PyResult<UnfoldRun> {
    let input = match (event, pulses) {
        (Some(path), None) => EventInput::File(path),
        (None, Some((string, om, time, charge))) => EventInput::Pulses {
            string,
            om,
            time,
            charge,
            window: window.map(|(a, b)| [a, b]),
        },
        _ => return Err(errors::value("give the event as a Parquet path or as pulse arrays, not both")),
    };
    let opts = UnfoldOptions {
        model: model(
            cascade,
            track,
            spacing,
            amplitude,
            timing,
            amplitude_only,
            geometry,
            noise_rate,
            source_axes,
        )?,
        solver: engine::parse_solver(solver).map_err(|e| errors::param(&e))?,
        regularization,
        photons_per_bin,
        tolerance,
        max_iterations: errors::count("max_iterations", max_iterations)?,
    };
    let (ctl, notes) = crate::run::control(device, threads, precise)?;
    let req = py.allow_threads(|| Unfold::new(input, &opts)).map_err(|e| errors::engine(&e))?;
    let r = crate::run::run(py, &ctl, &notes, progress, || req.run(&ctl))?;
    Ok(UnfoldRun {
        r,
        inputs: req.inputs().to_vec(),
    })
}

/// A C-order copy (or view) of an N-D float64 array and its shape.
fn nd_values<'a>(a: &'a numpy::PyReadonlyArrayDyn<'_, f64>, owned: &'a mut Vec<f64>) -> (&'a [f64], Vec<usize>) {
    let shape = a.shape().to_vec();
    match a.as_slice() {
        Ok(s) if a.is_c_contiguous() => (s, shape),
        _ => {
            *owned = a.as_array().iter().copied().collect();
            (owned, shape)
        }
    }
}

/// `warpdrive spline fit` (photospline's `glam_fit`): the table fitted to values `z` with
/// weights `w` on the grid of `centers`.
#[pyfunction]
#[pyo3(signature = (z, w, centers, knots, order, smooth, penalty_order, monodim, device, threads, progress))]
#[allow(clippy::too_many_arguments)]
pub fn spline_fit(
    py: Python<'_>,
    z: numpy::PyReadonlyArrayDyn<'_, f64>,
    w: numpy::PyReadonlyArrayDyn<'_, f64>,
    centers: Vec<Vec<f64>>,
    knots: Vec<Vec<f64>>,
    order: Vec<u32>,
    smooth: Vec<f64>,
    penalty_order: Vec<u32>,
    monodim: Option<usize>,
    device: &str,
    threads: Option<Count>,
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<SplineTable> {
    let (mut zo, mut wo) = (Vec::new(), Vec::new());
    let (zv, z_shape) = nd_values(&z, &mut zo);
    let (wv, w_shape) = nd_values(&w, &mut wo);
    let opts = FitOptions {
        knots: knots.into_iter().map(Knots::List).collect(),
        order,
        smooth,
        penalty_order,
        monodim,
    };
    let (ctl, notes) = crate::run::control(device, threads, false)?;
    let input = HistogramInput::Arrays {
        z: zv,
        w: wv,
        z_shape,
        w_shape,
        centers,
    };
    let req = py.allow_threads(|| FitTable::new(input, &opts)).map_err(|e| errors::engine(&e))?;
    let r = crate::run::run(py, &ctl, &notes, progress, || req.run(&ctl))?;
    Ok(SplineTable {
        table: r.table,
        path: None,
    })
}

/// `warpdrive spline unfold --events LIST -o OUTPUT` (or a batch job's share, `jobs`/`job_index`):
/// the output directory written and committed by the engine; returns how many events this run
/// unfolded.
#[pyfunction]
#[pyo3(signature = (list, output, force, spacing, amplitude, timing, amplitude_only, geometry, noise_rate, solver, regularization, photons_per_bin, tolerance, max_iterations, device, threads, precise, progress, jobs, job_index, source_axes=None))]
#[allow(clippy::too_many_arguments)]
pub fn spline_unfold_events(
    py: Python<'_>,
    list: PathBuf,
    output: PathBuf,
    force: bool,
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
    max_iterations: Count,
    device: &str,
    threads: Option<Count>,
    precise: bool,
    progress: Option<&Bound<'_, PyAny>>,
    jobs: Count,
    job_index: Count,
    source_axes: Option<Vec<String>>,
) -> PyResult<usize> {
    use warpdrive_spline::event_list::UnfoldEvents;
    let opts = UnfoldOptions {
        model: model(
            None,
            None,
            spacing,
            amplitude,
            timing,
            amplitude_only,
            geometry,
            noise_rate,
            source_axes,
        )?,
        solver: engine::parse_solver(solver).map_err(|e| errors::param(&e))?,
        regularization,
        photons_per_bin,
        tolerance,
        max_iterations: errors::count("max_iterations", max_iterations)?,
    };
    let split = warpdrive_core::jobs::Share::new(errors::count("jobs", jobs)?, errors::count("job_index", job_index)?)
        .map_err(|e| errors::param(&e))?;
    let (ctl, notes) = crate::run::control(device, threads, precise)?;
    let req = py
        .allow_threads(|| UnfoldEvents::new(&list, &opts, split))
        .map_err(|e| errors::engine(&e))?;
    let out = py
        .allow_threads(|| engine::prepare_dir(&output, force, &req.inputs()))
        .map_err(|e| errors::engine(&e))?;
    let r = crate::run::run(py, &ctl, &notes, progress, || req.run(&ctl))?;
    let n = r.events.len();
    py.allow_threads(|| r.save(out, "python: warpdrive.spline.unfold_events"))
        .map_err(|e| errors::engine(&e))?;
    Ok(n)
}

/// `warpdrive merge` of `spline unfold --events` jobs into `output`; returns the events merged.
#[pyfunction]
#[pyo3(signature = (dirs, output, force))]
pub fn spline_merge_events(py: Python<'_>, dirs: Vec<PathBuf>, output: PathBuf, force: bool) -> PyResult<usize> {
    let ctl = crate::run::control("cpu", None, false)?.0;
    py.allow_threads(|| {
        let out = engine::prepare_dir(&output, force, &dirs)?;
        warpdrive_spline::event_list::merge(&dirs, out, &ctl)
    })
    .map_err(|e| errors::engine(&e))
}
