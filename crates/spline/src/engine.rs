//! The spline runs as library calls (DESIGN.md §2, `warpdrive_core::engine`): each is a
//! validated request built from typed values — [`Eval`] and [`Grid`] (a table at points or on a
//! grid), [`Simulate`] (a synthetic event), [`Unfold`] (Millipede) — whose constructor reads and
//! checks every input and budgets what the run will allocate, a `run(&Control)` that computes
//! on the control's device and threads with progress and cancellation, and a result whose
//! `save` writes the outputs with the output discipline. `warpdrive spline eval|simulate|unfold`
//! and `warpdrive.spline` only translate their arguments into these calls.
//!
//! Data files hold what the request determines: values, the warpdrive version and the request
//! as the equivalent command line ([`Eval::command`], …: the same from the CLI and from Python,
//! paths as given, defaults left out). Machine facts (device, threads, timings) go to `run.json`
//! or to the caller.

use crate::millipede::event::{Binning, Event};
use crate::millipede::model::{response_with, Bins, Hypothesis, Model, Source};
use crate::millipede::solve::{unfold_with, Solution, SolveOptions, Solver};
use crate::millipede::synth::{expected_pulses, generate_with, SynthOptions};
use crate::millipede::unfold::{hypothesis_param, load, ModelFiles};
use crate::points::{self, PointsOptions};
use crate::SplineTable;
use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::time::Instant;
use warpdrive_core::engine::{Control, Device, Error, ParamError, Result};
use warpdrive_core::jobs::{self, JobStamp, Share};
use warpdrive_core::output::Staged;
use warpdrive_core::table::{Column, Table};
use warpdrive_core::InputError;
use warpdrive_photon::geometry::Geometry;

/// Read a photospline table through the bounded reader (refused at its first card unless it is
/// FITS; at most the memory budget).
pub fn read_table(path: &Path) -> Result<SplineTable> {
    Ok(SplineTable::read(path)?)
}

pub use warpdrive_core::engine::{prepare_dir, prepare_file};

// ---------------------------------------------------------------------------------------------
// The request as a command line (metadata of data files).

/// A shell word: as is when it is plain, else in single quotes.
fn word(s: &str) -> String {
    let plain = !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"_./:=,+-@%".contains(&b));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The equivalent `warpdrive …` command of a request, built from its typed values.
struct CommandLine(Vec<String>);

impl CommandLine {
    fn new(sub: &str) -> Self {
        Self(vec!["warpdrive".into(), "spline".into(), sub.into()])
    }
    fn arg(mut self, v: &str) -> Self {
        self.0.push(word(v));
        self
    }
    fn path(self, v: &Path) -> Self {
        let s = v.to_string_lossy().into_owned();
        self.arg(&s)
    }
    fn opt(mut self, name: &str, v: &str) -> Self {
        self.0.push(format!("--{name}"));
        self.0.push(word(v));
        self
    }
    fn opt_path(self, name: &str, v: Option<&Path>) -> Self {
        match v {
            Some(p) => {
                let s = p.to_string_lossy().into_owned();
                self.opt(name, &s)
            }
            None => self,
        }
    }
    fn flag(mut self, name: &str, on: bool) -> Self {
        if on {
            self.0.push(format!("--{name}"));
        }
        self
    }
    fn done(self) -> String {
        self.0.join(" ")
    }
}

/// Numbers as the command line takes them: comma separated, each in the shortest form that
/// reads back to the same f64.
fn numbers(v: &[f64]) -> String {
    v.iter().map(f64::to_string).collect::<Vec<_>>().join(",")
}

fn version_meta(t: &mut Table, command: &str) {
    t.meta("warpdrive.version", env!("CARGO_PKG_VERSION"));
    t.meta("warpdrive.command", command);
}

/// Where a run computed, for run.json and messages: `cpu (N threads)` or the GPU's name.
fn cpu_device() -> String {
    format!("cpu ({} threads)", rayon::current_num_threads())
}

/// The first GPU of the control's choice, with a note when more were named (these runs use
/// one).
fn one_gpu(ctl: &Control, what: &str) -> Result<Option<usize>> {
    Ok(match ctl.gpus()? {
        None => None,
        Some(d) if d.is_empty() => None,
        Some(d) => {
            if d.len() > 1 {
                ctl.note(&format!("{what} uses one GPU: cuda:{}", d[0]));
            }
            Some(d[0])
        }
    })
}

// ---------------------------------------------------------------------------------------------
// Evaluation at points.

/// Where the points come from.
#[derive(Clone, Debug)]
pub enum Points<'a> {
    /// A CSV or Parquet file; the coordinates are the columns named in `columns` (in that
    /// order), or all columns when it is empty.
    File { path: PathBuf, columns: Vec<String> },
    /// Coordinates in memory, row-major, `shape = [points, coordinates per point]`.
    Rows { values: &'a [f64], shape: [usize; 2] },
    /// One array per coordinate (photospline's form), `shape = [ndim, points]`: unambiguous
    /// whatever the number of points (copied into rows).
    Coordinates { values: &'a [f64], shape: [usize; 2] },
}

/// What is computed at each point.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Quantity {
    /// f(x).
    #[default]
    Value,
    /// f(x) and ∇f(x): `ndim + 1` numbers per point.
    Gradient,
    /// ∂f/∂x_d alone.
    Partial(usize),
}

impl Quantity {
    /// The value, the gradient, or the partial derivative of photospline's bitmask
    /// ([`Quantity::from_bitmask`]); `gradient` and a non-zero `derivatives` exclude each other.
    pub fn new(gradient: bool, derivatives: i64, ndim: usize) -> Result<Self, ParamError> {
        match (gradient, derivatives) {
            (true, 0) => Ok(Quantity::Gradient),
            (true, _) => Err(ParamError::new("gradient", "cannot be given together with {derivatives}")),
            (false, mask) => Self::from_bitmask(mask, ndim),
        }
    }

    /// photospline's derivative bitmask (bit d: differentiate once along dimension d): 0 is the
    /// value, a single bit a first partial derivative. Mixed and higher derivatives are refused
    /// (the evaluator computes first derivatives only).
    pub fn from_bitmask(mask: i64, ndim: usize) -> Result<Self, ParamError> {
        if mask < 0 || (ndim < 63 && mask >> ndim != 0) {
            return Err(ParamError::new(
                "derivatives",
                format!(
                    "{mask}: a bitmask of the table's {ndim} dimensions (0 to {})",
                    (1u64 << ndim.min(63)) - 1
                ),
            ));
        }
        match mask.count_ones() {
            0 => Ok(Quantity::Value),
            1 => Ok(Quantity::Partial(mask.trailing_zeros() as usize)),
            n => Err(ParamError::new(
                "derivatives",
                format!("{mask} asks for a mixed derivative over {n} dimensions; only first derivatives (one bit) are supported"),
            )),
        }
    }

    /// Numbers per point in the result.
    pub fn per_point(self, ndim: usize) -> usize {
        match self {
            Quantity::Gradient => ndim + 1,
            _ => 1,
        }
    }
}

/// The options of an evaluation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EvalOptions {
    pub quantity: Quantity,
    /// GPU: photospline's own coefficient layout instead of the window layout.
    pub standard_layout: bool,
    /// The share of the points this job evaluates (`--jobs N --job-index I`).
    pub split: Share,
}

/// The job kind of a split evaluation (`warpdrive spline eval --jobs N`).
pub const EVAL_JOB_KIND: &str = "spline eval";

/// The values of a split evaluation's jobs (their Parquet files, each job once) as the unsplit
/// evaluation's table: rows in job order, the job keys dropped; written to `output` when given.
pub fn merge_eval(jobs: &[PathBuf], output: Option<&Path>, force: bool, ctl: &Control) -> Result<Table> {
    jobs::merge_tables_into(jobs, EVAL_JOB_KIND, output, force, ctl)
}

/// A validated evaluation of a table at points.
#[derive(Clone, Debug)]
pub struct Eval<'a> {
    table: &'a SplineTable,
    table_path: Option<PathBuf>,
    points_path: Option<PathBuf>,
    columns: Vec<String>,
    /// Names of the coordinates (file columns, or `x0…`).
    names: Vec<String>,
    /// Row-major coordinates.
    coords: Cow<'a, [f64]>,
    opts: EvalOptions,
    /// The stamp of this job of a split evaluation.
    job: Option<JobStamp>,
}

/// Check an in-memory point array's shape against the table: rows of `ndim` coordinates. A
/// square array (`ndim` × `ndim`, ndim ≥ 2) is refused as ambiguous: photospline takes one
/// array per coordinate, so `[xs, ys]` with two points each must not be read as two rows.
fn check_shape(shape: [usize; 2], ndim: usize) -> Result<(), ParamError> {
    let [rows, cols] = shape;
    if ndim >= 2 && rows == ndim && cols == ndim {
        return Err(ParamError::new(
            "points",
            format!(
                "of shape ({rows}, {cols}) for a {ndim}-D table are ambiguous: {rows} rows of {ndim} coordinates, or {ndim} arrays of one coordinate each (photospline's form)? Pass one array per coordinate to evaluate_simple or call the table (t(*coords)); rows of exactly {ndim} points can be given that way too (t(*points.T))"
            ),
        ));
    }
    if cols != ndim {
        let hint = if rows == ndim {
            " (this looks like one array per coordinate, photospline's form: use evaluate_simple or call the table, t(*coords))"
        } else {
            ""
        };
        return Err(ParamError::new(
            "points",
            format!("have {cols} columns for a {ndim}-D table: rows of {ndim} coordinates, shape (N, {ndim}), are expected{hint}"),
        ));
    }
    Ok(())
}

impl<'a> Eval<'a> {
    /// Check the points (read them when they are a file) against `table`; `table_path` names the
    /// table's file (an input no output may replace, and part of the command in the metadata).
    pub fn new(table: &'a SplineTable, table_path: Option<&Path>, points: Points<'a>, opts: EvalOptions) -> Result<Self> {
        let nd = table.ndim();
        if let Quantity::Partial(d) = opts.quantity {
            if d >= nd {
                return Err(ParamError::new("derivatives", format!("dimension {d}: the table has {nd}")).into());
            }
        }
        let per = opts.quantity.per_point(nd);
        let (names, coords, points_path, columns) = match points {
            Points::File { path, columns } => {
                let p = points::read_points(&path, nd, &columns)?;
                (p.names, Cow::Owned(p.coords), Some(path), columns)
            }
            Points::Rows { values, shape } => {
                check_shape(shape, nd)?;
                if values.len() != shape[0] * shape[1] {
                    return Err(Error::Failed(format!("{} values for shape {shape:?}", values.len())));
                }
                ((0..nd).map(|d| format!("x{d}")).collect(), Cow::Borrowed(values), None, Vec::new())
            }
            Points::Coordinates { values, shape } => {
                let [k, n] = shape;
                if k != nd {
                    return Err(ParamError::new("coords", format!("has {k} coordinate arrays for a {nd}-D table")).into());
                }
                if values.len() != k * n {
                    return Err(Error::Failed(format!("{} values for shape {shape:?}", values.len())));
                }
                warpdrive_core::limits::check_alloc("coords", n as u64, 8 * nd as u64, "evaluate fewer points per call")?;
                let rows: Vec<f64> = (0..n).flat_map(|i| (0..nd).map(move |d| values[d * n + i])).collect();
                ((0..nd).map(|d| format!("x{d}")).collect(), Cow::Owned(rows), None, Vec::new())
            }
        };
        let total = (coords.len() / nd) as u64;
        let share = opts.split.items(total);
        let coords = if opts.split.is_whole() {
            coords
        } else {
            // usize: the share lies within the points in memory.
            Cow::Owned(coords[share.start as usize * nd..share.end as usize * nd].to_vec())
        };
        points::check_results(coords.len() / nd, per)?;
        let mut req = Self {
            table,
            table_path: table_path.map(Path::to_path_buf),
            points_path,
            columns,
            names,
            coords,
            opts,
            job: None,
        };
        if !opts.split.is_whole() {
            let command = req.command();
            let run = jobs::fingerprint(&[("command".into(), command.clone())], &req.inputs())?;
            req.job = Some(JobStamp::new(EVAL_JOB_KIND, run, opts.split, total, &command));
        }
        Ok(req)
    }

    /// Number of points.
    pub fn points(&self) -> usize {
        self.coords.len() / self.table.ndim()
    }

    /// The table and points files (outputs must not replace or contain them).
    pub fn inputs(&self) -> Vec<PathBuf> {
        self.table_path.iter().chain(&self.points_path).cloned().collect()
    }

    /// The request as a `warpdrive spline eval` command line.
    pub fn command(&self) -> String {
        let table = self.table_path.as_deref().unwrap_or(Path::new("<table>"));
        let points = self.points_path.as_deref().unwrap_or(Path::new("<arrays>"));
        let mut c = CommandLine::new("eval").path(table).opt_path("points", Some(points));
        if !self.columns.is_empty() {
            c = c.opt("columns", &self.columns.join(","));
        }
        c.flag("gradient", self.opts.quantity == Quantity::Gradient)
            .flag("standard-layout", self.opts.standard_layout)
            .done()
    }

    /// Evaluate on the control's device (one GPU, float32; or the CPU, float64). Returns
    /// [`Error::Cancelled`] when the token is raised (within one work item of 4096 points on the
    /// CPU, one batch of 4 M points on a GPU).
    pub fn run(&self, ctl: &Control) -> Result<EvalResult> {
        let gpu = one_gpu(ctl, "evaluation")?;
        let nd = self.table.ndim();
        ctl.install(|| {
            let opts = PointsOptions {
                gradient: self.opts.quantity != Quantity::Value,
                devices: gpu.map(|g| vec![g]),
                window: !self.opts.standard_layout,
                precise: ctl.precise,
            };
            ctl.progress.begin("evaluating", self.points() as u64, "points");
            let t0 = Instant::now();
            let (mut values, device) = points::evaluate_points(self.table, &self.coords, &opts, &ctl.progress)?;
            ctl.check()?;
            let seconds = t0.elapsed().as_secs_f64();
            if let Quantity::Partial(d) = self.opts.quantity {
                values = values.chunks_exact(nd + 1).map(|v| v[1 + d]).collect();
            }
            Ok(EvalResult {
                values,
                per_point: self.opts.quantity.per_point(nd),
                device: if gpu.is_some() { device } else { cpu_device() },
                float32: gpu.is_some(),
                seconds,
            })
        })?
    }
}

/// Values at the points of an [`Eval`].
#[derive(Clone, Debug)]
pub struct EvalResult {
    /// `per_point` numbers per point (value, or value then ∂/∂x_d).
    pub values: Vec<f64>,
    pub per_point: usize,
    /// Where it ran (`cpu (N threads)` or the GPU's name).
    pub device: String,
    /// Computed in float32 on a GPU (else float64 on the CPU).
    pub float32: bool,
    pub seconds: f64,
}

impl EvalResult {
    /// The output table: the coordinates, `value`, and `grad0…` with the gradient.
    pub fn table(&self, req: &Eval) -> Table {
        let nd = req.table.ndim();
        let n = req.points();
        let mut out = Table::default();
        for (d, name) in req.names.iter().enumerate() {
            out.push(name, Column::F64((0..n).map(|i| req.coords[i * nd + d]).collect()));
        }
        let per = self.per_point;
        let column = |k: usize| Column::F64((0..n).map(|i| self.values[i * per + k]).collect());
        match req.opts.quantity {
            Quantity::Partial(d) => out.push(&format!("grad{d}"), column(0)),
            _ => out.push("value", column(0)),
        }
        if req.opts.quantity == Quantity::Gradient {
            for d in 0..nd {
                out.push(&format!("grad{d}"), column(1 + d));
            }
        }
        version_meta(&mut out, &req.command());
        if let Some(p) = &req.table_path {
            out.meta("table", p.display().to_string());
        }
        out.meta("precision", if self.float32 { "float32 (GPU)" } else { "float64 (CPU)" });
        if let Some(j) = &req.job {
            out.metadata.extend(j.metadata());
        }
        out
    }

    /// Write the Parquet output into the prepared file and commit it.
    pub fn save(&self, req: &Eval, out: Staged) -> Result<()> {
        self.table(req)
            .write_parquet(out.path())
            .map_err(|e| Error::Failed(format!("{}: {e}", out.dest().display())))?;
        out.commit()?;
        Ok(())
    }
}

/// A validated evaluation on the outer-product grid of one coordinate array per dimension
/// (photospline's `grideval`).
#[derive(Clone, Debug)]
pub struct Grid<'a> {
    table: &'a SplineTable,
    axes: Vec<Vec<f64>>,
}

impl<'a> Grid<'a> {
    /// Check that there is one axis per dimension and that the grid fits in memory.
    pub fn new(table: &'a SplineTable, axes: Vec<Vec<f64>>) -> Result<Self> {
        let nd = table.ndim();
        if axes.len() != nd {
            return Err(ParamError::new("coords", format!("has {} coordinate arrays for a {nd}-D table", axes.len())).into());
        }
        let total = axes.iter().try_fold(1u64, |a, x| a.checked_mul(x.len() as u64)).unwrap_or(u64::MAX);
        warpdrive_core::limits::check_alloc("coords", total, 8, "evaluate a coarser grid, or the grid in slices")?;
        Ok(Self { table, axes })
    }

    /// The grid's shape (length of each axis).
    pub fn shape(&self) -> Vec<usize> {
        self.axes.iter().map(Vec::len).collect()
    }

    /// Values on the grid (C order, last axis fastest) on the CPU; cancelled within one row of
    /// the last axis.
    pub fn run(&self, ctl: &Control) -> Result<Vec<f64>> {
        ctl.install(|| {
            let rows = self.shape().iter().rev().skip(1).product::<usize>();
            ctl.progress.begin("evaluating", rows as u64, "grid rows");
            let v = self.table.grid_with(&self.axes, &ctl.progress);
            ctl.check()?;
            Ok(v)
        })?
    }
}

// ---------------------------------------------------------------------------------------------
// Millipede: the model and hypothesis every request shares.

/// The model, geometry and hypothesis options of `spline simulate` and `spline unfold`.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelOptions {
    pub files: ModelFiles,
    /// `x,y,z [m], zenith, azimuth [deg], t [ns]`.
    pub cascade: Option<Vec<f64>>,
    /// `x,y,z [m], zenith, azimuth [deg], t [ns], length [m]` (vertex = start).
    pub track: Option<Vec<f64>>,
    /// Segment length along the track [m].
    pub spacing: f64,
    /// Dark rate per DOM [Hz].
    pub noise_rate: f64,
}

impl Default for ModelOptions {
    fn default() -> Self {
        Self {
            files: ModelFiles::default(),
            cascade: None,
            track: None,
            spacing: 15.0,
            noise_rate: 500.0,
        }
    }
}

/// The model read and checked, the hypothesis and its sources.
#[derive(Clone, Debug)]
pub(crate) struct Setup {
    /// Shared by every event of a run of many ([`UnfoldEvents`]).
    model: std::sync::Arc<Model>,
    geo: std::sync::Arc<Geometry>,
    hypothesis: Hypothesis,
    sources: Vec<Source>,
    pub(crate) inputs: Vec<PathBuf>,
}

impl Setup {
    pub(crate) fn new(o: &ModelOptions) -> Result<Self> {
        if !(o.noise_rate >= 0.0 && o.noise_rate.is_finite()) {
            return Err(ParamError::new("noise_rate", format!("{} Hz must be finite and ≥ 0", o.noise_rate)).into());
        }
        let hypothesis = Hypothesis::from_numbers(o.cascade.as_deref(), o.track.as_deref(), o.spacing)?;
        let (model, geo, inputs) = load(&o.files)?;
        Ok(Self {
            sources: hypothesis.sources(),
            model: std::sync::Arc::new(model),
            geo: std::sync::Arc::new(geo),
            hypothesis,
            inputs,
        })
    }

    /// Say how many sources lie outside the tables' range of source zenith or depth (they are
    /// evaluated at the nearest edge of the range).
    pub(crate) fn note_outside_source_range(&self, ctl: &Control) {
        let out: Vec<usize> = (0..self.sources.len())
            .filter(|&j| self.model.outside_source_range(&self.sources[j]))
            .collect();
        if !out.is_empty() {
            let [z, d] = crate::millipede::model::source_zenith_depth(&self.sources[out[0]]);
            ctl.note(&format!(
                "warning: {} of {} sources lie outside the tables' source zenith/depth range (source {}: zenith {z:.1}°, depth {d:.1} m); they are evaluated at the range's nearest edge",
                out.len(),
                self.sources.len(),
                out[0]
            ));
        }
    }

    /// The same model and geometry with another hypothesis.
    pub(crate) fn with(&self, hypothesis: Hypothesis) -> Self {
        Self {
            sources: hypothesis.sources(),
            model: std::sync::Arc::clone(&self.model),
            geo: std::sync::Arc::clone(&self.geo),
            hypothesis,
            inputs: self.inputs.clone(),
        }
    }

    /// The model and hypothesis options of a command line.
    fn command(&self, mut c: CommandLine, o: &ModelOptions) -> CommandLine {
        let f = &o.files;
        c = c
            .opt_path("amplitude", f.amplitude.as_deref())
            .opt_path("timing", f.timing.as_deref())
            .flag("amplitude-only", f.amplitude_only)
            .opt_path("geometry", f.geometry.as_deref());
        if let Some(a) = &f.source_axes {
            c = c.opt("source-axes", &a.iter().map(|x| x.name()).collect::<Vec<_>>().join(","));
        }
        c = match (&o.cascade, &o.track) {
            (Some(v), _) => c.opt("cascade", &numbers(v)),
            (_, Some(v)) => c.opt("track", &numbers(v)).opt("spacing", &o.spacing.to_string()),
            _ => c,
        };
        c.opt("noise-rate", &o.noise_rate.to_string())
    }
}

// ---------------------------------------------------------------------------------------------
// Synthetic events.

/// The highest energy per source `spline simulate` accepts [GeV]: every photo-electron is drawn
/// one by one, so beyond this an event would not finish.
pub const MAX_SIMULATE_ENERGY_GEV: f64 = 1e9;
/// Event numbers key 44 bits of the random stream (the DOM index takes the other 20).
pub const MAX_EVENT: u64 = (1 << 44) - 1;
/// Bytes one pulse costs while an event is drawn and tabulated.
const PULSE_BYTES: u64 = 72;

/// The options of `spline simulate`.
#[derive(Clone, Debug, PartialEq)]
pub struct SimulateOptions {
    pub model: ModelOptions,
    /// Energy per source [GeV]: one value for every source, or one per source.
    pub energy: Vec<f64>,
    /// Readout window `[start, end]` [ns].
    pub window: Vec<f64>,
    pub seed: u64,
    /// Event number: the Philox stream of this event (several events from one seed).
    pub event: u64,
}

impl Default for SimulateOptions {
    fn default() -> Self {
        Self {
            model: ModelOptions::default(),
            energy: Vec::new(),
            window: vec![-1000.0, 9000.0],
            seed: 1,
            event: 0,
        }
    }
}

/// A validated synthetic-event request.
#[derive(Clone, Debug)]
pub struct Simulate {
    setup: Setup,
    energy: Vec<f64>,
    synth: SynthOptions,
    event: u64,
    command: String,
}

impl Simulate {
    /// Read the model and check every option.
    pub fn new(o: &SimulateOptions) -> Result<Self> {
        if o.window.len() != 2 || !o.window.iter().all(|w| w.is_finite()) || o.window[1] <= o.window[0] {
            return Err(ParamError::new(
                "window",
                format!("takes start,end [ns] with end > start, got {}", numbers(&o.window)),
            )
            .into());
        }
        if o.event > MAX_EVENT {
            return Err(ParamError::new("event", format!("{}: at most {MAX_EVENT} (2^44 - 1)", o.event)).into());
        }
        if let Some(e) = o.energy.iter().find(|e| !(e.is_finite() && **e >= 0.0)) {
            return Err(ParamError::new("energy", format!("{e} GeV: energies must be finite and ≥ 0")).into());
        }
        if let Some(e) = o.energy.iter().find(|&&e| e > MAX_SIMULATE_ENERGY_GEV) {
            return Err(ParamError::new(
                "energy",
                format!("{e:e} GeV: above {MAX_SIMULATE_ENERGY_GEV:e} GeV per source (1 EeV; each photoelectron is drawn, so an event would not finish); check the unit (GeV)"),
            )
            .into());
        }
        let setup = Setup::new(&o.model)?;
        let n = setup.sources.len();
        let energy = match o.energy.len() {
            1 => vec![o.energy[0]; n],
            k if k == n => o.energy.clone(),
            0 => return Err(ParamError::new("energy", "is needed: GeV per source (one value for all, or one per source)").into()),
            k => return Err(ParamError::new("energy", format!("has {k} values for {n} sources")).into()),
        };
        let command = setup
            .command(CommandLine::new("simulate"), &o.model)
            .opt("energy", &numbers(&o.energy))
            .opt("window", &numbers(&o.window))
            .opt("seed", &o.seed.to_string())
            .opt("event", &o.event.to_string())
            .done();
        Ok(Self {
            energy,
            synth: SynthOptions {
                window: [o.window[0], o.window[1]],
                noise_rate_hz: o.model.noise_rate,
                seed: o.seed,
            },
            event: o.event,
            setup,
            command,
        })
    }

    /// The table and geometry files read (outputs must not replace them).
    pub fn inputs(&self) -> &[PathBuf] {
        &self.setup.inputs
    }

    /// The request as a `warpdrive spline simulate` command line.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// Draw the event on the CPU threads of the control. The pulses the event will hold are
    /// estimated first (the mean photo-electrons and noise: one pass over the DOMs) and budgeted
    /// before any is drawn. Cancelled within one DOM (4096 draws at most).
    pub fn run(&self, ctl: &Control) -> Result<SimulateResult> {
        let s = &self.setup;
        if matches!(ctl.device, Device::Cuda(_) | Device::CudaAll) {
            ctl.note(&format!(
                "device: cpu (synthetic events are drawn on the CPU; {} not used)",
                ctl.device
            ));
        }
        s.note_outside_source_range(ctl);
        ctl.install(|| {
            let doms = s.geo.doms.len() as u64;
            ctl.progress.begin("expected light", doms, "DOMs");
            let mean = expected_pulses(&s.model, &s.geo, &s.sources, &self.energy, &self.synth, &ctl.progress);
            ctl.check()?;
            // Poisson: beyond 6σ (and a small constant) the draw never goes in practice.
            let bound = mean + 6.0 * mean.sqrt() + 64.0;
            warpdrive_core::limits::check_alloc(
                "energy",
                bound.min(u64::MAX as f64) as u64,
                PULSE_BYTES,
                "each photoelectron is a pulse of the event: simulate a lower {energy}",
            )?;
            ctl.progress.begin("drawing", doms, "DOMs");
            let event = generate_with(&s.model, &s.geo, &s.sources, &self.energy, &self.synth, self.event, &ctl.progress);
            ctl.check()?;
            Ok(SimulateResult {
                event,
                true_energy: self.energy.clone(),
                sources: s.sources.len(),
                command: self.command.clone(),
                device: cpu_device(),
            })
        })?
    }
}

/// A synthetic event.
#[derive(Clone, Debug)]
pub struct SimulateResult {
    pub event: Event,
    /// Energy of every source [GeV].
    pub true_energy: Vec<f64>,
    pub sources: usize,
    command: String,
    /// Where it ran (`cpu (N threads)`).
    pub device: String,
}

impl SimulateResult {
    /// The event table (string, om, time, charge) with the window, the true energies and the
    /// request in its metadata: what `spline unfold` reads.
    pub fn table(&self) -> Table {
        let mut t = self.event.to_table();
        t.meta("true_energy", numbers(&self.true_energy));
        version_meta(&mut t, &self.command);
        t
    }

    /// Write the event Parquet file into the prepared output and commit it.
    pub fn save(&self, out: Staged) -> Result<()> {
        self.table()
            .write_parquet(out.path())
            .map_err(|e| Error::Failed(format!("{}: {e}", out.dest().display())))?;
        out.commit()?;
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Unfolding.

/// The event to unfold.
#[derive(Clone, Debug, PartialEq)]
pub enum EventInput {
    /// A Parquet file: columns string, om, time, charge; window in its metadata.
    File(PathBuf),
    /// The same columns in memory, with the readout window (None: around the pulses).
    Pulses {
        string: Vec<f64>,
        om: Vec<f64>,
        time: Vec<f64>,
        charge: Vec<f64>,
        window: Option<[f64; 2]>,
    },
}

/// The options of `spline unfold`.
#[derive(Clone, Debug, PartialEq)]
pub struct UnfoldOptions {
    pub model: ModelOptions,
    pub solver: Solver,
    /// Millipede's ShowerRegularization λ [GeV⁻²].
    pub regularization: f64,
    /// Close a time bin once it holds this many PE (≤ 0: one bin per DOM).
    pub photons_per_bin: f64,
    /// newton/pcg: stop when every free source's relative gradient is below this.
    pub tolerance: f64,
    pub max_iterations: u64,
}

impl Default for UnfoldOptions {
    fn default() -> Self {
        let s = SolveOptions::default();
        Self {
            model: ModelOptions::default(),
            solver: s.solver,
            regularization: s.regularization,
            photons_per_bin: 5.0,
            tolerance: s.tolerance,
            max_iterations: s.max_iterations as u64,
        }
    }
}

/// `--solver` / `solver=` by name.
pub fn parse_solver(s: &str) -> Result<Solver, ParamError> {
    s.parse().map_err(|m: String| ParamError::new("solver", format!(": {m}")))
}

pub(crate) fn solver_name(s: Solver) -> &'static str {
    match s {
        Solver::Newton => "newton",
        Solver::Pcg => "pcg",
        Solver::Nnls => "nnls",
    }
}

/// The most solver iterations a run accepts.
pub const MAX_ITERATIONS: u64 = 1 << 32;

/// A validated Millipede unfolding: the model, hypothesis and event read, the event binned and
/// everything the solve will allocate budgeted.
#[derive(Clone, Debug)]
pub struct Unfold {
    setup: Setup,
    event: Event,
    /// The event file, or `<arrays>`.
    event_label: String,
    bins: Bins,
    solve: SolveOptions,
    photons_per_bin: f64,
    noise_rate: f64,
    command: String,
}

/// The unfolding options' own checks (before any file is read).
pub(crate) fn check_unfold_options(o: &UnfoldOptions) -> Result<()> {
    if !(o.regularization >= 0.0 && o.regularization.is_finite()) {
        return Err(ParamError::new("regularization", format!("{}: must be finite and ≥ 0", o.regularization)).into());
    }
    if !(o.tolerance > 0.0 && o.tolerance.is_finite()) {
        return Err(ParamError::new("tolerance", format!("{}: must be finite and > 0", o.tolerance)).into());
    }
    if o.max_iterations == 0 || o.max_iterations > MAX_ITERATIONS {
        return Err(ParamError::new("max_iterations", format!("{}: must be 1 to {MAX_ITERATIONS}", o.max_iterations)).into());
    }
    if !o.photons_per_bin.is_finite() {
        return Err(ParamError::new(
            "photons_per_bin",
            format!("{}: must be finite (≤ 0: one bin per DOM)", o.photons_per_bin),
        )
        .into());
    }
    Ok(())
}

/// Bytes a segment costs in an unfolding of `rows` data rows and `cols` segments: its column
/// of the dense Λ and of the compressed copy (≤ 20 bytes a row), and its share of the
/// segment × segment matrices — one Gram partial per 1 024 rows (summed in a fixed order) and
/// about six more (normal equations, Cholesky factors, Fisher matrix, covariance).
fn bytes_per_segment(rows: usize, cols: usize) -> u64 {
    let blocks = rows.div_ceil(1024) as u64 + 6;
    20 * rows as u64 + 8 * blocks * cols as u64
}

impl Unfold {
    /// Read the model and the event, check every option, bin the event and budget the solve.
    pub fn new(event: EventInput, o: &UnfoldOptions) -> Result<Self> {
        check_unfold_options(o)?;
        let setup = Setup::new(&o.model)?;
        Self::with_setup(setup, event, o)
    }

    /// [`Unfold::new`] with the model already read (options checked).
    pub(crate) fn with_setup(setup: Setup, event: EventInput, o: &UnfoldOptions) -> Result<Self> {
        let (event, label) = match event {
            EventInput::File(path) => (Event::read(&path)?, path),
            EventInput::Pulses {
                string,
                om,
                time,
                charge,
                window,
            } => {
                let label = PathBuf::from("<arrays>");
                (Event::from_columns(&label, &string, &om, &time, &charge, window)?, label)
            }
        };
        let binning = Binning {
            photons_per_bin: if setup.model.timing.is_none() { 0.0 } else { o.photons_per_bin },
            noise_rate_hz: o.model.noise_rate,
        };
        let bins = event.bin(&setup.geo, &binning).map_err(|m| InputError::file(&label, m))?;
        let (rows, cols) = (bins.rows(), setup.sources.len());
        let param = hypothesis_param(&setup.hypothesis);
        let what = if param == "track" { "spacing" } else { "cascade" };
        warpdrive_core::limits::check_alloc(
            what,
            cols as u64,
            bytes_per_segment(rows, cols),
            "the response matrix (data rows × segments) and the solver's segment × segment matrices grow with the number of segments: use a larger {spacing} or a shorter {track}",
        )?;
        let mut inputs = setup.inputs.clone();
        let event_label = label.display().to_string();
        let mut c = CommandLine::new("unfold").opt("event", &event_label);
        c = setup
            .command(c, &o.model)
            .opt("solver", solver_name(o.solver))
            .opt("regularization", &o.regularization.to_string())
            .opt("photons-per-bin", &o.photons_per_bin.to_string())
            .opt("tolerance", &o.tolerance.to_string())
            .opt("max-iterations", &o.max_iterations.to_string());
        if event_label != "<arrays>" {
            inputs.push(label);
        }
        let mut setup = setup;
        setup.inputs = inputs;
        Ok(Self {
            setup,
            event,
            event_label,
            bins,
            solve: SolveOptions {
                solver: o.solver,
                tolerance: o.tolerance,
                max_iterations: usize::try_from(o.max_iterations).unwrap_or(usize::MAX),
                regularization: o.regularization,
            },
            photons_per_bin: binning.photons_per_bin,
            noise_rate: o.model.noise_rate,
            command: c.done(),
        })
    }

    /// The table, geometry and event files read (outputs must not replace or contain them).
    pub fn inputs(&self) -> &[PathBuf] {
        &self.setup.inputs
    }

    /// The request as a `warpdrive spline unfold` command line.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// Rows (DOM time bins) and columns (sources) of Λ.
    pub fn shape(&self) -> (usize, usize) {
        (self.bins.rows(), self.setup.sources.len())
    }

    /// Build Λ (on one GPU, or the CPU threads) and solve for the energies. A hypothesis no DOM
    /// sees (every source < 1 PE per PeV) is an error naming it, not a zero result. Cancelled
    /// within one DOM of Λ on the CPU and one solver iteration (or Cholesky row).
    pub fn run(&self, ctl: &Control) -> Result<UnfoldResult> {
        let s = &self.setup;
        let gpu = one_gpu(ctl, "the response matrix")?;
        s.note_outside_source_range(ctl);
        ctl.install(|| {
            let t_build = Instant::now();
            let (l, device) = match gpu {
                Some(ordinal) => {
                    let eo = crate::gpu::EvalOptions {
                        window: true,
                        repeats: 1,
                        precise: ctl.precise,
                        ..Default::default()
                    };
                    let (l, st) = crate::gpu::response(&s.model, &self.bins, &s.sources, ordinal, &eo)?;
                    (l, st.device)
                }
                None => {
                    ctl.progress.begin("response matrix", self.bins.doms.len() as u64, "DOMs");
                    (response_with(&s.model, &self.bins, &s.sources, &ctl.progress), cpu_device())
                }
            };
            ctl.check()?;
            let response_seconds = t_build.elapsed().as_secs_f64();
            self.check_seen(&l)?;
            ctl.progress.begin("solving", self.solve.max_iterations as u64, "iterations");
            let t_solve = Instant::now();
            let solution = unfold_with(&l, &self.bins.charge, &self.bins.noise, &self.solve, &ctl.progress);
            ctl.check()?;
            let r = UnfoldResult {
                distances: s.hypothesis.distances(),
                sources: s.sources.clone(),
                solution,
                rows: l.rows,
                cols: l.cols,
                hit_doms: self.event.hit_doms(),
                charge_pe: self.event.total_charge(),
                event: self.event_label.clone(),
                solve: self.solve,
                photons_per_bin: self.photons_per_bin,
                noise_rate: self.noise_rate,
                command: self.command.clone(),
                device,
                response_seconds,
                solve_seconds: t_solve.elapsed().as_secs_f64(),
            };
            let blind = r.blind();
            if !blind.is_empty() {
                ctl.note(&format!(
                    "warning: {} of {} sources expect < 1 PE per PeV (outside the table or far from every DOM): {blind:?}; their energies are unconstrained — shorten the hypothesis or regularise",
                    blind.len(),
                    r.sources.len()
                ));
            }
            if r.all_at_bound() {
                ctl.note(&format!(
                    "warning: every one of the {} sources unfolded to E = 0 (the bound): the event shows no light beyond noise for this hypothesis, and the total has no uncertainty from the covariance (per-source sigma: the one-parameter curvature)",
                    r.sources.len()
                ));
            }
            if !r.solution.converged {
                ctl.note(&format!(
                    "warning: the solver stopped at its iteration limit ({}) before reaching the tolerance {:e}",
                    self.solve.max_iterations, self.solve.tolerance
                ));
            }
            Ok(r)
        })?
    }

    /// Refuse a hypothesis that no DOM sees: its energies would all be "0 ± 0, converged".
    fn check_seen(&self, l: &crate::millipede::model::Response) -> Result<()> {
        let mut seen = vec![0.0; l.cols];
        for i in 0..l.rows {
            seen.iter_mut().zip(l.row(i)).for_each(|(s, v)| *s += v);
        }
        if seen.iter().all(|&pe_per_gev| pe_per_gev < BLIND_PE_PER_GEV) {
            let who = match l.cols {
                1 => "it expects".to_string(),
                n => format!("each of its {n} segments expects"),
            };
            return Err(ParamError::new(
                hypothesis_param(&self.setup.hypothesis),
                format!(
                    "is seen by no DOM: {who} < 1 PE per PeV at every DOM of the geometry (beyond the tables' reach), so there is nothing to unfold; check the position (metres, IceCube coordinates)"
                ),
            )
            .into());
        }
        Ok(())
    }
}

/// Photo-electrons per GeV below which a source counts as unseen (1 PE per PeV).
pub const BLIND_PE_PER_GEV: f64 = 1e-6;

/// An unfolded event: the sources, their energies and how the fit went.
#[derive(Clone, Debug)]
pub struct UnfoldResult {
    pub sources: Vec<Source>,
    /// Distance of each source from the vertex along the track [m].
    pub distances: Vec<f64>,
    pub solution: Solution,
    /// Rows (DOM time bins) and columns (sources) of Λ.
    pub rows: usize,
    pub cols: usize,
    pub hit_doms: usize,
    pub charge_pe: f64,
    /// The event file, or `<arrays>`.
    pub event: String,
    pub solve: SolveOptions,
    pub photons_per_bin: f64,
    pub noise_rate: f64,
    command: String,
    /// Where Λ was built (`cpu (N threads)` or the GPU's name).
    pub device: String,
    pub response_seconds: f64,
    pub solve_seconds: f64,
}

impl UnfoldResult {
    /// Sources the detector barely sees (< 1 PE expected per PeV): unconstrained by the data.
    pub fn blind(&self) -> Vec<usize> {
        (0..self.sources.len())
            .filter(|&j| self.solution.pe_per_gev[j] < BLIND_PE_PER_GEV)
            .collect()
    }

    /// Σ E and its 1σ from the covariance [GeV]. When every source sits at the bound E = 0 the
    /// covariance (of the sources with E > 0) is empty and says nothing about the total: σ is
    /// then NaN (`null` in summary.json), never a misleading "0 ± 0".
    pub fn total(&self) -> (f64, f64) {
        let s = &self.solution;
        let sigma = if self.all_at_bound() {
            f64::NAN
        } else {
            s.covariance.iter().sum::<f64>().max(0.0).sqrt()
        };
        (s.energy.iter().sum(), sigma)
    }

    /// Every source unfolded to E = 0 (the data show no light beyond noise for this hypothesis).
    pub fn all_at_bound(&self) -> bool {
        self.solution.energy.iter().all(|&e| e == 0.0)
    }

    /// The request as a `warpdrive spline unfold` command line.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// `energies.parquet`'s table: source, distance, x, y, z, time, energy, sigma.
    pub fn energies_table(&self) -> Table {
        let mut t = Table::default();
        t.push("source", Column::I32((0..self.sources.len() as i32).collect()));
        t.push("distance", Column::F64(self.distances.clone()));
        for (k, name) in ["x", "y", "z"].iter().enumerate() {
            t.push(name, Column::F64(self.sources.iter().map(|s| s.pos[k]).collect()));
        }
        t.push("time", Column::F64(self.sources.iter().map(|s| s.time).collect()));
        t.push("energy", Column::F64(self.solution.energy.clone()));
        t.push("sigma", Column::F64(self.solution.sigma.clone()));
        version_meta(&mut t, &self.command);
        t
    }

    /// `summary.json`: the request's numbers and the fit's — nothing about the machine (the
    /// same request gives the same bytes on any device count and thread count).
    pub fn summary(&self) -> serde_json::Value {
        let sol = &self.solution;
        let (total, sigma) = self.total();
        serde_json::json!({
            "event": self.event,
            "solver": solver_name(self.solve.solver),
            "regularization": self.solve.regularization,
            "tolerance": self.solve.tolerance,
            "max_iterations": self.solve.max_iterations,
            "photons_per_bin": self.photons_per_bin,
            "noise_rate_hz": self.noise_rate,
            "converged": sol.converged,
            "iterations": sol.iterations,
            "nnls_start_iterations": sol.start_iterations,
            "rows": self.rows,
            "sources": self.cols,
            "blind_sources": self.blind(),
            "hit_doms": self.hit_doms,
            "charge_pe": self.charge_pe,
            "total_energy_gev": total,
            "total_energy_sigma_gev": sigma,
            "log_likelihood": sol.log_likelihood,
            "chi2": sol.chi2,
            "command": self.command,
            "version": env!("CARGO_PKG_VERSION"),
        })
    }

    /// `run.json`: how this run was made — `invocation` (the actual command line, or the
    /// Python call), device and threads, timings.
    pub fn run_info(&self, invocation: &str) -> serde_json::Value {
        serde_json::json!({
            "invocation": invocation,
            "response_device": self.device,
            "response_seconds": self.response_seconds,
            "solve_seconds": self.solve_seconds,
        })
    }

    /// Write `energies.parquet`, `summary.json`, `run.json` and, with `plot`, `energies.png`
    /// into the prepared directory and commit it whole.
    pub fn save(&self, out: Staged, plot: bool, invocation: &str) -> Result<()> {
        let dir = out.path().to_path_buf();
        let shown = out.dest().display().to_string();
        let fail = |e: String| Error::Failed(format!("{shown}: {e}"));
        self.energies_table()
            .write_parquet(&dir.join("energies.parquet"))
            .map_err(|e| fail(e.to_string()))?;
        let write = |name: &str, v: serde_json::Value| {
            std::fs::write(dir.join(name), format!("{v:#}\n")).map_err(|e| fail(format!("writing {name}: {e}")))
        };
        write("summary.json", self.summary())?;
        write("run.json", self.run_info(invocation))?;
        if plot {
            let s = &self.solution;
            crate::millipede::plot::energies(&dir.join("energies.png"), &self.distances, &s.energy, &s.sigma).map_err(fail)?;
        }
        out.commit()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpdrive_core::engine::Style;

    fn table() -> SplineTable {
        crate::table::small_2d()
    }

    #[test]
    fn square_point_arrays_are_ambiguous() {
        let t = table();
        let v = [1.5, 2.5, 1.2, 2.2];
        let rows = |shape| Eval::new(&t, None, Points::Rows { values: &v, shape }, EvalOptions::default());
        let e = rows([2, 2]).unwrap_err().render(Style::Python);
        assert!(e.starts_with("points of shape (2, 2) for a 2-D table are ambiguous"), "{e}");
        let e = Eval::new(&t, None, Points::Rows { values: &v, shape: [1, 4] }, EvalOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("points have 4 columns for a 2-D table"), "{e}");
        let v3 = [1.5, 2.5, 1.2, 2.2, 1.1, 2.1];
        let e = Eval::new(
            &t,
            None,
            Points::Rows {
                values: &v3,
                shape: [2, 3],
            },
            EvalOptions::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("looks like one array per coordinate"), "{e}");
        let r = Eval::new(
            &t,
            None,
            Points::Rows {
                values: &v3,
                shape: [3, 2],
            },
            EvalOptions::default(),
        )
        .unwrap();
        let out = r.run(&Control::new().device(warpdrive_core::engine::Device::Cpu)).unwrap();
        assert_eq!(out.values, [t.evaluate(&v3[..2]), t.evaluate(&v3[2..4]), t.evaluate(&v3[4..])]);
    }

    #[test]
    fn derivative_bitmasks() {
        assert_eq!(Quantity::from_bitmask(0, 3), Ok(Quantity::Value));
        assert_eq!(Quantity::from_bitmask(4, 3), Ok(Quantity::Partial(2)));
        let e = Quantity::from_bitmask(3, 3).unwrap_err().to_string();
        assert!(e.starts_with("derivatives 3 asks for a mixed derivative over 2 dimensions"), "{e}");
        assert!(Quantity::from_bitmask(8, 3).unwrap_err().to_string().contains("0 to 7"));
        assert!(Quantity::from_bitmask(-1, 3).is_err());
        let t = table();
        let v = [1.5, 2.5, 1.2, 2.2, 1.1, 2.1];
        let opts = EvalOptions {
            quantity: Quantity::Partial(1),
            ..Default::default()
        };
        let r = Eval::new(&t, None, Points::Rows { values: &v, shape: [3, 2] }, opts).unwrap();
        let out = r.run(&Control::new().device(warpdrive_core::engine::Device::Cpu)).unwrap();
        assert_eq!(out.values[1], t.gradient(&v[2..4]).grad[1]);
    }

    /// An evaluation split into jobs merges into the unsplit evaluation's file byte for byte.
    #[test]
    fn split_evaluations_merge_into_the_whole_one() {
        let t = table();
        let v: Vec<f64> = (0..2002).map(|i| 1.0 + (i % 997) as f64 / 997.0).collect();
        let dir = std::env::temp_dir().join(format!("wd-spline-split-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cpu = Control::new().device(warpdrive_core::engine::Device::Cpu);
        let save = |split: Share, name: &str| {
            let opts = EvalOptions {
                quantity: Quantity::Gradient,
                split,
                ..Default::default()
            };
            let req = Eval::new(
                &t,
                None,
                Points::Rows {
                    values: &v,
                    shape: [1001, 2],
                },
                opts,
            )
            .unwrap();
            let p = dir.join(name);
            req.run(&cpu).unwrap().table(&req).write_parquet(&p).unwrap();
            p
        };
        let whole = save(Share::WHOLE, "whole.parquet");
        let jobs: Vec<PathBuf> = (0..4)
            .map(|i| save(Share::new(4, i).unwrap(), &format!("job{i}.parquet")))
            .collect();
        let merged = dir.join("merged.parquet");
        merge_eval(&jobs, Some(&merged), false, &cpu).unwrap();
        assert_eq!(std::fs::read(&merged).unwrap(), std::fs::read(&whole).unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn grid_equals_points() {
        let t = table();
        let axes = vec![vec![1.1, 1.5, 1.9], vec![2.0, 2.5]];
        let g = Grid::new(&t, axes.clone()).unwrap();
        assert_eq!(g.shape(), [3, 2]);
        let v = g.run(&Control::new()).unwrap();
        for (i, x) in axes[0].iter().enumerate() {
            for (j, y) in axes[1].iter().enumerate() {
                assert_eq!(v[i * 2 + j], t.evaluate(&[*x, *y]));
            }
        }
        assert!(Grid::new(&t, vec![vec![1.0]])
            .unwrap_err()
            .to_string()
            .starts_with("coords has 1 coordinate arrays"));
    }

    #[test]
    fn a_raised_token_cancels_an_evaluation() {
        let t = table();
        let v: Vec<f64> = (0..2_000_000).map(|i| 1.0 + (i % 1000) as f64 / 1000.0).collect();
        let r = Eval::new(
            &t,
            None,
            Points::Rows {
                values: &v,
                shape: [1_000_000, 2],
            },
            EvalOptions::default(),
        )
        .unwrap();
        let ctl = Control::new().device(warpdrive_core::engine::Device::Cpu);
        ctl.cancel.cancel();
        assert!(matches!(r.run(&ctl), Err(Error::Cancelled(_))));
        assert_eq!(ctl.progress.done(), 0);
    }

    #[test]
    fn command_lines_quote_what_needs_it() {
        assert_eq!(word("a/b.fits"), "a/b.fits");
        assert_eq!(word("my file's"), r"'my file'\''s'");
        assert_eq!(numbers(&[5000.0, -1.5, 1e-9]), "5000,-1.5,0.000000001");
    }
}

// ---------------------------------------------------------------------------------------------
// Fitting tables (issue #32): `warpdrive spline fit`, `warpdrive.spline.fit`.

/// The knots of one axis.
#[derive(Clone, Debug, PartialEq)]
pub enum Knots {
    /// `LO:HI:COUNT`: COUNT equally spaced knots from LO to HI, and `order` more at the same
    /// spacing beyond each end (photospline's padding, so that the full basis covers [LO, HI]):
    /// COUNT + order − 1 coefficients.
    Uniform { lo: f64, hi: f64, count: usize },
    /// The knot vector as the table stores it (photospline's `knots` argument): n + order + 1
    /// knots for n coefficients, used as given.
    List(Vec<f64>),
}

impl Knots {
    /// `LO:HI:COUNT` or a comma-separated list (`--knots`).
    pub fn parse(s: &str) -> Result<Self, ParamError> {
        let num = |t: &str| -> Result<f64, ParamError> {
            t.trim().parse::<f64>().ok().filter(|v| v.is_finite()).ok_or_else(|| {
                ParamError::new(
                    "knots",
                    format!("'{s}': '{t}' is not a finite number (LO:HI:COUNT or a comma-separated knot list)"),
                )
            })
        };
        let parts: Vec<&str> = s.split(':').collect();
        match parts.len() {
            1 => Ok(Knots::List(s.split(',').map(num).collect::<Result<_, _>>()?)),
            3 => {
                let (lo, hi) = (num(parts[0])?, num(parts[1])?);
                let count = parts[2]
                    .trim()
                    .parse::<usize>()
                    .ok()
                    .filter(|&c| c >= 2)
                    .ok_or_else(|| ParamError::new("knots", format!("'{s}': COUNT '{}' must be an integer ≥ 2", parts[2])))?;
                if hi <= lo {
                    return Err(ParamError::new("knots", format!("'{s}': HI must be above LO")));
                }
                Ok(Knots::Uniform { lo, hi, count })
            }
            _ => Err(ParamError::new(
                "knots",
                format!("'{s}': LO:HI:COUNT (uniform knots) or a comma-separated knot list"),
            )),
        }
    }

    /// The knot vector for degree `order`.
    pub fn vector(&self, order: u32) -> Vec<f64> {
        match self {
            Knots::List(v) => v.clone(),
            Knots::Uniform { lo, hi, count } => {
                let h = (hi - lo) / (*count - 1) as f64;
                let k = order as i64;
                (-k..*count as i64 + k)
                    .map(|i| if i == *count as i64 - 1 { *hi } else { lo + h * i as f64 })
                    .collect()
            }
        }
    }

    fn text(&self) -> String {
        match self {
            Knots::List(v) => numbers(v),
            Knots::Uniform { lo, hi, count } => format!("{lo}:{hi}:{count}"),
        }
    }
}

/// The settings of a fit (photospline's `glam_fit` arguments). `order`, `smooth` and
/// `penalty_order` take one value for every axis or one per axis.
#[derive(Clone, Debug, PartialEq)]
pub struct FitOptions {
    pub knots: Vec<Knots>,
    pub order: Vec<u32>,
    pub smooth: Vec<f64>,
    pub penalty_order: Vec<u32>,
    pub monodim: Option<usize>,
}

impl Default for FitOptions {
    fn default() -> Self {
        Self {
            knots: Vec::new(),
            order: vec![2],
            smooth: Vec::new(),
            penalty_order: vec![2],
            monodim: None,
        }
    }
}

/// Where the histogram comes from.
#[derive(Clone, Debug)]
pub enum HistogramInput<'a> {
    /// Parquet, CSV or `.npz` ([`crate::histogram`]).
    File(PathBuf),
    /// Arrays (Python): values and weights in C order over `centers`.
    /// (The shapes the caller gave `z` and `w`, checked against the centres.)
    Arrays {
        z: &'a [f64],
        w: &'a [f64],
        z_shape: Vec<usize>,
        w_shape: Vec<usize>,
        centers: Vec<Vec<f64>>,
    },
}

/// A validated fit of a table to a histogram.
#[derive(Clone, Debug)]
pub struct FitTable<'a> {
    z: Cow<'a, [f64]>,
    w: Cow<'a, [f64]>,
    centers: Vec<Vec<f64>>,
    spec: crate::fit::Spec,
    path: Option<PathBuf>,
    /// Header keys the table inherits from the histogram file: `AXISd` (the axis columns'
    /// names, which `spline unfold` reads to find a table's source zenith and depth axes) and
    /// the tabulator's `NGROUP` and `GEOMETRY`.
    header: Vec<(String, crate::fits::Value)>,
    command: String,
}

/// The header keys a fitted table inherits from its histogram file: the axis names (`AXISd`,
/// not for `.npz`, whose axes are only numbered) and the tabulator's `NGROUP` (the group index
/// its delays are measured with) and `GEOMETRY`.
fn inherited_header(h: &crate::histogram::HistogramFile) -> Vec<(String, crate::fits::Value)> {
    use crate::fits::Value;
    let mut out = Vec::new();
    if !h.axes.iter().all(|a| a.starts_with("edges_")) {
        for (d, a) in h.axes.iter().enumerate() {
            out.push((format!("AXIS{d}"), Value::Str(a.clone())));
        }
    }
    for (k, v) in &h.meta {
        match k.as_str() {
            "NGROUP" => {
                if let Ok(x) = v.trim().parse::<f64>() {
                    out.push((k.clone(), Value::Float(x)));
                }
            }
            "GEOMETRY" => {
                if let Ok(x) = v.trim().parse::<i64>() {
                    out.push((k.clone(), Value::Int(x)));
                }
            }
            _ => {}
        }
    }
    out
}

/// A fit problem's errors about the arrays, said of the file's fields when they came from one.
fn histogram_error(e: Error, path: Option<&Path>, h: Option<&crate::histogram::HistogramFile>) -> Error {
    match (e, path, h) {
        (Error::Param(p), Some(path), Some(h)) if ["z", "w", "centers"].contains(&p.param) => {
            let field = match p.param {
                "z" => h.value.clone(),
                "w" => h.weight.clone(),
                _ => h.axes.join(", "),
            };
            InputError::file(path, p.text.trim_start().to_string()).field(field).into()
        }
        (e, _, _) => e,
    }
}

impl<'a> FitTable<'a> {
    /// Read the histogram and check the request (shapes, weights, knots, orders, singular
    /// spans, the memory of the normal matrix) before anything large is allocated.
    pub fn new(input: HistogramInput<'a>, opts: &FitOptions) -> Result<Self> {
        if opts.smooth.is_empty() {
            return Err(ParamError::new(
                "smooth",
                "is needed: the smoothing λ of the derivative penalty (one value, or one per axis)",
            )
            .into());
        }
        let (z, w, centers, path, file) = match input {
            HistogramInput::File(p) => {
                let h = crate::histogram::read(&p)?;
                (
                    Cow::Owned(h.z.clone()),
                    Cow::Owned(h.w.clone()),
                    h.centers.clone(),
                    Some(p),
                    Some(h),
                )
            }
            HistogramInput::Arrays {
                z,
                w,
                z_shape,
                w_shape,
                centers,
            } => {
                let grid: Vec<usize> = centers.iter().map(Vec::len).collect();
                for (name, shape) in [("z", &z_shape), ("w", &w_shape)] {
                    if *shape != grid {
                        return Err(ParamError::new(
                            name,
                            format!("has shape {shape:?} but the {{centers}} make a grid of {grid:?}: one value per bin, axes in the order of the centres"),
                        )
                        .into());
                    }
                }
                (Cow::Borrowed(z), Cow::Borrowed(w), centers, None, None)
            }
        };
        let nd = centers.len();
        if opts.knots.len() != nd {
            return Err(ParamError::new(
                "knots",
                format!(
                    "are given for {} axes; the histogram has {nd} (give knots once per axis)",
                    opts.knots.len()
                ),
            )
            .into());
        }
        let order_of = |d: usize| opts.order.get(if opts.order.len() == 1 { 0 } else { d }).copied().unwrap_or(2);
        let spec = crate::fit::Spec {
            knots: opts.knots.iter().enumerate().map(|(d, k)| k.vector(order_of(d))).collect(),
            order: opts.order.clone(),
            smooth: opts.smooth.clone(),
            penalty_order: opts.penalty_order.clone(),
            monodim: opts.monodim,
        };
        let hist = crate::fit::Histogram {
            z: &z,
            w: &w,
            centers: &centers,
        };
        crate::fit::Problem::new(hist, &spec).map_err(|e| histogram_error(e, path.as_deref(), file.as_ref()))?;
        let header = file.as_ref().map(inherited_header).unwrap_or_default();
        let mut c = CommandLine::new("fit").path(path.as_deref().unwrap_or(Path::new("<arrays>")));
        for k in &opts.knots {
            c = c.opt("knots", &k.text());
        }
        let ints = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        c = c
            .opt("order", &ints(&opts.order))
            .opt("smooth", &numbers(&opts.smooth))
            .opt("penalty-order", &ints(&opts.penalty_order));
        if let Some(m) = opts.monodim {
            c = c.opt("monodim", &m.to_string());
        }
        Ok(Self {
            z,
            w,
            centers,
            spec,
            path,
            header,
            command: c.done(),
        })
    }

    /// The histogram file (the output must not replace it).
    pub fn inputs(&self) -> Vec<PathBuf> {
        self.path.iter().cloned().collect()
    }

    /// The request as a `warpdrive spline fit` command line.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// Bins and coefficients.
    pub fn size(&self) -> (usize, usize) {
        let n = self.spec.knots.iter().enumerate().map(|(d, t)| {
            let k = self.spec.order[if self.spec.order.len() == 1 { 0 } else { d }] as usize;
            t.len() - k - 1
        });
        (self.z.len(), n.product())
    }

    /// Fit on the control's device: the CPU threads, or one GPU (of several, the first; the
    /// GPU's coefficients equal the CPU's bit for bit, see [`crate::fit::gpu`]). Cancelled
    /// between the GLAM contractions and between block columns of the factorisation.
    pub fn run(&self, ctl: &Control) -> Result<FitResult> {
        let gpu = match ctl.gpus()? {
            Some(d) if d.len() > 1 => {
                ctl.note(&format!("device: the fitter runs on one GPU, cuda:{}", d[0]));
                Some(d[0])
            }
            Some(d) => d.first().copied(),
            None => None,
        };
        ctl.install(|| {
            let hist = crate::fit::Histogram {
                z: &self.z,
                w: &self.w,
                centers: &self.centers,
            };
            let problem = crate::fit::Problem::new(hist, &self.spec)?;
            ctl.progress.begin("fitting", problem.steps(), "steps");
            let t0 = Instant::now();
            let gpu = match gpu {
                Some(i) if problem.monodim.is_some() => {
                    ctl.note(&format!("device: cpu (monotonic fits run on the CPU; cuda:{i} not used)"));
                    None
                }
                g => g,
            };
            let (fit, device) = match gpu {
                Some(i) => {
                    let (fit, stats) = crate::fit::gpu::solve(&problem, i, &ctl.progress)?;
                    (fit, stats.device)
                }
                None => (problem.solve(&ctl.progress)?, cpu_device()),
            };
            ctl.check()?;
            let mut table = problem.table(&fit);
            table.aux.extend(self.header.iter().cloned());
            table.aux.push((
                "CREATOR".into(),
                crate::fits::Value::Str(format!("warpdrive {} spline fit", env!("CARGO_PKG_VERSION"))),
            ));
            Ok(FitResult {
                coefficients: fit.coefficients,
                table,
                chi2: fit.chi2,
                bins: fit.bins,
                seconds: t0.elapsed().as_secs_f64(),
                device,
            })
        })?
    }
}

/// A fitted table.
#[derive(Clone, Debug)]
pub struct FitResult {
    /// The table (float32 coefficients, the fit's settings in its header).
    pub table: SplineTable,
    /// The solution in double precision (C order).
    pub coefficients: Vec<f64>,
    /// Σ w (z − f)² over the bins, and the bins with weight > 0.
    pub chi2: f64,
    pub bins: usize,
    pub seconds: f64,
    pub device: String,
}

impl FitResult {
    /// Write the FITS table into the prepared file and commit it.
    pub fn save(&self, out: Staged) -> Result<()> {
        std::fs::write(out.path(), self.table.to_fits()).map_err(|e| Error::Failed(format!("{}: {e}", out.dest().display())))?;
        out.commit()?;
        Ok(())
    }
}
