//! Progress of a run, and the request to stop it.
//!
//! [`Progress`] is a cheap, cloneable handle shared by the engine's loops and the front end that
//! watches them: workers call [`Progress::add`] from any thread and poll
//! [`Progress::should_stop`] between work items (a batch, a trial, an event, a pass); the front
//! end reads [`Progress::done`]/[`Progress::total`] and asks for a stop with
//! [`crate::engine::Cancel::cancel`]. The handle holds the run's cancellation flag, so every loop
//! that already reports progress can also stop early without another argument.
//!
//! [`Bar`] draws a one-line bar on stderr while it lives, when stderr is a terminal and
//! `WARPDRIVE_PROGRESS` is not `0` (batch jobs keep clean logs); the CLI shows one per run, the
//! Python package turns the same counter into its callback or a tqdm bar.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[derive(Default)]
struct State {
    done: AtomicU64,
    total: AtomicU64,
    /// (label, unit) of the current phase.
    phase: Mutex<(String, String)>,
}

/// The progress counter of one run (see the module documentation).
#[derive(Clone)]
pub struct Progress {
    state: Arc<State>,
    stop: Arc<AtomicBool>,
}

impl Default for Progress {
    fn default() -> Self {
        Self::hidden()
    }
}

impl Progress {
    /// A counter with its own stop flag that nobody raises (tests, benchmarks, library calls
    /// that need no control).
    pub fn hidden() -> Self {
        Self::with_stop(Arc::new(AtomicBool::new(false)))
    }

    /// A counter whose [`should_stop`](Self::should_stop) reads `stop`.
    pub(crate) fn with_stop(stop: Arc<AtomicBool>) -> Self {
        Self {
            state: Arc::new(State::default()),
            stop,
        }
    }

    /// Start a phase of `total` units of `unit` (the count restarts at 0): `begin("trials",
    /// 1000, "trials")`.
    pub fn begin(&self, label: &str, total: u64, unit: &str) {
        *self.state.phase.lock().unwrap_or_else(|e| e.into_inner()) = (label.to_string(), unit.to_string());
        self.state.total.store(total, Ordering::Relaxed);
        self.state.done.store(0, Ordering::Relaxed);
    }

    /// Record `n` more units done.
    pub fn add(&self, n: u64) {
        self.state.done.fetch_add(n, Ordering::Relaxed);
    }

    /// Units done in the current phase.
    pub fn done(&self) -> u64 {
        self.state.done.load(Ordering::Relaxed)
    }

    /// Units expected in the current phase (may be an estimate, e.g. a mean photon count).
    pub fn total(&self) -> u64 {
        self.state.total.load(Ordering::Relaxed)
    }

    /// (label, unit) of the current phase.
    pub fn phase(&self) -> (String, String) {
        self.state.phase.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// True once the run was asked to stop (Ctrl-C, a signal, a callback that said so): loops
    /// return early, and the engine turns that into [`crate::engine::Error::Cancelled`], so a
    /// partial result never reaches an output.
    pub fn should_stop(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// A terminal progress bar over a [`Progress`], drawn at most five times a second while it
/// lives (nothing when stderr is not a terminal or `WARPDRIVE_PROGRESS=0`).
pub struct Bar {
    stop: Arc<AtomicBool>,
    render: Option<JoinHandle<()>>,
}

impl Bar {
    /// Draw `progress` until the bar is dropped.
    pub fn show(progress: &Progress) -> Self {
        let visible = std::io::stderr().is_terminal() && std::env::var("WARPDRIVE_PROGRESS").map_or(true, |v| v != "0");
        let stop = Arc::new(AtomicBool::new(false));
        let render = visible.then(|| {
            let (p, stop) = (progress.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut start = Instant::now();
                let mut shown = String::new();
                while !stop.load(Ordering::Relaxed) {
                    let (label, unit) = p.phase();
                    if label != shown {
                        end_line(&mut std::io::stderr().lock());
                        start = Instant::now();
                        shown = label.clone();
                    }
                    if !label.is_empty() {
                        draw(&label, &unit, p.done(), p.total(), start);
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
                let (label, unit) = p.phase();
                if !label.is_empty() {
                    draw(&label, &unit, p.done(), p.total(), start);
                }
                end_line(&mut std::io::stderr().lock());
            })
        });
        Self { stop, render }
    }
}

/// A bar line is on stderr without its newline.
static LINE_OPEN: AtomicBool = AtomicBool::new(false);
/// The process is ending ([`end_bars`]): bars draw nothing more.
static ENDED: AtomicBool = AtomicBool::new(false);

/// End an open bar line with its newline (under the stderr lock the caller holds).
fn end_line(err: &mut impl Write) {
    if LINE_OPEN.swap(false, Ordering::SeqCst) {
        let _ = err.write_all(b"\n");
        let _ = err.flush();
    }
}

/// Before the process's last line on stderr (`interrupted (SIGINT): …`, written under the same
/// lock): end an open bar line, so the message starts a line of its own, and stop every bar,
/// so no bar is drawn after the message (where the next output would run onto it).
pub fn end_bars(err: &mut impl Write) {
    ENDED.store(true, Ordering::SeqCst);
    end_line(err);
}

fn draw(label: &str, unit: &str, done: u64, total: u64, start: Instant) {
    let mut err = std::io::stderr().lock();
    draw_to(&mut err, &bar_text(label, unit, done, total, start));
}

/// Write one frame of a bar (`\r` and the bar, no newline) unless bars have ended.
fn draw_to(err: &mut impl Write, text: &str) {
    if ENDED.load(Ordering::SeqCst) {
        return;
    }
    let _ = write!(err, "\r{text}");
    let _ = err.flush();
    LINE_OPEN.store(true, Ordering::SeqCst);
}

fn bar_text(label: &str, unit: &str, done: u64, total: u64, start: Instant) -> String {
    let frac = if total > 0 { (done as f64 / total as f64).min(1.0) } else { 0.0 };
    let width = 30;
    let filled = (frac * width as f64) as usize;
    let secs = start.elapsed().as_secs_f64();
    let eta = if frac > 0.0 { secs * (1.0 - frac) / frac } else { f64::NAN };
    format!(
        "{label} [{}{}] {:5.1}% {done}/{total} {unit}  {secs:.0}s elapsed, ~{eta:.0}s left ",
        "#".repeat(filled),
        " ".repeat(width - filled),
        100.0 * frac
    )
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.render.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_from_many_threads() {
        let p = Progress::hidden();
        p.begin("x", 4000, "items");
        std::thread::scope(|s| {
            for _ in 0..4 {
                let p = p.clone();
                s.spawn(move || (0..1000).for_each(|_| p.add(1)));
            }
        });
        assert_eq!(p.done(), 4000);
        assert_eq!(p.total(), 4000);
        p.begin("y", 7, "things");
        assert_eq!((p.done(), p.phase().0.as_str()), (0, "y"));
        assert!(!p.should_stop());
    }

    /// The process's last line is never glued to a bar: an open bar line is ended first, and
    /// no bar frame comes after it.
    #[test]
    fn bars_end_before_the_last_line() {
        let mut err = Vec::new();
        draw_to(&mut err, "x [#   ]");
        end_bars(&mut err);
        let _ = writeln!(err, "interrupted (SIGINT): nothing written");
        draw_to(&mut err, "x [##  ]");
        assert_eq!(
            String::from_utf8(err).unwrap(),
            "\rx [#   ]\ninterrupted (SIGINT): nothing written\n"
        );
    }
}
