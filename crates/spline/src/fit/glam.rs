//! The array arithmetic of GLAM (Currie, Durban & Eilers 2006, "Generalized linear array models
//! with applications to multidimensional smoothing", JRSS B 68:259, §2): products with the
//! Kronecker design matrix B = B_0 ⊗ B_1 ⊗ … ⊗ B_{N−1} computed one axis at a time, never
//! forming B.
//!
//! * The **rotated H-transform** ρ(X, A) (their Definitions 1–3): multiply the first axis of
//!   the N-d array A by the matrix X (the H-transform, X·A viewed as a matrix of the first axis
//!   against the rest), then rotate that axis to the end. Applied once per axis it returns the
//!   axes in their original order: ρ(X_{N−1}, … ρ(X_0, A)…) = (X_0 ⊗ … ⊗ X_{N−1}) vec(A) as an
//!   array (their eq. for the linear function, §2.2).
//! * **Fitted values** Bθ = ρ(B_{N−1}, … ρ(B_0, Θ)); the **right-hand side** Bᵀ W z =
//!   ρ(B_{N−1}ᵀ, … ρ(B_0ᵀ, W∘Z)).
//! * **The inner product** BᵀWB (§2.3): with the row tensor G(X) = (X ⊗ 1ᵀ) ∘ (1ᵀ ⊗ X) (row x of
//!   G(B_d) holds B_d[x,i]·B_d[x,j] for every pair (i, j)), ρ(G(B_{N−1})ᵀ, … ρ(G(B_0)ᵀ, W)) holds
//!   every element of BᵀWB, Π_d n_d² of them, which a re-arrangement turns into the matrix. Since
//!   B_d[x,i]·B_d[x,j] = 0 for |i − j| > k_d, only the band j − i = −k_d..=k_d of each axis is
//!   kept: the array has Π_d n_d (2k_d + 1) elements (a dense Π n_d² would not fit for 10⁴
//!   coefficients), and [`normal_matrix`] scatters it into the dense symmetric matrix.
//!
//! Each ρ is parallel over blocks of the array's other axes (rayon).

use super::basis::AxisBasis;
use rayon::prelude::*;

/// A sparse matrix X (rows × cols) stored by columns: column c's entries (row, value). The
/// columns are the contracted axis of ρ.
#[derive(Clone, Debug)]
pub struct Op {
    pub rows: usize,
    offsets: Vec<usize>,
    entries: Vec<(u32, f64)>,
}

impl Op {
    fn from_columns(rows: usize, cols: usize, mut column: impl FnMut(usize, &mut Vec<(u32, f64)>)) -> Self {
        let mut offsets = Vec::with_capacity(cols + 1);
        let mut entries = Vec::new();
        offsets.push(0);
        for c in 0..cols {
            column(c, &mut entries);
            offsets.push(entries.len());
        }
        Self { rows, offsets, entries }
    }

    pub fn cols(&self) -> usize {
        self.offsets.len() - 1
    }

    fn column(&self, c: usize) -> &[(u32, f64)] {
        &self.entries[self.offsets[c]..self.offsets[c + 1]]
    }

    /// X by rows (CSR, for the GPU's ρ): row offsets (rows + 1), columns, values; each row's
    /// entries in ascending column, the order in which [`rho`] accumulates them.
    pub fn by_rows(&self) -> (Vec<u32>, Vec<u32>, Vec<f64>) {
        let mut count = vec![0u32; self.rows + 1];
        for &(row, _) in &self.entries {
            count[row as usize + 1] += 1;
        }
        for r in 0..self.rows {
            count[r + 1] += count[r];
        }
        let mut next = count.clone();
        let mut cols = vec![0u32; self.entries.len()];
        let mut vals = vec![0.0; self.entries.len()];
        for c in 0..self.cols() {
            for &(row, v) in self.column(c) {
                let at = next[row as usize] as usize;
                cols[at] = c as u32;
                vals[at] = v;
                next[row as usize] += 1;
            }
        }
        (count, cols, vals)
    }

    /// B_dᵀ (n_d × m_d): column x holds row x of B_d.
    pub fn basis_transposed(b: &AxisBasis) -> Self {
        Self::from_columns(b.n, b.rows(), |x, e| e.extend(b.row(x).map(|(i, v)| (i as u32, v))))
    }

    /// B_d (m_d × n_d): column i holds the centres x where B_{i}(x) ≠ 0.
    pub fn basis(b: &AxisBasis) -> Self {
        let mut by_coef: Vec<Vec<(u32, f64)>> = vec![Vec::new(); b.n];
        for x in 0..b.rows() {
            for (i, v) in b.row(x) {
                by_coef[i].push((x as u32, v));
            }
        }
        Self::from_columns(b.rows(), b.n, |i, e| e.extend_from_slice(&by_coef[i]))
    }

    /// G(B_d)ᵀ restricted to the band: row r = i·(2k+1) + (j − i + k) for coefficient pairs
    /// (i, j) with |i − j| ≤ k; column x holds B_d[x,i]·B_d[x,j] (the row tensor of §2.3).
    pub fn row_tensor_band(b: &AxisBasis) -> Self {
        let w = 2 * b.k + 1;
        Self::from_columns(b.n * w, b.rows(), |x, e| {
            for (i, vi) in b.row(x) {
                for (j, vj) in b.row(x) {
                    let r = i * w + (j + b.k - i);
                    e.push((r as u32, vi * vj));
                }
            }
        })
    }
}

/// Elements of the other axes handled together by one task of ρ.
const BLOCK: usize = 64;

/// ρ(X, A): `a` is an array whose first axis has `x.cols()` elements and whose other axes
/// together have `rest`, in C order; the result has the other axes first and X's rows last
/// (`rest × x.rows`, C order).
pub fn rho(x: &Op, a: &[f64]) -> Vec<f64> {
    let len = x.cols();
    assert_eq!(a.len() % len.max(1), 0, "array of {} for an axis of {len}", a.len());
    let rest = a.len() / len;
    let r = x.rows;
    let mut out = vec![0.0; rest * r];
    out.par_chunks_mut(BLOCK * r)
        .enumerate()
        .for_each_init(Vec::new, |tile, (blk, chunk)| {
            let u0 = blk * BLOCK;
            let ub = chunk.len() / r;
            // tile[row][u] (row-major over X's rows) so the inner loop is a contiguous axpy.
            tile.clear();
            tile.resize(r * ub, 0.0);
            for c in 0..len {
                let col = &a[c * rest + u0..c * rest + u0 + ub];
                for &(row, g) in x.column(c) {
                    let t = &mut tile[row as usize * ub..(row as usize + 1) * ub];
                    for (tv, &av) in t.iter_mut().zip(col) {
                        *tv += g * av;
                    }
                }
            }
            for u in 0..ub {
                for row in 0..r {
                    chunk[u * r + row] = tile[row * ub + u];
                }
            }
        });
    out
}

/// ρ(X_{N−1}, … ρ(X_0, A)…): the product of the Kronecker matrix X_0 ⊗ … ⊗ X_{N−1} with A,
/// as an array of shape (X_0.rows, …, X_{N−1}.rows). `step` is called after each axis (progress,
/// cancellation: `Err` stops).
pub fn kron_apply<E>(ops: &[Op], a: Vec<f64>, mut step: impl FnMut() -> Result<(), E>) -> Result<Vec<f64>, E> {
    let mut a = a;
    for x in ops {
        a = rho(x, &a);
        step()?;
    }
    Ok(a)
}

/// Elements of the largest intermediate array of [`kron_apply`] on an array of `shape`.
pub fn largest_intermediate(ops_rows: &[usize], shape: &[usize]) -> u64 {
    let mut size: u64 = shape.iter().map(|&m| m as u64).product();
    let mut most = size;
    for (d, &r) in ops_rows.iter().enumerate() {
        size = size / shape[d].max(1) as u64 * r as u64;
        most = most.max(size);
    }
    most
}

/// The dense normal matrix BᵀWB (n × n, n = Π n_d, row-major, coefficients in C order) from the
/// banded inner-product array of [`Op::row_tensor_band`]s: element (I, J) with J_d = I_d + δ_d
/// sits at band index (I_d·(2k_d+1) + δ_d + k_d) per axis.
pub fn normal_matrix(band: &[f64], bases: &[AxisBasis]) -> Vec<f64> {
    let nd = bases.len();
    let n_ax: Vec<usize> = bases.iter().map(|b| b.n).collect();
    let w: Vec<usize> = bases.iter().map(|b| 2 * b.k + 1).collect();
    let n: usize = n_ax.iter().product();
    // C-order strides of the coefficients and of the band array.
    let mut cs = vec![1usize; nd];
    let mut bs = vec![1usize; nd];
    for d in (0..nd.saturating_sub(1)).rev() {
        cs[d] = cs[d + 1] * n_ax[d + 1];
        bs[d] = bs[d + 1] * n_ax[d + 1] * w[d + 1];
    }
    let support: usize = w.iter().product();
    let mut m = vec![0.0; n * n];
    m.par_chunks_mut(n).enumerate().for_each(|(row, out)| {
        let mut idx = [0usize; 8];
        let mut rem = row;
        for d in 0..nd {
            idx[d] = rem / cs[d];
            rem %= cs[d];
        }
        // Odometer over δ ∈ Π_d [−k_d, k_d].
        'pairs: for s in 0..support {
            let mut rem = s;
            let mut col = 0usize;
            let mut at = 0usize;
            for d in (0..nd).rev() {
                let delta = rem % w[d];
                rem /= w[d];
                let j = idx[d] as isize + delta as isize - bases[d].k as isize;
                if j < 0 || j as usize >= n_ax[d] {
                    continue 'pairs;
                }
                col += j as usize * cs[d];
                at += (idx[d] * w[d] + delta) * bs[d];
            }
            out[col] = band[at];
        }
    });
    m
}
