//! Pickling results that write outputs (issue #28, "results picklable").
//!
//! A result such as `em.ShowerResult` or `spline.Unfolding` is backed by an engine result whose
//! `save` writes the CLI's files; the engine results are not data Python can rebuild, and their
//! tables (the shower physics) are slow to remake. So pickling captures what `save` writes — every
//! file of the output, its plot included — once, as bytes: a [`SavedOutput`]. The unpickled result
//! (in another process: `multiprocessing`, dask, joblib) writes those bytes through the same output
//! discipline (`Staged`: refused when it exists without `force`, whole or not at all, never over an
//! input), so it writes byte for byte what the original would have written.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyType};
use std::path::{Path, PathBuf};
use warpdrive_core::engine::Error as EngineError;
use warpdrive_core::output::Staged;
use warpdrive_core::snapshot::Snapshot;

/// The files a result's `save` writes, captured for pickling; `save` writes them again.
#[pyclass(module = "warpdrive._warpdrive", frozen)]
pub struct SavedOutput {
    snapshot: Snapshot,
    /// What the capture noted (a plot that was skipped), returned again when a plot is asked for.
    notes: Vec<String>,
    /// The run's inputs: no output may replace or contain them.
    inputs: Vec<PathBuf>,
}

/// Capture what `save` writes (the engine's [`Snapshot::capture`]): a directory output with
/// `dir`, else one file. `save` is the result's own `save` with its plot.
pub fn capture(
    py: Python<'_>,
    dir: bool,
    inputs: &[PathBuf],
    save: impl FnOnce(Staged) -> Result<Vec<String>, EngineError> + Send,
) -> PyResult<SavedOutput> {
    let (snapshot, notes) = py
        .allow_threads(|| Snapshot::capture(dir, save))
        .map_err(|e| crate::errors::engine(&e))?;
    Ok(SavedOutput {
        snapshot,
        notes,
        inputs: inputs.to_vec(),
    })
}

#[pymethods]
impl SavedOutput {
    /// Rebuild from the parts `__reduce__` gives.
    #[new]
    fn new(dir: bool, files: Vec<(String, Bound<'_, PyBytes>)>, notes: Vec<String>, inputs: Vec<PathBuf>) -> Self {
        let files = files.into_iter().map(|(n, b)| (n, b.as_bytes().to_vec())).collect();
        Self {
            snapshot: Snapshot { dir, files },
            notes,
            inputs,
        }
    }

    /// Write the captured output at `path` (the plot only with `plot`) with the output rules of
    /// the original `save`; returns the notes of the capture when the plot is asked for.
    #[pyo3(signature = (path, force=false, plot=false))]
    fn save(&self, py: Python<'_>, path: PathBuf, force: bool, plot: bool) -> PyResult<Vec<String>> {
        let inputs: Vec<&Path> = self.inputs.iter().map(PathBuf::as_path).collect();
        py.allow_threads(|| self.snapshot.write(&path, force, &inputs, |name| plot || !name.ends_with(".png")))
            .map_err(|e| crate::errors::engine(&e))?;
        Ok(if plot { self.notes.clone() } else { Vec::new() })
    }

    /// Names of the captured files (a file output: one empty name).
    #[getter]
    fn names(&self) -> Vec<String> {
        self.snapshot.files.iter().map(|(n, _)| n.clone()).collect()
    }

    #[allow(clippy::type_complexity)]
    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> (
        Bound<'py, PyType>,
        (bool, Vec<(String, Bound<'py, PyBytes>)>, Vec<String>, Vec<PathBuf>),
    ) {
        let files = self.snapshot.files.iter().map(|(n, b)| (n.clone(), PyBytes::new(py, b))).collect();
        (
            py.get_type::<Self>(),
            (self.snapshot.dir, files, self.notes.clone(), self.inputs.clone()),
        )
    }
}
