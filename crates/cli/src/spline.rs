//! `warpdrive spline {info,eval,fit,simulate,unfold}`: arguments translated into
//! `warpdrive_spline::engine` requests, results printed; tables, evaluation, unfolding, checks
//! and outputs live in warpdrive-spline.

use crate::{command_line, CommonArgs};
use anyhow::Result;
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use std::time::Instant;
use warpdrive_core::progress::Bar;
use warpdrive_spline::engine::{
    self, Eval, EvalOptions, EventInput, FitOptions, FitTable, HistogramInput, Knots, ModelOptions, Points, Quantity, Simulate,
    SimulateOptions, Unfold, UnfoldOptions,
};
use warpdrive_spline::millipede::solve::SolveOptions;
use warpdrive_spline::millipede::unfold::{parse_source_axes, ModelFiles};

#[derive(Subcommand)]
pub enum SplineCommand {
    /// Print a table's shape, orders, extents, knots and auxiliary keys.
    Info {
        /// Photospline FITS table.
        table: PathBuf,
    },
    /// Evaluate a table at points (CSV or Parquet in, Parquet out).
    Eval(EvalArgs),
    /// Fit a table to a histogram: penalized tensor-product B-splines (photospline's glam_fit).
    Fit(FitArgs),
    /// Draw a synthetic event (DOM pulses) from amplitude and timing tables.
    Simulate(SimulateArgs),
    /// Millipede: unfold the energy losses of a track or cascade hypothesis from an event.
    Unfold(UnfoldArgs),
}

#[derive(Args)]
pub struct EvalArgs {
    /// Photospline FITS table to evaluate.
    table: PathBuf,
    /// Points: Parquet or CSV with one column per dimension (in order, or named by --columns).
    #[arg(long)]
    points: PathBuf,
    /// Column names to use as coordinates, comma separated.
    #[arg(long, value_delimiter = ',')]
    columns: Vec<String>,
    /// Also write the gradient (columns grad0, grad1, ...).
    #[arg(long)]
    gradient: bool,
    /// GPU: read photospline's own coefficient layout instead of the redundant window layout
    /// (the default: 1.8× faster on the 4-D timing table, 2.6× the memory; docs/performance/spline.md).
    #[arg(long)]
    standard_layout: bool,
    /// Output file (Parquet): the points' coordinates, `value`, and `grad0…` with --gradient.
    #[arg(long, short, default_value = "spline-eval.parquet")]
    output: PathBuf,
    #[command(flatten)]
    split: crate::merge::SplitArgs,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Args)]
pub struct FitArgs {
    /// Histogram: Parquet or CSV with one column per axis (bin centres), `value` and `weight`
    /// (one row per bin; missing bins are empty), or NumPy .npz with `counts`, `weights` and
    /// `edges_0` … `edges_{N-1}`.
    histogram: PathBuf,
    /// Knots of one axis, once per axis in order: LO:HI:COUNT (COUNT equally spaced knots from LO
    /// to HI plus ORDER more beyond each end: COUNT + ORDER - 1 coefficients) or a comma-separated
    /// knot vector used as given (n + ORDER + 1 knots for n coefficients).
    #[arg(long, required = true, allow_hyphen_values = true)]
    knots: Vec<String>,
    /// B-spline degree (photospline's order: 2 = quadratic), one for all axes or one per axis.
    #[arg(long, value_delimiter = ',', default_value = "2")]
    order: Vec<u32>,
    /// Smoothing λ ≥ 0 of the derivative penalty, one for all axes or one per axis.
    #[arg(long, value_delimiter = ',', required = true, allow_hyphen_values = true)]
    smooth: Vec<f64>,
    /// Order of the penalized derivative (≤ the degree; 0 = ridge), one for all axes or one per axis.
    #[arg(long, value_delimiter = ',', default_value = "2")]
    penalty_order: Vec<u32>,
    /// Axis along which the fit does not decrease (photospline's monodim: coefficients as cumulative sums of non-negative increments, so the fit is also ≥ 0; runs on the CPU).
    #[arg(long)]
    monodim: Option<usize>,
    /// Output table (photospline FITS).
    #[arg(long, short, default_value = "fit.fits")]
    output: PathBuf,
    /// The fit runs on one GPU (the first of --device) or on the CPU (--threads), with the same coefficients bit for bit.
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Args, Clone)]
pub struct ModelArgs {
    /// Amplitude table (r, φ, cos θ [, source zenith/depth]; value ln PE per photon). Default: the EM cascade table in $WARPDRIVE_DATA.
    #[arg(long)]
    amplitude: Option<PathBuf>,
    /// Timing table (r, φ, cos θ, delay [, source zenith/depth]; cumulative). Default: the EM cascade table in $WARPDRIVE_DATA.
    #[arg(long)]
    timing: Option<PathBuf>,
    /// The tables' axes after r, φ, cos θ (and delay): zenith and/or depth, in the tables' order. Default: as the tables' AXISd keys (written by `spline fit` from `photon tabulate`) say, else none.
    #[arg(long, value_delimiter = ',', num_args = 1)]
    source_axes: Vec<String>,
    /// Amplitude-only model (one bin per DOM, no timing table).
    #[arg(long, conflicts_with = "timing")]
    amplitude_only: bool,
    /// Geometry (PPC geo-f2k or Prometheus .geo). Default: $WARPDRIVE_DATA/geometry/icecube_geo-f2k.
    #[arg(long)]
    geometry: Option<PathBuf>,
    /// One cascade: x,y,z [m],zenith,azimuth [deg],t [ns].
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true, num_args = 1)]
    cascade: Vec<f64>,
    /// A track: x,y,z [m],zenith,azimuth [deg],t [ns],length [m] (vertex = start).
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true, num_args = 1, conflicts_with = "cascade")]
    track: Vec<f64>,
    /// Segment length along the track [m].
    #[arg(long, default_value_t = 15.0, allow_hyphen_values = true)]
    spacing: f64,
    /// Dark rate per DOM [Hz].
    #[arg(long, default_value_t = 500.0, allow_hyphen_values = true)]
    noise_rate: f64,
}

#[derive(Args)]
pub struct SimulateArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Energy per source [GeV], comma separated (one value: the same for every source).
    #[arg(long, value_delimiter = ',', required = true, allow_hyphen_values = true)]
    energy: Vec<f64>,
    /// Readout window start,end [ns].
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true, default_value = "-1000,9000")]
    window: Vec<f64>,
    /// Random seed of the synthetic event (Poisson PE counts, times, noise).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Event number: the Philox stream of this event (several events from one seed).
    #[arg(long, default_value_t = 0)]
    event: u64,
    /// Output file (Parquet): the event (string, om, time, charge) with the window and true energies in its metadata.
    #[arg(long, short, default_value = "event.parquet")]
    output: PathBuf,
    /// The event is drawn on the CPU (--threads); a GPU --device is noted and not used.
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Args)]
pub struct UnfoldArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Event: Parquet with string, om, time, charge (window in metadata window_start/_end).
    #[arg(long, required_unless_present = "events", conflicts_with = "events")]
    event: Option<PathBuf>,
    /// A list of events, each with its own hypothesis: CSV with the header
    /// event,kind,x,y,z,zenith,azimuth,t,length (kind cascade or track; docs/spline.md).
    /// Splittable into batch jobs (--jobs/--job-index).
    #[arg(long)]
    events: Option<PathBuf>,
    /// newton (Poisson likelihood, projected Newton; default), pcg (Poisson likelihood, Millipede's
    /// preconditioned CG: same maximum, many more iterations) or nnls (weighted least squares, biased low at small charges).
    #[arg(long, default_value = "newton")]
    solver: String,
    /// Millipede's ShowerRegularization λ [GeV⁻²]: penalty λ Σ E² (1e-9 ≈ a 22 TeV Gaussian prior width).
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    regularization: f64,
    /// Close a time bin once it holds this many PE (≤ 0: one bin per DOM).
    #[arg(long, default_value_t = 5.0, allow_hyphen_values = true)]
    photons_per_bin: f64,
    /// newton/pcg: stop when every free source's |∂lnL/∂E| / Σ_i Λ_i (a relative change of its expected
    /// charge) is below this.
    #[arg(long, default_value_t = SolveOptions::default().tolerance, allow_hyphen_values = true)]
    tolerance: f64,
    /// Iteration limit of the solver (newton/pcg iterations after the NNLS start).
    #[arg(long, default_value_t = SolveOptions::default().max_iterations as u64)]
    max_iterations: u64,
    /// Output directory (energies.parquet, summary.json, energies.png; with --events also events.parquet).
    #[arg(long, short, default_value = "unfold-out")]
    output: PathBuf,
    #[command(flatten)]
    split: crate::merge::SplitArgs,
    #[command(flatten)]
    pub common: CommonArgs,
}

pub fn run(cmd: SplineCommand, force: bool) -> Result<()> {
    match cmd {
        SplineCommand::Info { table } => info(&table),
        SplineCommand::Eval(a) => eval(&a, force),
        SplineCommand::Fit(a) => fit(&a, force),
        SplineCommand::Simulate(a) => simulate(&a, force),
        SplineCommand::Unfold(a) => unfold(&a, force),
    }
}

fn info(path: &Path) -> Result<()> {
    let t = engine::read_table(path)?;
    println!(
        "{}: {}-D photospline table, {} coefficients ({:.1} MB as float32)",
        path.display(),
        t.ndim(),
        t.coefficients.len(),
        4e-6 * t.coefficients.len() as f64
    );
    println!(
        "{:<4} {:>6} {:>6} {:>7} {:>14} {:>14} {:>8}",
        "dim", "order", "coeffs", "knots", "extent lo", "extent hi", "period"
    );
    for d in 0..t.ndim() {
        println!(
            "{:<4} {:>6} {:>6} {:>7} {:>14.6} {:>14.6} {:>8}",
            d,
            t.order[d],
            t.naxes[d],
            t.knots[d].len(),
            t.extents[d][0],
            t.extents[d][1],
            t.periods[d]
        );
    }
    if !t.extents_in_file {
        println!("(no EXTENTS in the file: extents from the knots)");
    }
    println!("coefficients per evaluation: {}", t.support_size());
    let bad = t.non_finite_coefficients();
    if bad > 0 {
        println!("warning: {bad} coefficients are not finite");
    }
    for (k, v) in &t.aux {
        println!("aux {k} = {}", v.text());
    }
    Ok(())
}

fn eval(a: &EvalArgs, force: bool) -> Result<()> {
    let ctl = a.common.control()?;
    // The output is checked (and staged) before any input is read.
    let out = engine::prepare_file(&a.output, force, &[a.table.clone(), a.points.clone()])?;
    let table = engine::read_table(&a.table)?;
    let opts = EvalOptions {
        quantity: if a.gradient { Quantity::Gradient } else { Quantity::Value },
        standard_layout: a.standard_layout,
        split: a.split.split()?,
    };
    let points = Points::File {
        path: a.points.clone(),
        columns: a.columns.clone(),
    };
    let req = Eval::new(&table, Some(&a.table), points, opts)?;
    let bar = Bar::show(&ctl.progress);
    let r = req.run(&ctl)?;
    drop(bar);
    r.save(&req, out)?;
    println!(
        "{} points evaluated on {} in {:.3} s -> {}",
        req.points(),
        r.device,
        r.seconds,
        a.output.display()
    );
    a.split.note();
    Ok(())
}

fn fit(a: &FitArgs, force: bool) -> Result<()> {
    let ctl = a.common.control()?;
    let out = engine::prepare_file(&a.output, force, std::slice::from_ref(&a.histogram))?;
    let opts = FitOptions {
        knots: a.knots.iter().map(|k| Knots::parse(k)).collect::<Result<_, _>>()?,
        order: a.order.clone(),
        smooth: a.smooth.clone(),
        penalty_order: a.penalty_order.clone(),
        monodim: a.monodim,
    };
    let req = FitTable::new(HistogramInput::File(a.histogram.clone()), &opts)?;
    let bar = Bar::show(&ctl.progress);
    let r = req.run(&ctl)?;
    drop(bar);
    r.save(out)?;
    let (bins, coefs) = req.size();
    println!(
        "{coefs} coefficients fitted to {} of {bins} bins (weight > 0) on {} in {:.3} s: Σ w (z - f)² = {:.6e} -> {}",
        r.bins,
        r.device,
        r.seconds,
        r.chi2,
        a.output.display()
    );
    Ok(())
}

impl ModelArgs {
    /// The engine's model options of these arguments.
    fn options(&self) -> Result<ModelOptions> {
        Ok(ModelOptions {
            files: ModelFiles {
                amplitude: self.amplitude.clone(),
                timing: self.timing.clone(),
                source_axes: if self.source_axes.is_empty() {
                    None
                } else {
                    Some(parse_source_axes(&self.source_axes)?)
                },
                amplitude_only: self.amplitude_only,
                geometry: self.geometry.clone(),
            },
            cascade: (!self.cascade.is_empty()).then(|| self.cascade.clone()),
            track: (!self.track.is_empty()).then(|| self.track.clone()),
            spacing: self.spacing,
            noise_rate: self.noise_rate,
        })
    }
}

fn simulate(a: &SimulateArgs, force: bool) -> Result<()> {
    let ctl = a.common.control()?;
    let model = a.model.options()?;
    let out = engine::prepare_file(&a.output, force, &model.files.paths())?;
    let req = Simulate::new(&SimulateOptions {
        model,
        energy: a.energy.clone(),
        window: a.window.clone(),
        seed: a.seed,
        event: a.event,
    })?;
    let bar = Bar::show(&ctl.progress);
    let r = req.run(&ctl)?;
    drop(bar);
    r.save(out)?;
    let ev = &r.event;
    println!(
        "{} pulses ({} PE) on {} DOMs from {} sources -> {}",
        ev.pulses.len(),
        ev.total_charge(),
        ev.hit_doms(),
        r.sources,
        a.output.display()
    );
    Ok(())
}

fn unfold(a: &UnfoldArgs, force: bool) -> Result<()> {
    let start = Instant::now();
    let ctl = a.common.control()?;
    let opts = UnfoldOptions {
        model: a.model.options()?,
        solver: engine::parse_solver(&a.solver)?,
        regularization: a.regularization,
        photons_per_bin: a.photons_per_bin,
        tolerance: a.tolerance,
        max_iterations: a.max_iterations,
    };
    let Some(event) = &a.event else {
        return unfold_events(a, &opts, force);
    };
    warpdrive_spline::event_list::refuse_split_of_one_event(a.split.split()?)?;
    let mut inputs = opts.model.files.paths();
    inputs.push(event.clone());
    let out = engine::prepare_dir(&a.output, force, &inputs)?;
    let req = Unfold::new(EventInput::File(event.clone()), &opts)?;
    let bar = Bar::show(&ctl.progress);
    let u = req.run(&ctl)?;
    drop(bar);
    u.save(out, true, &command_line())?;
    let sol = &u.solution;
    println!("{:>6} {:>9} {:>12} {:>10}", "source", "dist [m]", "energy [GeV]", "sigma");
    for (j, ((d, e), s)) in u.distances.iter().zip(&sol.energy).zip(&sol.sigma).enumerate() {
        println!("{j:>6} {d:>9.1} {e:>12.1} {s:>10.1}");
    }
    let (total, total_sigma) = u.total();
    let total = if total_sigma.is_nan() {
        format!("{total:.1} GeV (every source at E = 0: no uncertainty of the total)")
    } else {
        format!("{total:.1} ± {total_sigma:.1} GeV")
    };
    println!(
        "total {total}; ln L = {:.2}, χ² = {:.1} over {} rows; {} {} iterations{} ({}) in {:.2} s; Λ built on {} in {:.3} s; {:.2} s in all -> {}",
        sol.log_likelihood,
        sol.chi2,
        u.rows,
        a.solver,
        sol.iterations,
        if sol.start_iterations > 0 { format!(" after {} of NNLS", sol.start_iterations) } else { String::new() },
        if sol.converged { "converged" } else { "NOT converged" },
        u.solve_seconds,
        u.device,
        u.response_seconds,
        start.elapsed().as_secs_f64(),
        a.output.display()
    );
    Ok(())
}

/// `spline unfold --events LIST`: every event of the list (or a batch job's share).
fn unfold_events(a: &UnfoldArgs, opts: &UnfoldOptions, force: bool) -> Result<()> {
    let start = Instant::now();
    let ctl = a.common.control()?;
    let list = a.events.as_ref().expect("--events");
    let req = warpdrive_spline::event_list::UnfoldEvents::new(list, opts, a.split.split()?)?;
    let out = engine::prepare_dir(&a.output, force, &req.inputs())?;
    let bar = Bar::show(&ctl.progress);
    let r = req.run(&ctl)?;
    drop(bar);
    r.save(out, &command_line())?;
    println!(
        "{:>6} {:>8} {:>14} {:>12} {:>10}",
        "event", "sources", "total [GeV]", "sigma", "converged"
    );
    for (k, u) in &r.events {
        let (t, s) = u.total();
        println!("{k:>6} {:>8} {t:>14.1} {s:>12.1} {:>10}", u.cols, u.solution.converged);
    }
    println!(
        "{} of {} events unfolded in {:.2} s ({:.2} s in all) -> {}",
        r.events.len(),
        req.events(),
        r.seconds,
        start.elapsed().as_secs_f64(),
        a.output.display()
    );
    a.split.note();
    Ok(())
}
