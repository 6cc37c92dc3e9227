//! Pickling results that write outputs (issue #28, "results picklable").
//!
//! A result such as `em.ShowerResult` or `spline.Unfolding` is backed by an engine result whose
//! `save` writes the CLI's files; the engine results are not data Python can rebuild, and their
//! tables (the shower physics) are slow to remake. So pickling captures what `save` writes — every
//! file of the output, its plot included — once, as bytes: a [`SavedOutput`]. The unpickled result
//! (in another process: `multiprocessing`, dask, joblib) writes those bytes through the same output
//! discipline (`Staged`: refused when it exists without `force`, whole or not at all, never over an
//! input), so it writes byte for byte what the original would have written.

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyType};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use warpdrive_core::engine::Error as EngineError;
use warpdrive_core::output::Staged;

/// The files a result's `save` writes, captured for pickling; `save` writes them again.
#[pyclass(module = "warpdrive._warpdrive", frozen)]
pub struct SavedOutput {
    /// A directory output (its files by name), else one file (one entry, its name unused).
    dir: bool,
    files: Vec<(String, Vec<u8>)>,
    /// What the capture noted (a plot that was skipped), returned again when a plot is asked for.
    notes: Vec<String>,
    /// The run's inputs: no output may replace or contain them.
    inputs: Vec<PathBuf>,
}

/// A scratch directory of this process, removed when dropped (also on error).
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> std::io::Result<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("warpdrive-pickle-{}-{n}", std::process::id()));
        std::fs::create_dir(&p)?;
        Ok(Self(p))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn os_error(what: &Path, e: &std::io::Error) -> PyErr {
    PyOSError::new_err(format!("{}: {e}", what.display()))
}

/// The files of a directory, sorted by name (the outputs captured here are flat).
fn read_files(dir: &Path) -> std::io::Result<Vec<(String, Vec<u8>)>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        files.push((entry.file_name().to_string_lossy().into_owned(), std::fs::read(entry.path())?));
    }
    files.sort();
    Ok(files)
}

/// Capture what `save` writes (into a scratch location, removed afterwards): a directory output
/// with `dir`, else one file. `save` is the result's own `save` with its plot.
pub fn capture(
    py: Python<'_>,
    dir: bool,
    inputs: &[PathBuf],
    save: impl FnOnce(Staged) -> Result<Vec<String>, EngineError> + Send,
) -> PyResult<SavedOutput> {
    py.allow_threads(|| {
        let scratch = Scratch::new().map_err(|e| os_error(&std::env::temp_dir(), &e))?;
        let dest = scratch.0.join("output");
        let staged = if dir {
            Staged::dir(&dest, false, &[])
        } else {
            Staged::file(&dest, false, &[])
        }
        .map_err(|e| crate::errors::output(&e))?;
        let notes = save(staged).map_err(|e| crate::errors::engine(&e))?;
        let files = if dir {
            read_files(&dest)
        } else {
            std::fs::read(&dest).map(|b| vec![(String::new(), b)])
        }
        .map_err(|e| os_error(&dest, &e))?;
        Ok(SavedOutput {
            dir,
            files,
            notes,
            inputs: inputs.to_vec(),
        })
    })
}

#[pymethods]
impl SavedOutput {
    /// Rebuild from the parts `__reduce__` gives.
    #[new]
    fn new(dir: bool, files: Vec<(String, Bound<'_, PyBytes>)>, notes: Vec<String>, inputs: Vec<PathBuf>) -> Self {
        let files = files.into_iter().map(|(n, b)| (n, b.as_bytes().to_vec())).collect();
        Self { dir, files, notes, inputs }
    }

    /// Write the captured output at `path` (the plot only with `plot`) with the output rules of
    /// the original `save`; returns the notes of the capture when the plot is asked for.
    #[pyo3(signature = (path, force=false, plot=false))]
    fn save(&self, py: Python<'_>, path: PathBuf, force: bool, plot: bool) -> PyResult<Vec<String>> {
        py.allow_threads(|| {
            let inputs: Vec<&Path> = self.inputs.iter().map(PathBuf::as_path).collect();
            let out = if self.dir {
                Staged::dir(&path, force, &inputs)
            } else {
                Staged::file(&path, force, &inputs)
            }
            .map_err(|e| crate::errors::output(&e))?;
            for (name, bytes) in &self.files {
                if !plot && name.ends_with(".png") {
                    continue;
                }
                let at = if self.dir {
                    out.path().join(name)
                } else {
                    out.path().to_path_buf()
                };
                std::fs::write(&at, bytes).map_err(|e| os_error(&path, &e))?;
            }
            out.commit().map_err(|e| crate::errors::output(&e))?;
            Ok(if plot { self.notes.clone() } else { Vec::new() })
        })
    }

    /// Names of the captured files (a file output: one empty name).
    #[getter]
    fn names(&self) -> Vec<String> {
        self.files.iter().map(|(n, _)| n.clone()).collect()
    }

    #[allow(clippy::type_complexity)]
    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> (
        Bound<'py, PyType>,
        (bool, Vec<(String, Bound<'py, PyBytes>)>, Vec<String>, Vec<PathBuf>),
    ) {
        let files = self.files.iter().map(|(n, b)| (n.clone(), PyBytes::new(py, b))).collect();
        (py.get_type::<Self>(), (self.dir, files, self.notes.clone(), self.inputs.clone()))
    }
}
