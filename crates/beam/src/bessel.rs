//! Modified Bessel functions I1, K1 and the product I1·K1 of the LSC impedance (spec §3), to
//! about 1e-14 relative, with the same formulas in `kernels/lsc.cu`.
//!
//! * I1: its power series (A&S 9.6.10), all terms positive, used for x ≤ 40.
//! * K1, x ≤ 2: A&S 9.6.11 with n = 1,
//!   K1(x) = 1/x + ln(x/2) I1(x) − (x/4) Σ_k [ψ(k+1) + ψ(k+2)] (x²/4)^k / (k!(k+1)!).
//! * K1, x > 2: K1(x) = ∫₀^∞ e^{−x cosh u} cosh u du (A&S 9.6.24) by the trapezoidal rule,
//!   whose error falls like e^{−π²/h} for this analytic integrand (h = 0.1 → far below rounding).
//! * I1·K1 for x > 40 (where I1 alone heads for overflow): the asymptotic expansion DLMF 10.40.6,
//!   I1K1 ~ (1/2x)(1 − 3/(8x²) − 45/(128x⁴) − 4725/(3072x⁶) − 1488375/(98304x⁸)).

const EULER_GAMMA: f64 = 0.577_215_664_901_532_9;

/// I1(x) for 0 ≤ x ≤ 40 (power series).
pub fn i1(x: f64) -> f64 {
    let q = 0.25 * x * x;
    let mut term = 0.5 * x; // k = 0: (x/2)/(0! 1!)
    let mut sum = term;
    for k in 1..200 {
        term *= q / (k as f64 * (k + 1) as f64);
        sum += term;
        if term < sum * 1e-17 {
            break;
        }
    }
    sum
}

/// K1(x) for x > 0.
pub fn k1(x: f64) -> f64 {
    if x <= 2.0 {
        let q = 0.25 * x * x;
        // ψ(k+1) = −γ + H_k, ψ(k+2) = −γ + H_{k+1}.
        let mut h_k = 0.0; // H_0
        let mut coef = 1.0; // q^k / (k!(k+1)!)
        let mut sum = 0.0;
        for k in 0..100 {
            let h_k1 = h_k + 1.0 / (k + 1) as f64;
            let term = coef * (h_k + h_k1 - 2.0 * EULER_GAMMA);
            sum += term;
            if k > 2 && term.abs() < 1e-18 * sum.abs() {
                break;
            }
            h_k = h_k1;
            coef *= q / ((k + 1) as f64 * (k + 2) as f64);
        }
        1.0 / x + (0.5 * x).ln() * i1(x) - 0.25 * x * sum
    } else {
        // Integrand below e^{-x-40} relative to the peak beyond cosh u = 1 + 40/x.
        let upper = (1.0 + 40.0 / x).acosh();
        let h = 0.1;
        let n = (upper / h).ceil() as usize;
        let mut sum = 0.5 * (-x).exp(); // u = 0, half weight
        for j in 1..=n {
            let c = (j as f64 * h).cosh();
            sum += (-x * c).exp() * c;
        }
        sum * h
    }
}

/// I1(x)·K1(x) for x > 0 (→ 1/2 as x → 0, ~1/(2x) as x → ∞).
pub fn i1k1(x: f64) -> f64 {
    if x <= 40.0 {
        i1(x) * k1(x)
    } else {
        let u = 1.0 / (x * x);
        0.5 / x * (1.0 - u * (3.0 / 8.0 + u * (45.0 / 128.0 + u * (4725.0 / 3072.0 + u * (1_488_375.0 / 98_304.0)))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference values from mpmath 1.3 at 30 digits (besseli(1,x), besselk(1,x)), printed to 17.
    #[allow(clippy::excessive_precision)]
    #[test]
    fn against_reference_values() {
        let cases = [
            (1e-3, 5.000000625000026e-4, 999.99623815608557),
            (0.1, 0.050062526047092692, 9.8538447808706061),
            (1.0, 0.56515910399248503, 0.60190723019723457),
            (2.0, 1.5906368546373291, 0.13986588181652243),
            (2.5, 2.5167162452886984, 0.073890816347747064),
            (10.0, 2670.9883037012547, 1.8648773453825585e-5),
            (30.0, 768532038938.957, 2.1677320018915494e-14),
        ];
        for (x, ri, rk) in cases {
            assert!((i1(x) / ri - 1.0).abs() < 1e-13, "I1({x}) = {} vs {ri}", i1(x));
            assert!((k1(x) / rk - 1.0).abs() < 1e-13, "K1({x}) = {} vs {rk}", k1(x));
        }
    }

    #[test]
    #[allow(clippy::excessive_precision)]
    fn product_is_continuous_and_has_its_limits() {
        // The series/integral branch and the asymptotic branch meet at 40.
        let (a, b) = (i1(40.0) * k1(40.0), i1k1(40.0 + 1e-12));
        assert!((a / b - 1.0).abs() < 1e-13, "{a} vs {b}");
        // mpmath: I1(40)·K1(40) = 0.012497068591163168.
        assert!((b / 0.012497068591163168 - 1.0).abs() < 1e-13, "{b}");
        assert!((i1k1(1e-6) - 0.5).abs() < 1e-9);
        assert!((i1k1(1e4) * 2e4 - 1.0).abs() < 1e-8);
    }
}
