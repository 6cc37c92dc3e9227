//! `warpdrive bench photon|sky|em|spline|beam`: arguments translated into each domain's
//! `bench::BenchOptions`, the rows printed as they are measured, the JSON report written. The
//! benchmarks themselves (thread-count sweeps, device choice, checks) live in the domains'
//! `bench` modules.

use anyhow::Result;
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use warpdrive_core::bench::BenchReport;
use warpdrive_core::engine::{prepare_file, Control};

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Photon propagation on the CPU.
    Photon(BenchPhoton),
    /// Two-point autocorrelation: time per scrambled trial on all IC86-2011 events.
    Sky(BenchSky),
    /// EM Klein–Nishina mini-app on the CPU: track-steps per second.
    Em(BenchEm),
    /// Spline evaluation rates (3-D amplitude, 4-D timing tables) and Millipede response-matrix build time.
    Spline(BenchSpline),
    /// Beam tracking: 20 M particles through 20 quadrupoles and 20 drifts (maps; and with LSCDRIFT).
    Beam(BenchBeam),
}

/// The options every benchmark shares.
#[derive(Args)]
pub struct BenchCommon {
    /// auto (a GPU if CUDA works, else the CPU), cpu, or cuda / cuda:N (cuda:all where the benchmark supports it).
    #[arg(long, default_value = "auto")]
    device: String,
    /// CPU thread counts to time (default: 1 and all cores).
    #[arg(long, value_delimiter = ',')]
    threads: Vec<usize>,
}

impl BenchCommon {
    /// The benchmark's [`Control`]: its device, the process's cancellation token, notes on stderr.
    fn control(&self) -> Result<Control> {
        Ok(crate::process_control().device(self.device.parse()?))
    }
}

#[derive(Args)]
pub struct BenchPhoton {
    /// PPC ice directory (default: $WARPDRIVE_DATA/ice/spice_3.2.1).
    #[arg(long)]
    ice: Option<PathBuf>,
    /// Cascade energy [GeV].
    #[arg(long, default_value_t = 1e5, allow_hyphen_values = true)]
    energy: f64,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// JSON result file.
    #[arg(long, default_value = "bench-photon.json")]
    json: PathBuf,
    /// GPU: the balanced benchmark's f2k input (default: PPC's 20 × 100 TeV cascades,
    /// $WARPDRIVE_DATA/reference/ppc_h100_2026/input_cascades_20x100TeV.f2k).
    #[arg(long)]
    input: Option<PathBuf>,
    /// GPU: number of cascades in the shuffled benchmark.
    #[arg(long, default_value_t = 400)]
    shuffled_sources: usize,
    /// GPU: time these configurations instead of the built-in table. Each is a comma-separated
    /// list of kernel switches (WD_…, see propagate.cu), `default` for the default switches,
    /// `-WD_…` to drop one given before, `block=N` and `per-sm=N` for the launch shape,
    /// `batch=K` for 2^K photons per launch, `twin` for precise mode as `--precise` runs it
    /// (`default,twin`), `precise` for the exact precise build; repeat the option for several
    /// configurations. Measurement only, with `precise`: `keep:WD_…` keeps a
    /// fast-only switch, `nvrtc:fmad`, `nvrtc:ftz`, `nvrtc:fast-div`, `nvrtc:fast-sqrt`,
    /// `nvrtc:fast-math` set one NVRTC option to its fast-mode value, `-nvrtc:NAME` sets it
    /// back (`twin,nvrtc:fmad`: the twin with NVRTC's contraction). With --tabulate: the sampled
    /// tabulation kernel's block,
    /// per-sm (its launch bounds follow), batch and extra switches (added to its defaults).
    #[arg(long = "config")]
    configs: Vec<String>,
    /// GPU: workloads to run (balanced, shuffled).
    #[arg(long, value_delimiter = ',', default_value = "balanced,shuffled")]
    workloads: Vec<String>,
    /// CPU: PPC's CPU binary (`make cpu` in icecube/ppc gpu/): time it and `warpdrive ppc 0`
    /// on one thread each on the same f2k input (--input, default: the 10 TeV reference cascade)
    /// in each ice (--ice, default: spice_3.2.1 and spice_ftp-v3m); user CPU times and their
    /// ratio. Run under `taskset -c N` to put both on one core.
    #[arg(long, value_name = "PATH")]
    against_ppc: Option<PathBuf>,
    /// With --against-ppc: runs per side and model.
    #[arg(long, default_value_t = 1, requires = "against_ppc")]
    runs: usize,
    /// CPU: warpdrive's precise arithmetic instead of its CPU fast mode.
    #[arg(long)]
    precise: bool,
    /// Time `photon tabulate` (a 1 TeV cascade at 2000 m or --depth, its default bins) against the
    /// propagation of the same photons to the modules (fast and precise), photons/s each.
    #[arg(long, conflicts_with = "against_ppc")]
    tabulate: bool,
    /// With --tabulate: the sampled estimator's step: `auto` (the default: each segment's step as
    /// large as the cells it crosses allow in its direction, from 1 m), `auto:MIN` (from MIN
    /// metres), a fixed step [m], or `segment`.
    #[arg(long, requires = "tabulate")]
    sample_step: Option<String>,
    /// With --tabulate: the cascade's depth [m] (2000: in the dust layer, where the photons stay near it).
    #[arg(long, requires = "tabulate", default_value_t = warpdrive_photon::bench::TABULATE_DEPTH, allow_hyphen_values = true)]
    depth: f64,
    #[command(flatten)]
    common: BenchCommon,
}

#[derive(Args)]
pub struct BenchSky {
    /// Event files (default: both IC86-2011 samples, $WARPDRIVE_DATA/events/ic86_2011_ps_release).
    files: Vec<PathBuf>,
    /// Trials to time (GPU: at least two batches are run and the first is not timed).
    #[arg(long, default_value_t = 0)]
    trials: u64,
    /// Also time trials with signal injected (`sky inject`) beside the background trials (default
    /// events: the up-going IC86-2011 sample only, for both).
    #[arg(long)]
    inject: bool,
    /// With --inject: number of sources N.
    #[arg(long, default_value_t = warpdrive_sky::bench::DEFAULT_INJECT.0, requires = "inject")]
    sources: u64,
    /// With --inject: events per source K.
    #[arg(long, default_value_t = warpdrive_sky::bench::DEFAULT_INJECT.1, requires = "inject")]
    events_per_source: u64,
    /// JSON result file.
    #[arg(long, default_value = "bench-sky.json")]
    json: PathBuf,
    #[command(flatten)]
    common: BenchCommon,
}

#[derive(Args)]
pub struct BenchEm {
    /// Problem: kn (the Klein–Nishina mini-app), testem3 (EM showers in Geant4's TestEm3, 1 and 10 GeV e⁻)
    /// or simple-cms (10 GeV e⁻ in examples/em/simple-cms.gdml without a field, in a uniform 3.8 T field and
    /// in a map of it on the CPU; on a GPU without a field, 3/10 of --gpu-events, against one core) or crowd
    /// (navigation alone on one core in generated detectors with 1 000 to 10 000 daughters in one level, with the
    /// per-level trees and with the linear loop; --tracks points per geometry).
    #[arg(long, default_value = "kn")]
    problem: String,
    /// testem3: events per energy on the CPU; simple-cms: events per field set-up.
    #[arg(long, default_value_t = 200)]
    events: u64,
    /// testem3: GPU events at 1 GeV, and 3/10 of them at 10 GeV (simple-cms: 3/10 of them): enough to fill the GPU (a
    /// 1 GeV event's first generations hold one track; 2 000 events run at 2/3 of the rate of
    /// 10 000 on an H100) in one batch at both energies.
    #[arg(long, default_value_t = 10_000)]
    gpu_events: u64,
    /// Tracks (the spec's benchmark: 8 388 608 on a GPU); crowd: points per geometry.
    #[arg(long, default_value_t = 1 << 18)]
    tracks: u64,
    /// JSON result file.
    #[arg(long, default_value = "bench-em.json")]
    json: PathBuf,
    #[command(flatten)]
    common: BenchCommon,
}

#[derive(Args)]
pub struct BenchSpline {
    /// Random points per batch.
    #[arg(long, default_value_t = 10_000_000)]
    points: usize,
    /// Points for the CPU timings (the rate is per point; default 10^6).
    #[arg(long, default_value_t = 1_000_000)]
    cpu_points: usize,
    /// Instead: compare with photospline on the CPU, the same random points of the same tables
    /// (`--cpu-points` each), its Python module run by --python; run under `taskset -c N` to
    /// put both on one core.
    #[arg(long, value_name = "ANCHOR", value_parser = ["photospline"])]
    against: Option<String>,
    /// Adjacent pairs of calls timed per table and quantity with --against (the ratio is their
    /// median; odd, so that it is one pair's).
    #[arg(long, default_value_t = warpdrive_spline::anchor::DEFAULT_PAIRS, requires = "against")]
    pairs: usize,
    /// Python interpreter that imports photospline (with --against).
    #[arg(long, default_value = "python3", requires = "against")]
    python: PathBuf,
    /// Instead: time the GLAM fitter (CPU per --threads, and the GPU) on a synthetic histogram of
    /// --fit-bins bins and --fit-coefs coefficients per axis over --fit-dims axes.
    #[arg(long, conflicts_with = "against")]
    fit: bool,
    /// Axes of the --fit problem.
    #[arg(long, default_value_t = 4, requires = "fit")]
    fit_dims: usize,
    /// Bins per axis of the --fit problem.
    #[arg(long, default_value_t = 32, requires = "fit")]
    fit_bins: usize,
    /// Coefficients per axis of the --fit problem (degree 2).
    #[arg(long, default_value_t = 10, requires = "fit")]
    fit_coefs: usize,
    /// Skip the CPU timings of --fit above this many coefficients (0: never skip).
    #[arg(long, default_value_t = 0, requires = "fit")]
    fit_cpu_max_coefs: usize,
    /// JSON result file.
    #[arg(long, default_value = "bench-spline.json")]
    json: PathBuf,
    #[command(flatten)]
    common: BenchCommon,
}

#[derive(Args)]
pub struct BenchBeam {
    /// Particles for the GPU timings.
    #[arg(long, default_value_t = 20_000_000)]
    particles: usize,
    /// Particles for the CPU timings.
    #[arg(long, default_value_t = 1_000_000)]
    cpu_particles: usize,
    /// Passes of the map-only benchmark (in one launch on the GPU).
    #[arg(long, value_delimiter = ',', default_value = "1,20")]
    passes: Vec<u32>,
    /// Also write the benchmark lattices here (bench-maps.lte, bench-lsc.lte: to feed other
    /// codes the same line; existing files need --force).
    #[arg(long)]
    write_lattice: Option<PathBuf>,
    /// JSON result file.
    #[arg(long, default_value = "bench-beam.json")]
    json: PathBuf,
    #[command(flatten)]
    common: BenchCommon,
}

/// Print a benchmark's rows on stdout as they are measured.
fn print(line: &str) {
    println!("{line}");
}

/// Save the report into its prepared output and say where it went.
fn save(report: &BenchReport, out: warpdrive_core::output::Staged, json: &Path) -> Result<()> {
    report.save(out)?;
    println!("JSON: {}", json.display());
    Ok(())
}

pub fn run(cmd: BenchCommand, force: bool) -> Result<()> {
    match cmd {
        BenchCommand::Photon(b) => photon(&b, force),
        BenchCommand::Sky(b) => sky(&b, force),
        BenchCommand::Em(b) => em(&b, force),
        BenchCommand::Spline(b) => spline(&b, force),
        BenchCommand::Beam(b) => beam(&b, force),
    }
}

fn photon(b: &BenchPhoton, force: bool) -> Result<()> {
    use warpdrive_photon::bench::{Bench, BenchOptions};
    let ctl = b.common.control()?.precise(b.precise);
    if let Some(ppc) = &b.against_ppc {
        let opts = warpdrive_photon::anchor::AnchorOptions {
            ppc: ppc.clone(),
            ice: b.ice.iter().cloned().collect(),
            input: b.input.clone(),
            runs: b.runs,
            precise: b.precise,
        };
        let inputs: Vec<PathBuf> = opts.ice.iter().chain(&opts.input).chain([ppc]).cloned().collect();
        let out = prepare_file(&b.json, force, &inputs)?;
        let report = warpdrive_photon::anchor::run(&opts, &ctl, &mut print)?;
        return save(&report, out, &b.json);
    }
    let opts = BenchOptions {
        ice: b.ice.clone(),
        energy: b.energy,
        threads: b.common.threads.clone(),
        seed: b.seed,
        input: b.input.clone(),
        shuffled_sources: b.shuffled_sources,
        configs: b.configs.clone(),
        workloads: b.workloads.clone(),
        tabulate: b.tabulate,
        sampled: warpdrive_photon::tabulate::Estimator::parse(None, b.sample_step.as_deref())?,
        tabulate_depth: b.depth,
    };
    let out = prepare_file(&b.json, force, &opts.inputs())?;
    let report = Bench::new(&opts)?.run(&ctl, &mut print)?;
    save(&report, out, &b.json)
}

fn sky(b: &BenchSky, force: bool) -> Result<()> {
    use warpdrive_sky::bench::{run, BenchOptions};
    let ctl = b.common.control()?;
    let opts = BenchOptions {
        files: b.files.clone(),
        trials: b.trials,
        threads: b.common.threads.clone(),
        inject: b.inject.then_some((b.sources, b.events_per_source)),
    };
    let out = prepare_file(&b.json, force, &opts.inputs())?;
    let report = run(&opts, &ctl, &mut print)?;
    save(&report, out, &b.json)
}

fn em(b: &BenchEm, force: bool) -> Result<()> {
    use warpdrive_em::bench::{run, BenchOptions};
    let ctl = b.common.control()?;
    let opts = BenchOptions {
        problem: b.problem.parse()?,
        events: b.events,
        gpu_events: b.gpu_events,
        tracks: b.tracks,
        threads: b.common.threads.clone(),
    };
    let out = prepare_file(&b.json, force, &[])?;
    let report = run(&opts, &ctl, &mut print)?;
    save(&report, out, &b.json)
}

fn spline(b: &BenchSpline, force: bool) -> Result<()> {
    use warpdrive_spline::bench::{run, BenchOptions};
    let ctl = b.common.control()?;
    if b.against.is_some() {
        let opts = warpdrive_spline::anchor::AnchorOptions {
            python: b.python.clone(),
            points: b.cpu_points,
            pairs: b.pairs,
            threads: b.common.threads.clone(),
            command: crate::command_line(),
        };
        let out = prepare_file(&b.json, force, &[])?;
        let report = warpdrive_spline::anchor::run(&opts, &ctl, &mut print)?;
        return save(&report, out, &b.json);
    }
    if b.fit {
        let opts = warpdrive_spline::bench::FitBenchOptions {
            dims: b.fit_dims,
            bins: b.fit_bins,
            coefs: b.fit_coefs,
            threads: b.common.threads.clone(),
            cpu_max_coefs: b.fit_cpu_max_coefs,
            command: crate::command_line(),
            ..Default::default()
        };
        let out = prepare_file(&b.json, force, &[])?;
        let report = warpdrive_spline::bench::fit(&opts, &ctl, &mut print)?;
        return save(&report, out, &b.json);
    }
    let opts = BenchOptions {
        points: b.points,
        cpu_points: b.cpu_points,
        threads: b.common.threads.clone(),
        command: crate::command_line(),
    };
    let out = prepare_file(&b.json, force, &[])?;
    let report = run(&opts, &ctl, &mut print)?;
    save(&report, out, &b.json)
}

fn beam(b: &BenchBeam, force: bool) -> Result<()> {
    use warpdrive_beam::bench::{run, BenchOptions, Lattices};
    let ctl = b.common.control()?;
    let opts = BenchOptions {
        particles: b.particles,
        cpu_particles: b.cpu_particles,
        passes: b.passes.clone(),
        threads: b.common.threads.clone(),
    };
    let out = prepare_file(&b.json, force, &[])?;
    let lattices = b.write_lattice.as_deref().map(|d| Lattices::prepare(d, force)).transpose()?;
    let report = run(&opts, &ctl, &mut print)?;
    if let Some(l) = lattices {
        l.save()?;
    }
    save(&report, out, &b.json)
}
