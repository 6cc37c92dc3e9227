//! What an interactor hands back to the stepping loop, and the direction helpers every
//! interactor shares.

use super::Particle;
use crate::klein_nishina::rotate;
use warpdrive_core::pmath::Portable;
use warpdrive_core::RandomStream;

/// A particle created by an interaction: its kind, kinetic energy [MeV] and unit direction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Secondary {
    pub particle: Particle,
    /// Kinetic energy [MeV] (for a photon its energy).
    pub energy: f64,
    pub dir: [f64; 3],
}

/// The direction at polar angle θ (given as cos θ) and azimuth φ [rad] around `axis`.
#[inline]
#[must_use]
pub fn deflect(axis: [f64; 3], cos_theta: f64, phi: f64) -> [f64; 3] {
    let sin_theta = (1.0 - cos_theta * cos_theta).max(0.0).sqrt();
    rotate([sin_theta * phi.pcos(), sin_theta * phi.psin(), cos_theta], axis)
}

/// A direction drawn uniformly on the unit sphere (two random numbers: cos θ, then φ).
#[inline]
#[must_use]
pub fn isotropic(rng: &mut RandomStream) -> [f64; 3] {
    let cos_theta = 2.0 * rng.uniform_f64() - 1.0;
    let phi = std::f64::consts::TAU * rng.uniform_f64();
    let sin_theta = (1.0 - cos_theta * cos_theta).max(0.0).sqrt();
    [sin_theta * phi.pcos(), sin_theta * phi.psin(), cos_theta]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deflect_keeps_the_polar_angle() {
        let axis = [0.3f64, -0.4, 0.866_025_4];
        let n = (axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2]).sqrt();
        let axis = [axis[0] / n, axis[1] / n, axis[2] / n];
        for &(c, phi) in &[(0.9, 0.1), (-0.5, 2.0), (0.0, 4.0)] {
            let d = deflect(axis, c, phi);
            let dot = d[0] * axis[0] + d[1] * axis[1] + d[2] * axis[2];
            assert!((dot - c).abs() < 1e-12, "{dot} vs {c}");
        }
    }

    #[test]
    fn isotropic_has_zero_mean() {
        let mut rng = RandomStream::new(7, 0, 0);
        let mut s = [0.0f64; 3];
        let n = 100_000;
        for _ in 0..n {
            let d = isotropic(&mut rng);
            for k in 0..3 {
                s[k] += d[k];
            }
        }
        // Each component has variance 1/3: 5σ = 5·sqrt(1/3/n) ≈ 0.0091.
        for v in s {
            assert!((v / f64::from(n)).abs() < 0.0091, "{s:?}");
        }
    }
}
