//! `warpdrive.photon`: the detector (ice + geometry) and propagation (`warpdrive photon`).

use crate::errors;
use pyo3::prelude::*;
use std::path::PathBuf;
use warpdrive_core::table::{Column, Table};
use warpdrive_photon::detector::{Detector as Det, DetectorOptions};
use warpdrive_photon::Backend;

/// Ice and geometry built and validated once (`--ice`, `--geometry`, `--oversize`).
#[pyclass(module = "warpdrive._warpdrive", frozen)]
pub struct Detector {
    det: Det,
}

/// A library table for Python: exported through the Arrow C data interface ([`crate::arrow_c`]);
/// `warpdrive._arrow.table` imports it as a `pyarrow.Table` without copying the columns.
pub fn columns(py: Python<'_>, t: Table) -> PyResult<Bound<'_, crate::arrow_c::ArrowTable>> {
    Bound::new(py, crate::arrow_c::ArrowTable::new(t))
}

#[pymethods]
impl Detector {
    #[new]
    #[pyo3(signature = (ice=None, geometry=None, oversize=None, sensors=None))]
    fn new(
        py: Python<'_>,
        ice: Option<PathBuf>,
        geometry: Option<PathBuf>,
        oversize: Option<u32>,
        sensors: Option<PathBuf>,
    ) -> PyResult<Self> {
        let opts = DetectorOptions {
            ice_dir: ice,
            geometry,
            oversize,
            sensors,
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
    ) -> PyResult<(Bound<'py, crate::arrow_c::ArrowTable>, u64, String)> {
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
        let (sim, stats) = crate::run::legacy(py, threads, progress, total, |p| {
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

/// PPC's command line (`warpdrive ppc ARGS`) with `env` as its environment (PPCTABLESDIR, WFLA,
/// FLDR, …, WARPDRIVE_SEED, WARPDRIVE_DEVICE) and `stdin` as its standard input. Returns
/// (stdout, stderr) as the command writes them; errors are raised with the command's message.
#[pyfunction]
#[pyo3(signature = (args, env, stdin, threads=None))]
pub fn ppc_run(
    py: Python<'_>,
    args: Vec<String>,
    env: std::collections::HashMap<String, String>,
    stdin: Vec<u8>,
    threads: Option<usize>,
) -> PyResult<(String, String)> {
    use warpdrive_photon::ppc::{run, PpcEnv, PpcError};
    let env = PpcEnv::from_env(|k| env.get(k).cloned()).map_err(|e| errors::input(&e))?;
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let r = crate::run::legacy(py, threads, None, 0, |_| {
        run(&args, &env, &mut stdin.as_slice(), &mut out, &mut err)
    })?;
    let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    match r {
        Ok(()) => Ok((text(out), text(err))),
        Err(PpcError::Input(e)) => Err(errors::input(&e)),
        Err(PpcError::Gpu(e)) => Err(errors::gpu(&e)),
        Err(PpcError::Usage(m)) => Err(errors::value(m)),
        Err(PpcError::Io(e)) => Err(pyo3::exceptions::PyOSError::new_err(e.to_string())),
    }
}

/// The HIT lines of PPC's output as columns: `block` (ordinal of the `EM … EE` block, from 0;
/// -1 outside blocks, as for flashers), string, om, time [ns], wavelength [nm], the photon's
/// direction (θ, φ [rad]) and the impact point's (θ, φ) on the DOM, as PPC prints them.
#[pyfunction]
pub fn ppc_hits<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, crate::arrow_c::ArrowTable>> {
    let mut block = -1i32;
    let mut blocks = 0i32;
    let (mut b, mut s, mut o) = (Vec::new(), Vec::new(), Vec::new());
    let mut f: [Vec<f64>; 6] = Default::default();
    for (n, line) in text.lines().enumerate() {
        let mut w = line.split_ascii_whitespace();
        match w.next() {
            Some("EM") => {
                block = blocks;
                blocks += 1;
            }
            Some("EE") => block = -1,
            Some("HIT") => {
                let v: Vec<&str> = w.collect();
                let bad = || errors::value(format!("line {}: not a HIT line of 8 numbers: {line}", n + 1));
                if v.len() != 8 {
                    return Err(bad());
                }
                b.push(block);
                s.push(v[0].parse::<i32>().map_err(|_| bad())?);
                o.push(v[1].parse::<i32>().map_err(|_| bad())?);
                for (k, c) in f.iter_mut().enumerate() {
                    c.push(v[2 + k].parse::<f64>().map_err(|_| bad())?);
                }
            }
            _ => {}
        }
    }
    let mut t = Table::default();
    t.push("block", Column::I32(b));
    t.push("string", Column::I32(s));
    t.push("om", Column::I32(o));
    let names = ["time", "wavelength", "photon_theta", "photon_phi", "impact_theta", "impact_phi"];
    for (name, c) in names.iter().zip(f) {
        t.push(name, Column::F64(c));
    }
    columns(py, t)
}
