//! `warpdrive.photon`: the detector (ice + geometry) and propagation (`warpdrive photon`).

use crate::errors;
use numpy::IntoPyArray;
use pyo3::prelude::*;
use pyo3::types::PyList;
use std::path::PathBuf;
use warpdrive_core::table::{Column, Table};
use warpdrive_photon::detector::{Detector as Det, DetectorOptions};
use warpdrive_photon::Backend;

/// Ice and geometry built and validated once (`--ice`, `--geometry`, `--oversize`).
#[pyclass(module = "warpdrive._warpdrive", frozen)]
pub struct Detector {
    det: Det,
}

/// A table's columns as (name, NumPy array) pairs: the vectors move into the arrays, no copy.
pub fn columns<'py>(py: Python<'py>, t: Table) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for (name, c) in t.columns {
        let arr = match c {
            Column::I32(v) => v.into_pyarray(py).into_any(),
            Column::I64(v) => v.into_pyarray(py).into_any(),
            Column::F32(v) => v.into_pyarray(py).into_any(),
            Column::F64(v) => v.into_pyarray(py).into_any(),
        };
        out.append((name, arr))?;
    }
    Ok(out)
}

#[pymethods]
impl Detector {
    #[new]
    #[pyo3(signature = (ice=None, geometry=None, oversize=None))]
    fn new(py: Python<'_>, ice: Option<PathBuf>, geometry: Option<PathBuf>, oversize: Option<u32>) -> PyResult<Self> {
        let opts = DetectorOptions {
            ice_dir: ice,
            geometry,
            oversize,
            ..Default::default()
        };
        let det = py.allow_threads(|| Det::build(&opts)).map_err(|e| errors::input(&e))?;
        Ok(Self { det })
    }

    /// What the CLI prints about the model on stderr (description, then unsupported options).
    #[getter]
    fn description(&self) -> Vec<String> {
        self.det.description.clone()
    }

    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.det.unsupported.clone()
    }

    #[getter]
    fn ice(&self) -> String {
        self.det.ice.clone()
    }

    #[getter]
    fn geometry(&self) -> String {
        self.det.geometry.source.clone()
    }

    /// Propagate the sources of f2k text, or of the f2k file `label` when `f2k` is None
    /// (`label` names the input in errors, as the CLI names the file). Returns (columns, photons, device): the hit table's columns in Parquet order as
    /// (name, array) pairs, photons propagated, and the device description of the metadata.
    #[pyo3(signature = (f2k, label, seed=1, device="auto", threads=None, precise=false, max_photons=None, progress=None))]
    #[allow(clippy::too_many_arguments)]
    fn propagate_f2k<'py>(
        &self,
        py: Python<'py>,
        f2k: Option<&str>,
        label: PathBuf,
        seed: u64,
        device: &str,
        threads: Option<usize>,
        precise: bool,
        max_photons: Option<u64>,
        progress: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, PyList>, u64, String)> {
        let det = &self.det;
        let read;
        let f2k = match f2k {
            Some(t) => t,
            None => {
                read = warpdrive_core::error::read_text(&label).map_err(|e| errors::input(&e))?;
                read.as_str()
            }
        };
        let specs = warpdrive_photon::f2k::parse_f2k(&label, f2k, &det.yield_)
            .map_err(|e| errors::input(&e))?
            .specs;
        let expected: f64 = specs.iter().map(|s| s.mean_photons).sum();
        if let Some(max) = max_photons {
            if expected > max as f64 {
                return Err(errors::value(format!(
                    "the sources need about {expected:.3e} photons, more than max_photons {max}"
                )));
            }
        }
        let backend = match crate::run::devices(device)? {
            None => Backend::Cpu,
            Some(devices) => Backend::Cuda(warpdrive_photon::gpu::GpuOptions {
                devices,
                precise,
                ..Default::default()
            }),
        };
        let total = expected.round() as u64;
        let (sim, stats) = crate::run::run(py, threads, progress, total, |p| {
            warpdrive_photon::simulate_on(det, &specs, seed, &backend, p)
        })?
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?;
        if sim.photons == 0 {
            return Err(errors::value("the sources produced zero photons"));
        }
        let how = match (&backend, &stats) {
            (Backend::Cuda(o), Some(s)) => format!("{}{}", s.devices.join(", "), if o.precise { " (precise)" } else { "" }),
            _ => "cpu".to_string(),
        };
        let t = warpdrive_photon::hits::hits_table(&sim.hits, &[]);
        Ok((columns(py, t)?, sim.photons, how))
    }
}
