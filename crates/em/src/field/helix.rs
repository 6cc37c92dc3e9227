//! A charged track in a uniform magnetic field: the exact helix.
//!
//! The equation of motion of a charge q (in units of e) with momentum p (MeV/c) along its path
//! length s (mm) in a field B (tesla) is dΩ/ds = k·Ω × B with k = c·q/p = 0.299792458·q/p
//! (c = 0.299792458 m/ns; with p in MeV/c, B in T and s in mm this gives 1/mm). Splitting the
//! direction Ω into its part along b̂ = B/|B| and the part u ⊥ b̂, and with ω = k|B| and
//! v = u × b̂ (so that d(u cos ωs + v sin ωs)/ds = ω (u cos ωs + v sin ωs) × b̂):
//!
//!   Ω(s) = Ω∥ + u cos ωs + v sin ωs,
//!   x(s) = x₀ + Ω∥ s + u sin(ωs)/ω + v (1 − cos ωs)/ω,
//!
//! a circle of radius |u|/|ω| = p⊥/(0.299792458 |q| B) (the familiar R[m] = p⊥[GeV]/(0.3 B[T]))
//! around b̂, advancing |Ω∥| per unit path. `1 − cos θ` is evaluated as 2 sin²(θ/2) so that short
//! steps keep their precision; |p| (the energy) is unchanged by construction.
//!
//! The trigonometry is the portable one ([`warpdrive_core::pmath::sin_cos`], [`pmath::sin`]:
//! Cody–Waite reduction and Taylor polynomials in IEEE +, −, ×, ÷ only, ≤ 1 ulp from the
//! host libm on |θ| ≤ 20, tested there and here on the helix's |θ| ≤ π/2), not the libm's, so
//! that the CUDA twin `kernels/field/helix.cuh` (pmath.cuh's `pm_sincos`, `pm_sin`) gives the
//! same bits on the GPU.

use crate::geo::Vec3;
use warpdrive_core::pmath;

/// c in m/ns: the factor between p [MeV/c], B [T] and curvature [1/mm].
pub const C_LIGHT: f64 = 0.299_792_458;

/// A uniform field [T].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UniformField {
    pub b: Vec3,
}

/// A track's helix in a uniform field: where it starts and how it turns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Helix {
    pub origin: Vec3,
    /// The direction's part along the field.
    pub parallel: Vec3,
    /// The direction's part across the field (u) and u × b̂ (v).
    pub u: Vec3,
    pub v: Vec3,
    /// Signed angular rate [rad/mm] (0 for a neutral track or no field).
    pub omega: f64,
}

impl Helix {
    /// The helix of a track at `origin` with unit direction `dir`, charge `q` (units of e) and
    /// momentum `p` [MeV/c] in `field`.
    #[must_use]
    pub fn new(origin: Vec3, dir: Vec3, q: f64, p: f64, field: &UniformField) -> Helix {
        let bmag = field.b.norm();
        if bmag == 0.0 || q == 0.0 {
            return Helix {
                origin,
                parallel: dir,
                u: Vec3::ZERO,
                v: Vec3::ZERO,
                omega: 0.0,
            };
        }
        let bhat = field.b * (1.0 / bmag);
        let parallel = bhat * dir.dot(bhat);
        let u = dir - parallel;
        Helix {
            origin,
            parallel,
            u,
            v: u.cross(bhat),
            omega: C_LIGHT * q * bmag / p,
        }
    }

    /// The radius of the circle [mm]: p⊥ / (0.299792458 |q| B).
    #[must_use]
    pub fn radius(&self) -> f64 {
        if self.omega == 0.0 {
            f64::INFINITY
        } else {
            self.u.norm() / self.omega.abs()
        }
    }

    /// Position and unit direction after a path length `s` [mm].
    #[must_use]
    pub fn at(&self, s: f64) -> (Vec3, Vec3) {
        if self.omega == 0.0 {
            let d = self.parallel + self.u;
            return (self.origin.along(d, s), d);
        }
        let th = self.omega * s;
        let (sn, cs) = pmath::sin_cos(th);
        let half = pmath::sin(0.5 * th);
        let one_minus_cos = 2.0 * half * half;
        let pos = self.origin + self.parallel * s + self.u * (sn / self.omega) + self.v * (one_minus_cos / self.omega);
        let dir = self.parallel + self.u * cs + self.v * sn;
        (pos, dir)
    }

    /// The centre of the circle (the point on the axis level with the origin).
    #[must_use]
    pub fn centre(&self) -> Vec3 {
        self.origin + self.v * (1.0 / self.omega)
    }

    /// The chord step for a sagitta of at most `delta_chord` [mm] (Geant4's "delta chord"): an
    /// arc of turning angle θ on radius R has sagitta R (1 − cos θ/2) ≈ Rθ²/8.
    #[must_use]
    pub fn max_step_for_sagitta(&self, delta_chord: f64) -> f64 {
        let r = self.radius();
        if !r.is_finite() {
            return f64::INFINITY;
        }
        let theta = (8.0 * delta_chord / r).sqrt().min(std::f64::consts::FRAC_PI_2);
        theta / self.omega.abs()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::TAU;

    /// A 1 GeV/c e⁻ at 30° to a 3.8 T field, followed for 100 turns in 1 000 steps per turn
    /// (each step a new helix from the previous end, as a transport loop does): every point
    /// stays on the circle of radius p⊥/(0.3 B) to 1e-6 relative, around the same axis; the
    /// direction stays a unit vector (|p| conserved); the pitch is p∥ per turn; and the stepped
    /// end equals the one-step helix.
    #[test]
    fn helix_radius_over_100_turns() {
        let (p, q, b) = (1000.0, -1.0, 3.8);
        let field = UniformField { b: Vec3::new(0.0, 0.0, b) };
        let a = 30f64.to_radians();
        let dir = Vec3::new(a.sin(), 0.0, a.cos());
        let start = Vec3::new(1.0, 2.0, 3.0);
        let h0 = Helix::new(start, dir, q, p, &field);
        let r_expected = p * a.sin() / (C_LIGHT * b);
        assert!((h0.radius() / r_expected - 1.0).abs() < 1e-14, "{} vs {r_expected}", h0.radius());
        let centre = h0.centre();
        let turn = TAU / h0.omega.abs();
        let steps = 1000;
        let (mut pos, mut d) = (start, dir);
        let mut worst: f64 = 0.0;
        for k in 1..=100 * steps {
            let h = Helix::new(pos, d, q, p, &field);
            (pos, d) = h.at(turn / f64::from(steps));
            // The field is along z: the distance from the axis is ρ of (pos − centre).
            let r = (pos - centre).rho();
            worst = worst.max((r / r_expected - 1.0).abs());
            assert!((d.norm() - 1.0).abs() < 1e-12, "|Ω| drifted at step {k}");
        }
        assert!(worst < 1e-6, "radius off by {worst:e}");
        // After 100 turns: back over the start, 100 pitches higher.
        let pitch = turn * a.cos();
        assert!(
            (pos.x - start.x).abs() < 1e-6 * r_expected && (pos.y - start.y).abs() < 1e-6 * r_expected,
            "{pos:?}"
        );
        assert!((pos.z - start.z - 100.0 * pitch).abs() < 1e-9 * 100.0 * pitch);
        let (one, _) = h0.at(100.0 * turn);
        assert!((one - pos).norm() < 1e-6 * r_expected, "{one:?} vs {pos:?}");
        eprintln!("R = {r_expected} mm, worst relative radius error over 100 turns (100 000 steps): {worst:.2e}");
        // The sense of rotation: an electron (q < 0) in B along +z turns counter-clockwise
        // seen from +z (F = q v × B: v = +x gives F along +y for q < 0).
        let (p1, _) = h0.at(1.0);
        assert!(p1.y > start.y);
    }

    /// The portable sin and cos the helix uses against the host libm over the turning angles
    /// a step can have (|θ| ≤ π/2: [`Helix::max_step_for_sagitta`] caps the stretch, and a
    /// boundary search only shortens it) and over 100 turns (the one-step helix above): at
    /// most 1 ulp apart, and exactly 0, ±1 at the quadrant points.
    #[test]
    fn portable_trigonometry_is_within_one_ulp_of_libm() {
        let ulps = |a: f64, b: f64| -> u64 {
            if a == b {
                0
            } else if a.signum() != b.signum() {
                u64::MAX
            } else {
                a.to_bits().abs_diff(b.to_bits())
            }
        };
        let mut worst = 0u64;
        let n = 200_000;
        for range in [std::f64::consts::FRAC_PI_2, 100.0 * TAU] {
            for k in 0..=n {
                let th = range * (2.0 * f64::from(k) / f64::from(n) - 1.0);
                let (s, c) = pmath::sin_cos(th);
                worst = worst.max(ulps(s, th.sin())).max(ulps(c, th.cos()));
                worst = worst.max(ulps(pmath::sin(0.5 * th), (0.5 * th).sin()));
                assert_eq!(pmath::sin(th).to_bits(), s.to_bits(), "sin and sin_cos differ at {th}");
            }
        }
        // Tiny angles (short steps, high momenta): sin θ = θ to the last bit.
        for e in 1..=300 {
            let th = 10f64.powi(-e);
            worst = worst.max(ulps(pmath::sin_cos(th).0, th.sin()));
        }
        eprintln!("portable sin/cos vs libm on the helix's angles: worst {worst} ulp");
        assert!(worst <= 1, "{worst} ulp");
        assert_eq!(pmath::sin_cos(0.0), (0.0, 1.0));
    }

    #[test]
    fn neutral_tracks_go_straight_and_sagitta_steps() {
        let field = UniformField {
            b: Vec3::new(0.0, 0.0, 1.0),
        };
        let d = Vec3::new(0.6, 0.0, 0.8);
        let h = Helix::new(Vec3::ZERO, d, 0.0, 10.0, &field);
        assert_eq!(h.at(5.0).0, Vec3::new(3.0, 0.0, 4.0));
        let e = Helix::new(Vec3::ZERO, Vec3::new(1.0, 0.0, 0.0), 1.0, 1000.0, &field);
        let s = e.max_step_for_sagitta(0.25);
        // The sagitta of that step's arc: R(1 − cos(θ/2)).
        let th = e.omega.abs() * s;
        let sag = e.radius() * (1.0 - (0.5 * th).cos());
        assert!(sag <= 0.25 && sag > 0.24, "{sag}");
    }
}
