//! The CPU evaluator for many points (issue #34): a table prepared once, then every point costs
//! one knot search and one basis per dimension and one pass over its coefficient support.
//!
//! Three things make it fast where [`crate::eval`]'s general routine is not:
//! * **Knot search through cells** ([`KnotIndex`]): the knot span is cut into equal cells, each
//!   remembering the knot interval its lower edge lies in; a coordinate lands in its cell by one
//!   multiplication and walks at most a knot or two from there (no binary search, no
//!   mispredicted branches per halving).
//! * **Basis values by de Boor's triangular recursion** (BSPLVB; C. de Boor, "A Practical Guide
//!   to Splines", 1978, ch. X, eq. (X.17) and the algorithm after it): on a knot interval l with
//!   t_l < t_{l+1}, with δ⁺_j = t_{l+j} − x and δ⁻_j = x − t_{l+1−j}, the degree-j values follow
//!   from the degree-(j−1) ones b_r = B_{l−j+1+r, j−1}(x), r = 0..j−1, as
//!   `term_r = b_r / (δ⁺_{r+1} + δ⁻_{j−r})`, `B_{l−j+r, j} = saved + δ⁺_{r+1}·term_r`,
//!   `saved = δ⁻_{j−r}·term_r`, and B_{l, j} = the last `saved`. Each denominator is the knot
//!   difference t_{l+r+1} − t_{l+1−j+r}, which spans [t_l, t_{l+1}] and is positive: its
//!   reciprocal is tabulated once per table ([`KnotIndex`]), so the interior needs neither
//!   divisions nor existence tests. Intervals within k knots of either end (where some basis
//!   functions or knots do not exist) go through the general [`Basis::at`], which gives the same
//!   spline there. The degree is a const parameter, so the recursion unrolls. First derivatives
//!   come from the degree k−1 values (de Boor (X.12)):
//!   B'_{i,k} = k [B_{i,k−1}/(t_{i+k}−t_i) − B_{i+1,k−1}/(t_{i+k+1}−t_{i+1})].
//! * **Contraction by rows**: the weights Π_{d<last} B_d of the (k_0+1)…(k_{n−2}+1) runs of
//!   the last (contiguous) dimension are built by outer products — one multiplication per run
//!   instead of n−2 — into scratch that lives as long as the evaluator (no allocation per
//!   point), then each run is one dot product of k_last+1 float32 coefficients with the last
//!   dimension's basis, its length a const parameter.
//!
//! Everything stays in double precision, as in [`crate::eval`]: the values agree with the
//! general routine to rounding (tests below, and `tests/tables.rs` against an independent de Boor
//! evaluation at 1e-12 of the coefficient scale).

use crate::eval::{interval, Basis, Locate};
use crate::table::{SplineTable, MAX_DIM, MAX_ORDER};

/// Basis values per dimension (degree ≤ [`MAX_ORDER`]).
const W: usize = MAX_ORDER as usize + 1;

/// Most runs of the last dimension a point may need for the row contraction (3⁵ = 243 covers
/// 6-D quadratic tables); a table needing more is contracted by the general odometer.
const MAX_ROWS: usize = 1024;

/// Cells per knot of a [`KnotIndex`] (so a coordinate is rarely more than one knot from its
/// cell's interval), and the most cells per dimension.
const CELLS_PER_KNOT: usize = 4;
const MAX_CELLS: usize = 1 << 16;

/// The knot interval of a coordinate in O(1): cells of equal width over [t_0, t_last], each
/// holding the interval of its lower edge. Answers exactly as [`interval`].
#[derive(Clone, Debug)]
pub struct KnotIndex<'a> {
    t: &'a [f64],
    t0: f64,
    last: f64,
    /// Cells per unit of x.
    scale: f64,
    /// Interval l (t_l ≤ edge < t_{l+1}) of each cell's lower edge.
    cells: Vec<u32>,
    /// The interval of x = t_last (the last non-degenerate one).
    at_last: usize,
    /// 1/(t_{i+j} − t_i) at `(j − 1)·len + i` for spans j = 1..=k (0 for a zero span): the
    /// recursion's denominators are knot differences, so it multiplies instead of dividing.
    inv: Vec<f64>,
}

impl<'a> KnotIndex<'a> {
    /// The index of knots `t` of a dimension of degree `k`.
    pub fn new(t: &'a [f64], k: usize) -> Self {
        let (t0, last) = (t[0], t[t.len() - 1]);
        let at_last = interval(t, last).unwrap_or(0);
        let n = (CELLS_PER_KNOT * t.len()).clamp(1, MAX_CELLS);
        let span = last - t0;
        let scale = if span > 0.0 { n as f64 / span } else { 0.0 };
        // One walk over the knots as the edges grow (t_l ≤ edge < t_{l+1}, edges below t_last).
        let mut l = 0;
        let cells = (0..n)
            .map(|c| {
                let edge = (t0 + c as f64 / scale).min(last);
                while l < at_last && t[l + 1] <= edge {
                    l += 1;
                }
                l as u32
            })
            .collect();
        let len = t.len();
        let inv = (1..=k)
            .flat_map(|j| {
                (0..len).map(move |i| {
                    if i + j < len && t[i + j] > t[i] {
                        1.0 / (t[i + j] - t[i])
                    } else {
                        0.0
                    }
                })
            })
            .collect();
        Self {
            t,
            t0,
            last,
            scale,
            cells,
            at_last,
            inv,
        }
    }

    /// l with t_l ≤ x < t_{l+1} (x = t_last: the last non-degenerate interval); `None` outside
    /// [t_0, t_last] and for NaN.
    #[inline(always)]
    pub fn interval(&self, x: f64) -> Option<usize> {
        if !(x >= self.t0 && x < self.last) {
            return (x == self.last).then_some(self.at_last);
        }
        let c = (((x - self.t0) * self.scale) as usize).min(self.cells.len() - 1);
        let mut l = self.cells[c] as usize;
        // The cell's rounding may put x just below its edge: step back, then forward.
        while self.t[l] > x {
            l -= 1;
        }
        while self.t[l + 1] <= x {
            l += 1;
        }
        Some(l)
    }
}

/// One dimension's basis at one coordinate: values (and derivatives) of the coefficients
/// `start .. start + k + 1`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Axis {
    start: usize,
    value: [f64; W],
    deriv: [f64; W],
}

/// Basis values of degree K on the interior interval l (de Boor's BSPLVB, module docs):
/// `b[m]` = B_{l−K+m, K}(x); with `DERIV`, `d[m]` = B'_{l−K+m, K}(x). `inv`: the reciprocal knot
/// differences of a [`KnotIndex`] (None: divide).
#[inline(always)]
fn bsplvb<const K: usize, const DERIV: bool>(t: &[f64], inv: Option<&[f64]>, l: usize, x: f64, b: &mut [f64; W], d: &mut [f64; W]) {
    let len = t.len();
    // 1/(t_{i+j} − t_i); positive spans only are asked for on an interior interval.
    let recip = |j: usize, i: usize| match inv {
        Some(v) => v[(j - 1) * len + i],
        None => 1.0 / (t[i + j] - t[i]),
    };
    let mut left = [0.0f64; W]; // δ⁻_j = x − t_{l+1−j}
    let mut right = [0.0f64; W]; // δ⁺_j = t_{l+j} − x
    b[0] = 1.0;
    for j in 1..=K {
        left[j] = x - t[l + 1 - j];
        right[j] = t[l + j] - x;
        if DERIV && j == K {
            // b[0..K] now holds B_{l−K+1+m, K−1}: (X.12) with B_{l−K, K−1} = B_{l+1, K−1} = 0 here.
            let kf = K as f64;
            let mut prev = 0.0; // B_{i,K−1}/(t_{i+K} − t_i) of the previous i
            for m in 0..K {
                let i = l + 1 + m - K; // B_{i,K−1} = b[m]
                let q = b[m] * recip(K, i);
                d[m] = kf * (prev - q);
                prev = q;
            }
            d[K] = kf * prev;
        }
        let mut saved = 0.0;
        for r in 0..j {
            // right[r+1] + left[j−r] = t_{l+r+1} − t_{l+1−j+r}: span j from i = l+1−j+r.
            let term = b[r] * recip(j, l + 1 + r - j);
            b[r] = saved + right[r + 1] * term;
            saved = left[j - r] * term;
        }
        b[j] = saved;
    }
}

/// The basis of axis `t` (degree `k`) at x into `a`; `Err(value)` when the spline's value is
/// already known (0 outside the knots, NaN).
#[inline(always)]
fn axis<const DERIV: bool>(t: &[f64], inv: Option<&[f64]>, k: usize, l: Option<usize>, x: f64, a: &mut Axis) -> Result<(), f64> {
    let Some(l) = l else {
        return Err(if x.is_nan() { f64::NAN } else { 0.0 });
    };
    if l >= k && l + k + 1 < t.len() {
        a.start = l - k;
        let (b, d) = (&mut a.value, &mut a.deriv);
        match k {
            0 => b[0] = 1.0,
            1 => bsplvb::<1, DERIV>(t, inv, l, x, b, d),
            2 => bsplvb::<2, DERIV>(t, inv, l, x, b, d),
            3 => bsplvb::<3, DERIV>(t, inv, l, x, b, d),
            4 => bsplvb::<4, DERIV>(t, inv, l, x, b, d),
            5 => bsplvb::<5, DERIV>(t, inv, l, x, b, d),
            6 => bsplvb::<6, DERIV>(t, inv, l, x, b, d),
            _ => bsplvb::<7, DERIV>(t, inv, l, x, b, d),
        }
        if k == 0 {
            a.deriv[0] = 0.0;
        }
        return Ok(());
    }
    match Basis::at(t, k, x) {
        Locate::Inside(g) => {
            a.start = g.start;
            a.value = g.value;
            a.deriv = g.deriv;
            Ok(())
        }
        Locate::Outside => Err(0.0),
        Locate::NotANumber => Err(f64::NAN),
    }
}

/// Σ_m c_m b_m over one run of the last dimension (float32 coefficients, double sums).
#[inline(always)]
fn dot<const N: usize>(c: &[f32], b: &[f64; W]) -> f64 {
    let c = &c[..N];
    let mut s = 0.0;
    for m in 0..N {
        s += f64::from(c[m]) * b[m];
    }
    s
}

/// Scratch of one evaluator: the runs of the current point.
struct Rows {
    offset: Vec<usize>,
    weight: Vec<f64>,
    /// ∂weight/∂x_e for the leading dimensions e (gradients only), one run count per e.
    dweight: Vec<f64>,
}

/// A table prepared for evaluating many points on one thread (one per work item; it holds
/// scratch, so it is not shared between threads).
pub struct Evaluator<'a> {
    table: &'a SplineTable,
    /// Cell indices of the knots (empty: binary search, for one-off points).
    search: Vec<KnotIndex<'a>>,
    /// Runs of the last dimension per point, Π_{d<last}(k_d + 1).
    nrows: usize,
    rows: Rows,
    axes: [Axis; MAX_DIM],
}

impl<'a> Evaluator<'a> {
    /// For many points: knot searches through cells.
    pub fn new(table: &'a SplineTable) -> Self {
        let mut e = Self::one_off(table);
        e.search = table
            .knots
            .iter()
            .zip(&table.order)
            .map(|(t, &k)| KnotIndex::new(t, k as usize))
            .collect();
        e
    }

    /// For a few points: binary knot searches, nothing prepared but the scratch.
    pub fn one_off(table: &'a SplineTable) -> Self {
        let nd = table.ndim();
        let nrows: usize = table.order[..nd - 1].iter().map(|&k| k as usize + 1).product();
        let cap = nrows.min(MAX_ROWS);
        Self {
            table,
            search: Vec::new(),
            nrows,
            rows: Rows {
                offset: vec![0; cap],
                weight: vec![0.0; cap],
                dweight: vec![0.0; cap * (nd - 1)],
            },
            axes: [Axis::default(); MAX_DIM],
        }
    }

    /// Locate every coordinate of `x` and compute its basis.
    #[inline(always)]
    fn locate<const DERIV: bool>(&mut self, x: &[f64]) -> Result<(), f64> {
        let t = self.table;
        for d in 0..t.ndim() {
            let (l, inv) = match self.search.get(d) {
                Some(s) => (s.interval(x[d]), Some(&s.inv[..])),
                None => (interval(&t.knots[d], x[d]), None),
            };
            // The first coordinate outside (or NaN) decides, as in `SplineTable::locate`.
            axis::<DERIV>(&t.knots[d], inv, t.order[d] as usize, l, x[d], &mut self.axes[d])?;
        }
        Ok(())
    }

    /// Build the runs' offsets and weights (and their derivatives with `DERIV`) by outer
    /// products over the leading dimensions, dimension 0 slowest (memory order).
    #[inline(always)]
    fn build_rows<const DERIV: bool>(&mut self) {
        let t = self.table;
        let last = t.ndim() - 1;
        let base: usize = (0..=last).map(|d| self.axes[d].start * t.strides[d]).sum();
        let r = &mut self.rows;
        r.offset[0] = base;
        r.weight[0] = 1.0;
        let mut n = 1;
        for d in 0..last {
            let k1 = t.order[d] as usize + 1;
            let (a, stride) = (&self.axes[d], t.strides[d]);
            // Expand in place from the end: row q becomes rows q·k1 .. q·k1 + k1.
            for q in (0..n).rev() {
                let (o, w) = (r.offset[q], r.weight[q]);
                for m in (0..k1).rev() {
                    let p = q * k1 + m;
                    if DERIV {
                        for e in 0..d {
                            r.dweight[e * self.nrows + p] = r.dweight[e * self.nrows + q] * a.value[m];
                        }
                        r.dweight[d * self.nrows + p] = w * a.deriv[m];
                    }
                    r.offset[p] = o + m * stride;
                    r.weight[p] = w * a.value[m];
                }
            }
            n *= k1;
        }
    }

    /// Σ_rows weight · run, per coefficient of the run: the support contracted over the leading
    /// dimensions. Each of the N sums runs over the rows in order, even and odd rows apart (two
    /// chains for the pipeline), so the N lanes vectorise (one float → double conversion and one
    /// multiply-add per coefficient, the N of a run side by side) without changing any sum's order.
    #[inline(always)]
    fn runs_sum<const N: usize>(&self) -> [f64; N] {
        let c = &self.table.coefficients;
        let rows = &self.rows;
        let (mut a0, mut a1) = ([0.0f64; N], [0.0f64; N]);
        let mut q = 0;
        while q + 1 < self.nrows {
            let (r0, r1) = (&c[rows.offset[q]..][..N], &c[rows.offset[q + 1]..][..N]);
            let (w0, w1) = (rows.weight[q], rows.weight[q + 1]);
            for m in 0..N {
                a0[m] += w0 * f64::from(r0[m]);
                a1[m] += w1 * f64::from(r1[m]);
            }
            q += 2;
        }
        if q < self.nrows {
            let (r0, w0) = (&c[rows.offset[q]..][..N], rows.weight[q]);
            for m in 0..N {
                a0[m] += w0 * f64::from(r0[m]);
            }
        }
        for m in 0..N {
            a0[m] += a1[m];
        }
        a0
    }

    /// Σ_m a_m · b_m in order of m.
    #[inline(always)]
    fn last_dot<const N: usize>(a: &[f64; N], b: &[f64; W]) -> f64 {
        let mut s = 0.0;
        for m in 0..N {
            s += a[m] * b[m];
        }
        s
    }

    /// The value at a located point: Σ_rows weight · (run · B_last), summed as
    /// (Σ_rows weight · run) · B_last.
    #[inline(always)]
    fn contract_rows<const N: usize>(&self) -> f64 {
        let a = self.runs_sum::<N>();
        Self::last_dot(&a, &self.axes[self.table.ndim() - 1].value)
    }

    /// f(x).
    pub fn value(&mut self, x: &[f64]) -> f64 {
        match self.locate::<false>(x) {
            Ok(()) => self.contract(),
            Err(v) => v,
        }
    }

    /// The bases of the coordinates `xs` of dimension `d`, each located once (a grid's axis);
    /// `Err(value)` where the spline's value is known (0 outside, NaN).
    pub fn locate_axis(&self, d: usize, xs: &[f64]) -> Vec<Result<Axis, f64>> {
        let t = self.table;
        let k = t.order[d] as usize;
        xs.iter()
            .map(|&x| {
                let mut a = Axis::default();
                let (l, inv) = match self.search.get(d) {
                    Some(s) => (s.interval(x), Some(&s.inv[..])),
                    None => (interval(&t.knots[d], x), None),
                };
                axis::<false>(&t.knots[d], inv, k, l, x, &mut a).map(|()| a)
            })
            .collect()
    }

    /// f at the point whose coordinates' bases are `axes` (from [`Evaluator::locate_axis`]).
    pub fn value_at(&mut self, axes: &[&Axis]) -> f64 {
        for (d, a) in axes.iter().enumerate() {
            self.axes[d] = **a;
        }
        self.contract()
    }

    /// The value at the located point.
    fn contract(&mut self) -> f64 {
        if self.nrows > MAX_ROWS {
            return self.table.contract(&self.point());
        }
        if self.nrows == 1 {
            return self.contract_one();
        }
        self.build_rows::<false>();
        match self.table.order[self.table.ndim() - 1] {
            0 => self.contract_rows::<1>(),
            1 => self.contract_rows::<2>(),
            2 => self.contract_rows::<3>(),
            3 => self.contract_rows::<4>(),
            4 => self.contract_rows::<5>(),
            5 => self.contract_rows::<6>(),
            6 => self.contract_rows::<7>(),
            _ => self.contract_rows::<8>(),
        }
    }

    /// The value where the support is one run (1-D tables; leading dimensions of degree 0): the
    /// run's dot product, summed as `contract_rows` sums a single run.
    fn contract_one(&self) -> f64 {
        let t = self.table;
        let last = t.ndim() - 1;
        let base: usize = (0..=last).map(|d| self.axes[d].start * t.strides[d]).sum();
        let (c, b) = (&t.coefficients[base..], &self.axes[last].value);
        0.0 + match t.order[last] {
            0 => dot::<1>(c, b),
            1 => dot::<2>(c, b),
            2 => dot::<3>(c, b),
            3 => dot::<4>(c, b),
            4 => dot::<5>(c, b),
            5 => dot::<6>(c, b),
            6 => dot::<7>(c, b),
            _ => dot::<8>(c, b),
        }
    }

    /// f(x) and ∂f/∂x_d into `out` (`ndim + 1` numbers: value first).
    pub fn gradient(&mut self, x: &[f64], out: &mut [f64]) {
        let nd = self.table.ndim();
        if let Err(v) = self.locate::<true>(x) {
            out[0] = v;
            out[1..=nd].fill(if v.is_nan() { f64::NAN } else { 0.0 });
            return;
        }
        if self.nrows > MAX_ROWS {
            let g = self.table.gradient_general(x);
            out[0] = g.value;
            out[1..=nd].copy_from_slice(&g.grad[..nd]);
            return;
        }
        self.build_rows::<true>();
        match self.table.order[nd - 1] {
            0 => self.gradient_rows::<1>(out),
            1 => self.gradient_rows::<2>(out),
            2 => self.gradient_rows::<3>(out),
            3 => self.gradient_rows::<4>(out),
            4 => self.gradient_rows::<5>(out),
            5 => self.gradient_rows::<6>(out),
            6 => self.gradient_rows::<7>(out),
            _ => self.gradient_rows::<8>(out),
        }
    }

    /// Value and gradient over the runs: the value and the last dimension's derivative from the
    /// runs contracted with the value weights (the same sums as [`Self::contract_rows`], so a
    /// gradient's value is the value bit for bit), each leading dimension's derivative from the
    /// runs contracted with its derivative weights.
    #[inline(always)]
    fn gradient_rows<const N: usize>(&self, out: &mut [f64]) {
        let nd = self.table.ndim();
        let last = nd - 1;
        let c = &self.table.coefficients;
        let (b, db) = (&self.axes[last].value, &self.axes[last].deriv);
        let stride = self.nrows;
        let rows = &self.rows;
        let a = self.runs_sum::<N>();
        out[0] = Self::last_dot(&a, b);
        out[nd] = Self::last_dot(&a, db);
        for e in 0..last {
            let dw = &rows.dweight[e * stride..][..self.nrows];
            let mut d = [0.0f64; N];
            for (q, &w) in dw.iter().enumerate() {
                let r = &c[rows.offset[q]..][..N];
                for m in 0..N {
                    d[m] += w * f64::from(r[m]);
                }
            }
            out[1 + e] = Self::last_dot(&d, b);
        }
    }

    /// The located point in [`crate::eval`]'s form (the general contraction of huge supports).
    fn point(&self) -> crate::eval::Point {
        let mut p = crate::eval::Point {
            basis: [Basis::default(); MAX_DIM],
        };
        for d in 0..self.table.ndim() {
            p.basis[d].start = self.axes[d].start;
            p.basis[d].value = self.axes[d].value;
            p.basis[d].deriv = self.axes[d].deriv;
        }
        p
    }

    /// Values of row-major points (`ndim` coordinates each) into `out` (one per point).
    pub fn values(&mut self, points: &[f64], out: &mut [f64]) {
        let nd = self.table.ndim();
        for (x, v) in points.chunks_exact(nd).zip(out.iter_mut()) {
            *v = self.value(x);
        }
    }

    /// Values and gradients of row-major points into `out` (`ndim + 1` per point).
    pub fn gradients(&mut self, points: &[f64], out: &mut [f64]) {
        let nd = self.table.ndim();
        for (x, v) in points.chunks_exact(nd).zip(out.chunks_exact_mut(nd + 1)) {
            self.gradient(x, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpdrive_core::RandomStream;

    /// A random non-decreasing knot vector of `len` knots with repeated knots (multiplicity up to
    /// k+1 at the ends, 2 inside) and uneven spacing.
    fn knots(r: &mut RandomStream, len: usize, k: usize) -> Vec<f64> {
        let mut t = Vec::with_capacity(len);
        let mut x = -3.0 + 2.0 * r.uniform_f64();
        while t.len() < len {
            let rep = if t.is_empty() || t.len() + k + 1 >= len {
                1 + (r.uniform_f64() * (k + 1) as f64) as usize
            } else if r.uniform_f64() < 0.15 {
                2
            } else {
                1
            };
            for _ in 0..rep.min(len - t.len()) {
                t.push(x);
            }
            x += 0.05 + 2.0 * r.uniform_f64() * r.uniform_f64();
        }
        t
    }

    fn random_table(r: &mut RandomStream, nd: usize, max_k: usize) -> SplineTable {
        let order: Vec<u32> = (0..nd).map(|_| (r.uniform_f64() * (max_k + 1) as f64) as u32).collect();
        let naxes: Vec<usize> = order.iter().map(|&k| k as usize + 1 + (r.uniform_f64() * 6.0) as usize).collect();
        let knots = order
            .iter()
            .zip(&naxes)
            .map(|(&k, &n)| knots(r, n + k as usize + 1, k as usize))
            .collect();
        let total = naxes.iter().product();
        let c = (0..total).map(|_| (r.uniform_f64() * 2.0 - 0.7) as f32).collect();
        SplineTable::new(order, knots, naxes, c).unwrap()
    }

    /// A coordinate of axis `t`: inside, exactly on a knot, at either end, just outside, NaN.
    fn coordinate(r: &mut RandomStream, t: &[f64]) -> f64 {
        let (a, b) = (t[0], t[t.len() - 1]);
        match (r.uniform_f64() * 10.0) as usize {
            0 => t[(r.uniform_f64() * t.len() as f64) as usize % t.len()],
            1 => [a, b][(r.uniform_f64() * 2.0) as usize % 2],
            2 => [a - 1e-9, b + 1e-9, f64::NAN][(r.uniform_f64() * 3.0) as usize % 3],
            _ => a + (b - a) * r.uniform_f64(),
        }
    }

    #[test]
    fn knot_index_answers_as_the_binary_search() {
        let mut r = RandomStream::new(7, 1, 0);
        for case in 0..300 {
            let k = case % 4;
            let t = knots(&mut r, 2 * k + 2 + case % 17, k);
            let idx = KnotIndex::new(&t, k);
            for _ in 0..200 {
                let x = coordinate(&mut r, &t);
                assert_eq!(idx.interval(x), interval(&t, x), "knots {t:?} at {x}");
            }
            for &x in &t {
                assert_eq!(idx.interval(x), interval(&t, x), "knots {t:?} at the knot {x}");
            }
        }
    }

    /// Values and gradients of the evaluator (cells and one-off) equal the general routine to
    /// rounding, and a gradient's value is the value bit for bit (1e-13 of Σ|c·ΠB|, the sums' scale) for random tables of 1–4 dimensions and
    /// degrees 0–7, at points inside, on knots, at and beyond the ends, and NaN — and exactly
    /// where the answer is known (0 outside, NaN).
    #[test]
    fn evaluator_equals_the_general_routine() {
        let mut r = RandomStream::new(11, 2, 0);
        let mut compared = 0;
        for case in 0..240 {
            let t = random_table(&mut r, 1 + case % 4, if case % 3 == 0 { 7 } else { 3 });
            let nd = t.ndim();
            let (mut cells, mut one) = (Evaluator::new(&t), Evaluator::one_off(&t));
            let mut g = vec![0.0; nd + 1];
            for _ in 0..100 {
                let x: Vec<f64> = t.knots.iter().map(|k| coordinate(&mut r, k)).collect();
                let want = t.evaluate_general(&x);
                let scale = t.magnitude(&x);
                for got in [cells.value(&x), one.value(&x)] {
                    if want.is_nan() || scale == 0.0 {
                        assert!(got.to_bits() == want.to_bits() || got == want, "{t:?} at {x:?}: {got} vs {want}");
                    } else {
                        assert!(
                            (got - want).abs() <= 1e-13 * scale,
                            "{t:?} at {x:?}: {got} vs {want} (scale {scale})"
                        );
                    }
                }
                let (gw, gs) = (t.gradient_general(&x), t.gradient_magnitude(&x));
                for e in [&mut cells, &mut one] {
                    e.gradient(&x, &mut g);
                    let v = e.value(&x);
                    assert!(
                        g[0].to_bits() == v.to_bits(),
                        "{t:?} at {x:?}: the gradient's value {} is not the value {v}",
                        g[0]
                    );
                    let want = std::iter::once(gw.value).chain(gw.grad[..nd].iter().copied());
                    let scale = std::iter::once(gs.value).chain(gs.grad[..nd].iter().copied());
                    for (q, (w, s)) in want.zip(scale).enumerate() {
                        let got = g[q];
                        if w.is_nan() {
                            assert!(got.is_nan(), "{t:?} at {x:?}: gradient[{q}] {got} vs NaN");
                        } else {
                            assert!(
                                (got - w).abs() <= 1e-13 * s.max(f64::MIN_POSITIVE),
                                "{t:?} at {x:?}: gradient[{q}] {got} vs {w} (scale {s})"
                            );
                        }
                    }
                }
                compared += 1;
            }
        }
        assert_eq!(compared, 24_000);
    }

    /// A support of more runs than the scratch holds (8-D quadratic: 3⁷ = 2187) goes through the
    /// general contraction and still agrees.
    #[test]
    fn huge_supports_use_the_general_contraction() {
        let mut r = RandomStream::new(3, 3, 0);
        let nd = 8;
        let knots: Vec<Vec<f64>> = (0..nd).map(|_| (0..7).map(f64::from).collect()).collect();
        let c = (0..4usize.pow(8)).map(|_| r.uniform_f64() as f32).collect();
        let t = SplineTable::new(vec![2; nd], knots, vec![4; nd], c).unwrap();
        let mut e = Evaluator::new(&t);
        assert!(e.nrows > MAX_ROWS);
        let mut g = vec![0.0; nd + 1];
        for _ in 0..50 {
            let x: Vec<f64> = (0..nd).map(|_| 2.0 + 2.0 * r.uniform_f64()).collect();
            let want = t.evaluate_general(&x);
            assert!((e.value(&x) - want).abs() <= 1e-13 * t.magnitude(&x));
            e.gradient(&x, &mut g);
            assert!((g[0] - want).abs() <= 1e-13 * t.magnitude(&x));
        }
    }
}
