//! Evaluation of a tensor-product B-spline table (spec §1.2):
//! f(x) = Σ_i c_i Π_d B_{i_d,k_d}(x_d), with only k_d+1 non-zero basis functions per dimension.
//!
//! Per dimension, [`Basis::at`] finds the knot interval of x and computes the non-zero basis
//! values with the Cox–de Boor recursion (C. de Boor, "A Practical Guide to Splines", 1978,
//! ch. IX–X):
//!   B_{i,0}(x) = 1 on [t_i, t_{i+1}), B_{i,j} = (x−t_i)/(t_{i+j}−t_i)·B_{i,j−1}
//!                                        + (t_{i+j+1}−x)/(t_{i+j+1}−t_{i+1})·B_{i+1,j−1},
//! and first derivatives B'_{i,k} = k [B_{i,k−1}/(t_{i+k}−t_i) − B_{i+1,k−1}/(t_{i+k+1}−t_{i+1})]
//! (terms with a zero denominator vanish). Basis functions whose index has no coefficient are
//! zero, so near the ends of the knot vector this is the exact spline with the missing
//! coefficients at zero — what photospline computes there too. Outside [t_0, t_last] the value is
//! 0 (photospline's `searchcenters` fails there); a NaN coordinate gives NaN.
//!
//! The contraction runs over the last (contiguous) dimension innermost, chunk by chunk, like
//! photospline's `ndsplineeval_core`; basis values and sums are double precision, coefficients
//! the table's float32.

use crate::evaluator::{Axis, Evaluator};
use crate::table::{SplineTable, MAX_DIM, MAX_ORDER};
use warpdrive_core::progress::Progress;

const W: usize = MAX_ORDER as usize + 1;

/// The non-zero basis values of one dimension at one coordinate: coefficients `start ..
/// start+order+1` with weights `value` (and `deriv`, the first derivatives).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Basis {
    pub start: usize,
    pub value: [f64; W],
    pub deriv: [f64; W],
    /// k(|B_{i,k−1}/(t_{i+k}−t_i)| + |B_{i+1,k−1}/(t_{i+k+1}−t_{i+1})|): the size of the two terms
    /// whose difference is the derivative (the scale of its rounding error).
    pub deriv_terms: [f64; W],
}

/// Where a coordinate lies on one axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Locate {
    Inside(Basis),
    /// Outside the knot span: the spline is 0 there.
    Outside,
    NotANumber,
}

/// Index l of the knot interval with t_l ≤ x < t_{l+1} (non-degenerate), x at the last knot
/// belonging to the last non-degenerate interval; `None` outside [t_0, t_last].
pub fn interval(t: &[f64], x: f64) -> Option<usize> {
    let last = *t.last()?;
    if !(x >= t[0] && x <= last) {
        return None;
    }
    let l = if x < last {
        t.partition_point(|&k| k <= x) - 1
    } else {
        t.partition_point(|&k| k < last) - 1
    };
    Some(l)
}

impl Basis {
    /// Basis values (and first derivatives) of degree `k` on knots `t` at `x`.
    pub fn at(t: &[f64], k: usize, x: f64) -> Locate {
        if x.is_nan() {
            return Locate::NotANumber;
        }
        let Some(l) = interval(t, x) else { return Locate::Outside };
        let n = t.len() - k - 1; // number of coefficients
                                 // b[m] holds B_{l-j+m, j} during level j (m = 0..=j).
        let mut b = [0.0f64; W];
        let mut prev = [0.0f64; W];
        b[0] = 1.0;
        // A basis function B_{i,j} exists when its knots t_i .. t_{i+j+1} do.
        let exists = |i: isize, j: usize| i >= 0 && (i as usize) + j + 1 < t.len();
        let ratio = |num: f64, den: f64| if den > 0.0 { num / den } else { 0.0 };
        for j in 1..=k {
            prev[..j].copy_from_slice(&b[..j]);
            for m in 0..=j {
                let i = l as isize - j as isize + m as isize;
                if !exists(i, j) {
                    b[m] = 0.0;
                    continue;
                }
                let iu = i as usize;
                // B_{i,j-1} is prev[m-1] (index i = l-(j-1)+(m-1)), B_{i+1,j-1} is prev[m].
                let left = if m >= 1 { prev[m - 1] } else { 0.0 };
                let right = if m < j { prev[m] } else { 0.0 };
                b[m] = ratio(x - t[iu], t[iu + j] - t[iu]) * left + ratio(t[iu + j + 1] - x, t[iu + j + 1] - t[iu + 1]) * right;
            }
        }
        // Derivatives from the degree k-1 values (prev after the loop; for k = 0 they are 0).
        let mut d = [0.0f64; W];
        let mut dt = [0.0f64; W];
        if k >= 1 {
            for (m, dm) in d.iter_mut().enumerate().take(k + 1) {
                let i = l as isize - k as isize + m as isize;
                if !exists(i, k) {
                    continue;
                }
                let iu = i as usize;
                let left = if m >= 1 { prev[m - 1] } else { 0.0 };
                let right = if m < k { prev[m] } else { 0.0 };
                let (a, b) = (ratio(left, t[iu + k] - t[iu]), ratio(right, t[iu + k + 1] - t[iu + 1]));
                *dm = k as f64 * (a - b);
                dt[m] = k as f64 * (a.abs() + b.abs());
            }
        }
        // Shift the window so that all k+1 coefficient indices exist (near the ends some of
        // the k+1 functions do not exist and are zero).
        let first = l as isize - k as isize;
        let start = first.clamp(0, n as isize - k as isize - 1).max(0) as usize;
        let mut basis = Basis {
            start,
            ..Default::default()
        };
        for m in 0..=k {
            let i = first + m as isize;
            if i >= start as isize && ((i - start as isize) as usize) <= k && (i as usize) < n {
                let p = (i - start as isize) as usize;
                basis.value[p] = b[m];
                basis.deriv[p] = d[m];
                basis.deriv_terms[p] = dt[m];
            }
        }
        Locate::Inside(basis)
    }
}

/// Value and gradient at one point.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Gradient {
    pub value: f64,
    pub grad: [f64; MAX_DIM],
}

/// Per-point scratch: one [`Basis`] per dimension.
pub struct Point {
    pub basis: [Basis; MAX_DIM],
}

impl SplineTable {
    /// Locate `x` on every axis; `Err(value)` when the result is already known (0 outside, NaN).
    pub fn locate(&self, x: &[f64]) -> Result<Point, f64> {
        self.check_point(x);
        let mut p = Point {
            basis: [Basis::default(); MAX_DIM],
        };
        for d in 0..self.ndim() {
            match Basis::at(&self.knots[d], self.order[d] as usize, x[d]) {
                Locate::Inside(b) => p.basis[d] = b,
                Locate::Outside => return Err(0.0),
                Locate::NotANumber => return Err(f64::NAN),
            }
        }
        Ok(p)
    }

    /// f(x) (through [`Evaluator`]; for many points keep one evaluator, as
    /// [`SplineTable::evaluate_many`] does).
    pub fn evaluate(&self, x: &[f64]) -> f64 {
        self.check_point(x);
        Evaluator::one_off(self).value(x)
    }

    /// f(x) by the general routine: [`SplineTable::locate`] and the odometer contraction (the
    /// evaluator's reference in tests).
    pub fn evaluate_general(&self, x: &[f64]) -> f64 {
        match self.locate(x) {
            Ok(p) => self.contract(&p),
            Err(v) => v,
        }
    }

    fn check_point(&self, x: &[f64]) {
        assert_eq!(
            x.len(),
            self.ndim(),
            "point has {} coordinates for a {}-D table",
            x.len(),
            self.ndim()
        );
    }

    /// Σ c Π B over the support of a located point: odometer over dimensions 0..n-1, the last
    /// (contiguous) dimension innermost.
    pub fn contract(&self, p: &Point) -> f64 {
        self.contract_with::<false>(p)
    }

    /// Σ |c Π B|: the scale against which float32 rounding of a value is judged.
    pub fn magnitude(&self, x: &[f64]) -> f64 {
        match self.locate(x) {
            Ok(p) => self.contract_with::<true>(&p),
            Err(v) => v,
        }
    }

    fn contract_with<const ABS: bool>(&self, p: &Point) -> f64 {
        let nd = self.ndim();
        let last = nd - 1;
        let kl = self.order[last] as usize + 1;
        let mut idx = [0usize; MAX_DIM];
        let base: usize = (0..nd).map(|d| p.basis[d].start * self.strides[d]).sum();
        let bl = &p.basis[last].value;
        let mut sum = 0.0;
        loop {
            let mut w = 1.0;
            let mut pos = base;
            for d in 0..last {
                w *= p.basis[d].value[idx[d]];
                pos += idx[d] * self.strides[d];
            }
            let row = &self.coefficients[pos..pos + kl];
            let mut s = 0.0;
            for (c, b) in row.iter().zip(bl) {
                s += if ABS { (f64::from(*c) * b).abs() } else { f64::from(*c) * b };
            }
            sum += if ABS { w.abs() * s } else { w * s };
            if !self.next_chunk(&mut idx, last) {
                return sum;
            }
        }
    }

    /// Advance the odometer `idx` over the leading dimensions last-1 .. 0 (digits 0..=order);
    /// false once every chunk has been visited.
    fn next_chunk(&self, idx: &mut [usize; MAX_DIM], last: usize) -> bool {
        for d in (0..last).rev() {
            idx[d] += 1;
            if idx[d] <= self.order[d] as usize {
                return true;
            }
            idx[d] = 0;
        }
        false
    }

    /// f(x) and ∇f(x) in one pass (the role of photospline's `ndsplineeval_gradient`), through
    /// [`Evaluator`].
    pub fn gradient(&self, x: &[f64]) -> Gradient {
        self.check_point(x);
        let nd = self.ndim();
        let mut v = [0.0; MAX_DIM + 1];
        Evaluator::one_off(self).gradient(x, &mut v[..=nd]);
        let mut g = Gradient {
            value: v[0],
            ..Default::default()
        };
        g.grad[..nd].copy_from_slice(&v[1..=nd]);
        g
    }

    /// [`SplineTable::gradient`] by the general routine (the evaluator's reference in tests).
    pub fn gradient_general(&self, x: &[f64]) -> Gradient {
        self.gradient_with::<false>(x)
    }

    /// Σ|c·ΠB| and, per dimension, the same sum with B'_d replaced by the size of the two terms
    /// it is the difference of: the scales against which float32 rounding of the value and the
    /// gradient is judged (a derivative near a cancellation is only as good as its terms).
    pub fn gradient_magnitude(&self, x: &[f64]) -> Gradient {
        self.gradient_with::<true>(x)
    }

    fn gradient_with<const ABS: bool>(&self, x: &[f64]) -> Gradient {
        let a = |v: f64| if ABS { v.abs() } else { v };
        let nd = self.ndim();
        let p = match self.locate(x) {
            Ok(p) => p,
            Err(v) => {
                return Gradient {
                    value: v,
                    grad: [if v.is_nan() { f64::NAN } else { 0.0 }; MAX_DIM],
                }
            }
        };
        let last = nd - 1;
        let kl = self.order[last] as usize + 1;
        let mut idx = [0usize; MAX_DIM];
        let base: usize = (0..nd).map(|d| p.basis[d].start * self.strides[d]).sum();
        let mut out = Gradient::default();
        loop {
            let mut pos = base;
            for d in 0..last {
                pos += idx[d] * self.strides[d];
            }
            let row = &self.coefficients[pos..pos + kl];
            let (mut s, mut sd) = (0.0, 0.0);
            for (m, c) in row.iter().enumerate() {
                s += a(f64::from(*c) * p.basis[last].value[m]);
                let dl = if ABS {
                    p.basis[last].deriv_terms[m]
                } else {
                    p.basis[last].deriv[m]
                };
                sd += a(f64::from(*c) * dl);
            }
            // Weight of this chunk for the value and for ∂/∂x_e (B'_e in place of B_e).
            let mut w = 1.0;
            for d in 0..last {
                w *= p.basis[d].value[idx[d]];
            }
            out.value += a(w) * s;
            out.grad[last] += a(w) * sd;
            for e in 0..last {
                let mut we = if ABS {
                    p.basis[e].deriv_terms[idx[e]]
                } else {
                    p.basis[e].deriv[idx[e]]
                };
                for d in (0..last).filter(|&d| d != e) {
                    we *= p.basis[d].value[idx[d]];
                }
                out.grad[e] += a(we) * s;
            }
            if !self.next_chunk(&mut idx, last) {
                return out;
            }
        }
    }

    /// Evaluate many points (row-major, `ndim` coordinates each) on all cores, one
    /// [`Evaluator`] per work item of 4096 points.
    pub fn evaluate_many(&self, points: &[f64]) -> Vec<f64> {
        crate::points::evaluate_cpu(self, points, false, &Progress::hidden())
    }

    /// Values and gradients of many points: `ndim + 1` numbers per point (value first).
    pub fn gradient_many(&self, points: &[f64]) -> Vec<f64> {
        crate::points::evaluate_cpu(self, points, true, &Progress::hidden())
    }

    /// Values on the tensor grid `axes[0] × axes[1] × …` (C order, last axis fastest); the
    /// basis of each grid coordinate is computed once, the contraction is [`Evaluator`]'s (so a
    /// grid value equals [`SplineTable::evaluate`] at its point).
    pub fn grid(&self, axes: &[Vec<f64>]) -> Vec<f64> {
        self.grid_with(axes, &Progress::hidden())
    }

    /// [`SplineTable::grid`] on all cores, one row of the last axis per work item, counted on
    /// `progress`; once it says stop the remaining rows stay 0 (the caller's run is cancelled).
    pub fn grid_with(&self, axes: &[Vec<f64>], progress: &Progress) -> Vec<f64> {
        use rayon::prelude::*;
        let nd = self.ndim();
        assert_eq!(axes.len(), nd, "{} grid axes for a {nd}-D table", axes.len());
        let located: Vec<Vec<Result<Axis, f64>>> = {
            let e = Evaluator::new(self);
            (0..nd).map(|d| e.locate_axis(d, &axes[d])).collect()
        };
        let total: usize = axes.iter().map(Vec::len).product();
        let row = axes[nd - 1].len();
        let mut out = vec![0.0; total];
        if total == 0 {
            return out;
        }
        out.par_chunks_mut(row).enumerate().for_each_init(
            || Evaluator::new(self),
            |e, (r, values)| {
                if progress.should_stop() {
                    return;
                }
                // The grid index of this row's leading dimensions (C order).
                let mut idx = [0usize; MAX_DIM];
                let mut rest = r;
                for d in (0..nd - 1).rev() {
                    idx[d] = rest % axes[d].len();
                    rest /= axes[d].len();
                }
                let none = Axis::default();
                let mut at = [&none; MAX_DIM];
                for (q, v) in values.iter_mut().enumerate() {
                    idx[nd - 1] = q;
                    let mut known = None;
                    for d in 0..nd {
                        match &located[d][idx[d]] {
                            Ok(a) => at[d] = a,
                            Err(v) if v.is_nan() => known = Some(f64::NAN),
                            Err(v) => known = known.or(Some(*v)),
                        }
                    }
                    *v = known.unwrap_or_else(|| e.value_at(&at[..nd]));
                }
                progress.add(1);
            },
        );
        out
    }
}

/// `n` points drawn uniformly inside the table's extents (row-major, ndim each); point i comes
/// from the Philox stream (seed, 0x5350_4200, i), so the set does not depend on the thread count.
pub fn uniform_points(t: &SplineTable, n: usize, seed: u64) -> Vec<f64> {
    use rayon::prelude::*;
    (0..n)
        .into_par_iter()
        .flat_map_iter(|i| {
            let mut r = warpdrive_core::RandomStream::new(seed, 0x5350_4200, i as u64);
            t.extents
                .iter()
                .map(move |e| e[0] + (e[1] - e[0]) * r.uniform_f64())
                .collect::<Vec<_>>()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Degree-1 B-splines on uniform knots are hat functions; degree 2 sum to one inside.
    #[test]
    fn hats_and_partition_of_unity() {
        let t: Vec<f64> = (0..8).map(f64::from).collect();
        let Locate::Inside(b) = Basis::at(&t, 1, 2.25) else { panic!() };
        assert_eq!(b.start, 1);
        assert!((b.value[0] - 0.75).abs() < 1e-15 && (b.value[1] - 0.25).abs() < 1e-15);
        assert!((b.deriv[0] + 1.0).abs() < 1e-15 && (b.deriv[1] - 1.0).abs() < 1e-15);
        for x in [2.0, 2.5, 3.999, 5.0] {
            let Locate::Inside(b) = Basis::at(&t, 2, x) else { panic!() };
            let s: f64 = b.value[..3].iter().sum();
            assert!((s - 1.0).abs() < 1e-14, "x = {x}: {s}");
            let ds: f64 = b.deriv[..3].iter().sum();
            assert!(ds.abs() < 1e-14);
        }
        assert_eq!(Basis::at(&t, 2, -0.1), Locate::Outside);
        assert_eq!(Basis::at(&t, 2, 7.1), Locate::Outside);
        assert_eq!(Basis::at(&t, 2, f64::NAN), Locate::NotANumber);
    }

    /// Near the ends fewer functions exist; the window is shifted and the missing ones are zero.
    #[test]
    fn edge_windows_stay_in_range() {
        let t: Vec<f64> = (0..8).map(f64::from).collect(); // 5 quadratic functions
        let Locate::Inside(b) = Basis::at(&t, 2, 0.5) else { panic!() };
        assert_eq!(b.start, 0);
        assert!((b.value[0] - 0.125).abs() < 1e-15 && b.value[1] == 0.0 && b.value[2] == 0.0);
        let Locate::Inside(b) = Basis::at(&t, 2, 7.0) else { panic!() };
        assert_eq!(b.start, 2);
        assert_eq!(b.value[..3], [0.0, 0.0, 0.0]);
    }
}
