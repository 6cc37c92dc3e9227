//! e± ionisation: the restricted collision stopping power below a δ-ray cut (Berger–Seltzer) and
//! the Møller (e⁻e⁻) and Bhabha (e⁺e⁻) cross sections for δ rays above it, from the Geant4
//! Physics Reference Manual (release 10.3), "Ionisation" of electrons and positrons (§ "Continuous
//! energy loss", eqs. for F⁻ and F⁺, after M. J. Berger and S. M. Seltzer, NASA SP-3012 (1964) and
//! ICRU Report 37 (1984) eqs. 2.2–2.4; § "Total cross section per atom", after Messel and Crawford,
//! Electron-Photon Shower Distribution Function (1970)).
//!
//! Notation: T kinetic energy, τ = T/mc², γ = τ + 1, β² = τ(τ + 2)/γ², Δ the energy cut over mc²,
//! x = T_cut/T. The stopping powers have no shell correction, as ESTAR (ICRU 37) has none.

use super::material::ShowerMaterial;
use super::{Particle, ELECTRON_MASS, KEV, TWOPI_MC2_RCL2};

/// Largest energy transfer to a δ ray [MeV]: T/2 for e⁻ (the faster outgoing electron is the
/// primary by convention), T for e⁺.
#[must_use]
pub fn max_secondary_energy(particle: Particle, t: f64) -> f64 {
    match particle {
        Particle::Positron => t,
        _ => 0.5 * t,
    }
}

/// Lowest kinetic energy [MeV] with a δ ray above `cut`: 2·cut for e⁻, cut for e⁺.
#[must_use]
pub fn threshold_energy(particle: Particle, cut: f64) -> f64 {
    match particle {
        Particle::Positron => cut,
        _ => 2.0 * cut,
    }
}

/// F⁻(τ, Δ) of the Berger–Seltzer formula for electrons (Geant4 PRM, e⁻ continuous loss):
/// F⁻ = −1 − β² + ln((τ − Δ)Δ) + τ/(τ − Δ) + [Δ²/2 + (2τ + 1) ln(1 − Δ/τ)]/γ², Δ ≤ τ/2.
#[must_use]
pub fn f_minus(tau: f64, d: f64) -> f64 {
    let gamma = tau + 1.0;
    let beta2 = tau * (tau + 2.0) / (gamma * gamma);
    -1.0 - beta2 + ((tau - d) * d).ln() + tau / (tau - d) + (0.5 * d * d + (2.0 * tau + 1.0) * (1.0 - d / tau).ln()) / (gamma * gamma)
}

/// F⁺(τ, Δ) for positrons (Geant4 PRM, e⁺ continuous loss), y = 1/(γ + 1), Δ ≤ τ:
/// F⁺ = ln(τΔ) − (β²/τ)[τ + 2Δ − (3Δ²/2) y − (Δ − Δ³/3) y² − (Δ²/2 − τΔ³/3 + Δ⁴/4) y³].
#[must_use]
pub fn f_plus(tau: f64, d: f64) -> f64 {
    let gamma = tau + 1.0;
    let beta2 = tau * (tau + 2.0) / (gamma * gamma);
    let y = 1.0 / (gamma + 1.0);
    let (d2, d3, d4) = (d * d, d * d * d, d * d * d * d);
    (tau * d).ln()
        - beta2 / tau * (tau + 2.0 * d - 1.5 * d2 * y - (d - d3 / 3.0) * y * y - (0.5 * d2 - tau * d3 / 3.0 + 0.25 * d4) * y * y * y)
}

/// Restricted collision stopping power [MeV/cm] of e⁻ or e⁺ of kinetic energy `t` [MeV] for
/// δ rays below `cut` [MeV] (`f64::INFINITY`: unrestricted) — the Berger–Seltzer formula,
/// Geant4 PRM "Continuous energy loss":
///
/// dE/dx = 2π r_e² mc² n_el/β² [ln(2(τ + 2)/(I/mc²)²) + F±(τ, Δ) − δ(x)],
/// Δ = min(cut, T_max)/mc², δ the Sternheimer density correction at x = log₁₀(βγ)
/// ([`ShowerMaterial::delta`]); negative values are set to 0.
///
/// Without shell corrections the formula fails at a few keV; below T_l = 0.25 √Z_eff keV it is
/// evaluated at T_l and extrapolated by 1/√(T/T_l) for T/T_l > 0.25 and by 1.4√(T/T_l)/(0.1 + T/T_l)
/// below (continuous at 0.25; dE/dx ∝ √T → 0 at T → 0), as Geant4's Møller–Bhabha model does.
#[must_use]
pub fn restricted_dedx(material: &ShowerMaterial, particle: Particle, t: f64, cut: f64) -> f64 {
    assert!(particle != Particle::Gamma, "dE/dx of a photon");
    if t <= 0.0 {
        return 0.0;
    }
    let t_low = 0.25 * material.z_effective().sqrt() * KEV;
    let te = t.max(t_low);
    let tau = te / ELECTRON_MASS;
    let gamma = tau + 1.0;
    let beta2 = tau * (tau + 2.0) / (gamma * gamma);
    let d = cut.min(max_secondary_energy(particle, te)) / ELECTRON_MASS;
    let eexc = material.mean_excitation / ELECTRON_MASS;
    let f = match particle {
        Particle::Positron => f_plus(tau, d),
        _ => f_minus(tau, d),
    };
    let bracket = (2.0 * (tau + 2.0) / (eexc * eexc)).ln() + f - material.delta(te);
    let mut dedx = (TWOPI_MC2_RCL2 * material.electron_density * bracket / beta2).max(0.0);
    if t < t_low {
        let x = t / t_low;
        dedx *= if x > 0.25 { 1.0 / x.sqrt() } else { 1.4 * x.sqrt() / (0.1 + x) };
    }
    dedx
}

/// Møller cross section per electron [cm²] for a δ ray above `cut` (Geant4 PRM, "Møller
/// scattering", total cross section): with x = cut/T < ½,
/// σ = 2π r_e²/(β²(γ − 1)) [((γ − 1)/γ)² (½ − x) + 1/x − 1/(1 − x) − (2γ − 1)/γ² ln((1 − x)/x)];
/// 0 when cut ≥ T/2.
#[must_use]
pub fn moller_per_electron(t: f64, cut: f64) -> f64 {
    if cut >= 0.5 * t || cut <= 0.0 {
        return 0.0;
    }
    let tau = t / ELECTRON_MASS;
    let gamma = tau + 1.0;
    let gamma2 = gamma * gamma;
    let beta2 = tau * (tau + 2.0) / gamma2;
    let x = cut / t;
    let s = (tau / gamma).powi(2) * (0.5 - x) + 1.0 / x - 1.0 / (1.0 - x) - (2.0 * gamma - 1.0) / gamma2 * ((1.0 - x) / x).ln();
    // 2π r_e²/(γ − 1) = 2π r_e² mc²/T.
    TWOPI_MC2_RCL2 / t * s / beta2
}

/// Bhabha cross section per electron [cm²] for a δ ray (the target electron) above `cut`
/// (Geant4 PRM, "Bhabha scattering", total cross section): with x = cut/T < 1, y = 1/(γ + 1),
/// B₁ = 2 − y², B₂ = (1 − 2y)(3 + y²), B₄ = (1 − 2y)³, B₃ = B₄ + (1 − 2y)²,
/// σ = 2π r_e²/(γ − 1) [(1/x − 1)/β² + B₁ ln x + B₂(1 − x) − B₃(1 − x²)/2 + B₄(1 − x³)/3];
/// 0 when cut ≥ T.
#[must_use]
pub fn bhabha_per_electron(t: f64, cut: f64) -> f64 {
    if cut >= t || cut <= 0.0 {
        return 0.0;
    }
    let tau = t / ELECTRON_MASS;
    let gamma = tau + 1.0;
    let beta2 = tau * (tau + 2.0) / (gamma * gamma);
    let x = cut / t;
    let y = 1.0 / (gamma + 1.0);
    let y12 = 1.0 - 2.0 * y;
    let b1 = 2.0 - y * y;
    let b2 = y12 * (3.0 + y * y);
    let b4 = y12 * y12 * y12;
    let b3 = b4 + y12 * y12;
    let s = (1.0 / x - 1.0) / beta2 + b1 * x.ln() + b2 * (1.0 - x) - 0.5 * b3 * (1.0 - x * x) + b4 * (1.0 - x * x * x) / 3.0;
    TWOPI_MC2_RCL2 / t * s.max(0.0)
}

/// Macroscopic δ-ray cross section Σ = n_el σ [1/cm] above `cut` (Møller for e⁻, Bhabha for e⁺).
#[must_use]
pub fn delta_ray_macro_xs(material: &ShowerMaterial, particle: Particle, t: f64, cut: f64) -> f64 {
    let s = match particle {
        Particle::Electron => moller_per_electron(t, cut),
        Particle::Positron => bhabha_per_electron(t, cut),
        Particle::Gamma => panic!("δ rays of a photon"),
    };
    material.electron_density * s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shower::TWOPI_MC2_RCL2;

    /// Møller dσ/dε per electron (Geant4 PRM): 2π r_e²/(β²(γ − 1)) [C₁ + 1/ε(1/ε − C₂) +
    /// 1/(1 − ε)(1/(1 − ε) − C₂)], C₁ = ((γ − 1)/γ)², C₂ = (2γ − 1)/γ²; ε = w/T.
    fn moller_diff(t: f64, eps: f64) -> f64 {
        let tau = t / ELECTRON_MASS;
        let g = tau + 1.0;
        let b2 = tau * (tau + 2.0) / (g * g);
        let c1 = (tau / g).powi(2);
        let c2 = (2.0 * g - 1.0) / (g * g);
        TWOPI_MC2_RCL2 / t / b2 * (c1 + (1.0 / eps) * (1.0 / eps - c2) + (1.0 / (1.0 - eps)) * (1.0 / (1.0 - eps) - c2))
    }

    /// Bhabha dσ/dε per electron (Geant4 PRM): 2π r_e²/(γ − 1) [1/(β²ε²) − B₁/ε + B₂ − B₃ε + B₄ε²].
    fn bhabha_diff(t: f64, eps: f64) -> f64 {
        let tau = t / ELECTRON_MASS;
        let g = tau + 1.0;
        let b2_ = tau * (tau + 2.0) / (g * g);
        let y = 1.0 / (g + 1.0);
        let y12 = 1.0 - 2.0 * y;
        let (b1, b2, b4) = (2.0 - y * y, y12 * (3.0 + y * y), y12 * y12 * y12);
        let b3 = b4 + y12 * y12;
        TWOPI_MC2_RCL2 / t * (1.0 / (b2_ * eps * eps) - b1 / eps + b2 - b3 * eps + b4 * eps * eps)
    }

    /// ∫ f over [a, b] by Simpson's rule in ln ε with n (even) intervals.
    fn integrate_log(f: impl Fn(f64) -> f64, a: f64, b: f64, n: usize) -> f64 {
        let (la, lb) = (a.ln(), b.ln());
        let h = (lb - la) / n as f64;
        (0..=n)
            .map(|i| {
                let e = (la + i as f64 * h).exp();
                let w = if i == 0 || i == n {
                    1.0
                } else if i % 2 == 1 {
                    4.0
                } else {
                    2.0
                };
                w * f(e) * e
            })
            .sum::<f64>()
            * h
            / 3.0
    }

    #[test]
    fn total_cross_sections_integrate_the_differential_ones() {
        for &t in &[0.01, 1.0, 30.0, 1e4] {
            for &xc in &[1e-3, 0.05, 0.3] {
                let want = integrate_log(|e| moller_diff(t, e), xc, 0.5, 4000);
                let got = moller_per_electron(t, xc * t);
                assert!((got / want - 1.0).abs() < 1e-6, "Møller {t} {xc}: {got} {want}");
                let want = integrate_log(|e| bhabha_diff(t, e), xc, 1.0, 4000);
                let got = bhabha_per_electron(t, xc * t);
                assert!((got / want - 1.0).abs() < 1e-6, "Bhabha {t} {xc}: {got} {want}");
            }
        }
        assert_eq!(moller_per_electron(1.0, 0.5), 0.0);
        assert_eq!(bhabha_per_electron(1.0, 1.0), 0.0);
        assert!(bhabha_per_electron(1.0, 0.6) > 0.0);
    }

    #[test]
    fn restricted_plus_delta_rays_is_unrestricted_loss() {
        // dE/dx(cut) + n_e ∫_cut^{T_max} w dσ/dw dw = dE/dx(∞): the F± functions and the
        // differential cross sections describe the same free-electron collisions.
        let m = ShowerMaterial::liquid_argon();
        for (p, diff, emax) in [
            (Particle::Electron, moller_diff as fn(f64, f64) -> f64, 0.5),
            (Particle::Positron, bhabha_diff, 1.0),
        ] {
            for &t in &[0.5, 5.0, 200.0] {
                for &cut in &[0.01, 0.1] {
                    let lost = m.electron_density * integrate_log(|e| e * t * diff(t, e), cut / t, emax, 4000);
                    let full = restricted_dedx(&m, p, t, f64::INFINITY);
                    let part = restricted_dedx(&m, p, t, cut);
                    assert!(
                        ((part + lost) / full - 1.0).abs() < 1e-6,
                        "{p:?} {t} {cut}: {part} + {lost} vs {full}"
                    );
                }
            }
        }
    }

    #[test]
    fn low_energy_extrapolation_is_continuous() {
        let m = ShowerMaterial::lead();
        let tl = 0.25 * 82f64.sqrt() * KEV;
        for p in [Particle::Electron, Particle::Positron] {
            let a = restricted_dedx(&m, p, tl * (1.0 - 1e-9), 1.0);
            let b = restricted_dedx(&m, p, tl * (1.0 + 1e-9), 1.0);
            assert!((a / b - 1.0).abs() < 1e-6);
            let c = restricted_dedx(&m, p, 0.25 * tl * (1.0 - 1e-9), 1.0);
            let d = restricted_dedx(&m, p, 0.25 * tl * (1.0 + 1e-9), 1.0);
            assert!((c / d - 1.0).abs() < 1e-6);
            assert!(restricted_dedx(&m, p, 1e-7, 1.0) > 0.0);
        }
    }
}
