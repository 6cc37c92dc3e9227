//! Running an engine request from Python: the GIL released, the run's [`Control`] built from
//! `device=`/`threads=`/`precise=`, Ctrl-C and the progress callback turned into the run's
//! cancellation token.
//!
//! The work runs on a helper thread; this (Python's) thread wakes every 50 ms to call
//! `PyErr_CheckSignals` (Ctrl-C raises the token; the run stops within one work item and
//! `KeyboardInterrupt` is raised) and, about ten times a second, `progress(done, total)` (a
//! callback that returns `False` stops the run with `warpdrive.Cancelled`; one that raises stops
//! it with its exception).

use pyo3::prelude::*;
use pyo3::types::PyBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use warpdrive_core::engine::{Control, Device, Error as EngineError};

/// The [`Control`] of a Python call: `device=` as the CLI's `--device`, `threads=` (None: all
/// cores), `precise=`; the engine's notes go to the `warpdrive` logger.
pub fn control(device: &str, threads: Option<i64>, precise: bool) -> PyResult<(Control, Notes)> {
    let device: Device = device.parse().map_err(|e| crate::errors::param(&e))?;
    // A negative int cannot become the engine's count; its range (at least 1, at most
    // MAX_THREADS) is the engine's check below.
    let threads = threads
        .map(|n| usize::try_from(n).map_err(|_| crate::errors::value(format!("threads must be at least 1, got {n}"))))
        .transpose()?;
    let notes = Notes::default();
    let sink = Arc::clone(&notes.0);
    let ctl = Control::new()
        .device(device)
        .threads(threads)
        .precise(precise)
        .on_note(Arc::new(move |m: &str| {
            sink.lock().unwrap_or_else(|e| e.into_inner()).push(m.to_string())
        }));
    ctl.check_threads().map_err(|e| crate::errors::param(&e))?;
    Ok((ctl, notes))
}

/// Notes of a run, logged on the `warpdrive` logger (INFO) when the call returns.
#[derive(Clone, Default)]
pub struct Notes(Arc<Mutex<Vec<String>>>);

impl Notes {
    fn log(&self, py: Python<'_>) {
        let notes = std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()));
        if notes.is_empty() {
            return;
        }
        if let Ok(logger) = py.import("logging").and_then(|l| l.call_method1("getLogger", ("warpdrive",))) {
            for n in notes {
                let _ = logger.call_method1("info", (n,));
            }
        }
    }
}

/// Run `work` (an engine call under `ctl`) without the GIL, watching Ctrl-C and `progress`.
pub fn run<R: Send>(
    py: Python<'_>,
    ctl: &Control,
    notes: &Notes,
    progress: Option<&Bound<'_, PyAny>>,
    work: impl FnOnce() -> Result<R, EngineError> + Send,
) -> PyResult<R> {
    let r = std::thread::scope(|s| {
        let handle = s.spawn(work);
        let mut stop: Option<PyErr> = None;
        let mut last_call: Option<Instant> = None;
        loop {
            let finished = py.allow_threads(|| {
                for _ in 0..5 {
                    if handle.is_finished() {
                        return true;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                handle.is_finished()
            });
            if stop.is_none() {
                if let Err(e) = py.check_signals() {
                    ctl.cancel.cancel();
                    stop = Some(e);
                }
            }
            if let (None, Some(cb)) = (&stop, progress) {
                if finished || last_call.is_none_or(|t| t.elapsed() >= Duration::from_millis(100)) {
                    last_call = Some(Instant::now());
                    let p = &ctl.progress;
                    // The last call reports the count done as the total (a mean for photons), so
                    // a bar ends full.
                    let total = if finished { p.done() } else { p.total() };
                    match cb.call1((p.done(), total)) {
                        Ok(v) if v.downcast::<PyBool>().is_ok_and(|b| !b.is_true()) => {
                            ctl.cancel.cancel();
                            stop = Some(crate::errors::Cancelled::new_err(
                                "stopped by the progress callback (it returned False)",
                            ));
                        }
                        Ok(_) => {}
                        Err(e) => {
                            ctl.cancel.cancel();
                            stop = Some(e);
                        }
                    }
                }
            }
            if finished {
                break;
            }
        }
        let r = py
            .allow_threads(|| handle.join())
            .map_err(|_| pyo3::exceptions::PyRuntimeError::new_err("the computation panicked"))?;
        match stop {
            Some(e) => Err(e),
            None => r.map_err(|e| crate::errors::engine(&e)),
        }
    });
    notes.log(py);
    r
}
