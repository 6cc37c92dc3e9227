//! Portable transcendental functions: the same bits on the CPU and on the GPU.
//!
//! The host libm and CUDA's libdevice both compute log, exp, pow, sin, cos to within an ulp or
//! so, but not always the *same* ulp; a Monte Carlo that must follow the CPU track by track on
//! the GPU (precise mode) diverges at the first disagreement. These functions use only IEEE
//! +, −, ×, ÷ (correctly rounded on both sides; the CUDA twin `kernels/pmath.cuh` is compiled
//! without FMA contraction), `floor`, comparisons and bit manipulation, in the same order as
//! their twins, so both sides give identical results.
//!
//! Methods (all textbook; constants derived here, none copied):
//! * `ln`: x = 2^k·m, m ∈ [√½, √2); with f = m − 1, s = f/(2 + f), z = s²:
//!   ln m = f − f²/2 + s·(f²/2 + R(z)), R(z) = Σ_{i≥1} 2zⁱ/(2i+1) (the atanh series,
//!   ln m = 2 atanh s), 11 terms for |s| ≤ 0.1716; ln x = k·ln 2 + ln m with ln 2 split in two
//!   (Cody & Waite, *Software Manual for the Elementary Functions*, 1980).
//! * `exp`: x = k·ln 2 + r, k = ⌊x/ln 2 + ½⌋, r by the two-part ln 2 (Cody–Waite), |r| ≤ 0.347;
//!   e^r by its Taylor series to r¹³/13! (truncation < 4e-18), then ×2^k by the exponent bits
//!   (two factors below 2^−1022).
//! * `exp_m1`: the Taylor series of e^x − 1 for |x| < ln2/2; else with x = k·ln 2 + r,
//!   2^k·(e^r − 1) + (2^k − 1) (no cancellation); `exp(x) − 1` beyond |x| = 40.
//! * `ln_1p`: u = 1 + x; x when u = 1, else ln(u)·x/(u − 1) (corrects the rounding of 1 + x;
//!   Goldberg, ACM Comp. Surv. 23 (1991) 5, Theorem 4).
//! * `pow(x, y)` = exp(y·ln x) for x > 0 (relative error ≈ |y ln x|·2⁻⁵³; fine for the exponents
//!   of physics formulas, not for |y ln x| ≫ 1e3).
//! * `sin`, `cos`: x = k·π/2 + r with π/2 in three parts (Cody–Waite; valid for |x| < 1e5),
//!   Taylor polynomials on |r| ≤ π/4 (to r¹⁷ and r¹⁸), quadrant from k mod 4.
//! * `cbrt`: a first guess from the exponent bits, four Newton steps y ← y − (y³ − x)/(3y²) in
//!   double, then one correction step.
//!
//! Accuracy (tests, against the host libm over 10⁶ arguments each): ≤ 2 ulp for ln, exp,
//! exp_m1, ln_1p, sin, cos, cbrt; pow as stated above.

const LN2_HI: f64 = 0.693_147_180_369_123_8; // 0x3FE62E42FEE00000: 32 significant bits
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10; // ln 2 − LN2_HI
const INV_LN2: f64 = std::f64::consts::LOG2_E;
const SQRT_HALF: f64 = std::f64::consts::FRAC_1_SQRT_2;

/// 2^k for k in the normal range, by the exponent bits.
#[inline]
fn pow2(k: i64) -> f64 {
    f64::from_bits(((k + 1023) as u64) << 52)
}

/// x·2^k for any k that keeps the result representable (two steps below 2^−1022).
#[inline]
fn scale(x: f64, k: i64) -> f64 {
    if k > 1023 {
        x * pow2(1023) * pow2(k - 1023)
    } else if k < -1022 {
        x * pow2(-1022) * pow2(k + 1022)
    } else {
        x * pow2(k)
    }
}

/// Natural logarithm (module doc).
#[must_use]
pub fn ln(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x == f64::INFINITY {
        return f64::INFINITY;
    }
    let mut bits = x.to_bits();
    let mut k: i64 = 0;
    if bits >> 52 == 0 {
        // Subnormal: scale into the normal range first.
        bits = (x * pow2(54)).to_bits();
        k = -54;
    }
    k += ((bits >> 52) as i64) - 1023;
    let mut m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    if m >= 2.0 * SQRT_HALF {
        m *= 0.5;
        k += 1;
    }
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    // R(z) = z·P(z), P(z) = Σ_{i=0}^{10} 2 z^i / (2i + 3), by Estrin's scheme (pairs, then z², z⁴,
    // z⁸): a short dependency chain.
    let z2 = z * z;
    let z4 = z2 * z2;
    let z8 = z4 * z4;
    let a0 = 2.0 / 3.0 + 2.0 / 5.0 * z;
    let a1 = 2.0 / 7.0 + 2.0 / 9.0 * z;
    let a2 = 2.0 / 11.0 + 2.0 / 13.0 * z;
    let a3 = 2.0 / 15.0 + 2.0 / 17.0 * z;
    let a4 = 2.0 / 19.0 + 2.0 / 21.0 * z;
    let b0 = a0 + a1 * z2;
    let b1 = a2 + a3 * z2;
    let b2 = a4 + 2.0 / 23.0 * z2;
    let r = z * ((b0 + b1 * z4) + b2 * z8);
    let hfsq = 0.5 * f * f;
    let kf = k as f64;
    kf * LN2_HI - ((hfsq - (s * (hfsq + r) + kf * LN2_LO)) - f)
}

/// e^r for |r| ≤ 0.35: Taylor series to r¹³/13!, 1 + r + r²·p(r) with p = Σ_{j=0}^{11} r^j/(j+2)!
/// by Estrin's scheme.
#[inline]
fn exp_reduced(r: f64) -> f64 {
    let r2 = r * r;
    let r4 = r2 * r2;
    let r8 = r4 * r4;
    let a0 = 0.5 + r * (1.0 / 6.0);
    let a1 = 1.0 / 24.0 + r * (1.0 / 120.0);
    let a2 = 1.0 / 720.0 + r * (1.0 / 5_040.0);
    let a3 = 1.0 / 40_320.0 + r * (1.0 / 362_880.0);
    let a4 = 1.0 / 3_628_800.0 + r * (1.0 / 39_916_800.0);
    let a5 = 1.0 / 479_001_600.0 + r * (1.0 / 6_227_020_800.0);
    let b0 = a0 + a1 * r2;
    let b1 = a2 + a3 * r2;
    let b2 = a4 + a5 * r2;
    let p = (b0 + b1 * r4) + b2 * r8;
    // 1 + r + r²·p, the small part first.
    1.0 + (r + r2 * p)
}

/// e^x (module doc).
#[must_use]
pub fn exp(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x > 709.782_712_893_384 {
        return f64::INFINITY;
    }
    if x < -745.133_219_101_941_1 {
        return 0.0;
    }
    let k = (x * INV_LN2 + 0.5).floor();
    let r = (x - k * LN2_HI) - k * LN2_LO;
    scale(exp_reduced(r), k as i64)
}

/// e^r − 1 for |r| ≤ 0.35: r + r²·p(r), p = Σ_{j=0}^{12} r^j/(j+2)! (to r¹⁴/14!), Estrin's scheme.
#[inline]
fn exp_m1_reduced(x: f64) -> f64 {
    let x2 = x * x;
    let x4 = x2 * x2;
    let x8 = x4 * x4;
    let a0 = 0.5 + x * (1.0 / 6.0);
    let a1 = 1.0 / 24.0 + x * (1.0 / 120.0);
    let a2 = 1.0 / 720.0 + x * (1.0 / 5_040.0);
    let a3 = 1.0 / 40_320.0 + x * (1.0 / 362_880.0);
    let a4 = 1.0 / 3_628_800.0 + x * (1.0 / 39_916_800.0);
    let a5 = 1.0 / 479_001_600.0 + x * (1.0 / 6_227_020_800.0);
    let b0 = a0 + a1 * x2;
    let b1 = a2 + a3 * x2;
    let b2 = a4 + a5 * x2;
    let d0 = b0 + b1 * x4;
    let d1 = b2 + 1.0 / 87_178_291_200.0 * x4;
    x + x2 * (d0 + d1 * x8)
}

/// e^x − 1, accurate near 0 (module doc).
#[must_use]
pub fn exp_m1(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x.abs() < 0.346_573_590_279_972_65 {
        return exp_m1_reduced(x);
    }
    if x.abs() > 40.0 {
        return exp(x) - 1.0;
    }
    // x = k·ln 2 + r: e^x − 1 = 2^k·(e^r − 1) + (2^k − 1), both terms of one sign for k ≥ 1
    // and no cancellation for k ≤ −1.
    let k = (x * INV_LN2 + 0.5).floor();
    let r = (x - k * LN2_HI) - k * LN2_LO;
    let p = pow2(k as i64);
    p * exp_m1_reduced(r) + (p - 1.0)
}

/// ln(1 + x), accurate near 0 (module doc).
#[must_use]
pub fn ln_1p(x: f64) -> f64 {
    let u = 1.0 + x;
    if u == 1.0 {
        return x;
    }
    if u == f64::INFINITY {
        return f64::INFINITY;
    }
    ln(u) * x / (u - 1.0)
}

/// x^y for x > 0 (x = 0: 0 for y > 0, ∞ for y < 0, 1 for y = 0; x < 0: NaN).
#[must_use]
pub fn pow(x: f64, y: f64) -> f64 {
    if y == 0.0 {
        return 1.0;
    }
    if x == 0.0 {
        return if y > 0.0 { 0.0 } else { f64::INFINITY };
    }
    if x == 1.0 {
        return 1.0;
    }
    exp(y * ln(x))
}

/// x^n for an integer n, by multiplications in a fixed order (repeated squaring).
#[must_use]
pub fn powi(x: f64, n: i32) -> f64 {
    let mut base = if n < 0 { 1.0 / x } else { x };
    let mut e = n.unsigned_abs();
    let mut acc = 1.0;
    while e > 0 {
        if e & 1 == 1 {
            acc *= base;
        }
        base *= base;
        e >>= 1;
    }
    acc
}

// π/2 in three parts: PIO2_1 + PIO2_2 + PIO2_3 (each with the low bits of its predecessor's
// error), so that k·PIO2_1 and k·PIO2_2 are exact for |k| < 2^20.
const PIO2_1: f64 = 1.570_796_326_734_125_6; // 33 bits
const PIO2_2: f64 = 6.077_100_506_303_966e-11; // next 33 bits
const PIO2_3: f64 = 2.022_266_248_795_950_6e-21; // the rest
const TWO_OVER_PI: f64 = std::f64::consts::FRAC_2_PI;

#[inline]
fn sin_reduced(r: f64) -> f64 {
    let z = r * r;
    let mut p = -1.0 / 355_687_428_096_000.0; // −1/17!
    p = p * z + 1.0 / 1_307_674_368_000.0; // 1/15!
    p = p * z - 1.0 / 6_227_020_800.0; // −1/13!
    p = p * z + 1.0 / 39_916_800.0; // 1/11!
    p = p * z - 1.0 / 362_880.0; // −1/9!
    p = p * z + 1.0 / 5_040.0; // 1/7!
    p = p * z - 1.0 / 120.0; // −1/5!
    p = p * z + 1.0 / 6.0; // 1/3!
    r - r * z * p
}

#[inline]
fn cos_reduced(r: f64) -> f64 {
    let z = r * r;
    // q = 1/4! − z/6! + z²/8! − … − z⁷/18!, so cos r = 1 − z/2 + z²·q.
    let mut p = -1.0 / 6_402_373_705_728_000.0; // −1/18!
    p = p * z + 1.0 / 20_922_789_888_000.0; // 1/16!
    p = p * z - 1.0 / 87_178_291_200.0; // −1/14!
    p = p * z + 1.0 / 479_001_600.0; // 1/12!
    p = p * z - 1.0 / 3_628_800.0; // −1/10!
    p = p * z + 1.0 / 40_320.0; // 1/8!
    p = p * z - 1.0 / 720.0; // −1/6!
    p = p * z + 1.0 / 24.0; // 1/4!
    let hz = 0.5 * z;
    // 1 − z/2 + z²·p, keeping 1 − z/2 exact-ish: w = 1 − hz, then add the small terms.
    let w = 1.0 - hz;
    w + (((1.0 - w) - hz) + z * z * p)
}

/// (sin x, cos x) (module doc).
#[must_use]
pub fn sin_cos(x: f64) -> (f64, f64) {
    if !x.is_finite() {
        return (f64::NAN, f64::NAN);
    }
    let (r, q) = reduce_pio2(x);
    let (s, c) = (sin_reduced(r), cos_reduced(r));
    match q {
        0 => (s, c),
        1 => (c, -s),
        2 => (-s, -c),
        _ => (-c, s),
    }
}

/// x = k·π/2 + r (module doc) and k mod 4.
#[inline]
fn reduce_pio2(x: f64) -> (f64, i64) {
    let k = (x * TWO_OVER_PI + 0.5).floor();
    let r = ((x - k * PIO2_1) - k * PIO2_2) - k * PIO2_3;
    (r, (k as i64).rem_euclid(4))
}

/// sin x (the same bits as `sin_cos(x).0`, one polynomial).
#[must_use]
pub fn sin(x: f64) -> f64 {
    if !x.is_finite() {
        return f64::NAN;
    }
    let (r, q) = reduce_pio2(x);
    match q {
        0 => sin_reduced(r),
        1 => cos_reduced(r),
        2 => -sin_reduced(r),
        _ => -cos_reduced(r),
    }
}

/// cos x (the same bits as `sin_cos(x).1`, one polynomial).
#[must_use]
pub fn cos(x: f64) -> f64 {
    if !x.is_finite() {
        return f64::NAN;
    }
    let (r, q) = reduce_pio2(x);
    match q {
        0 => cos_reduced(r),
        1 => -sin_reduced(r),
        2 => -cos_reduced(r),
        _ => sin_reduced(r),
    }
}

/// Cube root (module doc).
#[must_use]
pub fn cbrt(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let a = x.abs();
    let bits = a.to_bits();
    let mut k = ((bits >> 52) as i64) - 1023;
    let mut m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    if bits >> 52 == 0 {
        // Subnormal.
        let b = (a * pow2(54)).to_bits();
        k = ((b >> 52) as i64) - 1023 - 54;
        m = f64::from_bits((b & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    }
    // a = m·2^k, m ∈ [1, 2): make k a multiple of 3 by moving factors of 2 into m ∈ [1, 8).
    let r = k.rem_euclid(3);
    let q = (k - r) / 3;
    let m = m * pow2(r);
    // Guess for m^(1/3) on [1, 8): linear fit through (1, 1) and (8, 2), then Newton.
    let mut y = 1.0 + (m - 1.0) / 7.0;
    for _ in 0..5 {
        y -= (y * y * y - m) / (3.0 * y * y);
    }
    let y = scale(y, q);
    if x < 0.0 {
        -y
    } else {
        y
    }
}

/// The functions above as methods, so that `x.ln()` becomes `x.pln()` where a computation must
/// be bit-identical to its CUDA twin.
pub trait Portable: Copy {
    fn pln(self) -> f64;
    fn pexp(self) -> f64;
    fn pexp_m1(self) -> f64;
    fn pln_1p(self) -> f64;
    fn ppowf(self, y: f64) -> f64;
    fn psin(self) -> f64;
    fn pcos(self) -> f64;
    fn psin_cos(self) -> (f64, f64);
    fn pcbrt(self) -> f64;
}

impl Portable for f64 {
    #[inline]
    fn pln(self) -> f64 {
        ln(self)
    }
    #[inline]
    fn pexp(self) -> f64 {
        exp(self)
    }
    #[inline]
    fn pexp_m1(self) -> f64 {
        exp_m1(self)
    }
    #[inline]
    fn pln_1p(self) -> f64 {
        ln_1p(self)
    }
    #[inline]
    fn ppowf(self, y: f64) -> f64 {
        pow(self, y)
    }
    #[inline]
    fn psin(self) -> f64 {
        sin(self)
    }
    #[inline]
    fn pcos(self) -> f64 {
        cos(self)
    }
    #[inline]
    fn psin_cos(self) -> (f64, f64) {
        sin_cos(self)
    }
    #[inline]
    fn pcbrt(self) -> f64 {
        cbrt(self)
    }
}

/// The arguments of the CPU/GPU comparison: `n` per function family, spread over the ranges a
/// Monte Carlo uses.
#[must_use]
pub fn check_arguments(n: usize) -> Vec<f64> {
    let mut r = crate::RandomStream::new(2026, 0x504d_4154, 0);
    let mut v = Vec::with_capacity(n);
    for i in 0..n {
        let u = r.uniform_f64();
        v.push(match i % 4 {
            0 => (1e-30f64).powf(1.0 - 2.0 * u),
            1 => 40.0 * (2.0 * u - 1.0),
            2 => 2.0 * u - 1.0,
            _ => u * 1e-6,
        });
    }
    v
}

/// The results of every function at `x`, in a fixed order: ln|x|, exp, exp_m1, ln_1p(|x|),
/// pow(|x|, 0.37), sin, cos, cbrt.
#[must_use]
pub fn evaluate_all(x: f64) -> [f64; 8] {
    let a = x.abs().max(f64::MIN_POSITIVE);
    [ln(a), exp(x), exp_m1(x), ln_1p(a), pow(a, 0.37), sin(x), cos(x), cbrt(x)]
}

/// FNV-1a over the bit patterns of [`evaluate_all`] at every argument.
#[must_use]
pub fn fingerprint(args: &[f64]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &x in args {
        for y in evaluate_all(x) {
            h = (h ^ y.to_bits()).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// [`fingerprint`] of [`check_arguments`]`(10 000)` (test `bit_patterns_are_pinned`).
pub const PINNED_FINGERPRINT: u64 = 0x793d_b455_dbd7_f68f;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RandomStream;

    fn ulps(a: f64, b: f64) -> u64 {
        if a == b {
            return 0;
        }
        if a.is_nan() || b.is_nan() || a.signum() != b.signum() {
            return u64::MAX;
        }
        a.to_bits().abs_diff(b.to_bits())
    }

    fn worst(f: impl Fn(f64) -> f64, g: impl Fn(f64) -> f64, args: impl Iterator<Item = f64>) -> (u64, f64) {
        let mut w = (0u64, 0.0);
        for x in args {
            let u = ulps(f(x), g(x));
            if u > w.0 {
                w = (u, x);
            }
        }
        w
    }

    fn uniform(seed: u64, n: usize, lo: f64, hi: f64) -> impl Iterator<Item = f64> + Clone {
        let v: Vec<f64> = {
            let mut r = RandomStream::new(seed, 0, 0);
            (0..n).map(|_| lo + (hi - lo) * r.uniform_f64()).collect()
        };
        v.into_iter()
    }

    fn log_uniform(seed: u64, n: usize, lo: f64, hi: f64) -> impl Iterator<Item = f64> + Clone {
        uniform(seed, n, lo.ln(), hi.ln()).map(f64::exp)
    }

    #[test]
    fn accuracy_against_the_host_libm() {
        let n = 1_000_000;
        let checks: Vec<(&str, u64, (u64, f64))> = vec![
            (
                "ln",
                1,
                worst(ln, f64::ln, log_uniform(1, n, 1e-300, 1e300).chain(uniform(2, n, 0.5, 2.0))),
            ),
            (
                "exp",
                1,
                worst(exp, f64::exp, uniform(3, n, -700.0, 700.0).chain(uniform(4, n, -1.0, 1.0))),
            ),
            (
                "exp_m1",
                2,
                worst(exp_m1, f64::exp_m1, uniform(5, n, -2.0, 2.0).chain(log_uniform(6, n, 1e-12, 0.3))),
            ),
            (
                "ln_1p",
                2,
                worst(ln_1p, f64::ln_1p, log_uniform(7, n, 1e-12, 1e3).chain(uniform(8, n, -0.9, 0.9))),
            ),
            ("sin", 1, worst(sin, f64::sin, uniform(9, n, -20.0, 20.0))),
            ("cos", 1, worst(cos, f64::cos, uniform(10, n, -20.0, 20.0))),
            (
                "cbrt",
                1,
                worst(
                    cbrt,
                    f64::cbrt,
                    log_uniform(11, n, 1e-300, 1e300).chain(uniform(12, n, -10.0, 10.0)),
                ),
            ),
        ];
        for (name, bound, (u, x)) in checks {
            eprintln!("{name}: worst {u} ulp at {x:e}");
            assert!(u <= bound, "{name}: {u} ulp at {x:e}");
        }
        // pow: relative error within (|y ln x| + 4)·2⁻⁵² of the libm.
        let mut r = RandomStream::new(13, 0, 0);
        for _ in 0..n {
            let x = (1e-6f64).powf(1.0 - 2.0 * r.uniform_f64());
            let y = 10.0 * (2.0 * r.uniform_f64() - 1.0);
            let (a, b) = (pow(x, y), x.powf(y));
            let tol = ((y * x.ln()).abs() + 4.0) * f64::EPSILON;
            assert!((a / b - 1.0).abs() <= tol, "pow({x}, {y}) = {a} vs {b}");
        }
    }

    #[test]
    fn special_values() {
        assert_eq!(ln(1.0), 0.0);
        assert_eq!(ln(0.0), f64::NEG_INFINITY);
        assert!(ln(-1.0).is_nan());
        assert_eq!(ln(f64::INFINITY), f64::INFINITY);
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(1000.0), f64::INFINITY);
        assert_eq!(exp(-1000.0), 0.0);
        assert_eq!(ln_1p(0.0), 0.0);
        assert_eq!(exp_m1(0.0), 0.0);
        assert_eq!(pow(2.0, 0.0), 1.0);
        assert_eq!(pow(0.0, 2.0), 0.0);
        assert_eq!(powi(3.0, 5), 243.0);
        assert_eq!(powi(2.0, -2), 0.25);
        assert_eq!(cbrt(27.0), 3.0);
        assert_eq!(cbrt(-8.0), -2.0);
        assert_eq!(sin(0.0), 0.0);
        assert_eq!(cos(0.0), 1.0);
        // ln is monotonic across 1.
        let mut prev = ln(1.0 - 1e-6);
        let mut x = 1.0 - 1e-6;
        for _ in 0..2000 {
            x += 1e-9;
            let v = ln(x);
            assert!(v >= prev, "ln not monotonic at {x}");
            prev = v;
        }
    }

    /// The bits of every function over fixed arguments, hashed: any change to the algorithms
    /// (which the CUDA twin must follow) shows here. The GPU check compares the same arguments
    /// with the device (warpdrive gpu-check --domain pmath).
    #[test]
    fn bit_patterns_are_pinned() {
        let h = fingerprint(&check_arguments(10_000));
        eprintln!("pmath fingerprint {h:016x}");
        assert_eq!(
            h, PINNED_FINGERPRINT,
            "pmath changed: update PINNED_FINGERPRINT and re-run the GPU check"
        );
    }
}
