//! Dense Cholesky factorisation A = L Lᵀ of the symmetric positive definite normal matrix and
//! the two triangular solves (G. H. Golub & C. F. Van Loan, "Matrix Computations", 4th ed.,
//! §4.2: Algorithm 4.2.1 for a diagonal block, the blocked right-looking form of §4.2.9 around
//! it). Row-major storage; the lower triangle of `a` is overwritten with L.
//!
//! Per block column of width [`NB`]: factor the diagonal block, solve the panel below it
//! (L_21 = A_21 L_11⁻ᵀ, rows in parallel), then update the trailing lower triangle
//! A_22 −= L_21 L_21ᵀ (rows in parallel; each element one contiguous dot product of the copied
//! panel).

use rayon::prelude::*;

/// Block width.
const NB: usize = 64;

/// Why the factorisation stopped.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Stop {
    /// The pivot of coefficient `index` was not positive (relative to the original diagonal):
    /// the matrix is singular or not positive definite there.
    Singular { index: usize, pivot: f64, diagonal: f64 },
    /// The callback asked to stop.
    Cancelled,
}

/// Dot product with four accumulators (vectorises; the order of the sum is fixed).
#[inline]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut s = [0.0f64; 4];
    let (ca, cb) = (a.chunks_exact(4), b.chunks_exact(4));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for l in 0..4 {
            s[l] += x[l] * y[l];
        }
    }
    let mut t = (s[0] + s[1]) + (s[2] + s[3]);
    for (x, y) in ra.iter().zip(rb) {
        t += x * y;
    }
    t
}

/// Factor `a` (n × n, row-major, lower triangle used) in place. `tick(columns_done)` is called
/// after each block column; it returns false to stop.
///
/// The three phases of a block column are separate functions, each twinned by a kernel of the
/// same name in `kernels/cholesky.cu` that performs the same floating-point operations in the
/// same order (every sum is a [`dot`]), so the GPU factor is bit for bit this one.
pub fn factor(a: &mut [f64], n: usize, mut tick: impl FnMut(usize) -> bool) -> Result<(), Stop> {
    assert_eq!(a.len(), n * n);
    let diag: Vec<f64> = (0..n).map(|i| a[i * n + i]).collect();
    let tol = pivot_tolerance(n);
    let mut panel = Vec::new();
    let mut kb = 0;
    while kb < n {
        let b = NB.min(n - kb);
        factor_diagonal_block(a, n, kb, b, &diag, tol)?;
        if kb + b < n {
            solve_panel(a, n, kb, b);
            update_trailing(a, n, kb, b, &mut panel);
        }
        kb += b;
        if !tick(kb) {
            return Err(Stop::Cancelled);
        }
    }
    Ok(())
}

/// A pivot below this fraction of its original diagonal is rounding noise of a singular
/// direction (cancellation of n terms at machine precision).
pub fn pivot_tolerance(n: usize) -> f64 {
    (n as f64) * f64::EPSILON
}

/// Block width of [`factor`] (the GPU twin uses the same blocks).
pub const BLOCK: usize = NB;

/// Phase 1: the diagonal block of rows and columns kb..kb+b, already updated by the earlier
/// blocks, by Algorithm 4.2.1 (column j: its pivot, then the rows below it in the block).
pub fn factor_diagonal_block(a: &mut [f64], n: usize, kb: usize, b: usize, diag: &[f64], tol: f64) -> Result<(), Stop> {
    for j in kb..kb + b {
        let rj = &a[j * n..j * n + n];
        let s = rj[j] - dot(&rj[kb..j], &rj[kb..j]);
        if s.is_nan() || s <= tol * diag[j] || !s.is_finite() {
            return Err(Stop::Singular {
                index: j,
                pivot: s,
                diagonal: diag[j],
            });
        }
        let ljj = s.sqrt();
        a[j * n + j] = ljj;
        for i in j + 1..kb + b {
            let (top, bottom) = a.split_at_mut(i * n);
            let rj = &top[j * n..j * n + n];
            let ri = &mut bottom[..n];
            ri[j] = (ri[j] - dot(&ri[kb..j], &rj[kb..j])) / ljj;
        }
    }
    Ok(())
}

/// Phase 2: the panel, rows kb+b.. of columns kb..kb+b, solves L_21 L_11ᵀ = A_21 by forward
/// substitution, each row on its own.
pub fn solve_panel(a: &mut [f64], n: usize, kb: usize, b: usize) {
    let end = kb + b;
    let (top, bottom) = a.split_at_mut(end * n);
    let l11: Vec<&[f64]> = (kb..end).map(|j| &top[j * n + kb..j * n + end]).collect();
    bottom.par_chunks_mut(n).for_each(|ri| {
        for c in 0..b {
            let s = ri[kb + c] - dot(&ri[kb..kb + c], &l11[c][..c]);
            ri[kb + c] = s / l11[c][c];
        }
    });
}

/// Phase 3: the trailing update A_22 −= L_21 L_21ᵀ (lower triangle), each element one [`dot`] of
/// two panel rows (read from a packed copy of the panel, `scratch`).
pub fn update_trailing(a: &mut [f64], n: usize, kb: usize, b: usize, scratch: &mut Vec<f64>) {
    let end = kb + b;
    let (_, bottom) = a.split_at_mut(end * n);
    scratch.clear();
    for ri in bottom.chunks(n) {
        scratch.extend_from_slice(&ri[kb..end]);
    }
    let panel = &*scratch;
    bottom.par_chunks_mut(n).enumerate().for_each(|(r, ri)| {
        let li = &panel[r * b..(r + 1) * b];
        for c in 0..=r {
            ri[end + c] -= dot(li, &panel[c * b..(c + 1) * b]);
        }
    });
}

/// Solve L Lᵀ x = y with the factor of [`factor`]: [`solve_lower`], then [`solve_upper`].
pub fn solve(l: &[f64], n: usize, y: &[f64]) -> Vec<f64> {
    solve_upper(l, n, &solve_lower(l, n, y))
}

/// Forward substitution L x = y: x_i = (y_i − Σ_{j<i} L_ij x_j) / L_ii, the sum subtracted term
/// by term in ascending j (the order the GPU's column sweep also has).
pub fn solve_lower(l: &[f64], n: usize, y: &[f64]) -> Vec<f64> {
    let mut x = y.to_vec();
    for i in 0..n {
        let mut s = x[i];
        for (lij, xj) in l[i * n..i * n + i].iter().zip(&x[..i]) {
            s -= lij * xj;
        }
        x[i] = s / l[i * n + i];
    }
    x
}

/// Backward substitution Lᵀ x = y: x_j = s_j / L_jj for j from the last down, where s starts
/// at y and, once x_j is known, s_i −= L_ji x_j for every i < j (row j of L, contiguous).
pub fn solve_upper(l: &[f64], n: usize, y: &[f64]) -> Vec<f64> {
    let mut s = y.to_vec();
    for j in (0..n).rev() {
        let xj = s[j] / l[j * n + j];
        s[j] = xj;
        for (si, lji) in s[..j].iter_mut().zip(&l[j * n..j * n + j]) {
            *si -= lji * xj;
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A random SPD matrix M = R Rᵀ + n I, factored and solved, against M x = y by residual.
    #[test]
    fn factors_and_solves() {
        for &n in &[1usize, 5, 63, 64, 65, 150] {
            let mut state = 12345u64 + n as u64;
            let mut rnd = || {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((state >> 11) as f64 / (1u64 << 53) as f64) - 0.5
            };
            let r: Vec<f64> = (0..n * n).map(|_| rnd()).collect();
            let mut m = vec![0.0; n * n];
            for i in 0..n {
                for j in 0..n {
                    m[i * n + j] = (0..n).map(|p| r[i * n + p] * r[j * n + p]).sum::<f64>() + if i == j { n as f64 } else { 0.0 };
                }
            }
            let y: Vec<f64> = (0..n).map(|_| rnd()).collect();
            let mut l = m.clone();
            factor(&mut l, n, |_| true).unwrap();
            let x = solve(&l, n, &y);
            for i in 0..n {
                let mx: f64 = (0..n).map(|j| m[i * n + j] * x[j]).sum();
                assert!((mx - y[i]).abs() < 1e-12, "n = {n}, row {i}: {mx} vs {}", y[i]);
            }
        }
    }

    #[test]
    fn singular_names_the_pivot() {
        // Rows 0 and 2 equal: the third pivot vanishes.
        let n = 3;
        let mut m = vec![2.0, 1.0, 2.0, 1.0, 3.0, 1.0, 2.0, 1.0, 2.0];
        match factor(&mut m, n, |_| true) {
            Err(Stop::Singular { index, .. }) => assert_eq!(index, 2),
            other => panic!("{other:?}"),
        }
    }
}
