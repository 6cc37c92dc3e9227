//! Positron annihilation with an atomic electron into two photons (Heitler 1954), in flight and
//! at rest — spec `specs/em.md` §2.7 ("e+ annihilation"), Geant4 PRM "Positron–electron
//! annihilation".
//!
//! Cross section per target electron, τ = T/mc², s = √(τ(τ+2)):
//! σ = π r_e² [(τ² + 6τ + 6) ln(τ + 1 + s) − (τ + 4) s] / (τ (τ + 2)²),
//! which is Heitler's σ = π r_e²/(γ+1) [(γ²+4γ+1)/(γ²−1) ln(γ+√(γ²−1)) − (γ+3)/√(γ²−1)].
//!
//! In flight: the fraction ε = E₁/(T + 2mc²) of the energy taken by one photon lies in
//! [½ − ½√(τ/(τ+2)), ½ + ½√(τ/(τ+2))]; drawn from 1/ε and accepted with probability
//! 1 − ε + (2γε − 1)/(ε(τ+2)²); cos θ₁ = (ε(τ+2) − 1)/(ε √(τ(τ+2))); the second photon takes
//! the rest of the energy and momentum. At rest: two photons of mc², back to back, isotropic.

use super::interaction::{deflect, isotropic, Secondary};
use super::material::ShowerMaterial;
use super::{Particle, ELECTRON_MASS, ELECTRON_RADIUS};
use warpdrive_core::pmath::Portable;
use warpdrive_core::RandomStream;

/// Heitler's cross section per electron [cm²] for a positron of kinetic energy `t` [MeV]
/// (T below 1 eV is taken at 1 eV, where σ·β is already at its limit π r_e²).
#[must_use]
pub fn xs_per_electron(t: f64) -> f64 {
    let tau = t.max(1e-6) / ELECTRON_MASS;
    let s = (tau * (tau + 2.0)).sqrt();
    let pi_re2 = std::f64::consts::PI * ELECTRON_RADIUS * ELECTRON_RADIUS;
    pi_re2 * ((tau * tau + 6.0 * tau + 6.0) * (tau + 1.0 + s).pln() - (tau + 4.0) * s) / (tau * (tau + 2.0) * (tau + 2.0))
}

/// Macroscopic cross section Σ = n_e σ [1/cm].
#[must_use]
pub fn macro_xs(m: &ShowerMaterial, t: f64) -> f64 {
    m.electron_density * xs_per_electron(t)
}

/// Annihilate a positron of kinetic energy `t` > 0 [MeV] moving along `dir` in flight.
pub fn sample_in_flight(t: f64, dir: [f64; 3], rng: &mut RandomStream) -> [Secondary; 2] {
    let tau = t / ELECTRON_MASS;
    let tau2 = tau + 2.0;
    let gamma = tau + 1.0;
    let root = (tau / tau2).sqrt();
    let (e_min, e_max) = (0.5 * (1.0 - root), 0.5 * (1.0 + root));
    let ratio = e_max / e_min;
    let eps = loop {
        let e = e_min * ratio.ppowf(rng.uniform_f64());
        let accept = 1.0 - e + (2.0 * gamma * e - 1.0) / (e * tau2 * tau2);
        if rng.uniform_f64() <= accept {
            break e;
        }
    };
    let total = t + 2.0 * ELECTRON_MASS;
    let e1 = eps * total;
    let cos1 = ((eps * tau2 - 1.0) / (eps * (tau * tau2).sqrt())).clamp(-1.0, 1.0);
    let phi = std::f64::consts::TAU * rng.uniform_f64();
    let d1 = deflect(dir, cos1, phi);
    // Photon 2: p⃗ − E₁ d̂₁ (|p⃗| = √(T(T + 2mc²))), energy total − E₁.
    let p = (t * (t + 2.0 * ELECTRON_MASS)).sqrt();
    let v = [p * dir[0] - e1 * d1[0], p * dir[1] - e1 * d1[1], p * dir[2] - e1 * d1[2]];
    let n = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    [
        Secondary {
            particle: Particle::Gamma,
            energy: e1,
            dir: d1,
        },
        Secondary {
            particle: Particle::Gamma,
            energy: total - e1,
            dir: [v[0] / n, v[1] / n, v[2] / n],
        },
    ]
}

/// Annihilate a positron at rest: two photons of mc², back to back, isotropic.
pub fn sample_at_rest(rng: &mut RandomStream) -> [Secondary; 2] {
    let d = isotropic(rng);
    [
        Secondary {
            particle: Particle::Gamma,
            energy: ELECTRON_MASS,
            dir: d,
        },
        Secondary {
            particle: Particle::Gamma,
            energy: ELECTRON_MASS,
            dir: [-d[0], -d[1], -d[2]],
        },
    ]
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)] // components of 3-vectors
mod tests {
    use super::*;

    #[test]
    fn cross_section_has_dirac_limits() {
        let pi_re2 = std::f64::consts::PI * ELECTRON_RADIUS * ELECTRON_RADIUS;
        // Slow positrons: σ·β → π r_e² (Dirac 1930).
        let t = 1e-5;
        let g = t / ELECTRON_MASS + 1.0;
        let beta = (1.0 - 1.0 / (g * g)).sqrt();
        assert!((xs_per_electron(t) * beta / pi_re2 - 1.0).abs() < 1e-3);
        // Fast positrons: σ → π r_e²/γ (ln 2γ − 1).
        let t = 1e5;
        let g = t / ELECTRON_MASS + 1.0;
        let asym = pi_re2 / g * ((2.0 * g).ln() - 1.0);
        assert!((xs_per_electron(t) / asym - 1.0).abs() < 1e-3, "{} vs {asym}", xs_per_electron(t));
    }

    #[test]
    fn in_flight_conserves_energy_and_momentum() {
        let mut rng = RandomStream::new(5, 9, 1);
        for &t in &[0.01, 0.5, 10.0, 1000.0] {
            let dir = [0.48, 0.6, 0.64];
            for _ in 0..10_000 {
                let [g1, g2] = sample_in_flight(t, dir, &mut rng);
                let total = t + 2.0 * ELECTRON_MASS;
                assert!((g1.energy + g2.energy - total).abs() < 1e-12 * total);
                assert!(g1.energy > 0.0 && g2.energy > 0.0);
                let p = (t * (t + 2.0 * ELECTRON_MASS)).sqrt();
                for k in 0..3 {
                    let s = g1.energy * g1.dir[k] + g2.energy * g2.dir[k];
                    assert!((s - p * dir[k]).abs() < 1e-9 * total, "T {t}: momentum {k}");
                }
                // Massless photons: |p⃗₂| = E₂ — the construction gives the direction, the
                // invariant mass (2mc²)² checks the energy split.
                let dot = g1.dir[0] * g2.dir[0] + g1.dir[1] * g2.dir[1] + g1.dir[2] * g2.dir[2];
                let m2 = 2.0 * g1.energy * g2.energy * (1.0 - dot);
                let want = 2.0 * ELECTRON_MASS * (t + 2.0 * ELECTRON_MASS);
                assert!((m2 / want - 1.0).abs() < 1e-8, "T {t}: s = {m2} vs {want}");
            }
        }
    }

    #[test]
    fn at_rest_gives_back_to_back_photons() {
        let mut rng = RandomStream::new(5, 9, 2);
        let [a, b] = sample_at_rest(&mut rng);
        assert_eq!(a.energy, ELECTRON_MASS);
        assert_eq!(b.energy, ELECTRON_MASS);
        for k in 0..3 {
            assert_eq!(a.dir[k], -b.dir[k]);
        }
    }
}
