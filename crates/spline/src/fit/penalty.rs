//! The difference penalty Σ_d λ_d P_d, P_d = I ⊗ … ⊗ D_dᵀD_d ⊗ … ⊗ I (Eilers & Marx 1996, "Flexible
//! smoothing with B-splines and penalties", Stat. Sci. 11:89; Currie, Durban & Eilers 2006 §3.1
//! for the Kronecker form), with photospline's meaning of the smoothing λ_d: D_d maps the
//! coefficients of a degree-k spline on knots t to those of its p-th derivative, so the penalty
//! is the sum of squared p-th-derivative coefficients (on equally spaced knots h apart this is
//! the plain p-th difference divided by h^p).
//!
//! The derivative of a spline Σ_i c_i B_{i,k} is Σ_i k (c_i − c_{i−1})/(t_{i+k} − t_i) B_{i,k−1}
//! (C. de Boor, "A Practical Guide to Splines", 1978, ch. X, eqs. (X.15)–(X.16)); applied p
//! times, row j of level q is
//!   D_q[j] = (D_{q−1}[j+1] − D_{q−1}[j]) / δ_{q,j},  δ_{q,j} = (t_{j+k+1} − t_{j+q}) / (k + 1 − q),
//! for j = 0 … n − q − 1, starting from D_0 = I. It needs p ≤ k and δ_{q,j} > 0.

/// D_p of an axis (rows n − p, n columns, dense row-major): the p-th derivative's coefficients.
/// `Err((q, j))` when δ_{q,j} is not positive (knots repeated too often for this order).
pub fn derivative_matrix(t: &[f64], k: usize, p: usize) -> Result<Vec<Vec<f64>>, (usize, usize)> {
    let n = t.len() - k - 1;
    let mut d: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            let mut r = vec![0.0; n];
            r[i] = 1.0;
            r
        })
        .collect();
    for q in 1..=p {
        let mut next = Vec::with_capacity(n - q);
        for j in 0..n - q {
            let delta = (t[j + k + 1] - t[j + q]) / (k + 1 - q) as f64;
            if delta.is_nan() || delta <= 0.0 {
                return Err((q, j));
            }
            next.push(d[j + 1].iter().zip(&d[j]).map(|(a, b)| (a - b) / delta).collect());
        }
        d = next;
    }
    Ok(d)
}

/// DᵀD (n × n, banded: |i − j| ≤ p).
pub fn gram(d: &[Vec<f64>], n: usize) -> Vec<Vec<f64>> {
    let mut g = vec![vec![0.0; n]; n];
    for row in d {
        let nz: Vec<usize> = (0..n).filter(|&i| row[i] != 0.0).collect();
        for &i in &nz {
            for &j in &nz {
                g[i][j] += row[i] * row[j];
            }
        }
    }
    g
}

/// Add λ·(I ⊗ … ⊗ DᵀD ⊗ … ⊗ I) for axis `axis` of `n_ax` coefficients to the dense matrix `m`
/// (row-major, coefficients in C order).
pub fn add_kron_penalty(m: &mut [f64], n_ax: &[usize], axis: usize, lambda: f64, dtd: &[Vec<f64>], p: usize) {
    use rayon::prelude::*;
    let n: usize = n_ax.iter().product();
    let stride: usize = n_ax[axis + 1..].iter().product();
    let na = n_ax[axis];
    m.par_chunks_mut(n).enumerate().for_each(|(row, out)| {
        let i = row / stride % na;
        let lo = i.saturating_sub(p);
        let hi = (i + p).min(na - 1);
        for j in lo..=hi {
            let col = row + j * stride - i * stride;
            out[col] += lambda * dtd[i][j];
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_knots_give_scaled_differences() {
        // Knots 0.5 apart, degree 3: D_2 rows are (1, −2, 1)/h².
        let t: Vec<f64> = (0..12).map(|i| 0.5 * i as f64).collect();
        let d = derivative_matrix(&t, 3, 2).unwrap();
        assert_eq!(d.len(), 8 - 2);
        for (j, row) in d.iter().enumerate() {
            for (i, &v) in row.iter().enumerate() {
                let want = match i as isize - j as isize {
                    0 | 2 => 4.0,
                    1 => -8.0,
                    _ => 0.0,
                };
                assert!((v - want).abs() < 1e-12, "row {j} col {i}: {v} vs {want}");
            }
        }
    }

    #[test]
    fn first_derivative_of_a_line_is_its_slope() {
        // A spline whose coefficients are the Greville abscissae reproduces f(x) = x (de Boor
        // (XI.4)); its derivative coefficients must all be 1 whatever the knot spacing.
        let t = [0.0, 0.0, 0.0, 0.3, 1.0, 1.1, 2.5, 4.0, 4.0, 4.0];
        let k = 2;
        let n = t.len() - k - 1;
        let c: Vec<f64> = (0..n).map(|i| (t[i + 1] + t[i + 2]) / 2.0).collect();
        let d = derivative_matrix(&t, k, 1).unwrap();
        for row in &d {
            let v: f64 = row.iter().zip(&c).map(|(a, b)| a * b).sum();
            assert!((v - 1.0).abs() < 1e-12, "{v}");
        }
        assert!(derivative_matrix(&[0.0, 1.0, 1.0, 1.0, 2.0], 1, 1).is_err());
    }
}
