//! `warpdrive beam track`: ELEGANT-style tracking of `.lte` lattices.
//! `beam track` translates its options into `warpdrive_beam::engine::Track` and prints the
//! result; validation, budgets, devices and outputs live in the library.

use anyhow::Result;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use warpdrive_beam::engine::{self, BeamSource, GaussianOptions, Line, ReferenceOptions, Track, TrackOptions};
use warpdrive_core::progress::Bar;

// Parsed once per process: the size of the arguments does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
pub enum BeamCommand {
    /// Track a beam through an ELEGANT .lte lattice (DRIF, EDRIFT, QUAD, SEXT, SBEN/CSBEND, RBEN,
    /// KQUAD, KSEXT, KOCT, MULT, HKICK, VKICK, KICKER, SOLE, MARK, WATCH, LSCDRIFT, CHARGE).
    Track(TrackArgs),
    /// Linear optics of a ring (periodic solution) or a line (with --betx/--bety ...): Twiss
    /// functions and dispersion at every element end (twiss.parquet), tunes, chromaticity,
    /// momentum compaction, synchrotron tune (summary.json) and a plot of β and η (twiss.png).
    Twiss(TwissArgs),
    /// Run an ELEGANT .ele file (run_setup, run_control, twiss_output, bunched_beam, sdds_beam,
    /// track): the files it names (SDDS) and the tracking's Parquet files go into -o DIR.
    Run(RunArgs),
}

#[derive(Args)]
pub struct RunArgs {
    /// The ELEGANT run file (.ele).
    ele: PathBuf,
    /// Output directory [default: NAME-out for NAME.ele].
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// Also write each tracking's final.sdds, lost.sdds and watch points as SDDS beside its
    /// Parquet files.
    #[arg(long)]
    sdds: bool,
    #[command(flatten)]
    common: crate::CommonArgs,
}

#[derive(Args)]
pub struct TwissArgs {
    /// ELEGANT lattice file.
    lattice: PathBuf,
    /// Beamline to use (default: USE statement, else the last line defined).
    #[arg(long)]
    line: Option<String>,
    /// Output directory.
    #[arg(short, long)]
    output: PathBuf,
    /// Initial β_x [m]: a line (transfer-line optics from the given values) instead of a ring.
    #[arg(long, requires = "bety", allow_hyphen_values = true)]
    betx: Option<f64>,
    /// Initial β_y [m] (with --betx).
    #[arg(long, requires = "betx", allow_hyphen_values = true)]
    bety: Option<f64>,
    /// Initial α_x (with --betx) [default: 0].
    #[arg(long, requires = "betx", allow_hyphen_values = true)]
    alfx: Option<f64>,
    /// Initial α_y (with --betx) [default: 0].
    #[arg(long, requires = "betx", allow_hyphen_values = true)]
    alfy: Option<f64>,
    /// Initial dispersion η_x [m] (with --betx) [default: 0].
    #[arg(long, requires = "betx", allow_hyphen_values = true)]
    dx: Option<f64>,
    /// Initial η'_x (with --betx) [default: 0].
    #[arg(long, requires = "betx", allow_hyphen_values = true)]
    dpx: Option<f64>,
    /// Reference momentum β0γ0 (ELEGANT's p_central) [default: 1956.951].
    #[arg(long, conflicts_with = "momentum", allow_hyphen_values = true)]
    p_central: Option<f64>,
    /// Reference momentum [MeV/c] (instead of --p-central).
    #[arg(long, allow_hyphen_values = true)]
    momentum: Option<f64>,
    /// Particle species [default: electron].
    #[arg(long)]
    particle: Option<String>,
    /// Do not draw twiss.png.
    #[arg(long)]
    no_plot: bool,
    /// Also write twiss.sdds (ELEGANT's twiss_output layout).
    #[arg(long)]
    sdds: bool,
}

#[derive(Args, Clone)]
pub struct BeamArgs {
    /// Reference momentum β0γ0 (ELEGANT's p_central, units of m c) [default: 1956.951].
    #[arg(long, conflicts_with = "momentum", allow_hyphen_values = true)]
    p_central: Option<f64>,
    /// Reference momentum [MeV/c] (instead of --p-central).
    #[arg(long, allow_hyphen_values = true)]
    momentum: Option<f64>,
    /// Particle species: electron, positron, proton, antiproton, muon, antimuon, pi+, pi-,
    /// deuteron [default: electron]; or give --mass (and --particle-charge) for another.
    #[arg(long)]
    particle: Option<String>,
    /// Rest mass of a custom species [MeV/c²].
    #[arg(long, allow_hyphen_values = true)]
    mass: Option<f64>,
    /// Charge number of a custom species [e] [default: 1].
    #[arg(long, allow_hyphen_values = true)]
    particle_charge: Option<f64>,
    /// Read particles from Parquet or CSV (columns x, xp, y, yp, s or t, delta or p) instead of a Gaussian beam.
    #[arg(long)]
    beam: Option<PathBuf>,
    /// Gaussian beam: number of particles.
    #[arg(long, default_value_t = 100_000)]
    particles: u64,
    /// Twiss β_x at the start [m].
    #[arg(long, default_value_t = 10.0, allow_hyphen_values = true)]
    beta_x: f64,
    /// Twiss α_x at the start.
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    alpha_x: f64,
    /// Geometric RMS emittance ε_x [m rad] [default: 1e-9].
    #[arg(long, allow_hyphen_values = true, conflicts_with = "nemit_x")]
    emit_x: Option<f64>,
    /// Normalised RMS emittance β0γ0 ε_x [m rad] (instead of --emit-x).
    #[arg(long, allow_hyphen_values = true)]
    nemit_x: Option<f64>,
    /// Twiss β_y at the start [m].
    #[arg(long, default_value_t = 10.0, allow_hyphen_values = true)]
    beta_y: f64,
    /// Twiss α_y at the start.
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    alpha_y: f64,
    /// Geometric RMS emittance ε_y [m rad] [default: 1e-9].
    #[arg(long, allow_hyphen_values = true, conflicts_with = "nemit_y")]
    emit_y: Option<f64>,
    /// Normalised RMS emittance β0γ0 ε_y [m rad] (instead of --emit-y).
    #[arg(long, allow_hyphen_values = true)]
    nemit_y: Option<f64>,
    /// RMS bunch length [m] (xtrack's σ_z).
    #[arg(long, default_value_t = 1e-3, allow_hyphen_values = true)]
    sigma_s: f64,
    /// RMS momentum spread.
    #[arg(long, default_value_t = 1e-3, allow_hyphen_values = true)]
    sigma_delta: f64,
    /// Random seed of the Gaussian beam (particle i uses Philox stream (seed, i)).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Bunch charge [C] (a CHARGE element overrides it).
    #[arg(long, default_value_t = 1e-9, allow_hyphen_values = true)]
    charge: f64,
}

impl BeamArgs {
    fn reference(&self) -> Result<ReferenceOptions> {
        Ok(ReferenceOptions {
            particle: self.particle.as_deref().map(engine::species).transpose()?,
            mass: self.mass,
            particle_charge: self.particle_charge,
            p_central: self.p_central,
            momentum: self.momentum,
        })
    }

    fn source(&self) -> BeamSource {
        match &self.beam {
            Some(path) => BeamSource::File(path.clone()),
            None => BeamSource::Gaussian(GaussianOptions {
                particles: self.particles,
                beta_x: self.beta_x,
                alpha_x: self.alpha_x,
                emit_x: self.emit_x,
                nemit_x: self.nemit_x,
                beta_y: self.beta_y,
                alpha_y: self.alpha_y,
                emit_y: self.emit_y,
                nemit_y: self.nemit_y,
                sigma_s: self.sigma_s,
                sigma_delta: self.sigma_delta,
                seed: self.seed,
            }),
        }
    }
}

#[derive(Args)]
pub struct TrackArgs {
    /// ELEGANT lattice file.
    lattice: PathBuf,
    /// Beamline to use (default: USE statement, else the last line defined).
    #[arg(long)]
    line: Option<String>,
    /// Number of passes (turns) through the line.
    #[arg(long, default_value_t = 1)]
    passes: u64,
    /// Half-width of a square aperture checked after every element [m] (default: none; NaN and ∞ are always lost).
    #[arg(long, allow_hyphen_values = true)]
    aperture: Option<f64>,
    /// LSC charge histogram: sort, block-atomic (default) or block-sort-scan.
    #[arg(long, default_value = "block-atomic")]
    histogram: String,
    /// GPU: one kernel launch per element instead of one per run of map elements.
    #[arg(long)]
    launch_per_element: bool,
    /// GPU: 256-thread blocks per multiprocessor the map kernels are compiled for (0: compiler's choice).
    #[arg(long, default_value_t = warpdrive_beam::gpu::DEFAULT_MIN_BLOCKS)]
    min_blocks: u32,
    /// Watch-point records: files (one Parquet file per record), stream (one Parquet file per
    /// watch point, a row group per record) or off (no records, no moments).
    #[arg(long, default_value = "files")]
    watch: String,
    /// Watch points act every k-th pass (on top of each WATCH's INTERVAL).
    #[arg(long, default_value_t = 1, conflicts_with = "watch_passes")]
    watch_every: u64,
    /// Watch points act at these passes only (0-based), e.g. 0,100,1999.
    #[arg(long, value_delimiter = ',')]
    watch_passes: Option<Vec<u64>>,
    /// Record only these particles (0-based rows of the beam), e.g. 0,1,2; moments use all.
    #[arg(long, value_delimiter = ',')]
    watch_particles: Option<Vec<u64>>,
    /// Output directory (final.parquet, watch files, moments.parquet, sizes.png, run.json).
    #[arg(long, short, default_value = "beam-out")]
    output: PathBuf,
    /// Do not draw sizes.png.
    #[arg(long)]
    no_plot: bool,
    /// Also write final.sdds and lost.sdds (SDDS, ELEGANT's particle layout).
    #[arg(long)]
    sdds: bool,
    #[command(flatten)]
    beam: BeamArgs,
    #[command(flatten)]
    split: crate::merge::SplitArgs,
    #[command(flatten)]
    common: crate::CommonArgs,
}

pub fn run(cmd: BeamCommand, force: bool) -> Result<()> {
    match cmd {
        BeamCommand::Track(a) => track_cmd(&a, force),
        BeamCommand::Twiss(a) => twiss_cmd(&a, force),
        BeamCommand::Run(a) => run_cmd(&a, force),
    }
}

fn run_cmd(a: &RunArgs, force: bool) -> Result<()> {
    let ctl = a.common.control()?;
    let opts = warpdrive_beam::ele::EleOptions {
        sdds: a.sdds,
        command: crate::command_line(),
    };
    let bar = Bar::show(&ctl.progress);
    let r = warpdrive_beam::ele::run_file(&a.ele, a.output.as_deref(), force, &opts, &ctl)?;
    drop(bar);
    if let Some(o) = &r.twiss {
        let s = &o.summary;
        println!(
            "twiss: Qx = {:.6}  Qy = {:.6}  ξx = {:.4}  ξy = {:.4}",
            s.tunes[0], s.tunes[1], s.chromaticity[0], s.chromaticity[1]
        );
    }
    if let Some(m) = &r.matrix {
        println!(
            "matrix: R11 = {:.6}  R12 = {:.6} m  R33 = {:.6}  R34 = {:.6} m  R56 = {:.6e} m",
            m.r[0][0], m.r[0][1], m.r[2][2], m.r[2][3], m.r[4][5]
        );
    }
    for t in &r.steps {
        let at = if t.dir.is_empty() { String::new() } else { format!(" [{}]", t.dir) };
        println!(
            "tracked {} particles on {}: {} lost; final σx = {:.6e} m, σy = {:.6e} m{at}",
            t.particles, t.device, t.lost, t.sigma_x, t.sigma_y
        );
        if !t.lost_by_pass.is_empty() {
            let per: Vec<String> = t.lost_by_pass.iter().take(8).map(|(p, c)| format!("{p}: {c}")).collect();
            println!("lost per pass: {}", per.join(", "));
        }
    }
    println!("wrote {} ({})", r.output.display(), r.written.join(", "));
    Ok(())
}

fn twiss_cmd(a: &TwissArgs, force: bool) -> Result<()> {
    let out = engine::prepare_output(&a.output, force, std::slice::from_ref(&a.lattice))?;
    let line = Line::read(&a.lattice, a.line.as_deref())?;
    let reference = ReferenceOptions {
        particle: a.particle.as_deref().map(engine::species).transpose()?,
        p_central: a.p_central,
        momentum: a.momentum,
        ..Default::default()
    };
    let initial = a.betx.zip(a.bety).map(|(betx, bety)| warpdrive_beam::twiss::Initial {
        betx,
        bety,
        alfx: a.alfx.unwrap_or(0.0),
        alfy: a.alfy.unwrap_or(0.0),
        dx: a.dx.unwrap_or(0.0),
        dpx: a.dpx.unwrap_or(0.0),
    });
    let opts = engine::TwissOptions {
        initial,
        plot: !a.no_plot,
        sdds: a.sdds,
        command: crate::command_line(),
    };
    let r = line.twiss(&reference, &opts, Some(out))?;
    let s = &r.summary;
    println!(
        "{} {} ({} elements, {:.6} m)",
        if s.periodic { "ring" } else { "line" },
        line.line_name(),
        line.elements(),
        s.circumference
    );
    println!("tunes            Qx = {:.6}  Qy = {:.6}", s.tunes[0], s.tunes[1]);
    println!(
        "chromaticity     ξx = {:.4}  ξy = {:.4}  (dQ/dδ)",
        s.chromaticity[0], s.chromaticity[1]
    );
    if let Some(a) = s.momentum_compaction {
        println!("momentum compaction α_c = {a:.6e}");
    }
    if let Some(q) = s.synchrotron_tune {
        println!("synchrotron tune Qs = {q:.6e} (no radiation)");
    }
    let files = if a.no_plot {
        "twiss.parquet, summary.json"
    } else {
        "twiss.parquet, summary.json, twiss.png"
    };
    let sdds = if a.sdds { ", twiss.sdds" } else { "" };
    println!("wrote {} ({files}{sdds})", a.output.display());
    Ok(())
}

fn track_cmd(a: &TrackArgs, force: bool) -> Result<()> {
    let start = Instant::now();
    let ctl = a.common.control()?;
    let inputs: Vec<PathBuf> = [Some(a.lattice.clone()), a.beam.beam.clone()].into_iter().flatten().collect();
    // The output directory is checked and staged first: an unwritable or existing output fails
    // before any work, and the staged directory vanishes if anything below fails.
    let out = engine::prepare_output(&a.output, force, &inputs)?;
    let line = Arc::new(Line::read(&a.lattice, a.line.as_deref())?);
    let opts = TrackOptions {
        passes: a.passes,
        aperture: a.aperture,
        charge: a.beam.charge,
        histogram: engine::histogram(&a.histogram)?,
        launch_per_element: a.launch_per_element,
        min_blocks: a.min_blocks,
        watch: engine::watch_mode(&a.watch)?,
        watch_every: a.watch_every,
        watch_passes: a.watch_passes.clone(),
        watch_particles: a.watch_particles.clone(),
        output: true,
        plot: !a.no_plot,
        sdds: a.sdds,
        command: crate::command_line(),
        split: a.split.split()?,
    };
    let req = Track::new(Arc::clone(&line), a.beam.source(), &a.beam.reference()?, &opts)?;
    let n = req.bunch().len();
    let program = line.program();
    let (flops, nmaps) = program.map_flops();
    eprintln!(
        "beam: {} elements ({nmaps} map elements, {flops} flops per particle and pass), {:.3} m, {n} particles ({}), {} passes",
        line.elements(),
        line.length(),
        req.bunch().species.name,
        req.passes()
    );
    let bar = Bar::show(&ctl.progress);
    let r = req.run(&ctl, Some(out))?;
    drop(bar);
    println!(
        "line {} ({} elements, {:.4} m), {n} particles, {} passes on {}",
        line.line_name(),
        line.elements(),
        line.length(),
        req.passes(),
        r.device
    );
    println!(
        "{:<12} {:>14} {:>14} {:>14} {:>14} {:>12}",
        "", "σx [m]", "σy [m]", "εx [m rad]", "εy [m rad]", "σδ"
    );
    for (label, m) in [("initial", &r.initial), ("final", &r.last)] {
        println!(
            "{label:<12} {:>14.6e} {:>14.6e} {:>14.6e} {:>14.6e} {:>12.4e}",
            m.rms(0),
            m.rms(2),
            m.emittance(0),
            m.emittance(1),
            m.rms(5)
        );
    }
    if r.lost() > 0 {
        let list: Vec<String> = r.lost_by_element.iter().take(8).map(|(e, c)| format!("{e} ×{c}")).collect();
        println!(
            "lost: {} particles (lost.parquet; flagged in final.parquet: lost_at, lost_pass) — {}",
            r.lost(),
            list.join(", ")
        );
        let per: Vec<String> = r.lost_by_pass.iter().take(8).map(|(p, c)| format!("{p}: {c}")).collect();
        let more = if r.lost_by_pass.len() > 8 {
            ", … (run.json: losses.by_pass)"
        } else {
            ""
        };
        println!("lost per pass: {}{more}", per.join(", "));
    } else {
        println!("lost: none");
    }
    for (k, s) in r.lsc.iter().enumerate().take(3) {
        println!(
            "LSC kick {k} (last pass): peak current {:.4e} A, r_b {:.3e} m, max |V| {:.4e} V",
            s.peak_current,
            s.radius,
            s.voltage.iter().fold(0.0f64, |m, v| m.max(v.abs()))
        );
    }
    let rate = n as f64 * f64::from(req.passes()) * nmaps as f64 / r.tracking_seconds;
    println!(
        "tracking: {:.3} s ({rate:.3e} particle-elements/s); total {:.2} s",
        r.tracking_seconds,
        start.elapsed().as_secs_f64()
    );
    let mut files = vec!["final.parquet".to_string()];
    if !r.moments.is_empty() {
        files.push("moments.parquet".into());
    }
    files.extend(r.written.iter().cloned());
    if a.output.join("sizes.png").exists() {
        files.push("sizes.png".into());
    }
    if !r.blocks.is_empty() {
        files.push(engine::JOB_BLOCKS.into());
    }
    files.push("run.json".into());
    println!("wrote {} ({})", a.output.display(), files.join(", "));
    a.split.note();
    Ok(())
}
