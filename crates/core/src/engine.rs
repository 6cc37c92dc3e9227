//! The engine API every front end shares (DESIGN.md §2, "one engine, thin skins").
//!
//! Each domain exposes its runs as typed requests (`warpdrive_sky::engine::Autocorr`,
//! `warpdrive_photon::engine::Propagate`, …) whose constructors do all validation and resource
//! estimation, and a `run(&request, &Control)`. The CLI, the Python package and batch
//! integrations only translate their arguments into a request and its result into their
//! outputs. This module holds what every run shares:
//!
//! * [`Control`] — device choice, CPU threads, precise mode, the cancellation token and the
//!   progress counter of one run; [`Control::install`] runs work on a pool of the chosen size.
//! * [`Cancel`] — a token any thread can raise (the CLI's signal thread, Python's Ctrl-C watcher,
//!   a progress callback that returns `False`); loops poll it through
//!   [`crate::progress::Progress::should_stop`] and the run returns [`Error::Cancelled`].
//! * [`Error`] — what a run can fail with, by kind, so that each front end maps it to its own
//!   convention (exit codes, Python exception classes) without parsing messages.
//! * [`ParamError`] — a bad request value, naming the parameter the way the front end spells it
//!   (`--tally-width` on the command line, `tally_width` in Python; [`Style`]).

use crate::cuda::{CudaError, GpuError};
use crate::error::InputError;
use crate::limits::LimitError;
use crate::output::{OutputError, Staged};
use crate::progress::Progress;
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// How a front end spells parameter names in messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// `--tally-width` (the command line).
    Cli,
    /// `tally_width` (Python keyword arguments and the library's own messages).
    Python,
}

impl Style {
    /// `param` (the request's snake_case field name) as this front end writes it.
    pub fn name(self, param: &str) -> String {
        match self {
            Style::Cli => format!("--{}", param.replace('_', "-")),
            Style::Python => param.to_string(),
        }
    }
}

/// A request value out of its allowed range or inconsistent with another one. The text follows
/// the parameter's name: `ParamError::new("events", "must be at least 1")` reads "--events must
/// be at least 1" on the command line and "events must be at least 1" in Python.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError {
    /// The request field (snake_case), as the Python keyword spells it.
    pub param: &'static str,
    /// What is wrong, written to follow the parameter's name.
    pub text: String,
}

impl ParamError {
    pub fn new(param: &'static str, text: impl Into<String>) -> Self {
        Self { param, text: text.into() }
    }

    /// The message with the parameter spelled in `style`.
    pub fn render(&self, style: Style) -> String {
        let text = &self.text;
        // A text that names a second parameter writes it as `{other_param}`.
        let mut out = String::with_capacity(text.len() + 16);
        out.push_str(&style.name(self.param));
        if !text.starts_with(':') && !text.starts_with(',') {
            out.push(' ');
        }
        let mut rest = text.as_str();
        while let Some(open) = rest.find('{') {
            let Some(close) = rest[open..].find('}') else { break };
            out.push_str(&rest[..open]);
            out.push_str(&style.name(&rest[open + 1..open + close]));
            rest = &rest[open + close + 1..];
        }
        out.push_str(rest);
        out
    }
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(Style::Python))
    }
}

impl std::error::Error for ParamError {}

/// The run was stopped by its [`Cancel`] token before it finished; nothing was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cancelled before the run finished; nothing was written")]
pub struct Cancelled;

/// What a run can fail with, by kind (each front end maps kinds to its conventions: the CLI
/// prints the message and exits 1, or 128 + signal when cancelled by one; Python raises
/// `ValueError`, `FileNotFoundError`, `MemoryError`, `KeyboardInterrupt`, `RuntimeError`, …).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request value (an option or keyword argument).
    #[error(transparent)]
    Param(#[from] ParamError),
    /// An input file or array, with the place of the problem.
    #[error(transparent)]
    Input(#[from] InputError),
    /// A size from input that does not fit in memory (refused before allocating).
    #[error(transparent)]
    Limit(#[from] LimitError),
    /// An output that cannot or must not be written.
    #[error(transparent)]
    Output(#[from] OutputError),
    /// The device (driver, NVRTC, a launch).
    #[error(transparent)]
    Device(#[from] GpuError),
    /// Stopped by the cancellation token.
    #[error(transparent)]
    Cancelled(#[from] Cancelled),
    /// Anything else, with a message that says what failed.
    #[error("{0}")]
    Failed(String),
}

impl From<CudaError> for Error {
    fn from(e: CudaError) -> Self {
        Error::Device(GpuError::Cuda(e))
    }
}

impl From<cudarc::driver::DriverError> for Error {
    fn from(e: cudarc::driver::DriverError) -> Self {
        Error::Device(GpuError::Driver(e))
    }
}

impl Error {
    /// The message with parameters spelled in `style` (other kinds read the same everywhere).
    pub fn render(&self, style: Style) -> String {
        match self {
            Error::Param(p) => p.render(style),
            Error::Limit(l) => l.render(style),
            other => other.to_string(),
        }
    }
}

/// Shorthand for a domain's run results.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A cancellation token: cloneable, raised once from any thread.
#[derive(Clone, Debug, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    pub fn new() -> Self {
        Self::default()
    }

    /// Ask the run to stop; its loops see it within one work item.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// Raise the token after `delay`, from a thread of its own (a time limit; the tests of
    /// every engine's cancellation).
    pub fn after(&self, delay: std::time::Duration) -> std::thread::JoinHandle<()> {
        let token = self.clone();
        std::thread::spawn(move || {
            std::thread::sleep(delay);
            token.cancel();
        })
    }

    /// `Err(Cancelled)` once raised.
    pub fn check(&self) -> Result<(), Cancelled> {
        if self.is_cancelled() {
            Err(Cancelled)
        } else {
            Ok(())
        }
    }
}

/// Which device a run uses, as `--device` / `device=` name it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Device {
    /// All GPUs when the driver, a GPU and NVRTC are there, else the CPU (with a note why).
    #[default]
    Auto,
    Cpu,
    /// These GPU ordinals (`cuda` = `cuda:0`).
    Cuda(Vec<usize>),
    /// Every visible GPU.
    CudaAll,
}

impl std::str::FromStr for Device {
    type Err = ParamError;

    fn from_str(s: &str) -> Result<Self, ParamError> {
        match s {
            "auto" => Ok(Device::Auto),
            "cpu" => Ok(Device::Cpu),
            "cuda:all" => Ok(Device::CudaAll),
            d if d.starts_with("cuda") => crate::cuda::parse_devices(d)
                .map(Device::Cuda)
                .map_err(|e| ParamError::new("device", format!("{d}: {e}"))),
            d => Err(ParamError::new(
                "device",
                format!("{d}: expected auto, cpu, cuda, cuda:N or cuda:all"),
            )),
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Auto => f.write_str("auto"),
            Device::Cpu => f.write_str("cpu"),
            Device::CudaAll => f.write_str("cuda:all"),
            Device::Cuda(d) => {
                let d: Vec<String> = d.iter().map(usize::to_string).collect();
                write!(f, "cuda:{}", d.join(","))
            }
        }
    }
}

/// The most CPU worker threads a run may ask for: more only costs memory and start-up time
/// (`--threads 100000` spent 15 s creating threads before failing with EAGAIN).
pub const MAX_THREADS: usize = 1024;

/// A note from the engine to the user (the CLI prints it on stderr; Python issues a warning).
pub type NoteSink = Arc<dyn Fn(&str) + Send + Sync>;

/// How one run is executed: where, on how many threads, and how it is watched and stopped.
#[derive(Clone)]
pub struct Control {
    pub device: Device,
    /// CPU worker threads (`None`: one per core).
    pub threads: Option<usize>,
    /// GPU: IEEE arithmetic so that the GPU follows the CPU item by item.
    pub precise: bool,
    pub cancel: Cancel,
    /// Work done; shares the cancellation flag (its `should_stop` is the token).
    pub progress: Progress,
    notes: Option<NoteSink>,
}

impl Default for Control {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Control {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Control")
            .field("device", &self.device)
            .field("threads", &self.threads)
            .field("precise", &self.precise)
            .field("cancelled", &self.cancel.is_cancelled())
            .finish()
    }
}

impl Control {
    /// Device `auto`, all cores, fast GPU arithmetic, a fresh token and counter, notes dropped.
    pub fn new() -> Self {
        let cancel = Cancel::new();
        let progress = Progress::with_stop(Arc::clone(&cancel.0));
        Self {
            device: Device::Auto,
            threads: None,
            precise: false,
            cancel,
            progress,
            notes: None,
        }
    }

    /// Use `cancel` as this run's token (the CLI's process-wide token that its signal thread
    /// raises).
    #[must_use]
    pub fn with_cancel(mut self, cancel: Cancel) -> Self {
        self.progress = Progress::with_stop(Arc::clone(&cancel.0));
        self.cancel = cancel;
        self
    }

    #[must_use]
    pub fn device(mut self, device: Device) -> Self {
        self.device = device;
        self
    }

    #[must_use]
    pub fn threads(mut self, threads: Option<usize>) -> Self {
        self.threads = threads;
        self
    }

    #[must_use]
    pub fn precise(mut self, precise: bool) -> Self {
        self.precise = precise;
        self
    }

    /// Where the engine's notes go (device fallback, warnings about the inputs).
    #[must_use]
    pub fn on_note(mut self, sink: NoteSink) -> Self {
        self.notes = Some(sink);
        self
    }

    /// Tell the user something that does not stop the run.
    pub fn note(&self, message: &str) {
        if let Some(n) = &self.notes {
            n(message);
        }
    }

    /// `Err(Cancelled)` once the token is raised: call between phases of a run.
    pub fn check(&self) -> Result<(), Cancelled> {
        self.cancel.check()
    }

    /// The GPU ordinals of the device choice, `None` for the CPU. `auto` falls back to the CPU
    /// with a note saying why.
    pub fn gpus(&self) -> Result<Option<Vec<usize>>, Error> {
        Ok(match &self.device {
            Device::Cpu => None,
            Device::Cuda(d) => Some(d.clone()),
            Device::CudaAll => Some((0..crate::cuda::device_count()?).collect()),
            Device::Auto => match crate::cuda::usable_devices() {
                Ok(n) => Some((0..n).collect()),
                Err(why) => {
                    self.note(&format!("device: cpu ({why})"));
                    None
                }
            },
        })
    }

    /// Check the thread count of this control (at least 1, at most [`MAX_THREADS`]).
    pub fn check_threads(&self) -> Result<(), ParamError> {
        match self.threads {
            Some(0) => Err(ParamError::new("threads", "must be at least 1")),
            Some(n) if n > MAX_THREADS => Err(ParamError::new(
                "threads",
                format!(
                    "{n}: at most {MAX_THREADS} (this machine has {} cores; omit it to use them all)",
                    std::thread::available_parallelism().map_or(1, |n| n.get())
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Run `work` on a rayon pool of [`Control::threads`] workers.
    pub fn install<R: Send>(&self, work: impl FnOnce() -> R + Send) -> Result<R, Error> {
        self.check_threads()?;
        Ok(pool(self.threads)?.install(work))
    }
}

/// The worker pool of `threads` workers (`None`: rayon's default size), built at its first run and
/// kept for the process: its workers sleep between runs. A pool built for every run started fresh
/// workers that the kernel first placed beside the thread that woke them, so a run of tens of
/// milliseconds on two cores often ran on one (the GPU host: two threads took exactly one thread's
/// time in most pairs of `bench spline --against photospline`, while plain threads scaled 1.98×;
/// docs/performance/spline.md); a kept pool's workers stay where the scheduler spread them.
fn pool(threads: Option<usize>) -> Result<Arc<rayon::ThreadPool>, Error> {
    static POOLS: std::sync::OnceLock<std::sync::Mutex<HashMap<Option<usize>, Arc<rayon::ThreadPool>>>> = std::sync::OnceLock::new();
    let mut pools = POOLS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(p) = pools.get(&threads) {
        return Ok(Arc::clone(p));
    }
    let mut b = rayon::ThreadPoolBuilder::new();
    if let Some(n) = threads {
        b = b.num_threads(n);
    }
    let p = Arc::new(
        b.build()
            .map_err(|e| Error::Failed(format!("cannot start {} worker threads: {e}", threads.unwrap_or(0))))?,
    );
    pools.insert(threads, Arc::clone(&p));
    Ok(p)
}

/// Prepare a run's file output before it computes: checked against the inputs and `force`, its
/// temporary created now, so an unusable location fails before any work (the output
/// discipline, [`crate::output`]).
pub fn prepare_file(path: &Path, force: bool, inputs: &[PathBuf]) -> Result<Staged> {
    let inputs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    Ok(Staged::file(path, force, &inputs)?)
}

/// Prepare a run's output directory before it computes (see [`prepare_file`]).
pub fn prepare_dir(path: &Path, force: bool, inputs: &[PathBuf]) -> Result<Staged> {
    let inputs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    Ok(Staged::dir(path, force, &inputs)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn param_names_follow_the_front_end() {
        let e = ParamError::new("tally_width", "5e-324 cm: must be at least 1e-6 cm");
        assert_eq!(e.render(Style::Cli), "--tally-width 5e-324 cm: must be at least 1e-6 cm");
        assert_eq!(e.render(Style::Python), "tally_width 5e-324 cm: must be at least 1e-6 cm");
        let e = ParamError::new("cascade", "cannot be given together with {track}");
        assert_eq!(e.render(Style::Cli), "--cascade cannot be given together with --track");
        assert_eq!(e.to_string(), "cascade cannot be given together with track");
    }

    #[test]
    fn device_names() {
        assert_eq!("cpu".parse::<Device>().unwrap(), Device::Cpu);
        assert_eq!("cuda:3".parse::<Device>().unwrap(), Device::Cuda(vec![3]));
        assert_eq!("cuda:all".parse::<Device>().unwrap(), Device::CudaAll);
        let e = "gpu".parse::<Device>().unwrap_err();
        assert!(e.render(Style::Cli).starts_with("--device gpu: expected auto, cpu, cuda"), "{e}");
        assert!("cuda:x".parse::<Device>().is_err());
    }

    #[test]
    fn cancel_reaches_the_progress_counter() {
        let c = Control::new();
        assert!(!c.progress.should_stop());
        c.cancel.after(std::time::Duration::ZERO).join().unwrap();
        assert!(c.progress.should_stop());
        assert_eq!(c.check(), Err(Cancelled));
    }

    #[test]
    fn thread_counts_are_checked() {
        assert!(Control::new().threads(Some(0)).install(|| ()).is_err());
        let e = Control::new().threads(Some(100_000)).check_threads().unwrap_err();
        assert!(e.render(Style::Cli).starts_with("--threads 100000: at most 1024"), "{e:?}");
        assert_eq!(Control::new().threads(Some(2)).install(rayon::current_num_threads).unwrap(), 2);
    }
}
