//! `warpdrive.sky`: two-point autocorrelation with scrambled trials (`warpdrive sky autocorr`)
//! and signal injection (`warpdrive sky inject`), translations of keyword arguments into
//! `warpdrive_sky::engine::Autocorr` and `Inject`.

use crate::errors::{self, Count};
use crate::saved::{capture, SavedOutput};
use crate::state::{item, State};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::path::PathBuf;
use warpdrive_sky::engine::{self, Autocorr, AutocorrOptions, AutocorrResult, Bins, Events, Inject, InjectOptions, InjectResult};
use warpdrive_sky::events::ColumnNames;
use warpdrive_sky::inject::DecBand;
use warpdrive_sky::output::RunInfo;
use warpdrive_sky::trials::Background;

/// The observed counts, the background distributions of the trials and the analysis of one run.
#[pyclass(module = "warpdrive._warpdrive", frozen)]
pub struct SkyRun {
    r: AutocorrResult,
    inputs: Vec<PathBuf>,
}

/// (count values, trials with that count).
type Distribution<'py> = (Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<u64>>);

fn meta(device: &str) -> Vec<(String, String)> {
    vec![
        ("warpdrive.version".to_string(), env!("CARGO_PKG_VERSION").to_string()),
        ("warpdrive.command".to_string(), "python: warpdrive.sky.autocorr".to_string()),
        ("warpdrive.device".to_string(), device.to_string()),
    ]
}

#[pymethods]
impl SkyRun {
    /// (counts, background): the tables of `counts.parquet` and `background.parquet`.
    fn tables<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, crate::arrow_c::ArrowTable>, Bound<'py, crate::arrow_c::ArrowTable>)> {
        let (_, t, b) = warpdrive_sky::output::tables(&self.r.info, &self.r.bg, &meta(&self.r.device));
        Ok((crate::photon::columns(py, t)?, crate::photon::columns(py, b)?))
    }

    /// Write the run's output directory as the CLI does (`counts.parquet`, `background.parquet`,
    /// `summary.json`, `run.json`, `autocorr.png` with `plot`); an existing `dir` is refused
    /// unless `force`.
    #[pyo3(signature = (dir, force=false, plot=false))]
    fn save(&self, py: Python<'_>, dir: PathBuf, force: bool, plot: bool) -> PyResult<()> {
        py.allow_threads(|| {
            let out = engine::prepare_output(&dir, force, &self.inputs)?;
            self.r.save(out, plot, "python: warpdrive.sky.autocorr")
        })
        .map_err(|e| errors::engine(&e))
    }

    /// (count values, number of trials with that count) of one (cut, bin).
    fn background_distribution<'py>(&self, py: Python<'py>, cut: Count, bin: Count) -> PyResult<Distribution<'py>> {
        let (c, n) = self
            .r
            .background_distribution(errors::count("cut", cut)? as usize, errors::count("bin", bin)? as usize)
            .map_err(|e| errors::param(&e))?;
        Ok((c.into_pyarray(py), n.into_pyarray(py)))
    }

    #[getter]
    fn observed<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u64>> {
        self.r.info.observed.clone().into_pyarray(py)
    }

    #[getter]
    fn edges_deg(&self) -> Vec<f64> {
        self.r.info.edges_deg.clone()
    }

    #[getter]
    fn cut_labels(&self) -> Vec<String> {
        self.r.info.cut_labels.clone()
    }

    #[getter]
    fn cut_events(&self) -> Vec<u64> {
        self.r.info.cut_events.clone()
    }

    #[getter]
    fn trials(&self) -> u64 {
        self.r.bg.trials
    }

    #[getter]
    fn device(&self) -> String {
        self.r.device.clone()
    }

    #[getter]
    fn description(&self) -> String {
        self.r.info.description.clone()
    }

    /// Pickling: the run as plain values, rebuilt by [`SkyRun::from_state`] (the same tables,
    /// distributions and output files in another process).
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let restore = py.get_type::<Self>().getattr("from_state")?;
        Ok((restore, PyTuple::new(py, [self.state(py)?])?))
    }

    /// The run from the values of `__reduce__`.
    #[staticmethod]
    fn from_state(state: &Bound<'_, PyDict>) -> PyResult<Self> {
        let info = RunInfo {
            config: item(state, "config")?,
            seed: item(state, "seed")?,
            total_trials: item(state, "total_trials")?,
            trials: item::<Vec<(u64, u64)>>(state, "trials")?.into_iter().map(|(a, b)| a..b).collect(),
            edges_deg: item(state, "edges_deg")?,
            cut_labels: item(state, "cut_labels")?,
            thresholds: item(state, "thresholds")?,
            cut_events: item(state, "cut_events")?,
            n_events: item(state, "n_events")?,
            description: item(state, "description")?,
            observed: item(state, "observed")?,
        };
        let freq: Vec<Vec<(u64, u64)>> = item(state, "bg_freq")?;
        let mut bg = Background::new(freq.len());
        bg.trials = item(state, "bg_trials")?;
        bg.freq = freq.into_iter().map(|m| m.into_iter().collect()).collect();
        let width: usize = item(state, "bg_kept_width")?;
        let kept: PyReadonlyArray1<'_, u64> = item(state, "bg_kept")?;
        bg.kept = match width {
            0 => Vec::new(),
            w => kept.as_slice()?.chunks(w).map(<[u64]>::to_vec).collect(),
        };
        let r = AutocorrResult {
            info,
            bg,
            device: item(state, "device")?,
            observed_seconds: item(state, "observed_seconds")?,
            trial_seconds: item(state, "trial_seconds")?,
            window_pairs: item(state, "window_pairs")?,
            jobs: item(state, "jobs")?,
            job_index: item(state, "job_index")?,
            merged_from: item(state, "merged_from")?,
        };
        Ok(Self {
            r,
            inputs: item(state, "inputs")?,
        })
    }
}

impl SkyRun {
    /// Every field of the result as a dict of plain values (the trials' kept counts as one
    /// NumPy array of rows of `bg_kept_width`).
    fn state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (i, b) = (&self.r.info, &self.r.bg);
        let mut s = State::new(py);
        s.set("config", &i.config)?
            .set("seed", i.seed)?
            .set("total_trials", i.total_trials)?
            .set("trials", i.trials.iter().map(|r| (r.start, r.end)).collect::<Vec<_>>())?
            .set("edges_deg", &i.edges_deg)?
            .set("cut_labels", &i.cut_labels)?
            .set("thresholds", &i.thresholds)?
            .set("cut_events", &i.cut_events)?
            .set("n_events", i.n_events)?
            .set("description", &i.description)?
            .set("observed", &i.observed)?
            .set("bg_trials", b.trials)?
            .set(
                "bg_freq",
                b.freq
                    .iter()
                    .map(|m| m.iter().map(|(&k, &v)| (k, v)).collect::<Vec<_>>())
                    .collect::<Vec<_>>(),
            )?
            .set("bg_kept_width", b.kept.first().map_or(0, Vec::len))?
            .set("bg_kept", b.kept.concat().into_pyarray(py))?
            .set("device", &self.r.device)?
            .set("observed_seconds", self.r.observed_seconds)?
            .set("trial_seconds", self.r.trial_seconds)?
            .set("window_pairs", self.r.window_pairs)?
            .set("jobs", self.r.jobs)?
            .set("job_index", self.r.job_index)?
            .set("merged_from", &self.r.merged_from)?
            .set("inputs", &self.inputs)?;
        Ok(s.into_dict())
    }
}

/// `warpdrive sky autocorr` on arrays (`ra`, `dec`, `energy`), files (`files`, with optional
/// column names) or a generated sky (`synthetic_events`).
#[pyfunction]
#[pyo3(signature = (ra, dec, energy, files, columns, synthetic_events, hemisphere, dec_min, dec_max, cuts, bins, bin_width, edges, trials, seed, jobs, job_index, ra_grid, device, threads, progress))]
#[allow(clippy::too_many_arguments)]
pub fn sky_autocorr(
    py: Python<'_>,
    ra: Option<PyReadonlyArray1<'_, f64>>,
    dec: Option<PyReadonlyArray1<'_, f64>>,
    energy: Option<PyReadonlyArray1<'_, f64>>,
    files: Option<Vec<PathBuf>>,
    columns: (Option<String>, Option<String>, Option<String>),
    synthetic_events: Option<Count>,
    hemisphere: &str,
    dec_min: Option<f64>,
    dec_max: Option<f64>,
    cuts: Vec<String>,
    bins: Count,
    bin_width: f64,
    edges: Option<Vec<f64>>,
    trials: Count,
    seed: Count,
    jobs: Count,
    job_index: Count,
    ra_grid: &str,
    device: &str,
    threads: Option<Count>,
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<SkyRun> {
    let events = match (ra, dec, files, synthetic_events) {
        (Some(ra), Some(dec), None, None) => Events::Arrays {
            ra: ra.as_slice()?.to_vec(),
            dec: dec.as_slice()?.to_vec(),
            energy: energy.map(|e| e.as_slice().map(<[f64]>::to_vec)).transpose()?,
            ang_err: None,
        },
        (None, None, Some(paths), None) => Events::Files {
            paths,
            columns: ColumnNames::default().with(columns.0.as_deref(), columns.1.as_deref(), columns.2.as_deref()),
        },
        (None, None, None, Some(n)) => Events::Synthetic(errors::count("synthetic_events", n)? as usize),
        _ => {
            return Err(errors::value(
                "give the events as ra= and dec= arrays, as files=, or as synthetic_events= (one of them)",
            ))
        }
    };
    let opts = AutocorrOptions {
        hemisphere: hemisphere.parse().map_err(|e| errors::param(&e))?,
        dec_min,
        dec_max,
        cuts: cuts
            .iter()
            .map(|c| engine::parse_cut(c))
            .collect::<Result<_, _>>()
            .map_err(|e| errors::param(&e))?,
        bins: match edges {
            None => Bins::Uniform {
                n: errors::count("bins", bins)? as usize,
                width: bin_width,
            },
            Some(e) => Bins::Edges(e),
        },
        trials: errors::count("trials", trials)?,
        seed: errors::count("seed", seed)?,
        jobs: errors::count("jobs", jobs)?,
        job_index: errors::count("job_index", job_index)?,
        ra_grid: ra_grid.parse().map_err(|e| errors::param(&e))?,
    };
    let (ctl, notes) = crate::run::control(device, threads, false)?;
    let req = py.allow_threads(|| Autocorr::new(events, &opts)).map_err(|e| errors::engine(&e))?;
    let r = crate::run::run(py, &ctl, &notes, progress, || req.run(&ctl))?;
    Ok(SkyRun {
        r,
        inputs: req.inputs().to_vec(),
    })
}

/// `warpdrive merge`: the job directories of one split run (`jobs=`/`job_index=`, each written
/// with `to_parquet`) as one result; `partial` allows jobs that do not cover every trial.
#[pyfunction]
#[pyo3(signature = (job_dirs, partial))]
pub fn sky_merge(py: Python<'_>, job_dirs: Vec<PathBuf>, partial: bool) -> PyResult<SkyRun> {
    let (ctl, notes) = crate::run::control("cpu", None, false)?;
    let r = crate::run::run(py, &ctl, &notes, None, || AutocorrResult::merge(&job_dirs, partial, &ctl))?;
    Ok(SkyRun { r, inputs: job_dirs })
}

/// How Python's injection runs are described in `run.json`.
const INJECT_COMMAND: &str = "python: warpdrive.sky.inject";

/// The background and injected count distributions of a signal-injection run, with the
/// sensitivity analysis (`warpdrive sky inject`).
#[pyclass(module = "warpdrive._warpdrive", frozen)]
pub struct SkyInjection {
    r: InjectResult,
    inputs: Vec<PathBuf>,
}

/// Four Arrow tables.
type Tables4<'py> = (
    Bound<'py, crate::arrow_c::ArrowTable>,
    Bound<'py, crate::arrow_c::ArrowTable>,
    Bound<'py, crate::arrow_c::ArrowTable>,
    Bound<'py, crate::arrow_c::ArrowTable>,
);

#[pymethods]
impl SkyInjection {
    /// (counts, background, signal, sensitivity): the tables of the four Parquet files.
    fn tables<'py>(&self, py: Python<'py>) -> PyResult<Tables4<'py>> {
        let meta = self.r.metadata();
        let (_, c, b) = warpdrive_sky::output::tables(&self.r.info, &self.r.bg, &meta);
        let (sig, sens) = warpdrive_sky::output::injection_tables(&self.r, &self.r.rows(), &meta);
        Ok((
            crate::photon::columns(py, c)?,
            crate::photon::columns(py, b)?,
            crate::photon::columns(py, sig)?,
            crate::photon::columns(py, sens)?,
        ))
    }

    /// `summary.json` as the CLI writes it: the settings, the best cells and the sensitivity
    /// and discovery potentials.
    fn summary_json(&self) -> String {
        warpdrive_sky::output::injection_json(&self.r, &self.r.scan())
    }

    /// Write the output directory as the CLI does; returns the notes (none).
    #[pyo3(signature = (dir, force=false, plot=false))]
    fn save(&self, py: Python<'_>, dir: PathBuf, force: bool, plot: bool) -> PyResult<Vec<String>> {
        py.allow_threads(|| {
            let out = engine::prepare_output(&dir, force, &self.inputs)?;
            self.r.save(out, plot, INJECT_COMMAND)
        })
        .map_err(|e| errors::engine(&e))?;
        Ok(Vec::new())
    }

    /// The output directory `save` writes (with its plot), captured for pickling.
    fn snapshot(&self, py: Python<'_>) -> PyResult<SavedOutput> {
        capture(py, true, &self.inputs, |out| {
            self.r.save(out, true, INJECT_COMMAND).map(|()| Vec::new())
        })
    }

    #[getter]
    fn sources(&self) -> Vec<u64> {
        self.r.sources.clone()
    }

    #[getter]
    fn events_per_source(&self) -> u64 {
        self.r.per_source
    }

    #[getter]
    fn trials(&self) -> u64 {
        self.r.bg.trials
    }

    #[getter]
    fn device(&self) -> String {
        self.r.device.clone()
    }

    #[getter]
    fn edges_deg(&self) -> Vec<f64> {
        self.r.info.edges_deg.clone()
    }

    #[getter]
    fn cut_labels(&self) -> Vec<String> {
        self.r.info.cut_labels.clone()
    }

    /// The injection in one line (as the CLI prints it).
    #[getter]
    fn description(&self) -> String {
        self.r.description()
    }
}

/// `warpdrive sky inject` on arrays (`ra`, `dec`, `energy`, `ang_err`), files (`files`, with
/// optional column names) or a generated sky (`synthetic_events`).
#[pyfunction]
#[pyo3(signature = (ra, dec, energy, ang_err, files, columns, synthetic_events, hemisphere, dec_min, dec_max, cuts, bins, bin_width, edges, trials, seed, jobs, job_index, ra_grid, sources, events_per_source, spectrum, declination, energy_threshold, device, threads, progress))]
#[allow(clippy::too_many_arguments)]
pub fn sky_inject(
    py: Python<'_>,
    ra: Option<PyReadonlyArray1<'_, f64>>,
    dec: Option<PyReadonlyArray1<'_, f64>>,
    energy: Option<PyReadonlyArray1<'_, f64>>,
    ang_err: Option<PyReadonlyArray1<'_, f64>>,
    files: Option<Vec<PathBuf>>,
    columns: (Option<String>, Option<String>, Option<String>, Option<String>),
    synthetic_events: Option<Count>,
    hemisphere: &str,
    dec_min: Option<f64>,
    dec_max: Option<f64>,
    cuts: Vec<String>,
    bins: Count,
    bin_width: f64,
    edges: Option<Vec<f64>>,
    trials: Count,
    seed: Count,
    jobs: Count,
    job_index: Count,
    ra_grid: &str,
    sources: Vec<Count>,
    events_per_source: Count,
    spectrum: f64,
    declination: Option<String>,
    energy_threshold: &str,
    device: &str,
    threads: Option<Count>,
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<SkyInjection> {
    let array = |a: Option<PyReadonlyArray1<'_, f64>>| a.map(|e| e.as_slice().map(<[f64]>::to_vec)).transpose();
    let events = match (ra, dec, files, synthetic_events) {
        (Some(ra), Some(dec), None, None) => Events::Arrays {
            ra: ra.as_slice()?.to_vec(),
            dec: dec.as_slice()?.to_vec(),
            energy: array(energy)?,
            ang_err: array(ang_err)?,
        },
        (None, None, Some(paths), None) => Events::Files {
            paths,
            columns: ColumnNames::default()
                .with(columns.0.as_deref(), columns.1.as_deref(), columns.2.as_deref())
                .with_ang_err(columns.3.as_deref()),
        },
        (None, None, None, Some(n)) => Events::Synthetic(errors::count("synthetic_events", n)? as usize),
        _ => {
            return Err(errors::value(
                "give the events as ra= and dec= arrays, as files=, or as synthetic_events= (one of them)",
            ))
        }
    };
    let opts = InjectOptions {
        base: AutocorrOptions {
            hemisphere: hemisphere.parse().map_err(|e| errors::param(&e))?,
            dec_min,
            dec_max,
            cuts: cuts
                .iter()
                .map(|c| engine::parse_cut(c))
                .collect::<Result<_, _>>()
                .map_err(|e| errors::param(&e))?,
            bins: match edges {
                None => Bins::Uniform {
                    n: errors::count("bins", bins)? as usize,
                    width: bin_width,
                },
                Some(e) => Bins::Edges(e),
            },
            trials: errors::count("trials", trials)?,
            seed: errors::count("seed", seed)?,
            jobs: errors::count("jobs", jobs)?,
            job_index: errors::count("job_index", job_index)?,
            ra_grid: ra_grid.parse().map_err(|e| errors::param(&e))?,
        },
        sources: sources.into_iter().map(|n| errors::count("sources", n)).collect::<PyResult<_>>()?,
        events_per_source: errors::count("events_per_source", events_per_source)?,
        spectrum,
        declination: declination
            .as_deref()
            .map(str::parse::<DecBand>)
            .transpose()
            .map_err(|e| errors::param(&e))?,
        energy_threshold: engine::parse_cut(energy_threshold).map_err(|e| errors::param(&e))?,
    };
    let (ctl, notes) = crate::run::control(device, threads, false)?;
    let req = py.allow_threads(|| Inject::new(events, &opts)).map_err(|e| errors::engine(&e))?;
    let r = crate::run::run(py, &ctl, &notes, progress, || req.run(&ctl))?;
    Ok(SkyInjection {
        r,
        inputs: req.inputs().to_vec(),
    })
}

/// `warpdrive merge` of injection jobs: the job directories of one split injection
/// (`jobs=`/`job_index=`, each written with `to_parquet`) as one result.
#[pyfunction]
#[pyo3(signature = (job_dirs, partial))]
pub fn sky_merge_injection(py: Python<'_>, job_dirs: Vec<PathBuf>, partial: bool) -> PyResult<SkyInjection> {
    let (ctl, notes) = crate::run::control("cpu", None, false)?;
    let r = crate::run::run(py, &ctl, &notes, None, || InjectResult::merge(&job_dirs, partial, &ctl))?;
    Ok(SkyInjection { r, inputs: job_dirs })
}
