//! The propagation loop (spec §3.5) and the multi-threaded run over all photons.
//!
//! One photon: absorption budget TOT = −ln u; per segment a scattering depth SCA = −ln u; the
//! layer walk converts the optical depths into a geometric length through the tilted layers;
//! the segment is checked for DOM collisions (pancake; continue after hit: every DOM along it is
//! hit in order, the one hit last skipped until the photon next scatters, as PPC's `old`); then the
//! photon scatters. A flasher's own DOM is not oversized and absorbs the photons that come back to
//! it. Every draw comes from the photon's own Philox stream, so the result of a photon
//! does not depend on which thread runs it. Stream layout: the emission's draws, TOT and the
//! first SCA in order; then per segment one whole Philox block for the birefringent deflection
//! (only with birefringence) and one per scattering (its three uniforms and the next segment's
//! SCA), the rest of the emission's last block left unused. With hole ice (`hole.rs`) a segment
//! may end cut at a column's edge: it draws no scattering block (the depths left carry over).

use rayon::prelude::*;
use std::ops::Range;
use warpdrive_core::progress::Progress;
use warpdrive_core::rng::u32_to_unit_f32;
use warpdrive_core::RandomStream;

use crate::birefringence::Birefringence;
use crate::collision::{Collision, DomIndex};
use crate::medium::Medium;
use crate::scatter::{scatter, scattering_cosine};
use crate::source::{emit, tags, Photon, Source};

/// The arithmetic of a segment's physics: [`Precise`], the CPU twin of the GPU's precise mode
/// (what the GPU is checked against photon by photon), or the CPU fast mode
/// ([`crate::fast::Fast`]: resampled float tables and float approximations, validated against
/// PPC statistically as the GPU's fast mode is). [`step_with`] is the one segment loop both run.
pub trait Mode: Sync {
    /// `DomIndex::hole_span` (the precise twin rounds its pre-test as the kernel does).
    #[inline(always)]
    fn hole_span(&self, doms: &DomIndex, r: [f32; 3], n: [f32; 3], len: f32) -> Option<(f32, f32)> {
        doms.hole_span(r, n, len)
    }
    /// The step's end pos + len·dir (the precise twin may fuse it, `fast::twin`).
    #[inline(always)]
    fn advance(&self, pos: [f32; 3], dir: [f32; 3], len: f32) -> [f32; 3] {
        [pos[0] + len * dir[0], pos[1] + len * dir[1], pos[2] + len * dir[2]]
    }
    /// The tilt's depth shift [m] at `pos` (z' = z − shift, spec §3.5 step 2).
    fn zshift(&self, m: &Medium, pos: [f32; 3]) -> f32;
    /// The absorption anisotropy's factor for direction `n` (1 for isotropic ice).
    fn absorption_factor(&self, m: &Medium, n: [f32; 3]) -> f32;
    /// [`layer_walk`].
    #[allow(clippy::too_many_arguments)]
    fn walk(&self, m: &Medium, slice: u32, zp: f32, nz: f32, sca_depth: f32, tot: f32, abs_factor: f32) -> Segment;
    /// `DomIndex::first_hit`.
    #[allow(clippy::too_many_arguments)]
    fn first_hit(&self, doms: &DomIndex, r: [f32; 3], n: [f32; 3], len: f32, skip: Option<u32>, own: Option<u32>) -> Option<Collision>;
    /// The optical depth −ln u of a uniform u ∈ (0, 1].
    fn depth(&self, u: f32) -> f32;
    /// Birefringence: ∫ra dl and ∫rb dl over `len` from tilt-corrected height `zp` along `nz`.
    fn bfr_integrals(&self, b: &Birefringence, m: &Medium, zp: f32, nz: f32, len: f32) -> (f32, f32);
    /// Birefringence: the deflected direction and the curved path's end-point shift.
    fn deflect(&self, b: &Birefringence, n: [f32; 3], len: f32, ra: f32, rb: f32, u: [f32; 4]) -> ([f32; 3], [f32; 3]);
    /// The direction after a scattering in the bulk ice (phase-function choice u1, angle u2,
    /// azimuth u3; the SPICE anisotropy).
    fn scatter_bulk(&self, m: &Medium, n: [f32; 3], u1: f32, u2: f32, u3: f32) -> [f32; 3];
    /// A segment's uniform in (0, 1] from a random word (24 bits).
    #[inline(always)]
    fn uniform(&self, w: u32) -> f32 {
        u32_to_unit_f32(w)
    }
    /// The direction after a scattering inside a hole-ice column: its own phase function
    /// (g, f_SL), no SPICE anisotropy.
    #[inline(always)]
    fn scatter_hole(&self, h: &crate::hole::HoleParams, n: [f32; 3], u1: f32, u2: f32, u3: f32) -> [f32; 3] {
        scatter(n, scattering_cosine(h.g, h.f_sl, u1, u2), u3, None)
    }
    /// [`layer_depths`]: the optical depths up to a hole-ice column or a hit.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn depths(&self, m: &Medium, slice: u32, zp: f32, nz: f32, len: f32, abs_factor: f32) -> (f32, f32) {
        layer_depths(m, slice, zp, nz, len, abs_factor)
    }
}

/// The precise arithmetic: the formulas as written (f64 tilt, libm), the same operations in the
/// same order as the kernel's precise build.
#[derive(Clone, Copy, Debug, Default)]
pub struct Precise;

impl Mode for Precise {
    #[inline(always)]
    fn zshift(&self, m: &Medium, pos: [f32; 3]) -> f32 {
        m.tilt.zshift(f64::from(pos[0]), f64::from(pos[1]), f64::from(pos[2])) as f32
    }

    #[inline(always)]
    fn absorption_factor(&self, m: &Medium, n: [f32; 3]) -> f32 {
        m.anisotropy.as_ref().map_or(1.0, |a| a.absorption_factor(n))
    }

    #[inline(always)]
    fn walk(&self, m: &Medium, slice: u32, zp: f32, nz: f32, sca_depth: f32, tot: f32, abs_factor: f32) -> Segment {
        layer_walk(m, slice, zp, nz, sca_depth, tot, abs_factor)
    }

    #[inline(always)]
    fn first_hit(&self, doms: &DomIndex, r: [f32; 3], n: [f32; 3], len: f32, skip: Option<u32>, own: Option<u32>) -> Option<Collision> {
        doms.first_hit(r, n, len, skip, own)
    }

    #[inline(always)]
    fn depth(&self, u: f32) -> f32 {
        -u.ln()
    }

    #[inline(always)]
    fn bfr_integrals(&self, b: &Birefringence, m: &Medium, zp: f32, nz: f32, len: f32) -> (f32, f32) {
        b.path_integrals(m.hmin, m.dh, zp, nz, len)
    }

    #[inline(always)]
    fn deflect(&self, b: &Birefringence, n: [f32; 3], len: f32, ra: f32, rb: f32, u: [f32; 4]) -> ([f32; 3], [f32; 3]) {
        b.deflect(n, len, ra, rb, u)
    }

    #[inline(always)]
    fn scatter_bulk(&self, m: &Medium, n: [f32; 3], u1: f32, u2: f32, u3: f32) -> [f32; 3] {
        scatter(n, scattering_cosine(m.g, m.f_sl, u1, u2), u3, m.anisotropy.as_ref())
    }
}

/// Where a segment's four random words come from: the photon's Philox stream (precise: one
/// whole block per draw) or the fast mode's per-photon MWC64X state.
pub trait SegmentWords {
    fn block4(&mut self) -> [u32; 4];
}

impl SegmentWords for RandomStream {
    #[inline(always)]
    fn block4(&mut self) -> [u32; 4] {
        RandomStream::block4(self)
    }
}

/// A hit as produced by the propagation, before the CPU-side acceptance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RawHit {
    /// Global photon id (position of the photon in the run) and source ordinal.
    pub photon: u64,
    pub source: u32,
    /// Ordinal of this hit among the hits of its photon.
    pub seq: u32,
    /// DOM index in the geometry.
    pub dom: u32,
    pub time: f32,
    pub slice: u32,
    /// Photon direction at impact and direction from the DOM centre to the impact point.
    pub dir: [f32; 3],
    pub impact: [f32; 3],
}

/// Upper bound on the scatterings of one photon (a safety net; absorption ends photons long before).
pub const MAX_SEGMENTS: u32 = 1 << 20;

/// Hits one segment may record (continue after hit; the kernel's WD_MAX_SEGMENT_HITS). A real
/// detector gives a few at most; coincident modules in a malformed geometry would otherwise hold
/// the photon at one point, recording hits without end.
pub const MAX_HITS_PER_SEGMENT: u32 = 64;

/// Result of the layer walk for one segment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Segment {
    /// Geometric length [m].
    pub length: f32,
    /// Absorption depth left at its end (≤ 0: absorbed at the end of the segment).
    pub tot: f32,
    /// Birefringence: ∫ra dl and ∫rb dl over the segment, when the walk sums them (the precise
    /// twin, `fast::twin`: the kernel's `WD_BFR_WALK`); `None`: `Mode::bfr_integrals` walks again.
    pub bfr: Option<(f32, f32)>,
}

/// Walk the layers from tilt-corrected height `zp` along direction cosine `nz`, consuming the
/// scattering depth `sca_depth` and the absorption depth `tot` (spec §3.5 step 2). `abs_factor`
/// is the direction-dependent absorption anisotropy. Layers at the ends extend to infinity.
///
/// The path length through a layer is (boundary − zp)/nz for the first and dh/|nz| for every
/// whole layer after it. Per layer the optical depths to its far side, s·dl and a·dl, are
/// compared with what is left; only the layer where the segment ends divides (ls = SCA/s,
/// la = TOT/a). The CUDA twin does the same operations in the same order.
#[inline]
#[must_use]
pub fn layer_walk(m: &Medium, slice: u32, zp: f32, nz: f32, mut sca_depth: f32, mut tot: f32, abs_factor: f32) -> Segment {
    let base = slice as usize * m.n_layers;
    let mut j = m.layer_of(zp);
    let (last, half) = if nz > 0.0 { (m.n_layers - 1, 0.5f32) } else { (0, -0.5f32) };
    let inv_nz = 1.0 / nz;
    // Path length to the first boundary ahead: ∞ in the end layer of the direction of travel
    // (it extends to infinity) and for horizontal travel.
    let mut dl = if nz == 0.0 || j == last {
        f32::INFINITY
    } else {
        ((m.hmin + (j as f32 + half) * m.dh - zp) * inv_nz).max(0.0)
    };
    let dl_layer = m.dh * inv_nz.abs();
    let mut length = 0.0f32;
    loop {
        let s = m.sca[base + j];
        let a = m.abs[base + j] * abs_factor;
        let (sd, ad) = (s * dl, a * dl);
        if sca_depth <= sd || tot <= ad {
            // The segment ends in this layer: absorbed if the absorption depth runs out first
            // (TOT/a ≤ SCA/s, compared without dividing).
            return if tot * s <= sca_depth * a {
                Segment {
                    length: length + tot / a,
                    tot: 0.0,
                    bfr: None,
                }
            } else {
                let ls = sca_depth / s;
                Segment {
                    length: length + ls,
                    tot: tot - a * ls,
                    bfr: None,
                }
            };
        }
        length += dl;
        sca_depth -= sd;
        tot -= ad;
        if half > 0.0 {
            j += 1;
        } else {
            j -= 1;
        }
        dl = if j == last { f32::INFINITY } else { dl_layer };
    }
}

/// Optical depths (scattering, absorption × `abs_factor`) accumulated over the path length
/// `len` from tilt-corrected height `zp` along direction cosine `nz`: the bulk ice a segment
/// crosses before it enters a hole-ice column (`hole.rs`). The same layers and boundaries as
/// [`layer_walk`]; per layer s·dl and a·dl, the last layer the part of `len` left.
#[inline]
#[must_use]
pub fn layer_depths(m: &Medium, slice: u32, zp: f32, nz: f32, len: f32, abs_factor: f32) -> (f32, f32) {
    let base = slice as usize * m.n_layers;
    layer_depths_with(m, m.layer_of(zp), zp, nz, len, |j| (m.sca[base + j], m.abs[base + j] * abs_factor))
}

/// [`layer_depths`] from layer `j` (that of `zp`) with the coefficients (scattering, absorption
/// × its factor) of layer j from `coef` (the precise twin's factored ones, `fast::twin`).
#[inline(always)]
#[must_use]
pub fn layer_depths_with(m: &Medium, mut j: usize, zp: f32, nz: f32, len: f32, coef: impl Fn(usize) -> (f32, f32)) -> (f32, f32) {
    let (last, half) = if nz > 0.0 { (m.n_layers - 1, 0.5f32) } else { (0, -0.5f32) };
    let inv_nz = 1.0 / nz;
    let mut dl = if nz == 0.0 || j == last {
        f32::INFINITY
    } else {
        ((m.hmin + (j as f32 + half) * m.dh - zp) * inv_nz).max(0.0)
    };
    let dl_layer = m.dh * inv_nz.abs();
    let (mut left, mut xs, mut xa) = (len, 0.0f32, 0.0f32);
    loop {
        let (s, a) = coef(j);
        if left <= dl {
            return (xs + s * left, xa + a * left);
        }
        xs += s * dl;
        xa += a * dl;
        left -= dl;
        if half > 0.0 {
            j += 1;
        } else {
            j -= 1;
        }
        dl = if j == last { f32::INFINITY } else { dl_layer };
    }
}

/// A photon between segments: position, direction, time, wavelength slice, the absorption depth
/// left, the next segment's scattering depth, the DOM not to meet (the one hit last, until the
/// photon scatters; a flasher's own DOM on its first segment), the number of hits so far and
/// the distance bound per unit of absorption depth of the out-of-reach test (`reach.rs`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PhotonState {
    pub photon: Photon,
    pub tot: f32,
    pub sca_depth: f32,
    pub skip: Option<u32>,
    pub seq: u32,
    /// `reach::path_per_depth` of the photon's slice; infinity (as `start` leaves it) turns the
    /// test off.
    pub reach: f32,
}

impl PhotonState {
    /// The state after emission: the absorption budget TOT and the first SCA, in this order.
    pub fn start(photon: Photon, rng: &mut RandomStream) -> Self {
        let tot = rng.exponential();
        let sca_depth = rng.exponential();
        Self {
            photon,
            tot,
            sca_depth,
            skip: None,
            seq: 0,
            reach: f32::INFINITY,
        }
    }
}

/// How a segment ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegmentEnd {
    /// The absorption depth ran out.
    Absorbed,
    /// A DOM was hit with oversize 1 (the photon ends there), or a flasher photon came back to
    /// its own DOM.
    Killed,
    /// The photon scattered, in the bulk ice or inside a hole-ice column.
    Scattered { in_hole: bool },
    /// Cut where it leaves a hole-ice column: the next segment continues with the depths left
    /// (no scattering, no random numbers).
    Cut,
    /// A hit in a birefringent model: PPC's step ends at the hit (its `fin` is the distance to
    /// the DOM), the diffusion is applied over the path up to it, and the photon goes on from
    /// there, deflected, with the depths left (no scattering).
    AfterHit,
}

/// One segment of a photon (spec §3.5, hole ice photon-ppc-phase2.md §2): layer walk, hole-ice
/// column, DOM collisions (hits appended to `out`), advance, birefringence, scattering; in the
/// precise arithmetic with the photon's Philox stream.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn step(
    m: &Medium,
    doms: &DomIndex,
    src: &Source,
    photon_id: u64,
    source_ord: u32,
    st: &mut PhotonState,
    rng: &mut RandomStream,
    out: &mut Vec<RawHit>,
) -> SegmentEnd {
    step_with(&Precise, m, doms, src, photon_id, source_ord, st, rng, out)
}

/// [`step`] in the arithmetic of `mode`, drawing from `rng`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn step_with<M: Mode, R: SegmentWords>(
    mode: &M,
    m: &Medium,
    doms: &DomIndex,
    src: &Source,
    photon_id: u64,
    source_ord: u32,
    st: &mut PhotonState,
    rng: &mut R,
    out: &mut Vec<RawHit>,
) -> SegmentEnd {
    // Out of reach of every module (reach.rs): the photon ends here, with the hits it has.
    if crate::reach::out_of_reach(doms, st.photon.pos, st.tot, st.reach) {
        return SegmentEnd::Absorbed;
    }
    let p = &mut st.photon;
    let ocm = m.slices[p.slice as usize].ocm;
    let zp = p.pos[2] - mode.zshift(m, p.pos);
    let nr = mode.absorption_factor(m, p.dir);
    let seg = mode.walk(m, p.slice, zp, p.dir[2], st.sca_depth, st.tot, nr);
    // Hole ice: the bulk segment cut where it enters a column; inside, the column's coefficients.
    let (mut len, mut tot, mut end) = (seg.length, seg.tot, SegmentEnd::Scattered { in_hole: false });
    let (mut bulk_len, mut entered) = (seg.length, false);
    let mut sca_left = 0.0f32;
    if let Some(h) = &m.hole {
        if let Some((t_in, t_out)) = mode.hole_span(doms, p.pos, p.dir, seg.length) {
            let (xs, xa) = mode.depths(m, p.slice, zp, p.dir[2], t_in, nr);
            let (s, t) = ((st.sca_depth - xs).max(0.0), (st.tot - xa).max(0.0));
            // Distances to scattering and to absorption at the column's coefficients.
            let (ls, la) = (s / h.sca, t / h.abs);
            (bulk_len, entered) = (t_in, true);
            if la <= ls && t_in + la <= t_out {
                (len, tot) = (t_in + la, 0.0);
            } else if ls < la && t_in + ls <= t_out {
                (len, tot) = (t_in + ls, t - h.abs * ls);
                end = SegmentEnd::Scattered { in_hole: true };
            } else {
                let d = t_out - t_in;
                (len, tot) = (t_out, t - h.abs * d);
                sca_left = (s - h.sca * d).max(0.0);
                end = SegmentEnd::Cut;
            }
        }
    }
    // Every DOM the segment hits, in order (PPC's continue after hit: a hit ends PPC's segment
    // there and the photon goes on with the depths left, skipping that DOM, so a DOM further on
    // is hit too). The straight path and its end are the same, so the photon is advanced to each
    // hit and the rest of the segment searched from there. The DOM hit last is skipped until the
    // next scattering (PPC: `old = om`, reset when a new SCA is drawn), through a hole-ice cut too.
    let mut skip = st.skip;
    for _ in 0..MAX_HITS_PER_SEGMENT {
        let Some(c) = mode.first_hit(doms, p.pos, p.dir, len, skip, src.own_dom) else {
            break;
        };
        if src.own_dom == Some(c.dom) {
            // A flasher's own DOM absorbs the photons that come back to it (PPC: TOT = 0 for
            // om == ofla), recording nothing.
            return SegmentEnd::Killed;
        }
        out.push(RawHit {
            photon: photon_id,
            source: source_ord,
            seq: st.seq,
            dom: c.dom,
            time: p.time + c.h * ocm,
            slice: p.slice,
            dir: p.dir,
            impact: c.impact,
        });
        st.seq += 1;
        if doms.oversize <= 1.0 {
            return SegmentEnd::Killed;
        }
        p.pos = [p.pos[0] + c.h * p.dir[0], p.pos[1] + c.h * p.dir[1], p.pos[2] + c.h * p.dir[2]];
        p.time += c.h * ocm;
        // Birefringence: the hit ends the step (PPC pro.cu: the nearest DOM sets `del`, the
        // diffusion runs over `fin` = the distance to it, curved, and the next step starts there).
        // Straight on through several DOMs, a photon going up a string would hit one after the
        // other with one direction, where the deflection after the first (≈ 0.1 rad, moving it
        // ≈ 1 m sideways over 7 m) mostly misses the next: +8 % hits at photon θ < 0.19 rad in
        // spice_ftp-v3m at 10⁷ hits (issue #29). Hits inside a hole-ice column keep the
        // straight path (the diffusion is over the bulk part only). The step then ends below as
        // any other does: the depths left at the hit, the diffusion over the piece up to it
        // (curved), no scattering — one diffusion block, as in the kernel.
        skip = Some(c.dom);
        if m.bfr.is_some() && c.h <= bulk_len {
            let (xs, xa) = mode.depths(m, p.slice, zp, p.dir[2], c.h, nr);
            (sca_left, tot) = ((st.sca_depth - xs).max(0.0), (st.tot - xa).max(0.0));
            (len, bulk_len, entered, end) = (0.0, c.h, false, SegmentEnd::AfterHit);
            break;
        }
        len -= c.h;
    }
    st.skip = if matches!(end, SegmentEnd::Cut | SegmentEnd::AfterHit) {
        skip
    } else {
        None
    };
    st.tot = tot;
    if tot <= 0.0 {
        return SegmentEnd::Absorbed;
    }
    p.pos = mode.advance(p.pos, p.dir, len);
    p.time += len * ocm;
    // Birefringence (photon-ppc-phase2.md §1): one whole block (four uniforms, two normal
    // pairs) per segment for the deflection and the curved path's end-point shift. With hole ice
    // only the bulk part diffuses, and the path is curved only when the segment stayed in the
    // bulk (as PPC).
    if let Some(b) = &m.bfr {
        if bulk_len > 0.0 {
            // The walk's integrals when it summed them and the segment is the walk's (no hole-ice
            // column, no hit), else walked again over the bulk part.
            let (ra, rb) = match seg.bfr {
                Some(v) if !entered && !matches!(end, SegmentEnd::AfterHit) => v,
                _ => mode.bfr_integrals(b, m, zp, p.dir[2], bulk_len),
            };
            let u = rng.block4().map(|w| mode.uniform(w));
            let (dir, shift) = mode.deflect(b, p.dir, bulk_len, ra, rb, u);
            if !entered {
                p.pos = [p.pos[0] + shift[0], p.pos[1] + shift[1], p.pos[2] + shift[2]];
            }
            p.dir = dir;
        }
    }
    let in_hole = match end {
        SegmentEnd::Cut | SegmentEnd::AfterHit => {
            st.sca_depth = sca_left;
            return end;
        }
        SegmentEnd::Scattered { in_hole } => in_hole,
        _ => false,
    };
    // One whole block per scattering: its three uniforms and the next segment's depth.
    let w = rng.block4();
    let (u1, u2, u3) = (mode.uniform(w[0]), mode.uniform(w[1]), mode.uniform(w[2]));
    st.sca_depth = mode.depth(mode.uniform(w[3]));
    p.dir = match (&m.hole, in_hole) {
        // Inside a column: its own phase function, no SPICE anisotropy.
        (Some(h), true) => mode.scatter_hole(h, p.dir, u1, u2, u3),
        _ => mode.scatter_bulk(m, p.dir, u1, u2, u3),
    };
    end
}

/// Propagate one photon and append its hits to `out`; `reach` is `reach::path_per_depth` (the
/// out-of-reach test; empty: off, the same hits).
#[allow(clippy::too_many_arguments)]
pub fn propagate_photon(
    m: &Medium,
    doms: &DomIndex,
    src: &Source,
    photon_id: u64,
    source_ord: u32,
    rng: &mut RandomStream,
    reach: &[f32],
    out: &mut Vec<RawHit>,
) {
    let p = emit(src, m, rng);
    let killed = p.killed;
    let mut st = PhotonState::start(p, rng);
    st.reach = reach.get(st.photon.slice as usize).copied().unwrap_or(f32::INFINITY);
    // A flasher photon starts on its DOM's surface: its first segment does not meet it (PPC:
    // `old = fla`).
    st.skip = src.own_dom;
    if killed {
        return; // a flasher photon absorbed where it was made (its DOM's band, harness or cable)
    }
    for _ in 0..MAX_SEGMENTS {
        match step(m, doms, src, photon_id, source_ord, &mut st, rng, out) {
            SegmentEnd::Absorbed | SegmentEnd::Killed => return,
            SegmentEnd::Scattered { .. } | SegmentEnd::Cut | SegmentEnd::AfterHit => {}
        }
    }
}

/// Photons per work item: the unit of parallel work and of output ordering.
const CHUNK: u64 = 4096;

/// Propagate every photon of `sources` with `seed` on the current rayon pool. Hits come back in
/// canonical order (photon id, then hit ordinal), identical for any number of threads.
///
/// Each chunk of [`CHUNK`] photons (milliseconds of work) first asks `progress` whether to stop;
/// once it says so the remaining chunks are skipped and the hits are incomplete: the caller
/// (`crate::engine`) then reports the run as cancelled and never writes them.
pub fn run(m: &Medium, doms: &DomIndex, sources: &[Source], seed: u64, progress: &Progress) -> Vec<RawHit> {
    run_range(m, doms, sources, seed, 0..u64::MAX, progress)
}

/// [`run`] for the photons whose global ids lie in `ids` (one job's share of a split run,
/// `warpdrive_core::jobs`): each photon's hits are those of the whole run.
pub fn run_range(m: &Medium, doms: &DomIndex, sources: &[Source], seed: u64, ids: Range<u64>, progress: &Progress) -> Vec<RawHit> {
    run_range_reach(m, doms, sources, seed, ids, progress, &crate::reach::table(m))
}

/// [`run_range`] with the out-of-reach table given (`reach.rs`; empty: the test off).
pub(crate) fn run_range_reach(
    m: &Medium,
    doms: &DomIndex,
    sources: &[Source],
    seed: u64,
    ids: Range<u64>,
    progress: &Progress,
    reach: &[f32],
) -> Vec<RawHit> {
    run_chunks(sources, ids, progress, |ids, out| {
        for (id, s) in ids {
            let mut rng = RandomStream::new(seed, tags::PHOTON, id);
            propagate_photon(m, doms, &sources[s as usize], id, s, &mut rng, reach, out);
        }
    })
}

/// The photons of one chunk: (global id, source ordinal) in id order.
pub struct ChunkIds<'a> {
    offsets: &'a [u64],
    id: u64,
    hi: u64,
    s: usize,
}

impl Iterator for ChunkIds<'_> {
    type Item = (u64, u32);

    #[inline]
    fn next(&mut self) -> Option<(u64, u32)> {
        if self.id >= self.hi {
            return None;
        }
        while self.offsets[self.s + 1] <= self.id {
            self.s += 1;
        }
        self.id += 1;
        Some((self.id - 1, self.s as u32))
    }
}

/// The chunked parallel loop of [`run`]: `chunk` propagates the photons it is given (a chunk of
/// [`CHUNK`] ids) and appends their hits, which must come out in canonical order (photon id,
/// then hit ordinal). The precise and the fast mode share it.
/// Only the photons with global ids in `ids` (clamped to the sources' photons) are propagated.
pub fn run_chunks(
    sources: &[Source],
    ids: Range<u64>,
    progress: &Progress,
    chunk: impl Fn(ChunkIds<'_>, &mut Vec<RawHit>) + Sync,
) -> Vec<RawHit> {
    // Global photon ids: source s owns [offset[s], offset[s] + photons). Counts are checked
    // when the sources are built (source::check_photons, total_photons); saturate regardless.
    let mut offsets = Vec::with_capacity(sources.len() + 1);
    let mut total = 0u64;
    for s in sources {
        offsets.push(total);
        total = total.saturating_add(s.photons);
    }
    offsets.push(total);
    let (first_id, end_id) = (ids.start.min(total), ids.end.min(total));
    let chunks = (end_id - first_id).div_ceil(CHUNK);
    // Chunks run in batches, so the per-chunk hit lists in memory at once stay bounded however
    // many photons there are; batches are appended in order (same output for any thread count).
    const CHUNKS_PER_BATCH: u64 = 1 << 14;
    let mut hits = Vec::new();
    let mut first = 0;
    while first < chunks {
        let last = (first + CHUNKS_PER_BATCH).min(chunks);
        let parts: Vec<Vec<RawHit>> = (first..last)
            .into_par_iter()
            .map(|c| {
                if progress.should_stop() {
                    return Vec::new();
                }
                let lo = first_id + c * CHUNK;
                let hi = lo.saturating_add(CHUNK).min(end_id);
                let mut out = Vec::new();
                let s = offsets.partition_point(|&o| o <= lo) - 1;
                chunk(
                    ChunkIds {
                        offsets: &offsets,
                        id: lo,
                        hi,
                        s,
                    },
                    &mut out,
                );
                progress.add(hi - lo);
                out
            })
            .collect();
        hits.extend(parts.into_iter().flatten());
        if progress.should_stop() {
            break;
        }
        first = last;
    }
    hits
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::ice::Layers;
    use crate::tilt::Tilt;

    fn two_layer_medium() -> Medium {
        // Two layers 10 m thick; walk with a fixed slice at 400 nm.
        let mut l = Layers::homogeneous(0.02, 0.01);
        l.rows.push(l.rows[0]);
        l.rows[0].depth = 1000.0;
        l.rows[1].depth = 1010.0;
        l.rows[1].adust400 = 0.05;
        l.dh = 10.0;
        Medium::monochromatic(&l, &Config::default(), 400.0, Tilt::None)
    }

    #[test]
    fn walk_within_one_layer() {
        let m = two_layer_medium();
        // Deep layer (index 0) centred at hmin; sca = 0.2 /m, so 1 unit of depth = 5 m.
        let s = layer_walk(&m, 0, m.hmin, 0.0, 1.0, 100.0, 1.0);
        assert!((s.length - 1.0 / m.sca[0]).abs() < 1e-4);
        assert!((s.tot - (100.0 - m.abs[0] * s.length)).abs() < 1e-3);
    }

    #[test]
    fn walk_across_boundary_up_and_down() {
        let m = two_layer_medium();
        let (a0, a1) = (m.abs[0], m.abs[1]);
        // Vertical photon from 2 m below the boundary going up, absorbed: 2 m in layer 0, rest in 1.
        let tot = a0 * 2.0 + a1 * 3.0;
        let s = layer_walk(&m, 0, m.hmin + 3.0, 1.0, 1e9, tot, 1.0);
        assert!((s.length - 5.0).abs() < 1e-3 && s.tot == 0.0, "{s:?}");
        // Same going down from 2 m above the boundary in layer 1.
        let tot = a1 * 2.0 + a0 * 3.0;
        let s = layer_walk(&m, 0, m.hmin + 7.0, -1.0, 1e9, tot, 1.0);
        assert!((s.length - 5.0).abs() < 1e-3, "{s:?}");
        // Slanted (cos 0.5): 2 m of height = 4 m of path per layer-metre.
        let tot = a0 * 4.0 + a1 * 6.0;
        let s = layer_walk(&m, 0, m.hmin + 3.0, 0.5, 1e9, tot, 1.0);
        assert!((s.length - 10.0).abs() < 2e-3, "{s:?}");
    }
}
