//! Precise mode on the CPU (`--precise`, issue #29): the fast mode ([`Fast`]) with the rest of
//! the GPU fast mode's tables and streams, so that the GPU's precise build — IEEE arithmetic and
//! every fast-only switch, `gpu::precise_options` — follows it photon by photon. What it adds to
//! the fast mode, each the CPU side of a kernel switch:
//! * the 1-D tilt from the kernel's resampled table ([`TiltLut`], WD_TILT_LUT; the fast mode
//!   evaluates the model exactly, the table is off by up to 10 cm between the model's distances);
//! * absorption and scattering from the per-layer × per-wavelength factors (`Medium::layer_factors`,
//!   WD_FACTORED_ICE) in the walk and in the depths up to a hit or a hole-ice column;
//! * the birefringence's path integrals summed by the walk (WD_BFR_WALK);
//! * the segments' uniforms by mantissa placement, 23 bits (WD_FAST_UNIFORM);
//! * the emission drawn from the photon's MWC64X stream, with the cascade's gamma in float
//!   (WD_FAST_GAMMA with WD_FAST_RNG: [`gamma`]);
//! * the hole-ice scattering with the fast mode's power and rotation.
//!
//! The emission is `source::emit` with the kernel's arithmetic (`EmitDraws`: the fast mode's
//! rotation, ln, exp, pow and sincos). Photons run one at a time (no SIMD lanes); the exact path,
//! which the exact precise build follows, is `propagate::run`.
//!
//! The GPU side computes with IEEE division and square root and the CPU fast mode's polynomials
//! (WD_TWIN_MATH) in place of CUDA's transcendentals, without contraction (`--fmad=false`): the
//! multiply-adds worth an FMA are written out as `fmaf` (WD_TWIN_FMA_GEOM), and this side rounds
//! the same ones once (`Twin<FusedGeom>`, `f32::mul_add`, 1/√ by `math::rsqrt`), so every photon's
//! hits are the same bit for bit (`gpu-check --domain photon-twin`; `tests/twin_host_kernel.rs`).
//!
//! `Twin<Plain>` and `Twin<Fused>` ([`run_rounded`], measurement only) are the CPU sides of twins
//! with none or only the polynomials' FMAs written out (`--config default,twin,-WD_TWIN_FMA_GEOM`
//! and `…,WD_TWIN_FMA`; scripts/photon-twin-contraction).

use warpdrive_core::progress::Progress;
use warpdrive_core::rng::u32_to_unit_f32;
use warpdrive_core::RandomStream;

use super::math::{self, FusedGeom, Plain, Poly};
use super::{walk, Fast};
use crate::birefringence::Birefringence;
use crate::collision::{Collision, DomIndex};
use crate::gpu::TiltLut;
use crate::medium::Medium;
use crate::propagate::{ChunkIds, Mode, PhotonState, RawHit, Segment};
use crate::source::{emit, tags, EmitDraws, Source};
use crate::tilt::Tilt;

use super::rng::Mwc64x;

/// The fast mode's tables and the twin's own (built once per run); `P`: how the polynomials
/// round their Horner steps.
#[derive(Clone, Debug)]
pub struct Twin<P: Poly = Plain> {
    fast: Fast,
    /// The 1-D tilt's resampled table (`None`: the fast mode's tilt, as the kernel's fallback).
    lut: Option<TiltLut>,
    poly: std::marker::PhantomData<P>,
}

impl<P: Poly> Twin<P> {
    #[must_use]
    pub fn new(m: &Medium, doms: &DomIndex) -> Self {
        Self {
            fast: Fast::new(m, doms),
            lut: match &m.tilt {
                Tilt::OneD(t) => TiltLut::new(t),
                _ => None,
            },
            poly: std::marker::PhantomData,
        }
    }
}

/// The factored coefficients of layer `j` for the slice factors `sf` = [l_a, l_k, A·e^(−B/λ)]:
/// sca = sb + se·l_a, abs = (l_k·c1 + A·e^(−B/λ)·t)·`abs_factor` (the kernel's `layer_walk`).
/// The sums through `Poly::gmad` in their written order.
#[inline(always)]
fn coefficients<P: Poly>(m: &Medium, sf: [f32; 3], j: usize, abs_factor: f32) -> (f32, f32) {
    let f = m.layer_factors[j];
    (P::gmad(f[1], sf[0], f[0]), P::gmad(sf[2], f[3], sf[1] * f[2]) * abs_factor)
}

/// The kernel's `layer_walk` with WD_FACTORED_ICE and WD_BFR_WALK: `walk::layer_walk` on the
/// factored coefficients, summing ∫ra dl and ∫rb dl over the layers it crosses.
#[inline(always)]
#[must_use]
#[allow(clippy::too_many_arguments)]
pub fn layer_walk<P: Poly>(m: &Medium, slice: u32, zp: f32, nz: f32, sca_depth: f32, tot: f32, abs_factor: f32) -> Segment {
    let sf = m.slice_factors[slice as usize];
    let coef = |j| coefficients::<P>(m, sf, j, abs_factor);
    let Some(b) = m.bfr.as_ref() else {
        return walk::layer_walk_with::<P>(m, zp, nz, sca_depth, tot, coef, |_, _| {});
    };
    let (mut ra, mut rb) = (0.0f32, 0.0f32);
    let seg = walk::layer_walk_with::<P>(m, zp, nz, sca_depth, tot, coef, |j, l| {
        ra += l * b.ra[j];
        rb += l * b.rb[j];
    });
    let ra = ra.max(0.0);
    // rb per layer = ra·c when icemodel.dat's rb column is one c (WD_BFR_RB_CONST).
    let rb = b.rb_column_const.map_or(rb.max(0.0), |c| c * ra);
    Segment {
        bfr: Some((ra, rb)),
        ..seg
    }
}

/// The kernel's `layer_depths` with WD_FACTORED_ICE (`propagate::layer_depths` on the factored
/// coefficients).
#[inline(always)]
#[must_use]
pub fn layer_depths<P: Poly>(m: &Medium, slice: u32, zp: f32, nz: f32, len: f32, abs_factor: f32) -> (f32, f32) {
    let sf = m.slice_factors[slice as usize];
    crate::propagate::layer_depths_with(m, walk::layer_of(m, zp), zp, nz, len, |j| coefficients::<P>(m, sf, j, abs_factor))
}

/// A segment's uniform from the low 23 bits of a word, 2 − [1, 2) (the kernel's `seg_uniform`
/// with WD_FAST_UNIFORM): in (0, 1].
#[inline(always)]
#[must_use]
pub fn uniform23(w: u32) -> f32 {
    2.0 - f32::from_bits(0x3f80_0000 | (w & 0x007f_ffff))
}

impl<P: Poly> Mode for Twin<P> {
    #[inline(always)]
    fn zshift(&self, m: &Medium, pos: [f32; 3]) -> f32 {
        match &self.lut {
            Some(l) => l.zshift_p::<P>(pos[0], pos[1], pos[2]),
            None => self.fast.zshift_p::<P>(m, pos),
        }
    }

    #[inline(always)]
    fn absorption_factor(&self, _m: &Medium, n: [f32; 3]) -> f32 {
        self.fast.absorption_factor_p::<P>(n)
    }

    #[inline(always)]
    fn walk(&self, m: &Medium, slice: u32, zp: f32, nz: f32, sca_depth: f32, tot: f32, abs_factor: f32) -> Segment {
        layer_walk::<P>(m, slice, zp, nz, sca_depth, tot, abs_factor)
    }

    #[inline(always)]
    fn advance(&self, pos: [f32; 3], dir: [f32; 3], len: f32) -> [f32; 3] {
        [
            P::gmad(len, dir[0], pos[0]),
            P::gmad(len, dir[1], pos[1]),
            P::gmad(len, dir[2], pos[2]),
        ]
    }

    #[inline(always)]
    fn first_hit(&self, doms: &DomIndex, r: [f32; 3], n: [f32; 3], len: f32, skip: Option<u32>, own: Option<u32>) -> Option<Collision> {
        self.fast.first_hit_p::<P>(doms, r, n, len, skip, own)
    }

    #[inline(always)]
    fn hole_span(&self, doms: &DomIndex, r: [f32; 3], n: [f32; 3], len: f32) -> Option<(f32, f32)> {
        doms.hole_span_p::<P>(r, n, len)
    }

    #[inline(always)]
    fn depth(&self, u: f32) -> f32 {
        Fast::depth_p::<P>(u)
    }

    #[inline(always)]
    fn bfr_integrals(&self, b: &Birefringence, m: &Medium, zp: f32, nz: f32, len: f32) -> (f32, f32) {
        self.fast.bfr_integrals(b, m, zp, nz, len)
    }

    #[inline(always)]
    fn deflect(&self, b: &Birefringence, n: [f32; 3], len: f32, ra: f32, rb: f32, u: [f32; 4]) -> ([f32; 3], [f32; 3]) {
        self.fast.deflect_p::<P>(b, n, len, ra, rb, u)
    }

    #[inline(always)]
    fn scatter_bulk(&self, _m: &Medium, n: [f32; 3], u1: f32, u2: f32, u3: f32) -> [f32; 3] {
        self.fast.scatter_bulk_p::<P>(n, u1, u2, u3)
    }

    /// The kernel's hole-ice scattering in the twin's arithmetic: simplified Liu's power from
    /// [`math`] (x¹ kept as x, as the kernel's `fast_powf`), the fast mode's rotation.
    #[inline(always)]
    fn scatter_hole(&self, h: &crate::hole::HoleParams, n: [f32; 3], u1: f32, u2: f32, u3: f32) -> [f32; 3] {
        let c = if u1 <= h.f_sl {
            let y = (1.0 - h.g) / (1.0 + h.g);
            (2.0 * powf::<P>(u2, y) - 1.0).clamp(-1.0, 1.0)
        } else {
            crate::scatter::henyey_greenstein(h.g, u2)
        };
        let s = (1.0 - c * c).max(0.0).sqrt();
        super::scatter::rotate_p::<P>(n, c, s, u3)
    }

    #[inline(always)]
    fn uniform(&self, w: u32) -> f32 {
        uniform23(w)
    }

    #[inline(always)]
    fn depths(&self, m: &Medium, slice: u32, zp: f32, nz: f32, len: f32, abs_factor: f32) -> (f32, f32) {
        layer_depths::<P>(m, slice, zp, nz, len, abs_factor)
    }
}

/// The emission's draws from the photon's MWC64X stream (24-bit uniforms, the kernel's
/// `wd_uniform(MwcRng&)`), the cascade's gamma in float ([`gamma`]); polynomials rounded as `P`.
struct MwcDraws<'a, P: Poly>(&'a mut Mwc64x, std::marker::PhantomData<P>);

impl<'a, P: Poly> MwcDraws<'a, P> {
    fn new(w: &'a mut Mwc64x) -> Self {
        Self(w, std::marker::PhantomData)
    }
}

impl<P: Poly> EmitDraws for MwcDraws<'_, P> {
    #[inline(always)]
    fn uniform(&mut self) -> f32 {
        u32_to_unit_f32(self.0.next_u32())
    }

    #[inline(always)]
    fn cascade_distance(&mut self, a: f64, b: f64) -> f32 {
        gamma::<P, _>(self, a as f32) * b as f32
    }

    /// The kernel's `rotate`: the fast mode's rotation, normalised.
    #[inline(always)]
    fn rotate(&self, n: [f32; 3], cos_t: f32, sin_t: f32, u_phi: f32) -> [f32; 3] {
        super::scatter::rotate_p::<P>(n, cos_t, sin_t, u_phi)
    }

    /// The kernel's `cascade_xi` with its pow, exp and ln from [`math`].
    #[inline(always)]
    fn cascade_xi(&self, u: f32) -> f32 {
        let (a, b) = (crate::source::ANG_A as f32, crate::source::ANG_B as f32);
        let i = 1.0 - math::exp_p::<P>(-b * powf::<P>(2.0, a));
        powf::<P>(-math::ln_p::<P>(1.0 - u * i) / b, 1.0 / a).min(2.0)
    }

    /// The kernel's `sincosf(x)` under WD_TWIN_MATH: x in turns, then `math::sincos_turn`.
    #[inline(always)]
    fn sin_cos(&self, x: f32) -> (f32, f32) {
        math::sincos_turn_p::<P>(x * (std::f32::consts::FRAC_1_PI * 0.5))
    }

    /// The kernel's `wd_sincos_turn`.
    #[inline(always)]
    fn sincos_turn(&self, u: f32) -> (f32, f32) {
        math::sincos_turn_p::<P>(u)
    }

    #[inline(always)]
    fn ln(&self, x: f32) -> f32 {
        math::ln_p::<P>(x)
    }

    #[inline(always)]
    fn exp(&self, x: f32) -> f32 {
        math::exp_p::<P>(x)
    }
}

/// The kernel's `fast_powf` (x¹ = x exactly; `math::powf` otherwise).
#[inline(always)]
fn powf<P: Poly>(x: f32, y: f32) -> f32 {
    if y == 1.0 {
        x
    } else {
        math::powf_p::<P>(x, y)
    }
}

/// Gamma(`a`, 1) in float, the kernel's `gamma_fast`: Marsaglia & Tsang (ACM TOMS 26 (2000)
/// 363) with the boost G(a) = G(a + 1)·u^(1/a) for a < 1, one Box–Muller normal per trial;
/// ln, pow and cos 2πu are the fast mode's ([`math`]; the kernel's WD_TWIN_MATH and
/// `wd_cos_turn`).
fn gamma<P: Poly, R: EmitDraws>(r: &mut R, a: f32) -> f32 {
    let (mut a, mut boost) = (a, 1.0f32);
    if a < 1.0 {
        boost = powf::<P>(r.uniform(), 1.0 / a);
        a += 1.0;
    }
    let d = a - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let (u1, u2) = (r.uniform(), r.uniform());
        let x = (-2.0 * math::ln_p::<P>(u1)).sqrt() * math::sincos_turn_p::<P>(u2).1;
        let v = 1.0 + c * x;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        let u = r.uniform();
        if math::ln_p::<P>(u) < 0.5 * x * x + d - d * v + d * math::ln_p::<P>(v) {
            return d * v * boost;
        }
    }
}

/// Emit photon `id` of `src` from its MWC64X stream (seeded by the first two words of its Philox
/// stream, as the kernel's `start`) and propagate it in the twin's arithmetic.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn photon<P: Poly>(twin: &Twin<P>, m: &Medium, doms: &DomIndex, src: &Source, seed: u64, id: u64, s: u32, out: &mut Vec<RawHit>) {
    let mut words = Mwc64x::seed(&mut RandomStream::new(seed, tags::PHOTON, id));
    let mut draws = MwcDraws::<P>::new(&mut words);
    let p = emit(src, m, &mut draws);
    let killed = p.killed;
    let tot = -math::ln_p::<P>(draws.uniform());
    let sca_depth = -math::ln_p::<P>(draws.uniform());
    // A flasher photon starts on its DOM's surface: its first segment does not meet it.
    let mut st = PhotonState {
        photon: p,
        tot,
        sca_depth,
        skip: src.own_dom,
        seq: 0,
        reach: twin.fast.reach_of(p.slice),
    };
    if killed {
        return;
    }
    super::segments(twin, m, doms, src, id, s, &mut st, &mut words, out);
}

/// The photons of one chunk, in id order.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn chunk<P: Poly>(twin: &Twin<P>, m: &Medium, doms: &DomIndex, sources: &[Source], seed: u64, ids: ChunkIds<'_>, out: &mut Vec<RawHit>) {
    for (id, s) in ids {
        photon(twin, m, doms, &sources[s as usize], seed, id, s, out);
    }
}

/// [`chunk`] compiled for x86-64 with AVX2 and FMA, as the fast mode's `chunk_avx2`: a fused
/// twin's `f32::mul_add` is then one instruction, not a call to the C library's `fmaf` (which
/// made `Twin<FusedGeom>` 65 % slower than `Twin<Plain>`); the bits are [`chunk`]'s.
///
/// # Safety
/// The CPU must have AVX2 and FMA (`super::avx2_fma`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn chunk_avx2<P: Poly>(
    twin: &Twin<P>,
    m: &Medium,
    doms: &DomIndex,
    sources: &[Source],
    seed: u64,
    ids: ChunkIds<'_>,
    out: &mut Vec<RawHit>,
) {
    chunk(twin, m, doms, sources, seed, ids, out);
}

/// `fast::run` in the twin's arithmetic (the CPU side of `--precise`'s photon-by-photon check):
/// the same chunks, progress and stop requests, hits in canonical order for any thread count.
pub fn run(m: &Medium, doms: &DomIndex, sources: &[Source], seed: u64, progress: &Progress) -> Vec<RawHit> {
    run_range::<FusedGeom>(m, doms, sources, seed, 0..u64::MAX, progress)
}

/// How a twin rounds its multiply-adds: the CPU side of a kernel build (measurement only but
/// `FusedGeom`, issue #29). One place ties each [`Poly`] to its kernel switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rounding {
    /// `Twin<Plain>`: the fast mode's roundings; no switch.
    Plain,
    /// `Twin<Fused>`: the polynomials' Horner steps fused (WD_TWIN_FMA).
    Fused,
    /// `Twin<FusedGeom>`: also the per-step geometry (rotation, birefringent step, layer walk,
    /// step end) fused and its 1/√ by Newton (WD_TWIN_FMA_GEOM): what `--precise` computes.
    FusedGeom,
}

impl Rounding {
    /// The kernel switch of this rounding (`None`: the build as it is).
    #[must_use]
    pub fn switch(self) -> Option<&'static str> {
        match self {
            Self::Plain => None,
            Self::Fused => Some("WD_TWIN_FMA"),
            Self::FusedGeom => Some("WD_TWIN_FMA_GEOM"),
        }
    }

    /// The rounding of a kernel build with `defines` (WD_TWIN_FMA_GEOM implies WD_TWIN_FMA, as
    /// in propagate.cu).
    #[must_use]
    pub fn of(defines: &[String]) -> Self {
        let has = |s: Self| defines.iter().any(|d| Some(d.as_str()) == s.switch());
        if has(Self::FusedGeom) {
            Self::FusedGeom
        } else if has(Self::Fused) {
            Self::Fused
        } else {
            Self::Plain
        }
    }
}

/// [`run_range`] in the twin of rounding `r`.
pub fn run_rounded(
    r: Rounding,
    m: &Medium,
    doms: &DomIndex,
    sources: &[Source],
    seed: u64,
    ids: std::ops::Range<u64>,
    progress: &Progress,
) -> Vec<RawHit> {
    match r {
        Rounding::Plain => run_range::<Plain>(m, doms, sources, seed, ids, progress),
        Rounding::Fused => run_range::<math::Fused>(m, doms, sources, seed, ids, progress),
        Rounding::FusedGeom => run_range::<FusedGeom>(m, doms, sources, seed, ids, progress),
    }
}

/// [`run`] for the photons whose global ids lie in `ids` (one job of a split run), the
/// multiply-adds rounded as `P` says (`FusedGeom` for `--precise`; see [`Rounding`]). Chunks run
/// in their AVX2 and FMA build where the CPU has both (x86-64 without: the C library's `fmaf`,
/// correct and slow).
pub fn run_range<P: Poly>(
    m: &Medium,
    doms: &DomIndex,
    sources: &[Source],
    seed: u64,
    ids: std::ops::Range<u64>,
    progress: &Progress,
) -> Vec<RawHit> {
    run_range_with::<P>(m, doms, sources, seed, ids, progress, super::avx2_fma())
}

/// [`run_range`], the chunks in their AVX2 and FMA build if `avx2` (which the CPU must have):
/// the same bits either way.
#[allow(clippy::too_many_arguments)]
fn run_range_with<P: Poly>(
    m: &Medium,
    doms: &DomIndex,
    sources: &[Source],
    seed: u64,
    ids: std::ops::Range<u64>,
    progress: &Progress,
    avx2: bool,
) -> Vec<RawHit> {
    let twin = Twin::<P>::new(m, doms);
    #[cfg(not(target_arch = "x86_64"))]
    let _ = avx2;
    crate::propagate::run_chunks(sources, ids, progress, |ids: ChunkIds<'_>, out| {
        #[cfg(target_arch = "x86_64")]
        if avx2 {
            // SAFETY: the caller checked AVX2 and FMA (`super::avx2_fma`).
            unsafe { chunk_avx2(&twin, m, doms, sources, seed, ids, out) };
            return;
        }
        chunk(&twin, m, doms, sources, seed, ids, out);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detector::{Detector, DetectorOptions};
    use crate::test_data::data_dir;
    use std::path::Path;

    fn detector(model: &str) -> Detector {
        Detector::build(&DetectorOptions {
            ice_dir: Some(data_dir().join("ice").join(model)),
            ..Default::default()
        })
        .unwrap()
    }

    /// Each rounding is the one of a build with its switch; WD_TWIN_FMA_GEOM wins over WD_TWIN_FMA,
    /// which it implies in propagate.cu.
    #[test]
    fn rounding_of_a_build() {
        let of = |d: &[&str]| Rounding::of(&d.iter().map(|s| (*s).to_string()).collect::<Vec<_>>());
        for r in [Rounding::Plain, Rounding::Fused, Rounding::FusedGeom] {
            assert_eq!(of(&r.switch().into_iter().chain(["WD_TWIN_MATH"]).collect::<Vec<_>>()), r);
        }
        assert_eq!(of(&["WD_TWIN_FMA", "WD_TWIN_FMA_GEOM"]), Rounding::FusedGeom);
        assert_eq!(of(&["WD_TWIN_FMA_GEOMX"]), Rounding::Plain);
    }

    /// The twin's walk and depths on the factored coefficients follow the fast mode's on the
    /// (slice × layer) tables (the factoring agrees to 10⁻⁵), and the integrals the walk sums
    /// follow `walk::path_integrals` over the length it returns (spice_ftp-v3m: birefringence).
    #[test]
    fn twin_walk_follows_the_table_walk() {
        let det = detector("spice_ftp-v3m");
        let (m, b) = (&det.medium, det.medium.bfr.as_ref().unwrap());
        let mut r = RandomStream::new(71, 0, 0);
        let mut summed = 0;
        let (ra_max, rb_max) = (
            b.ra.iter().fold(0.0f32, |a, &x| a.max(x)),
            b.rb.iter().fold(0.0f32, |a, &x| a.max(x)),
        );
        for _ in 0..200_000 {
            let zp = m.hmin + (m.n_layers as f32 + 4.0) * m.dh * r.uniform() - 2.0 * m.dh;
            let nz = 2.0 * r.uniform() - 1.0;
            let (s, t, slice) = (r.exponential(), r.exponential(), r.next_u32() % 512);
            let (tw, f) = (
                layer_walk::<Plain>(m, slice, zp, nz, s, t, 1.1),
                walk::layer_walk(m, slice, zp, nz, s, t, 1.1),
            );
            assert!(
                (tw.length - f.length).abs() <= 1e-4 * f.length.max(1.0) && (tw.tot - f.tot).abs() <= 1e-4,
                "{tw:?} {f:?}"
            );
            let (ra, rb) = tw.bfr.expect("integrals summed in a birefringent model");
            let (ea, eb) = walk::path_integrals(b, m.hmin, m.dh, zp, nz, tw.length);
            // Both place the layer boundaries from f32 heights above hmin (up to 1.8 km: 1.2·10⁻⁴ m
            // apart in float), each a few of those off: 5·10⁻⁴ m vertically, 5·10⁻⁴ m / |nz| along
            // the path, at the layers' largest ra, rb per metre.
            let moved = 5e-4 / nz.abs().max(1e-6);
            assert!(
                (ra - ea).abs() <= 1e-4 * ea.max(1.0) + moved * ra_max && (rb - eb).abs() <= 1e-4 * eb.max(1.0) + moved * rb_max,
                "{:?} vs {:?} ({zp} {nz} {})",
                (ra, rb),
                (ea, eb),
                tw.length
            );
            summed += 1;
            let len = 50.0 * r.uniform();
            let (d, e) = (
                layer_depths::<Plain>(m, slice, zp, nz, len, 1.1),
                crate::propagate::layer_depths(m, slice, zp, nz, len, 1.1),
            );
            assert!(
                (d.0 - e.0).abs() <= 1e-4 * e.0.max(1.0) && (d.1 - e.1).abs() <= 1e-4 * e.1.max(1.0),
                "{d:?} {e:?}"
            );
        }
        assert_eq!(summed, 200_000);
        // Without birefringence the walk sums nothing.
        let det = detector("spice_3.2.1");
        assert!(layer_walk::<Plain>(&det.medium, 7, -100.0, 0.3, 1.0, 1.0, 1.0).bfr.is_none());
    }

    /// The 1-D tilt's resampled table within 12 cm of the exact model over the detector (its
    /// documented resampling error: up to 10 cm between the model's distances).
    #[test]
    fn tilt_table_close_to_the_model() {
        let det = detector("spice_3.2.1");
        let Tilt::OneD(t) = &det.medium.tilt else {
            panic!("spice_3.2.1 has a 1-D tilt")
        };
        let l = TiltLut::new(t).unwrap();
        let mut r = RandomStream::new(72, 0, 0);
        let mut worst = 0.0f64;
        for _ in 0..100_000 {
            let (x, y) = (1200.0 * r.uniform() - 600.0, 1200.0 * r.uniform() - 600.0);
            let z = (crate::ice::ZOFF - 1400.0) as f32 - 1100.0 * r.uniform();
            let e = t.zshift(f64::from(x), f64::from(y), f64::from(z));
            worst = worst.max((f64::from(l.zshift(x, y, z)) - e).abs());
        }
        eprintln!("tilt table: worst error {worst:.3} m");
        assert!(worst < 0.12, "{worst}");
    }

    /// The float gamma draw: mean and variance a (Gamma(a, 1)), for a below and above 1, within
    /// 4 standard errors of 200 000 draws.
    #[test]
    fn float_gamma_moments() {
        for (k, a) in [0.6f32, 2.0, 9.0].into_iter().enumerate() {
            let mut w = Mwc64x::seed(&mut RandomStream::new(73, 0, k as u64));
            let mut d = MwcDraws::<Plain>::new(&mut w);
            let n = 200_000;
            let xs: Vec<f64> = (0..n).map(|_| f64::from(gamma::<Plain, _>(&mut d, a))).collect();
            let mean = xs.iter().sum::<f64>() / n as f64;
            let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            let a = f64::from(a);
            // Var of the mean a/n; of the sample variance (6a + 2a²·... ) ≈ (μ4 − σ⁴)/n with μ4 = 3a² + 6a.
            let (se_mean, se_var) = ((a / n as f64).sqrt(), ((2.0 * a * a + 6.0 * a) / n as f64).sqrt());
            assert!((mean - a).abs() < 4.0 * se_mean, "a {a}: mean {mean}");
            assert!((var - a).abs() < 4.0 * se_var, "a {a}: variance {var}");
        }
    }

    /// Measurement (issue #29; `--ignored`, minutes): how far rounding the polynomials' Horner
    /// steps once instead of twice (`Twin<Fused>` against `Twin<Plain>`, both on the CPU), and
    /// the per-step geometry as well (`Twin<FusedGeom>`), moves photons, by gpu-check's photon-by-photon criterion (`photon_agreement`: the same DOMs,
    /// times within 0.01 ns), on gpu-check's cases: the 10 TeV cascade of `photon-twin` (seed
    /// 20261122) in the three models, and the lab-profile LED ring with its cable in spice_ftp-v3m
    /// of `photon-flasher` (1e8 LED photons, seed 20261125). A last-bit change of the same kind
    /// as the GPU's contraction, with no GPU in the loop.
    #[test]
    #[ignore]
    fn measure_fused_against_plain() {
        use crate::f2k::parse_f2k;
        use crate::gpu_check::{flasher_cases, photon_agreement};
        use crate::source::realise;
        let report = |label: &str, det: &Detector, sources: &[Source], seed: u64| {
            let plain = run(&det.medium, &det.index, sources, seed, &Progress::hidden());
            for r in [Rounding::Fused, Rounding::FusedGeom] {
                let fused = run_rounded(r, &det.medium, &det.index, sources, seed, 0..u64::MAX, &Progress::hidden());
                let (same, total) = photon_agreement(&plain, &fused);
                eprintln!(
                    "{label}, {r:?} vs Plain: {same} of {total} photons with hits the same ({:.3} %); raw hits {} vs {}",
                    100.0 * same as f64 / total.max(1) as f64,
                    fused.len(),
                    plain.len(),
                );
            }
        };
        let input = data_dir().join("reference/ppc_h100_2026/input_cascade_10TeV.f2k");
        let text = std::fs::read_to_string(&input).unwrap();
        for model in ["spice_3.2.1", "spice_ftp-v3m", "spice_bfr-v2"] {
            let det = detector(model);
            let specs = parse_f2k(&input, &text, &det.yield_).unwrap().specs;
            report(&format!("cascade 10 TeV, {model}"), &det, &realise(&specs, 20261122), 20261122);
        }
        for (label, model, string, opts) in flasher_cases().into_iter().filter(|c| c.0.contains("cable")) {
            let det = detector(model);
            let specs = crate::f2k::flasher(&det, string, 20, 1e8, &opts).unwrap();
            report(
                &format!("flasher {string}-20 in {model} ({label})"),
                &det,
                &realise(&specs, 20261125),
                20261125,
            );
        }
    }

    /// `--precise` gives the same hits with and without its AVX2 and FMA build (the C library's
    /// `fmaf` rounds once too): 1 TeV cascade in spice_ftp-v3m (birefringence, every fused site).
    #[test]
    fn fused_twin_is_the_same_without_the_fma_instruction() {
        use crate::f2k::parse_f2k;
        use crate::source::realise;
        assert!(
            super::super::avx2_fma() || !cfg!(target_arch = "x86_64"),
            "no AVX2 and FMA here: nothing to compare"
        );
        let det = detector("spice_ftp-v3m");
        let text = "TR 1 0 e 0 0 -400 180 0 0 1000 0\n";
        let sources = realise(&parse_f2k(Path::new("c.f2k"), text, &det.yield_).unwrap().specs, 31);
        let (m, d, hidden) = (&det.medium, &det.index, Progress::hidden());
        let with = run_range_with::<FusedGeom>(m, d, &sources, 31, 0..u64::MAX, &hidden, true);
        let without = run_range_with::<FusedGeom>(m, d, &sources, 31, 0..u64::MAX, &hidden, false);
        assert!(with.len() > 500, "{} hits", with.len());
        assert!(
            with == without,
            "{} hits with FMA, {} without, not the same",
            with.len(),
            without.len()
        );
    }

    /// What each rounding costs the CPU twin (measurement only): wall time of the 10 TeV
    /// cascade in spice_ftp-v3m per rounding.
    #[test]
    #[ignore]
    fn measure_rounding_cost() {
        use crate::f2k::parse_f2k;
        use crate::source::realise;
        let input = data_dir().join("reference/ppc_h100_2026/input_cascade_10TeV.f2k");
        let text = std::fs::read_to_string(&input).unwrap();
        let det = detector("spice_ftp-v3m");
        let sources = realise(&parse_f2k(&input, &text, &det.yield_).unwrap().specs, 20261122);
        for r in [Rounding::Plain, Rounding::Fused, Rounding::FusedGeom, Rounding::Plain] {
            let t = std::time::Instant::now();
            let hits = run_rounded(r, &det.medium, &det.index, &sources, 20261122, 0..u64::MAX, &Progress::hidden());
            eprintln!("{r:?}: {} hits in {:.2} s", hits.len(), t.elapsed().as_secs_f64());
        }
    }

    /// The twin's photons against the fast mode's (other random streams, the same physics to the
    /// tables' resampling): the fraction of photons with a hit agrees within 4 standard errors of
    /// the difference, in a model with and one without birefringence; and a run is the same for
    /// any thread count.
    #[test]
    fn twin_runs_like_the_fast_mode() {
        use crate::f2k::parse_f2k;
        use crate::source::realise;
        for model in ["spice_3.2.1", "spice_ftp-v3m"] {
            let det = detector(model);
            let text = "EM 1 1 1970 0 0 0\nTR 1 0 e 0 0 -400 180 0 0 3000 0\nEE\n";
            let specs = parse_f2k(std::path::Path::new("cascade.f2k"), text, &det.yield_).unwrap().specs;
            let sources = realise(&specs, 7);
            let n = crate::source::total_photons(&sources).unwrap() as f64;
            let with_hits = |hits: &[RawHit]| hits.iter().map(|h| h.photon).collect::<std::collections::BTreeSet<_>>().len() as f64;
            let twin = run(&det.medium, &det.index, &sources, 7, &Progress::hidden());
            let fast = super::super::run(&det.medium, &det.index, &sources, 7, &Progress::hidden());
            let (a, b) = (with_hits(&twin) / n, with_hits(&fast) / n);
            let se = ((a * (1.0 - a) + b * (1.0 - b)) / n).sqrt();
            eprintln!("{model}: {n} photons; with hits twin {a:.5}, fast {b:.5} ({:.1} σ)", (a - b) / se);
            assert!(a > 0.0 && (a - b).abs() < 4.0 * se, "{model}: twin {a} fast {b} (se {se})");
            let one = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .unwrap()
                .install(|| run(&det.medium, &det.index, &sources, 7, &Progress::hidden()));
            assert_eq!(one, twin, "{model}: one thread");
        }
    }
}
