//! Non-negative energy unfolding: maximise the Poisson likelihood
//!   ln L(E) = Σ_i [k_i ln μ_i − μ_i − ln Γ(k_i+1)],  μ = Λ E + ρ,  E ≥ 0
//! (spec §2.1; IceCube, JINST 9 (2014) P03009), with three solvers:
//! * [`nnls`] — Lawson & Hanson's active-set NNLS ("Solving Least Squares Problems", 1974,
//!   ch. 23) on the weighted least-squares problem Σ (k − ρ − ΛE)²/max(k, 1) (Neyman χ²), via
//!   its normal equations;
//! * [`pcg_poisson`] — projected, preconditioned conjugate gradients on ln L (Millipede's
//!   `pcg_poisson`, after Angelis et al., Phys. Med. Biol. 56 (2011) 3895, App. A): EM-like
//!   diagonal preconditioner (E + ε)/colsum, Polak–Ribière⁺ directions, a Newton line search on
//!   the one-dimensional likelihood bounded so that E ≥ 0 and μ > 0, truncation E ← max(E, 0);
//! * [`newton_poisson`] — projected Newton on ln L with the Fisher matrix as the Hessian (the
//!   default: the likelihood is concave, so it reaches PCG's maximum, in a handful of iterations).
//!
//! PCG and Newton start from the NNLS solution. Uncertainties come from the Fisher matrix
//! F = Λᵀ diag(k/μ²) Λ (the Hessian of −ln L, spec §2.1), inverted on the sources with E > 0.
//!
//! Every loop that can run long — solver iterations, Gram-matrix rows, Cholesky rows — polls
//! the run's [`Progress::should_stop`]; once it is raised the solvers return at once with what
//! they have (the caller turns that into `Cancelled`, so it is never reported as a result).

use rayon::prelude::*;
use warpdrive_core::progress::Progress;

use super::model::Response;

/// Solver choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Solver {
    /// Weighted least squares (Neyman χ²), Lawson–Hanson; biased low at small charges.
    Nnls,
    /// Millipede's projected preconditioned CG on the Poisson likelihood.
    Pcg,
    /// Projected Newton on the Poisson likelihood (same maximum as `Pcg`, far fewer iterations).
    Newton,
}

impl std::str::FromStr for Solver {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "nnls" => Ok(Solver::Nnls),
            "pcg" => Ok(Solver::Pcg),
            "newton" => Ok(Solver::Newton),
            _ => Err(format!("unknown solver '{s}': expected pcg, newton or nnls")),
        }
    }
}

/// The unfolded energies and what describes the fit.
#[derive(Clone, Debug, PartialEq)]
pub struct Solution {
    pub energy: Vec<f64>,
    /// 1σ from the Fisher matrix (on the sources with E > 0; sources at E = 0 get the
    /// one-parameter curvature 1/√F_jj, `f64::INFINITY` where no row sees them).
    pub sigma: Vec<f64>,
    /// F⁻¹ on the sources with E > 0 (n × n, row-major; zero for sources at E = 0).
    pub covariance: Vec<f64>,
    /// ln L at the solution, minus the regularisation term if any.
    pub log_likelihood: f64,
    /// Σ (k − μ)²/max(k, 1).
    pub chi2: f64,
    /// Iterations of the solver (for NNLS: active-set additions).
    pub iterations: usize,
    /// Active-set additions of the NNLS start (pcg and newton start from it).
    pub start_iterations: usize,
    /// Σ_i Λ_ij: the photo-electrons per GeV each source puts into the event; sources with
    /// almost none are unconstrained by the data.
    pub pe_per_gev: Vec<f64>,
    pub converged: bool,
    pub solver: Solver,
}

/// Options shared by the solvers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SolveOptions {
    pub solver: Solver,
    /// Stop when every free source's relative gradient |∂lnL/∂E_j| / Σ_i Λ_ij is below this.
    pub tolerance: f64,
    pub max_iterations: usize,
    /// Millipede's `ShowerRegularization` λ [GeV⁻²]: ln L − λ Σ E_j² (a Gaussian prior of
    /// width 1/√(2λ) on each energy; 1e-9 ≈ 22 TeV). 0 = none.
    pub regularization: f64,
}

impl Default for SolveOptions {
    fn default() -> Self {
        Self {
            solver: Solver::Newton,
            tolerance: 1e-9,
            max_iterations: 20_000,
            regularization: 0.0,
        }
    }
}

/// ln Γ(k+1) (charges need not be integers).
fn ln_gamma1(k: f64) -> f64 {
    warpdrive_core::stats::ln_gamma(k + 1.0)
}

/// Cholesky solve of a symmetric positive definite n×n system (row-major); `None` if not PD
/// or stopped.
fn cholesky_solve(a: &[f64], n: usize, b: &[f64], stop: &Progress) -> Option<Vec<f64>> {
    let l = cholesky(a, n, stop)?;
    Some(triangular_solve(&l, n, b))
}

/// Solve L Lᵀ y = b with the Cholesky factor `l` (forward, then back substitution).
fn triangular_solve(l: &[f64], n: usize, b: &[f64]) -> Vec<f64> {
    let mut y = b.to_vec();
    for i in 0..n {
        for j in 0..i {
            y[i] -= l[i * n + j] * y[j];
        }
        y[i] /= l[i * n + i];
    }
    for i in (0..n).rev() {
        for j in i + 1..n {
            y[i] -= l[j * n + i] * y[j];
        }
        y[i] /= l[i * n + i];
    }
    y
}

/// The Cholesky factor L (lower, row-major) of a symmetric positive definite matrix; `None` if
/// it is not positive definite or the run was asked to stop (polled per row: O(n²) work each).
fn cholesky(a: &[f64], n: usize, stop: &Progress) -> Option<Vec<f64>> {
    let mut l = vec![0.0; n * n];
    for i in 0..n {
        if stop.should_stop() {
            return None;
        }
        for j in 0..=i {
            let mut s = a[i * n + j];
            for k in 0..j {
                s -= l[i * n + k] * l[j * n + k];
            }
            if i == j {
                if s.is_nan() || s <= 1e-300 * a[i * n + i].abs().max(1e-300) {
                    return None;
                }
                l[i * n + i] = s.sqrt();
            } else {
                l[i * n + j] = s / l[j * n + j];
            }
        }
    }
    Some(l)
}

/// Lawson–Hanson NNLS on min Σ w_i (b_i − (ΛE)_i)² + λ Σ E², b = k − ρ, w = 1/max(k, 1), via
/// the normal equations A = Λᵀ W Λ + λ I, c = Λᵀ W b.
pub fn nnls(pb: &Problem, max_iterations: usize) -> (Vec<f64>, usize) {
    let n = pb.cols();
    let stop = &pb.progress;
    let w: Vec<f64> = pb.k.iter().map(|k| 1.0 / k.max(1.0)).collect();
    let mut a = pb.sparse.gram(&w, stop);
    (0..n).for_each(|p| a[p * n + p] += pb.lam);
    let wb: Vec<f64> = (0..w.len()).map(|i| w[i] * (pb.k[i] - pb.noise[i])).collect();
    let c = pb.sparse.tmul(&wb);
    let scale = (0..n).map(|p| a[p * n + p]).fold(0.0f64, f64::max).max(1e-300);
    let mut x = vec![0.0; n];
    let mut passive = vec![false; n];
    let grad = |x: &[f64]| -> Vec<f64> { (0..n).map(|p| c[p] - (0..n).map(|q| a[p * n + q] * x[q]).sum::<f64>()).collect() };
    let solve_passive = |passive: &[bool]| -> Vec<f64> {
        let idx: Vec<usize> = (0..n).filter(|&p| passive[p]).collect();
        let m = idx.len();
        let sub: Vec<f64> = idx
            .iter()
            .flat_map(|&p| idx.iter().map(move |&q| (p, q)))
            .map(|(p, q)| a[p * n + q])
            .collect();
        let rhs: Vec<f64> = idx.iter().map(|&p| c[p]).collect();
        let z = cholesky_solve(&sub, m, &rhs, stop).unwrap_or_else(|| vec![0.0; m]);
        let mut full = vec![0.0; n];
        for (t, &p) in idx.iter().enumerate() {
            full[p] = z[t];
        }
        full
    };
    let mut iterations = 0;
    loop {
        if stop.should_stop() {
            break;
        }
        let w = grad(&x);
        let Some(j) = (0..n)
            .filter(|&p| !passive[p] && w[p] > 1e-12 * scale)
            .max_by(|&p, &q| w[p].total_cmp(&w[q]))
        else {
            break;
        };
        if iterations >= max_iterations {
            break;
        }
        iterations += 1;
        stop.add(1);
        passive[j] = true;
        loop {
            if stop.should_stop() {
                break;
            }
            let z = solve_passive(&passive);
            if (0..n).filter(|&p| passive[p]).all(|p| z[p] > 0.0) {
                x = z;
                break;
            }
            let alpha = (0..n)
                .filter(|&p| passive[p] && z[p] <= 0.0)
                .map(|p| x[p] / (x[p] - z[p]))
                .fold(f64::INFINITY, f64::min);
            for p in 0..n {
                x[p] += alpha * (z[p] - x[p]);
                if passive[p] && x[p] <= 1e-12 * x.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-300) {
                    passive[p] = false;
                    x[p] = 0.0;
                }
            }
            if !passive.iter().any(|&b| b) {
                break;
            }
        }
    }
    (x, iterations)
}

/// Λ with its zero entries dropped (compressed rows): a source contributes nothing to DOMs
/// beyond the table's reach, so a long track's Λ is mostly zeros. Products run in parallel
/// over fixed blocks of rows and are summed in block order, so results do not depend on the
/// number of threads.
struct SparseRows {
    cols: usize,
    start: Vec<usize>,
    col: Vec<u32>,
    val: Vec<f64>,
}

/// Rows per parallel block of [`SparseRows`] products.
const ROW_BLOCK: usize = 1024;

impl SparseRows {
    fn new(l: &Response) -> Self {
        let mut s = Self {
            cols: l.cols,
            start: Vec::with_capacity(l.rows + 1),
            col: Vec::new(),
            val: Vec::new(),
        };
        s.start.push(0);
        for i in 0..l.rows {
            for (j, &v) in l.row(i).iter().enumerate() {
                if v != 0.0 {
                    s.col.push(j as u32);
                    s.val.push(v);
                }
            }
            s.start.push(s.val.len());
        }
        s
    }

    fn rows(&self) -> usize {
        self.start.len() - 1
    }

    /// out_i = base_i + (Λ x)_i.
    fn mul_add(&self, x: &[f64], base: Option<&[f64]>) -> Vec<f64> {
        let mut out = base.map_or_else(|| vec![0.0; self.rows()], <[f64]>::to_vec);
        out.par_chunks_mut(ROW_BLOCK).enumerate().for_each(|(b, chunk)| {
            for (r, o) in chunk.iter_mut().enumerate() {
                let i = b * ROW_BLOCK + r;
                let (lo, hi) = (self.start[i], self.start[i + 1]);
                *o += self.col[lo..hi]
                    .iter()
                    .zip(&self.val[lo..hi])
                    .map(|(&j, v)| v * x[j as usize])
                    .sum::<f64>();
            }
        });
        out
    }

    /// Λᵀ r.
    fn tmul(&self, r: &[f64]) -> Vec<f64> {
        let partial: Vec<Vec<f64>> = (0..self.rows().div_ceil(ROW_BLOCK))
            .into_par_iter()
            .map(|b| {
                let mut acc = vec![0.0; self.cols];
                for i in b * ROW_BLOCK..((b + 1) * ROW_BLOCK).min(self.rows()) {
                    for p in self.start[i]..self.start[i + 1] {
                        acc[self.col[p] as usize] += self.val[p] * r[i];
                    }
                }
                acc
            })
            .collect();
        let mut g = vec![0.0; self.cols];
        for acc in partial {
            g.iter_mut().zip(acc).for_each(|(a, b)| *a += b);
        }
        g
    }

    /// Λᵀ diag(w) Λ (n × n, row-major, symmetric); rows are skipped once `stop` says so (the
    /// matrix is then incomplete and the caller's run is cancelled).
    fn gram(&self, w: &[f64], stop: &Progress) -> Vec<f64> {
        let n = self.cols;
        let partial: Vec<Vec<f64>> = (0..self.rows().div_ceil(ROW_BLOCK))
            .into_par_iter()
            .map(|b| {
                let mut h = vec![0.0; n * n];
                for i in b * ROW_BLOCK..((b + 1) * ROW_BLOCK).min(self.rows()) {
                    if w[i] == 0.0 || stop.should_stop() {
                        continue;
                    }
                    let (lo, hi) = (self.start[i], self.start[i + 1]);
                    for p in lo..hi {
                        let (cp, vp) = (self.col[p] as usize, w[i] * self.val[p]);
                        for q in lo..=p {
                            h[cp * n + self.col[q] as usize] += vp * self.val[q];
                        }
                    }
                }
                h
            })
            .collect();
        let mut h = vec![0.0; n * n];
        for part in partial {
            h.iter_mut().zip(part).for_each(|(a, b)| *a += b);
        }
        // Columns are increasing within a row, so only the lower triangle was filled.
        for p in 0..n {
            for q in 0..p {
                h[q * n + p] = h[p * n + q];
            }
        }
        h
    }
}

/// What every solver and the fit statistics share, built once per unfolding: Λ in compressed
/// rows, its column sums, the data and the regularisation.
pub struct Problem<'a> {
    sparse: SparseRows,
    colsum: Vec<f64>,
    k: &'a [f64],
    noise: &'a [f64],
    /// Regularisation λ [GeV⁻²].
    lam: f64,
    /// The run's progress: iterations are counted on it and its stop request is polled.
    progress: Progress,
}

impl<'a> Problem<'a> {
    pub fn new(l: &Response, k: &'a [f64], noise: &'a [f64], lam: f64) -> Self {
        Self::with_progress(l, k, noise, lam, Progress::hidden())
    }

    /// A problem whose solvers count iterations on `progress` and stop when it says so.
    pub fn with_progress(l: &Response, k: &'a [f64], noise: &'a [f64], lam: f64, progress: Progress) -> Self {
        let sparse = SparseRows::new(l);
        let colsum = sparse.tmul(&vec![1.0; l.rows]);
        Self {
            sparse,
            colsum,
            k,
            noise,
            lam,
            progress,
        }
    }

    fn cols(&self) -> usize {
        self.colsum.len()
    }

    /// μ = Λ E + ρ.
    pub fn expectation(&self, x: &[f64]) -> Vec<f64> {
        self.sparse.mul_add(x, Some(self.noise))
    }

    /// ln L (without the regularisation) and χ² = Σ (k − μ)²/max(k, 1) of energies `e`.
    pub fn fit_statistics(&self, e: &[f64]) -> (f64, f64) {
        let mu = self.expectation(e);
        let (mut ll, mut chi2) = (0.0, 0.0);
        for (&k, &m) in self.k.iter().zip(&mu) {
            ll += if k > 0.0 { k * m.ln() } else { 0.0 } - m - ln_gamma1(k);
            chi2 += (k - m).powi(2) / k.max(1.0);
        }
        (ll, chi2)
    }

    /// F = −∂²(ln L − λ Σ E²)/∂E² = Λᵀ diag(k/μ²) Λ + 2λ I (spec §2.1 with the penalty).
    pub fn fisher(&self, mu: &[f64]) -> Vec<f64> {
        let n = self.cols();
        let w: Vec<f64> = self.k.iter().zip(mu).map(|(k, m)| k / (m * m)).collect();
        let mut f = self.sparse.gram(&w, &self.progress);
        (0..n).for_each(|p| f[p * n + p] += 2.0 * self.lam);
        f
    }

    /// g = ∂(ln L − λ Σ E²)/∂E = Λᵀ (k/μ − 1) − 2λE.
    fn gradient(&self, x: &[f64], mu: &[f64]) -> Vec<f64> {
        let r: Vec<f64> = self.k.iter().zip(mu).map(|(k, m)| k / m - 1.0).collect();
        let mut g = self.sparse.tmul(&r);
        g.iter_mut().zip(x).for_each(|(g, v)| *g -= 2.0 * self.lam * v);
        g
    }

    /// Free variables (inside, or at zero with an outward gradient) and whether every one of
    /// them has a relative gradient |g_j| / Σ_i Λ_ij below `tolerance`.
    fn free_set(&self, x: &[f64], g: &[f64], tolerance: f64) -> (Vec<bool>, bool) {
        let free: Vec<bool> = (0..x.len()).map(|j| self.colsum[j] > 0.0 && (x[j] > 0.0 || g[j] > 0.0)).collect();
        let worst = (0..x.len())
            .filter(|&j| free[j])
            .map(|j| (g[j] / self.colsum[j]).abs())
            .fold(0.0f64, f64::max);
        (free, worst < tolerance)
    }

    /// Move x along the ascent direction d to the likelihood maximum on the segment allowed by
    /// x + αd ≥ 0 and μ + αq > 0 (q = Λd): Newton's method on the concave one-dimensional
    /// φ'(α) = Σ_i (k_i/(μ_i+αq_i) − 1) q_i − 2λ(x+αd)·d, φ''(α) = −Σ k_i q_i²/(μ_i+αq_i)² − 2λ d·d.
    /// Returns α and whether the step stopped at the bound x ≥ 0 (then the variables that
    /// reached it are set to exactly 0).
    fn line_step(&self, x: &mut [f64], mu: &mut Vec<f64>, d: &[f64], eps: f64) -> (f64, bool) {
        let (k, lam) = (self.k, self.lam);
        let q = self.sparse.mul_add(d, None);
        // Only the rows the direction moves enter φ.
        let moved: Vec<usize> = (0..q.len()).filter(|&i| q[i] != 0.0).collect();
        let mut amax = f64::INFINITY;
        for j in 0..x.len() {
            if d[j] < 0.0 {
                amax = amax.min(-x[j] / d[j]);
            }
        }
        let mut amu = f64::INFINITY;
        for &i in &moved {
            if q[i] < 0.0 {
                amu = amu.min(-mu[i] / q[i]);
            }
        }
        let cap = amax.min(0.999 * amu);
        let (xd, dd): (f64, f64) = (x.iter().zip(d).map(|(a, b)| a * b).sum(), d.iter().map(|b| b * b).sum());
        let mut alpha = 0.0f64;
        for _ in 0..50 {
            let (mut d1, mut d2) = (-2.0 * lam * (xd + alpha * dd), -2.0 * lam * dd);
            for &i in &moved {
                let m = mu[i] + alpha * q[i];
                d1 += (k[i] / m - 1.0) * q[i];
                d2 -= k[i] * q[i] * q[i] / (m * m);
            }
            let next = if d2 < 0.0 {
                alpha - d1 / d2
            } else if d1 > 0.0 {
                cap
            } else {
                alpha
            };
            let next = next.clamp(0.0, cap);
            if !next.is_finite() || (next - alpha).abs() <= 1e-14 * alpha.abs().max(1e-300) {
                alpha = if next.is_finite() { next } else { alpha };
                break;
            }
            alpha = next;
        }
        let hit_bound = alpha >= amax * (1.0 - 1e-12);
        for j in 0..x.len() {
            x[j] = (x[j] + alpha * d[j]).max(0.0);
            if hit_bound && d[j] < 0.0 && x[j] <= 1e-12 * (x[j] + eps) {
                x[j] = 0.0;
            }
        }
        *mu = self.expectation(x);
        (alpha, hit_bound)
    }

    /// ε of the EM preconditioner: a small energy that keeps sources at zero able to move.
    fn eps(&self) -> f64 {
        let total = (self.k.iter().sum::<f64>() - self.noise.iter().sum::<f64>()).max(1.0);
        1e-6 * total / self.colsum.iter().sum::<f64>().max(1e-300)
    }

    /// The Fisher matrix on the free variables, identity rows and columns for the others.
    fn hessian(&self, mu: &[f64], free: &[bool]) -> Vec<f64> {
        let n = self.cols();
        let mut h = self.fisher(mu);
        for p in (0..n).filter(|&p| !free[p]) {
            for q in 0..n {
                h[p * n + q] = 0.0;
                h[q * n + p] = 0.0;
            }
            h[p * n + p] = 1.0;
        }
        h
    }
}

/// Projected preconditioned conjugate gradients on the Poisson likelihood, from `start`.
pub fn pcg_poisson(pb: &Problem, start: &[f64], opts: &SolveOptions) -> (Vec<f64>, usize, bool) {
    let n = pb.cols();
    let mut x: Vec<f64> = start.iter().map(|v| v.max(0.0)).collect();
    let mut mu = pb.expectation(&x);
    let eps = pb.eps();
    let mut d = vec![0.0; n];
    let mut g_prev = vec![0.0; n];
    let mut v_prev = vec![0.0; n];
    let mut restart = true;
    for it in 0..opts.max_iterations {
        if pb.progress.should_stop() {
            return (x, it, false);
        }
        pb.progress.add(1);
        let g = pb.gradient(&x, &mu);
        let (free, done) = pb.free_set(&x, &g, opts.tolerance);
        if done {
            return (x, it, true);
        }
        // EM-like preconditioner v = g (E + ε)/colsum.
        let v: Vec<f64> = (0..n)
            .map(|j| if free[j] { g[j] * (x[j] + eps) / pb.colsum[j] } else { 0.0 })
            .collect();
        // Polak–Ribière⁺.
        let beta = if restart {
            0.0
        } else {
            let num: f64 = (0..n).map(|j| v[j] * (g[j] - g_prev[j])).sum();
            let den: f64 = (0..n).map(|j| v_prev[j] * g_prev[j]).sum();
            if den > 0.0 {
                (num / den).max(0.0)
            } else {
                0.0
            }
        };
        for j in 0..n {
            d[j] = if free[j] { v[j] + beta * d[j] } else { 0.0 };
        }
        if (0..n).map(|j| d[j] * g[j]).sum::<f64>() <= 0.0 {
            d.copy_from_slice(&v);
        }
        let (alpha, hit_bound) = pb.line_step(&mut x, &mut mu, &d, eps);
        g_prev = g;
        v_prev = v;
        restart = hit_bound || alpha == 0.0;
    }
    (x, opts.max_iterations, false)
}

/// Projected Newton on the Poisson likelihood, from `start` (D. P. Bertsekas, "Projected Newton
/// methods for optimization problems with simple constraints", SIAM J. Control Optim. 20 (1982)
/// 221): on the free variables the direction solves (Λᵀ diag(k/μ²) Λ + 2λ) d = g — the Fisher
/// matrix of spec §2.1 as the Hessian — and the same bounded line search as [`pcg_poisson`]
/// follows. The likelihood is concave in E, so both solvers reach the same maximum; Newton needs
/// tens of iterations where PCG needs thousands when neighbouring segments are correlated.
/// Where the free block is singular (a source seen only by empty bins) the step falls back to
/// the preconditioned gradient.
pub fn newton_poisson(pb: &Problem, start: &[f64], opts: &SolveOptions) -> (Vec<f64>, usize, bool) {
    let n = pb.cols();
    let mut x: Vec<f64> = start.iter().map(|v| v.max(0.0)).collect();
    let mut mu = pb.expectation(&x);
    let eps = pb.eps();
    for it in 0..opts.max_iterations {
        if pb.progress.should_stop() {
            return (x, it, false);
        }
        pb.progress.add(1);
        let g = pb.gradient(&x, &mu);
        let (free, done) = pb.free_set(&x, &g, opts.tolerance);
        if done {
            return (x, it, true);
        }
        let mut free = free;
        let d = loop {
            let gf: Vec<f64> = (0..n).map(|j| if free[j] { g[j] } else { 0.0 }).collect();
            let d = match cholesky_solve(&pb.hessian(&mu, &free), n, &gf, &pb.progress) {
                Some(d) if d.iter().zip(&gf).map(|(a, b)| a * b).sum::<f64>() > 0.0 => d,
                _ => (0..n).map(|j| gf[j] * (x[j] + eps) / pb.colsum[j].max(1e-300)).collect(),
            };
            // A variable at the bound that the Newton step would push below it stays there.
            let blocked: Vec<usize> = (0..n).filter(|&j| free[j] && x[j] == 0.0 && d[j] < 0.0).collect();
            if blocked.is_empty() {
                break d;
            }
            blocked.iter().for_each(|&j| free[j] = false);
        };
        let (alpha, _) = pb.line_step(&mut x, &mut mu, &d, eps);
        if alpha == 0.0 && d.iter().all(|v| *v == 0.0) {
            return (x, it + 1, false);
        }
    }
    (x, opts.max_iterations, false)
}

/// Covariance F⁻¹ on the free block (sources with E_j > 0; rows and columns of the others are
/// 0) and 1σ uncertainties: √(F⁻¹)_jj there, 1/√F_jj for sources at zero (∞ if unseen). The
/// block is factored once and its inverse solved column by column (O(m³), polled for a stop).
pub fn covariance(f: &[f64], n: usize, energy: &[f64], stop: &Progress) -> (Vec<f64>, Vec<f64>) {
    let free: Vec<usize> = (0..n).filter(|&j| energy[j] > 0.0 && f[j * n + j] > 0.0).collect();
    let m = free.len();
    let sub: Vec<f64> = free
        .iter()
        .flat_map(|&p| free.iter().map(move |&q| (p, q)))
        .map(|(p, q)| f[p * n + q])
        .collect();
    let mut sigma: Vec<f64> = (0..n)
        .map(|j| {
            if f[j * n + j] > 0.0 {
                1.0 / f[j * n + j].sqrt()
            } else {
                f64::INFINITY
            }
        })
        .collect();
    let mut cov = vec![0.0; n * n];
    if let Some(l) = cholesky(&sub, m, stop).filter(|_| m > 0) {
        for (t, &j) in free.iter().enumerate() {
            if stop.should_stop() {
                break;
            }
            let mut e = vec![0.0; m];
            e[t] = 1.0;
            let col = triangular_solve(&l, m, &e);
            for (u, &i) in free.iter().enumerate() {
                cov[i * n + j] = col[u];
            }
            sigma[j] = col[t].max(0.0).sqrt();
        }
    }
    (cov, sigma)
}

/// Unfold: NNLS start, then (for [`Solver::Pcg`] and [`Solver::Newton`]) the Poisson likelihood
/// maximum.
pub fn unfold(l: &Response, k: &[f64], noise: &[f64], opts: &SolveOptions) -> Solution {
    unfold_with(l, k, noise, opts, &Progress::hidden())
}

/// [`unfold`] counting solver iterations on `progress` and returning early (an unfinished
/// solution, `converged` false) once it says stop; the caller checks its token.
pub fn unfold_with(l: &Response, k: &[f64], noise: &[f64], opts: &SolveOptions, progress: &Progress) -> Solution {
    let pb = Problem::with_progress(l, k, noise, opts.regularization, progress.clone());
    let (start, nnls_it) = nnls(&pb, 10 * l.cols + 10);
    let (energy, iterations, converged) = match opts.solver {
        Solver::Nnls => (start.clone(), nnls_it, true),
        // Millipede starts PCG from a charge-conserving constant; the NNLS solution is a better
        // start and never negative (ε in the preconditioner lets sources at zero move).
        Solver::Pcg => pcg_poisson(&pb, &start, opts),
        Solver::Newton => newton_poisson(&pb, &start, opts),
    };
    let start_iterations = if opts.solver == Solver::Nnls { 0 } else { nnls_it };
    let f = pb.fisher(&pb.expectation(&energy));
    let (covariance, sigma) = covariance(&f, l.cols, &energy, progress);
    let (log_likelihood, chi2) = pb.fit_statistics(&energy);
    let log_likelihood = log_likelihood - opts.regularization * energy.iter().map(|e| e * e).sum::<f64>();
    Solution {
        energy,
        sigma,
        covariance,
        log_likelihood,
        chi2,
        iterations,
        start_iterations,
        pe_per_gev: pb.colsum.clone(),
        converged,
        solver: opts.solver,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toy() -> (Response, Vec<f64>, Vec<f64>) {
        // Three sources seen by 6 rows with overlap.
        let values = vec![
            5.0, 1.0, 0.0, //
            3.0, 2.0, 0.1, //
            1.0, 4.0, 0.5, //
            0.2, 3.0, 2.0, //
            0.0, 1.0, 4.0, //
            0.0, 0.1, 6.0,
        ];
        let l = Response { rows: 6, cols: 3, values };
        let e = [20.0, 0.0, 10.0];
        let noise = vec![0.5; 6];
        let k: Vec<f64> = Problem::new(&l, &[0.0; 6], &noise, 0.0)
            .expectation(&e)
            .iter()
            .map(|m| m.round())
            .collect();
        (l, k, noise)
    }

    #[test]
    fn solvers_agree_on_the_kkt_point() {
        let (l, k, noise) = toy();
        let pcg = unfold(
            &l,
            &k,
            &noise,
            &SolveOptions {
                solver: Solver::Pcg,
                ..Default::default()
            },
        );
        assert!(pcg.converged);
        let newton = unfold(&l, &k, &noise, &SolveOptions::default());
        assert!(newton.converged && newton.solver == Solver::Newton);
        for j in 0..3 {
            assert!(
                (newton.energy[j] - pcg.energy[j]).abs() < 1e-6 * pcg.energy[j].max(1.0),
                "{:?} vs {:?}",
                newton.energy,
                pcg.energy
            );
        }
        assert!(pcg.energy.iter().all(|&e| e >= 0.0));
        // KKT of the Poisson likelihood: gradient 0 where E > 0, ≤ 0 where E = 0.
        let pb = Problem::new(&l, &k, &noise, 0.0);
        let mu = pb.expectation(&pcg.energy);
        for j in 0..3 {
            let g: f64 = (0..6).map(|i| l.at(i, j) * (k[i] / mu[i] - 1.0)).sum();
            if pcg.energy[j] > 0.0 {
                assert!(g.abs() < 1e-6, "source {j}: gradient {g}");
            } else {
                assert!(g <= 1e-6, "source {j} at zero with gradient {g}");
            }
        }
        // No other non-negative point has a higher likelihood (a coarse scan around it).
        for dj in [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]] {
            for s in [-0.1, 0.1] {
                let e: Vec<f64> = (0..3).map(|j| (pcg.energy[j] + s * dj[j]).max(0.0)).collect();
                assert!(pb.fit_statistics(&e).0 <= pcg.log_likelihood + 1e-12);
            }
        }
        let ls = unfold(
            &l,
            &k,
            &noise,
            &SolveOptions {
                solver: Solver::Nnls,
                ..Default::default()
            },
        );
        assert!(ls.energy.iter().all(|&e| e >= 0.0));
        for j in 0..3 {
            assert!(
                (ls.energy[j] - pcg.energy[j]).abs() < 0.2 * pcg.energy[j].max(1.0) + 1.0,
                "{:?} vs {:?}",
                ls.energy,
                pcg.energy
            );
        }
    }

    #[test]
    fn ln_gamma_matches_factorials() {
        assert!((ln_gamma1(5.0) - 120f64.ln()).abs() < 1e-12);
        assert!((ln_gamma1(12.0) - 479001600f64.ln()).abs() < 1e-9);
        assert!((ln_gamma1(0.5) - (0.886226925452758f64).ln()).abs() < 1e-9);
    }
}
