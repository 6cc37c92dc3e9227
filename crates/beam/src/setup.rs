//! From user options to a tracking set-up: the reference particle and the back end of a device
//! choice. Shared by `warpdrive beam track` and the Python package's `Lattice.track`.

use crate::beam::{Particles, Reference, ELECTRON_MASS_EV, PROTON_MASS_EV};
use crate::gpu::{GpuBackend, GpuOptions};
use crate::lsc::Histogram;
use crate::program::Program;
use crate::track::{Backend, CpuBackend};

/// The reference particle: `particle` (electron/e, proton/p) and its momentum, βγ (`p_central`)
/// unless `momentum_mev` [MeV/c] is given.
pub fn reference(particle: &str, p_central: f64, momentum_mev: Option<f64>) -> Result<Reference, String> {
    let mass_ev = match particle {
        "electron" | "e" => ELECTRON_MASS_EV,
        "proton" | "p" => PROTON_MASS_EV,
        o => return Err(format!("--particle {o}: expected electron or proton")),
    };
    let p_central = match momentum_mev {
        Some(mev) => mev * 1e6 / mass_ev,
        None => p_central,
    };
    if !(p_central.is_finite() && p_central > 0.0) {
        return Err(format!("reference momentum must be positive (got β0γ0 = {p_central})"));
    }
    Ok(Reference { mass_ev, p_central })
}

/// `--histogram`.
pub fn histogram(s: &str) -> Result<Histogram, String> {
    Histogram::parse(s).ok_or_else(|| format!("--histogram {s}: expected sort, block-atomic or block-sort-scan"))
}

/// What a back end is made of besides the program and the particles.
#[derive(Clone, Debug)]
pub struct BackendOptions {
    /// GPU ordinals of the device choice (`None`: the CPU on the current rayon pool).
    pub devices: Option<Vec<usize>>,
    pub precise: bool,
    pub aperture: f64,
    pub histogram: Histogram,
    pub per_element: bool,
    pub min_blocks: u32,
}

/// A back end for the device choice: the CPU, or one GPU (beam tracking uses one device).
/// Returns it with the device's description.
pub fn make_backend(
    program: &Program,
    particles: Particles,
    reference: Reference,
    o: &BackendOptions,
) -> Result<(Box<dyn Backend>, String), String> {
    match &o.devices {
        None => Ok((
            Box::new(CpuBackend {
                particles,
                reference,
                aperture: o.aperture,
                histogram: o.histogram,
            }),
            format!("cpu ({} threads)", rayon::current_num_threads()),
        )),
        Some(d) => {
            if d.len() != 1 {
                return Err("beam tracking runs on one GPU; use --device cuda:N".into());
            }
            let g = GpuBackend::new(
                program,
                &particles,
                reference,
                GpuOptions {
                    device: d[0],
                    precise: o.precise,
                    per_element: o.per_element,
                    histogram: o.histogram,
                    aperture: o.aperture,
                    min_blocks: o.min_blocks,
                },
            )
            .map_err(|e| e.to_string())?;
            let name = format!("cuda:{} ({})", d[0], g.gpu().name);
            Ok((Box::new(g), name))
        }
    }
}
