//! The `warpdrive` command line: argument parsing and output only; the physics lives in the
//! domain crates.

use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use warpdrive_core::engine::{Cancel, Control, Device, Error as EngineError, ParamError, Style};

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
mod merge;
mod photon;
mod sky;
mod spline;
mod submit;

#[derive(Parser)]
#[command(
    name = "warpdrive",
    version,
    about = "GPU-ready physics Monte Carlo and analysis: photon propagation in ice, EM transport (Klein–Nishina), two-point sky autocorrelation, photospline tables and Millipede unfolding, ELEGANT-style beam tracking"
)]
pub(crate) struct Cli {
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
    Photon(photon::PhotonArgs),
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
    Merge(merge::MergeArgs),
    /// Run a splittable command (`--jobs N`, `-o OUT`) as batch jobs and their merge on Slurm or
    /// HTCondor: `warpdrive submit slurm -- warpdrive sky autocorr … --jobs 100 -o OUT`
    /// (docs/cluster.md, "Batch jobs").
    Submit {
        #[command(subcommand)]
        what: submit::SubmitCommand,
    },
    /// Benchmarks (print a table, write JSON).
    Bench {
        #[command(subcommand)]
        what: bench::BenchCommand,
    },
    /// List GPUs, driver and NVRTC; compile every kernel and print its resources; make the
    /// kernels of a node or an installation ready (docs/cluster.md, "Kernels on a fresh node").
    Doctor {
        /// Only compile the kernels (needs NVRTC, no GPU): what CI runs. With --prebuild, also
        /// write the prebuilt images, each build that is both compiled once.
        #[arg(long)]
        compile_only: bool,
        /// Compile the kernel builds of default runs with NVRTC into DIR (default:
        /// `warpdrive-kernels/` beside this executable, where runs look for them): cubins for
        /// sm_80 and sm_90 and PTX for compute_80 unless --arch says otherwise. No GPU needed.
        #[arg(long, value_name = "DIR", conflicts_with_all = ["check_prebuilt", "prepare"])]
        #[allow(clippy::option_option)]
        prebuild: Option<Option<PathBuf>>,
        /// Check that DIR (default: beside this executable) holds every image --prebuild makes,
        /// made from this binary's kernel sources.
        #[arg(long, value_name = "DIR", conflicts_with_all = ["compile_only", "prepare"])]
        #[allow(clippy::option_option)]
        check_prebuilt: Option<Option<PathBuf>>,
        /// Compile every kernel build runs can ask for (hole ice, multi-PMT modules, spline
        /// shapes, …) that has no prebuilt image into the disk cache, for this node's GPUs (or
        /// --arch).
        #[arg(long, conflicts_with = "compile_only")]
        prepare: bool,
        /// Architectures for --prebuild, --check-prebuilt or --prepare, comma-separated
        /// (sm_XY: cubin, compute_XY: PTX).
        #[arg(long, value_delimiter = ',')]
        arch: Vec<String>,
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
        /// photon runs them as steps of their own); photon-twin measures GPU builds of precise
        /// mode against the CPU's precise twin photon by photon, on a cascade in three models and
        /// the lab-profile flasher with its cable (WARPDRIVE_TWIN_CONFIGS: `;`-separated bench
        /// configs).
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
        Command::Photon(a) => match &a.what {
            Some(photon::PhotonCommand::Tabulate(t)) => photon::tabulate(t, force),
            None => photon::run(&a, force),
        },
        Command::Ppc { args } => photon::ppc(&args),
        Command::Sky {
            what: sky::SkyCommand::Autocorr(a),
        } => sky::autocorr(&a, force),
        Command::Sky {
            what: sky::SkyCommand::Inject(a),
        } => sky::inject(&a, force),
        Command::Spline { what } => spline::run(what, force),
        Command::Beam { what } => beam::run(what, force),
        Command::Merge(a) => merge::merge(&a, force),
        Command::Em(a) => match &a.shower {
            Some(cmd) => em_shower::run_command(cmd, force),
            None => em::em(&a, force),
        },
        Command::Submit { what } => submit::run(&what, force),
        Command::Bench { what } => bench::run(what, force),
        Command::Doctor {
            compile_only,
            prebuild,
            check_prebuilt,
            prepare,
            arch,
        } => match (prebuild, check_prebuilt) {
            (Some(dir), _) if compile_only => doctor::compile_and_prebuild(dir.as_deref(), &arch),
            (Some(dir), _) => doctor::prebuild(dir.as_deref(), &arch),
            (None, Some(dir)) => doctor::check_prebuilt(dir.as_deref(), &arch),
            (None, None) if prepare => doctor::prepare(&arch),
            (None, None) => doctor::run(compile_only),
        },
        Command::GpuCheck { device, json, domain } => doctor::gpu_check(device, &json, &domain, force),
    }
}

impl CommonArgs {
    /// The run's [`Control`]: device, threads and precise mode of these options, the process's
    /// cancellation token, notes printed on stderr.
    pub fn control(&self) -> Result<Control> {
        let device: Device = self.device.parse()?;
        let c = process_control().device(device).threads(self.threads).precise(self.precise);
        c.check_threads()?;
        Ok(c)
    }
}

/// The [`Control`] every command starts from: the process's cancellation token (raised by the
/// signal thread on SIGINT/SIGTERM) and the engine's notes on stderr; [`CommonArgs::control`]
/// adds the device, threads and precise mode.
pub fn process_control() -> Control {
    Control::new()
        .with_cancel(process_cancel().clone())
        .on_note(Arc::new(|m: &str| eprintln!("{m}")))
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
