//! Thin and kick-integrated multipoles (MULT, KOCT) and orbit correctors (HKICK, VKICK, KICKER).
//!
//! A normal 2(n+1)-pole of integrated strength K_nL = (L/Bρ) ∂ⁿB_y/∂xⁿ [m⁻ⁿ] (ELEGANT's KNL with
//! ORDER n: 1 quadrupole, 2 sextupole, 3 octupole) gives the thin kick
//!   Δp_x − i Δp_y = −K_nL (x + i y)ⁿ / n!
//! (the real and imaginary parts of the multipole potential's gradient; e.g. A. Wolski, "Beam
//! Dynamics in High Energy Particle Accelerators", ICP 2014, eq. 3.15 and §3.2), in canonical
//! momenta normalised to p0 (so the slope changes by the kick/(1+δ)). A thick multipole of
//! length L is integrated by drift–kick–drift steps of strength K_nL/N each (ELEGANT's N_KICKS),
//! composed to the order asked ([`super::split`]).
//!
//! A corrector changes p_x by HKICK and p_y by VKICK [rad at p0] in its middle (drift L/2, kick,
//! drift L/2).

use super::{from_canonical, split, straight_drift, to_canonical};
use crate::exact::Coords;
use crate::tpsa::Real;

/// (Δp_x, Δp_y) of the normal multipole of order `n` with integrated strength `knl`.
pub fn kick<R: Real>(x: R, y: R, n: u8, knl: f64) -> (R, R) {
    // (x + i y)ⁿ by repeated multiplication.
    let (mut re, mut im) = (R::cst(1.0), R::cst(0.0));
    let mut factorial = 1.0;
    for k in 1..=n {
        let r = re * x - im * y;
        im = re * y + im * x;
        re = r;
        factorial *= k as f64;
    }
    let f = R::cst(knl / factorial);
    (-(f * re), f * im)
}

/// A normal multipole of order `order`, thin (`l` = 0) or kick-integrated over `l`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Multipole {
    pub l: f64,
    pub order: u8,
    /// Integrated strength K_nL [m⁻ⁿ].
    pub knl: f64,
    /// Kicks of the integrator (1 for thin).
    pub n_kicks: u32,
    /// Order of the integrator's steps: 2, 4 or 6 (ELEGANT's INTEGRATION_ORDER).
    pub integration_order: u8,
}

impl Multipole {
    /// The exact body (thin: the kick; thick: sixth-order steps short enough to be exact).
    pub fn exact<R: Real>(&self, z: &mut Coords<R>) {
        let steps = if self.l == 0.0 { 1 } else { crate::exact::default_steps(self.l) };
        self.track(z, steps, 6);
    }

    /// ELEGANT's kick integration (KQUAD, KSEXT, KOCT): `n_kicks` drift–kick–drift steps of
    /// order `integration_order` (2; 4: Forest & Ruth 1990 / Yoshida 1990; 6: Yoshida), in the
    /// Hamiltonian H = −p_s + Re[K_n (x + i y)ⁿ⁺¹/(n+1)!] of a straight multipole (Wolski,
    /// "Beam Dynamics in High Energy Particle Accelerators", §3.2 and ch. 10 on symplectic
    /// integrators). CUDA twin: `multipole::track` in kernels/multipole.cu, with
    /// [`Multipole::track_constants`].
    pub fn kick_drift<R: Real>(&self, z: &mut Coords<R>) {
        self.track(z, self.n_kicks.max(1) as usize, self.integration_order);
    }

    /// The constants of the CUDA twin `multipole::track` for `kick_drift`, computed with the
    /// host operations of [`Multipole::track`]: thin flag, order n, steps, weights, the thin
    /// kick's K_nL/n!; per weight w the drift w·t/2 and the kick's (K_n w t)/n! (t = L/steps).
    pub fn track_constants(&self) -> Vec<f64> {
        let factorial: f64 = (1..=self.order).fold(1.0, |f, k| f * f64::from(k));
        let steps = self.n_kicks.max(1) as usize;
        let w = super::yoshida(self.integration_order);
        let thin = self.l == 0.0;
        let mut k = vec![
            f64::from(u8::from(thin)),
            f64::from(self.order),
            steps as f64,
            w.len() as f64,
            self.knl / factorial,
        ];
        if !thin {
            let per_metre = self.knl / self.l;
            let step = self.l / steps as f64;
            for wk in w {
                k.push(0.5 * wk * step);
                k.push(per_metre * (wk * step) / factorial);
            }
        }
        k
    }

    fn track<R: Real>(&self, z: &mut Coords<R>, steps: usize, order: u8) {
        let (px, py) = to_canonical(z);
        let mut s = (*z, px, py);
        let (n, per_metre) = (self.order, if self.l == 0.0 { self.knl } else { self.knl / self.l });
        let kick_part = |s: &mut (Coords<R>, R, R), t: f64| {
            let (dx, dy) = kick(s.0[0], s.0[2], n, per_metre * t);
            s.1 = s.1 + dx;
            s.2 = s.2 + dy;
        };
        if self.l == 0.0 {
            kick_part(&mut s, 1.0);
        } else {
            split(
                &mut s,
                self.l,
                steps,
                order,
                &|s: &mut (Coords<R>, R, R), t| straight_drift(&mut s.0, s.1, s.2, t),
                &kick_part,
            );
        }
        *z = s.0;
        from_canonical(z, s.1, s.2);
    }
}

/// An orbit corrector: HKICK, VKICK or KICKER.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Kicker {
    pub l: f64,
    pub hkick: f64,
    pub vkick: f64,
}

impl Kicker {
    pub fn exact<R: Real>(&self, z: &mut Coords<R>) {
        let (mut px, mut py) = to_canonical(z);
        straight_drift(z, px, py, 0.5 * self.l);
        px = px + R::cst(self.hkick);
        py = py + R::cst(self.vkick);
        straight_drift(z, px, py, 0.5 * self.l);
        from_canonical(z, px, py);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elements::symplectic::{defect, jacobian};
    use crate::map::Element;

    #[test]
    fn kicks_of_the_low_orders() {
        let (x, y) = (2e-3, -1e-3);
        let (dx, dy) = kick(x, y, 1, 0.5);
        assert!((dx + 0.5 * x).abs() < 1e-18 && (dy - 0.5 * y).abs() < 1e-18);
        let (dx, dy) = kick(x, y, 2, 3.0);
        assert!((dx + 1.5 * (x * x - y * y)).abs() < 1e-18 && (dy - 3.0 * x * y).abs() < 1e-18);
        let (dx, dy) = kick(x, y, 3, 6.0);
        assert!((dx + (x * x * x - 3.0 * x * y * y)).abs() < 1e-18);
        assert!((dy - (3.0 * x * x * y - y * y * y)).abs() < 1e-18);
    }

    #[test]
    fn thin_lens_limit_of_the_quadrupole() {
        // A quadrupole of length L → 0 at fixed K1 L equals the thin MULT of ORDER=1.
        let k1l = 0.3;
        let thin = Element::Multipole(Multipole {
            l: 0.0,
            order: 1,
            knl: k1l,
            n_kicks: 1,
            integration_order: 4,
        })
        .map2();
        for l in [1e-2, 1e-3, 1e-4] {
            let thick = Element::Quad { l, k1: k1l / l }.map2();
            // R21 = −√K1 sin(√K1 L) = −K1L (1 − K1L·L/6 + …): the thin lens to O(L).
            let err = (thick.r[1][0] - thin.r[1][0]).abs();
            assert!((err - k1l * k1l * l / 6.0).abs() < 0.01 * err, "L {l}: {err:e}");
            assert!((thin.r[1][0] + k1l).abs() < 1e-15 && (thin.r[3][2] - k1l).abs() < 1e-15);
        }
        // A thick MULT of order 1 is the quadrupole.
        let m = Element::Multipole(Multipole {
            l: 0.4,
            order: 1,
            knl: 0.4 * 1.3,
            n_kicks: 8,
            integration_order: 4,
        })
        .map2();
        let q = Element::Quad { l: 0.4, k1: 1.3 }.map2();
        for i in 0..6 {
            for j in 0..6 {
                assert!((m.r[i][j] - q.r[i][j]).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn integrators_are_symplectic() {
        let at = [1e-3, -2e-4, 5e-4, 3e-4, 0.0, 2e-3];
        for m in [
            Multipole {
                l: 0.0,
                order: 2,
                knl: 4.0,
                n_kicks: 1,
                integration_order: 4,
            },
            Multipole {
                l: 0.3,
                order: 3,
                knl: 50.0,
                n_kicks: 6,
                integration_order: 4,
            },
        ] {
            for (label, j) in [
                ("exact", jacobian(at, |z| m.exact(z))),
                ("kick-drift", jacobian(at, |z| m.kick_drift(z))),
            ] {
                let (worst, det) = defect(&j);
                assert!(worst < 1e-12 && det < 1e-12, "{label} {m:?}: {worst:e} {det:e}");
            }
        }
        let k = Kicker {
            l: 0.2,
            hkick: 1e-3,
            vkick: -2e-3,
        };
        let (worst, det) = defect(&jacobian(at, |z| k.exact(z)));
        assert!(worst < 1e-12 && det < 1e-12);
    }

    #[test]
    fn corrector_kicks_the_reference() {
        let mut z = [0.0; 6];
        Kicker {
            l: 0.0,
            hkick: 1e-3,
            vkick: -2e-3,
        }
        .exact(&mut z);
        assert!((z[1] - 1e-3).abs() < 1e-8 && (z[3] + 2e-3).abs() < 1e-8);
    }
}
