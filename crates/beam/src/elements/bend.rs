//! Sector bends (SBEN/SBEND/CSBEND) and rectangular bends (RBEN/RBEND, a sector bend with ANGLE/2
//! added to both edge angles).
//!
//! Body. In the curvilinear frame of the reference arc (curvature h = ANGLE/L) the Hamiltonian,
//! with momenta normalised to p0, is
//!   H = −(1 + h x) p_s + h x + h² x²/2 + K1 (x² − y²)/2 + K2 (x³ − 3 x y²)/6,
//!   p_s = √((1+δ)² − p_x² − p_y²),
//! where the first three terms are the uniform dipole field of the design (vector potential
//! A_s ∝ x + h x²/2 in the curved frame; E. Forest, "Beam Dynamics: A New Attitude and
//! Framework", Harwood 1998, ch. 12) and the gradient and sextupole terms are taken as the
//! straight-multipole potentials (K1 [m⁻²], K2 [m⁻³] normalised to p0, ELEGANT's sign: K1 > 0
//! focuses in x). The dipole part is solved exactly ([`dipole`]): the particle moves on a circle
//! in the lab, and the momentum Q = p − k0 ẑ × P is conserved (P the position in the bend
//! plane, k0 = h the normalised field), which gives the exit point and momentum in the frame
//! turned by φ = h t. The multipole terms are kicks; the two are composed with Yoshida's
//! symplectic triple jump ([`super::split`]). With K1 = K2 = 0 the body is one exact step.
//!
//! The linear part of this body is TRANSPORT's sector bend (K. L. Brown, SLAC-75 rev. 4 (1982),
//! eqs. for the bending magnet with field index: k_x² = h² + K1, k_y² = −K1) — tested in
//! `linear_map_is_the_analytic_sector_matrix`.
//!
//! Edges. The hard-edge pole-face rotation E1/E2 with the fringe-field correction of Brown
//! (SLAC-75, §"fringing fields"; the same as MAD-X's HGAP/FINT): a thin linear kick
//!   p_x += h tan(e) x,   p_y −= h tan(e − ψ) y,   ψ = 2 FINT HGAP h (1 + sin² e)/cos e,
//! in canonical momenta (so x' changes by h tan(e) x/(1+δ): the edge's field is fixed and the
//! particle's rigidity scales with 1+δ). Its second-order terms (Brown's T_ijk of the edge) are
//! not modelled.

use super::{from_canonical, split, straight_drift, to_canonical};
use crate::exact::Coords;
use crate::tpsa::Real;

/// A sector bend; a rectangular bend is one with ANGLE/2 added to `e1` and `e2`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bend {
    /// Arc length of the reference orbit [m].
    pub l: f64,
    /// Bending angle [rad] (positive bends towards −x).
    pub angle: f64,
    /// Gradient K1 [m⁻²] and sextupole K2 [m⁻³].
    pub k1: f64,
    pub k2: f64,
    /// Edge angles [rad] at entrance and exit.
    pub e1: f64,
    pub e2: f64,
    /// Half gap [m] and fringe-field integral of both edges.
    pub hgap: f64,
    pub fint: f64,
    /// Steps of the kick–drift integrator ([`Bend::kick_drift`]).
    pub n_kicks: u32,
}

impl Bend {
    pub fn h(&self) -> f64 {
        self.angle / self.l
    }

    /// The exact map (to rounding): edge, body integrated with sixth-order steps short enough
    /// that the result is exact, edge.
    pub fn exact<R: Real>(&self, z: &mut Coords<R>) {
        let steps = if self.k1 == 0.0 && self.k2 == 0.0 {
            1
        } else {
            crate::exact::default_steps(self.l)
        };
        self.track(z, steps, 6);
    }

    /// ELEGANT CSBEND's kick–drift integration: `n_kicks` fourth-order symplectic steps
    /// (Forest–Ruth/Yoshida) of exact dipole arcs and multipole kicks.
    pub fn kick_drift<R: Real>(&self, z: &mut Coords<R>) {
        self.track(z, self.n_kicks.max(1) as usize, 4);
    }

    fn track<R: Real>(&self, z: &mut Coords<R>, steps: usize, order: u8) {
        let h = self.h();
        let (px, py) = to_canonical(z);
        let mut s = (*z, px, py);
        edge(&mut s.0, &mut s.1, &mut s.2, h, self.e1, self.hgap, self.fint);
        if self.k1 == 0.0 && self.k2 == 0.0 {
            dipole(&mut s.0, &mut s.1, &mut s.2, h, self.l);
        } else {
            let (k1, k2) = (self.k1, self.k2);
            split(
                &mut s,
                self.l,
                steps,
                order,
                &|s: &mut (Coords<R>, R, R), t| dipole(&mut s.0, &mut s.1, &mut s.2, h, t),
                &|s: &mut (Coords<R>, R, R), t| {
                    let (x, y) = (s.0[0], s.0[2]);
                    let tt = R::cst(t);
                    // ṗ_x = −∂V/∂x, ṗ_y = −∂V/∂y.
                    s.1 = s.1 - tt * (R::cst(k1) * x + R::cst(0.5 * k2) * (x * x - y * y));
                    s.2 = s.2 + tt * (R::cst(k1) * y + R::cst(k2) * x * y);
                },
            );
        }
        edge(&mut s.0, &mut s.1, &mut s.2, h, self.e2, self.hgap, self.fint);
        *z = s.0;
        from_canonical(z, s.1, s.2);
    }
}

/// Fringe-field correction angle ψ = 2 FINT HGAP h (1 + sin² e)/cos e (Brown, SLAC-75).
pub fn fringe_angle(h: f64, e: f64, hgap: f64, fint: f64) -> f64 {
    2.0 * fint * hgap * h * (1.0 + e.sin().powi(2)) / e.cos()
}

/// The hard-edge pole-face kick: p_x += h tan(e) x, p_y −= h tan(e − ψ) y.
pub fn edge<R: Real>(z: &mut Coords<R>, px: &mut R, py: &mut R, h: f64, e: f64, hgap: f64, fint: f64) {
    if h == 0.0 || (e == 0.0 && (hgap == 0.0 || fint == 0.0)) {
        return;
    }
    let psi = fringe_angle(h, e, hgap, fint);
    *px = *px + R::cst(h * e.tan()) * z[0];
    *py = *py - R::cst(h * (e - psi).tan()) * z[2];
}

/// The exact flow over arc length `t` of H = −(1 + h x) p_s + h x + h² x²/2 (a uniform field
/// whose normalised strength equals the curvature h ≠ 0), in canonical variables.
///
/// With P the particle's position in the bend plane measured from the centre of curvature and
/// p its in-plane momentum, Q = p − h ẑ × P is constant. At entry P = (1/h + x) x̂ and
/// p = p_x x̂ + p_s t̂; at exit the frame is turned by φ = h t, and the components of Q in it give
///   p_x1 = p_x cos φ + (p_s − 1 − h x) sin φ,
///   x_1  = x cos φ + (p_s1 − p_s cos φ + p_x sin φ − (1 − cos φ))/h,   p_s1 = √(p⊥² − p_x1²),
/// p⊥² = (1+δ)² − p_y². The momentum turns by α = φ + asin(p_x/p⊥) − asin(p_x1/p⊥) along a
/// helix of path length ℓ = α (1+δ)/h, over which y advances by α p_y/h.
pub fn dipole<R: Real>(z: &mut Coords<R>, px: &mut R, py: &mut R, h: f64, t: f64) {
    let one = R::cst(1.0);
    let phi = h * t;
    let (s, c) = phi.sin_cos();
    let one_minus_c = 2.0 * (0.5 * phi).sin().powi(2);
    let d1 = one + z[5];
    let pperp2 = d1 * d1 - *py * *py;
    let ps = (pperp2 - *px * *px).sqrt();
    let x = z[0];
    let px1 = *px * R::cst(c) + (ps - one - R::cst(h) * x) * R::cst(s);
    let ps1 = (pperp2 - px1 * px1).sqrt();
    let x1 = x * R::cst(c) + (ps1 - ps * R::cst(c) + *px * R::cst(s) - R::cst(one_minus_c)) * R::cst(1.0 / h);
    let pperp = pperp2.sqrt();
    let alpha = R::cst(phi) + (*px / pperp).asin() - (px1 / pperp).asin();
    z[0] = x1;
    z[2] = z[2] + alpha * *py * R::cst(1.0 / h);
    z[4] = z[4] + alpha * d1 * R::cst(1.0 / h);
    *px = px1;
}

/// A straight exact drift in the canonical state of [`Bend::track`] (for zero-angle "bends"
/// the caller uses the straight multipole instead).
#[allow(dead_code)]
fn drift_state<R: Real>(s: &mut (Coords<R>, R, R), t: f64) {
    straight_drift(&mut s.0, s.1, s.2, t);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elements::symplectic::{defect, jacobian};
    use crate::map::Element;

    fn bend(l: f64, angle: f64) -> Bend {
        Bend {
            l,
            angle,
            k1: 0.0,
            k2: 0.0,
            e1: 0.0,
            e2: 0.0,
            hgap: 0.0,
            fint: 0.0,
            n_kicks: 4,
        }
    }

    /// Brown's first-order sector bend (SLAC-75) with k_x² = h² + K1, k_y² = −K1.
    fn analytic(l: f64, h: f64, k1: f64) -> [[f64; 6]; 6] {
        let mut r = [[0.0; 6]; 6];
        let kx2 = h * h + k1;
        let (cx, sx, dx, i1) = trig(kx2, l);
        r[0][0] = cx;
        r[0][1] = sx;
        r[1][0] = -kx2 * sx;
        r[1][1] = cx;
        r[0][5] = h * dx;
        r[1][5] = h * sx;
        r[4][0] = h * sx;
        r[4][1] = h * dx;
        r[4][5] = h * h * i1;
        let (cy, sy, _, _) = trig(-k1, l);
        r[2][2] = cy;
        r[2][3] = sy;
        r[3][2] = k1 * sy;
        r[3][3] = cy;
        r[4][4] = 1.0;
        r[5][5] = 1.0;
        r
    }

    /// C, S, D = (1 − C)/k², and ∫₀ᴸ D = (L − S)/k² of the focusing k² over L.
    fn trig(k2: f64, l: f64) -> (f64, f64, f64, f64) {
        if k2 > 0.0 {
            let k = k2.sqrt();
            let (c, s) = ((k * l).cos(), (k * l).sin() / k);
            (c, s, (1.0 - c) / k2, (l - s) / k2)
        } else if k2 < 0.0 {
            let k = (-k2).sqrt();
            let (c, s) = ((k * l).cosh(), (k * l).sinh() / k);
            (c, s, (1.0 - c) / k2, (l - s) / k2)
        } else {
            (1.0, l, 0.5 * l * l, l * l * l / 6.0)
        }
    }

    #[test]
    fn linear_map_is_the_analytic_sector_matrix() {
        for (l, angle, k1) in [(1.2, 0.15, 0.0), (2.0, -0.3, 0.4), (0.8, 0.05, -0.9)] {
            let b = Bend { k1, ..bend(l, angle) };
            let r = Element::Bend(b).map2().r;
            let a = analytic(l, angle / l, k1);
            for i in 0..6 {
                for j in 0..6 {
                    assert!(
                        (r[i][j] - a[i][j]).abs() < 1e-11,
                        "L {l} angle {angle} K1 {k1}: R{}{} = {} vs {}",
                        i + 1,
                        j + 1,
                        r[i][j],
                        a[i][j]
                    );
                }
            }
        }
    }

    #[test]
    fn reference_orbit_stays_on_axis_and_advances_the_arc() {
        let b = bend(2.5, 0.2);
        let mut z = [0.0; 6];
        b.exact(&mut z);
        assert!(z[0].abs() < 1e-15 && z[1].abs() < 1e-15);
        assert!((z[4] - 2.5).abs() < 1e-14);
    }

    #[test]
    fn edge_focusing_is_brown_s() {
        // A bend of vanishing length: only the two edges act.
        let (h, e, hgap, fint) = (0.5, 0.2, 0.03, 0.5);
        let mut px = 0.0;
        let mut py = 0.0;
        let mut z = [1e-3, 0.0, 2e-3, 0.0, 0.0, 0.0];
        edge(&mut z, &mut px, &mut py, h, e, hgap, fint);
        let psi = 2.0 * fint * hgap * h * (1.0 + e.sin().powi(2)) / e.cos();
        assert!((px - h * e.tan() * 1e-3).abs() < 1e-18);
        assert!((py + h * (e - psi).tan() * 2e-3).abs() < 1e-18);
        // A rectangular bend: the sector's horizontal focusing h² L is cancelled to first order.
        let (l, angle) = (1.0, 0.1);
        let rb = Bend {
            e1: angle / 2.0,
            e2: angle / 2.0,
            ..bend(l, angle)
        };
        let r = Element::Bend(rb).map2().r;
        let h = angle / l;
        let (c, s, ..) = trig(h * h, l);
        let t = h * (angle / 2.0).tan();
        // R21 of edge · sector · edge.
        let r21 = t * c + (-h * h * s) + t * (c + s * t);
        assert!((r[1][0] - r21).abs() < 1e-12, "{} vs {r21}", r[1][0]);
        // Vertical: the two edges focus, R43 = −2 t + t² L.
        assert!((r[3][2] - (-2.0 * t + t * t * l)).abs() < 1e-12);
    }

    #[test]
    fn integrators_are_symplectic() {
        let at = [1e-3, -2e-4, 5e-4, 3e-4, 0.0, 2e-3];
        let cases = [
            bend(1.5, 0.2),
            Bend {
                k1: -0.6,
                k2: 3.0,
                e1: 0.05,
                e2: -0.02,
                hgap: 0.02,
                fint: 0.5,
                ..bend(1.0, 0.3)
            },
        ];
        for b in cases {
            for (label, m) in [
                ("exact", jacobian(at, |z| b.exact(z))),
                ("kick-drift", jacobian(at, |z| b.kick_drift(z))),
            ] {
                let (worst, det) = defect(&m);
                assert!(worst < 1e-12 && det < 1e-12, "{label} {b:?}: MᵀJM − J {worst:e}, det − 1 {det:e}");
            }
        }
    }

    #[test]
    fn kick_drift_converges_to_the_exact_body() {
        let b = Bend {
            k1: 0.8,
            k2: 5.0,
            ..bend(1.0, 0.25)
        };
        let z0 = [2e-3, 1e-4, -1e-3, 2e-4, 0.0, 1e-3];
        let mut exact = z0;
        b.exact(&mut exact);
        let mut prev = f64::INFINITY;
        for n in [2, 4, 8, 16] {
            let mut z = z0;
            Bend { n_kicks: n, ..b }.kick_drift(&mut z);
            let err = (0..5).map(|i| (z[i] - exact[i]).abs()).fold(0.0, f64::max);
            assert!(err < prev / 10.0 || err < 1e-15, "n {n}: {err:e} after {prev:e}");
            prev = err;
        }
    }

    #[test]
    fn thin_bend_limit_is_a_kick() {
        // L → 0 at fixed angle: x' changes by −θ δ/(1+δ) only (the dipole kick on an
        // off-momentum particle), x unchanged.
        let (angle, d) = (1e-4, 1e-3);
        let mut z = [0.0, 0.0, 0.0, 0.0, 0.0, d];
        bend(1e-6, angle).exact(&mut z);
        assert!((z[1] - angle * d / (1.0 + d)).abs() < 1e-14, "{}", z[1]);
        assert!(z[0].abs() < 1e-12);
    }
}
