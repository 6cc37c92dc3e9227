//! Progress reporting for long runs: a one-line bar on stderr when stderr is a terminal,
//! nothing otherwise (batch jobs keep clean logs). Workers call [`Progress::add`] from any
//! thread; a render thread redraws at most five times a second.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

struct Shared {
    done: AtomicU64,
    stop: AtomicBool,
}

/// A progress counter towards `total` units of `unit`.
pub struct Progress {
    shared: Arc<Shared>,
    render: Option<JoinHandle<()>>,
}

impl Progress {
    /// A bar if stderr is a terminal and `WARPDRIVE_PROGRESS` is not `0`; silent otherwise.
    pub fn new(label: &str, total: u64, unit: &str) -> Self {
        let visible = std::io::stderr().is_terminal() && std::env::var("WARPDRIVE_PROGRESS").map_or(true, |v| v != "0");
        Self::with_visibility(label, total, unit, visible)
    }

    /// A progress counter that never draws (libraries and tests).
    pub fn hidden() -> Self {
        Self::with_visibility("", 0, "", false)
    }

    fn with_visibility(label: &str, total: u64, unit: &str, visible: bool) -> Self {
        let shared = Arc::new(Shared {
            done: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let render = visible.then(|| {
            let shared = Arc::clone(&shared);
            let (label, unit) = (label.to_string(), unit.to_string());
            std::thread::spawn(move || {
                let start = Instant::now();
                while !shared.stop.load(Ordering::Relaxed) {
                    draw(&label, &unit, shared.done.load(Ordering::Relaxed), total, start);
                    std::thread::sleep(Duration::from_millis(200));
                }
                draw(&label, &unit, shared.done.load(Ordering::Relaxed), total, start);
                eprintln!();
            })
        });
        Self { shared, render }
    }

    /// Record `n` more units done.
    pub fn add(&self, n: u64) {
        self.shared.done.fetch_add(n, Ordering::Relaxed);
    }

    pub fn done(&self) -> u64 {
        self.shared.done.load(Ordering::Relaxed)
    }
}

fn draw(label: &str, unit: &str, done: u64, total: u64, start: Instant) {
    let frac = if total > 0 { (done as f64 / total as f64).min(1.0) } else { 0.0 };
    let width = 30;
    let filled = (frac * width as f64) as usize;
    let secs = start.elapsed().as_secs_f64();
    let eta = if frac > 0.0 { secs * (1.0 - frac) / frac } else { f64::NAN };
    let mut err = std::io::stderr().lock();
    let _ = write!(
        err,
        "\r{label} [{}{}] {:5.1}% {done}/{total} {unit}  {secs:.0}s elapsed, ~{eta:.0}s left ",
        "#".repeat(filled),
        " ".repeat(width - filled),
        100.0 * frac
    );
    let _ = err.flush();
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.render.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_from_many_threads() {
        let p = super::Progress::hidden();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| (0..1000).for_each(|_| p.add(1)));
            }
        });
        assert_eq!(p.done(), 4000);
    }
}
