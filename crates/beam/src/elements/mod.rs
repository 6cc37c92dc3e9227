//! Element bodies beyond the drift and the straight multipole of [`crate::exact`]: sector and
//! rectangular bends ([`bend`]), thin and kick-integrated multipoles and kickers ([`multipole`]),
//! the solenoid ([`solenoid`]) and the RF cavity ([`rf`]).
//!
//! All are written in the canonical variables of the accelerator Hamiltonian (x, p_x, y, p_y,
//! with momenta normalised to p0, δ the relative momentum deviation and the path length ℓ as
//! the coordinate conjugate to −δ), generic over [`Real`] so the same code tracks f64 particles
//! and yields second-order maps through [`crate::tpsa::Tpsa2`]. At element boundaries they
//! convert from and to ELEGANT's slopes x' = p_x/p_s (p_s = √((1+δ)² − p_x² − p_y²)).

pub mod bend;
#[cfg(test)]
mod kick_tests;
pub mod multipole;
pub mod rf;
pub mod solenoid;

use crate::exact::Coords;
use crate::tpsa::Real;

/// ELEGANT slopes → canonical momenta: p_x = (1+δ) x' / √(1 + x'² + y'²).
pub fn to_canonical<R: Real>(z: &Coords<R>) -> (R, R) {
    let one = R::cst(1.0);
    let f = (one + z[5]) / (one + z[1] * z[1] + z[3] * z[3]).sqrt();
    (z[1] * f, z[3] * f)
}

/// Canonical momenta → ELEGANT slopes x' = p_x/p_s, y' = p_y/p_s.
pub fn from_canonical<R: Real>(z: &mut Coords<R>, px: R, py: R) {
    let ps = longitudinal(z[5], px, py);
    z[1] = px / ps;
    z[3] = py / ps;
}

/// p_s = √((1+δ)² − p_x² − p_y²).
pub fn longitudinal<R: Real>(delta: R, px: R, py: R) -> R {
    let d1 = R::cst(1.0) + delta;
    (d1 * d1 - px * px - py * py).sqrt()
}

/// The exact field-free drift over `t` [m] in canonical variables (H = −p_s):
/// x += t p_x/p_s, y += t p_y/p_s, ℓ += t (1+δ)/p_s.
pub fn straight_drift<R: Real>(z: &mut Coords<R>, px: R, py: R, t: f64) {
    let ps = longitudinal(z[5], px, py);
    let tt = R::cst(t);
    z[0] = z[0] + tt * px / ps;
    z[2] = z[2] + tt * py / ps;
    z[4] = z[4] + tt * (R::cst(1.0) + z[5]) / ps;
}

/// Rotate transverse coordinates and slopes into a frame turned by `angle` about the beam axis
/// (ELEGANT's TILT). CUDA twin: `elements::rotate` in kernels/elements.cu (with the host's
/// cos and sin of the angle).
pub fn rotate<R: Real>(z: &mut Coords<R>, angle: f64) {
    if angle == 0.0 {
        return;
    }
    let (sn, cs) = angle.sin_cos();
    let (c, s) = (R::cst(cs), R::cst(sn));
    let (x, y) = (z[0], z[2]);
    z[0] = c * x + s * y;
    z[2] = c * y - s * x;
    let (xp, yp) = (z[1], z[3]);
    z[1] = c * xp + s * yp;
    z[3] = c * yp - s * xp;
}

/// Weights w_k (Σ w_k = 1) of the symmetric compositions of the second-order step
/// S2(t) = A(t/2) B(t) A(t/2) that reach `order` 2, 4 or 6 by Yoshida's triple jump
/// (H. Yoshida, Phys. Lett. A 150 (1990) 262): S4 = S2(a) S2(1−2a) S2(a) with a = 1/(2 − 2^{1/3}),
/// S6 = S4(c) S4(1−2c) S4(c) with c = 1/(2 − 2^{1/5}). Each composition is symplectic when A and
/// B are.
pub fn yoshida(order: u8) -> Vec<f64> {
    let a = 1.0 / (2.0 - 2f64.powf(1.0 / 3.0));
    let c = 1.0 / (2.0 - 2f64.powf(1.0 / 5.0));
    let s4 = [a, 1.0 - 2.0 * a, a];
    match order {
        2 => vec![1.0],
        4 => s4.to_vec(),
        _ => [c, 1.0 - 2.0 * c, c]
            .iter()
            .flat_map(|w6| s4.iter().map(move |w4| w6 * w4))
            .collect(),
    }
}

/// The integration orders [`split`] offers (ELEGANT's INTEGRATION_ORDER).
pub const INTEGRATION_ORDERS: [u8; 3] = [2, 4, 6];

/// Apply `steps` compositions of order `order` of A(t/2) B(t) A(t/2) over `l`: `a(z, t)` and
/// `b(z, t)` are the two exactly solved parts of the Hamiltonian.
pub fn split<S>(state: &mut S, l: f64, steps: usize, order: u8, a: &impl Fn(&mut S, f64), b: &impl Fn(&mut S, f64)) {
    let h = l / steps.max(1) as f64;
    let w = yoshida(order);
    for _ in 0..steps.max(1) {
        for &wk in &w {
            a(state, 0.5 * wk * h);
            b(state, wk * h);
            a(state, 0.5 * wk * h);
        }
    }
}

#[cfg(test)]
pub(crate) mod symplectic {
    //! The test of every integrator: its Jacobian in canonical variables M satisfies
    //! Mᵀ J M = J (and so det M = 1).
    use crate::exact::Coords;
    use crate::tpsa::Tpsa2;

    /// Jacobian at `at` (canonical x, p_x, y, p_y, −ℓ, δ) of an element map written in ELEGANT
    /// coordinates, in canonical variables.
    pub fn jacobian(at: [f64; 6], map: impl Fn(&mut Coords<Tpsa2>)) -> [[f64; 6]; 6] {
        let q: [Tpsa2; 6] = std::array::from_fn(|i| Tpsa2::variable(i, at[i]));
        let ps = super::longitudinal(q[5], q[1], q[3]);
        let mut z: Coords<Tpsa2> = [q[0], q[1] / ps, q[2], q[3] / ps, -q[4], q[5]];
        map(&mut z);
        let (px, py) = super::to_canonical(&z);
        let out = [z[0], px, z[2], py, -z[4], z[5]];
        std::array::from_fn(|i| out[i].g)
    }

    /// max |Mᵀ J M − J| and |det M − 1|.
    pub fn defect(m: &[[f64; 6]; 6]) -> (f64, f64) {
        let j = |a: usize, b: usize| -> f64 {
            if a / 2 == b / 2 && a != b {
                if a.is_multiple_of(2) {
                    1.0
                } else {
                    -1.0
                }
            } else {
                0.0
            }
        };
        let mut worst: f64 = 0.0;
        for a in 0..6 {
            for b in 0..6 {
                let mut v = 0.0;
                for k in 0..6 {
                    for l in 0..6 {
                        v += m[k][a] * j(k, l) * m[l][b];
                    }
                }
                worst = worst.max((v - j(a, b)).abs());
            }
        }
        (worst, (det(m) - 1.0).abs())
    }

    /// Determinant by Gaussian elimination with partial pivoting.
    pub fn det(m: &[[f64; 6]; 6]) -> f64 {
        let mut a = *m;
        let mut d = 1.0;
        for c in 0..6 {
            let p = (c..6).max_by(|&i, &k| a[i][c].abs().total_cmp(&a[k][c].abs())).unwrap();
            if a[p][c] == 0.0 {
                return 0.0;
            }
            if p != c {
                a.swap(p, c);
                d = -d;
            }
            d *= a[c][c];
            for r in c + 1..6 {
                let f = a[r][c] / a[c][c];
                for k in c..6 {
                    a[r][k] -= f * a[c][k];
                }
            }
        }
        d
    }
}
