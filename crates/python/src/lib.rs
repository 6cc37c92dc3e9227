//! `warpdrive._warpdrive`: the native part of the `warpdrive` Python package (DESIGN.md §2:
//! bindings only, no physics). Every function here calls the library functions the CLI calls;
//! the Python modules in `python/warpdrive/` shape arguments and results (pyarrow tables).

use pyo3::prelude::*;

mod arrow_c;
mod beam;
mod em;
mod errors;
mod photon;
mod run;
mod saved;
mod sky;
mod spline;
mod state;

/// Look for prebuilt kernel images (`warpdrive doctor --prebuild`) in `dir` first: the package
/// calls this with its own `kernels/` directory when the wheel holds one.
#[pyfunction]
fn set_prebuilt_kernels(dir: std::path::PathBuf) {
    warpdrive_core::kernels::set_prebuilt_dir(dir);
}

#[pymodule]
fn _warpdrive(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("Cancelled", m.py().get_type::<errors::Cancelled>())?;
    m.add_class::<spline::SplineTable>()?;
    m.add_class::<arrow_c::ArrowTable>()?;
    m.add_class::<photon::Detector>()?;
    m.add_class::<sky::SkyRun>()?;
    m.add_class::<sky::SkyInjection>()?;
    m.add_class::<beam::BeamLattice>()?;
    m.add_class::<beam::BeamParticles>()?;
    m.add_function(wrap_pyfunction!(beam::beam_gaussian, m)?)?;
    m.add_function(wrap_pyfunction!(beam::beam_particles, m)?)?;
    m.add_class::<em::EmRun>()?;
    m.add_class::<em::EmTally>()?;
    m.add_class::<saved::SavedOutput>()?;
    m.add_function(wrap_pyfunction!(em::em_run, m)?)?;
    m.add_class::<em::ShowerResult>()?;
    m.add_function(wrap_pyfunction!(em::em_shower, m)?)?;
    m.add_function(wrap_pyfunction!(em::em_merge, m)?)?;
    m.add_class::<em::DetectorResult>()?;
    m.add_function(wrap_pyfunction!(em::em_detector, m)?)?;
    m.add_function(wrap_pyfunction!(beam::beam_merge, m)?)?;
    m.add_function(wrap_pyfunction!(beam::beam_run, m)?)?;
    m.add_function(wrap_pyfunction!(em::em_testem3_reference, m)?)?;
    m.add_function(wrap_pyfunction!(em::em_materials, m)?)?;
    m.add("BEAM_DEFAULT_MIN_BLOCKS", warpdrive_beam::gpu::DEFAULT_MIN_BLOCKS)?;
    m.add_function(wrap_pyfunction!(sky::sky_autocorr, m)?)?;
    m.add_function(wrap_pyfunction!(sky::sky_merge, m)?)?;
    m.add_function(wrap_pyfunction!(sky::sky_inject, m)?)?;
    m.add_function(wrap_pyfunction!(sky::sky_merge_injection, m)?)?;
    m.add_function(wrap_pyfunction!(spline::spline_fit, m)?)?;
    m.add_function(wrap_pyfunction!(spline::spline_unfold, m)?)?;
    m.add_function(wrap_pyfunction!(spline::spline_unfold_events, m)?)?;
    m.add_function(wrap_pyfunction!(spline::spline_merge_events, m)?)?;
    m.add_class::<spline::UnfoldRun>()?;
    m.add_function(wrap_pyfunction!(spline::spline_simulate, m)?)?;
    m.add_class::<spline::SimulatedEvent>()?;
    m.add_function(wrap_pyfunction!(photon::ppc_run, m)?)?;
    m.add_function(wrap_pyfunction!(photon::photon_merge, m)?)?;
    m.add_function(wrap_pyfunction!(photon::photon_tabulate, m)?)?;
    m.add_function(wrap_pyfunction!(photon::ppc_hits, m)?)?;
    m.add("PHOTON_PARTICLE_ALIASES", photon::particle_aliases())?;
    m.add_function(wrap_pyfunction!(set_prebuilt_kernels, m)?)?;
    Ok(())
}
