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
//! Emission and hole ice are the precise code. Photons are stepped [`LANES`] at a time per
//! thread ([`run`]).

pub mod birefringence;
pub mod collision;
pub mod math;
pub mod rng;
pub mod scatter;
pub mod tilt;
pub mod walk;

use warpdrive_core::progress::Progress;
use warpdrive_core::RandomStream;

use crate::collision::{Collision, DomIndex};
use crate::medium::Medium;
use crate::propagate::{step_with, Mode, PhotonState, RawHit, Segment, SegmentEnd, SegmentWords, MAX_SEGMENTS};
use crate::source::{emit, tags, Source};
use birefringence::FastBfr;
use collision::FastGrid;
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
        }
    }
}

impl Mode for Fast {
    #[inline(always)]
    fn zshift(&self, m: &Medium, pos: [f32; 3]) -> f32 {
        self.tilt.zshift(pos[0], pos[1], pos[2], &m.tilt)
    }

    /// `AnisotropyParams::absorption_factor` with its constants precomputed: the same
    /// operations, the power x^fr skipped for fr = 1 (exact) and approximated otherwise.
    #[inline(always)]
    fn absorption_factor(&self, _m: &Medium, n: [f32; 3]) -> f32 {
        let Some(a) = &self.abs else { return 1.0 };
        let m = [a.azx * n[0] + a.azy * n[1], -a.azy * n[0] + a.azx * n[1], n[2]];
        let mut nr = 1.0;
        if a.fr != 0.0 {
            let s = [m[0] * m[0], m[1] * m[1], m[2] * m[2]];
            let b2 = a.il[0] + a.il[1] + a.il[2];
            let nb = s[0] * a.il[0] + s[1] * a.il[1] + s[2] * a.il[2];
            let an = s[0] * a.l[0] + s[1] * a.l[1] + s[2] * a.l[2];
            let x = (b2 - nb) * an / 2.0;
            nr = if a.fr == 1.0 { x } else { math::powf(x, a.fr) };
        }
        if let Some(k) = a.new_abs {
            let v = [k[0] * m[0], k[1] * m[1], k[2] * m[2]];
            nr /= (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        }
        nr
    }

    #[inline(always)]
    fn walk(&self, m: &Medium, slice: u32, zp: f32, nz: f32, sca_depth: f32, tot: f32, abs_factor: f32) -> Segment {
        walk::layer_walk(m, slice, zp, nz, sca_depth, tot, abs_factor)
    }

    #[inline(always)]
    fn first_hit(&self, doms: &DomIndex, r: [f32; 3], n: [f32; 3], len: f32, skip: Option<u32>, own: Option<u32>) -> Option<Collision> {
        match &self.grid {
            Some(g) => collision::first_hit(doms, g, r, n, len, skip, own),
            None => doms.first_hit(r, n, len, skip, own),
        }
    }

    #[inline(always)]
    fn depth(&self, u: f32) -> f32 {
        -math::ln(u)
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
        match &self.bfr {
            Some(f) => f.deflect(n, len, ra, rb, u),
            None => b.deflect(n, len, ra, rb, u),
        }
    }

    #[inline(always)]
    fn scatter_bulk(&self, _m: &Medium, n: [f32; 3], u1: f32, u2: f32, u3: f32) -> [f32; 3] {
        self.phase.scatter(n, self.phase.cosine(u1, u2), u3)
    }
}

impl SegmentWords for Mwc64x {
    #[inline(always)]
    fn block4(&mut self) -> [u32; 4] {
        Mwc64x::block4(self)
    }
}

/// A photon in flight in one of a chunk's lanes.
struct Lane {
    st: PhotonState,
    words: Mwc64x,
    id: u64,
    source: u32,
}

/// Emit photon `id` of source `s` from its Philox stream (as the precise path), seed its segment
/// words; `None` for a flasher photon absorbed where it was made.
fn start(m: &Medium, src: &Source, seed: u64, id: u64, s: u32) -> Option<Lane> {
    let mut rng = RandomStream::new(seed, tags::PHOTON, id);
    let p = emit(src, m, &mut rng);
    let killed = p.killed;
    let mut st = PhotonState::start(p, &mut rng);
    // A flasher photon starts on its DOM's surface: its first segment does not meet it.
    st.skip = src.own_dom;
    if killed {
        return None;
    }
    let words = Mwc64x::seed(&mut rng);
    Some(Lane { st, words, id, source: s })
}

/// Photons stepped in turn by one thread (see [`run`]).
pub const LANES: usize = 4;

/// `propagate::run` in the fast mode: the same chunks, progress and stop requests; hits in
/// canonical order, identical for any number of threads.
///
/// Within a chunk, [`LANES`] photons are in flight at once and stepped in turn, a segment each:
/// a photon's segments form one chain of dependent arithmetic (each needs the previous
/// direction and position), so consecutive segments of different photons let the core overlap
/// their latencies. A lane whose photon ends takes the chunk's next photon. Every photon still
/// draws only from its own streams, so its hits do not depend on the interleaving; the chunk's
/// hits are sorted back into canonical order (photon id, hit ordinal).
pub fn run(m: &Medium, doms: &DomIndex, sources: &[Source], seed: u64, progress: &Progress) -> Vec<RawHit> {
    let fast = Fast::new(m, doms);
    let lanes: usize = std::env::var("WARPDRIVE_FAST_LANES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(LANES);
    crate::propagate::run_chunks(sources, progress, |mut ids, out| {
        let first = out.len();
        let next = |ids: &mut crate::propagate::ChunkIds<'_>| {
            for (id, s) in ids.by_ref() {
                if let Some(l) = start(m, &sources[s as usize], seed, id, s) {
                    return Some(l);
                }
            }
            None
        };
        let mut lane: Vec<Lane> = (0..lanes).map_while(|_| next(&mut ids)).collect();
        let mut segs = vec![0u32; lane.len()];
        while !lane.is_empty() {
            let mut k = 0;
            while k < lane.len() {
                let l = &mut lane[k];
                let src = &sources[l.source as usize];
                let end = step_with(&fast, m, doms, src, l.id, l.source, &mut l.st, &mut l.words, out);
                segs[k] += 1;
                let done = matches!(end, SegmentEnd::Absorbed | SegmentEnd::Killed) || segs[k] >= MAX_SEGMENTS;
                if done {
                    segs[k] = 0;
                    if let Some(n) = next(&mut ids) {
                        lane[k] = n;
                    } else {
                        lane.swap_remove(k);
                        segs.swap_remove(k);
                        continue;
                    }
                }
                k += 1;
            }
        }
        out[first..].sort_unstable_by_key(|h| (h.photon, h.seq));
    })
}
