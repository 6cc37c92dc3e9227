//! Truncated power series of order 2 in the six phase-space coordinates: the arithmetic that
//! turns an exact element map into its TRANSPORT coefficients (K. L. Brown, SLAC-75;
//! spec §2). A value
//!   a(z) = c + Σ_j g_j z_j + Σ_{j≤k} h_jk z_j z_k + O(z³)
//! is propagated through the exact map; the output's g are R_ij and its h are T_ijk in Brown's
//! convention (T_ijk = ½ ∂²M_i/∂z_j² for j = k, ∂²M_i/∂z_j∂z_k for j < k).

use std::ops::{Add, Div, Mul, Neg, Sub};

/// Number of phase-space coordinates.
pub const N: usize = 6;
/// Number of pairs j ≤ k.
pub const PAIRS: usize = N * (N + 1) / 2;

/// Index of the pair (j, k), j ≤ k, in the upper triangle stored row by row.
pub const fn pair(j: usize, k: usize) -> usize {
    let (j, k) = if j <= k { (j, k) } else { (k, j) };
    j * N - j * (j + 1) / 2 + k
}

/// An order-2 truncated power series in z_0..z_5.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tpsa2 {
    pub c: f64,
    pub g: [f64; N],
    pub h: [f64; PAIRS],
}

impl Tpsa2 {
    pub const fn constant(c: f64) -> Self {
        Self {
            c,
            g: [0.0; N],
            h: [0.0; PAIRS],
        }
    }

    /// The coordinate z_i itself, around the value `c`.
    pub fn variable(i: usize, c: f64) -> Self {
        let mut v = Self::constant(c);
        v.g[i] = 1.0;
        v
    }

    /// f(a) from f(c), f'(c), f''(c): f(c + δ) = f + f'δ + ½ f''δ² with δ = a − c.
    fn compose(self, f0: f64, f1: f64, f2: f64) -> Self {
        let mut out = Self::constant(f0);
        for j in 0..N {
            out.g[j] = f1 * self.g[j];
        }
        for j in 0..N {
            for k in j..N {
                let sq = if j == k {
                    self.g[j] * self.g[j]
                } else {
                    2.0 * self.g[j] * self.g[k]
                };
                out.h[pair(j, k)] = f1 * self.h[pair(j, k)] + 0.5 * f2 * sq;
            }
        }
        out
    }

    pub fn sqrt(self) -> Self {
        let r = self.c.sqrt();
        self.compose(r, 0.5 / r, -0.25 / (r * self.c))
    }

    pub fn recip(self) -> Self {
        let r = 1.0 / self.c;
        self.compose(r, -r * r, 2.0 * r * r * r)
    }

    pub fn sin(self) -> Self {
        let (s, c) = self.c.sin_cos();
        self.compose(s, c, -s)
    }

    pub fn cos(self) -> Self {
        let (s, c) = self.c.sin_cos();
        self.compose(c, -s, -c)
    }

    /// asin, with asin' = (1 − a²)^(−1/2) and asin'' = a (1 − a²)^(−3/2).
    pub fn asin(self) -> Self {
        let w = 1.0 / (1.0 - self.c * self.c).sqrt();
        self.compose(self.c.asin(), w, self.c * w * w * w)
    }
}

impl Add for Tpsa2 {
    type Output = Self;
    fn add(mut self, o: Self) -> Self {
        self.c += o.c;
        self.g.iter_mut().zip(o.g).for_each(|(a, b)| *a += b);
        self.h.iter_mut().zip(o.h).for_each(|(a, b)| *a += b);
        self
    }
}

impl Neg for Tpsa2 {
    type Output = Self;
    fn neg(mut self) -> Self {
        self.c = -self.c;
        self.g.iter_mut().for_each(|a| *a = -*a);
        self.h.iter_mut().for_each(|a| *a = -*a);
        self
    }
}

impl Sub for Tpsa2 {
    type Output = Self;
    fn sub(self, o: Self) -> Self {
        self + (-o)
    }
}

impl Mul for Tpsa2 {
    type Output = Self;
    fn mul(self, o: Self) -> Self {
        let mut out = Self::constant(self.c * o.c);
        for j in 0..N {
            out.g[j] = self.c * o.g[j] + o.c * self.g[j];
        }
        for j in 0..N {
            for k in j..N {
                let cross = if j == k {
                    self.g[j] * o.g[j]
                } else {
                    self.g[j] * o.g[k] + self.g[k] * o.g[j]
                };
                out.h[pair(j, k)] = self.c * o.h[pair(j, k)] + o.c * self.h[pair(j, k)] + cross;
            }
        }
        out
    }
}

impl Div for Tpsa2 {
    type Output = Self;
    #[allow(clippy::suspicious_arithmetic_impl)]
    fn div(self, o: Self) -> Self {
        self * o.recip()
    }
}

/// What the exact maps need of a number: f64 for tracking, [`Tpsa2`] for map coefficients.
pub trait Real: Copy + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self> + Neg<Output = Self> {
    fn cst(v: f64) -> Self;
    fn sqrt(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn asin(self) -> Self;
    /// The value at the expansion point (the number itself for f64).
    fn value(self) -> f64;
}

impl Real for f64 {
    fn cst(v: f64) -> Self {
        v
    }
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
    fn sin(self) -> Self {
        f64::sin(self)
    }
    fn cos(self) -> Self {
        f64::cos(self)
    }
    fn asin(self) -> Self {
        f64::asin(self)
    }
    fn value(self) -> f64 {
        self
    }
}

impl Real for Tpsa2 {
    fn cst(v: f64) -> Self {
        Tpsa2::constant(v)
    }
    fn sqrt(self) -> Self {
        Tpsa2::sqrt(self)
    }
    fn sin(self) -> Self {
        Tpsa2::sin(self)
    }
    fn cos(self) -> Self {
        Tpsa2::cos(self)
    }
    fn asin(self) -> Self {
        Tpsa2::asin(self)
    }
    fn value(self) -> f64 {
        self.c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Evaluate the series at z (order 2).
    fn eval(a: &Tpsa2, z: &[f64; N]) -> f64 {
        let mut v = a.c;
        for j in 0..N {
            v += a.g[j] * z[j];
            for k in j..N {
                v += a.h[pair(j, k)] * z[j] * z[k];
            }
        }
        v
    }

    #[test]
    fn pairs_cover_the_triangle_once() {
        let mut seen = [false; PAIRS];
        for j in 0..N {
            for k in j..N {
                assert!(!seen[pair(j, k)]);
                seen[pair(j, k)] = true;
                assert_eq!(pair(j, k), pair(k, j));
            }
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn series_of_known_functions() {
        // f(z) = sqrt(1 + z0 + 2 z1) / (3 + z2 z3): compare with the function at small z, error O(z³).
        let f = |z: &[f64; N]| (1.0 + z[0] + 2.0 * z[1]).sqrt() / (3.0 + z[2] * z[3]);
        let v = |i| Tpsa2::variable(i, 0.0);
        let s = (Tpsa2::constant(1.0) + v(0) + Tpsa2::constant(2.0) * v(1)).sqrt() / (Tpsa2::constant(3.0) + v(2) * v(3));
        for eps in [1e-2, 1e-3] {
            let z = [eps, -0.7 * eps, 0.3 * eps, 1.1 * eps, 0.0, 0.0];
            let err = (eval(&s, &z) - f(&z)).abs();
            assert!(err < 2.0 * eps * eps * eps, "eps {eps}: {err}");
        }
    }
}
