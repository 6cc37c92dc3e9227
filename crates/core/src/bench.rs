//! What every domain's benchmark shares (`warpdrive bench <domain>`, DESIGN.md §8): the
//! thread-count sweep, the device a benchmark times, timing on a pool of a given size, and the
//! JSON report, written whole into an output staged before the work.
//!
//! A domain's `bench` module holds its benchmark as a library call —
//! `run(&BenchOptions, &Control, lines) -> BenchReport` — with the options checked there
//! ([`crate::engine::ParamError`]); the front end translates its arguments, prints the lines as
//! they come and saves the report.

use crate::engine::{Control, Device, ParamError, Result, MAX_THREADS};
use crate::output::Staged;
use std::time::Instant;

/// Where a benchmark's table lines go as they are measured (the CLI prints them on stdout).
pub type Lines<'a> = &'a mut dyn FnMut(&str);

/// The thread counts a CPU benchmark times: those asked for, each at least 1 and at most
/// [`MAX_THREADS`], or (none asked for) one thread and all cores.
pub fn thread_counts(asked: &[usize]) -> Result<Vec<usize>, ParamError> {
    if asked.contains(&0) {
        return Err(ParamError::new("threads", ": every thread count must be at least 1"));
    }
    if let Some(n) = asked.iter().find(|&&n| n > MAX_THREADS) {
        return Err(ParamError::new("threads", format!("{n}: at most {MAX_THREADS}")));
    }
    if !asked.is_empty() {
        return Ok(asked.to_vec());
    }
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    Ok(if all > 1 { vec![1, all] } else { vec![1] })
}

/// The GPUs a benchmark times, `None` for the CPU: `auto` is the first GPU when the driver, a
/// GPU and NVRTC are there (a benchmark times one device unless asked for more), else the CPU
/// with a note saying why; `cuda:N` that GPU; `cuda:all` every visible GPU.
pub fn gpus(ctl: &Control) -> Result<Option<Vec<usize>>> {
    match ctl.device {
        Device::Auto => Ok(ctl.gpus()?.map(|all| all.into_iter().take(1).collect())),
        _ => ctl.gpus(),
    }
}

/// Run `work` on a pool of `threads` workers (the run's token and notes kept) and time it:
/// (its result, seconds of wall-clock time).
pub fn timed<R: Send>(ctl: &Control, threads: usize, work: impl FnOnce() -> R + Send) -> Result<(R, f64)> {
    ctl.check()?;
    ctl.clone().threads(Some(threads)).install(|| {
        let t0 = Instant::now();
        let r = work();
        (r, t0.elapsed().as_secs_f64())
    })
}

/// Fastest of `repeats` timings of `work` on a pool of `threads`, after one untimed call (the
/// first call pays for page faults of fresh output buffers and cold caches, which on a VM moved a
/// one-thread rate by up to 2x between otherwise identical calls).
pub fn fastest<R: Send>(ctl: &Control, threads: usize, repeats: usize, work: impl Fn() -> R + Send + Sync) -> Result<f64> {
    let (r, _) = timed(ctl, threads, &work)?;
    std::hint::black_box(r);
    let mut best = f64::INFINITY;
    for _ in 0..repeats.max(1) {
        let (r, s) = timed(ctl, threads, &work)?;
        std::hint::black_box(r);
        best = best.min(s);
    }
    Ok(best)
}

/// A benchmark's result: the JSON document, laid out as each domain has always written it
/// (docs/performance/*.md cite its fields).
#[derive(Clone, Debug, PartialEq)]
pub struct BenchReport {
    pub json: String,
}

impl BenchReport {
    /// Write the report into its output, prepared before the work by
    /// [`crate::engine::prepare_file`] (so an unusable location fails before minutes of timing,
    /// and a file that appears at the name meanwhile is not replaced without `force`), and make
    /// it visible.
    pub fn save(&self, out: Staged) -> Result<()> {
        Ok(out.write(self.json.as_bytes())?)
    }
}
