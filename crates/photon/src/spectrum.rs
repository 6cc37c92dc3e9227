//! Wavelength spectra and DOM sensitivities: `wv.dat` (cumulative Cherenkov × acceptance
//! spectrum), `wv.rde` (high-QE ratio), `as.dat` (angular sensitivity polynomial). Spec §3.1.

use std::path::Path;
use warpdrive_core::error::{data_lines, parse_f64, read_text};
use warpdrive_core::InputError;

/// `wv.dat`: (cumulative probability, wavelength [nm]) pairs, from 0 to 1, strictly increasing.
#[derive(Clone, Debug, PartialEq)]
pub struct Spectrum {
    pub cdf: Vec<f64>,
    pub wavelength: Vec<f64>,
}

impl Spectrum {
    pub fn read(path: &Path) -> Result<Self, InputError> {
        let text = read_text(path)?;
        let (mut cdf, mut wavelength) = (Vec::new(), Vec::<f64>::new());
        for (line, l) in data_lines(&text) {
            let mut t = l.split_whitespace();
            let p = parse_f64(path, line, "cumulative", t.next())?;
            let w = parse_f64(path, line, "wavelength", t.next())?;
            if let Some(&prev) = cdf.last() {
                if p <= prev {
                    return Err(InputError::new(path, line, format!("{p} not increasing")).field("cumulative"));
                }
                if w <= *wavelength.last().unwrap_or(&0.0) {
                    return Err(InputError::new(path, line, format!("{w} not increasing")).field("wavelength"));
                }
            }
            cdf.push(p);
            wavelength.push(w);
        }
        if cdf.len() < 2 {
            return Err(InputError::file(path, "needs at least two lines"));
        }
        if cdf[0] != 0.0 || (cdf[cdf.len() - 1] - 1.0).abs() > 1e-6 {
            return Err(InputError::file(path, "cumulative column must run from 0 to 1"));
        }
        Ok(Self { cdf, wavelength })
    }

    /// The spectrum PPC ships as `wv.che` (Cherenkov × nominal DOM acceptance), generated here as
    /// the built-in default: Frank–Tamm 1/λ² weighted by a smooth acceptance curve between
    /// 265 and 675 nm. Used only when no ice directory is given.
    pub fn builtin() -> Self {
        // Acceptance model: a raised-cosine band 300–600 nm with tails (dimensionless shape).
        let acc = |l: f64| {
            let x = ((l - 420.0) / 180.0).clamp(-1.0, 1.0);
            (0.5 * (1.0 + (std::f64::consts::PI * x).cos())).powf(1.5)
        };
        let ws: Vec<f64> = (0..=41).map(|i| 265.0 + 10.0 * f64::from(i)).collect();
        let mut cdf = vec![0.0];
        for w in ws.windows(2) {
            let m = 0.5 * (w[0] + w[1]);
            cdf.push(cdf.last().unwrap() + acc(m) / (m * m));
        }
        let tot = *cdf.last().unwrap();
        cdf.iter_mut().for_each(|c| *c /= tot);
        Self { cdf, wavelength: ws }
    }
}

/// Largest relative DOM efficiency accepted from eff-f2k (RDE) and from wv.rde (ratio): the
/// ice models' values are 0.7–1.94; every photon budget scales with the largest, so a typo such as
/// 1e10 would turn a run of seconds into one of years (found by the parser property tests).
pub const MAX_RDE: f64 = 10.0;

/// `wv.rde`: (wavelength [nm], ratio) for high-QE DOMs (eff-f2k type 1).
#[derive(Clone, Debug, PartialEq)]
pub struct RdeRatio {
    pub wavelength: Vec<f64>,
    pub ratio: Vec<f64>,
}

impl RdeRatio {
    /// Ratio 1 at every wavelength: the high-QE type of a detector without `wv.rde` (one type).
    #[must_use]
    pub fn unit() -> Self {
        Self {
            wavelength: vec![0.0],
            ratio: vec![1.0],
        }
    }

    pub fn read(path: &Path) -> Result<Self, InputError> {
        let text = read_text(path)?;
        let (mut wavelength, mut ratio) = (Vec::<f64>::new(), Vec::new());
        for (line, l) in data_lines(&text) {
            let mut t = l.split_whitespace();
            let w = parse_f64(path, line, "wavelength", t.next())?;
            if wavelength.last().is_some_and(|&p| w <= p) {
                return Err(InputError::new(path, line, "not increasing").field("wavelength"));
            }
            wavelength.push(w);
            let r = parse_f64(path, line, "ratio", t.next())?;
            if !(0.0..=MAX_RDE).contains(&r) {
                return Err(InputError::new(path, line, format!("{r} is outside 0 to {MAX_RDE}")).field("ratio"));
            }
            ratio.push(r);
        }
        if wavelength.is_empty() {
            return Err(InputError::file(path, "empty"));
        }
        Ok(Self { wavelength, ratio })
    }

    #[must_use]
    pub fn at(&self, l: f64) -> f64 {
        if self.wavelength.len() == 1 {
            return self.ratio[0];
        }
        let k = self.wavelength.partition_point(|&w| w <= l).clamp(1, self.wavelength.len() - 1) - 1;
        let f = ((l - self.wavelength[k]) / (self.wavelength[k + 1] - self.wavelength[k])).clamp(0.0, 1.0);
        self.ratio[k] * (1.0 - f) + self.ratio[k + 1] * f
    }

    #[must_use]
    pub fn max(&self) -> f64 {
        self.ratio.iter().copied().fold(f64::MIN, f64::max)
    }
}

/// `as.dat`: angular sensitivity (spec §3.1). `mas` is the accept/reject envelope; the
/// acceptance at x = cos η (photon direction · DOM axis) is Σ sᵢ xⁱ. When `mas` = 0 the file
/// describes "surface sensitivity": accept if the impact point's cosine exceeds `coeffs[0]`.
#[derive(Clone, Debug, PartialEq)]
pub struct AngularSensitivity {
    pub mas: f64,
    pub coeffs: Vec<f64>,
}

impl AngularSensitivity {
    pub fn read(path: &Path) -> Result<Self, InputError> {
        let text = read_text(path)?;
        let mut v = Vec::new();
        for (line, l) in data_lines(&text) {
            v.push(parse_f64(
                path,
                line,
                if v.is_empty() { "max" } else { "coefficient" },
                l.split_whitespace().next(),
            )?);
        }
        if v.len() < 2 {
            return Err(InputError::file(path, "needs the maximum and at least one coefficient"));
        }
        if v[0] < 0.0 {
            return Err(InputError::new(path, 1, "must not be negative").field("max"));
        }
        Ok(Self {
            mas: v[0],
            coeffs: v[1..].to_vec(),
        })
    }

    /// Isotropic unit acceptance (built-in default).
    pub fn flat() -> Self {
        Self {
            mas: 1.0,
            coeffs: vec![1.0],
        }
    }

    pub fn surface_mode(&self) -> bool {
        self.mas == 0.0
    }

    /// Σ sᵢ xⁱ (Horner).
    #[must_use]
    pub fn acceptance(&self, x: f64) -> f64 {
        self.coeffs.iter().rev().fold(0.0, |acc, c| acc * x + c)
    }

    /// The envelope used in the photon budget: `mas`, or 1 in surface mode.
    pub fn envelope(&self) -> f64 {
        if self.surface_mode() {
            1.0
        } else {
            self.mas
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_data::{data_dir, scratch};

    #[test]
    fn spectrum_reads_and_builtin_shape() {
        let s = Spectrum::read(&data_dir().join("ice/spice_3.2.1/wv.dat")).unwrap();
        assert_eq!(s.cdf.len(), 42);
        assert_eq!((s.cdf[0], s.wavelength[0]), (0.0, 265.0));
        assert_eq!((s.cdf[41], s.wavelength[41]), (1.0, 675.0));
        // The median lies in the blue: the step where the cumulative passes 0.5.
        let median = |s: &Spectrum| s.wavelength[s.cdf.partition_point(|&c| c < 0.5)];
        assert!((350.0..460.0).contains(&median(&s)), "median {}", median(&s));
        let b = Spectrum::builtin();
        assert!(b.cdf.windows(2).all(|w| w[0] <= w[1]) && b.cdf[0] == 0.0 && (b.cdf[41] - 1.0).abs() < 1e-12);
        assert!((median(&b) - 400.0).abs() < 60.0, "{}", median(&b));
    }

    #[test]
    fn angular_sensitivity_polynomial() {
        let a = AngularSensitivity::read(&data_dir().join("ice/spice_3.2.1/as.dat")).unwrap();
        assert_eq!(a.mas, 0.67);
        assert_eq!(a.coeffs.len(), 11);
        // Head-on (x = +1): Σ s_i; from behind (x = −1): alternating sum ≈ 0.
        let sum: f64 = a.coeffs.iter().sum();
        assert!((a.acceptance(1.0) - sum).abs() < 1e-12);
        assert!(a.acceptance(-1.0).abs() < 1e-3);
        assert!(a.acceptance(1.0) < a.mas, "envelope bounds the acceptance");
        for x in [-1.0, -0.5, 0.0, 0.3, 0.8, 1.0] {
            assert!(a.acceptance(x) <= a.mas + 1e-9);
        }
    }

    #[test]
    fn rde_and_errors() {
        let r = RdeRatio::read(&data_dir().join("ice/wavelength/wv.rde")).unwrap();
        assert_eq!(r.at(265.0), 1.0);
        assert!((r.at(270.0) - 0.5 * (1.0 + 1.93958)).abs() < 1e-9);
        let p = scratch("wv-bad.dat", "0 300\n0.5 400\n0.4 500\n");
        assert!(Spectrum::read(&p)
            .unwrap_err()
            .to_string()
            .contains("wv-bad.dat:3: field 'cumulative'"));
    }
}
