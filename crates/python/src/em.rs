//! `warpdrive.em`: the Klein–Nishina mini-app (`warpdrive em`). Later EM problems (showers,
//! calorimeters) get their own functions beside `em_run`.

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
    let (r, device) = crate::run::run(py, threads, progress, tracks, |p| match &gpus {
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
