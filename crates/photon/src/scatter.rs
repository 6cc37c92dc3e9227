//! Scattering: the mixed simplified-Liu / Henyey–Greenstein angle and the rotation of a
//! direction, with the SPICE anisotropy transform (spec §3.5 step 6).

use crate::medium::AnisotropyParams;
use std::f32::consts::TAU;

#[inline]
pub fn normalize(v: [f32; 3]) -> [f32; 3] {
    let r = 1.0 / (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    [v[0] * r, v[1] * r, v[2] * r]
}

/// Henyey–Greenstein cos θ from u ∈ (0,1]: s = 2u − 1, cos θ = (1 + g² − ((1 − g²)/(1 + g s))²)/(2g).
#[inline]
#[must_use]
pub fn henyey_greenstein(g: f32, u: f32) -> f32 {
    if g.abs() < 1e-6 {
        return 2.0 * u - 1.0;
    }
    let s = 2.0 * u - 1.0;
    let t = (1.0 - g * g) / (1.0 + g * s);
    ((1.0 + g * g - t * t) / (2.0 * g)).clamp(-1.0, 1.0)
}

/// Simplified Liu (SAM) cos θ = 2u^((1−g)/(1+g)) − 1; pdf ∝ (1 + cos θ)^(2g/(1−g)), mean g.
#[inline]
#[must_use]
pub fn simplified_liu(g: f32, u: f32) -> f32 {
    (2.0 * u.powf((1.0 - g) / (1.0 + g)) - 1.0).clamp(-1.0, 1.0)
}

/// Mixed scattering cosine: simplified Liu with probability f_SL, else Henyey–Greenstein.
#[inline]
#[must_use]
pub fn scattering_cosine(g: f32, f_sl: f32, u_choice: f32, u_angle: f32) -> f32 {
    if u_choice <= f_sl {
        simplified_liu(g, u_angle)
    } else {
        henyey_greenstein(g, u_angle)
    }
}

/// Rotate unit vector `n` by polar angle (cos_t, sin_t) about itself at azimuth 2π·u_phi.
#[inline]
#[must_use]
pub fn rotate(n: [f32; 3], cos_t: f32, sin_t: f32, u_phi: f32) -> [f32; 3] {
    normalize(rotate_unnormalised(n, cos_t, sin_t, u_phi))
}

/// The rotated direction before its final normalisation (unit length up to rounding; callers
/// that rescale and normalise anyway skip the extra step). The perpendicular pair: e1 in the
/// plane of `n` and the z axis, e2 horizontal, e1 = (nx·nz, ny·nz, −s²)/s, e2 = (−ny, nx, 0)/s
/// with s² = nx² + ny² (not 1 − nz², which cancels near the poles); along the z axis itself
/// (s² ≤ 1e-20) the x and y axes.
#[inline]
#[must_use]
pub fn rotate_unnormalised(n: [f32; 3], cos_t: f32, sin_t: f32, u_phi: f32) -> [f32; 3] {
    let (sp, cp) = (TAU * u_phi).sin_cos();
    let s2 = n[0] * n[0] + n[1] * n[1];
    let (e1, e2) = if s2 > 1e-20 {
        let inv_s = 1.0 / s2.sqrt();
        let zi = n[2] * inv_s;
        ([n[0] * zi, n[1] * zi, -s2 * inv_s], [-n[1] * inv_s, n[0] * inv_s, 0.0])
    } else {
        ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0])
    };
    let (a, b) = (sin_t * cp, sin_t * sp);
    [
        n[0] * cos_t + a * e1[0] + b * e2[0],
        n[1] * cos_t + a * e1[1] + b * e2[1],
        n[2] * cos_t + a * e1[2] + b * e2[2],
    ]
}

#[inline]
#[must_use]
pub fn scatter(n: [f32; 3], cos_t: f32, u_phi: f32, aniso: Option<&AnisotropyParams>) -> [f32; 3] {
    let sin_t = (1.0 - cos_t * cos_t).max(0.0).sqrt();
    match aniso {
        None => rotate(n, cos_t, sin_t, u_phi),
        Some(a) => {
            let m = a.to_frame(n);
            let m = normalize([a.k[0] * m[0], a.k[1] * m[1], a.k[2] * m[2]]);
            // Rescaled and normalised next: the rotation's own normalisation would be redundant.
            let m = rotate_unnormalised(m, cos_t, sin_t, u_phi);
            let ik = a.inverse_k();
            let m = normalize([m[0] * ik[0], m[1] * ik[1], m[2] * ik[2]]);
            a.from_frame(m)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpdrive_core::RandomStream;

    /// Mean cosines of HG and simplified Liu equal g (spec §3.5, unit tests with g = 0.9).
    #[test]
    fn mean_cosines_equal_g() {
        let mut r = RandomStream::new(3, 0, 0);
        let n = 400_000;
        for g in [0.9f32, 0.5] {
            let hg: f64 = (0..n).map(|_| f64::from(henyey_greenstein(g, r.uniform()))).sum::<f64>() / f64::from(n);
            let sl: f64 = (0..n).map(|_| f64::from(simplified_liu(g, r.uniform()))).sum::<f64>() / f64::from(n);
            // Standard errors are below 1e-3 for these g; allow 4e-3.
            assert!((hg - f64::from(g)).abs() < 4e-3, "HG g={g}: {hg}");
            assert!((sl - f64::from(g)).abs() < 4e-3, "SL g={g}: {sl}");
        }
        let mix: f64 = (0..n)
            .map(|_| f64::from(scattering_cosine(0.9, 0.35, r.uniform(), r.uniform())))
            .sum::<f64>()
            / f64::from(n);
        assert!((mix - 0.9).abs() < 4e-3);
    }

    /// The simplified-Liu CDF: P(cos ≤ c) = ((1 + c)/2)^((1+g)/(1−g)); checked by KS.
    #[test]
    fn simplified_liu_distribution() {
        let mut r = RandomStream::new(4, 0, 0);
        let g = 0.9f64;
        let xs: Vec<f64> = (0..50_000).map(|_| f64::from(simplified_liu(g as f32, r.uniform()))).collect();
        let t = warpdrive_core::stats::ks_one_sample(&xs, |c| ((1.0 + c) / 2.0).clamp(0.0, 1.0).powf((1.0 + g) / (1.0 - g)));
        assert!(t.p_value > 0.01, "{t:?}");
    }

    #[test]
    fn rotation_keeps_angle_and_unit_length() {
        let mut r = RandomStream::new(5, 0, 0);
        for i in 0..1000 {
            // Every fourth direction within 1e-3 of a pole (or on it), where e1, e2 are built
            // from a small horizontal component.
            let h = if i % 4 == 0 { 1e-3 * (i % 3) as f32 } else { 1.0 };
            let n = normalize([h * (r.uniform() - 0.5), h * (r.uniform() - 0.5), r.uniform() - 0.5]);
            let c = 2.0 * r.uniform() - 1.0;
            let m = rotate(n, c, (1.0 - c * c).sqrt(), r.uniform());
            let dot = n[0] * m[0] + n[1] * m[1] + n[2] * m[2];
            assert!((dot - c).abs() < 1e-5);
            assert!(((m[0] * m[0] + m[1] * m[1] + m[2] * m[2]) - 1.0).abs() < 1e-5);
        }
    }
}
