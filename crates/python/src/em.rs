//! `warpdrive.em`: the Klein–Nishina mini-app (`warpdrive em`, [`em_run`]) and EM showers in a
//! layered calorimeter (`warpdrive em testem3|calorimeter`, [`em_shower`]).

use crate::errors;
use pyo3::prelude::*;
use warpdrive_em::material::Material;
use warpdrive_em::physics::PhysicsList;
use warpdrive_em::transport::{run, RunOptions, RunResult, TallyGrid};

/// The result of one run: integrals, the depth profile and the checksum the CLI prints.
#[pyclass(module = "warpdrive._warpdrive", frozen)]
pub struct EmRun {
    r: RunResult,
    grid: TallyGrid,
    device: String,
    material: String,
}

#[pymethods]
impl EmRun {
    /// `edep.parquet`'s columns as (name, array) pairs.
    fn profile<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, crate::arrow_c::ArrowTable>> {
        crate::photon::columns(py, warpdrive_em::output::profile_table(&self.grid, &self.r, &[]))
    }

    /// Energy deposited beyond depth `z` [cm], MeV per primary.
    fn energy_beyond(&self, z: f64) -> f64 {
        self.r.energy_beyond(&self.grid, z)
    }

    #[getter]
    fn mean_depth(&self) -> f64 {
        self.r.mean_depth()
    }

    #[getter]
    fn checksum(&self) -> String {
        self.r.checksum()
    }

    #[getter]
    fn tracks(&self) -> u64 {
        self.r.tracks
    }

    #[getter]
    fn steps(&self) -> u64 {
        self.r.steps
    }

    #[getter]
    fn secondaries(&self) -> u64 {
        self.r.secondaries
    }

    #[getter]
    fn retries(&self) -> u64 {
        self.r.retries
    }

    #[getter]
    fn device(&self) -> String {
        self.device.clone()
    }

    #[getter]
    fn material(&self) -> String {
        self.material.clone()
    }
}

/// `warpdrive em`: `tracks` photons of `energy` MeV along +z in `material` (a built-in name or
/// a TOML file), Compton scattering only, energy deposition tallied in depth bins.
#[pyfunction]
#[pyo3(signature = (energy, tracks, seed, material, tally_front, tally_width, tally_bins, device, threads, progress))]
#[allow(clippy::too_many_arguments)]
pub fn em_run(
    py: Python<'_>,
    energy: f64,
    tracks: u64,
    seed: u64,
    material: &str,
    tally_front: f64,
    tally_width: f64,
    tally_bins: usize,
    device: &str,
    threads: Option<usize>,
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<EmRun> {
    let material = Material::from_name_or_file(material).map_err(|e| errors::input(&e))?;
    let grid = TallyGrid::new(tally_front, tally_width, tally_bins).map_err(errors::value)?;
    let opts = RunOptions::new(energy, tracks, seed, grid).map_err(errors::value)?;
    let gpus = crate::run::devices(device)?;
    let physics = PhysicsList::compton_only(&material);
    let (r, device) = crate::run::legacy(py, threads, progress, tracks, |p| match &gpus {
        None => Ok((run(&physics, &opts, p), format!("cpu ({} threads)", rayon::current_num_threads()))),
        Some(d) => {
            warpdrive_em::gpu::run_devices(&physics, &opts, d, p).map(|(r, st)| (r, format!("{} ({} registers)", st.device, st.registers)))
        }
    })?
    .map_err(|e| errors::gpu(&e))?;
    Ok(EmRun {
        r,
        grid,
        device,
        material: material.name.clone(),
    })
}

/// The result of an EM shower run (`warpdrive em testem3` / `em calorimeter`).
#[pyclass(module = "warpdrive._warpdrive", frozen)]
pub struct ShowerResult {
    run: warpdrive_em::shower::run::ShowerRun,
    phys: warpdrive_em::shower::transport::ShowerPhysics,
    device: String,
}

#[pymethods]
impl ShowerResult {
    /// `profile.parquet`'s columns.
    fn profile<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, crate::arrow_c::ArrowTable>> {
        crate::photon::columns(py, warpdrive_em::shower::output::profile_table(&self.run, &self.phys, &[]))
    }

    /// `events.parquet`'s columns.
    fn events<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, crate::arrow_c::ArrowTable>> {
        crate::photon::columns(py, warpdrive_em::shower::output::events_table(&self.run, &self.phys, &[]))
    }

    /// Per material: (name, mean [MeV], error of the mean [MeV], RMS [MeV]).
    fn materials(&self) -> Vec<(String, f64, f64, f64)> {
        self.run
            .per_material(&self.phys)
            .into_iter()
            .map(|m| (m.name, m.edep_mean_mev, m.edep_mean_error_mev, m.edep_rms_mev))
            .collect()
    }

    /// Mean created γ, e⁻, e⁺ per event.
    fn created(&self) -> [f64; 3] {
        self.run.created()
    }

    /// Mean created secondaries per event by process: (process, number).
    fn created_by(&self) -> Vec<(String, f64)> {
        warpdrive_em::shower::transport::CREATORS
            .iter()
            .zip(self.run.created_by())
            .map(|(k, v)| ((*k).to_string(), v))
            .collect()
    }

    /// Mean charged and neutral steps per event.
    fn steps(&self) -> (f64, f64) {
        self.run.steps()
    }

    /// Mean charged track length per event per material [cm]: (name, length).
    fn track_length(&self) -> Vec<(String, f64)> {
        self.phys
            .calorimeter
            .materials
            .iter()
            .map(|m| m.name.clone())
            .zip(self.run.track_length())
            .collect()
    }

    #[getter]
    fn escaped(&self) -> f64 {
        self.run.escaped()
    }

    #[getter]
    fn worst_balance(&self) -> f64 {
        self.run.worst_balance()
    }

    #[getter]
    fn checksum(&self) -> String {
        format!("{:016x}", self.run.checksum())
    }

    #[getter]
    fn events_count(&self) -> usize {
        self.run.events.len()
    }

    #[getter]
    fn calorimeter(&self) -> String {
        self.phys.calorimeter.name.clone()
    }

    #[getter]
    fn device(&self) -> String {
        self.device.clone()
    }
}

/// `warpdrive em testem3` (`calorimeter` None) or `em calorimeter FILE`: `events` events of a
/// `primary` ("e-", "e+", "gamma") of kinetic `energy` MeV, production cut `cut_mm` [mm].
#[pyfunction]
#[pyo3(signature = (calorimeter, primary, energy, events, seed, cut_mm, device, threads, progress, precise=false))]
#[allow(clippy::too_many_arguments)]
pub fn em_shower(
    py: Python<'_>,
    calorimeter: Option<&str>,
    primary: &str,
    energy: f64,
    events: u64,
    seed: u64,
    cut_mm: f64,
    device: &str,
    threads: Option<usize>,
    progress: Option<&Bound<'_, PyAny>>,
    precise: bool,
) -> PyResult<ShowerResult> {
    use warpdrive_em::shower::{cuts::RangeCuts, geometry::Calorimeter, tables::TableOptions, transport, Particle};
    let particle = match primary {
        "e-" | "electron" => Particle::Electron,
        "e+" | "positron" => Particle::Positron,
        "gamma" | "photon" => Particle::Gamma,
        _ => return Err(errors::value(format!("primary '{primary}': use e-, e+ or gamma"))),
    };
    if !(energy.is_finite() && energy > 0.0 && energy <= 1e7) {
        return Err(errors::value(format!("energy {energy} MeV: must be in (0, 1e7] MeV")));
    }
    if !(cut_mm.is_finite() && cut_mm > 0.0 && cut_mm <= 1e4) {
        return Err(errors::value(format!("cut_mm {cut_mm}: must be in (0, 1e4] mm")));
    }
    if events == 0 {
        return Err(errors::value("events must be at least 1".to_string()));
    }
    let gpus = crate::run::devices(device)?;
    let cal = match calorimeter {
        Some(f) => Calorimeter::from_toml(std::path::Path::new(f)).map_err(|e| errors::input(&e))?,
        None => Calorimeter::testem3(),
    };
    warpdrive_em::shower::run::check_event_count(&cal, events, "events").map_err(|e| errors::value(e.to_string()))?;
    let prim = transport::Primary::testem3(particle, energy);
    let (run, phys, device) = crate::run::legacy(py, threads, progress, events, |p| {
        let phys = transport::ShowerPhysics::build(cal, RangeCuts::uniform(cut_mm / 10.0), TableOptions::default());
        match &gpus {
            None => {
                let r = warpdrive_em::shower::run::run(&phys, &prim, events, seed, p);
                Ok((r, phys, format!("cpu ({} threads)", rayon::current_num_threads())))
            }
            Some(d) => {
                let opts = warpdrive_em::shower::gpu::GpuShowerOptions {
                    precise,
                    ..Default::default()
                };
                warpdrive_em::shower::gpu::run_devices(&phys, &prim, events, seed, d, p, &opts)
            }
            .map(|(r, st)| (r, phys, st.device)),
        }
    })?
    .map_err(|e| errors::gpu(&e))?;
    Ok(ShowerResult { run, phys, device })
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
