//! `cfg.txt`: the PPC configuration file (spec §3.1), numbers in strict order, `#` comments.

use std::path::Path;
use warpdrive_core::error::{data_lines, parse_f64, read_text};
use warpdrive_core::InputError;

/// Scattering anisotropy of SPICE Lea / 3.x (cfg lines 5–7).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Anisotropy {
    /// Azimuth of the major axis [deg].
    pub azimuth_deg: f64,
    /// Natural logarithms of the coefficients along the major and minor axes.
    pub log_k1: f64,
    pub log_k2: f64,
}

/// Hole ice column around each string (cfg lines 8–12).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HoleIce {
    pub radius_in_dom_radii: f64,
    pub eff_scattering_length: f64,
    pub absorption_length: f64,
    pub f_sl: f64,
    pub g: f64,
}

/// The largest DOM oversize factor accepted, wherever it comes from (cfg.txt line 1, OVSZ,
/// `--oversize`, Python's `oversize=`).
pub const MAX_OVERSIZE: u32 = 1000;

#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// DOM oversize factor xR (rounded to an integer, as PPC does).
    pub oversize: u32,
    pub efficiency: f64,
    /// Fraction of simplified-Liu (SAM) scattering; 0 = pure Henyey–Greenstein.
    pub f_sl: f64,
    /// Mean scattering cosine g.
    pub g: f64,
    pub anisotropy: Option<Anisotropy>,
    pub hole_ice: Option<HoleIce>,
    /// New absorption anisotropy (cfg 13–15): natural logs of k1, k2, kz.
    pub new_abs_anisotropy: Option<[f64; 3]>,
    /// Exponent of the old absorption anisotropy (cfg 16; default 1).
    pub old_abs_scale: f64,
    /// Birefringence parameters (cfg 17–28).
    pub birefringence: Option<Vec<f64>>,
    /// PPC's BFRA and BFRB environment scales of the birefringence parameters (default 1).
    pub bfr_scales: [f64; 2],
}

impl Default for Config {
    /// The built-in default: oversize 5, efficiency 1, f_SL 0.35, g 0.9 (SPICE 3.2.1 values).
    fn default() -> Self {
        Self {
            oversize: 5,
            efficiency: 1.0,
            f_sl: 0.35,
            g: 0.9,
            anisotropy: None,
            hole_ice: None,
            new_abs_anisotropy: None,
            old_abs_scale: 1.0,
            birefringence: None,
            bfr_scales: [1.0, 1.0],
        }
    }
}

impl Config {
    /// Parse `cfg.txt`. Accepts 4, 7, 12, 15, 16 or 28 numbers (the PPC blocks); any other count
    /// is an error naming the incomplete block.
    pub fn read(path: &Path) -> Result<Self, InputError> {
        let text = read_text(path)?;
        let mut v = Vec::new();
        let mut lines = Vec::new();
        for (line, l) in data_lines(&text) {
            for tok in l.split_whitespace() {
                v.push(parse_f64(path, line, &format!("value {}", v.len() + 1), Some(tok))?);
                lines.push(line);
            }
        }
        let line_of = |i: usize| lines.get(i).copied().unwrap_or(0);
        let names = ["oversize", "efficiency", "f_SL", "g"];
        if v.len() < 4 {
            return Err(InputError::file(
                path,
                format!("needs at least 4 numbers ({}), found {}", names.join(", "), v.len()),
            ));
        }
        if ![4, 7, 12, 15, 16, 28].contains(&v.len()) {
            return Err(InputError::file(
                path,
                format!(
                    "{} numbers: PPC blocks end after 4, 7, 12, 15, 16 or 28 values (incomplete block)",
                    v.len()
                ),
            ));
        }
        let oversize = v[0].round();
        if !(1.0..=f64::from(MAX_OVERSIZE)).contains(&oversize) {
            return Err(InputError::new(path, line_of(0), format!("{} must be between 1 and {MAX_OVERSIZE}", v[0])).field("oversize"));
        }
        if v[1] <= 0.0 {
            return Err(InputError::new(path, line_of(1), "must be positive").field("efficiency"));
        }
        // Every photon budget scales with it: a typo such as 1e10 would make a run of seconds one
        // of years (found by the parser property tests; the shared models use 0.94–1.015).
        if v[1] > 10.0 {
            return Err(InputError::new(path, line_of(1), format!("{} is above 10", show(v[1]))).field("efficiency"));
        }
        // Bounds of the remaining blocks, far outside the fitted models' values (property tests:
        // beyond them exp() overflows and a photon's direction or position turns NaN):
        // anisotropy logs |ln k| ≤ 2 (models: ≤ 0.6), old-absorption exponent |x| ≤ 10,
        // birefringence |p| ≤ 1e9 (models: ≤ 1.5e6) with amplitudes p0, p4, p8 at most 1 (≤ 0.08).
        let bounded: [(std::ops::Range<usize>, &str, f64); 4] = [
            (5..7, "anisotropy coefficient (ln k)", 2.0),
            (12..15, "absorption anisotropy (ln k)", 2.0),
            (15..16, "old absorption anisotropy scale", 10.0),
            (16..28, "birefringence parameter", 1e9),
        ];
        for (range, field, max) in bounded {
            for i in range.filter(|&i| i < v.len()) {
                if v[i].abs() > max {
                    return Err(InputError::new(path, line_of(i), format!("|{}| is above {}", show(v[i]), show(max))).field(field));
                }
            }
        }
        for i in [16, 20, 24].into_iter().filter(|&i| i < v.len()) {
            if v[i].abs() > 1.0 {
                return Err(
                    InputError::new(path, line_of(i), format!("amplitude |{}| is above 1", show(v[i]))).field("birefringence parameter")
                );
            }
        }
        if !(0.0..=1.0).contains(&v[2]) {
            return Err(InputError::new(path, line_of(2), "must be in [0, 1]").field("f_SL"));
        }
        if !(v[3] > -1.0 && v[3] < 1.0) {
            return Err(InputError::new(path, line_of(3), "must be in (-1, 1)").field("g"));
        }
        let mut cfg = Config {
            oversize: oversize as u32,
            efficiency: v[1],
            f_sl: v[2],
            g: v[3],
            ..Config::default()
        };
        if v.len() >= 7 {
            cfg.anisotropy = Some(Anisotropy {
                azimuth_deg: v[4],
                log_k1: v[5],
                log_k2: v[6],
            });
        }
        if v.len() >= 12 {
            // The column's parameters matter only with a radius above 0 (photon-ppc-phase2.md §2).
            if v[7] < 0.0 || !v[7].is_finite() {
                return Err(InputError::new(path, line_of(7), "must be ≥ 0 (DOM radii)").field("hole ice radius"));
            }
            if v[7] > 0.0 {
                let checks: [(usize, &str, bool, &str); 5] = [
                    (7, "hole ice radius", v[7] <= 100.0, "must be at most 100 DOM radii"),
                    (8, "hole ice scattering length", v[8] >= 1e-3, "must be at least 1e-3 m"),
                    (9, "hole ice absorption length", v[9] >= 1e-3, "must be at least 1e-3 m"),
                    (10, "hole ice f_SL", (0.0..=1.0).contains(&v[10]), "must be in [0, 1]"),
                    (11, "hole ice g", v[11] > -1.0 && v[11] < 1.0, "must be in (-1, 1)"),
                ];
                if let Some(&(i, field, _, msg)) = checks.iter().find(|c| !c.2) {
                    return Err(InputError::new(path, line_of(i), msg).field(field));
                }
            }
            cfg.hole_ice = Some(HoleIce {
                radius_in_dom_radii: v[7],
                eff_scattering_length: v[8],
                absorption_length: v[9],
                f_sl: v[10],
                g: v[11],
            });
        }
        if v.len() >= 15 {
            cfg.new_abs_anisotropy = Some([v[12], v[13], v[14]]);
        }
        if v.len() >= 16 {
            cfg.old_abs_scale = v[15];
        }
        if v.len() >= 28 {
            cfg.birefringence = Some(v[16..28].to_vec());
        }
        Ok(cfg)
    }

    /// Options present in the file that this version does not simulate. The caller reports them.
    /// (Everything cfg.txt holds is simulated now: hole ice since issue #14, `hole.rs`.)
    pub fn unsupported(&self) -> Vec<String> {
        Vec::new()
    }
}

/// A number for an error message: plain, or in exponent form when very large or small.
fn show(x: f64) -> String {
    if x != 0.0 && !(1e-4..1e6).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_data::{data_dir, scratch};

    #[test]
    fn reads_spice_321() {
        let c = Config::read(&data_dir().join("ice/spice_3.2.1/cfg.txt")).unwrap();
        assert_eq!(c.oversize, 5);
        assert_eq!((c.efficiency, c.f_sl, c.g), (0.94, 0.35, 0.9));
        assert_eq!(
            c.anisotropy.unwrap(),
            Anisotropy {
                azimuth_deg: 130.0,
                log_k1: -0.069,
                log_k2: 0.0345
            }
        );
        assert_eq!(c.old_abs_scale, 1.0);
        assert!(c.unsupported().is_empty());
    }

    #[test]
    fn reads_bfr_v2_birefringence() {
        let c = Config::read(&data_dir().join("ice/spice_bfr-v2/cfg.txt")).unwrap();
        assert_eq!(c.new_abs_anisotropy, Some([0.6, -0.3, -0.3]));
        assert_eq!(c.old_abs_scale, 0.0);
        assert_eq!(c.birefringence.as_ref().unwrap().len(), 12);
        assert!(c.unsupported().is_empty(), "birefringence is simulated");
    }

    #[test]
    fn incomplete_block_and_bad_values_are_errors() {
        let p = scratch("cfg-bad.txt", "5\n0.9\n0.35\n0.9\n130\n");
        assert!(Config::read(&p).unwrap_err().to_string().contains("incomplete block"));
        let p = scratch("cfg-bad2.txt", "5\n0.9\n0.35 # comment\nabc\n");
        let e = Config::read(&p).unwrap_err().to_string();
        assert!(e.contains(":4:") && e.contains("'abc'"), "{e}");
        let p = scratch("cfg-bad3.txt", "5\n0.9\n0.35\n1.2\n");
        assert!(Config::read(&p).unwrap_err().to_string().contains("field 'g'"));
    }

    /// Hole ice (lines 8–12): read, simulated (no warning), its values checked only when on.
    #[test]
    fn hole_ice_lines() {
        let base = "5\n0.9\n0.35\n0.9\n130\n-0.069\n0.0345\n";
        let p = scratch("cfg-hole.txt", &format!("{base}2 0.5 100 0.3 0.8\n"));
        let c = Config::read(&p).unwrap();
        assert_eq!(
            c.hole_ice,
            Some(HoleIce {
                radius_in_dom_radii: 2.0,
                eff_scattering_length: 0.5,
                absorption_length: 100.0,
                f_sl: 0.3,
                g: 0.8
            })
        );
        assert!(c.unsupported().is_empty(), "hole ice is simulated");
        let p = scratch("cfg-hole-bad.txt", &format!("{base}2 0.5 0 0.3 0.8\n"));
        let e = Config::read(&p).unwrap_err().to_string();
        assert!(e.contains("hole ice absorption length") && e.contains(":8:"), "{e}");
        let p = scratch("cfg-hole-neg.txt", &format!("{base}-1 0.5 0 0.3 0.8\n"));
        assert!(Config::read(&p).unwrap_err().to_string().contains("hole ice radius"));
        // Radius 0: the other values are not used and not checked.
        let p = scratch("cfg-hole-off.txt", &format!("{base}0 0 0 0 0\n"));
        assert_eq!(Config::read(&p).unwrap().hole_ice.unwrap().radius_in_dom_radii, 0.0);
    }
}
