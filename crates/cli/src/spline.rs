//! `warpdrive spline {info,eval,simulate,unfold}` and `warpdrive bench spline`: argument parsing
//! and output only; tables, evaluation and unfolding live in warpdrive-spline.

use crate::{command_line, devices, CommonArgs};
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use std::time::Instant;
use warpdrive_core::table::{read_parquet, Column, Table};
use warpdrive_photon::geometry::Geometry;
use warpdrive_spline::eval::uniform_points;
use warpdrive_spline::millipede::event::{Binning, Event};
use warpdrive_spline::millipede::model::{direction, response, Hypothesis, Model, Source};
use warpdrive_spline::millipede::solve::{unfold as solve, SolveOptions, Solver};
use warpdrive_spline::millipede::synth::{generate, SynthOptions};
use warpdrive_spline::millipede::unfold::{unfold_event, UnfoldOptions};
use warpdrive_spline::SplineTable;

#[derive(Subcommand)]
pub enum SplineCommand {
    /// Print a table's shape, orders, extents, knots and auxiliary keys.
    Info {
        /// Photospline FITS table.
        table: PathBuf,
    },
    /// Evaluate a table at points (CSV or Parquet in, Parquet out).
    Eval(EvalArgs),
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
    pub common: CommonArgs,
}

#[derive(Args, Clone)]
pub struct ModelArgs {
    /// Amplitude table (3-D: r, φ, cos θ; value ln PE per photon). Default: the EM cascade table in $WARPDRIVE_DATA.
    #[arg(long)]
    amplitude: Option<PathBuf>,
    /// Timing table (4-D: r, φ, cos θ, delay; cumulative). Default: the EM cascade table in $WARPDRIVE_DATA.
    #[arg(long)]
    timing: Option<PathBuf>,
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
}

#[derive(Args)]
pub struct UnfoldArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Event: Parquet with string, om, time, charge (window in metadata window_start/_end).
    #[arg(long)]
    event: PathBuf,
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
    #[arg(long, default_value_t = SolveOptions::default().max_iterations)]
    max_iterations: usize,
    /// Output directory (energies.parquet, summary.json, energies.png).
    #[arg(long, short, default_value = "unfold-out")]
    output: PathBuf,
    #[command(flatten)]
    pub common: CommonArgs,
}

pub fn run(cmd: SplineCommand, force: bool) -> Result<()> {
    match cmd {
        SplineCommand::Info { table } => info(&table),
        SplineCommand::Eval(a) => crate::thread_pool(&a.common)?.install(|| eval(&a, force)),
        SplineCommand::Simulate(a) => simulate(&a, force),
        SplineCommand::Unfold(a) => crate::thread_pool(&a.common)?.install(|| unfold(&a, force)),
    }
}

fn info(path: &Path) -> Result<()> {
    let t = SplineTable::read(path)?;
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
    let bad = t.coefficients.iter().filter(|c| !c.is_finite()).count();
    if bad > 0 {
        println!("warning: {bad} coefficients are not finite");
    }
    for (k, v) in &t.aux {
        println!("aux {k} = {}", v.text());
    }
    Ok(())
}

/// Coordinates of a points file: Parquet or CSV (optional header), one column per dimension.
fn read_points(path: &Path, ndim: usize, columns: &[String]) -> Result<(Vec<String>, Vec<Vec<f64>>)> {
    let is_parquet = std::fs::File::open(path)
        .and_then(|mut f| {
            let mut m = [0u8; 4];
            std::io::Read::read_exact(&mut f, &mut m).map(|()| &m == b"PAR1")
        })
        .unwrap_or(false);
    let (names, cols): (Vec<String>, Vec<Vec<f64>>) = if is_parquet {
        let t = read_parquet(path)?;
        (
            t.columns.iter().map(|(n, _)| n.clone()).collect(),
            t.columns.iter().map(|(_, c)| c.to_f64()).collect(),
        )
    } else {
        let text = warpdrive_core::error::read_text(path)?;
        let mut lines = warpdrive_core::error::data_lines(&text).peekable();
        let first = lines.peek().map(|(_, l)| l.to_string()).unwrap_or_default();
        let header = first.split(',').any(|f| f.trim().parse::<f64>().is_err());
        let names: Vec<String> = if header {
            lines.next();
            first.split(',').map(|s| s.trim().to_string()).collect()
        } else {
            (0..first.split(',').count()).map(|i| format!("x{i}")).collect()
        };
        let mut cols = vec![Vec::new(); names.len()];
        for (i, l) in lines {
            let f: Vec<&str> = l.split(',').collect();
            if f.len() != names.len() {
                bail!("{}:{i}: {} fields, expected {}", path.display(), f.len(), names.len());
            }
            for (k, v) in f.iter().enumerate() {
                cols[k].push(warpdrive_core::error::parse_f64(path, i, &names[k], Some(v.trim()))?);
            }
        }
        (names, cols)
    };
    let pick: Vec<usize> = if columns.is_empty() {
        if names.len() != ndim {
            bail!(
                "{}: {} columns ({}) for a {ndim}-D table; name the coordinates with --columns",
                path.display(),
                names.len(),
                names.join(", ")
            );
        }
        (0..ndim).collect()
    } else {
        if columns.len() != ndim {
            bail!("--columns names {} columns for a {ndim}-D table", columns.len());
        }
        columns
            .iter()
            .map(|c| {
                names
                    .iter()
                    .position(|n| n == c)
                    .with_context(|| format!("{}: no column '{c}' (have {})", path.display(), names.join(", ")))
            })
            .collect::<Result<_>>()?
    };
    Ok((
        pick.iter().map(|&i| names[i].clone()).collect(),
        pick.iter().map(|&i| cols[i].clone()).collect(),
    ))
}

fn eval(a: &EvalArgs, force: bool) -> Result<()> {
    let mut outs = crate::outputs(
        force,
        &[Some(a.table.as_path()), Some(a.points.as_path())],
        &[Some(a.output.as_path())],
    )?;
    let t = SplineTable::read(&a.table)?;
    let nd = t.ndim();
    let (names, cols) = read_points(&a.points, nd, &a.columns)?;
    let n = cols[0].len();
    let flat: Vec<f64> = (0..n).flat_map(|i| cols.iter().map(move |c| c[i])).collect();
    let per = if a.gradient { nd + 1 } else { 1 };
    let start = Instant::now();
    let (values, how) = warpdrive_spline::points::evaluate_points(
        &t,
        &flat,
        &warpdrive_spline::points::PointsOptions {
            gradient: a.gradient,
            devices: devices(&a.common)?,
            window: !a.standard_layout,
            precise: a.common.precise,
        },
    )?;
    let mut out = Table::default();
    for (name, c) in names.iter().zip(&cols) {
        out.push(name, Column::F64(c.clone()));
    }
    out.push("value", Column::F64((0..n).map(|i| values[i * per]).collect()));
    if a.gradient {
        for d in 0..nd {
            out.push(&format!("grad{d}"), Column::F64((0..n).map(|i| values[i * per + 1 + d]).collect()));
        }
    }
    out.meta("table", a.table.display().to_string());
    out.meta("command", command_line());
    out.meta("device", how.clone());
    out.write_parquet(&outs.file(&a.output)?)?;
    outs.commit()?;
    println!(
        "{n} points evaluated on {how} in {:.3} s -> {}",
        start.elapsed().as_secs_f64(),
        a.output.display()
    );
    Ok(())
}

fn model_and_geometry(m: &ModelArgs) -> Result<(Model, Geometry)> {
    Ok(warpdrive_spline::millipede::unfold::model_and_geometry(
        m.amplitude.as_deref(),
        m.timing.as_deref(),
        m.amplitude_only,
        m.geometry.as_deref(),
        |n| eprintln!("note: {n}"),
    )?)
}

fn hypothesis(m: &ModelArgs) -> Result<Hypothesis> {
    Ok(Hypothesis::from_numbers(&m.cascade, &m.track, m.spacing)?)
}

impl ModelArgs {
    /// The table and geometry files given on the command line (inputs no output may replace).
    fn inputs(&self) -> [Option<&Path>; 3] {
        [self.amplitude.as_deref(), self.timing.as_deref(), self.geometry.as_deref()]
    }
}

/// The highest energy per source `spline simulate` accepts [GeV].
const MAX_SIMULATE_ENERGY_GEV: f64 = 1e9;

fn simulate(a: &SimulateArgs, force: bool) -> Result<()> {
    let mut outs = crate::outputs(force, &a.model.inputs(), &[Some(a.output.as_path())])?;
    let (model, geo) = model_and_geometry(&a.model)?;
    let sources = hypothesis(&a.model)?.sources();
    let energy: Vec<f64> = match a.energy.len() {
        1 => vec![a.energy[0]; sources.len()],
        n if n == sources.len() => a.energy.clone(),
        n => bail!("--energy has {n} values for {} sources", sources.len()),
    };
    if energy.iter().any(|e| !(e.is_finite() && *e >= 0.0)) {
        bail!("--energy values must be finite and ≥ 0");
    }
    // Every photoelectron is drawn one by one: bound the energy so an event stays within ~1e9 PE.
    if let Some(e) = energy.iter().find(|&&e| e > MAX_SIMULATE_ENERGY_GEV) {
        bail!("--energy {e:e} GeV: above {MAX_SIMULATE_ENERGY_GEV:e} GeV per source (1 EeV; each photoelectron is drawn, so an event would not finish); check the unit (GeV)");
    }
    if a.window.len() != 2 || a.window[1] <= a.window[0] {
        bail!("--window takes start,end with end > start");
    }
    let opts = SynthOptions {
        window: [a.window[0], a.window[1]],
        noise_rate_hz: a.model.noise_rate,
        seed: a.seed,
    };
    let ev = generate(&model, &geo, &sources, &energy, &opts, a.event);
    let mut t = ev.to_table();
    t.meta("true_energy", energy.iter().map(|e| e.to_string()).collect::<Vec<_>>().join(","));
    t.meta("command", command_line());
    t.write_parquet(&outs.file(&a.output)?)?;
    outs.commit()?;
    println!(
        "{} pulses ({} PE) on {} DOMs from {} sources -> {}",
        ev.pulses.len(),
        ev.total_charge(),
        ev.hit_doms(),
        sources.len(),
        a.output.display()
    );
    Ok(())
}

fn unfold(a: &UnfoldArgs, force: bool) -> Result<()> {
    let start = Instant::now();
    let [amp, tim, geo] = a.model.inputs();
    let mut outs = crate::outputs(force, &[amp, tim, geo, Some(a.event.as_path())], &[Some(a.output.as_path())])?;
    let (model, geo) = model_and_geometry(&a.model)?;
    let h = hypothesis(&a.model)?;
    let opts = UnfoldOptions {
        solve: SolveOptions {
            solver: a.solver.parse().map_err(anyhow::Error::msg)?,
            regularization: a.regularization,
            tolerance: a.tolerance,
            max_iterations: a.max_iterations,
        },
        binning: Binning {
            photons_per_bin: a.photons_per_bin,
            noise_rate_hz: a.model.noise_rate,
        },
        device: devices(&a.common)?.map(|d| d[0]),
        precise: a.common.precise,
    };
    opts.check()?;
    let ev = Event::read(&a.event)?;
    let u = unfold_event(&model, &geo, &h, &ev, &opts)?;
    let sol = &u.solution;
    let blind = u.blind();
    if !blind.is_empty() {
        eprintln!(
            "warning: {} of {} sources expect < 1 PE per PeV (outside the table or far from every DOM): {:?}; their energies are unconstrained — shorten the hypothesis or use --regularization",
            blind.len(),
            u.sources.len(),
            blind
        );
    }
    let dir = outs.dir(&a.output)?;
    let mut t = u.energies_table();
    t.meta("command", command_line());
    t.write_parquet(&dir.join("energies.parquet"))?;
    let (total, total_sigma) = u.total();
    let summary = serde_json::json!({
        "event": a.event.display().to_string(),
        "solver": a.solver,
        "regularization": a.regularization,
        "tolerance": a.tolerance,
        "converged": sol.converged,
        "iterations": sol.iterations,
        "nnls_start_iterations": sol.start_iterations,
        "solve_seconds": u.solve_seconds,
        "rows": u.rows,
        "sources": u.cols,
        "hit_doms": u.hit_doms,
        "charge_pe": u.charge_pe,
        "total_energy_gev": total,
        "total_energy_sigma_gev": total_sigma,
        "log_likelihood": sol.log_likelihood,
        "chi2": sol.chi2,
        "response_device": u.device,
        "response_seconds": u.response_seconds,
        "seconds": start.elapsed().as_secs_f64(),
        "command": command_line(),
    });
    std::fs::write(dir.join("summary.json"), format!("{summary:#}\n")).with_context(|| format!("writing {}", a.output.display()))?;
    plot_energies(&dir.join("energies.png"), &u.distances, &sol.energy, &sol.sigma)?;
    outs.commit()?;
    println!("{:>6} {:>9} {:>12} {:>10}", "source", "dist [m]", "energy [GeV]", "sigma");
    for (j, ((d, e), s)) in u.distances.iter().zip(&sol.energy).zip(&sol.sigma).enumerate() {
        println!("{j:>6} {d:>9.1} {e:>12.1} {s:>10.1}");
    }
    println!(
        "total {total:.1} ± {total_sigma:.1} GeV; ln L = {:.2}, χ² = {:.1} over {} rows; {} {} iterations{} ({}) in {:.2} s; Λ built on {} in {:.3} s -> {}",
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
        a.output.display()
    );
    if !sol.converged {
        eprintln!(
            "warning: the solver stopped at --max-iterations {} before reaching --tolerance {:e}",
            a.max_iterations, a.tolerance
        );
    }
    Ok(())
}

fn plot_energies(path: &Path, along: &[f64], e: &[f64], s: &[f64]) -> Result<()> {
    use warpdrive_core::plot::plotters::prelude::*;
    use warpdrive_core::plot::{colour, write_png, FONT};
    let top = e
        .iter()
        .zip(s)
        .map(|(a, b)| a + if b.is_finite() { *b } else { 0.0 })
        .fold(1.0f64, f64::max)
        * 1.1;
    let (lo, hi) = (
        along.first().copied().unwrap_or(0.0) - 10.0,
        along.last().copied().unwrap_or(0.0) + 10.0,
    );
    write_png(path, (900, 500), |area| {
        let mut ch = ChartBuilder::on(area)
            .caption("Millipede unfolding: energy per source", (FONT, 22))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(lo..hi, 0.0..top)?;
        ch.configure_mesh()
            .x_desc("distance along the track [m]")
            .y_desc("energy [GeV]")
            .label_style((FONT, 14))
            .draw()?;
        let c = colour(0);
        ch.draw_series(along.iter().zip(e).zip(s).map(|((x, y), sg)| {
            let sg = if sg.is_finite() { *sg } else { 0.0 };
            PathElement::new(vec![(*x, (y - sg).max(0.0)), (*x, y + sg)], c.stroke_width(2))
        }))?;
        ch.draw_series(along.iter().zip(e).map(|(x, y)| Circle::new((*x, *y), 4, c.filled())))?;
        Ok(())
    })?;
    Ok(())
}

#[derive(Args)]
pub struct BenchSpline {
    /// Random points per batch.
    #[arg(long, default_value_t = 10_000_000)]
    points: usize,
    /// Points for the CPU timings (the rate is per point; default 10^6).
    #[arg(long, default_value_t = 1_000_000)]
    cpu_points: usize,
    /// auto (a GPU if CUDA works, else the CPU), cpu, or cuda / cuda:N (cuda:all where the benchmark supports it).
    #[arg(long, default_value = "auto")]
    pub(crate) device: String,
    /// JSON result file.
    #[arg(long, default_value = "bench-spline.json")]
    pub(crate) json: PathBuf,
}

/// The benchmark event: a 1 km track of 100 segments of 10 m through the detector, 10 TeV each,
/// binned at 5 PE per bin on the 5 160 DOMs of the IceCube geometry.
fn bench_event(model: &Model, geo: &Geometry) -> (Vec<Source>, warpdrive_spline::millipede::model::Bins) {
    let h = Hypothesis::Track {
        vertex: [450.0, 250.0, 400.0],
        dir: direction(0.9, 0.5),
        time: 0.0,
        length: 1000.0,
        spacing: 10.0,
    };
    let sources = h.sources();
    let e = vec![10_000.0; sources.len()];
    let ev = generate(model, geo, &sources, &e, &SynthOptions::default(), 0);
    let bins = ev.bin(geo, &Binning::default()).expect("bench geometry has every DOM");
    (sources, bins)
}

pub fn bench(b: &BenchSpline) -> Result<()> {
    let data = warpdrive_core::data::data_dir();
    let ems = data.join("splines/icetray_photospline_ems");
    let tables = [
        ("amplitude 3-D", ems.join("ems_z0_a0.pt.abs.fits")),
        ("timing 4-D", ems.join("ems_z0_a0.pt.prob.fits")),
    ];
    let mut rows = Vec::new();
    let mut report = serde_json::Map::new();
    let gpu = if b.device == "cpu" {
        None
    } else {
        Some(warpdrive_core::cuda::parse_devices(&b.device)?[0])
    };
    for (label, path) in &tables {
        let t = SplineTable::read(path)?;
        let n_cpu = b.cpu_points;
        let pts = uniform_points(&t, n_cpu, 1);
        for threads in [1, rayon::current_num_threads()] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build()?;
            for grad in [false, true] {
                let t0 = Instant::now();
                let v = pool.install(|| if grad { t.gradient_many(&pts) } else { t.evaluate_many(&pts) });
                let s = t0.elapsed().as_secs_f64();
                std::hint::black_box(v);
                let rate = n_cpu as f64 / s;
                rows.push(format!(
                    "{label:<14} cpu {threads:>2} thread(s) {:<9} {rate:>12.3e} evals/s",
                    if grad { "gradient" } else { "value" }
                ));
                report.insert(
                    format!("{label} cpu{threads} {}", if grad { "gradient" } else { "value" }),
                    serde_json::json!(rate),
                );
            }
        }
        if let Some(dev) = gpu {
            let pts = uniform_points(&t, b.points, 2);
            for window in [false, true] {
                for grad in [false, true] {
                    let opts = warpdrive_spline::gpu::EvalOptions {
                        window,
                        gradient: grad,
                        repeats: 5,
                        precise: false,
                    };
                    let (_, st) = warpdrive_spline::gpu::evaluate(&t, &pts, dev, &opts)?;
                    let rate = b.points as f64 / st.kernel_s;
                    let name = format!(
                        "{label} gpu {}{}",
                        if window { "window" } else { "standard" },
                        if grad { " gradient" } else { " value" }
                    );
                    rows.push(format!(
                        "{name:<40} {rate:>12.3e} evals/s (kernel {:.3} ms, upload {:.1} ms, download {:.1} ms, {} regs, {} B local, coefficients {:.1} kB vs {:.1} kB)",
                        1e3 * st.kernel_s,
                        1e3 * st.upload_s,
                        1e3 * st.download_s,
                        st.registers,
                        st.local_bytes,
                        st.layout_bytes as f64 / 1e3,
                        4e-3 * t.coefficients.len() as f64
                    ));
                    report.insert(name, serde_json::json!({"evals_per_s": rate, "kernel_s": st.kernel_s, "upload_s": st.upload_s, "download_s": st.download_s, "registers": st.registers, "coefficient_bytes": st.layout_bytes}));
                }
            }
        }
    }
    // Response matrix: 5 160 DOMs × 100 segments.
    let (model, geo) = model_and_geometry(&ModelArgs {
        amplitude: None,
        timing: None,
        amplitude_only: false,
        geometry: None,
        cascade: vec![],
        track: vec![],
        spacing: 10.0,
        noise_rate: 500.0,
    })?;
    let (sources, bins) = bench_event(&model, &geo);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
    let t0 = Instant::now();
    let l_cpu = pool.install(|| response(&model, &bins, &sources));
    let cpu_s = t0.elapsed().as_secs_f64();
    let edges = bins.edges.len();
    rows.push(format!(
        "response {} DOMs × {} segments ({} rows, {} bin edges): cpu 1 thread {:.3} s",
        bins.doms.len(),
        sources.len(),
        bins.rows(),
        edges,
        cpu_s
    ));
    report.insert("response cpu1 s".into(), serde_json::json!(cpu_s));
    if let Some(dev) = gpu {
        for window in [false, true] {
            let (l, st) = warpdrive_spline::gpu::response(
                &model,
                &bins,
                &sources,
                dev,
                &warpdrive_spline::gpu::EvalOptions {
                    window,
                    repeats: 5,
                    ..Default::default()
                },
            )?;
            let worst = l
                .values
                .iter()
                .zip(&l_cpu.values)
                .map(|(a, c)| (a - c).abs())
                .fold(0.0f64, f64::max);
            let scale = l_cpu.values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            rows.push(format!(
                "response gpu {:<8} kernel {:.3} ms (+ upload {:.2} ms, download {:.2} ms) = {:.0}× one core (kernel), {:.0}× with transfers; max |ΔΛ| {:.2e} of max Λ {:.2e}; {} regs",
                if window { "window" } else { "standard" },
                1e3 * st.kernel_s,
                1e3 * st.upload_s,
                1e3 * st.download_s,
                cpu_s / st.kernel_s,
                cpu_s / (st.kernel_s + st.upload_s + st.download_s),
                worst,
                scale,
                st.registers
            ));
            report.insert(format!("response gpu {}", if window { "window" } else { "standard" }), serde_json::json!({"kernel_s": st.kernel_s, "upload_s": st.upload_s, "download_s": st.download_s, "speedup_kernel": cpu_s / st.kernel_s}));
        }
    }
    // Unfolding that Λ: the solvers on one thread and on all cores.
    let all = rayon::current_num_threads();
    for solver in [Solver::Newton, Solver::Pcg, Solver::Nnls] {
        for threads in [1, all] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build()?;
            let t0 = Instant::now();
            let opts = SolveOptions {
                solver,
                ..Default::default()
            };
            let sol = pool.install(|| solve(&l_cpu, &bins.charge, &bins.noise, &opts));
            let s = t0.elapsed().as_secs_f64();
            let name = format!("unfold {solver:?} {threads} thread(s)").to_lowercase();
            rows.push(format!(
                "{name:<40} {s:>8.3} s ({} iterations after {} of NNLS, {}; total {:.1} TeV)",
                sol.iterations,
                sol.start_iterations,
                if sol.converged { "converged" } else { "NOT converged" },
                sol.energy.iter().sum::<f64>() / 1e3
            ));
            report.insert(
                name,
                serde_json::json!({"seconds": s, "iterations": sol.iterations, "converged": sol.converged}),
            );
        }
    }
    for r in &rows {
        println!("{r}");
    }
    report.insert("command".into(), serde_json::json!(command_line()));
    warpdrive_core::table::write_atomic(&b.json, format!("{:#}\n", serde_json::Value::Object(report)).as_bytes())?;
    Ok(())
}
