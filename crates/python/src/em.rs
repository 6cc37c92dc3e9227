//! `warpdrive.em`: the Klein–Nishina mini-app ([`em_run`], `warpdrive em`) and EM showers in a
//! layered calorimeter ([`em_shower`], `warpdrive em testem3|calorimeter`), translations of
//! keyword arguments into `warpdrive_em::engine::KleinNishina` and `Shower`.

use crate::errors::{self, Count};
use crate::run::{control, run};
use crate::saved::{capture, SavedOutput};
use crate::state::{item, State};
use numpy::{IntoPyArray, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::path::PathBuf;
use warpdrive_core::jobs::Share;
use warpdrive_em::engine::{
    self, CalorimeterChoice, DetectorOptions, DetectorShower, KleinNishina, KleinNishinaOptions, KleinNishinaResult, MaterialChoice,
    Shower, ShowerOptions,
};
use warpdrive_em::transport::{RunResult, TallyGrid};

/// How the Python runs name themselves in the Parquet metadata and `run.json`.
const RUN_COMMAND: &str = "python: warpdrive.em.run";
const SHOWER_COMMAND: &str = "python: warpdrive.em.testem3/calorimeter";

/// An optional non-negative integer argument.
fn count(name: &str, v: Option<Count>) -> PyResult<Option<u64>> {
    v.map(|v| errors::count(name, v)).transpose()
}

/// The result of one mini-app run: integrals, the depth profile and the checksum the CLI prints.
#[pyclass(module = "warpdrive._warpdrive", frozen)]
pub struct EmRun {
    r: KleinNishinaResult,
    inputs: Vec<PathBuf>,
}

#[pymethods]
impl EmRun {
    /// `edep.parquet`'s columns as (name, array) pairs.
    fn profile<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, crate::arrow_c::ArrowTable>> {
        crate::photon::columns(py, self.r.profile_table())
    }

    /// Energy deposited beyond depth `z` [cm], MeV per primary.
    fn energy_beyond(&self, z: f64) -> f64 {
        self.r.energy_beyond(z)
    }

    /// Write the CLI's output directory (`edep.parquet`, `summary.json`, `run.json`, `edep.png`
    /// with `plot`); an existing `dir` is refused unless `force`. Returns notes (a plot skipped).
    #[pyo3(signature = (dir, force=false, plot=false))]
    fn save(&self, py: Python<'_>, dir: PathBuf, force: bool, plot: bool) -> PyResult<Vec<String>> {
        py.allow_threads(|| {
            let out = engine::prepare_output(&dir, force, &self.inputs)?;
            self.r.save(out, plot, RUN_COMMAND)
        })
        .map_err(|e| errors::engine(&e))
    }

    #[getter]
    fn mean_depth(&self) -> f64 {
        self.r.result.mean_depth()
    }

    #[getter]
    fn checksum(&self) -> String {
        self.r.result.checksum()
    }

    #[getter]
    fn tracks(&self) -> u64 {
        self.r.result.tracks
    }

    #[getter]
    fn steps(&self) -> u64 {
        self.r.result.steps
    }

    #[getter]
    fn secondaries(&self) -> u64 {
        self.r.result.secondaries
    }

    #[getter]
    fn retries(&self) -> u64 {
        self.r.result.retries
    }

    #[getter]
    fn device(&self) -> String {
        self.r.device.clone()
    }

    #[getter]
    fn material(&self) -> String {
        self.r.material.clone()
    }

    #[getter]
    fn seconds(&self) -> f64 {
        self.r.seconds
    }

    /// The output directory `save` writes (with its plot), captured for pickling.
    fn snapshot(&self, py: Python<'_>) -> PyResult<SavedOutput> {
        capture(py, true, &self.inputs, |out| self.r.save(out, true, RUN_COMMAND))
    }

    /// The depth tally alone (what `energy_beyond` needs), picklable.
    fn tally(&self) -> EmTally {
        EmTally {
            result: self.r.result.clone(),
            grid: self.r.grid,
        }
    }
}

/// The fixed-point depth tally of a mini-app run and its grid: `energy_beyond` of a result
/// that was pickled (the tally pickles as its integers, so nothing is rounded).
#[pyclass(module = "warpdrive._warpdrive", frozen)]
pub struct EmTally {
    result: RunResult,
    grid: TallyGrid,
}

#[pymethods]
impl EmTally {
    /// Energy deposited beyond depth `z` [cm], MeV per primary.
    fn energy_beyond(&self, z: f64) -> f64 {
        self.result.energy_beyond(&self.grid, z)
    }

    /// Pickling: the tally's integers and the grid, rebuilt by `from_state`.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let r = &self.result;
        let mut s = State::new(py);
        s.set("tracks", r.tracks)?
            .set("steps", r.steps)?
            .set("iterations", r.iterations)?
            .set("retries", r.retries)?
            .set("secondaries", r.secondaries)?
            .set("tally", r.tally.clone().into_pyarray(py))?
            .set("edep_total", r.edep_total.to_le_bytes().to_vec())?
            .set("edep_z", r.edep_z.to_le_bytes().to_vec())?
            .set("front", self.grid.front)?
            .set("delta", self.grid.delta)?
            .set("size", self.grid.size)?;
        let restore = py.get_type::<Self>().getattr("from_state")?;
        Ok((restore, PyTuple::new(py, [s.into_dict()])?))
    }

    /// The tally from the values of `__reduce__`.
    #[staticmethod]
    fn from_state(state: &Bound<'_, PyDict>) -> PyResult<Self> {
        let bytes16 = |key: &str| -> PyResult<[u8; 16]> {
            let v: Vec<u8> = item(state, key)?;
            v.try_into()
                .map_err(|_| errors::value(format!("pickled tally: {key} is not 16 bytes")))
        };
        let tally: PyReadonlyArray1<'_, u64> = item(state, "tally")?;
        let grid = TallyGrid::new(item(state, "front")?, item(state, "delta")?, item(state, "size")?).map_err(errors::value)?;
        Ok(Self {
            result: RunResult {
                tracks: item(state, "tracks")?,
                steps: item(state, "steps")?,
                iterations: item(state, "iterations")?,
                retries: item(state, "retries")?,
                secondaries: item(state, "secondaries")?,
                tally: tally.as_slice()?.to_vec(),
                edep_total: u128::from_le_bytes(bytes16("edep_total")?),
                edep_z: i128::from_le_bytes(bytes16("edep_z")?),
            },
            grid,
        })
    }
}

/// `warpdrive em`: `tracks` photons of `energy` MeV along +z in `material` (a built-in NIST
/// name or a TOML file), Compton scattering only, energy deposition tallied in depth bins.
#[pyfunction]
#[pyo3(signature = (energy, tracks, seed, material, tally_front, tally_width, tally_bins, slots, stack_capacity, compare, device, threads, progress))]
#[allow(clippy::too_many_arguments)]
pub fn em_run(
    py: Python<'_>,
    energy: f64,
    tracks: Count,
    seed: Count,
    material: &str,
    tally_front: f64,
    tally_width: f64,
    tally_bins: Count,
    slots: Option<Count>,
    stack_capacity: Option<Count>,
    compare: Option<PathBuf>,
    device: &str,
    threads: Option<Count>,
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<EmRun> {
    let opts = KleinNishinaOptions {
        energy,
        tracks: errors::count("tracks", tracks)?,
        seed: errors::count("seed", seed)?,
        material: MaterialChoice::parse(material),
        tally_front,
        tally_width,
        tally_bins: errors::count("tally_bins", tally_bins)?,
        slots: count("slots", slots)?,
        stack_capacity: count("stack_capacity", stack_capacity)?,
        compare,
    };
    let (ctl, notes) = control(device, threads, false)?;
    let req = KleinNishina::new(&opts).map_err(|e| errors::engine(&e))?;
    let r = run(py, &ctl, &notes, progress, || req.run(&ctl))?;
    Ok(EmRun {
        r,
        inputs: req.inputs().to_vec(),
    })
}

/// The names of the built-in materials (Geant4's NIST names).
#[pyfunction]
pub fn em_materials() -> Vec<&'static str> {
    warpdrive_em::nist::MATERIALS.iter().map(|m| m.name).collect()
}

/// The result of an EM shower run (`warpdrive em testem3` / `em calorimeter`).
#[pyclass(module = "warpdrive._warpdrive", frozen)]
pub struct ShowerResult {
    r: engine::ShowerResult,
    inputs: Vec<PathBuf>,
}

#[pymethods]
impl ShowerResult {
    /// `profile.parquet`'s columns.
    fn profile<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, crate::arrow_c::ArrowTable>> {
        crate::photon::columns(py, self.r.profile_table())
    }

    /// `events.parquet`'s columns.
    fn events<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, crate::arrow_c::ArrowTable>> {
        crate::photon::columns(py, self.r.events_table())
    }

    /// Write the CLI's output directory (`profile.parquet`, `events.parquet`, `summary.json`,
    /// `run.json`, `profile.png` with `plot`); an existing `dir` is refused unless `force`.
    /// Returns notes (a plot skipped).
    #[pyo3(signature = (dir, force=false, plot=false))]
    fn save(&self, py: Python<'_>, dir: PathBuf, force: bool, plot: bool) -> PyResult<Vec<String>> {
        py.allow_threads(|| {
            let out = engine::prepare_output(&dir, force, &self.inputs)?;
            self.r.save(out, plot, SHOWER_COMMAND)
        })
        .map_err(|e| errors::engine(&e))
    }

    /// Per material: (name, mean [MeV], error of the mean [MeV], RMS [MeV]).
    fn materials(&self) -> Vec<(String, f64, f64, f64)> {
        self.r
            .per_material()
            .into_iter()
            .map(|m| (m.name, m.edep_mean_mev, m.edep_mean_error_mev, m.edep_rms_mev))
            .collect()
    }

    /// Mean created γ, e⁻, e⁺ per event.
    fn created(&self) -> [f64; 3] {
        self.r.run.created()
    }

    /// Mean created secondaries per event by process: (process, number).
    fn created_by(&self) -> Vec<(String, f64)> {
        warpdrive_em::shower::transport::CREATORS
            .iter()
            .zip(self.r.run.created_by())
            .map(|(k, v)| ((*k).to_string(), v))
            .collect()
    }

    /// Mean charged and neutral steps per event.
    fn steps(&self) -> (f64, f64) {
        self.r.run.steps()
    }

    /// Mean charged track length per event per material [cm]: (name, length).
    fn track_length(&self) -> Vec<(String, f64)> {
        self.r
            .physics
            .calorimeter
            .materials
            .iter()
            .map(|m| m.name.clone())
            .zip(self.r.run.track_length())
            .collect()
    }

    #[getter]
    fn escaped(&self) -> f64 {
        self.r.run.escaped()
    }

    #[getter]
    fn worst_balance(&self) -> f64 {
        self.r.run.worst_balance()
    }

    #[getter]
    fn checksum(&self) -> String {
        format!("{:016x}", self.r.run.checksum())
    }

    #[getter]
    fn events_count(&self) -> usize {
        self.r.run.events.len()
    }

    #[getter]
    fn calorimeter(&self) -> String {
        self.r.physics.calorimeter.name.clone()
    }

    #[getter]
    fn device(&self) -> String {
        self.r.device.clone()
    }

    /// Whether the tables came from this process's cache (an earlier run of the same set-up).
    #[getter]
    fn tables_cached(&self) -> bool {
        self.r.tables_cached
    }

    #[getter]
    fn tables_seconds(&self) -> f64 {
        self.r.tables_seconds
    }

    #[getter]
    fn transport_seconds(&self) -> f64 {
        self.r.transport_seconds
    }

    /// The output directory `save` writes (with its plot), captured for pickling.
    fn snapshot(&self, py: Python<'_>) -> PyResult<SavedOutput> {
        capture(py, true, &self.inputs, |out| self.r.save(out, true, SHOWER_COMMAND))
    }
}

/// `warpdrive em testem3` (`calorimeter` None) or `em calorimeter FILE`: `events` events of a
/// `primary` ("e-", "e+", "gamma") of kinetic `energy` MeV, production cut `cut_mm` [mm].
#[pyfunction]
#[pyo3(signature = (calorimeter, primary, energy, events, seed, cut_mm, device, threads, progress, precise=false, jobs=None, job_index=None))]
#[allow(clippy::too_many_arguments)]
pub fn em_shower(
    py: Python<'_>,
    calorimeter: Option<PathBuf>,
    primary: &str,
    energy: f64,
    events: Count,
    seed: Count,
    cut_mm: f64,
    device: &str,
    threads: Option<Count>,
    progress: Option<&Bound<'_, PyAny>>,
    precise: bool,
    jobs: Option<Count>,
    job_index: Option<Count>,
) -> PyResult<ShowerResult> {
    let jobs = jobs.map(|n| errors::count("jobs", n)).transpose()?.unwrap_or(1);
    let job_index = job_index.map(|n| errors::count("job_index", n)).transpose()?.unwrap_or(0);
    let opts = ShowerOptions {
        primary: primary.parse().map_err(|e| errors::param(&e))?,
        energy,
        events: errors::count("events", events)?,
        seed: errors::count("seed", seed)?,
        cut_mm,
        split: Share::new(jobs, job_index).map_err(|e| errors::param(&e))?,
        command: SHOWER_COMMAND.into(),
    };
    let cal = calorimeter.map_or(CalorimeterChoice::Testem3, CalorimeterChoice::File);
    let (ctl, notes) = control(device, threads, precise)?;
    let req = Shower::new(cal, &opts).map_err(|e| errors::engine(&e))?;
    let r = run(py, &ctl, &notes, progress, || req.run(&ctl))?;
    Ok(ShowerResult {
        r,
        inputs: req.inputs().to_vec(),
    })
}

/// `warpdrive merge` of shower jobs: the output directories of one run split with `jobs=`/
/// `job_index=` (each saved) as the unsplit run's result.
#[pyfunction]
pub fn em_merge(py: Python<'_>, dirs: Vec<PathBuf>) -> PyResult<ShowerResult> {
    let (ctl, notes) = control("cpu", None, false)?;
    let r = run(py, &ctl, &notes, None, || warpdrive_em::engine::merge_showers(&dirs, &ctl))?;
    Ok(ShowerResult { r, inputs: dirs })
}

/// Geant4 10.3's TestEm3 numbers (`warpdrive_em::shower::reference`): per run (analogue, then
/// secondary-biased) its label, (material, mean, RMS) per material [MeV], created γ/e⁻/e⁺ and
/// charged/neutral steps per event.
#[pyfunction]
#[allow(clippy::type_complexity)]
pub fn em_testem3_reference() -> Vec<(String, Vec<(String, f64, f64)>, [f64; 3], [f64; 2])> {
    use warpdrive_em::shower::reference::{BIASED, UNBIASED};
    [UNBIASED, BIASED]
        .iter()
        .map(|r| {
            (
                r.label.to_string(),
                r.edep.iter().map(|(n, m, rms)| ((*n).to_string(), *m, *rms)).collect(),
                r.created,
                r.steps,
            )
        })
        .collect()
}

const DETECTOR_COMMAND: &str = "python: warpdrive.em.run(gdml=...)";

/// The result of EM showers in a GDML detector (`warpdrive em run FILE.gdml`).
#[pyclass(module = "warpdrive._warpdrive", frozen)]
pub struct DetectorResult {
    r: engine::DetectorResult,
    inputs: Vec<PathBuf>,
}

#[pymethods]
impl DetectorResult {
    /// `volumes.parquet`'s columns.
    fn volumes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, crate::arrow_c::ArrowTable>> {
        crate::photon::columns(py, self.r.volumes_table())
    }

    /// `hits.parquet`'s columns (no rows without sensitive volumes).
    fn hits<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, crate::arrow_c::ArrowTable>> {
        crate::photon::columns(py, self.r.hits_table())
    }

    /// `summary.json`'s text.
    fn summary_json(&self) -> String {
        self.r.summary().to_string()
    }

    /// Write the CLI's output directory (`volumes.parquet`, `hits.parquet` with sensitive
    /// volumes, `summary.json`, `run.json`, and `volumes.png` with `plot`); an existing `dir`
    /// is refused unless `force`. Returns notes (a plot that could not be drawn).
    #[pyo3(signature = (dir, force=false, plot=false))]
    fn save(&self, py: Python<'_>, dir: PathBuf, force: bool, plot: bool) -> PyResult<Vec<String>> {
        py.allow_threads(|| {
            let out = engine::prepare_output(&dir, force, &self.inputs)?;
            self.r.save(out, plot, DETECTOR_COMMAND)
        })
        .map_err(|e| errors::engine(&e))
    }

    /// The output directory `save` writes, captured for pickling.
    fn snapshot(&self, py: Python<'_>) -> PyResult<SavedOutput> {
        capture(py, true, &self.inputs, |out| self.r.save(out, true, DETECTOR_COMMAND))
    }

    /// Per GDML material: (name, vacuum, Σ deposit [MeV], mean per event [MeV], its error [MeV]).
    fn materials(&self) -> Vec<(String, bool, f64, f64, f64)> {
        self.r.per_material()
    }

    /// Per sensitive logical volume: (name, hits, Σ deposit of the hits [MeV]).
    fn hits_per_volume(&self) -> Vec<(String, u64, f64)> {
        self.r.hits_per_volume()
    }

    #[getter]
    fn escaped(&self) -> f64 {
        self.r.run.escaped_mean()
    }

    #[getter]
    fn worst_balance(&self) -> f64 {
        self.r.run.worst_balance
    }

    #[getter]
    fn events_count(&self) -> u64 {
        self.r.run.events
    }

    #[getter]
    fn device(&self) -> String {
        self.r.device.clone()
    }

    #[getter]
    fn transport_seconds(&self) -> f64 {
        self.r.transport_seconds
    }
}

/// `warpdrive em run GDML`: `events` showers of a `primary` of kinetic `energy` MeV from
/// `position` [mm] along `direction` in the detector of a GDML file, with a uniform `field` [T]
/// and hits in the `sensitive` logical volumes; `delta_chord`, `delta_intersection` [mm] and
/// `field_epsilon` the curved path's accuracy (`None`: the library's defaults).
#[pyfunction]
#[pyo3(signature = (gdml, primary, energy, position, direction, events, seed, cut_mm, field, field_map, sensitive, device, threads, progress, delta_chord=None, delta_intersection=None, field_epsilon=None))]
#[allow(clippy::too_many_arguments)]
pub fn em_detector(
    py: Python<'_>,
    gdml: PathBuf,
    primary: &str,
    energy: f64,
    position: Vec<f64>,
    direction: Vec<f64>,
    events: Count,
    seed: Count,
    cut_mm: f64,
    field: Vec<f64>,
    field_map: Option<PathBuf>,
    sensitive: Vec<String>,
    device: &str,
    threads: Option<Count>,
    progress: Option<&Bound<'_, PyAny>>,
    delta_chord: Option<f64>,
    delta_intersection: Option<f64>,
    field_epsilon: Option<f64>,
) -> PyResult<DetectorResult> {
    let opts = DetectorOptions {
        primary: primary.parse().map_err(|e| errors::param(&e))?,
        energy,
        position_mm: engine::three("position", &position).map_err(|e| errors::engine(&e))?,
        direction: engine::three("direction", &direction).map_err(|e| errors::engine(&e))?,
        events: errors::count("events", events)?,
        seed: errors::count("seed", seed)?,
        cut_mm,
        field_t: engine::three("field", &field).map_err(|e| errors::engine(&e))?,
        field_map,
        sensitive,
        accuracy: warpdrive_em::field::propagate::FieldAccuracy::with(delta_chord, delta_intersection, field_epsilon),
    };
    let (ctl, notes) = control(device, threads, false)?;
    let req = DetectorShower::new(&gdml, &opts).map_err(|e| errors::engine(&e))?;
    let r = run(py, &ctl, &notes, progress, || req.run(&ctl))?;
    Ok(DetectorResult {
        r,
        inputs: req.inputs().to_vec(),
    })
}
