//! The fast mode's scattering (precise twin: `crate::scatter`): the bulk phase functions with
//! g's constants computed once (the GPU's WD_FAST_PHASE), simplified Liu's power and the
//! azimuth's sine and cosine from `fast::math`, the anisotropy frame skipped when k = (1, 1, 1)
//! (WD_ISO_SCATTER: spice_ftp-v3m has only the absorption's anisotropy).

use super::math::{self, Plain, Poly};
use crate::medium::AnisotropyParams;
use crate::scatter::normalize;

/// The bulk ice's phase function and scattering anisotropy, with their per-call constants.
#[derive(Clone, Copy, Debug)]
pub struct Phase {
    /// f_SL, simplified Liu's exponent (1 − g)/(1 + g); Henyey–Greenstein's 1 − g², 1 + g²,
    /// 1/(2g) (0 when g ≈ 0: then cos θ = 2u − 1).
    pub g: f32,
    pub f_sl: f32,
    pub sl_exp: f32,
    pub hg: [f32; 3],
    /// The anisotropy (k ≠ (1, 1, 1)) and its 1/k.
    pub aniso: Option<(AnisotropyParams, [f32; 3])>,
}

impl Phase {
    #[must_use]
    pub fn new(g: f32, f_sl: f32, aniso: Option<&AnisotropyParams>) -> Self {
        let inv2g = if g.abs() < 1e-6 { 0.0 } else { 1.0 / (2.0 * g) };
        Self {
            g,
            f_sl,
            sl_exp: (1.0 - g) / (1.0 + g),
            hg: [1.0 - g * g, 1.0 + g * g, inv2g],
            aniso: aniso.filter(|a| a.k != [1.0; 3]).map(|a| (*a, a.inverse_k())),
        }
    }

    /// Mixed scattering cosine (spec §3.5 step 6): simplified Liu 2u^((1−g)/(1+g)) − 1 with
    /// probability f_SL, else Henyey–Greenstein (1 + g² − ((1 − g²)/(1 + g s))²)/(2g), s = 2u − 1.
    #[inline(always)]
    #[must_use]
    pub fn cosine(&self, u_choice: f32, u: f32) -> f32 {
        self.cosine_p::<Plain>(u_choice, u)
    }

    /// [`Self::cosine`] with the power's polynomials rounded as `P` says.
    #[inline(always)]
    #[must_use]
    pub fn cosine_p<P: Poly>(&self, u_choice: f32, u: f32) -> f32 {
        let c = if u_choice <= self.f_sl {
            2.0 * math::powf_p::<P>(u, self.sl_exp) - 1.0
        } else if self.hg[2] == 0.0 {
            2.0 * u - 1.0
        } else {
            // 1 + g·s and 1 + g² − t² through `Poly::gmad` (2u − 1 is exact either way).
            let s = 2.0 * u - 1.0;
            let t = self.hg[0] / P::gmad(self.g, s, 1.0);
            P::gmad(-t, t, self.hg[1]) * self.hg[2]
        };
        c.clamp(-1.0, 1.0)
    }

    /// The scattered direction (precise twin `scatter::scatter`).
    #[inline(always)]
    #[must_use]
    pub fn scatter(&self, n: [f32; 3], cos_t: f32, u_phi: f32) -> [f32; 3] {
        self.scatter_p::<Plain>(n, cos_t, u_phi)
    }

    /// [`Self::scatter`] with the azimuth's polynomials rounded as `P` says.
    #[inline(always)]
    #[must_use]
    pub fn scatter_p<P: Poly>(&self, n: [f32; 3], cos_t: f32, u_phi: f32) -> [f32; 3] {
        let sin_t = P::gmad(-cos_t, cos_t, 1.0).max(0.0).sqrt();
        match &self.aniso {
            None => rotate_p::<P>(n, cos_t, sin_t, u_phi),
            Some((a, ik)) => {
                let m = to_frame_p::<P>(a.azx, a.azy, n);
                let m = normalize([a.k[0] * m[0], a.k[1] * m[1], a.k[2] * m[2]]);
                let m = rotate_unnormalised_p::<P>(m, cos_t, sin_t, u_phi);
                let m = normalize([m[0] * ik[0], m[1] * ik[1], m[2] * ik[2]]);
                from_frame_p::<P>(a.azx, a.azy, m)
            }
        }
    }
}

/// `AnisotropyParams::to_frame` (the ice's flow frame, a rotation about z by (azx, azy)), its sums
/// through `Poly::gmad` in their written order.
#[inline(always)]
#[must_use]
pub fn to_frame_p<P: Poly>(azx: f32, azy: f32, n: [f32; 3]) -> [f32; 3] {
    [P::gmad(azy, n[1], azx * n[0]), P::gmad(azx, n[1], -azy * n[0]), n[2]]
}

/// `AnisotropyParams::from_frame`, the inverse of [`to_frame_p`], its sums through `Poly::gmad`.
#[inline(always)]
#[must_use]
pub fn from_frame_p<P: Poly>(azx: f32, azy: f32, m: [f32; 3]) -> [f32; 3] {
    [P::gmad(-azy, m[1], azx * m[0]), P::gmad(azx, m[1], azy * m[0]), m[2]]
}

/// `scatter::rotate_unnormalised` with the azimuth's sine and cosine from `math::sincos_turn`.
#[inline(always)]
#[must_use]
pub fn rotate_unnormalised(n: [f32; 3], cos_t: f32, sin_t: f32, u_phi: f32) -> [f32; 3] {
    rotate_unnormalised_p::<Plain>(n, cos_t, sin_t, u_phi)
}

/// [`rotate_unnormalised`] with the azimuth's polynomials rounded as `P` says.
#[inline(always)]
#[must_use]
pub fn rotate_unnormalised_p<P: Poly>(n: [f32; 3], cos_t: f32, sin_t: f32, u_phi: f32) -> [f32; 3] {
    let (sp, cp) = math::sincos_turn_p::<P>(u_phi);
    // As written: n₀² + n₁² and n·cos t + a·e1 + b·e2, left to right (`Poly::gmad` orders the
    // sums so that Plain adds the same terms in the same order).
    let s2 = P::gmad(n[1], n[1], n[0] * n[0]);
    let (e1, e2) = if s2 > 1e-20 {
        let inv_s = P::rsqrt(s2);
        let zi = n[2] * inv_s;
        ([n[0] * zi, n[1] * zi, -s2 * inv_s], [-n[1] * inv_s, n[0] * inv_s, 0.0])
    } else {
        ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0])
    };
    let (a, b) = (sin_t * cp, sin_t * sp);
    [
        P::gmad(b, e2[0], P::gmad(a, e1[0], n[0] * cos_t)),
        P::gmad(b, e2[1], P::gmad(a, e1[1], n[1] * cos_t)),
        P::gmad(b, e2[2], P::gmad(a, e1[2], n[2] * cos_t)),
    ]
}

/// The rotated direction, normalised (the kernel's `rotate`): `crate::scatter::normalize` of
/// [`rotate_unnormalised_p`], its squares summed through `Poly::gmad`, 1/√ by `Poly::rsqrt`.
#[inline(always)]
#[must_use]
pub fn rotate_p<P: Poly>(n: [f32; 3], cos_t: f32, sin_t: f32, u_phi: f32) -> [f32; 3] {
    let v = rotate_unnormalised_p::<P>(n, cos_t, sin_t, u_phi);
    let r = P::rsqrt(P::gmad(v[2], v[2], P::gmad(v[1], v[1], v[0] * v[0])));
    [v[0] * r, v[1] * r, v[2] * r]
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpdrive_core::RandomStream;

    /// The fast cosines follow the precise ones to float rounding (a few 10⁻⁷) for the same
    /// uniforms; the mean cosine is g.
    #[test]
    fn fast_cosines_follow_the_precise_ones() {
        let mut r = RandomStream::new(31, 0, 0);
        for (g, f_sl) in [(0.9f32, 0.35f32), (0.9, 0.137), (0.5, 1.0), (0.0, 0.0)] {
            let ph = Phase::new(g, f_sl, None);
            let mut mean = 0.0f64;
            for _ in 0..200_000 {
                let (u1, u2) = (r.uniform(), r.uniform());
                let fast = ph.cosine(u1, u2);
                let exact = crate::scatter::scattering_cosine(g, f_sl, u1, u2);
                assert!((fast - exact).abs() < 2e-6, "g {g}: {fast} vs {exact} (u {u1} {u2})");
                mean += f64::from(fast);
            }
            assert!((mean / 200_000.0 - f64::from(g)).abs() < 4e-3, "g {g}");
        }
    }

    /// With the anisotropy and without it, the fast scattering follows `scatter::scatter`.
    #[test]
    fn fast_scatter_follows_the_precise_one() {
        let a = AnisotropyParams {
            azx: 130f32.to_radians().cos(),
            azy: 130f32.to_radians().sin(),
            k: [(-0.069f32).exp(), 0.0345f32.exp(), 1.0 / ((-0.069f32).exp() * 0.0345f32.exp())],
            old_abs_scale: 1.0,
            new_abs: None,
        };
        let mut r = RandomStream::new(32, 0, 0);
        for aniso in [None, Some(&a)] {
            let ph = Phase::new(0.9, 0.35, aniso);
            for _ in 0..100_000 {
                let n = normalize([r.uniform() - 0.5, r.uniform() - 0.5, r.uniform() - 0.5]);
                let (c, u) = (2.0 * r.uniform() - 1.0, r.uniform());
                let (f, e) = (ph.scatter(n, c, u), crate::scatter::scatter(n, c, u, aniso));
                let d = (0..3).map(|i| (f[i] - e[i]).abs()).fold(0.0, f32::max);
                assert!(d < 2e-6, "{n:?} {c} {u}: {f:?} vs {e:?}");
            }
        }
    }

    /// The fused scattering (`FusedGeom`: the kernel's WD_TWIN_FMA_GEOM) is a unit vector and
    /// differs from the plain one in last bits only; `rotate_p::<Plain>` is `normalize` of the
    /// unnormalised rotation bit for bit (the sums reordered by `Poly::gmad` add the same terms).
    #[test]
    fn fused_rotation_differs_in_last_bits() {
        use crate::fast::math::FusedGeom;
        let mut r = RandomStream::new(33, 0, 0);
        let mut differ = 0;
        for _ in 0..200_000 {
            let n = normalize([r.uniform() - 0.5, r.uniform() - 0.5, r.uniform() - 0.5]);
            let (c, u) = (2.0 * r.uniform() - 1.0, r.uniform());
            let s = (1.0 - c * c).max(0.0).sqrt();
            let p = rotate_p::<Plain>(n, c, s, u);
            assert_eq!(p, normalize(rotate_unnormalised(n, c, s, u)));
            let f = rotate_p::<FusedGeom>(n, c, s, u);
            let norm = f.iter().map(|x| x * x).sum::<f32>();
            assert!((norm - 1.0).abs() < 1e-6, "{f:?}");
            assert!((0..3).all(|i| (f[i] - p[i]).abs() < 1e-6), "{f:?} vs {p:?}");
            differ += usize::from(f != p);
        }
        eprintln!("fused rotation: {differ} of 200000 differ from the plain one");
        assert!(differ > 0);
    }
}
