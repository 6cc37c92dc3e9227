//! The `warpdrive` command line: argument parsing and output only; the physics lives in the
//! domain crates.

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Instant;
use warpdrive_core::engine::{Cancel, Control, Device, Error as EngineError, ParamError, Style};
use warpdrive_core::output::Outputs;
use warpdrive_core::progress::Progress;
use warpdrive_photon::detector::{Detector, DetectorOptions};
use warpdrive_photon::source::{track_to_spec, SourceSpec};
use warpdrive_photon::Backend;

/// `println!` for this crate: a line on stdout that is dropped when stdout cannot take it (a
/// reader that went away, `warpdrive … | head -1`). std's macro panics there, which would end
/// the run before its outputs are committed; these lines only describe the results, so the run
/// goes on. Defined before the modules, so every `println!` of this crate is this one.
macro_rules! println {
    ($($arg:tt)*) => {
        $crate::say(&mut ::std::io::stdout(), format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprintln!` for this crate: as its `println!`, on stderr.
macro_rules! eprintln {
    ($($arg:tt)*) => {
        $crate::say(&mut ::std::io::stderr(), format_args!("{}\n", format_args!($($arg)*)))
    };
}

mod beam;
mod bench;
mod doctor;
mod em;
mod em_shower;
mod sky;
mod spline;

#[derive(Parser)]
#[command(
    name = "warpdrive",
    version,
    about = "GPU-ready physics Monte Carlo and analysis: photon propagation in ice, EM transport (Klein–Nishina), two-point sky autocorrelation, photospline tables and Millipede unfolding, ELEGANT-style beam tracking"
)]
struct Cli {
    /// Replace outputs that already exist (a replaced output directory is swapped as a whole).
    /// Without it, a command refuses to write over an existing file or directory.
    #[arg(long, global = true)]
    force: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Propagate optical photons through ice to optical modules (PPC physics).
    Photon(PhotonArgs),
    /// PPC-compatible mode: `warpdrive ppc [args]` takes PPC's arguments, environment and stdin.
    Ppc {
        /// PPC's arguments: none (list tables and devices); `- [X Y]` (print the ice table at x, y);
        /// `=` (read 'x y z' on stdin, print the tilt z-shift); `GPU` (f2k events on stdin, HIT lines
        /// on stdout); `STR OM NUM GPU` (flasher, NUM may be x*y). Environment as PPC's:
        /// PPCTABLESDIR, OVSZ, WFLA, FWID, FLDR, … (docs/photon.md).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// EM transport: the Klein–Nishina mini-app (photons in a material, Compton scattering);
    /// `em testem3` / `em calorimeter FILE`: EM showers in a layered calorimeter.
    Em(em::EmArgs),
    /// Sky analyses of neutrino event lists.
    Sky {
        #[command(subcommand)]
        what: sky::SkyCommand,
    },
    /// Photospline tables (info, eval) and Millipede energy unfolding (simulate, unfold).
    Spline {
        #[command(subcommand)]
        what: spline::SplineCommand,
    },
    /// Beam tracking through ELEGANT .lte lattices (second-order maps, longitudinal space charge).
    Beam {
        #[command(subcommand)]
        what: beam::BeamCommand,
    },
    /// Combine the outputs of batch jobs (`--jobs N --job-index I`) into the result of one run.
    Merge(sky::MergeArgs),
    /// Benchmarks (print a table, write JSON).
    Bench {
        #[command(subcommand)]
        what: bench::BenchCommand,
    },
    /// List GPUs, driver and NVRTC; compile every kernel and print its resources.
    Doctor {
        /// Only compile the kernels (needs NVRTC, no GPU): what CI runs.
        #[arg(long)]
        compile_only: bool,
    },
    /// Validate the CUDA back end against the CPU path and PPC (run on a GPU machine).
    GpuCheck {
        /// GPU ordinal.
        #[arg(long, default_value_t = 0)]
        device: usize,
        /// JSON report.
        #[arg(long, default_value = "gpu-check.json")]
        json: PathBuf,
        /// Which domain's checks: all, photon, sky, em, spline or beam; photon-hole and
        /// photon-flasher run only the hole-ice or flasher precise comparisons (scripts/gpu-check
        /// photon runs them as steps of their own).
        #[arg(long, default_value = "all")]
        domain: String,
    },
}

#[derive(Args, Clone)]
pub struct CommonArgs {
    /// Compute device: auto (all GPUs if CUDA works, else CPU), cpu, cuda, cuda:N, cuda:all.
    #[arg(long, default_value = "auto")]
    device: String,
    /// Worker threads of the CPU path (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// GPU: IEEE arithmetic, no fast-math intrinsics, so the GPU follows the CPU path item by item
    /// (photon, track, trial, particle or spline point; see the domain's guide for what is
    /// bit-identical); slower.
    #[arg(long)]
    precise: bool,
}

#[derive(Args)]
struct PhotonArgs {
    /// PPC ice directory (cfg.txt, icemodel.dat, icemodel.par, wv.dat, as.dat, ...). Default: built-in homogeneous ice.
    #[arg(long)]
    ice: Option<PathBuf>,
    /// Geometry file (PPC geo-f2k or Prometheus .geo). Default: <ice>/geo-f2k, else a generated 86-string detector.
    #[arg(long)]
    geometry: Option<PathBuf>,
    /// Multi-PMT module files (om.conf, om.dirs, om.map, om.wv_*; PPC's NEXTGENDIR). Default: the ice directory.
    #[arg(long)]
    sensors: Option<PathBuf>,
    /// f2k input with TR lines. Default: one 100 TeV EM cascade at the detector centre.
    #[arg(long, conflicts_with = "steps")]
    input: Option<PathBuf>,
    /// Step file: `x y z t theta phi length beta photons` per line.
    #[arg(long)]
    steps: Option<PathBuf>,
    /// Energy of the default cascade [GeV].
    #[arg(long, default_value_t = 1e5, allow_hyphen_values = true)]
    energy: f64,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Refuse to run if more than this many photons would be propagated.
    #[arg(long)]
    max_photons: Option<u64>,
    /// DOM oversize factor (overrides cfg.txt).
    #[arg(long)]
    oversize: Option<u32>,
    /// Output Parquet file.
    #[arg(long, short, default_value = "photon-hits.parquet")]
    output: PathBuf,
    /// Also write PPC `HIT` lines to this file.
    #[arg(long)]
    hit_lines: Option<PathBuf>,
    #[command(flatten)]
    common: CommonArgs,
}

/// The process's cancellation token: the signal thread raises it on SIGINT/SIGTERM, and every
/// run's [`Control`] shares it.
fn process_cancel() -> &'static Cancel {
    static TOKEN: OnceLock<Cancel> = OnceLock::new();
    TOKEN.get_or_init(Cancel::new)
}

fn main() {
    warpdrive_core::output::install_signal_cleanup(process_cancel().clone());
    let cli = Cli::parse();
    let result = run(cli);
    // A run that ends after SIGINT/SIGTERM — stopped by it, or finished while it came (during
    // the final commit) — ends as the signal thread would: temporaries removed, a line saying
    // what was written completely, exit 128 + signal.
    if let Some(sig) = warpdrive_core::output::signal() {
        warpdrive_core::output::exit_interrupted(sig);
    }
    let code = match result {
        Ok(()) => 0,
        // The reader of what this command streams to stdout went away: stop quietly, with the
        // status a Unix tool killed by SIGPIPE has (128 + 13).
        Err(e) if closed_pipe(&e) => 128 + 13,
        Err(e) => {
            eprintln!("error: {}", message(&e));
            1
        }
    };
    std::process::exit(code);
}

/// Write a line of this crate's `println!`/`eprintln!`, dropping it if the stream is closed.
fn say(out: &mut impl std::io::Write, line: std::fmt::Arguments) {
    let _ = out.write_fmt(line);
}

/// Whether an error comes from writing to a pipe whose reader has gone (PPC's front end wraps
/// its I/O errors transparently, so they are not a link of the chain of their own).
fn closed_pipe(e: &anyhow::Error) -> bool {
    use warpdrive_photon::ppc::PpcError;
    e.chain()
        .filter_map(|c| match c.downcast_ref::<PpcError>() {
            Some(PpcError::Io(io)) => Some(io),
            _ => c.downcast_ref::<std::io::Error>(),
        })
        .any(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}

/// An error's message as the command line shows it: the context chain, with the engine's
/// parameter names spelled as options (`--tally-width`, not `tally_width`).
fn message(e: &anyhow::Error) -> String {
    let mut parts = Vec::new();
    for cause in e.chain() {
        if let Some(p) = cause.downcast_ref::<ParamError>() {
            parts.push(p.render(Style::Cli));
            break;
        }
        if let Some(x) = cause.downcast_ref::<EngineError>() {
            parts.push(x.render(Style::Cli));
            break;
        }
        parts.push(cause.to_string());
    }
    parts.join(": ")
}

fn run(cli: Cli) -> Result<()> {
    let force = cli.force;
    match cli.command {
        Command::Photon(a) => {
            let pool = thread_pool(&a.common)?;
            pool.install(|| photon(&a, force))
        }
        Command::Ppc { args } => {
            let env = warpdrive_photon::ppc::PpcEnv::from_env(|k| std::env::var(k).ok())?;
            let stdin = std::io::stdin();
            let mut stdin = stdin.lock();
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            warpdrive_photon::ppc::run(&args, &env, &mut stdin, &mut out, &mut std::io::stderr())?;
            Ok(())
        }
        Command::Sky {
            what: sky::SkyCommand::Autocorr(a),
        } => sky::autocorr(&a, force),
        Command::Spline { what } => spline::run(what, force),
        Command::Beam { what } => beam::run(what, force),
        Command::Merge(a) => sky::merge(&a, force),
        Command::Em(a) => match &a.shower {
            Some(cmd) => em_shower::run_command(cmd, force),
            None => em::em(&a, force),
        },
        Command::Bench { what } => bench::run(what, force),
        Command::Doctor { compile_only } => doctor::run(compile_only),
        Command::GpuCheck { device, json, domain } => doctor::gpu_check(device, &json, &domain, force),
    }
}

/// Resolve `--device` to GPU ordinals (`None` = the CPU): `auto` takes all GPUs when the driver,
/// a GPU and NVRTC are there, else the CPU with one line on stderr saying why.
pub fn devices(c: &CommonArgs) -> Result<Option<Vec<usize>>> {
    Ok(warpdrive_core::device::resolve(&c.device, |why| eprintln!("device: cpu ({why})"))?)
}

/// The photon back end of `--device`.
pub fn backend(c: &CommonArgs) -> Result<Backend> {
    Ok(match devices(c)? {
        None => Backend::Cpu,
        Some(devices) => Backend::Cuda(warpdrive_photon::gpu::GpuOptions {
            devices,
            precise: c.precise,
            ..Default::default()
        }),
    })
}

impl CommonArgs {
    /// `--device` as given.
    pub fn device_name(&self) -> &str {
        &self.device
    }

    /// The run's [`Control`]: device, threads and precise mode of these options, the process's
    /// cancellation token, notes printed on stderr.
    pub fn control(&self) -> Result<Control> {
        let device: Device = self.device.parse()?;
        let c = Control::new()
            .with_cancel(process_cancel().clone())
            .device(device)
            .threads(self.threads)
            .precise(self.precise)
            .on_note(Arc::new(|m: &str| eprintln!("{m}")));
        c.check_threads()?;
        Ok(c)
    }
}

/// A progress counter with a terminal bar (for commands not yet on the engine API).
pub fn progress_bar(label: &str, total: u64, unit: &str) -> (Progress, warpdrive_core::progress::Bar) {
    let p = Progress::hidden();
    p.begin(label, total, unit);
    let bar = warpdrive_core::progress::Bar::show(&p);
    (p, bar)
}

/// Build the rayon pool for the CPU path.
pub fn thread_pool(c: &CommonArgs) -> Result<rayon::ThreadPool> {
    let mut b = rayon::ThreadPoolBuilder::new();
    if let Some(n) = c.threads {
        if n == 0 {
            bail!("--threads must be at least 1");
        }
        b = b.num_threads(n);
    }
    Ok(b.build()?)
}

/// The command line for run metadata, without `--threads` (which must not change the output).
/// Arguments are taken as the operating system gives them (bytes on Unix): one that is not
/// UTF-8 (a file name) is written with U+FFFD in place of the bytes it cannot show.
pub fn command_line() -> String {
    let mut out = Vec::new();
    let mut skip = false;
    for a in std::env::args_os() {
        let a = a.to_string_lossy();
        if std::mem::take(&mut skip) {
            continue;
        }
        if a == "--threads" {
            skip = true;
        } else if !a.starts_with("--threads=") {
            out.push(a.into_owned());
        }
    }
    out.join(" ")
}

/// The default source: one EM cascade of `energy` GeV at the detector centre, moving up.
pub fn default_cascade(det: &Detector, energy: f64) -> Result<Vec<SourceSpec>> {
    let line = format!("TR 1 0 e 0 0 0 180 0 0 {energy} 0");
    let t: Vec<&str> = line.split_whitespace().collect();
    Ok(vec![track_to_spec(Path::new("<default cascade>"), 1, 0, &t, &det.yield_)?])
}

/// The output discipline of `warpdrive_core::output` for one command: refuse outputs that are,
/// or lie inside, an input (or contain one), and existing outputs without `--force`, before any
/// work is done. Stage each output with `file`/`dir`, write there, then `commit`.
pub fn outputs(force: bool, inputs: &[Option<&Path>], outputs: &[Option<&Path>]) -> Result<Outputs> {
    let ins: Vec<&Path> = inputs.iter().flatten().copied().collect();
    let outs: Vec<&Path> = outputs.iter().flatten().copied().collect();
    let o = Outputs::new(force);
    o.check(&ins, &outs)?;
    Ok(o)
}

fn photon(a: &PhotonArgs, force: bool) -> Result<()> {
    let start = Instant::now();
    let mut outs = outputs(
        force,
        &[
            a.ice.as_deref(),
            a.geometry.as_deref(),
            a.input.as_deref(),
            a.steps.as_deref(),
            a.sensors.as_deref(),
        ],
        &[Some(a.output.as_path()), a.hit_lines.as_deref()],
    )?;
    let det = Detector::build(&DetectorOptions {
        ice_dir: a.ice.clone(),
        geometry: a.geometry.clone(),
        oversize: a.oversize,
        sensors: a.sensors.clone(),
        ..Default::default()
    })?;
    for d in &det.description {
        eprintln!("{d}");
    }
    for u in &det.unsupported {
        eprintln!("warning: {u}");
    }
    let mut f2k_events = None;
    let (specs, input) = if let Some(p) = &a.input {
        let text = warpdrive_core::error::read_text(p)?;
        let f = warpdrive_photon::f2k::parse_f2k(p, &text, &det.yield_)?;
        f2k_events = Some(f.event_numbers.iter().map(i32::to_string).collect::<Vec<_>>().join(","));
        (f.specs, p.display().to_string())
    } else if let Some(p) = &a.steps {
        let text = warpdrive_core::error::read_text(p)?;
        (warpdrive_photon::f2k::parse_steps(p, &text)?, p.display().to_string())
    } else {
        (
            default_cascade(&det, a.energy)?,
            format!("default: {} GeV EM cascade at (0,0,0)", a.energy),
        )
    };
    let expected = warpdrive_photon::source::check_total(&specs).map_err(anyhow::Error::msg)?;
    if let Some(max) = a.max_photons {
        if expected > max as f64 {
            bail!("the sources need about {expected:.3e} photons, more than --max-photons {max}");
        }
    }
    let backend = backend(&a.common)?;
    let (progress, _bar) = crate::progress_bar("propagating", expected.round() as u64, "photons");
    let t0 = Instant::now();
    let (sim, gpu_stats) = warpdrive_photon::simulate_on(&det, &specs, a.seed, &backend, &progress)?;
    drop(progress);
    let device = match (&backend, &gpu_stats) {
        (Backend::Cuda(o), Some(s)) => format!("{}{}", s.devices.join(", "), if o.precise { " (precise)" } else { "" }),
        _ => "cpu".to_string(),
    };
    let secs = t0.elapsed().as_secs_f64();
    if sim.photons == 0 {
        bail!("the sources produced zero photons");
    }
    let meta = vec![
        ("warpdrive.version".to_string(), env!("CARGO_PKG_VERSION").to_string()),
        ("warpdrive.command".to_string(), command_line()),
        ("warpdrive.seed".to_string(), a.seed.to_string()),
        ("warpdrive.device".to_string(), device.clone()),
        ("warpdrive.ice".to_string(), det.ice.clone()),
        ("warpdrive.geometry".to_string(), det.geometry.source.clone()),
        ("warpdrive.input".to_string(), input),
        ("warpdrive.photons".to_string(), sim.photons.to_string()),
    ];
    let mut meta = meta;
    if let Some(ev) = f2k_events {
        // The `event` column is the block ordinal; these are the blocks' `EM` numbers in order.
        meta.push(("warpdrive.f2k_events".to_string(), ev));
    }
    let tmp = outs.file(&a.output)?;
    warpdrive_photon::hits::write_parquet(&sim.hits, &tmp, &meta).with_context(|| format!("writing {}", a.output.display()))?;
    if let Some(p) = &a.hit_lines {
        let tmp = outs.file(p)?;
        let mut text = String::with_capacity(sim.hits.len() * 96);
        for h in &sim.hits {
            warpdrive_photon::hits::push_hit_line_for(&mut text, h, det.sensors.is_some());
            text.push('\n');
        }
        std::fs::write(&tmp, text.as_bytes()).with_context(|| format!("writing {}", p.display()))?;
    }
    outs.commit()?;
    println!("sources:        {}", sim.sources.len());
    println!("photons:        {}", sim.photons);
    println!("hits:           {} (before acceptance: {})", sim.hits.len(), sim.raw_hits);
    match &gpu_stats {
        Some(g) => println!(
            "propagation:    {secs:.2} s ({:.3} s in kernels, {:.3} ns/photon) on {device}",
            g.kernel_seconds,
            1e9 * g.kernel_seconds / sim.photons as f64
        ),
        None => println!(
            "propagation:    {secs:.2} s, {:.0} ns/photon, {:.3e} photons/s on {} threads",
            1e9 * secs / sim.photons as f64,
            sim.photons as f64 / secs,
            rayon::current_num_threads()
        ),
    }
    println!("output:         {}", a.output.display());
    if let Some(p) = &a.hit_lines {
        println!("HIT lines:      {}", p.display());
    }
    println!("total time:     {:.2} s", start.elapsed().as_secs_f64());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::{CommandFactory, Parser};

    /// The CLI convention (ARCHITECTURE.md): every argument of every command has help text.
    #[test]
    fn every_argument_has_help() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for a in cmd.get_arguments() {
                let id = a.get_id().as_str();
                if id == "help" || id == "version" {
                    continue;
                }
                if a.get_help().is_none() && a.get_long_help().is_none() {
                    missing.push(format!("{path} {id}"));
                }
            }
            for s in cmd.get_subcommands() {
                walk(s, &format!("{path} {}", s.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&Cli::command(), "warpdrive", &mut missing);
        assert!(missing.is_empty(), "arguments without help text:\n{}", missing.join("\n"));
    }

    /// Numeric options take `-nan`, `-inf` and negative numbers as their values, so the range
    /// checks report them (issue #36: `--energy -nan` was "unexpected argument '-n'").
    #[test]
    fn numeric_options_take_values_that_start_with_a_minus() {
        use std::any::TypeId;
        fn walk(cmd: &clap::Command, path: Vec<String>, bad: &mut Vec<String>) {
            let numeric = [TypeId::of::<f64>(), TypeId::of::<f32>(), TypeId::of::<i64>(), TypeId::of::<i32>()];
            for a in cmd.get_arguments() {
                let Some(long) = a.get_long() else { continue };
                let t = a.get_value_parser().type_id();
                if !numeric.iter().any(|id| t == *id) {
                    continue;
                }
                for v in ["-nan", "-inf", "-1"] {
                    let mut args = path.clone();
                    args.extend([format!("--{long}"), v.to_string()]);
                    if let Err(e) = Cli::try_parse_from(&args) {
                        if e.kind() == clap::error::ErrorKind::UnknownArgument {
                            bad.push(args.join(" "));
                        }
                    }
                }
            }
            for s in cmd.get_subcommands() {
                let mut p = path.clone();
                p.push(s.get_name().to_string());
                walk(s, p, bad);
            }
        }
        let mut bad = Vec::new();
        walk(&Cli::command(), vec!["warpdrive".into()], &mut bad);
        assert!(bad.is_empty(), "values refused as unknown arguments:\n{}", bad.join("\n"));
    }

    #[test]
    fn command_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
