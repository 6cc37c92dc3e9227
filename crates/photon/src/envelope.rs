//! The photon budget over DOM types (photon-ppc-phase2.md §4; PPC's "Calculated value of ppm").
//!
//! An ice directory with `wv.rde` and `eff-f2k` rows of type 1 has two DOM types: nominal (0) and
//! high-QE (1), whose wavelength acceptance is the nominal one times the `wv.rde` ratio. Photons
//! are emitted for the *envelope* — at each wavelength the larger of the two types' acceptances,
//! each scaled by the largest RDE among its DOMs — and a hit on a DOM of type t at a photon of
//! wavelength slice n is kept with probability
//!
//!   P = r_t(n) · RDE_dom / RDE_max,t,   r_t(n) = (type t's share of the envelope within slice n),
//!
//! so that each type sees its own spectrum × acceptance while no photon is propagated for
//! nothing at wavelengths where one type dominates. The ppm is efficiency × DPPM × angular
//! envelope × ∫ envelope dλ (spice_ftp-v3m: 2268.22, as PPC prints; with one type the integral
//! is RDE_max and the formula is the one of photon.md §3.4).
//!
//! The envelope is tabulated as PPC tabulates it: the emission spectrum (wv.dat's CDF, or the WFLA
//! smoothstep) becomes a density per step placed at the step centres, interpolated linearly
//! between them (and to zero one step beyond the first and last centre), evaluated at the centres
//! of a grid of 450 bins of 1 nm over 250–700 nm (10 bins over W ± 5 nm under WFLA), constant
//! within a bin. The high-QE density of a step is the nominal one times the mean of the `wv.rde`
//! ratio at the step's two ends.
//!
//! Wavelengths are drawn as PPC draws them, through its inverse of the envelope's cumulative
//! sum (`irde::binf` in PPC's ini.cxx): for a quantile p that lies in grid bin j it returns the
//! position (j − 1) + f, f the fraction of bin j's mass below p — one bin (1 nm) *below* the
//! quantile of the tabulated envelope. A slice's ice properties and refractive index are those at
//! binf((n + ½)/512), its hits' wavelengths uniform between binf(n/512) and binf((n + 1)/512), and a
//! type's share r_t(n) is its mass over those shifted positions divided by the envelope's mass per
//! slice — so even with one DOM type r(n) is not 1: below 1 where the envelope rises (the blue
//! edge), above 1 where it falls (then every hit is kept). We reproduce this because the SPICE ice
//! models are fitted with PPC, so its effective spectrum is part of their calibration: with the
//! plain quantile instead, every model gave 0.4–0.5 % more hits than PPC at 10⁷ hits (issue #29,
//! docs/validation/photon.md). Every DOM-type set-up, one type included, goes through this module.

use crate::spectrum::{RdeRatio, Spectrum};

/// PPC's wavelength grid: `n` bins of `bin` nm from `wmin`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Grid {
    pub wmin: f64,
    pub bin: f64,
    pub n: usize,
}

impl Grid {
    /// 250–700 nm in 450 bins of 1 nm.
    pub const FULL: Grid = Grid {
        wmin: 250.0,
        bin: 1.0,
        n: 450,
    };

    /// WFLA = `w`: W ± 5 nm in 10 bins of 1 nm (photon-ppc-phase2.md §5).
    #[must_use]
    pub fn wfla(w: f64) -> Grid {
        Grid {
            wmin: w - 5.0,
            bin: 1.0,
            n: 10,
        }
    }

    fn centre(&self, k: usize) -> f64 {
        self.wmin + self.bin * (k as f64 + 0.5)
    }
}

/// An emission spectrum as PPC holds it: cumulative fractions at increasing wavelengths [nm].
#[derive(Clone, Debug, PartialEq)]
pub struct EmissionPoints {
    pub cdf: Vec<f64>,
    pub wavelength: Vec<f64>,
}

impl EmissionPoints {
    #[must_use]
    pub fn from_spectrum(s: &Spectrum) -> Self {
        Self {
            cdf: s.cdf.clone(),
            wavelength: s.wavelength.clone(),
        }
    }

    /// The WFLA line: smoothstep CDF 3x² − 2x³ at x = 0, 0.1, …, 1 over W − 10 … W + 10 nm.
    #[must_use]
    pub fn wfla(w: f64) -> Self {
        let x: Vec<f64> = (0..=10).map(|i| 0.1 * i as f64).collect();
        Self {
            cdf: x.iter().map(|x| 3.0 * x * x - 2.0 * x * x * x).collect(),
            wavelength: x.iter().map(|x| w + 10.0 * (2.0 * x - 1.0)).collect(),
        }
    }

    /// Density [1/nm] at the grid's bin centres: ΔF/Δλ per step at the step centre, linear in
    /// between, ramping to 0 one step width beyond the outer centres; `weight(i)` multiplies step i
    /// (between points i and i + 1).
    fn density_on(&self, grid: &Grid, weight: impl Fn(usize) -> f64) -> Vec<f64> {
        let (x, w) = (&self.cdf, &self.wavelength);
        let n = w.len();
        let mut centres = Vec::with_capacity(n + 1);
        let mut values = Vec::with_capacity(n + 1);
        let (blo, bhi) = (w[1] - w[0], w[n - 1] - w[n - 2]);
        centres.push(w[0] + (w[1] - w[0]) / 2.0 - blo);
        values.push(0.0);
        for i in 0..n - 1 {
            let b = w[i + 1] - w[i];
            centres.push(w[i + 1] - b / 2.0);
            values.push((x[i + 1] - x[i]) / b * weight(i));
        }
        centres.push(centres[n - 1] + bhi);
        values.push(0.0);
        let (lo, hi) = (centres[0], centres[n]);
        (0..grid.n)
            .map(|k| {
                let c = grid.centre(k);
                if !(lo < c && c < hi) {
                    return 0.0;
                }
                let j = centres.partition_point(|&z| z < c).clamp(1, n);
                let (c0, c1) = (centres[j - 1], centres[j]);
                values[j - 1] + (values[j] - values[j - 1]) * (c - c0) / (c1 - c0)
            })
            .collect()
    }
}

/// The two DOM types' acceptance on the grid and their envelope.
#[derive(Clone, Debug, PartialEq)]
pub struct Envelope {
    pub grid: Grid,
    /// Per type (0 nominal, 1 high-QE): largest RDE among its DOMs (0: no DOM of that type).
    pub rde_max: [f64; 2],
    /// Per type: density × RDE_max × bin width in each grid bin.
    pub types: [Vec<f64>; 2],
    /// Further types in the same units (multi-PMT module types, `crate::sensors`).
    pub extra: Vec<Vec<f64>>,
    /// max over the types, per grid bin, and its cumulative sum (from 0, `grid.n + 1` values).
    pub env: Vec<f64>,
    cumulative: Vec<f64>,
}

impl Envelope {
    #[must_use]
    pub fn new(points: &EmissionPoints, ratio: &RdeRatio, rde_max: [f64; 2], grid: Grid) -> Self {
        let nominal = points.density_on(&grid, |_| 1.0);
        let z: Vec<f64> = points.wavelength.iter().map(|&w| ratio.at(w)).collect();
        let high = points.density_on(&grid, |i| 0.5 * (z[i] + z[i + 1]));
        let scale = |d: Vec<f64>, r: f64| d.into_iter().map(|v| v * r * grid.bin).collect::<Vec<f64>>();
        let types = [scale(nominal, rde_max[0]), scale(high, rde_max[1])];
        let env: Vec<f64> = types[0].iter().zip(&types[1]).map(|(a, b)| a.max(*b)).collect();
        let mut cumulative = Vec::with_capacity(env.len() + 1);
        cumulative.push(0.0);
        for v in &env {
            cumulative.push(cumulative.last().unwrap_or(&0.0) + v);
        }
        Self {
            grid,
            rde_max,
            types,
            extra: Vec::new(),
            env,
            cumulative,
        }
    }

    /// One DOM type whose largest RDE is `rde_max`: the envelope is its acceptance.
    #[must_use]
    pub fn one_type(points: &EmissionPoints, rde_max: f64, grid: Grid) -> Self {
        Self::new(points, &RdeRatio::unit(), [rde_max, 0.0], grid)
    }

    /// The envelope with more types (each density × RDE_max × bin width on `grid`, in the nominal
    /// type's units): multi-PMT module types (photon-ppc-phase2.md §7).
    #[must_use]
    pub fn with_types(mut self, extra: Vec<Vec<f64>>) -> Self {
        for (k, e) in self.env.iter_mut().enumerate() {
            for t in &extra {
                *e = e.max(t[k]);
            }
        }
        self.cumulative.truncate(1);
        for k in 0..self.env.len() {
            let c = self.cumulative[k] + self.env[k];
            self.cumulative.push(c);
        }
        self.extra = extra;
        self
    }

    /// ∫ envelope dλ relative to the nominal spectrum's integral: the ppm's factor in place of
    /// RDE_max (spice_ftp-v3m: 1.3413).
    #[must_use]
    pub fn integral(&self) -> f64 {
        self.cumulative[self.env.len()]
    }

    /// Position in grid bins of the envelope's quantile `p`, as PPC's `irde::binf` computes it:
    /// with S_k the normalised cumulative mass of bins 0..=k, skip the empty bins at the start,
    /// find the first j with S_j ≥ p and return (j − 1) + (p − S_{j−1})/(S_j − S_{j−1}) — one bin
    /// below the bin that holds p (module docs). Below the first non-empty bin's mass (only where
    /// bin 0 is not empty, the WFLA grid) the formula extrapolates below `wmin`, as PPC's does.
    fn position(&self, p: f64) -> f64 {
        let n = self.env.len();
        let total = self.integral();
        let s = |k: usize| self.cumulative[k + 1] / total;
        let mut j = 1;
        while j + 1 < n && s(j) <= 0.0 {
            j += 1;
        }
        // j − 1 is the last empty bin (or bin 0); search from the bin after it.
        while j + 1 < n && s(j) < p {
            j += 1;
        }
        let (si, sj) = (s(j - 1), s(j));
        (j - 1) as f64 + if sj > si { (p - si) / (sj - si) } else { 0.0 }
    }

    /// Wavelength [nm] of quantile `p` of the envelope, as PPC's `wav(binf(p))` (uniform inside a
    /// grid bin, one bin below the plain quantile: module docs).
    #[must_use]
    pub fn quantile(&self, p: f64) -> f64 {
        self.grid.wmin + self.grid.bin * self.position(p)
    }

    /// Per type, for each of `slices` equal-probability slices of the envelope: the type's share
    /// r_t(n) of the envelope within the slice (1 where the type is the envelope).
    #[must_use]
    pub fn slice_shares(&self, slices: usize) -> [Vec<f64>; 2] {
        [self.share_of(&self.types[0], slices), self.share_of(&self.types[1], slices)]
    }

    /// The share r(n) of the envelope that a type of density `d` (on the grid) holds within each
    /// of `slices` equal-probability slices: its mass between the slice's edges as
    /// [`Self::position`] gives them, over the envelope's mass per slice (PPC's `rat`). Not
    /// clamped: a share above 1 keeps every hit, as PPC's `xrnd() < rat·rde/rmax` does.
    #[must_use]
    pub fn share_of(&self, d: &[f64], slices: usize) -> Vec<f64> {
        let per_slice = self.integral() / slices as f64;
        let mass = |d: &[f64], a: f64, b: f64| -> f64 {
            // ∫ of the piecewise-constant `d` over grid positions [a, b].
            let (ia, ib) = (a.floor() as usize, b.floor() as usize);
            let at = |i: usize| d.get(i).copied().unwrap_or(0.0);
            if ia == ib {
                return at(ia) * (b - a);
            }
            let mut m = at(ia) * (ia as f64 + 1.0 - a) + at(ib) * (b - ib as f64);
            m += d[ia + 1..ib.min(d.len())].iter().sum::<f64>();
            m
        };
        (0..slices)
            .map(|n| {
                let a = self.position(n as f64 / slices as f64);
                let b = self.position((n + 1) as f64 / slices as f64);
                mass(d, a, b) / per_slice
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spectrum::{AngularSensitivity, Spectrum};
    use crate::test_data::data_dir;

    fn ftp() -> (EmissionPoints, RdeRatio, f64) {
        let d = data_dir().join("ice/spice_ftp-v3m");
        let s = Spectrum::read(&d.join("wv.dat")).unwrap();
        let r = RdeRatio::read(&d.join("wv.rde")).unwrap();
        let mas = AngularSensitivity::read(&d.join("as.dat")).unwrap().envelope();
        (EmissionPoints::from_spectrum(&s), r, mas)
    }

    /// PPC's printed ppm for spice_ftp-v3m (4 761 nominal DOMs of RDE 1, 399 high-QE of RDE 1
    /// with wv.rde): 2268.22 ("Calculated value of ppm", reference/ppc_bfr_h100_2026), and 1559.55
    /// under WFLA = 405 nm — the efficiency 1.015 and DPPM 2450.08 of cfg.txt/photon.md.
    #[test]
    fn ppm_of_spice_ftp_v3m_as_ppc_prints() {
        let (pts, r, mas) = ftp();
        let ppm = |e: &Envelope| 1.015 * crate::source::DPPM * mas * e.integral();
        let full = Envelope::new(&pts, &r, [1.0, 1.0], Grid::FULL);
        assert_eq!(format!("{:.2}", ppm(&full)), "2268.22");
        // WFLA: 1559.54499… here, on the rounding edge of PPC's printed 1559.55. PPC computes in
        // f32 (and accumulates the smoothstep's x in steps of 0.1f, ending at 1.0000001), which
        // moves the 7th digit: we ask for the printed value's ±0.005 plus 1e-6 relative.
        let wfla = Envelope::new(&EmissionPoints::wfla(405.0), &r, [1.0, 1.0], Grid::wfla(405.0));
        let v = ppm(&wfla);
        assert!((v - 1559.55).abs() <= 0.005 + 1e-6 * v, "{v}");
    }

    /// With one type the envelope is that type: the integral is RDE_max (the normal ppm) and
    /// 0.680 × RDE_max under WFLA (the share of the line on PPC's narrowed grid). Its shares are
    /// PPC's: the slices' masses one bin low over the mass per slice — below 1 on the rising blue
    /// edge, above 1 on the falling red one, averaging 1 less the last bin's mass.
    #[test]
    fn one_type_reduces_to_the_plain_budget() {
        let (pts, r, _) = ftp();
        let e = Envelope::new(&pts, &r, [1.35, 0.0], Grid::FULL);
        assert!((e.integral() - 1.35).abs() < 1e-9, "{}", e.integral());
        let w = Envelope::new(&EmissionPoints::wfla(405.0), &r, [1.35, 0.0], Grid::wfla(405.0));
        assert!((w.integral() - 1.35 * 0.680).abs() < 1e-12);
        let shares = e.slice_shares(512);
        assert!(shares[1].iter().all(|&s| s == 0.0));
        let s = &shares[0];
        assert!(
            s[0] < 0.9 && s[20] < 0.96 && s[256] > 1.0 && s[511] > 1.03,
            "{} {} {} {}",
            s[0],
            s[20],
            s[256],
            s[511]
        );
        let last = e.env.iter().rposition(|&v| v > 0.0).unwrap();
        let mean = s.iter().sum::<f64>() / 512.0;
        assert!((mean - (1.0 - e.env[last] / e.integral())).abs() < 1e-9, "{mean}");
    }

    /// Regression (issue #14 fix 3): under WFLA PPC narrows the grid to W ± 5 nm in 10 bins of
    /// 1 nm whose densities are the smoothstep line's 2-nm step densities interpolated at the bin
    /// centres, 0.0590, 0.0650, 0.0695, 0.0725, 0.0740 per nm and symmetric (photon-ppc-phase2.md
    /// §5): 0.680 of the line, so the ppm of spice_bfr-v2 at 405 nm is 2282.91 × 0.680 = 1552.38,
    /// as PPC prints.
    #[test]
    fn wfla_line_on_ppcs_narrowed_grid() {
        let w = Envelope::one_type(&EmissionPoints::wfla(405.0), 1.0, Grid::wfla(405.0));
        assert_eq!(w.env.len(), 10);
        for (i, want) in [0.0590, 0.0650, 0.0695, 0.0725, 0.0740].iter().enumerate() {
            assert!(
                (w.env[i] - want).abs() < 1e-12 && (w.env[9 - i] - want).abs() < 1e-12,
                "{:?}",
                w.env
            );
        }
        assert!((w.integral() - 0.680).abs() < 1e-12);
        assert!((2282.91 * w.integral() - 1552.38).abs() < 0.005);
    }

    /// PPC's inverse sits one grid bin below the quantile of the tabulated envelope, computed
    /// here independently from the cumulative sums; under WFLA the line centre moves 1 nm down
    /// (405 → 404 nm) and the lowest quantiles extrapolate below the grid, as PPC's do.
    #[test]
    fn quantiles_one_bin_below_the_envelopes() {
        let d = data_dir().join("ice/spice_3.2.1");
        let s = Spectrum::read(&d.join("wv.dat")).unwrap();
        let e = Envelope::one_type(&EmissionPoints::from_spectrum(&s), 1.0, Grid::FULL);
        let plain = |p: f64| {
            let t = p * e.integral();
            let k = e.cumulative.iter().rposition(|&c| c < t).unwrap();
            e.grid.wmin + k as f64 + (t - e.cumulative[k]) / e.env[k]
        };
        for p in [0.001, 0.1, 0.37, 0.5, 0.8, 0.999] {
            assert!(
                (e.quantile(p) - (plain(p) - 1.0)).abs() < 1e-9,
                "{p}: {} vs {}",
                e.quantile(p),
                plain(p)
            );
        }
        // wv.dat starts at 265 nm: its density ramps from 0 at 260 nm, so PPC's spectrum from 259.
        assert!((e.quantile(0.0) - 259.0).abs() < 1e-9);
        let w = Envelope::one_type(&EmissionPoints::wfla(405.0), 1.0, Grid::wfla(405.0));
        assert!((w.quantile(0.5) - 404.0).abs() < 1e-9);
        assert!((w.quantile(1.0) - 409.0).abs() < 1e-9);
        // The first bin (400–401 nm) holds 0.0590/0.680 of the line: p below that extrapolates
        // with the second bin's density, to 400 − 0.0590/0.0650 nm at p = 0.
        assert!((w.quantile(0.0) - (400.0 - 0.059 / 0.065)).abs() < 1e-9, "{}", w.quantile(0.0));
    }

    /// Quantiles and shares are consistent: drawing slices from the envelope and keeping a
    /// type-t photon with r_t reproduces each type's own spectrum integral.
    #[test]
    fn shares_recover_each_types_integral() {
        let (pts, r, _) = ftp();
        let e = Envelope::new(&pts, &r, [1.0, 1.0], Grid::FULL);
        let slices = 4096;
        let s = e.slice_shares(slices);
        for (t, (share, own)) in s.iter().zip(&e.types).enumerate() {
            let kept: f64 = share.iter().sum::<f64>() / slices as f64 * e.integral();
            let own: f64 = own.iter().sum();
            assert!((kept - own).abs() < 2e-3 * own, "type {t}: {kept} vs {own}");
        }
        // Where high-QE dominates (400 nm, ratio 1.36) nominal DOMs keep ~1/1.36 of photons.
        let at = |w: f64| ((e.cumulative[(w - 250.0) as usize] / e.integral()) * slices as f64) as usize;
        assert!((s[0][at(400.0)] - 1.0 / 1.37).abs() < 0.02, "{}", s[0][at(400.0)]);
        // High-QE DOMs are the envelope there: share 1 but for the one-bin shift (module docs).
        assert!((s[1][at(400.0)] - 1.0).abs() < 0.01, "{}", s[1][at(400.0)]);
        assert!(
            e.quantile(0.0) >= 258.0 && e.quantile(1.0) <= 680.0,
            "{} {}",
            e.quantile(0.0),
            e.quantile(1.0)
        );
        let mut last = 0.0;
        for i in 0..=100 {
            let q = e.quantile(i as f64 / 100.0);
            assert!(q >= last);
            last = q;
        }
    }
}
