//! Compton cross sections: the Geant4 empirical fit to the Klein–Nishina cross section per atom
//! (spec §2.2, `G4KleinNishinaCompton::ComputeCrossSectionPerAtom`) and the macroscopic table on
//! a uniform log-energy grid with linear interpolation in E (spec §2.3, as Celeritas'
//! `XsCalculator`): 7 bins per decade from 100 eV to 100 TeV, the zero-valued 100 eV point dropped
//! (84 points from 1.389e-4 MeV), values stored as Σ below 1 MeV and as E·Σ from 1 MeV on.

use crate::material::Material;
use warpdrive_core::pmath::Portable;

/// Electron mass [MeV].
pub const ELECTRON_MASS: f64 = 0.510_998_946_1;
/// 1 barn in cm².
pub const BARN: f64 = 1e-24;
/// Below this energy the fit is zero (Geant4's LowEnergyLimit, 100 eV) [MeV].
pub const LOW_ENERGY_LIMIT: f64 = 1e-4;

/// σ_Compton per atom [barn] for photon energy `e` [MeV] and atomic number `z` (spec §2.2).
#[must_use]
pub fn cross_section_per_atom(e: f64, z: f64) -> f64 {
    if e <= LOW_ENERGY_LIMIT {
        return 0.0;
    }
    const A: f64 = 20.0;
    const B: f64 = 230.0;
    const C: f64 = 440.0;
    const D: [f64; 4] = [2.7965e-1, -1.8300e-1, 6.7527, -1.9798e+1];
    const E: [f64; 4] = [1.9756e-5, -1.0205e-2, -7.3913e-2, 2.7079e-2];
    const F: [f64; 4] = [-3.9178e-7, 6.8241e-5, 6.0480e-5, 3.0274e-4];
    let p: Vec<f64> = (0..4).map(|k| z * (D[k] + E[k] * z + F[k] * z * z)).collect();
    let t0 = if z < 1.5 { 40e-3 } else { 15e-3 };
    let fit = |x: f64| p[0] * (1.0 + 2.0 * x).ln() / x + (p[1] + p[2] * x + p[3] * x * x) / (1.0 + A * x + B * x * x + C * x * x * x);
    let x = e.max(t0) / ELECTRON_MASS;
    let mut sigma = fit(x);
    if e < t0 {
        // Below T0 the fit is continued with an exponential fall-off matched at T0 + 1 keV.
        let dt0 = 1e-3;
        let sigma0 = fit((t0 + dt0) / ELECTRON_MASS);
        let c1 = -t0 * (sigma0 - sigma) / (sigma * dt0);
        let c2 = if z <= 1.5 { 0.150 } else { 0.375 - 0.0556 * z.ln() };
        let y = (e / t0).ln();
        sigma *= (-y * (c1 + c2 * y)).exp();
    }
    sigma.max(0.0)
}

/// Macroscopic cross section Σ(E) = Σ_i n_i σ(E, Z_i) [1/cm] of a material, from the fit.
#[must_use]
pub fn macroscopic(material: &Material, e: f64) -> f64 {
    material
        .atom_densities()
        .iter()
        .map(|&(z, n)| n * cross_section_per_atom(e, z) * BARN)
        .sum()
}

/// The tabulated macroscopic cross section on a uniform ln E grid (params of the transport).
#[derive(Clone, Debug, PartialEq)]
pub struct XsGrid {
    /// ln of the first grid energy [ln MeV].
    pub log_front: f64,
    /// Grid spacing in ln E.
    pub log_delta: f64,
    /// Grid energies [MeV] (exp of the grid points, kept to interpolate in E).
    pub energy: Vec<f64>,
    /// Σ [1/cm] below `prime_index`, E·Σ [MeV/cm] from it on.
    pub value: Vec<f64>,
    /// First point stored as E·Σ.
    pub prime_index: usize,
}

impl XsGrid {
    /// Geant4's binning: `per_decade` bins per decade from 1e-4 to 1e8 MeV, first point dropped,
    /// E·Σ from 1 MeV.
    #[must_use]
    pub fn build(material: &Material, per_decade: usize) -> XsGrid {
        let n_bins = 12 * per_decade;
        let log_delta = std::f64::consts::LN_10 / per_decade as f64;
        let log_e0 = (1e-4f64).ln();
        let energy: Vec<f64> = (1..=n_bins).map(|i| (log_e0 + i as f64 * log_delta).exp()).collect();
        let prime_index = 4 * per_decade - 1; // 1 MeV = 1e-4 · 10^4
        let value = energy
            .iter()
            .enumerate()
            .map(|(i, &e)| {
                let s = macroscopic(material, e);
                if i >= prime_index {
                    e * s
                } else {
                    s
                }
            })
            .collect();
        XsGrid {
            log_front: log_e0 + log_delta,
            log_delta,
            energy,
            value,
            prime_index,
        }
    }

    /// Σ(E) [1/cm]: clamp outside the grid, linear interpolation in E between grid points
    /// (the upper point divided by its energy when it starts the E·Σ part; the result divided
    /// by E inside the E·Σ part).
    #[inline]
    #[must_use]
    pub fn eval(&self, e: f64) -> f64 {
        let n = self.value.len();
        let at = |i: usize| {
            if i >= self.prime_index {
                self.value[i] / self.energy[i]
            } else {
                self.value[i]
            }
        };
        if e <= self.energy[0] {
            return at(0);
        }
        if e >= self.energy[n - 1] {
            return at(n - 1);
        }
        let i = (((e.pln() - self.log_front) / self.log_delta) as usize).min(n - 2);
        let (e0, e1) = (self.energy[i], self.energy[i + 1]);
        let v0 = self.value[i];
        let mut v1 = self.value[i + 1];
        if i + 1 == self.prime_index {
            v1 /= e1;
        }
        let v = v0 + (e - e0) / (e1 - e0) * (v1 - v0);
        if i >= self.prime_index {
            v / e
        } else {
            v
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_matches_the_spec_layout() {
        let g = XsGrid::build(&Material::aluminium(), 7);
        assert_eq!(g.value.len(), 84);
        assert!((g.energy[0] / 1.389_495_494_37e-4 - 1.0).abs() < 1e-9);
        assert!((g.energy[g.prime_index] - 1.0).abs() < 1e-12);
        assert_eq!(g.prime_index, 27);
        assert!((g.energy[83] / 1e8 - 1.0).abs() < 1e-12);
        // At grid points the interpolation returns the fit.
        for &e in &[1e-3, 1.0, 100.0] {
            assert!((g.eval(e) / macroscopic(&Material::aluminium(), e) - 1.0).abs() < 1e-9, "{e}");
        }
        // Spec table: 100 MeV → 0.0065124 /cm, 1 MeV → 0.166551 /cm.
        assert!((g.eval(100.0) / 0.006_512_4 - 1.0).abs() < 1e-4);
        assert!((g.eval(1.0) / 0.166_551 - 1.0).abs() < 1e-4);
    }

    #[test]
    fn fit_differs_from_textbook_klein_nishina_as_the_spec_says() {
        // Free-electron KN per electron × Z vs the fit: −1.4 % at 100 MeV (spec §2.2).
        let kn = |e: f64| {
            let k = e / ELECTRON_MASS;
            let re2 = 7.940_787_5e-26_f64; // r_e² [cm²]
            let t = 1.0 + 2.0 * k;
            2.0 * std::f64::consts::PI
                * re2
                * ((1.0 + k) / (k * k) * (2.0 * (1.0 + k) / t - t.ln() / k) + t.ln() / (2.0 * k) - (1.0 + 3.0 * k) / (t * t))
        };
        let r = 13.0 * kn(100.0) / (cross_section_per_atom(100.0, 13.0) * BARN) - 1.0;
        assert!((r + 0.014).abs() < 0.003, "{r}");
    }
}
