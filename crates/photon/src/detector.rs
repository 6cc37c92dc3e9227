//! Everything fixed for a run (params): ice, geometry, collision index, sensitivities and the
//! photon yield normalisation, built and validated once from a PPC ice directory or from the
//! built-in defaults.

use std::path::PathBuf;
use warpdrive_core::InputError;

use crate::collision::DomIndex;
use crate::config::Config;
use crate::geometry::Geometry;
use crate::ice::Layers;
use crate::medium::Medium;
use crate::source::{Yield, DPPM};
use crate::spectrum::{AngularSensitivity, RdeRatio, Spectrum};
use crate::tilt::Tilt;

/// Where the detector description comes from and the PPC-style overrides.
#[derive(Clone, Debug, Default)]
pub struct DetectorOptions {
    /// PPC ice directory (PPCTABLESDIR); `None` = built-in homogeneous ice.
    pub ice_dir: Option<PathBuf>,
    /// Geometry file; `None` = `<ice_dir>/geo-f2k` if present, else the generated detector.
    pub geometry: Option<PathBuf>,
    /// OVSZ: oversize factor override.
    pub oversize: Option<u32>,
    /// WFLA: single wavelength [nm] instead of the wv.dat spectrum.
    pub wavelength: Option<f64>,
    /// BFRM / ABSM overrides of the model flags.
    pub bfrm: Option<u8>,
    pub absm: Option<bool>,
    /// PPCHOLEICE: angular sensitivity file instead of `<ice_dir>/as.dat`.
    pub angular: Option<PathBuf>,
}

/// Built-in homogeneous ice: effective scattering b_e(400) = 0.042 /m (≈ 24 m) and absorption
/// a(400) = 0.0083 /m (≈ 120 m), typical of the clear ice below 2100 m.
pub const BUILTIN_BE400: f64 = 0.042;
pub const BUILTIN_A400: f64 = 0.0083;

#[derive(Clone, Debug)]
pub struct Detector {
    /// The ice directory, or "built-in".
    pub ice: String,
    pub cfg: Config,
    pub geometry: Geometry,
    pub index: DomIndex,
    pub medium: Medium,
    pub angular: AngularSensitivity,
    pub rde_ratio: Option<RdeRatio>,
    /// Largest RDE (× wv.rde ratio for high-QE modules): the acceptance envelope.
    pub rde_max: f64,
    pub yield_: Yield,
    /// What was read, in words, and options present but not simulated.
    pub description: Vec<String>,
    pub unsupported: Vec<String>,
}

impl Detector {
    pub fn build(opts: &DetectorOptions) -> Result<Self, InputError> {
        let mut description = Vec::new();
        let mut unsupported = Vec::new();
        let (mut cfg, layers, spectrum, angular, rde_ratio, tilt_dir) = match &opts.ice_dir {
            Some(dir) => {
                if !dir.is_dir() {
                    return Err(InputError::file(dir, "ice directory not found"));
                }
                let cfg = Config::read(&dir.join("cfg.txt"))?;
                let layers = Layers::read_dir(dir, opts.bfrm, opts.absm)?;
                let spectrum = if opts.wavelength.is_some() {
                    Spectrum::builtin()
                } else {
                    Spectrum::read(&dir.join("wv.dat"))?
                };
                let as_path = opts.angular.clone().unwrap_or_else(|| dir.join("as.dat"));
                let angular = AngularSensitivity::read(&as_path)?;
                let rde_path = dir.join("wv.rde");
                let rde_ratio = if rde_path.is_file() {
                    Some(RdeRatio::read(&rde_path)?)
                } else {
                    None
                };
                for r in &layers.rows {
                    if r.log_k != [0.0, 0.0] {
                        unsupported.push("per-layer anisotropy columns of icemodel.dat are not simulated".to_string());
                        break;
                    }
                }
                unsupported.extend(cfg.unsupported());
                description.push(format!("ice: {} ({} layers of {} m)", dir.display(), layers.rows.len(), layers.dh));
                (cfg, layers, spectrum, angular, rde_ratio, Some(dir.clone()))
            }
            None => {
                description.push(format!(
                    "ice: built-in homogeneous (b_e(400) = {BUILTIN_BE400} /m, a(400) = {BUILTIN_A400} /m)"
                ));
                (
                    Config::default(),
                    Layers::homogeneous(BUILTIN_BE400, BUILTIN_A400),
                    Spectrum::builtin(),
                    AngularSensitivity::flat(),
                    None,
                    None,
                )
            }
        };
        if let Some(o) = opts.oversize {
            if o == 0 {
                return Err(InputError::file("OVSZ", "oversize must be at least 1"));
            }
            cfg.oversize = o;
        }
        let geo_path = opts
            .geometry
            .clone()
            .or_else(|| tilt_dir.as_ref().map(|d| d.join("geo-f2k")).filter(|p| p.is_file()));
        let mut geometry = match &geo_path {
            Some(p) => Geometry::read(p)?,
            None => Geometry::icecube_like(),
        };
        if let Some(dir) = &tilt_dir {
            let eff = dir.join("eff-f2k");
            if eff.is_file() {
                geometry.apply_efficiencies(&eff)?;
            }
        }
        description.push(format!("geometry: {} ({} modules)", geometry.source, geometry.doms.len()));
        let tilt = match &tilt_dir {
            Some(d) => Tilt::read_dir(d, |s| geometry.string_xy(s))?,
            None => Tilt::None,
        };
        let medium = Medium::new(&layers, &cfg, &spectrum, opts.wavelength, tilt);
        let rat_max = rde_ratio.as_ref().map_or(1.0, RdeRatio::max);
        let rde_max = geometry
            .doms
            .iter()
            .map(|d| d.rde * if d.high_qe { rat_max } else { 1.0 })
            .fold(0.0, f64::max)
            .max(f64::MIN_POSITIVE);
        // Under WFLA PPC integrates the line over its narrowed grid only (photon-ppc-phase2.md §5).
        let wfla = if opts.wavelength.is_some() {
            crate::medium::wfla_fraction()
        } else {
            1.0
        };
        let ppm = cfg.efficiency * DPPM * angular.envelope() * rde_max * wfla;
        description.push(format!(
            "oversize {}, efficiency {}, ppm {:.2} photons/m, f_SL {}, g {}",
            cfg.oversize, cfg.efficiency, ppm, cfg.f_sl, cfg.g
        ));
        let index = DomIndex::new(&geometry, f64::from(cfg.oversize));
        Ok(Self {
            ice: opts
                .ice_dir
                .as_deref()
                .map_or_else(|| "built-in".to_string(), |p| p.display().to_string()),
            yield_: Yield {
                ppm,
                oversize: f64::from(cfg.oversize),
            },
            cfg,
            geometry,
            index,
            medium,
            angular,
            rde_ratio,
            rde_max,
            description,
            unsupported,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_data::data_dir;

    /// Every ice model in shared/data/ice builds into a detector. The bare CLSim-style models
    /// (spice_lea, spice_mie) lack as.dat, wv.dat and geo-f2k, so they borrow spice_3.2.1's
    /// as.dat and the IceCube geometry and run at one wavelength (WFLA), as with PPC.
    #[test]
    fn detector_builds_for_every_shared_model() {
        let ice = data_dir().join("ice");
        for m in ["spice_3.2.1", "spice_bfr-v2", "spice_ftp-v3m"] {
            let d = Detector::build(&DetectorOptions {
                ice_dir: Some(ice.join(m)),
                ..Default::default()
            })
            .unwrap_or_else(|e| panic!("{m}: {e}"));
            assert_eq!(d.geometry.doms.len(), 5160, "{m}");
            assert!(!matches!(d.medium.tilt, crate::tilt::Tilt::None), "{m} has a tilt model");
        }
        for m in ["spice_lea", "spice_mie"] {
            let d = Detector::build(&DetectorOptions {
                ice_dir: Some(ice.join(m)),
                geometry: Some(data_dir().join("geometry/icecube_geo-f2k")),
                angular: Some(ice.join("spice_3.2.1/as.dat")),
                wavelength: Some(400.0),
                ..Default::default()
            })
            .unwrap_or_else(|e| panic!("{m}: {e}"));
            assert!(d.medium.n_layers > 100, "{m}");
        }
        let bfr = Detector::build(&DetectorOptions {
            ice_dir: Some(ice.join("spice_bfr-v2")),
            ..Default::default()
        })
        .unwrap();
        assert!(
            bfr.unsupported.iter().any(|u| u.contains("birefringence")),
            "BFR is reported as not simulated"
        );
        assert!((bfr.rde_max - 1.35).abs() < 1e-12, "high-QE RDE from eff-f2k sets the envelope");
    }
}
