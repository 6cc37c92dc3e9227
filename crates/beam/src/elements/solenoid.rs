//! The solenoid (SOLE): a uniform longitudinal field B_s over length L with hard edges, KS =
//! B_s/(Bρ) [m⁻¹].
//!
//! In canonical variables with the symmetric gauge A = B_s (−y, x, 0)/2 the Hamiltonian is
//!   H = −√((1+δ)² − (p_x + KS y/2)² − (p_y − KS x/2)²)
//! (Wolski, "Beam Dynamics in High Energy Particle Accelerators", §3.3). The mechanical momenta
//! k_x = p_x + KS y/2, k_y = p_y − KS x/2 and p_s are constants of the square root, so k rotates
//! at the rate ω = KS/p_s and
//!   x = x0 + (k_x0 sin ωs + k_y0 (1 − cos ωs))/KS,  y = y0 + (k_y0 sin ωs − k_x0 (1 − cos ωs))/KS,
//! with path length ℓ = L (1+δ)/p_s. Outside the field the canonical and mechanical momenta are
//! equal: the hard edges are contained in the change of gauge at entry and exit.

use super::{from_canonical, straight_drift, to_canonical};
use crate::exact::Coords;
use crate::tpsa::Real;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Solenoid {
    pub l: f64,
    pub ks: f64,
}

impl Solenoid {
    pub fn exact<R: Real>(&self, z: &mut Coords<R>) {
        let (px, py) = to_canonical(z);
        if self.ks == 0.0 {
            straight_drift(z, px, py, self.l);
            from_canonical(z, px, py);
            return;
        }
        let ks = R::cst(self.ks);
        let half = R::cst(0.5 * self.ks);
        let (x0, y0) = (z[0], z[2]);
        // Mechanical momenta inside (canonical momenta are continuous across the edge).
        let kx = px + half * y0;
        let ky = py - half * x0;
        let d1 = R::cst(1.0) + z[5];
        let ps = (d1 * d1 - kx * kx - ky * ky).sqrt();
        let wl = ks * R::cst(self.l) / ps;
        let (s, c) = (wl.sin(), wl.cos());
        let one_c = R::cst(1.0) - c;
        let x1 = x0 + (kx * s + ky * one_c) / ks;
        let y1 = y0 + (ky * s - kx * one_c) / ks;
        let kx1 = kx * c + ky * s;
        let ky1 = ky * c - kx * s;
        z[0] = x1;
        z[2] = y1;
        z[4] = z[4] + R::cst(self.l) * d1 / ps;
        // Back to the field-free gauge at the exit edge.
        from_canonical(z, kx1 - half * y1, ky1 + half * x1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elements::symplectic::{defect, jacobian};

    #[test]
    fn symplectic_and_focusing() {
        let s = Solenoid { l: 0.5, ks: 1.2 };
        let at = [1e-3, -2e-4, 5e-4, 3e-4, 0.0, 2e-3];
        let (worst, det) = defect(&jacobian(at, |z| s.exact(z)));
        assert!(worst < 1e-12 && det < 1e-12, "{worst:e} {det:e}");
        // Linear map: R21 = −(KS/2)² sin(KS L)/KS·... the solenoid focuses in both planes with
        // the thin-lens strength (KS/2)² L for small KS L; check the symmetric round focusing.
        let m = crate::map::Element::Solenoid(Solenoid { l: 1e-3, ks: 2.0 }).map2().r;
        let f = (2.0f64 / 2.0).powi(2) * 1e-3;
        assert!((m[1][0] + f).abs() < 1e-8, "{}", m[1][0]);
        assert!((m[3][2] + f).abs() < 1e-8, "{}", m[3][2]);
    }
}
