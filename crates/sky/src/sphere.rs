//! Geometry on the unit sphere: unit vectors, squared chord lengths and angular separations.
//!
//! Separations are compared as squared chords, c² = |u_i − u_j|² = 2 − 2 cos Ψ = 4 sin²(Ψ/2)
//! (spec §3.2 pitfall iv): unlike cos Ψ it keeps full relative precision at small angles.
//! [`sincos_turn`] and [`chord2`] are twins of the CUDA functions in `kernels/autocorr.cu` and
//! use only additions and multiplications in a fixed order, so that CPU and GPU produce the
//! same bits (the kernel is compiled without fused multiply-add).

/// Taylor coefficients of sin x (x, x³, …, x¹⁷) and cos x (1, x², …, x¹⁸): 1/n! with sign.
/// On |x| ≤ π/4 the truncation error is below 5e-17.
const SIN_C: [f64; 9] = [
    1.0,
    -1.0 / 6.0,
    1.0 / 120.0,
    -1.0 / 5040.0,
    1.0 / 362_880.0,
    -1.0 / 39_916_800.0,
    1.0 / 6_227_020_800.0,
    -1.0 / 1_307_674_368_000.0,
    1.0 / 355_687_428_096_000.0,
];
const COS_C: [f64; 10] = [
    1.0,
    -1.0 / 2.0,
    1.0 / 24.0,
    -1.0 / 720.0,
    1.0 / 40_320.0,
    -1.0 / 3_628_800.0,
    1.0 / 479_001_600.0,
    -1.0 / 87_178_291_200.0,
    1.0 / 20_922_789_888_000.0,
    -1.0 / 6_402_373_705_728_000.0,
];

/// (cos 2πt, sin 2πt) for a fraction of a turn t ∈ [0, 1], to about 1e-16 absolute.
///
/// Range reduction is exact: k = round(4t) quarter turns, r = t − k/4 ∈ [−1/8, 1/8] (Sterbenz),
/// then x = 2πr ∈ [−π/4, π/4] goes through the Horner forms of the Taylor series and the result
/// is rotated by k·90°.
#[inline]
#[must_use]
pub fn sincos_turn(t: f64) -> (f64, f64) {
    let k = (t * 4.0 + 0.5).floor();
    let r = t - k * 0.25;
    let x = r * std::f64::consts::TAU;
    let x2 = x * x;
    let mut s = SIN_C[8];
    for c in SIN_C[..8].iter().rev() {
        s = s * x2 + c;
    }
    let s = s * x;
    let mut c = COS_C[9];
    for cc in COS_C[..9].iter().rev() {
        c = c * x2 + cc;
    }
    match (k as i64) & 3 {
        0 => (c, s),
        1 => (-s, c),
        2 => (-c, -s),
        _ => (s, -c),
    }
}

/// Unit vector of right ascension 2πt (t a fraction of a turn) at a declination given by its
/// sine and cosine: (cos δ cos α, cos δ sin α, sin δ).
#[inline]
#[must_use]
pub fn unit_vector_turn(t: f64, sin_dec: f64, cos_dec: f64) -> [f64; 3] {
    let (ca, sa) = sincos_turn(t);
    [cos_dec * ca, cos_dec * sa, sin_dec]
}

/// Squared chord |a − b|², summed x, y, z in that order (the device sums in the same order).
#[inline]
#[must_use]
pub fn chord2(a: [f64; 3], b: [f64; 3]) -> f64 {
    let dx = a[0] - b[0];
    let dy = a[1] - b[1];
    let dz = a[2] - b[2];
    dx * dx + dy * dy + dz * dz
}

/// Squared chord of an angular separation ψ [rad]: 4 sin²(ψ/2).
#[must_use]
pub fn chord2_of_angle(psi: f64) -> f64 {
    let s = (0.5 * psi).sin();
    4.0 * s * s
}

/// Angular separation [deg] of two directions given in degrees, by the haversine formula
/// hav Ψ = hav Δδ + cos δ₁ cos δ₂ hav Δα — accurate at small angles, independent of the unit
/// vectors above (used by the brute-force reference).
#[must_use]
pub fn separation_deg(ra1: f64, dec1: f64, ra2: f64, dec2: f64) -> f64 {
    let (d1, d2) = (dec1.to_radians(), dec2.to_radians());
    let hd = (0.5 * (d2 - d1)).sin();
    let ha = (0.5 * (ra2 - ra1).to_radians()).sin();
    let h = hd * hd + d1.cos() * d2.cos() * ha * ha;
    2.0 * h.clamp(0.0, 1.0).sqrt().asin().to_degrees()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sincos_turn_matches_libm() {
        let mut worst: f64 = 0.0;
        for i in 0..=100_000 {
            let t = f64::from(i) / 100_000.0;
            let (c, s) = sincos_turn(t);
            let a = t * std::f64::consts::TAU;
            worst = worst.max((c - a.cos()).abs()).max((s - a.sin()).abs());
        }
        // The reference itself rounds t·2π to a double (half an ulp of 2π = 4.4e-16), so
        // agreement to ~1e-15 is all this comparison can show; the exact cases follow.
        assert!(worst < 1e-15, "worst deviation {worst:e}");
        assert_eq!(sincos_turn(0.25), (0.0, 1.0));
        assert_eq!(sincos_turn(1.0), (1.0, 0.0));
    }

    #[test]
    fn chord_and_haversine_agree() {
        let (ra1, dec1, ra2, dec2) = (10.0f64, 20.0f64, 11.5f64, 21.0f64);
        let u = |ra: f64, dec: f64| unit_vector_turn(ra / 360.0, dec.to_radians().sin(), dec.to_radians().cos());
        let c2 = chord2(u(ra1, dec1), u(ra2, dec2));
        let psi = separation_deg(ra1, dec1, ra2, dec2);
        assert!((c2 - chord2_of_angle(psi.to_radians())).abs() < 1e-15);
        // A pure declination offset: the separation is the offset.
        assert!((separation_deg(5.0, 30.0, 5.0, 31.0) - 1.0).abs() < 1e-12);
    }
}
