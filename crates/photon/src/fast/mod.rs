//! The CPU fast mode (issue #34): the same segment loop as the precise path
//! (`propagate::step_with`), with the arithmetic of the GPU's fast mode (gpu.rs `FAST_ONLY`) and
//! the CPU's own shortcuts. Validated against PPC's reference runs statistically, as the GPU's
//! fast mode is (tests/ppc_reference.rs, docs/validation/photon.md); `--precise` keeps the
//! precise path (`propagate::run`), which the GPU's precise mode is checked against photon by
//! photon.
//!
//! What differs from the precise path, each with its precise twin:
//! * tilt ([`tilt`]): f32 tables indexed directly (2-D: the GPU's WD_TILT2_LATTICE table with
//!   its constants computed once) instead of f64 binary searches and per-call cos/sin;
//! * absorption anisotropy: the old model's power skipped when its exponent (cfg line 16) is 1,
//!   as in every SPICE 3.x model (x¹ = x exactly), else [`math::powf`];
//! * scattering ([`scatter`]): g's constants once (WD_FAST_PHASE), simplified Liu's power and
//!   the azimuth's sin/cos from [`math`], no anisotropy frame for k = (1, 1, 1) (WD_ISO_SCATTER);
//! * birefringence ([`birefringence`]): widths from the 513-entry table (WD_BFR_TABLE), no
//!   renormalisation (WD_FAST_BFR), Box–Muller from [`math`];
//! * random words ([`rng`]): after the emission (Philox, as precise), each photon's segments
//!   draw from its own MWC64X stream seeded by its Philox stream (WD_FAST_RNG); optical depths
//!   −ln u by [`math::ln`].
//!
//! * the layer walk ([`walk`]) and the collision search ([`collision`]): the same arithmetic and
//!   results, without libm's floor/round calls, with a compact clearance grid.
//!
//! Emission and hole ice are the precise code. On x86-64 CPUs with AVX2 and FMA the loop is
//! compiled for them ([`run`]; the same bits), and in media without hole ice the photons of a
//! chunk are stepped eight at a time ([`lanes`]: SIMD across photons, the same bits;
//! `WARPDRIVE_NO_LANES=1` runs the one-photon loop).

pub mod birefringence;
pub mod collision;
#[cfg(target_arch = "x86_64")]
pub mod lanes;
pub mod math;
pub mod rng;
pub mod scatter;
pub mod tilt;
pub mod twin;
pub mod walk;

use warpdrive_core::progress::Progress;
use warpdrive_core::RandomStream;

use crate::collision::{Collision, DomIndex};
use crate::medium::Medium;
use crate::propagate::{step_with, ChunkIds, Mode, PhotonState, RawHit, Segment, SegmentEnd, SegmentWords, MAX_SEGMENTS};
use crate::source::{emit, tags, Source};
use birefringence::FastBfr;
use collision::FastGrid;
use math::{Plain, Poly};
use rng::Mwc64x;
use scatter::Phase;
use tilt::FastTilt;

/// The fast mode's tables for one medium (built in microseconds to milliseconds).
#[derive(Clone, Debug)]
pub struct Fast {
    tilt: FastTilt,
    /// The absorption anisotropy's constants: k² and 1/k², B2 = Σ 1/k², the old model's
    /// exponent, the new model's k.
    abs: Option<AbsAniso>,
    phase: Phase,
    bfr: Option<FastBfr>,
    grid: Option<FastGrid>,
    /// The out-of-reach test's bound per slice (`reach::table`; empty: off).
    reach: Vec<f32>,
}

#[derive(Clone, Copy, Debug)]
struct AbsAniso {
    azx: f32,
    azy: f32,
    l: [f32; 3],
    il: [f32; 3],
    fr: f32,
    new_abs: Option<[f32; 3]>,
}

impl Fast {
    #[must_use]
    pub fn new(m: &Medium, doms: &DomIndex) -> Self {
        Self {
            tilt: FastTilt::new(&m.tilt),
            abs: m.anisotropy.as_ref().map(|a| {
                let (l, il) = a.squares();
                AbsAniso {
                    azx: a.azx,
                    azy: a.azy,
                    l,
                    il,
                    fr: a.old_abs_scale,
                    new_abs: a.new_abs,
                }
            }),
            phase: Phase::new(m.g, m.f_sl, m.anisotropy.as_ref()),
            bfr: m.bfr.as_ref().map(FastBfr::new),
            grid: FastGrid::new(doms),
            reach: crate::reach::table(m),
        }
    }

    /// The out-of-reach bound of slice `slice` (`PhotonState::reach`).
    #[inline(always)]
    #[must_use]
    pub fn reach_of(&self, slice: u32) -> f32 {
        self.reach.get(slice as usize).copied().unwrap_or(f32::INFINITY)
    }
}

impl Mode for Fast {
    #[inline(always)]
    fn zshift(&self, m: &Medium, pos: [f32; 3]) -> f32 {
        self.zshift_p::<Plain>(m, pos)
    }

    /// `AnisotropyParams::absorption_factor` with its constants precomputed: the same
    /// operations, the power x^fr skipped for fr = 1 (exact) and approximated otherwise.
    #[inline(always)]
    fn absorption_factor(&self, _m: &Medium, n: [f32; 3]) -> f32 {
        self.absorption_factor_p::<Plain>(n)
    }

    #[inline(always)]
    fn walk(&self, m: &Medium, slice: u32, zp: f32, nz: f32, sca_depth: f32, tot: f32, abs_factor: f32) -> Segment {
        walk::layer_walk(m, slice, zp, nz, sca_depth, tot, abs_factor)
    }

    #[inline(always)]
    fn first_hit(&self, doms: &DomIndex, r: [f32; 3], n: [f32; 3], len: f32, skip: Option<u32>, own: Option<u32>) -> Option<Collision> {
        self.first_hit_p::<Plain>(doms, r, n, len, skip, own)
    }

    #[inline(always)]
    fn depth(&self, u: f32) -> f32 {
        Self::depth_p::<Plain>(u)
    }

    #[inline(always)]
    fn bfr_integrals(&self, b: &crate::birefringence::Birefringence, m: &Medium, zp: f32, nz: f32, len: f32) -> (f32, f32) {
        walk::path_integrals(b, m.hmin, m.dh, zp, nz, len)
    }

    #[inline(always)]
    fn deflect(
        &self,
        b: &crate::birefringence::Birefringence,
        n: [f32; 3],
        len: f32,
        ra: f32,
        rb: f32,
        u: [f32; 4],
    ) -> ([f32; 3], [f32; 3]) {
        self.deflect_p::<Plain>(b, n, len, ra, rb, u)
    }

    #[inline(always)]
    fn scatter_bulk(&self, _m: &Medium, n: [f32; 3], u1: f32, u2: f32, u3: f32) -> [f32; 3] {
        self.scatter_bulk_p::<Plain>(n, u1, u2, u3)
    }
}

/// The parts of the fast mode that call the polynomials of [`math`], with their Horner steps
/// rounded as `P` says (the precise twin's `Twin<Fused>` uses [`math::Fused`]).
impl Fast {
    #[inline(always)]
    pub(crate) fn absorption_factor_p<P: Poly>(&self, n: [f32; 3]) -> f32 {
        let Some(a) = &self.abs else { return 1.0 };
        let m = self::scatter::to_frame_p::<P>(a.azx, a.azy, n);
        let mut nr = 1.0;
        if a.fr != 0.0 {
            let s = [m[0] * m[0], m[1] * m[1], m[2] * m[2]];
            let b2 = a.il[0] + a.il[1] + a.il[2];
            let nb = P::gmad(s[2], a.il[2], P::gmad(s[1], a.il[1], s[0] * a.il[0]));
            let an = P::gmad(s[2], a.l[2], P::gmad(s[1], a.l[1], s[0] * a.l[0]));
            let x = (b2 - nb) * an / 2.0;
            nr = if a.fr == 1.0 { x } else { math::powf_p::<P>(x, a.fr) };
        }
        if let Some(k) = a.new_abs {
            let v = [k[0] * m[0], k[1] * m[1], k[2] * m[2]];
            nr = P::div_norm(nr, v);
        }
        nr
    }

    /// The tilt's depth shift with the 2-D lattice's sums rounded as `P` says.
    #[inline(always)]
    pub(crate) fn zshift_p<P: Poly>(&self, m: &Medium, pos: [f32; 3]) -> f32 {
        self.tilt.zshift_p::<P>(pos[0], pos[1], pos[2], &m.tilt)
    }

    /// The collision search with its tests' sums rounded as `P` says.
    #[inline(always)]
    pub(crate) fn first_hit_p<P: Poly>(
        &self,
        doms: &DomIndex,
        r: [f32; 3],
        n: [f32; 3],
        len: f32,
        skip: Option<u32>,
        own: Option<u32>,
    ) -> Option<Collision> {
        match &self.grid {
            Some(g) => collision::first_hit_p::<P>(doms, g, r, n, len, skip, own),
            None => doms.first_hit_p::<P>(r, n, len, skip, own),
        }
    }

    #[inline(always)]
    pub(crate) fn depth_p<P: Poly>(u: f32) -> f32 {
        -math::ln_p::<P>(u)
    }

    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn deflect_p<P: Poly>(
        &self,
        b: &crate::birefringence::Birefringence,
        n: [f32; 3],
        len: f32,
        ra: f32,
        rb: f32,
        u: [f32; 4],
    ) -> ([f32; 3], [f32; 3]) {
        match &self.bfr {
            Some(f) => f.deflect_p::<P>(n, len, ra, rb, u),
            None => b.deflect(n, len, ra, rb, u),
        }
    }

    #[inline(always)]
    pub(crate) fn scatter_bulk_p<P: Poly>(&self, n: [f32; 3], u1: f32, u2: f32, u3: f32) -> [f32; 3] {
        self.phase.scatter_p::<P>(n, self.phase.cosine_p::<P>(u1, u2), u3)
    }
}

impl SegmentWords for Mwc64x {
    #[inline(always)]
    fn block4(&mut self) -> [u32; 4] {
        Mwc64x::block4(self)
    }
}

/// Emit photon `id` of source `src` from its Philox stream (as the precise path) and propagate
/// it, its segments drawing from an MWC64X stream seeded by that stream; hits appended to `out`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn photon(fast: &Fast, m: &Medium, doms: &DomIndex, src: &Source, seed: u64, id: u64, s: u32, out: &mut Vec<RawHit>) {
    let mut rng = RandomStream::new(seed, tags::PHOTON, id);
    let p = emit(src, m, &mut rng);
    let killed = p.killed;
    let mut st = PhotonState::start(p, &mut rng);
    st.reach = fast.reach_of(st.photon.slice);
    // A flasher photon starts on its DOM's surface: its first segment does not meet it.
    st.skip = src.own_dom;
    if killed {
        return; // absorbed where it was made (its DOM's band, harness or cable)
    }
    let mut words = Mwc64x::seed(&mut rng);
    segments(fast, m, doms, src, id, s, &mut st, &mut words, out);
}

/// Step photon `id`'s segments in the arithmetic of `mode` until it ends (absorbed, killed, or
/// `MAX_SEGMENTS`), its words from `words`; hits appended to `out` (the fast mode's and the
/// precise twin's loop).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn segments<M: Mode>(
    mode: &M,
    m: &Medium,
    doms: &DomIndex,
    src: &Source,
    id: u64,
    s: u32,
    st: &mut PhotonState,
    words: &mut Mwc64x,
    out: &mut Vec<RawHit>,
) {
    for _ in 0..MAX_SEGMENTS {
        match step_with(mode, m, doms, src, id, s, st, words, out) {
            SegmentEnd::Absorbed | SegmentEnd::Killed => return,
            SegmentEnd::Scattered { .. } | SegmentEnd::Cut | SegmentEnd::AfterHit => {}
        }
    }
}

/// The photons of one chunk, in id order.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn chunk(fast: &Fast, m: &Medium, doms: &DomIndex, sources: &[Source], seed: u64, ids: ChunkIds<'_>, out: &mut Vec<RawHit>) {
    for (id, s) in ids {
        photon(fast, m, doms, &sources[s as usize], seed, id, s, out);
    }
}

/// [`chunk`] compiled for x86-64 with AVX2 and FMA (VEX three-operand forms, `roundss`; no
/// fused multiply-adds: Rust does not contract a·b + c, so the bits are those of [`chunk`]).
///
/// # Safety
/// The CPU must have AVX2 and FMA ([`run`] checks).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn chunk_avx2(fast: &Fast, m: &Medium, doms: &DomIndex, sources: &[Source], seed: u64, ids: ChunkIds<'_>, out: &mut Vec<RawHit>) {
    chunk(fast, m, doms, sources, seed, ids, out);
}

/// [`lanes::chunk`] compiled for x86-64 with AVX2 and FMA (8-float lanes; no contraction, so
/// the bits of [`chunk`]).
///
/// # Safety
/// The CPU must have AVX2 and FMA ([`run`] checks).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn chunk_lanes_avx2(
    fast: &Fast,
    m: &Medium,
    doms: &DomIndex,
    sources: &[Source],
    seed: u64,
    ids: ChunkIds<'_>,
    out: &mut Vec<RawHit>,
) {
    lanes::chunk(fast, m, doms, sources, seed, ids, out);
}

/// Whether the chunk loops run their builds for AVX2 and FMA (`chunk_avx2`, and the precise
/// twin's `twin::chunk_avx2`): the CPU has both and `WARPDRIVE_NO_AVX2` is unset.
pub(crate) fn avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::env::var_os("WARPDRIVE_NO_AVX2").is_none() && is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// `propagate::run` in the fast mode: the same chunks, progress and stop requests; hits in
/// canonical order, identical for any number of threads (and on CPUs with or without AVX2).
pub fn run(m: &Medium, doms: &DomIndex, sources: &[Source], seed: u64, progress: &Progress) -> Vec<RawHit> {
    run_range(m, doms, sources, seed, 0..u64::MAX, progress)
}

/// [`run`] for the photons whose global ids lie in `ids` (one job of a split run).
pub fn run_range(
    m: &Medium,
    doms: &DomIndex,
    sources: &[Source],
    seed: u64,
    ids: std::ops::Range<u64>,
    progress: &Progress,
) -> Vec<RawHit> {
    run_range_reach(m, doms, sources, seed, ids, progress, true)
}

/// [`run_range`] with the out-of-reach test on or off (`reach.rs`: the same hits either way).
pub(crate) fn run_range_reach(
    m: &Medium,
    doms: &DomIndex,
    sources: &[Source],
    seed: u64,
    ids: std::ops::Range<u64>,
    progress: &Progress,
    reach: bool,
) -> Vec<RawHit> {
    let mut fast = Fast::new(m, doms);
    if !reach {
        fast.reach.clear();
    }
    #[cfg(target_arch = "x86_64")]
    let avx2 = avx2_fma();
    #[cfg(target_arch = "x86_64")]
    let lanes = avx2 && m.hole.is_none() && std::env::var_os("WARPDRIVE_NO_LANES").is_none();
    crate::propagate::run_chunks(sources, ids, progress, |ids, out| {
        #[cfg(target_arch = "x86_64")]
        if lanes {
            // SAFETY: AVX2 and FMA detected above.
            unsafe { chunk_lanes_avx2(&fast, m, doms, sources, seed, ids, out) };
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if avx2 {
            // SAFETY: AVX2 and FMA detected above.
            unsafe { chunk_avx2(&fast, m, doms, sources, seed, ids, out) };
            return;
        }
        chunk(&fast, m, doms, sources, seed, ids, out);
    })
}
