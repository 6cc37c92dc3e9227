//! The B-spline basis of one axis at the histogram's bin centres: the sparse matrix B_d
//! (m_d × n_d) of Currie, Durban & Eilers (2006) §2, one row per centre with its k_d + 1
//! non-zero values.
//!
//! The values come from [`crate::eval::Basis::at`], the Cox–de Boor recursion our evaluators
//! use (same knot convention, same treatment of the partially supported intervals at the ends
//! and of a coordinate at the last knot), so a fitted table evaluates to the fitted values.

use crate::eval::{Basis, Locate};

/// One axis's design matrix B_d in row form: row x has the values `values[x][0..=k]` at
/// coefficients `start[x] ..= start[x] + k`.
#[derive(Clone, Debug)]
pub struct AxisBasis {
    /// Degree k_d.
    pub k: usize,
    /// Coefficients n_d.
    pub n: usize,
    pub start: Vec<usize>,
    pub values: Vec<[f64; MAX_K + 1]>,
}

/// Highest degree the fitter takes (photospline's fits use 1–5).
pub const MAX_K: usize = 5;

impl AxisBasis {
    /// B_d at `centers` for knots `t` of degree `k`; `Err(j)` names the first centre outside
    /// [t_0, t_last] or NaN (the caller has checked them; this is the backstop).
    pub fn new(t: &[f64], k: usize, centers: &[f64]) -> Result<Self, usize> {
        let n = t.len() - k - 1;
        let mut start = Vec::with_capacity(centers.len());
        let mut values = Vec::with_capacity(centers.len());
        for (j, &x) in centers.iter().enumerate() {
            match Basis::at(t, k, x) {
                Locate::Inside(b) => {
                    start.push(b.start);
                    let mut v = [0.0; MAX_K + 1];
                    v[..=k].copy_from_slice(&b.value[..=k]);
                    values.push(v);
                }
                Locate::Outside | Locate::NotANumber => return Err(j),
            }
        }
        Ok(Self { k, n, start, values })
    }

    /// Rows (bin centres) m_d.
    pub fn rows(&self) -> usize {
        self.start.len()
    }

    /// The non-zero entries (coefficient, value) of row x.
    pub fn row(&self, x: usize) -> impl Iterator<Item = (usize, f64)> + '_ {
        let s = self.start[x];
        self.values[x][..=self.k].iter().enumerate().map(move |(a, &v)| (s + a, v))
    }
}
