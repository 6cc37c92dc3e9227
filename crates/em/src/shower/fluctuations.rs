//! Fluctuations of the restricted (continuous) energy loss of e± along a step.
//!
//! The loss below the δ-ray cut is the sum of many small collisions; its variance is Bohr's,
//! restricted to transfers below T_c = min(cut, T_max) (Geant4 PRM, "Energy loss fluctuations",
//! Gaussian regime; Bohr 1915):
//!
//! σ² = 2π r_e² mc² n_el · s · T_c · (1 − β²/2) / β².
//!
//! The loss is drawn with the mean Δ of the step and this variance: from a Gaussian truncated to
//! [0, 2Δ] (symmetric, so the mean stays Δ) when Δ ≥ 2σ, else from a Gamma distribution with
//! the same mean and variance (positive, skewed like the Landau-type distributions of thin
//! layers). This is simpler than Geant4's Urban fluctuation model (two-level atom with
//! excitation and ionisation terms): the mean loss is exact, the width is Bohr's; the shape in
//! very thin layers is not Landau's. Weaker than Geant4 there; it matters for the event-by-event
//! RMS, not the mean deposits.

use super::material::ShowerMaterial;
use super::{ELECTRON_MASS, TWOPI_MC2_RCL2};
use warpdrive_core::pmath::Portable;
use warpdrive_core::RandomStream;

/// Bohr variance [MeV²] of the restricted loss over a step of `s` [cm] at kinetic energy `t`
/// [MeV] with transfers up to `t_cut` [MeV].
#[must_use]
pub fn bohr_variance(m: &ShowerMaterial, t: f64, t_cut: f64, s: f64) -> f64 {
    let gamma = t / ELECTRON_MASS + 1.0;
    let beta2 = 1.0 - 1.0 / (gamma * gamma);
    TWOPI_MC2_RCL2 * m.electron_density * s * t_cut * (1.0 - 0.5 * beta2) / beta2
}

/// A loss with mean `mean` and variance `var` (module doc).
pub fn sample_loss(mean: f64, var: f64, rng: &mut RandomStream) -> f64 {
    if mean <= 0.0 || var <= 0.0 {
        return mean.max(0.0);
    }
    let sigma = var.sqrt();
    if mean >= 2.0 * sigma {
        loop {
            let x = mean + sigma * standard_normal(rng);
            if (0.0..=2.0 * mean).contains(&x) {
                return x;
            }
        }
    }
    let shape = mean * mean / var;
    let scale = var / mean;
    scale * standard_gamma(shape, rng)
}

/// A standard normal deviate (Box–Muller, one of the pair).
pub fn standard_normal(rng: &mut RandomStream) -> f64 {
    let u1 = rng.uniform_f64(); // (0, 1]
    let u2 = rng.uniform_f64();
    (-2.0 * u1.pln()).sqrt() * (std::f64::consts::TAU * u2).pcos()
}

/// A Gamma(k, 1) deviate: Marsaglia and Tsang (ACM TOMS 26 (2000) 363) for k ≥ 1; for k < 1
/// Gamma(k + 1)·U^{1/k} (their §6).
pub fn standard_gamma(k: f64, rng: &mut RandomStream) -> f64 {
    if k < 1.0 {
        let g = standard_gamma(k + 1.0, rng);
        return g * rng.uniform_f64().ppowf(1.0 / k);
    }
    let d = k - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = standard_normal(rng);
        let v = 1.0 + c * x;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        let u = rng.uniform_f64();
        if u.pln() < 0.5 * x * x + d - d * v + d * v.pln() {
            return d * v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moments(mean: f64, var: f64, seed: u64) -> (f64, f64) {
        let mut rng = RandomStream::new(seed, 3, 3);
        let n = 400_000;
        let (mut s, mut s2) = (0.0, 0.0);
        for _ in 0..n {
            let x = sample_loss(mean, var, &mut rng);
            assert!(x >= 0.0);
            s += x;
            s2 += x * x;
        }
        let m = s / f64::from(n);
        (m, s2 / f64::from(n) - m * m)
    }

    #[test]
    fn mean_is_kept_in_both_regimes() {
        // Gamma regime (Δ < 2σ): mean and variance exact; threshold 5 standard errors.
        let (m, v) = moments(1.0, 1.0, 1);
        assert!((m - 1.0).abs() < 5.0 * (1.0f64 / 400_000.0).sqrt(), "{m}");
        assert!((v - 1.0).abs() < 0.03, "{v}");
        // Gaussian regime: truncation at [0, 2Δ] keeps the mean; Δ = 3σ trims the variance by 1.1 %.
        let (m, v) = moments(3.0, 1.0, 2);
        assert!((m - 3.0).abs() < 5.0 * (1.0f64 / 400_000.0).sqrt(), "{m}");
        assert!((v - 0.973).abs() < 0.02, "{v}");
    }

    #[test]
    fn bohr_variance_of_lead() {
        // 2π r_e² mc² n_el = 0.1535 MeV cm²/g · Z/A · ρ: lead 0.1535·82/207.19·11.35 = 0.6896 MeV/cm;
        // for β → 1 σ² = 0.6896 · s · T_c / 2.
        let m = ShowerMaterial::lead();
        let v = bohr_variance(&m, 1e5, 1.0, 0.1);
        assert!((v / (0.6896 * 0.1 * 0.5) - 1.0).abs() < 2e-3, "{v}");
    }
}
