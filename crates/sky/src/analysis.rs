//! Test statistic and p-values per (energy cut, angular bin).
//!
//! TS(θ_b, c) = N_obs / ⟨N_bg⟩ with ⟨N_bg⟩ the mean over scrambled trials (spec §3.1).
//! Three local p-values for an excess:
//! * from the trials: n_beyond / n_trials, n_beyond = trials with N_bg ≥ N_obs (reported with
//!   n_beyond so that "0 of 10⁴" reads as p < 10⁻⁴, not 0);
//! * a Gaussian tail fitted by the trials' mean and standard deviation;
//! * a gamma tail fitted by moments (shape μ²/σ², scale σ²/μ), evaluated with the regularised
//!   incomplete gamma function; above shape 10⁴ the Wilson–Hilferty cube-root normal
//!   approximation is used (relative error of the tail far below the trials' own).

use crate::trials::Background;
use warpdrive_core::stats::gamma_q;

/// The result of one (cut, bin).
#[derive(Clone, Debug, PartialEq)]
pub struct BinResult {
    pub cut: usize,
    pub bin: usize,
    pub theta_deg: f64,
    pub n_obs: u64,
    pub bg_mean: f64,
    pub bg_std: f64,
    pub ts: f64,
    pub n_trials: u64,
    pub n_beyond: u64,
    pub p_trials: f64,
    pub p_gauss: f64,
    pub p_gamma: f64,
}

/// Upper tail of the standard normal, Q(z) = erfc(z/√2)/2 = Γ(½, z²/2)/(2Γ(½)) for z ≥ 0.
#[must_use]
pub fn normal_sf(z: f64) -> f64 {
    if z.is_nan() {
        return f64::NAN;
    }
    let q = 0.5 * gamma_q(0.5, 0.5 * z * z);
    if z >= 0.0 {
        q
    } else {
        1.0 - q
    }
}

/// P(X ≥ x) for X ~ Gamma(shape k, scale θ).
#[must_use]
pub fn gamma_sf(x: f64, k: f64, theta: f64) -> f64 {
    if !(k > 0.0 && theta > 0.0) {
        return f64::NAN;
    }
    if k > 1e4 {
        // Wilson–Hilferty: (X/(kθ))^(1/3) ≈ N(1 − 1/(9k), 1/(9k)).
        let v = 1.0 / (9.0 * k);
        return normal_sf(((x / (k * theta)).cbrt() - (1.0 - v)) / v.sqrt());
    }
    gamma_q(k, x / theta)
}

/// TS and p-values of every (cut, bin); `observed` and the background cells are cut-major.
#[must_use]
pub fn analyse(edges_deg: &[f64], observed: &[u64], bg: &Background) -> Vec<BinResult> {
    let nb = edges_deg.len();
    observed
        .iter()
        .enumerate()
        .map(|(k, &n_obs)| {
            let (mean, std) = if bg.trials > 0 { bg.mean_std(k) } else { (f64::NAN, f64::NAN) };
            let n_beyond = if bg.trials > 0 { bg.at_least(k, n_obs) } else { 0 };
            let x = n_obs as f64;
            let (p_gauss, p_gamma) = if std > 0.0 {
                (
                    normal_sf((x - mean) / std),
                    gamma_sf(x, mean * mean / (std * std), std * std / mean),
                )
            } else {
                (f64::NAN, f64::NAN)
            };
            BinResult {
                cut: k / nb,
                bin: k % nb,
                theta_deg: edges_deg[k % nb],
                n_obs,
                bg_mean: mean,
                bg_std: std,
                ts: x / mean,
                n_trials: bg.trials,
                n_beyond,
                p_trials: if bg.trials > 0 {
                    n_beyond as f64 / bg.trials as f64
                } else {
                    f64::NAN
                },
                p_gauss,
                p_gamma,
            }
        })
        .collect()
}

/// The trial-corrected significance of the most significant bin: with p_k(N) = (trials with a
/// count ≥ N in cell k)/trials, the observed sky's smallest p over all cells is compared with
/// the smallest p of every scrambled trial (each against the same distributions);
/// p_post = (trials whose smallest p is ≤ the observed one)/trials. Needs each trial's counts
/// (`Background::kept`).
#[derive(Clone, Debug, PartialEq)]
pub struct PostTrial {
    pub p_min_observed: f64,
    pub n_beyond: u64,
    pub trials: u64,
    pub p: f64,
}

#[must_use]
pub fn post_trial(observed: &[u64], bg: &Background) -> Option<PostTrial> {
    if bg.kept.is_empty() || bg.kept.len() as u64 != bg.trials {
        return None;
    }
    // Per cell: (value, trials with a count ≥ value), ascending in value.
    let tails: Vec<Vec<(u64, u64)>> = bg
        .freq
        .iter()
        .map(|m| {
            let mut run = 0;
            let mut v: Vec<(u64, u64)> = m
                .iter()
                .rev()
                .map(|(&c, &n)| {
                    run += n;
                    (c, run)
                })
                .collect();
            v.reverse();
            v
        })
        .collect();
    let at_least = |k: usize, x: u64| -> u64 {
        let t = &tails[k];
        let i = t.partition_point(|&(c, _)| c < x);
        t.get(i).map_or(0, |&(_, n)| n)
    };
    let min_p = |counts: &[u64]| (0..counts.len()).map(|k| at_least(k, counts[k])).min().unwrap_or(0);
    let obs = min_p(observed);
    let n_beyond = bg.kept.iter().filter(|c| min_p(c) <= obs).count() as u64;
    let t = bg.trials as f64;
    Some(PostTrial {
        p_min_observed: obs as f64 / t,
        n_beyond,
        trials: bg.trials,
        p: n_beyond as f64 / t,
    })
}

/// The most significant (cut, bin): smallest trial p-value, ties broken by the Gaussian one.
#[must_use]
pub fn most_significant(rows: &[BinResult]) -> Option<&BinResult> {
    rows.iter()
        .filter(|r| r.n_trials > 0)
        .min_by(|a, b| a.p_trials.total_cmp(&b.p_trials).then(a.p_gauss.total_cmp(&b.p_gauss)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_match_tables() {
        // Standard normal: Q(1) = 0.158655, Q(3) = 1.3499e-3.
        assert!((normal_sf(1.0) - 0.158_655_253_931_457).abs() < 1e-9);
        assert!((normal_sf(3.0) / 1.349_898_031_630_095e-3 - 1.0).abs() < 1e-7);
        assert!((normal_sf(-1.0) - 0.841_344_746_068_543).abs() < 1e-9);
        // Exponential = Gamma(1): P(X ≥ 2) = e^-2.
        assert!((gamma_sf(2.0, 1.0, 1.0) - (-2.0f64).exp()).abs() < 1e-12);
        // Large shape: the approximation agrees with the exact series at k = 1e4 to 1e-3 relative
        // in the 3σ tail.
        let k: f64 = 1e4;
        let x = k + 3.0 * k.sqrt();
        let exact = gamma_q(k, x);
        let wh = gamma_sf(x, k * (1.0 + 1e-12), 1.0);
        assert!((wh / exact - 1.0).abs() < 1e-3, "{wh} vs {exact}");
    }

    #[test]
    fn post_trial_counts_trials_as_extreme_anywhere() {
        // Two cells, four trials kept.
        let mut bg = Background::for_trials(2, 4);
        for c in [[1, 10], [2, 20], [3, 30], [4, 15]] {
            bg.add(&c);
        }
        // Observed (3, 12): cell 0 p = 2/4, cell 1 p = 3/4 → smallest 2/4. Trials' smallest p:
        // (1,10) → min(4,4)/4 = 1; (2,20) → min(3,2)=2/4; (3,30) → min(2,1)=1/4; (4,15) → min(1,3)=1/4.
        let p = post_trial(&[3, 12], &bg).unwrap();
        assert_eq!((p.n_beyond, p.trials), (3, 4));
        assert_eq!(p.p_min_observed, 0.5);
        let mut merged = bg.clone();
        merged.merge(&Background::new(2));
        assert!(post_trial(&[3, 12], &merged).is_none(), "merged runs keep no per-trial counts");
    }

    #[test]
    fn ts_and_trial_p_value() {
        let mut bg = Background::new(1);
        for c in [90, 100, 110, 100] {
            bg.add(&[c]);
        }
        let r = &analyse(&[1.0], &[110], &bg)[0];
        assert_eq!((r.cut, r.bin, r.n_beyond, r.n_trials), (0, 0, 1, 4));
        assert!((r.ts - 1.1).abs() < 1e-12);
        assert_eq!(r.p_trials, 0.25);
        assert!(r.p_gauss > 0.1 && r.p_gauss < 0.2);
    }
}
