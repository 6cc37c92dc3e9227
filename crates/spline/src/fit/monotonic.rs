//! Monotonic fits (photospline's `monodim`): along one axis the coefficients are written as
//! cumulative sums of non-negative increments, c = T a with T = I ⊗ … ⊗ T_d ⊗ … ⊗ I and T_d the
//! lower triangle of ones (c_i = Σ_{j ≤ i} a_j along axis d; photospline's "T-spline" basis), and
//! the penalized least squares is solved for a ≥ 0. A spline whose coefficients do not decrease
//! along an axis does not decrease along it (B-splines form a partition of unity and their
//! derivative is a combination of coefficient differences, de Boor 1978 ch. X), and a ≥ 0 also
//! keeps it non-negative, as photospline's fits of CDFs need.
//!
//! In a, the objective ½ aᵀ (TᵀMT) a − (Tᵀr)ᵀ a with M = BᵀWB + Σλ P and r = BᵀWz is minimised
//! over a ≥ 0 by block principal pivoting (J. Kim & H. Park, "Fast nonnegative matrix
//! factorization: an active-set-like method and comparisons", SIAM J. Sci. Comput. 33 (2011)
//! 3261, Algorithm 1, after Júdice & Pires 1994): the passive set F and its complement G are
//! exchanged in blocks until the KKT conditions a_F ≥ 0, y_G = (M_a a − r_a)_G ≥ 0 hold, each
//! step one Cholesky factorisation of M_a restricted to F.

use super::cholesky;

/// (TᵀMT, Tᵀr) for the cumulative-sum map along `axis` of coefficients of shape `n_ax` (C order).
/// (MT)[p, q] = Σ_{s_d ≥ q_d} M[p, s]: a reverse cumulative sum along the axis in every row; Tᵀ
/// does the same down the columns.
pub fn transform(m: &mut [f64], r: &mut [f64], n_ax: &[usize], axis: usize) {
    let n: usize = n_ax.iter().product();
    let stride: usize = n_ax[axis + 1..].iter().product();
    let na = n_ax[axis];
    // Element i of line l along the axis sits at line_start(l) + i·stride.
    let line_start = |l: usize| l / stride * na * stride + l % stride;
    let reverse_cumsum = |v: &mut [f64]| {
        for l in 0..n / na {
            let s = line_start(l);
            for i in (0..na - 1).rev() {
                v[s + i * stride] += v[s + (i + 1) * stride];
            }
        }
    };
    for row in m.chunks_mut(n) {
        reverse_cumsum(row);
    }
    // Down the columns: whole rows added at once (row p += row p + stride along the axis).
    for l in 0..n / na {
        let s = line_start(l);
        for i in (0..na - 1).rev() {
            let (a, b) = (s + i * stride, s + (i + 1) * stride);
            let (top, bottom) = m.split_at_mut(b * n);
            for (x, y) in top[a * n..a * n + n].iter_mut().zip(&bottom[..n]) {
                *x += y;
            }
        }
    }
    reverse_cumsum(r);
}

/// c = T a: the cumulative sums along `axis`.
pub fn coefficients(a: &[f64], n_ax: &[usize], axis: usize) -> Vec<f64> {
    let n: usize = n_ax.iter().product();
    let stride: usize = n_ax[axis + 1..].iter().product();
    let na = n_ax[axis];
    let mut c = a.to_vec();
    for l in 0..n / na {
        let start = l / stride * na * stride + l % stride;
        for i in 1..na {
            c[start + i * stride] += c[start + (i - 1) * stride];
        }
    }
    c
}

/// Why the non-negative solve stopped early.
#[derive(Debug, Clone, PartialEq)]
pub enum Stop {
    /// The factor of M_FF found a non-positive pivot (index in the full problem).
    Singular {
        index: usize,
        pivot: f64,
        diagonal: f64,
    },
    Cancelled,
    /// No KKT point within the iteration limit (does not happen for positive definite M).
    NoConvergence(usize),
}

/// Most exchanges of the block principal pivoting (Kim & Park report tens for thousands of
/// variables; each costs one factorisation).
pub const MAX_EXCHANGES: usize = 500;

/// Minimise ½ aᵀ M a − rᵀ a over a ≥ 0 (M symmetric positive definite, n × n, row-major):
/// returns a and the number of exchanges. `keep_going` is asked between exchanges and between
/// the block columns of each exchange's factorisation (Ctrl-C within one block column).
pub fn nnls(m: &[f64], r: &[f64], mut keep_going: impl FnMut() -> bool) -> Result<(Vec<f64>, usize), Stop> {
    let n = r.len();
    let scale = (0..n).map(|i| m[i * n + i].abs()).fold(0.0f64, f64::max).max(f64::MIN_POSITIVE);
    let rscale = r.iter().fold(0.0f64, |s, v| s.max(v.abs())).max(f64::MIN_POSITIVE);
    // Tolerances of the sign tests: rounding of a solve of n terms.
    let tol_y = 1e-12 * rscale.max(scale);
    let mut passive = vec![true; n];
    let (mut best_infeasible, mut backup) = (n + 1, 3usize);
    for exchanges in 0..MAX_EXCHANGES {
        if !keep_going() {
            return Err(Stop::Cancelled);
        }
        let a = solve_passive(m, r, &passive, &mut keep_going)?;
        // y = M a − r on G.
        let mut infeasible = Vec::new();
        for i in 0..n {
            if passive[i] {
                if a[i] < 0.0 {
                    infeasible.push(i);
                }
            } else {
                let y: f64 = (0..n).filter(|&j| passive[j]).map(|j| m[i * n + j] * a[j]).sum::<f64>() - r[i];
                if y < -tol_y {
                    infeasible.push(i);
                }
            }
        }
        if infeasible.is_empty() {
            return Ok((a, exchanges));
        }
        if infeasible.len() < best_infeasible {
            best_infeasible = infeasible.len();
            backup = 3;
            for &i in &infeasible {
                passive[i] = !passive[i];
            }
        } else if backup > 0 {
            backup -= 1;
            for &i in &infeasible {
                passive[i] = !passive[i];
            }
        } else {
            // Murty's rule: exchange only the largest infeasible index (finite termination).
            let i = *infeasible.last().expect("not empty");
            passive[i] = !passive[i];
        }
    }
    Err(Stop::NoConvergence(MAX_EXCHANGES))
}

/// a_F = M_FF⁻¹ r_F, a_G = 0.
fn solve_passive(m: &[f64], r: &[f64], passive: &[bool], keep_going: &mut impl FnMut() -> bool) -> Result<Vec<f64>, Stop> {
    let n = r.len();
    let idx: Vec<usize> = (0..n).filter(|&i| passive[i]).collect();
    let k = idx.len();
    let mut a = vec![0.0; n];
    if k == 0 {
        return Ok(a);
    }
    let mut sub = Vec::with_capacity(k * k);
    for &p in &idx {
        sub.extend(idx.iter().map(|&q| m[p * n + q]));
    }
    cholesky::factor(&mut sub, k, |_| keep_going()).map_err(|e| match e {
        cholesky::Stop::Singular { index, pivot, diagonal } => Stop::Singular {
            index: idx[index],
            pivot,
            diagonal,
        },
        cholesky::Stop::Cancelled => Stop::Cancelled,
    })?;
    let rhs: Vec<f64> = idx.iter().map(|&p| r[p]).collect();
    let x = cholesky::solve(&sub, k, &rhs);
    for (t, &p) in idx.iter().enumerate() {
        a[p] = x[t];
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small SPD matrix M = R Rᵀ + I from a fixed generator.
    fn spd(n: usize, seed: u64) -> Vec<f64> {
        let mut rng = warpdrive_core::rng::RandomStream::new(seed, 1, 0);
        let r: Vec<f64> = (0..n * n).map(|_| rng.uniform_f64() - 0.5).collect();
        let mut m = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                m[i * n + j] = (0..n).map(|p| r[i * n + p] * r[j * n + p]).sum::<f64>() + if i == j { 0.3 } else { 0.0 };
            }
        }
        m
    }

    fn objective(m: &[f64], r: &[f64], a: &[f64]) -> f64 {
        let n = r.len();
        let mut q = 0.0;
        for i in 0..n {
            for j in 0..n {
                q += 0.5 * a[i] * m[i * n + j] * a[j];
            }
            q -= r[i] * a[i];
        }
        q
    }

    /// Against brute force: every one of the 2ⁿ passive sets solved, the feasible KKT point with
    /// the lowest objective kept.
    #[test]
    fn nnls_equals_enumeration_of_active_sets() {
        for seed in 0..40u64 {
            let n = 7;
            let m = spd(n, seed);
            let mut rng = warpdrive_core::rng::RandomStream::new(seed, 2, 0);
            let r: Vec<f64> = (0..n).map(|_| rng.uniform_f64() - 0.4).collect();
            let (a, _) = nnls(&m, &r, || true).unwrap();
            let mut best = (f64::INFINITY, vec![]);
            for mask in 0..(1u32 << n) {
                let passive: Vec<bool> = (0..n).map(|i| mask >> i & 1 == 1).collect();
                let x = solve_passive(&m, &r, &passive, &mut || true).unwrap();
                if x.iter().all(|&v| v >= 0.0) {
                    let f = objective(&m, &r, &x);
                    if f < best.0 {
                        best = (f, x);
                    }
                }
            }
            for i in 0..n {
                assert!(
                    (a[i] - best.1[i]).abs() <= 1e-10 * (1.0 + best.1[i].abs()),
                    "seed {seed}: {a:?} vs {:?}",
                    best.1
                );
            }
        }
    }

    #[test]
    fn transform_is_t_transpose_m_t() {
        let n_ax = [3usize, 4, 2];
        let n: usize = n_ax.iter().product();
        for axis in 0..3 {
            let m0 = spd(n, 9);
            let r0: Vec<f64> = (0..n).map(|i| i as f64 * 0.1 - 1.0).collect();
            // T as a dense matrix: column q is the cumulative map of the unit vector e_q.
            let mut t = vec![0.0; n * n];
            for q in 0..n {
                let mut e = vec![0.0; n];
                e[q] = 1.0;
                let c = coefficients(&e, &n_ax, axis);
                for p in 0..n {
                    t[p * n + q] = c[p];
                }
            }
            let (mut m, mut r) = (m0.clone(), r0.clone());
            transform(&mut m, &mut r, &n_ax, axis);
            for p in 0..n {
                let rp: f64 = (0..n).map(|s| t[s * n + p] * r0[s]).sum();
                assert!((r[p] - rp).abs() < 1e-12, "axis {axis} r[{p}]");
                for q in 0..n {
                    let v: f64 = (0..n)
                        .map(|s| (0..n).map(|u| t[s * n + p] * m0[s * n + u] * t[u * n + q]).sum::<f64>())
                        .sum();
                    assert!((m[p * n + q] - v).abs() < 1e-10, "axis {axis} m[{p},{q}] {} vs {v}", m[p * n + q]);
                }
            }
        }
    }

    /// Ctrl-C during an exchange's factorisation stops the solve there, not after it: with
    /// 3 × 64 + 1 variables the factor asks between its block columns.
    #[test]
    fn a_stop_during_the_factorisation_is_seen() {
        let n = 3 * 64 + 1;
        let m: Vec<f64> = (0..n * n).map(|k| if k % (n + 1) == 0 { 2.0 } else { 0.0 }).collect();
        let r = vec![1.0; n];
        // Uncancelled, the first solve is already feasible: a stop can only come from inside it.
        assert_eq!(nnls(&m, &r, || true).map(|(_, e)| e), Ok(0));
        let mut calls = 0;
        let got = nnls(&m, &r, || {
            calls += 1;
            calls <= 2
        });
        assert_eq!(got, Err(Stop::Cancelled));
        assert_eq!(calls, 3, "the exchange's check, one block column, then the stop");
    }
}
