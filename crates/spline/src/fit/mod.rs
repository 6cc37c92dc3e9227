//! Fitting tables: penalized tensor-product B-spline regression of a weighted N-D histogram
//! (N ≤ 6), photospline's `glam_fit` (issue #32, "Fitter").
//!
//! Given values z and weights w (inverse variances; zero for empty bins) on the grid of bin
//! centres x_0 × … × x_{N−1}, knots t_d and degrees k_d per axis, the coefficients c solve the
//! penalized normal equations
//!
//!   (BᵀWB + Σ_d λ_d P_d) c = BᵀW z,  B = B_0 ⊗ … ⊗ B_{N−1},  P_d = I ⊗ … ⊗ D_dᵀD_d ⊗ … ⊗ I,
//!
//! (Eilers & Marx 1996; Currie, Durban & Eilers 2006, eq. for the penalized least-squares
//! estimate in §3), where B_d (m_d × n_d) is the B-spline basis of axis d at its centres
//! ([`basis`]) and D_d the order-p derivative operator on the coefficients ([`penalty`]).
//!
//! * [`glam`] forms BᵀWB and BᵀWz axis by axis with the rotated H-transform of GLAM, never the
//!   Kronecker design matrix (Π m_d × Π n_d);
//! * [`penalty`] adds λ_d P_d;
//! * [`cholesky`] factors the dense symmetric positive definite matrix and solves.
//!
//! Everything that can be wrong with a request is refused in [`Problem::new`] before any large
//! allocation: shapes, NaN/infinite/negative weights, NaN values with a weight, knots that do not
//! cover the centres, degrees above 5, more than 6 axes, penalty orders above the degree,
//! coefficient spans without data where nothing regularises them (the matrix would be singular),
//! and the memory of the dense normal matrix (through [`warpdrive_core::limits`]).
//! Monotonic fits (photospline's `monodim`): [`monotonic`], on the CPU.

pub mod basis;
pub mod cholesky;
pub mod glam;
pub mod gpu;
pub mod monotonic;
pub mod penalty;
pub mod synthetic;

use crate::fits::Value;
use crate::table::SplineTable;
use basis::{AxisBasis, MAX_K};
use glam::Op;
use warpdrive_core::engine::{Cancelled, Error, ParamError};
use warpdrive_core::progress::Progress;

/// Most axes a fit takes (photospline tables in use have up to 6).
pub const MAX_FIT_DIM: usize = 6;
/// Highest degree a fit takes.
pub const MAX_FIT_ORDER: u32 = MAX_K as u32;

/// What is fitted with what: knots, degree, smoothing and penalty order per axis (a single
/// value of `order`, `smooth` or `penalty_order` applies to every axis, as in photospline).
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    /// Knot vector of each axis, not padded: n_d + k_d + 1 knots for n_d coefficients.
    pub knots: Vec<Vec<f64>>,
    /// B-spline degree (photospline's "order": 2 = quadratic).
    pub order: Vec<u32>,
    /// Smoothing λ_d (≥ 0) of the derivative penalty.
    pub smooth: Vec<f64>,
    /// Order p_d of the penalized derivative (0 = ridge on the coefficients).
    pub penalty_order: Vec<u32>,
    /// Axis along which the fit is to be monotonic (not implemented: refused).
    pub monodim: Option<usize>,
}

/// A histogram on a grid: `z` and `w` in C order (axis 0 slowest) over `centers`.
#[derive(Clone, Copy, Debug)]
pub struct Histogram<'a> {
    pub z: &'a [f64],
    pub w: &'a [f64],
    pub centers: &'a [Vec<f64>],
}

/// A checked fit: the per-axis settings and bases.
#[derive(Clone, Debug)]
pub struct Problem<'a> {
    hist: Histogram<'a>,
    pub knots: Vec<Vec<f64>>,
    pub order: Vec<u32>,
    pub smooth: Vec<f64>,
    pub penalty_order: Vec<u32>,
    bases: Vec<AxisBasis>,
    /// D_dᵀD_d of each penalized axis.
    grams: Vec<Option<Vec<Vec<f64>>>>,
    /// The axis along which the fit does not decrease ([`monotonic`]).
    pub monodim: Option<usize>,
}

/// The solution.
#[derive(Clone, Debug)]
pub struct Fit {
    /// Coefficients in C order over `naxes` (double precision; the table stores float32).
    pub coefficients: Vec<f64>,
    pub naxes: Vec<usize>,
    /// Σ w (z − f)² over the bins.
    pub chi2: f64,
    /// Bins with weight > 0.
    pub bins: usize,
}

/// One value per axis from one (for every axis) or N.
fn per_axis<T: Copy>(v: &[T], nd: usize, param: &'static str) -> Result<Vec<T>, ParamError> {
    match v.len() {
        1 => Ok(vec![v[0]; nd]),
        l if l == nd => Ok(v.to_vec()),
        l => Err(ParamError::new(
            param,
            format!("has {l} values for {nd} axes: give one (for every axis) or {nd}"),
        )),
    }
}

/// After each GLAM contraction: one step of progress, or `Cancelled` once the stop is raised.
fn contraction_step(progress: &Progress) -> impl FnMut() -> Result<(), Cancelled> + '_ {
    move || {
        if progress.should_stop() {
            Err(Cancelled)
        } else {
            progress.add(1);
            Ok(())
        }
    }
}

/// The multi-index of flat index `i` over `shape` (C order), as `[i0, i1, …]`.
fn multi_index(mut i: usize, shape: &[usize]) -> String {
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        idx[d] = i % shape[d].max(1);
        i /= shape[d].max(1);
    }
    format!("{idx:?}")
}

impl<'a> Problem<'a> {
    /// Check the request against the histogram and budget the normal matrix.
    pub fn new(hist: Histogram<'a>, spec: &Spec) -> Result<Self, Error> {
        let nd = hist.centers.len();
        if nd == 0 || nd > MAX_FIT_DIM {
            return Err(ParamError::new("centers", format!("has {nd} axes: fits take 1 to {MAX_FIT_DIM}")).into());
        }
        if let Some(d) = spec.monodim {
            if d >= nd {
                return Err(ParamError::new(
                    "monodim",
                    format!(
                        "= {d}, but the histogram has {nd} axes (0 to {}): the monotonic axis must be one of them",
                        nd - 1
                    ),
                )
                .into());
            }
        }
        if spec.knots.len() != nd {
            return Err(ParamError::new("knots", format!("has {} knot vectors for {nd} axes of centres", spec.knots.len())).into());
        }
        let order = per_axis(&spec.order, nd, "order")?;
        let smooth = per_axis(&spec.smooth, nd, "smooth")?;
        let penalty_order = per_axis(&spec.penalty_order, nd, "penalty_order")?;
        let shape: Vec<usize> = hist.centers.iter().map(Vec::len).collect();
        let mut n_ax = Vec::with_capacity(nd);
        for d in 0..nd {
            let (t, k) = (&spec.knots[d], order[d]);
            if k > MAX_FIT_ORDER {
                return Err(ParamError::new(
                    "order",
                    format!("{k} of axis {d} is above {MAX_FIT_ORDER}: fits take degrees 0 to {MAX_FIT_ORDER}"),
                )
                .into());
            }
            let k = k as usize;
            if let Some(i) = t.iter().position(|x| !x.is_finite()) {
                return Err(ParamError::new("knots", format!("of axis {d}: knot {i} is {}", t[i])).into());
            }
            if let Some(i) = t.windows(2).position(|w| w[1] < w[0]) {
                return Err(ParamError::new(
                    "knots",
                    format!("of axis {d} decrease at index {}: {} then {}", i + 1, t[i], t[i + 1]),
                )
                .into());
            }
            if t.len() < 2 * k + 2 {
                return Err(ParamError::new(
                    "knots",
                    format!(
                        "of axis {d}: {} knots for degree {k}; at least 2·(order + 1) = {} are needed (n + order + 1 knots for n ≥ order + 1 coefficients)",
                        t.len(),
                        2 * k + 2
                    ),
                )
                .into());
            }
            if t[0] == t[t.len() - 1] {
                return Err(ParamError::new("knots", format!("of axis {d} are all {}: the axis spans no interval", t[0])).into());
            }
            let n = t.len() - k - 1;
            let x = &hist.centers[d];
            if x.is_empty() {
                return Err(ParamError::new("centers", format!("of axis {d} are empty")).into());
            }
            if let Some(j) = x.iter().position(|v| !(*v >= t[0] && *v <= t[t.len() - 1])) {
                return Err(ParamError::new(
                    "knots",
                    format!(
                        "of axis {d} span [{}, {}] but centre {j} of that axis is {}: the knots must cover the data",
                        t[0],
                        t[t.len() - 1],
                        x[j]
                    ),
                )
                .into());
            }
            let p = penalty_order[d] as usize;
            if smooth[d].is_nan() || smooth[d] < 0.0 || smooth[d].is_infinite() {
                return Err(ParamError::new("smooth", format!("of axis {d} is {}: smoothing must be finite and ≥ 0", smooth[d])).into());
            }
            if smooth[d] > 0.0 && (p > k || p >= n) {
                return Err(ParamError::new(
                    "penalty_order",
                    format!(
                        "{p} of axis {d} must be at most its degree {k} and below its {n} coefficients (the penalty is the derivative of order {p} of a degree-{k} spline)"
                    ),
                )
                .into());
            }
            n_ax.push(n);
        }
        let cells = shape.iter().try_fold(1usize, |a, &m| a.checked_mul(m)).unwrap_or(usize::MAX);
        for (name, v) in [("z", hist.z), ("w", hist.w)] {
            if v.len() != cells {
                return Err(ParamError::new(
                    name,
                    format!("has {} values for centres of shape {shape:?} ({cells} bins)", v.len()),
                )
                .into());
            }
        }
        if let Some(i) = hist.w.iter().position(|w| !(w.is_finite() && *w >= 0.0)) {
            return Err(ParamError::new(
                "w",
                format!(
                    "at bin {} is {}: weights must be finite and ≥ 0 (0 for empty bins)",
                    multi_index(i, &shape),
                    hist.w[i]
                ),
            )
            .into());
        }
        if let Some(i) = (0..cells).find(|&i| hist.w[i] > 0.0 && !hist.z[i].is_finite()) {
            return Err(ParamError::new(
                "z",
                format!(
                    "at bin {} is {} with weight {}: values of bins with weight > 0 must be finite (give the bin weight 0)",
                    multi_index(i, &shape),
                    hist.z[i],
                    hist.w[i]
                ),
            )
            .into());
        }
        if !hist.w.iter().any(|&w| w > 0.0) {
            return Err(ParamError::new("w", "are all 0: nothing to fit").into());
        }
        // The dense normal matrix and the largest GLAM array, before anything is allocated.
        let n = n_ax.iter().try_fold(1u64, |a, &m| a.checked_mul(m as u64)).unwrap_or(u64::MAX);
        let band_rows: Vec<usize> = (0..nd).map(|d| n_ax[d] * (2 * order[d] as usize + 1)).collect();
        let largest = glam::largest_intermediate(&band_rows, &shape);
        warpdrive_core::limits::check_alloc(
            "knots",
            n.saturating_mul(n).saturating_add(largest.saturating_mul(2)),
            8,
            &format!("the {n} coefficients make a dense normal matrix of {n}² elements: use fewer knots"),
        )?;
        let mut bases = Vec::with_capacity(nd);
        let mut grams = Vec::with_capacity(nd);
        for d in 0..nd {
            let (t, k) = (&spec.knots[d], order[d] as usize);
            let b = AxisBasis::new(t, k, &hist.centers[d])
                .map_err(|j| ParamError::new("centers", format!("of axis {d}: centre {j} is outside the knots")))?;
            grams.push(if smooth[d] > 0.0 {
                let p = penalty_order[d] as usize;
                let dm = penalty::derivative_matrix(t, k, p).map_err(|(q, j)| {
                    ParamError::new(
                        "knots",
                        format!(
                            "of axis {d} repeat: t[{}] = t[{}] = {}, so the derivative of order {q} is undefined there ({{penalty_order}} {p} needs fewer repeated knots)",
                            j + q,
                            j + k + 1,
                            t[j + q]
                        ),
                    )
                })?;
                Some(penalty::gram(&dm, b.n))
            } else {
                None
            });
            bases.push(b);
        }
        let me = Self {
            hist,
            knots: spec.knots.clone(),
            order,
            smooth,
            penalty_order,
            bases,
            grams,
            monodim: spec.monodim,
        };
        me.check_spans()?;
        Ok(me)
    }

    /// Coefficients per axis.
    pub fn naxes(&self) -> Vec<usize> {
        self.bases.iter().map(|b| b.n).collect()
    }

    /// A coefficient index i_d whose basis function has no weighted bin under it, along an axis
    /// without smoothing, makes BᵀWB + Σλ P singular (the whole slice c[…, i_d, …] is free):
    /// refused here, naming the axis and the knot span. (Other singular systems — e.g. a
    /// penalty whose null space the data do not pin — are caught by the factorisation.)
    fn check_spans(&self) -> Result<(), Error> {
        let shape: Vec<usize> = self.hist.centers.iter().map(Vec::len).collect();
        let nd = shape.len();
        for d in 0..nd {
            if self.smooth[d] > 0.0 {
                continue;
            }
            // Weight summed over the other axes, per centre of axis d.
            let inner: usize = shape[d + 1..].iter().product();
            let mut marginal = vec![0.0; shape[d]];
            for (i, &w) in self.hist.w.iter().enumerate() {
                marginal[i / inner % shape[d]] += w;
            }
            let b = &self.bases[d];
            let mut covered = vec![0.0; b.n];
            for x in 0..b.rows() {
                for (i, v) in b.row(x) {
                    covered[i] += v * marginal[x];
                }
            }
            if let Some(i) = covered.iter().position(|&c| c.is_nan() || c <= 0.0) {
                let t = &self.knots[d];
                let k = self.order[d] as usize;
                return Err(ParamError::new(
                    "knots",
                    format!(
                        "of axis {d}: no bin with weight > 0 lies in knot span [{}, {}] of coefficient {i} and {{smooth}} of axis {d} is 0, so the normal equations are singular; smooth axis {d} (> 0) or remove knots there",
                        t[i],
                        t[i + k + 1]
                    ),
                )
                .into());
            }
        }
        Ok(())
    }

    /// The normal matrix BᵀWB + Σ λ_d P_d (dense, row-major) and the right-hand side BᵀWz.
    pub fn normal_equations(&self, progress: &Progress) -> Result<(Vec<f64>, Vec<f64>), Cancelled> {
        let mut step = contraction_step(progress);
        let band_ops: Vec<Op> = self.bases.iter().map(Op::row_tensor_band).collect();
        let band = glam::kron_apply(&band_ops, self.hist.w.to_vec(), &mut step)?;
        drop(band_ops);
        let mut m = glam::normal_matrix(&band, &self.bases);
        drop(band);
        let n_ax = self.naxes();
        for d in 0..n_ax.len() {
            if let Some(g) = &self.grams[d] {
                penalty::add_kron_penalty(&mut m, &n_ax, d, self.smooth[d], g, self.penalty_order[d] as usize);
            }
        }
        let wz = self.weighted_values();
        let rhs_ops: Vec<Op> = self.bases.iter().map(Op::basis_transposed).collect();
        let rhs = glam::kron_apply(&rhs_ops, wz, &mut step)?;
        Ok((m, rhs))
    }

    /// W∘z, the array the right-hand side BᵀWz contracts (0 where the weight is 0, whatever z is).
    fn weighted_values(&self) -> Vec<f64> {
        self.hist
            .w
            .iter()
            .zip(self.hist.z)
            .map(|(&w, &z)| if w > 0.0 { w * z } else { 0.0 })
            .collect()
    }

    /// The fitted values Bc on the histogram's grid (C order).
    pub fn fitted(&self, coefficients: &[f64]) -> Vec<f64> {
        let ops: Vec<Op> = self.bases.iter().map(Op::basis).collect();
        glam::kron_apply::<()>(&ops, coefficients.to_vec(), || Ok(())).unwrap_or_default()
    }

    /// Steps of [`Problem::solve`]'s progress: 2N contractions, then the coefficients factored.
    pub fn steps(&self) -> u64 {
        2 * self.bases.len() as u64 + self.naxes().iter().product::<usize>() as u64
    }

    /// Solve the penalized normal equations (progress in [`Problem::steps`]; cancelled between
    /// contractions and block columns of the factorisation).
    pub fn solve(&self, progress: &Progress) -> Result<Fit, Error> {
        let (mut m, mut rhs) = self.normal_equations(progress)?;
        if let Some(axis) = self.monodim {
            let n_ax = self.naxes();
            monotonic::transform(&mut m, &mut rhs, &n_ax, axis);
            let (a, _) = monotonic::nnls(&m, &rhs, || !progress.should_stop()).map_err(|e| match e {
                monotonic::Stop::Cancelled => Error::Cancelled(Cancelled),
                monotonic::Stop::Singular { index, pivot, diagonal } => self.singular(index, pivot, diagonal).into(),
                monotonic::Stop::NoConvergence(k) => Error::Failed(format!(
                    "the monotonic fit found no solution in {k} exchanges of its active set (block principal pivoting); fit with more smoothing"
                )),
            })?;
            progress.add(rhs.len() as u64);
            return Ok(self.finish(monotonic::coefficients(&a, &n_ax, axis)));
        }
        let n = rhs.len();
        let mut done = 0;
        cholesky::factor(&mut m, n, |cols| {
            progress.add((cols - done) as u64);
            done = cols;
            !progress.should_stop()
        })
        .map_err(|e| match e {
            cholesky::Stop::Cancelled => Error::Cancelled(Cancelled),
            cholesky::Stop::Singular { index, pivot, diagonal } => self.singular(index, pivot, diagonal).into(),
        })?;
        let coefficients = cholesky::solve(&m, n, &rhs);
        drop(m);
        Ok(self.finish(coefficients))
    }

    /// The fit of these coefficients: χ² of the fitted values against the histogram.
    fn finish(&self, coefficients: Vec<f64>) -> Fit {
        let naxes = self.naxes();
        let f = self.fitted(&coefficients);
        let chi2 = self
            .hist
            .w
            .iter()
            .zip(self.hist.z)
            .zip(&f)
            .map(|((&w, &z), &f)| if w > 0.0 { w * (z - f).powi(2) } else { 0.0 })
            .sum();
        Fit {
            coefficients,
            naxes,
            chi2,
            bins: self.hist.w.iter().filter(|&&w| w > 0.0).count(),
        }
    }

    /// The error of a vanishing pivot: the coefficient, its knot spans, and what to change.
    fn singular(&self, index: usize, pivot: f64, diagonal: f64) -> ParamError {
        let naxes = self.naxes();
        let mut rem = index;
        let mut spans = Vec::new();
        for d in (0..naxes.len()).rev() {
            let i = rem % naxes[d];
            rem /= naxes[d];
            let k = self.order[d] as usize;
            spans.push(format!("axis {d}: [{}, {}]", self.knots[d][i], self.knots[d][i + k + 1]));
        }
        spans.reverse();
        ParamError::new(
            "knots",
            format!(
                "leave the normal equations singular at coefficient {} (knot spans {}; pivot {pivot:e} of diagonal {diagonal:e}): the bins with weight > 0 do not determine it; add {{smooth}} along these axes or remove knots where there is no data",
                multi_index(index, &naxes),
                spans.join(", ")
            ),
        )
    }

    /// The table of a fit: coefficients (float32), knots, degrees, and the fit's settings in the
    /// header (SMOOTHd, PENORDd, FITBINS, FITCHI2).
    pub fn table(&self, fit: &Fit) -> SplineTable {
        let coefs: Vec<f32> = fit.coefficients.iter().map(|&c| c as f32).collect();
        let mut t = SplineTable::new(self.order.clone(), self.knots.clone(), fit.naxes.clone(), coefs)
            .expect("the knots and shapes were checked by Problem::new");
        for d in 0..self.order.len() {
            t.aux.push((format!("SMOOTH{d}"), Value::Float(self.smooth[d])));
            t.aux.push((format!("PENORD{d}"), Value::Int(i64::from(self.penalty_order[d]))));
        }
        if let Some(d) = self.monodim {
            t.aux.push(("MONODIM".into(), Value::Int(d as i64)));
        }
        t.aux.push(("FITBINS".into(), Value::Int(fit.bins as i64)));
        t.aux.push(("FITCHI2".into(), Value::Float(fit.chi2)));
        t
    }
}
