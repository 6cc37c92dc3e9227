//! Running a computation with the GIL released, on the user's thread count, with progress
//! reported to a Python callable (the Python side turns `tqdm` into one).

use pyo3::prelude::*;
use std::time::Duration;
use warpdrive_core::progress::Progress;

/// The rayon pool of `threads=` (None: all cores), with the CLI's check.
pub fn pool(threads: Option<usize>) -> PyResult<rayon::ThreadPool> {
    let mut b = rayon::ThreadPoolBuilder::new();
    if let Some(n) = threads {
        if n == 0 {
            return Err(crate::errors::value("threads must be at least 1"));
        }
        b = b.num_threads(n);
    }
    b.build().map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))
}

/// The GPU ordinals of `device=` (None: the CPU path), resolved as the CLI resolves `--device`;
/// the `auto` fallback reason is dropped silently (a library prints nothing).
pub fn devices(device: &str) -> PyResult<Option<Vec<usize>>> {
    warpdrive_core::device::resolve(device, |_| {}).map_err(|e| crate::errors::cuda(&e))
}

/// Run `work` on the pool of `threads` without the GIL. With a `progress` callable, the work
/// runs on a helper thread while this thread calls `progress(done, total)` about ten times a
/// second (and at the end with `(done, done)`), taking the GIL only for the call.
pub fn run<R: Send>(
    py: Python<'_>,
    threads: Option<usize>,
    progress: Option<&Bound<'_, PyAny>>,
    total: u64,
    work: impl FnOnce(&Progress) -> R + Send,
) -> PyResult<R> {
    let pool = pool(threads)?;
    let counter = Progress::hidden();
    let Some(cb) = progress else {
        return Ok(py.allow_threads(|| pool.install(|| work(&counter))));
    };
    std::thread::scope(|s| {
        let handle = s.spawn(|| pool.install(|| work(&counter)));
        let mut cb_err = None;
        loop {
            let finished = py.allow_threads(|| {
                for _ in 0..10 {
                    if handle.is_finished() {
                        return true;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                handle.is_finished()
            });
            if cb_err.is_none() {
                if let Err(e) = cb.call1((counter.done(), total)) {
                    cb_err = Some(e);
                }
            }
            if finished {
                break;
            }
        }
        let r = py
            .allow_threads(|| handle.join())
            .map_err(|_| pyo3::exceptions::PyRuntimeError::new_err("the computation panicked"))?;
        // The total is the expected count (a mean); the last call reports the count done as
        // the total, so a bar ends full.
        if cb_err.is_none() {
            cb_err = cb.call1((counter.done(), counter.done())).err();
        }
        match cb_err {
            Some(e) => Err(e),
            None => Ok(r),
        }
    })
}
