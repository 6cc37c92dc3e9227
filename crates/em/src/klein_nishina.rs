//! Compton scattering: Klein–Nishina sampling by the Butcher–Messel method as in Geant4's
//! G4KleinNishinaCompton and Celeritas' KleinNishinaInteractor (spec §2.4; Geant4 Physics
//! Reference Manual §6.4.2). Function-like interactor: inputs in, an [`Interaction`] out.

use crate::physics::{Interaction, Secondary};
use crate::xs::ELECTRON_MASS;
use warpdrive_core::pmath::Portable;
use warpdrive_core::RandomStream;

/// Below this kinetic energy the Compton electron is not created: its energy is deposited
/// where the interaction happens (Celeritas `secondary_cutoff`, 100 eV) [MeV].
pub const SECONDARY_CUTOFF: f64 = 1e-4;

/// Rotate `local` (a direction in the frame whose z axis is `axis`) into the lab frame and
/// normalise: x̂′ = (d_x d_z, d_y d_z, −ρ²)/ρ, ŷ′ = (−d_y, d_x, 0)/ρ with ρ² = d_x² + d_y²;
/// for ρ → 0 the frame is the lab frame (mirrored when d_z < 0).
#[inline]
#[must_use]
pub fn rotate(local: [f64; 3], axis: [f64; 3]) -> [f64; 3] {
    let [ux, uy, uz] = local;
    let [dx, dy, dz] = axis;
    let rho2 = dx * dx + dy * dy;
    let out = if rho2 > 1e-20 {
        let rho = rho2.sqrt();
        [
            (dx * dz * ux - dy * uy) / rho + dx * uz,
            (dy * dz * ux + dx * uy) / rho + dy * uz,
            -rho * ux + dz * uz,
        ]
    } else if dz > 0.0 {
        [ux, uy, uz]
    } else {
        [-ux, uy, -uz]
    };
    let norm = (out[0] * out[0] + out[1] * out[1] + out[2] * out[2]).sqrt();
    [out[0] / norm, out[1] / norm, out[2] / norm]
}

/// Sample ε = E′/E for a photon of energy `energy` [MeV]: Butcher–Messel with the two
/// sub-distributions 1/ε on [ε₀, 1] (weight α₁ = −ln ε₀, sampled as ε = ε₀^ξ) and ε (weight
/// α₂ = (1 − ε₀²)/2, sampled as ε² uniform on [ε₀², 1]), accepted with
/// g(ε) = 1 − ε sin²θ/(1 + ε²), ε₀ = 1/(1 + 2k), k = E/m_e c². Returns (ε, t = 1 − cos θ) with
/// t = (1 − ε)/(ε k). Three uniforms per try: branch, ε, acceptance.
#[inline]
pub fn sample_epsilon(energy: f64, rng: &mut RandomStream) -> (f64, f64) {
    let k = energy / ELECTRON_MASS;
    let eps0 = 1.0 / (1.0 + 2.0 * k);
    let eps0_sq = eps0 * eps0;
    let alpha1 = -eps0.pln();
    let alpha2 = 0.5 * (1.0 - eps0_sq);
    loop {
        let (eps, eps_sq) = if rng.uniform_f64() * (alpha1 + alpha2) < alpha1 {
            let e = (-alpha1 * rng.uniform_f64()).pexp();
            (e, e * e)
        } else {
            let e2 = eps0_sq + (1.0 - eps0_sq) * rng.uniform_f64();
            (e2.sqrt(), e2)
        };
        let t = (1.0 - eps) / (eps * k);
        let sin2 = t * (2.0 - t);
        if rng.uniform_f64() * (1.0 + eps_sq) >= eps * sin2 {
            return (eps, t);
        }
    }
}

/// Compton-scatter a photon of `energy` [MeV] moving along `dir`: the new photon energy and
/// direction, and the electron — created as a secondary above [`SECONDARY_CUTOFF`], else its
/// energy is deposited locally. One more uniform for the azimuth φ.
#[inline]
pub fn interact(energy: f64, dir: [f64; 3], rng: &mut RandomStream) -> Interaction {
    let (eps, t) = sample_epsilon(energy, rng);
    let phi = std::f64::consts::TAU * rng.uniform_f64();
    let cos_theta = 1.0 - t;
    let sin_theta = (t * (2.0 - t)).max(0.0).sqrt();
    let new_dir = rotate([sin_theta * phi.pcos(), sin_theta * phi.psin(), cos_theta], dir);
    let new_energy = eps * energy;
    let electron = energy - new_energy;
    if electron < SECONDARY_CUTOFF {
        return Interaction {
            energy: new_energy,
            direction: new_dir,
            energy_deposition: electron,
            secondary: None,
        };
    }
    // Electron direction: momentum conservation, E·Ω − E′·Ω′ normalised.
    let p = [
        energy * dir[0] - new_energy * new_dir[0],
        energy * dir[1] - new_energy * new_dir[1],
        energy * dir[2] - new_energy * new_dir[2],
    ];
    let norm = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
    Interaction {
        energy: new_energy,
        direction: new_dir,
        energy_deposition: 0.0,
        secondary: Some(Secondary {
            energy: electron,
            direction: [p[0] / norm, p[1] / norm, p[2] / norm],
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotate_keeps_angles() {
        let axis = {
            let v = [0.3f64, -0.5, 0.8];
            let n = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
            [v[0] / n, v[1] / n, v[2] / n]
        };
        let local = [0.6, 0.0, 0.8];
        let r = rotate(local, axis);
        let dot = r[0] * axis[0] + r[1] * axis[1] + r[2] * axis[2];
        assert!((dot - 0.8).abs() < 1e-12);
        assert_eq!(rotate([0.0, 0.0, 1.0], [0.0, 0.0, 1.0]), [0.0, 0.0, 1.0]);
        assert_eq!(rotate([0.0, 0.0, 1.0], [0.0, 0.0, -1.0]), [-0.0, 0.0, -1.0]);
    }

    #[test]
    fn energy_and_momentum_are_conserved() {
        let mut rng = RandomStream::new(1, 9, 0);
        for _ in 0..1000 {
            let i = interact(1.0, [0.0, 0.0, 1.0], &mut rng);
            let s = i.secondary.unwrap();
            assert!((i.energy + s.energy - 1.0).abs() < 1e-12);
            // Transverse momentum balance.
            assert!((i.energy * i.direction[0] + s.energy_momentum() * s.direction[0]).abs() < 1e-9);
        }
    }
}
