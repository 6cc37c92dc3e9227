//! Statistical comparisons used by validation tests: Kolmogorov–Smirnov (one and two sample)
//! and χ² comparisons of Poisson counts.

/// Result of a goodness-of-fit test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TestResult {
    /// The test statistic (KS distance D, or χ²).
    pub statistic: f64,
    /// Degrees of freedom for χ²; effective sample size for KS.
    pub dof: f64,
    /// Probability of a statistic at least this large under the null hypothesis.
    pub p_value: f64,
}

/// Survival function of the Kolmogorov distribution, Q(λ) = 2 Σ (−1)^(k−1) exp(−2k²λ²).
#[must_use]
pub fn kolmogorov_q(lambda: f64) -> f64 {
    if lambda < 0.2 {
        return 1.0;
    }
    let mut sum = 0.0;
    for k in 1..=100 {
        let k = f64::from(k);
        let term = (-2.0 * k * k * lambda * lambda).exp();
        sum += if k as u32 % 2 == 1 { term } else { -term };
        if term < 1e-16 {
            break;
        }
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

/// p-value of a KS distance `d` with effective sample size `ne`, with the Stephens (1970)
/// small-sample correction λ = (√ne + 0.12 + 0.11/√ne)·D (Numerical Recipes §14.3).
fn ks_p(d: f64, ne: f64) -> f64 {
    let s = ne.sqrt();
    kolmogorov_q((s + 0.12 + 0.11 / s) * d)
}

/// Two-sample Kolmogorov–Smirnov test (unbinned). Inputs need not be sorted.
#[must_use]
pub fn ks_two_sample(a: &[f64], b: &[f64]) -> TestResult {
    assert!(!a.is_empty() && !b.is_empty(), "KS test needs two non-empty samples");
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (mut i, mut j, mut d) = (0usize, 0usize, 0.0f64);
    while i < a.len() && j < b.len() {
        let x = a[i].min(b[j]);
        while i < a.len() && a[i] <= x {
            i += 1;
        }
        while j < b.len() && b[j] <= x {
            j += 1;
        }
        d = d.max((i as f64 / na - j as f64 / nb).abs());
    }
    let ne = na * nb / (na + nb);
    TestResult {
        statistic: d,
        dof: ne,
        p_value: ks_p(d, ne),
    }
}

/// One-sample Kolmogorov–Smirnov test of `sample` against the continuous CDF `cdf`.
#[must_use]
pub fn ks_one_sample(sample: &[f64], cdf: impl Fn(f64) -> f64) -> TestResult {
    assert!(!sample.is_empty(), "KS test needs a non-empty sample");
    let mut s = sample.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len() as f64;
    let mut d = 0.0f64;
    for (i, &x) in s.iter().enumerate() {
        let f = cdf(x);
        d = d.max((f - i as f64 / n).abs()).max(((i + 1) as f64 / n - f).abs());
    }
    TestResult {
        statistic: d,
        dof: n,
        p_value: ks_p(d, n),
    }
}

/// Regularised upper incomplete gamma function Q(a, x) (Numerical Recipes §6.2: series for
/// x < a+1, Lentz continued fraction otherwise).
#[must_use]
pub fn gamma_q(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    let gln = ln_gamma(a);
    if x < a + 1.0 {
        let (mut ap, mut sum) = (a, 1.0 / a);
        let mut del = sum;
        for _ in 0..10_000 {
            ap += 1.0;
            del *= x / ap;
            sum += del;
            if del.abs() < sum.abs() * 1e-15 {
                break;
            }
        }
        1.0 - sum * (-x + a * x.ln() - gln).exp()
    } else {
        let tiny = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..10_000 {
            let an = -f64::from(i) * (f64::from(i) - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < tiny {
                d = tiny;
            }
            c = b + an / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            let del = d * c;
            h *= del;
            if (del - 1.0).abs() < 1e-15 {
                break;
            }
        }
        (-x + a * x.ln() - gln).exp() * h
    }
}

/// ln Γ(x) for x > 0 (Lanczos approximation, g = 7, n = 9).
#[must_use]
pub fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + 7.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (std::f64::consts::TAU).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Survival function of the χ² distribution with `dof` degrees of freedom.
#[must_use]
pub fn chi2_sf(chi2: f64, dof: f64) -> f64 {
    gamma_q(dof / 2.0, chi2 / 2.0)
}

/// χ² test that two sets of Poisson counts come from the same shape, allowing different
/// exposures: `a[i]` from a run of exposure `ea`, `b[i]` from exposure `eb`
/// (e.g. one run against the sum of five). Bins with a+b = 0 are skipped. Statistic:
/// Σ (√(eb/ea)·a − √(ea/eb)·b)² / (a + b), with one degree of freedom per used bin
/// (the exposures are fixed, not fitted). Numerical Recipes §14.3, eq. 14.3.3.
#[must_use]
pub fn poisson_chi2(a: &[f64], ea: f64, b: &[f64], eb: f64) -> TestResult {
    assert_eq!(a.len(), b.len(), "count vectors differ in length");
    let (ra, rb) = ((eb / ea).sqrt(), (ea / eb).sqrt());
    let mut chi2 = 0.0;
    let mut dof = 0.0;
    for (&x, &y) in a.iter().zip(b) {
        if x + y > 0.0 {
            chi2 += (ra * x - rb * y).powi(2) / (x + y);
            dof += 1.0;
        }
    }
    TestResult {
        statistic: chi2,
        dof,
        p_value: chi2_sf(chi2, dof),
    }
}

/// Mean and sample standard deviation.
#[must_use]
pub fn mean_std(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let v = if xs.len() > 1 {
        xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (m, v.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RandomStream;

    #[test]
    fn special_functions_against_tables() {
        // Γ(5) = 24, Γ(0.5) = √π.
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-12);
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-12);
        // χ² tables: P(χ²_1 > 3.841) = 0.05, P(χ²_10 > 23.209) = 0.01, P(χ²_2 > x) = e^(−x/2).
        assert!((chi2_sf(3.841_458_820_694_124, 1.0) - 0.05).abs() < 1e-9);
        assert!((chi2_sf(23.209_251_158_954_36, 10.0) - 0.01).abs() < 1e-9);
        assert!((chi2_sf(7.0, 2.0) - (-3.5f64).exp()).abs() < 1e-12);
        // Kolmogorov: Q(1.3581) ≈ 0.05, Q(1.6276) ≈ 0.01.
        assert!((kolmogorov_q(1.358_1) - 0.05).abs() < 1e-4);
        assert!((kolmogorov_q(1.627_6) - 0.01).abs() < 1e-4);
    }

    #[test]
    fn ks_accepts_same_and_rejects_shifted() {
        let mut r = RandomStream::new(1, 0, 0);
        let a: Vec<f64> = (0..5000).map(|_| r.normal()).collect();
        let b: Vec<f64> = (0..4000).map(|_| r.normal()).collect();
        let c: Vec<f64> = (0..4000).map(|_| r.normal() + 0.1).collect();
        assert!(ks_two_sample(&a, &b).p_value > 0.01);
        assert!(ks_two_sample(&a, &c).p_value < 1e-3);
        let u: Vec<f64> = (0..5000).map(|_| r.uniform_f64()).collect();
        assert!(ks_one_sample(&u, |x| x.clamp(0.0, 1.0)).p_value > 0.01);
        assert!(ks_one_sample(&u, |x| x.clamp(0.0, 1.0).powf(1.1)).p_value < 1e-3);
    }

    #[test]
    fn poisson_chi2_handles_exposures() {
        let mut r = RandomStream::new(2, 0, 0);
        let mu = [50.0, 120.0, 8.0, 300.0, 17.0];
        let a: Vec<f64> = mu.iter().map(|m| r.poisson(*m) as f64).collect();
        let b: Vec<f64> = mu.iter().map(|m| r.poisson(5.0 * m) as f64).collect();
        let t = poisson_chi2(&a, 1.0, &b, 5.0);
        assert_eq!(t.dof, 5.0);
        assert!(t.p_value > 0.01, "{t:?}");
        let c: Vec<f64> = mu.iter().map(|m| r.poisson(7.0 * m) as f64).collect();
        assert!(poisson_chi2(&a, 1.0, &c, 5.0).p_value < 1e-3);
    }
}
