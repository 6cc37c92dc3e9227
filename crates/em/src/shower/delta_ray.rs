//! δ-ray production by e⁻ (Møller) and e⁺ (Bhabha) above the production cut: sampling of the
//! δ-ray energy and of both directions (cross sections in [`super::ionisation`]).
//!
//! Energy transfer ε = T_δ/T from the differential cross sections of the Geant4 Physics Reference
//! Manual (10.3, "Møller scattering" and "Bhabha scattering", after Messel and Crawford 1970):
//!
//! * Møller, ε ∈ [x, ½], x = cut/T:
//!   dσ/dε ∝ (1/ε²)·g⁻(ε), g⁻ = 1 + ((γ−1)/γ)² ε² − (2γ−1)/γ² · ε/(1−ε) + ε²/(1−ε)²
//!   (the 1/ε² part times ε²/(1−ε)² is the exchange term 1/(1−ε)²);
//! * Bhabha, ε ∈ [x, 1]: dσ/dε ∝ (1/ε²)·g⁺(ε), g⁺ = 1/β² − B₁ε + B₂ε² − B₃ε³ + B₄ε⁴ with the B_i
//!   of [`super::ionisation::bhabha_per_electron`].
//!
//! ε is drawn from 1/ε² on the allowed interval (ε = x_m x_M/(x_m(1−ξ) + x_M ξ)) and accepted
//! with probability g(ε)/g_max. On the allowed intervals both g reach their maximum at an end of
//! the interval (verified on a dense scan of γ ∈ [1.0001, 10⁶] and every lower end; the test
//! [`tests::majorant_holds_on_a_scan`] repeats the check), so g_max = max(g(x_m), g(x_M)).
//!
//! Directions from two-body kinematics (the target electron at rest, binding neglected):
//! cos θ_δ = √(T_δ(T + 2mc²)/(T(T_δ + 2mc²))), the primary along p⃗ − p⃗_δ.

use super::interaction::{deflect, Secondary};
use super::{Particle, ELECTRON_MASS};
use warpdrive_core::RandomStream;

/// g⁻(ε) of the Møller cross section (module doc).
#[must_use]
pub fn moller_g(gamma: f64, eps: f64) -> f64 {
    let a = ((gamma - 1.0) / gamma).powi(2);
    let b = (2.0 * gamma - 1.0) / (gamma * gamma);
    let r = eps / (1.0 - eps);
    1.0 + a * eps * eps - b * r + r * r
}

/// g⁺(ε) of the Bhabha cross section (module doc).
#[must_use]
pub fn bhabha_g(gamma: f64, eps: f64) -> f64 {
    let beta2 = 1.0 - 1.0 / (gamma * gamma);
    let y = 1.0 / (gamma + 1.0);
    let y12 = 1.0 - 2.0 * y;
    let b1 = 2.0 - y * y;
    let b2 = y12 * (3.0 + y * y);
    let b4 = y12 * y12 * y12;
    let b3 = b4 + y12 * y12;
    1.0 / beta2 - eps * (b1 - eps * (b2 - eps * (b3 - eps * b4)))
}

/// The result of a δ-ray interaction: the primary's new kinetic energy and direction, and the
/// δ electron.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DeltaRay {
    pub energy: f64,
    pub dir: [f64; 3],
    pub delta: Secondary,
}

/// Produce a δ ray above `cut` [MeV] from an e⁻ or e⁺ of kinetic energy `t` [MeV] (requires
/// t above [`super::ionisation::threshold_energy`]).
pub fn sample(particle: Particle, t: f64, dir: [f64; 3], cut: f64, rng: &mut RandomStream) -> DeltaRay {
    let gamma = t / ELECTRON_MASS + 1.0;
    let x_min = cut / t;
    let x_max = if particle == Particle::Positron { 1.0 } else { 0.5 };
    debug_assert!(x_min < x_max, "δ ray below threshold: T = {t}, cut = {cut}");
    let g = |e: f64| match particle {
        Particle::Positron => bhabha_g(gamma, e),
        _ => moller_g(gamma, e),
    };
    let g_max = g(x_min).max(g(x_max));
    let eps = loop {
        let xi = rng.uniform_f64();
        let e = x_min * x_max / (x_min * (1.0 - xi) + x_max * xi);
        if rng.uniform_f64() * g_max <= g(e) {
            break e;
        }
    };
    let t_delta = eps * t;
    let two_m = 2.0 * ELECTRON_MASS;
    let cos_delta = (t_delta * (t + two_m) / (t * (t_delta + two_m))).sqrt().min(1.0);
    let phi = std::f64::consts::TAU * rng.uniform_f64();
    let delta_dir = deflect(dir, cos_delta, phi);
    // Momentum conservation: p⃗' = p⃗ − p⃗_δ.
    let p = (t * (t + two_m)).sqrt();
    let pd = (t_delta * (t_delta + two_m)).sqrt();
    let v = [
        p * dir[0] - pd * delta_dir[0],
        p * dir[1] - pd * delta_dir[1],
        p * dir[2] - pd * delta_dir[2],
    ];
    let n = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    DeltaRay {
        energy: t - t_delta,
        dir: [v[0] / n, v[1] / n, v[2] / n],
        delta: Secondary {
            particle: Particle::Electron,
            energy: t_delta,
            dir: delta_dir,
        },
    }
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)] // components of 3-vectors
mod tests {
    use super::super::ionisation::{bhabha_per_electron, moller_per_electron};
    use super::*;

    #[test]
    fn majorant_holds_on_a_scan() {
        for i in 0..200 {
            let gamma = 1.0001f64 * (1e6f64 / 1.0001).powf(f64::from(i) / 199.0);
            for (f, hi) in [(moller_g as fn(f64, f64) -> f64, 0.5), (bhabha_g, 1.0)] {
                for j in 0..50 {
                    let lo = hi * f64::from(j) / 50.0 + 1e-6;
                    let m = f(gamma, lo).max(f(gamma, hi));
                    for k in 0..=400 {
                        let e = lo + (hi - lo) * f64::from(k) / 400.0;
                        assert!(f(gamma, e) <= m * (1.0 + 1e-12), "γ {gamma} ε {e}");
                    }
                }
            }
        }
    }

    /// ∫ (1/ε²) g(ε) dε over [x, x_max] × 2π r_e² mc²/T (/β² for Møller) must be the total cross section of
    /// ionisation.rs (same physics, two code paths).
    #[test]
    fn differential_integrates_to_the_total() {
        use super::super::TWOPI_MC2_RCL2;
        for &(t, cut) in &[(1.0, 0.1), (10.0, 0.35), (1000.0, 1.37)] {
            let gamma = t / ELECTRON_MASS + 1.0;
            let beta2 = 1.0 - 1.0 / (gamma * gamma);
            for (p, hi, total) in [
                (Particle::Electron, 0.5, moller_per_electron(t, cut)),
                (Particle::Positron, 1.0, bhabha_per_electron(t, cut)),
            ] {
                let lo: f64 = cut / t;
                // Simpson in u = ln ε: ∫ g/ε du.
                let n = 20_000;
                let (a, b) = (lo.ln(), f64::ln(hi));
                let h = (b - a) / f64::from(n);
                let mut s = 0.0;
                for k in 0..=n {
                    let e = (a + h * f64::from(k)).exp();
                    let g = if p == Particle::Positron {
                        bhabha_g(gamma, e)
                    } else {
                        moller_g(gamma, e)
                    };
                    let w = if k == 0 || k == n {
                        1.0
                    } else if k % 2 == 1 {
                        4.0
                    } else {
                        2.0
                    };
                    s += w * g / e;
                }
                // Møller's prefactor carries 1/β²; Bhabha's g⁺ has it inside (module doc).
                let norm = if p == Particle::Positron { 1.0 } else { beta2 };
                let integral = s * h / 3.0 * TWOPI_MC2_RCL2 / (norm * t);
                assert!((integral / total - 1.0).abs() < 1e-6, "{p:?} T {t}: {integral} vs {total}");
            }
        }
    }

    #[test]
    fn energy_and_momentum_are_conserved_and_the_spectrum_follows_1_over_eps2() {
        let mut rng = RandomStream::new(11, 1, 2);
        let (t, cut) = (100.0, 1.0);
        let dir = [0.0, 0.6, 0.8];
        let n = 200_000;
        let mut below_2cut = 0u32;
        for _ in 0..n {
            let d = sample(Particle::Electron, t, dir, cut, &mut rng);
            assert!(d.delta.energy >= cut && d.delta.energy <= 0.5 * t);
            assert!((d.energy + d.delta.energy - t).abs() < 1e-12 * t);
            let m = 2.0 * ELECTRON_MASS;
            let p0 = (t * (t + m)).sqrt();
            let p1 = (d.energy * (d.energy + m)).sqrt();
            let p2 = (d.delta.energy * (d.delta.energy + m)).sqrt();
            for k in 0..3 {
                let s = p1 * d.dir[k] + p2 * d.delta.dir[k];
                assert!((s - p0 * dir[k]).abs() < 1e-6 * p0, "momentum {k}");
            }
            below_2cut += u32::from(d.delta.energy < 2.0 * cut);
        }
        // P(T_δ < 2 cut) from the differential cross section by quadrature: with g ≈ 1 near the
        // cut, (1/x − 1/2x)/(1/x − 2) for x = 0.01 ≈ 0.5102; the exact g shifts it slightly:
        let gamma = t / ELECTRON_MASS + 1.0;
        let x = cut / t;
        let quad = |lo: f64, hi: f64| {
            let n = 4000;
            let h = (hi - lo) / f64::from(n);
            (0..=n)
                .map(|k| {
                    let e = lo + h * f64::from(k);
                    let w = if k == 0 || k == n {
                        1.0
                    } else if k % 2 == 1 {
                        4.0
                    } else {
                        2.0
                    };
                    w * moller_g(gamma, e) / (e * e)
                })
                .sum::<f64>()
                * h
                / 3.0
        };
        let p = quad(x, 2.0 * x) / quad(x, 0.5);
        let got = f64::from(below_2cut) / f64::from(n);
        let sigma = (p * (1.0 - p) / f64::from(n)).sqrt();
        assert!((got - p).abs() < 5.0 * sigma, "P(T_δ < 2cut) {got} vs {p} ± {sigma}");
    }
}
