//! Sensitivity and discovery potential of the two-point test from injected trials (issue #35).
//!
//! Per (cut, bin) cell, with the background distribution of the scrambled trials and the
//! signal distribution of the injected trials of each strength N (sources):
//! * **sensitivity**: the strength at which 90 % of the signal trials have a count above the
//!   background's median (the median: the smallest count c with P_bg(N ≤ c) ≥ ½);
//! * **discovery potential** (5σ, and 3σ): the strength at which 50 % of the signal trials have
//!   a count at or beyond the background's threshold for a one-sided Gaussian tail probability
//!   p(5σ) = 2.87·10⁻⁷ (p(3σ) = 1.35·10⁻³).
//!
//! The threshold comes from the background trials when they reach it (at least 10 trials
//! expected beyond it, T·p ≥ 10: the smallest count c with P_bg(N ≥ c) ≤ p), else from the gamma
//! tail fitted by moments to the background (as the local p-values, [`crate::analysis`]): the
//! count x with P_Γ(N ≥ x) = p. Which one was used is reported ([`Threshold::from_trials`]).
//!
//! Between the scan's strengths the fraction f(N) is interpolated linearly at the first pair that
//! brackets the target; its uncertainty comes from the binomial errors of the two fractions,
//! σ_f = √(f(1 − f)/T) (f clamped to [½/T, 1 − ½/T] so that 0 and 1 keep an error), propagated
//! through the interpolation: N* = N_i + (t − f_i)·ΔN/Δf,
//! σ_N* = ΔN/Δf² · √((t − f_{i+1})² σ_i² + (t − f_i)² σ_{i+1}²).

use crate::analysis::{gamma_sf, normal_sf};
use crate::trials::Background;

/// A background threshold of one cell.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Threshold {
    /// A signal trial is "beyond" when its count is ≥ this.
    pub count: f64,
    /// From the trials (true) or the gamma tail fit (false).
    pub from_trials: bool,
}

/// The background median of cell `k`: the smallest count c with P(N ≤ c) ≥ ½.
#[must_use]
pub fn median(bg: &Background, k: usize) -> u64 {
    let mut run = 0;
    for (&c, &n) in &bg.freq[k] {
        run += n;
        if 2 * run >= bg.trials {
            return c;
        }
    }
    0
}

/// The count beyond which the background of cell `k` has tail probability `p` (module docs).
#[must_use]
pub fn threshold(bg: &Background, k: usize, p: f64) -> Threshold {
    if bg.trials as f64 * p >= 10.0 {
        let allowed = (p * bg.trials as f64).floor() as u64;
        // Smallest c with (trials ≥ c) ≤ allowed: walk down from the top.
        let mut above = 0;
        let mut c_min = f64::INFINITY;
        for (&c, &n) in bg.freq[k].iter().rev() {
            if above + n > allowed {
                break;
            }
            above += n;
            c_min = c as f64;
        }
        let last = bg.freq[k].keys().next_back().map_or(0.0, |&c| c as f64);
        return Threshold {
            count: if c_min.is_finite() { c_min } else { last + 1.0 },
            from_trials: true,
        };
    }
    let (mean, std) = bg.mean_std(k);
    if !(std > 0.0 && mean > 0.0) {
        // A constant background: anything above it is beyond.
        return Threshold {
            count: mean + 1.0,
            from_trials: false,
        };
    }
    let (shape, scale) = (mean * mean / (std * std), std * std / mean);
    // Bisection of P_Γ(N ≥ x) = p on [mean, mean + 50σ] (the sf falls monotonically).
    let (mut lo, mut hi) = (mean, mean + 50.0 * std);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if gamma_sf(mid, shape, scale) > p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Threshold {
        count: hi,
        from_trials: false,
    }
}

/// One-sided Gaussian tail probability of `sigmas` standard deviations.
#[must_use]
pub fn p_of_sigma(sigmas: f64) -> f64 {
    normal_sf(sigmas)
}

/// Fraction of the trials of `signal` cell `k` with a count > `above`.
#[must_use]
pub fn fraction_above(signal: &Background, k: usize, above: u64) -> f64 {
    if signal.trials == 0 {
        return f64::NAN;
    }
    signal.freq[k].range(above + 1..).map(|(_, &n)| n).sum::<u64>() as f64 / signal.trials as f64
}

/// Fraction of the trials of `signal` cell `k` with a count ≥ `threshold`.
#[must_use]
pub fn fraction_beyond(signal: &Background, k: usize, threshold: f64) -> f64 {
    if signal.trials == 0 {
        return f64::NAN;
    }
    let from = threshold.max(0.0).ceil() as u64;
    signal.freq[k].range(from..).map(|(_, &n)| n).sum::<u64>() as f64 / signal.trials as f64
}

/// The binomial error of a fraction `f` of `trials` (f clamped to [½/T, 1 − ½/T]).
#[must_use]
pub fn fraction_error(f: f64, trials: u64) -> f64 {
    let t = trials as f64;
    let g = f.clamp(0.5 / t, 1.0 - 0.5 / t);
    (g * (1.0 - g) / t).sqrt()
}

/// Where a scanned fraction reaches a target: the interpolated strength and its uncertainty.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Crossing {
    pub strength: f64,
    pub error: f64,
}

/// How a scanned fraction relates to its target.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Reach {
    /// Reached already at the scan's first strength: the crossing lies below the scan.
    Below,
    /// Reached between two scanned strengths.
    At(Crossing),
    /// Not reached at the scan's last strength.
    Beyond,
}

impl Reach {
    #[must_use]
    pub fn crossing(&self) -> Option<Crossing> {
        match self {
            Reach::At(c) => Some(*c),
            _ => None,
        }
    }
}

/// Where the fraction `f` (one per strength, `strengths` ascending, each from `trials` trials)
/// first reaches `target` (module docs). Reached at the first strength, whose slope the scan
/// cannot tell, is [`Reach::Below`].
#[must_use]
pub fn crossing(strengths: &[f64], f: &[f64], trials: &[u64], target: f64) -> Reach {
    let Some(i) = f.iter().position(|&x| x >= target) else {
        return Reach::Beyond;
    };
    if i == 0 {
        return Reach::Below;
    }
    let (n0, n1, f0, f1) = (strengths[i - 1], strengths[i], f[i - 1], f[i]);
    let (dn, df) = (n1 - n0, f1 - f0);
    let (s0, s1) = (fraction_error(f0, trials[i - 1]), fraction_error(f1, trials[i]));
    let strength = n0 + (target - f0) * dn / df;
    let error = dn / (df * df) * ((target - f1).powi(2) * s0 * s0 + (target - f0).powi(2) * s1 * s1).sqrt();
    Reach::At(Crossing { strength, error })
}

/// The one-sided tail probabilities of the 3σ and 5σ thresholds.
#[must_use]
pub fn p_3sigma() -> f64 {
    p_of_sigma(3.0)
}

#[must_use]
pub fn p_5sigma() -> f64 {
    p_of_sigma(5.0)
}

/// One (strength, cut, bin) of an injection run.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub sources: u64,
    pub cut: usize,
    pub bin: usize,
    pub theta_deg: f64,
    pub bg_mean: f64,
    pub bg_std: f64,
    pub bg_median: u64,
    pub threshold_3sigma: Threshold,
    pub threshold_5sigma: Threshold,
    pub signal_trials: u64,
    pub signal_mean: f64,
    pub signal_std: f64,
    /// Fractions of the signal trials above the background median, and at or beyond the 3σ
    /// and 5σ thresholds.
    pub frac_median: f64,
    pub frac_3sigma: f64,
    pub frac_5sigma: f64,
}

/// The rows of every strength (outer) and cell (inner, cut-major).
#[must_use]
pub fn rows(edges_deg: &[f64], bg: &Background, sources: &[u64], signal: &[Background]) -> Vec<Row> {
    let nb = edges_deg.len();
    let cells = bg.freq.len();
    let per_cell: Vec<(f64, f64, u64, Threshold, Threshold)> = (0..cells)
        .map(|k| {
            let (m, s) = bg.mean_std(k);
            (m, s, median(bg, k), threshold(bg, k, p_3sigma()), threshold(bg, k, p_5sigma()))
        })
        .collect();
    let mut out = Vec::with_capacity(sources.len() * cells);
    for (&n, sig) in sources.iter().zip(signal) {
        for (k, &(bg_mean, bg_std, bg_median, t3, t5)) in per_cell.iter().enumerate() {
            let (signal_mean, signal_std) = sig.mean_std(k);
            out.push(Row {
                sources: n,
                cut: k / nb,
                bin: k % nb,
                theta_deg: edges_deg[k % nb],
                bg_mean,
                bg_std,
                bg_median,
                threshold_3sigma: t3,
                threshold_5sigma: t5,
                signal_trials: sig.trials,
                signal_mean,
                signal_std,
                frac_median: fraction_above(sig, k, bg_median),
                frac_3sigma: fraction_beyond(sig, k, t3.count),
                frac_5sigma: fraction_beyond(sig, k, t5.count),
            });
        }
    }
    out
}

/// The crossings of one cell: sensitivity (90 % above the median), discovery potentials (50 %
/// beyond 3σ and 5σ).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CellScan {
    pub cell: usize,
    pub sensitivity: Reach,
    pub discovery_3sigma: Reach,
    pub discovery_5sigma: Reach,
}

/// Every cell's crossings and, for each, the best cell: one whose crossing lies below the scan
/// (the one with the largest fraction at the first strength), else the smallest interpolated
/// strength; `None` when no cell reaches the target within the scan.
#[derive(Clone, Debug, PartialEq)]
pub struct Scan {
    pub cells: Vec<CellScan>,
    pub best_sensitivity: Option<CellScan>,
    pub best_discovery_3sigma: Option<CellScan>,
    pub best_discovery_5sigma: Option<CellScan>,
}

/// Target fractions of the sensitivity and the discovery potentials.
pub const SENSITIVITY_FRACTION: f64 = 0.9;
pub const DISCOVERY_FRACTION: f64 = 0.5;

/// Interpolate every cell's fractions over the strengths (`rows` as [`rows`] lays them out).
#[must_use]
pub fn scan(rows: &[Row], sources: &[u64], cells: usize) -> Scan {
    let strengths: Vec<f64> = sources.iter().map(|&n| n as f64).collect();
    let cell_scans: Vec<CellScan> = (0..cells)
        .map(|k| {
            let r: Vec<&Row> = (0..sources.len()).map(|i| &rows[i * cells + k]).collect();
            let t: Vec<u64> = r.iter().map(|r| r.signal_trials).collect();
            let f = |g: fn(&Row) -> f64| r.iter().map(|r| g(r)).collect::<Vec<f64>>();
            CellScan {
                cell: k,
                sensitivity: crossing(&strengths, &f(|r| r.frac_median), &t, SENSITIVITY_FRACTION),
                discovery_3sigma: crossing(&strengths, &f(|r| r.frac_3sigma), &t, DISCOVERY_FRACTION),
                discovery_5sigma: crossing(&strengths, &f(|r| r.frac_5sigma), &t, DISCOVERY_FRACTION),
            }
        })
        .collect();
    let first = |k: usize, g: fn(&Row) -> f64| g(&rows[k]);
    let best = |g: fn(&CellScan) -> Reach, v: fn(&Row) -> f64| {
        let below = cell_scans
            .iter()
            .filter(|c| g(c) == Reach::Below)
            .max_by(|a, b| first(a.cell, v).total_cmp(&first(b.cell, v)).then(b.cell.cmp(&a.cell)));
        below
            .or_else(|| {
                cell_scans.iter().filter(|c| g(c).crossing().is_some()).min_by(|a, b| {
                    let s = |c: &CellScan| g(c).crossing().map_or(f64::INFINITY, |x| x.strength);
                    s(a).total_cmp(&s(b))
                })
            })
            .copied()
    };
    Scan {
        best_sensitivity: best(|c| c.sensitivity, |r| r.frac_median),
        best_discovery_3sigma: best(|c| c.discovery_3sigma, |r| r.frac_3sigma),
        best_discovery_5sigma: best(|c| c.discovery_5sigma, |r| r.frac_5sigma),
        cells: cell_scans,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dist(counts: &[u64]) -> Background {
        let mut b = Background::new(1);
        for &c in counts {
            b.add(&[c]);
        }
        b
    }

    #[test]
    fn median_and_trial_thresholds() {
        let bg = dist(&[1, 2, 2, 3, 3, 3, 4, 9, 10, 11]);
        assert_eq!(median(&bg, 0), 3);
        // p = 0.2 of 10 trials is too few trials beyond (T·p = 2 < 10): gamma tail.
        assert!(!threshold(&bg, 0, 0.2).from_trials);
        let many: Vec<u64> = (0..1000).map(|i| i % 100).collect();
        let bg = dist(&many);
        // P(N ≥ 90) = 0.1 exactly: 100 trials allowed beyond; N ≥ 90 holds 100.
        let t = threshold(&bg, 0, 0.1);
        assert_eq!((t.count, t.from_trials), (90.0, true));
        let t = threshold(&bg, 0, 0.0995);
        assert_eq!(t.count, 91.0);
        assert_eq!(fraction_beyond(&bg, 0, 90.0), 0.1);
        assert_eq!(fraction_above(&bg, 0, 89), 0.1);
    }

    #[test]
    fn gamma_threshold_has_the_tail_probability() {
        let counts: Vec<u64> = (0..200).map(|i| 100 + (i % 21)).collect();
        let bg = dist(&counts);
        let t = threshold(&bg, 0, p_of_sigma(5.0));
        assert!(!t.from_trials);
        let (m, s) = bg.mean_std(0);
        let p = gamma_sf(t.count, m * m / (s * s), s * s / m);
        assert!((p / p_of_sigma(5.0) - 1.0).abs() < 1e-6, "{p}");
        assert!(t.count > m + 4.0 * s && t.count < m + 7.0 * s);
    }

    #[test]
    fn crossing_interpolates_with_its_error() {
        let n = [10.0, 20.0, 30.0];
        let f = [0.2, 0.6, 1.0];
        let c = crossing(&n, &f, &[100, 100, 100], 0.5).crossing().unwrap();
        assert!((c.strength - 17.5).abs() < 1e-12);
        // ΔN/Δf² = 10/0.16; √((0.1)²·0.0016 + (0.3)²·0.0024) = 0.015620…
        let e = 10.0 / 0.16 * (0.01 * 0.0016f64 + 0.09 * 0.0024).sqrt();
        assert!((c.error - e).abs() < 1e-12);
        assert_eq!(crossing(&n, &f, &[100; 3], 0.1), Reach::Below, "below the first strength");
        assert_eq!(
            crossing(&n, &f, &[100; 3], 0.2),
            Reach::Below,
            "reached at the first strength: no slope"
        );
        let c = crossing(&n, &f, &[100; 3], 0.6).crossing().unwrap();
        assert_eq!(c.strength, 20.0);
        assert!((c.error - 10.0 / 0.4 * fraction_error(0.6, 100)).abs() < 1e-12);
        assert_eq!(crossing(&n, &[0.1, 0.2, 0.3], &[100; 3], 0.5), Reach::Beyond, "beyond the scan");
    }
}
