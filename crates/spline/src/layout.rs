//! Coefficient layouts for the GPU.
//!
//! photospline's C order keeps only the last dimension contiguous: one evaluation reads
//! Π_{d<last}(k_d+1) separate runs of k_last+1 floats (27 runs of 4 for the 4-D timing table).
//! The *window* layout stores, for every start index s of the second-to-last dimension, the
//! k+1 rows s..s+k interleaved (element (…, s, j, a) = c[…, s+a, j]), so the (k_{n-2}+1)(k_last+1)
//! coefficients an evaluation needs from the last two dimensions are one contiguous run (12
//! floats for orders 2 and 3) — a redundant, permuted copy in the spirit of the GPU spline code
//! the spec cites (§2.4, "4 permuted coefficient copies"). It costs (k_{n-2}+1)(n_{n-2}−k_{n-2})/n_{n-2}
//! times the memory.

use crate::SplineTable;

/// A coefficient array and the strides of block starts in it.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    pub coefficients: Vec<f32>,
    /// Offset of a block start (s_0, …, s_{n-1}) = Σ s_d · strides[d].
    pub strides: Vec<usize>,
    pub window: bool,
}

impl Layout {
    /// photospline's own C-order layout.
    pub fn standard(t: &SplineTable) -> Self {
        Self {
            coefficients: t.coefficients.clone(),
            strides: t.strides.clone(),
            window: false,
        }
    }

    /// The window layout (tables of two or more dimensions).
    pub fn window(t: &SplineTable) -> Option<Self> {
        let nd = t.ndim();
        if nd < 2 {
            return None;
        }
        let (p, l) = (nd - 2, nd - 1);
        let k2 = t.order[p] as usize + 1;
        let starts = t.naxes[p] - t.order[p] as usize; // valid s: 0..starts
        let nl = t.naxes[l];
        let outer: usize = t.naxes[..p].iter().product();
        let mut c = Vec::with_capacity(outer * starts * nl * k2);
        for o in 0..outer {
            let base = o * t.naxes[p] * nl;
            for s in 0..starts {
                for j in 0..nl {
                    for a in 0..k2 {
                        c.push(t.coefficients[base + (s + a) * nl + j]);
                    }
                }
            }
        }
        // Shape (n_0, …, n_{p-1}, starts, n_l, k2) in C order.
        let mut strides = vec![0; nd];
        strides[l] = k2;
        strides[p] = nl * k2;
        let mut acc = starts * nl * k2;
        for d in (0..p).rev() {
            strides[d] = acc;
            acc *= t.naxes[d];
        }
        Some(Self {
            coefficients: c,
            strides,
            window: true,
        })
    }

    pub fn bytes(&self) -> usize {
        4 * self.coefficients.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_blocks_are_contiguous_copies() {
        let naxes = vec![3, 5, 4];
        let order = vec![1, 2, 1];
        let knots = naxes
            .iter()
            .zip(&order)
            .map(|(&n, &k): (&usize, &u32)| (0..n + k as usize + 1).map(|i| i as f64).collect())
            .collect();
        let coef: Vec<f32> = (0..60).map(|i| i as f32).collect();
        let t = SplineTable::new(order, knots, naxes, coef).unwrap();
        let w = Layout::window(&t).unwrap();
        assert_eq!(w.coefficients.len(), 3 * 3 * 4 * 3);
        // Block at starts (s0, s1, s2) = (2, 1, 2): rows s1..s1+2 of dim 1, columns 2..4 of dim 2.
        let base = 2 * w.strides[0] + w.strides[1] + 2 * w.strides[2];
        for j in 0..2 {
            for a in 0..3 {
                let want = t.coefficients[2 * t.strides[0] + (1 + a) * t.strides[1] + (2 + j)];
                assert_eq!(w.coefficients[base + j * 3 + a], want);
            }
        }
    }
}
