//! Non-negative energy unfolding: maximise the Poisson likelihood
//!   ln L(E) = Σ_i [k_i ln μ_i − μ_i − ln Γ(k_i+1)],  μ = Λ E + ρ,  E ≥ 0
//! (spec §2.1; IceCube, JINST 9 (2014) P03009), with two solvers:
//! * [`nnls`] — Lawson & Hanson's active-set NNLS ("Solving Least Squares Problems", 1974,
//!   ch. 23) on the weighted least-squares problem Σ (k − ρ − ΛE)²/max(k, 1) (Neyman χ²), via
//!   its normal equations;
//! * [`pcg_poisson`] — projected, preconditioned conjugate gradients on ln L (Millipede's
//!   `pcg_poisson`, after Angelis et al., Phys. Med. Biol. 56 (2011) 3895, App. A): EM-like
//!   diagonal preconditioner (E + ε)/colsum, Polak–Ribière⁺ directions, a Newton line search on
//!   the one-dimensional likelihood bounded so that E ≥ 0 and μ > 0, truncation E ← max(E, 0).
//!
//! Uncertainties come from the Fisher matrix F = Λᵀ diag(k/μ²) Λ (the Hessian of −ln L,
//! spec §2.1), inverted on the sources with E > 0.

use super::model::Response;

/// Solver choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Solver {
    Nnls,
    Pcg,
}

impl std::str::FromStr for Solver {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "nnls" => Ok(Solver::Nnls),
            "pcg" => Ok(Solver::Pcg),
            _ => Err(format!("unknown solver '{s}': expected pcg or nnls")),
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
    pub iterations: usize,
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
            solver: Solver::Pcg,
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

/// μ = Λ E + ρ.
pub fn expectation(l: &Response, e: &[f64], noise: &[f64]) -> Vec<f64> {
    (0..l.rows)
        .map(|i| noise[i] + l.row(i).iter().zip(e).map(|(a, b)| a * b).sum::<f64>())
        .collect()
}

/// ln L and χ² of energies `e`.
pub fn fit_statistics(l: &Response, k: &[f64], noise: &[f64], e: &[f64]) -> (f64, f64) {
    let mu = expectation(l, e, noise);
    let mut ll = 0.0;
    let mut chi2 = 0.0;
    for i in 0..l.rows {
        let m = mu[i];
        ll += if k[i] > 0.0 { k[i] * m.ln() } else { 0.0 } - m - ln_gamma1(k[i]);
        chi2 += (k[i] - m).powi(2) / k[i].max(1.0);
    }
    (ll, chi2)
}

/// Cholesky solve of a symmetric positive definite n×n system (row-major); `None` if not PD.
fn cholesky_solve(a: &[f64], n: usize, b: &[f64]) -> Option<Vec<f64>> {
    let l = cholesky(a, n)?;
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
    Some(y)
}

fn cholesky(a: &[f64], n: usize) -> Option<Vec<f64>> {
    let mut l = vec![0.0; n * n];
    for i in 0..n {
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

/// Lawson–Hanson NNLS on min Σ w_i (b_i − (ΛE)_i)², b = k − ρ, w = 1/max(k, 1).
pub fn nnls(l: &Response, k: &[f64], noise: &[f64], regularization: f64, max_iterations: usize) -> (Vec<f64>, usize) {
    let n = l.cols;
    // Normal equations A = Λᵀ W Λ, c = Λᵀ W b.
    let mut a = vec![0.0; n * n];
    let mut c = vec![0.0; n];
    for i in 0..l.rows {
        let w = 1.0 / k[i].max(1.0);
        let row = l.row(i);
        let b = k[i] - noise[i];
        for p in 0..n {
            if row[p] == 0.0 {
                continue;
            }
            c[p] += w * row[p] * b;
            for q in 0..=p {
                a[p * n + q] += w * row[p] * row[q];
            }
        }
    }
    for p in 0..n {
        a[p * n + p] += regularization;
        for q in 0..p {
            a[q * n + p] = a[p * n + q];
        }
    }
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
        let z = cholesky_solve(&sub, m, &rhs).unwrap_or_else(|| vec![0.0; m]);
        let mut full = vec![0.0; n];
        for (t, &p) in idx.iter().enumerate() {
            full[p] = z[t];
        }
        full
    };
    let mut iterations = 0;
    loop {
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
        passive[j] = true;
        loop {
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

/// Projected preconditioned conjugate gradients on the Poisson likelihood, from `start`.
pub fn pcg_poisson(l: &Response, k: &[f64], noise: &[f64], start: &[f64], opts: &SolveOptions) -> (Vec<f64>, usize, bool) {
    let n = l.cols;
    let colsum: Vec<f64> = (0..n).map(|j| (0..l.rows).map(|i| l.at(i, j)).sum::<f64>()).collect();
    let mut x: Vec<f64> = start.iter().map(|v| v.max(0.0)).collect();
    let mut mu = expectation(l, &x, noise);
    // ε of the EM preconditioner: keeps sources at zero able to move.
    let total = (k.iter().sum::<f64>() - noise.iter().sum::<f64>()).max(1.0);
    let eps = 1e-6 * total / colsum.iter().sum::<f64>().max(1e-300);
    let mut d = vec![0.0; n];
    let mut g_prev = vec![0.0; n];
    let mut v_prev = vec![0.0; n];
    let mut restart = true;
    for it in 0..opts.max_iterations {
        // g = Λᵀ (k/μ − 1)
        let r: Vec<f64> = (0..l.rows).map(|i| k[i] / mu[i] - 1.0).collect();
        let lam = opts.regularization;
        let mut g: Vec<f64> = x.iter().map(|v| -2.0 * lam * v).collect();
        for i in 0..l.rows {
            let row = l.row(i);
            for j in 0..n {
                g[j] += row[j] * r[i];
            }
        }
        // Free variables: inside, or at zero with an outward (positive) gradient.
        let free: Vec<bool> = (0..n).map(|j| colsum[j] > 0.0 && (x[j] > 0.0 || g[j] > 0.0)).collect();
        let worst = (0..n).filter(|&j| free[j]).map(|j| (g[j] / colsum[j]).abs()).fold(0.0f64, f64::max);
        if worst < opts.tolerance {
            return (x, it, true);
        }
        let v: Vec<f64> = (0..n)
            .map(|j| if free[j] { g[j] * (x[j] + eps) / colsum[j] } else { 0.0 })
            .collect();
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
        // Step bounds: x + αd ≥ 0 and μ + αq > 0.
        let q: Vec<f64> = (0..l.rows).map(|i| l.row(i).iter().zip(&d).map(|(a, b)| a * b).sum()).collect();
        let mut amax = f64::INFINITY;
        for j in 0..n {
            if d[j] < 0.0 {
                amax = amax.min(-x[j] / d[j]);
            }
        }
        let mut amu = f64::INFINITY;
        for i in 0..l.rows {
            if q[i] < 0.0 {
                amu = amu.min(-mu[i] / q[i]);
            }
        }
        let cap = amax.min(0.999 * amu);
        // Newton on φ'(α) = Σ (k/(μ+αq) − 1) q, φ'' = −Σ k q²/(μ+αq)² (concave).
        let (xd, dd): (f64, f64) = (x.iter().zip(&d).map(|(a, b)| a * b).sum(), d.iter().map(|b| b * b).sum());
        let mut alpha = 0.0f64;
        for _ in 0..50 {
            let (mut d1, mut d2) = (-2.0 * lam * (xd + alpha * dd), -2.0 * lam * dd);
            for i in 0..l.rows {
                if q[i] == 0.0 {
                    continue;
                }
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
        for j in 0..n {
            x[j] = (x[j] + alpha * d[j]).max(0.0);
            if hit_bound && d[j] < 0.0 && x[j] <= 1e-12 * (x[j] + eps) {
                x[j] = 0.0;
            }
        }
        mu = expectation(l, &x, noise);
        g_prev = g;
        v_prev = v;
        restart = hit_bound || alpha == 0.0;
    }
    (x, opts.max_iterations, false)
}

/// F = Λᵀ diag(k/μ²) Λ (+ 2λ on the diagonal with a regularisation λ).
pub fn fisher(l: &Response, k: &[f64], mu: &[f64], regularization: f64) -> Vec<f64> {
    let n = l.cols;
    let mut f = vec![0.0; n * n];
    for i in 0..l.rows {
        if k[i] == 0.0 {
            continue;
        }
        let w = k[i] / (mu[i] * mu[i]);
        let row = l.row(i);
        for p in 0..n {
            if row[p] == 0.0 {
                continue;
            }
            for q in 0..=p {
                f[p * n + q] += w * row[p] * row[q];
            }
        }
    }
    for p in 0..n {
        f[p * n + p] += 2.0 * regularization;
        for q in 0..p {
            f[q * n + p] = f[p * n + q];
        }
    }
    f
}

/// Covariance F⁻¹ on the free block (sources with E_j > 0; rows and columns of the others are
/// 0) and 1σ uncertainties: √(F⁻¹)_jj there, 1/√F_jj for sources at zero (∞ if unseen).
pub fn covariance(f: &[f64], n: usize, energy: &[f64]) -> (Vec<f64>, Vec<f64>) {
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
    if m > 0 {
        for (t, &j) in free.iter().enumerate() {
            let mut e = vec![0.0; m];
            e[t] = 1.0;
            let Some(col) = cholesky_solve(&sub, m, &e) else { break };
            for (u, &i) in free.iter().enumerate() {
                cov[i * n + j] = col[u];
            }
            sigma[j] = col[t].max(0.0).sqrt();
        }
    }
    (cov, sigma)
}

/// Unfold: NNLS start, then (for [`Solver::Pcg`]) the Poisson likelihood maximum.
pub fn unfold(l: &Response, k: &[f64], noise: &[f64], opts: &SolveOptions) -> Solution {
    let (start, nnls_it) = nnls(l, k, noise, opts.regularization, 10 * l.cols + 10);
    let (energy, iterations, converged) = match opts.solver {
        Solver::Nnls => (start, nnls_it, true),
        Solver::Pcg => {
            // Millipede starts from a charge-conserving constant; the NNLS solution is a better
            // start and never negative. Sources NNLS left at zero keep a small share so the
            // preconditioner can move them.
            let (e, it, ok) = pcg_poisson(l, k, noise, &start, opts);
            (e, it + nnls_it, ok)
        }
    };
    let mu = expectation(l, &energy, noise);
    let f = fisher(l, k, &mu, opts.regularization);
    let (covariance, sigma) = covariance(&f, l.cols, &energy);
    let (log_likelihood, chi2) = fit_statistics(l, k, noise, &energy);
    let log_likelihood = log_likelihood - opts.regularization * energy.iter().map(|e| e * e).sum::<f64>();
    Solution {
        energy,
        sigma,
        covariance,
        log_likelihood,
        chi2,
        iterations,
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
        let k: Vec<f64> = expectation(&l, &e, &noise).iter().map(|m| m.round()).collect();
        (l, k, noise)
    }

    #[test]
    fn nnls_and_pcg_agree_on_the_kkt_point() {
        let (l, k, noise) = toy();
        let pcg = unfold(&l, &k, &noise, &SolveOptions::default());
        assert!(pcg.converged);
        assert!(pcg.energy.iter().all(|&e| e >= 0.0));
        // KKT of the Poisson likelihood: gradient 0 where E > 0, ≤ 0 where E = 0.
        let mu = expectation(&l, &pcg.energy, &noise);
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
                assert!(fit_statistics(&l, &k, &noise, &e).0 <= pcg.log_likelihood + 1e-12);
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
