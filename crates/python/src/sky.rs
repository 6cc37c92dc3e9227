//! `warpdrive.sky`: two-point autocorrelation with scrambled trials (`warpdrive sky autocorr`).

use crate::errors;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use std::path::{Path, PathBuf};
use warpdrive_sky::output::{self, RunInfo};
use warpdrive_sky::trials::Background;
use warpdrive_sky::{setup, Backend, Settings};

/// The observed counts, the background distributions of the trials and the analysis of one run.
#[pyclass(module = "warpdrive._warpdrive", frozen)]
pub struct SkyRun {
    info: RunInfo,
    bg: Background,
    device: String,
}

fn value_err(m: String) -> PyErr {
    errors::value(m)
}

fn meta(device: &str) -> Vec<(String, String)> {
    vec![
        ("warpdrive.version".to_string(), env!("CARGO_PKG_VERSION").to_string()),
        ("warpdrive.command".to_string(), "python: warpdrive.sky.autocorr".to_string()),
        ("warpdrive.device".to_string(), device.to_string()),
    ]
}

#[pymethods]
impl SkyRun {
    /// (counts, background) as lists of (name, array): the columns of `counts.parquet` and
    /// `background.parquet`.
    fn tables<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, crate::arrow_c::ArrowTable>, Bound<'py, crate::arrow_c::ArrowTable>)> {
        let (_, t, b) = output::tables(&self.info, &self.bg, &meta(&self.device));
        Ok((crate::photon::columns(py, t)?, crate::photon::columns(py, b)?))
    }

    /// Write `counts.parquet` and `background.parquet` into `dir` as the CLI does.
    fn to_parquet(&self, py: Python<'_>, dir: PathBuf) -> PyResult<()> {
        let m = meta(&self.device);
        py.allow_threads(|| output::write_tables(&dir, &self.info, &self.bg, &m))
            .map(|_| ())
            .map_err(pyo3::exceptions::PyOSError::new_err)
    }

    #[getter]
    fn observed<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u64>> {
        self.info.observed.clone().into_pyarray(py)
    }

    #[getter]
    fn edges_deg(&self) -> Vec<f64> {
        self.info.edges_deg.clone()
    }

    #[getter]
    fn cut_labels(&self) -> Vec<String> {
        self.info.cut_labels.clone()
    }

    #[getter]
    fn cut_events(&self) -> Vec<u64> {
        self.info.cut_events.clone()
    }

    #[getter]
    fn trials(&self) -> u64 {
        self.bg.trials
    }

    #[getter]
    fn device(&self) -> String {
        self.device.clone()
    }

    #[getter]
    fn description(&self) -> String {
        self.info.description.clone()
    }
}

/// `warpdrive sky autocorr` on events given as arrays.
#[pyfunction]
#[pyo3(signature = (ra, dec, energy, hemisphere, dec_min, dec_max, cuts, bins, bin_width, edges, trials, seed, ra_grid, device, threads, progress))]
#[allow(clippy::too_many_arguments)]
pub fn sky_autocorr(
    py: Python<'_>,
    ra: PyReadonlyArray1<'_, f64>,
    dec: PyReadonlyArray1<'_, f64>,
    energy: PyReadonlyArray1<'_, f64>,
    hemisphere: &str,
    dec_min: Option<f64>,
    dec_max: Option<f64>,
    cuts: Vec<String>,
    bins: usize,
    bin_width: f64,
    edges: Vec<f64>,
    trials: u64,
    seed: u64,
    ra_grid: &str,
    device: &str,
    threads: Option<usize>,
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<SkyRun> {
    let label = Path::new("<arrays>");
    let events =
        warpdrive_sky::events::from_arrays(label, ra.as_slice()?, dec.as_slice()?, energy.as_slice()?).map_err(|e| errors::input(&e))?;
    let region = setup::region(hemisphere, dec_min, dec_max).map_err(value_err)?;
    let cuts = setup::cuts(&cuts).map_err(value_err)?;
    let range = warpdrive_sky::job_range(trials, 1, 0).map_err(value_err)?;
    let (ra_grid_deg, _) = setup::ra_grid(ra_grid, &events, &region).map_err(value_err)?;
    let st = Settings {
        region,
        cuts,
        bins: setup::bins(&edges, bins, bin_width).map_err(value_err)?,
        seed,
        total_trials: trials,
        trials: range.clone(),
        description: format!(
            "arrays, {} events; declination {}° to {}°; scrambled RA {}",
            events.len(),
            region.dec_min,
            region.dec_max,
            ra_grid_deg.map_or("continuous".to_string(), |q| format!("on a {q}° grid"))
        ),
        ra_grid_deg,
    };
    let backend = match crate::run::devices(device)? {
        None => Backend::Cpu,
        Some(d) => Backend::Cuda(d),
    };
    let (info, bg, device) = crate::run::run(py, threads, progress, trials, |p| {
        let (sample, info) = warpdrive_sky::prepare(&events, &st)?;
        let device = match &backend {
            Backend::Cpu => format!("cpu ({} threads)", rayon::current_num_threads()),
            Backend::Cuda(d) => d.iter().map(|i| format!("cuda:{i}")).collect::<Vec<_>>().join(","),
        };
        let bg = warpdrive_sky::run_trials(&sample, seed, range.clone(), &backend, p)?;
        Ok::<_, String>((info, bg, device))
    })?
    .map_err(value_err)?;
    Ok(SkyRun { info, bg, device })
}
