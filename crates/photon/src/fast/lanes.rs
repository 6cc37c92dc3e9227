//! SIMD across photons for the CPU fast mode (issue #34): the photons of a chunk stepped
//! [`W`] at a time, the part of a segment that is the same straight-line arithmetic for every
//! photon (the scattering block: its four MWC64X words, the next optical depth −ln u, the
//! scattering cosine with both phase functions evaluated and one chosen per lane, the azimuth's
//! sine and cosine, the rotation and its normalisations, the anisotropy frame) done in lanes on
//! a structure of arrays, which LLVM vectorises (8 lanes of AVX2 where the chunk loop is
//! compiled for it). The rest of the segment (tilt, layer walk, collision search,
//! birefringence) stays the scalar fast path, lane by lane; a segment that meets a DOM is run
//! whole by the scalar `step_with` (hits are rare), and a finished lane takes the chunk's next
//! photon.
//!
//! Every lane does the scalar fast path's operations in their order (IEEE-754 +, −, ×, ÷, √ are
//! the same in a vector lane; Rust does not contract a·b + c into an FMA; the float → int
//! conversions are done without saturation only where the value is known to be in range, where
//! they equal `as i32`), and each photon draws from its own streams, so every photon's result is
//! the scalar fast mode's bit for bit; the hits of a chunk, which come out interleaved between
//! the lanes' photons, are sorted back into canonical order (photon id, then hit ordinal).
//! Covered: media without hole ice (with or without birefringence, flashers included); media
//! with hole ice run the scalar chunk loop.

use std::f32::consts::{LN_2, LOG2_E, TAU};

use warpdrive_core::rng::u32_to_unit_f32;
use warpdrive_core::RandomStream;

use super::math;
use super::rng::{Mwc64x, MWC_A};
use super::scatter::Phase;
use super::Fast;
use crate::collision::DomIndex;
use crate::medium::Medium;
use crate::propagate::{step_with, ChunkIds, Mode, PhotonState, RawHit, Segment, SegmentEnd, MAX_SEGMENTS};
use crate::source::{emit, tags, Source};

/// Photons stepped together (one AVX2 register of floats).
pub const W: usize = 8;

/// `math::round` with the conversion done without saturation: the same value for |x| < 2³¹,
/// which every caller guarantees (a uniform's multiple, or a clamped exponent).
#[inline(always)]
fn round_l(x: f32) -> f32 {
    let y = x + 0.5;
    // SAFETY: callers pass |x| < 2³¹ − 1 (finite), so y converts exactly as `y as i32`.
    let t = unsafe { y.to_int_unchecked::<i32>() } as f32;
    if t > y {
        t - 1.0
    } else {
        t
    }
}

/// `math::exp2` (same operations).
#[inline(always)]
fn exp2_l(y: f32) -> f32 {
    let y = y.clamp(-126.0, 127.0);
    let n = round_l(y);
    let f = (y - n) * LN_2;
    let p =
        1.0 + f * (1.0 + f * (1.0 / 2.0 + f * (1.0 / 6.0 + f * (1.0 / 24.0 + f * (1.0 / 120.0 + f * (1.0 / 720.0 + f * (1.0 / 5040.0)))))));
    // SAFETY: n ∈ [−126, 127].
    p * f32::from_bits(((unsafe { n.to_int_unchecked::<i32>() } + 127) as u32) << 23)
}

/// `math::powf` (exp2(y·log2 x), log2 x = ln x · log₂e) for x a uniform in (0, 1].
#[inline(always)]
fn powf_l(x: f32, y: f32) -> f32 {
    exp2_l(y * (math::ln(x) * LOG2_E))
}

/// `math::sincos_turn` for t ∈ (0, 1] (same operations and bits).
#[inline(always)]
fn sincos_turn_l(t: f32) -> (f32, f32) {
    let q4 = round_l(4.0 * t);
    let (s, c) = math::sincos_reduced((t - 0.25 * q4) * TAU);
    // SAFETY: q4 ∈ [0, 4]; its low bits are those `q4 as i64 as u32` takes.
    let q = unsafe { q4.to_int_unchecked::<i32>() } as u32;
    let odd = 0u32.wrapping_sub(q & 1);
    let (sb, cb) = (s.to_bits(), c.to_bits());
    let sin_bits = (cb & odd) | (sb & !odd);
    let cos_bits = (sb & odd) | (cb & !odd);
    (
        f32::from_bits(sin_bits ^ ((q & 2) << 30)),
        f32::from_bits(cos_bits ^ ((q.wrapping_add(1) & 2) << 30)),
    )
}

/// `Phase::cosine` with both phase functions evaluated and one chosen (the same value as the
/// branch takes).
#[inline(always)]
fn cosine_l(ph: &Phase, u_choice: f32, u: f32) -> f32 {
    let sl = 2.0 * powf_l(u, ph.sl_exp) - 1.0;
    let s = 2.0 * u - 1.0;
    let other = if ph.hg[2] == 0.0 {
        s
    } else {
        let t = ph.hg[0] / (1.0 + ph.g * s);
        (ph.hg[1] - t * t) * ph.hg[2]
    };
    let c = if u_choice <= ph.f_sl { sl } else { other };
    c.clamp(-1.0, 1.0)
}

/// `scatter::normalize`.
#[inline(always)]
fn normalize_l(v: [f32; 3]) -> [f32; 3] {
    let r = 1.0 / (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    [v[0] * r, v[1] * r, v[2] * r]
}

/// `scatter::rotate_unnormalised` with both frames computed and one chosen.
#[inline(always)]
fn rotate_l(n: [f32; 3], cos_t: f32, sin_t: f32, u_phi: f32) -> [f32; 3] {
    let (sp, cp) = sincos_turn_l(u_phi);
    let s2 = n[0] * n[0] + n[1] * n[1];
    let big = s2 > 1e-20;
    let inv_s = 1.0 / s2.sqrt();
    let zi = n[2] * inv_s;
    let e1 = [
        if big { n[0] * zi } else { 1.0 },
        if big { n[1] * zi } else { 0.0 },
        if big { -s2 * inv_s } else { 0.0 },
    ];
    let e2 = [if big { -n[1] * inv_s } else { 0.0 }, if big { n[0] * inv_s } else { 1.0 }, 0.0];
    let (a, b) = (sin_t * cp, sin_t * sp);
    [
        n[0] * cos_t + a * e1[0] + b * e2[0],
        n[1] * cos_t + a * e1[1] + b * e2[1],
        n[2] * cos_t + a * e1[2] + b * e2[2],
    ]
}

/// `Phase::scatter` (same operations).
#[inline(always)]
fn scatter_l(ph: &Phase, n: [f32; 3], cos_t: f32, u_phi: f32) -> [f32; 3] {
    let sin_t = (1.0 - cos_t * cos_t).max(0.0).sqrt();
    match &ph.aniso {
        None => normalize_l(rotate_l(n, cos_t, sin_t, u_phi)),
        Some((a, ik)) => {
            let m = [a.azx * n[0] + a.azy * n[1], -a.azy * n[0] + a.azx * n[1], n[2]];
            let m = normalize_l([a.k[0] * m[0], a.k[1] * m[1], a.k[2] * m[2]]);
            let m = rotate_l(m, cos_t, sin_t, u_phi);
            let m = normalize_l([m[0] * ik[0], m[1] * ik[1], m[2] * ik[2]]);
            [a.azx * m[0] - a.azy * m[1], a.azy * m[0] + a.azx * m[1], m[2]]
        }
    }
}

/// `birefringence::box_muller` (same operations) for u2 ∈ (0, 1].
#[inline(always)]
fn box_muller_l(u1: f32, u2: f32) -> (f32, f32) {
    let r = (-2.0 * math::ln(u1)).sqrt();
    let (s, c) = sincos_turn_l(u2);
    (r * c, r * s)
}

/// `birefringence::stereographic` (same operations).
#[inline(always)]
fn stereographic_l(n: [f32; 3], q: [f32; 3], p: [f32; 3], a: f32, b: f32) -> [f32; 3] {
    let k = a * a + b * b;
    let den = 2.0 / (1.0 + k);
    let (a, b, c) = (a * den, b * den, -k * den);
    [
        n[0] + q[0] * a + p[0] * b + n[0] * c,
        n[1] + q[1] * a + p[1] * b + n[1] * c,
        n[2] + q[2] * a + p[2] * b + n[2] * c,
    ]
}

/// `FastBfr::deflect` after its widths (`dot` = axis·n, σx, σy, μx already scaled by the path
/// integrals): the frame's branches as selects, the same operations (so the same bits).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn deflect_l(axis: [f32; 2], n: [f32; 3], len: f32, dot: f32, sx: f32, sy: f32, mx: f32, u: [f32; 4]) -> ([f32; 3], [f32; 3]) {
    let q = [axis[0] - dot * n[0], axis[1] - dot * n[1], -dot * n[2]];
    let neg = dot < 0.0;
    let q = [
        if neg { -q[0] } else { q[0] },
        if neg { -q[1] } else { q[1] },
        if neg { -q[2] } else { q[2] },
    ];
    let qn = q[0] * q[0] + q[1] * q[1] + q[2] * q[2];
    let pos = qn > 0.0;
    let f = 1.0 / qn.sqrt();
    let q = [
        if pos { q[0] * f } else { 0.0 },
        if pos { q[1] * f } else { 0.0 },
        if pos { q[2] * f } else { 1.0 },
    ];
    let pv = [n[1] * q[2] - n[2] * q[1], n[2] * q[0] - n[0] * q[2], n[0] * q[1] - n[1] * q[0]];
    let (g1, g2) = box_muller_l(u[0], u[1]);
    let (g3, g4) = box_muller_l(u[2], u[3]);
    let du = sx * g1 + mx;
    let dv = sy * g2;
    let r3 = 1.0 / 3.0f32.sqrt();
    let m = stereographic_l(n, q, pv, (du + sx * g3 * r3) * 0.5, (dv + sy * g4 * r3) * 0.5);
    let half = len * 0.5;
    let shift = [half * (m[0] - n[0]), half * (m[1] - n[1]), half * (m[2] - n[2])];
    (stereographic_l(n, q, pv, du * 0.5, dv * 0.5), shift)
}

/// The per-lane inputs of the birefringent deflection (see [`deflect_l`]).
#[derive(Clone, Copy, Default)]
struct BfrLanes {
    len: [f32; W],
    dot: [f32; W],
    sx: [f32; W],
    sy: [f32; W],
    mx: [f32; W],
}

/// Four MWC64X words per lane, each lane's stream advanced only where `go`.
#[inline(always)]
#[allow(clippy::needless_range_loop)]
fn words_lanes(go: &[bool; W], x: &mut [u32; W], c: &mut [u32; W]) -> [[f32; W]; 4] {
    let mut w = [[0u32; W]; 4];
    let (mut nx, mut nc) = (*x, *c);
    for k in 0..4 {
        for i in 0..W {
            w[k][i] = nx[i] ^ nc[i];
            let t = u64::from(MWC_A) * u64::from(nx[i]) + u64::from(nc[i]);
            nx[i] = t as u32;
            nc[i] = (t >> 32) as u32;
        }
    }
    for i in 0..W {
        x[i] = if go[i] { nx[i] } else { x[i] };
        c[i] = if go[i] { nc[i] } else { c[i] };
    }
    let mut u = [[0f32; W]; 4];
    for k in 0..4 {
        for i in 0..W {
            // `u32_to_unit_f32`: (x >> 8) + 1 < 2³¹ converts the same as i32.
            u[k][i] = ((w[k][i] >> 8) + 1) as i32 as f32 * (1.0 / 16_777_216.0);
        }
    }
    u
}

/// The birefringent deflections of the lanes in `go`: a block of four words each, the
/// direction in `d` replaced and the position in `r` shifted.
#[inline(always)]
#[allow(clippy::needless_range_loop)]
fn deflect_lanes(
    axis: [f32; 2],
    b: &BfrLanes,
    go: &[bool; W],
    x: &mut [u32; W],
    c: &mut [u32; W],
    d: &mut [[f32; W]; 3],
    r: &mut [[f32; W]; 3],
) {
    let u = words_lanes(go, x, c);
    for i in 0..W {
        let n = [d[0][i], d[1][i], d[2][i]];
        let (dir, shift) = deflect_l(
            axis,
            n,
            b.len[i],
            b.dot[i],
            b.sx[i],
            b.sy[i],
            b.mx[i],
            [u[0][i], u[1][i], u[2][i], u[3][i]],
        );
        for k in 0..3 {
            r[k][i] = if go[i] { r[k][i] + shift[k] } else { r[k][i] };
            d[k][i] = if go[i] { dir[k] } else { d[k][i] };
        }
    }
}

/// The scattering of the lanes in `go`, on a structure of arrays: each lane's block of four
/// MWC64X words (its stream advanced only where `go`), three uniforms for the phase function
/// and the azimuth, the next optical depth from the fourth; the directions in `d` replaced.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // indexed lane loops: the form LLVM vectorises
fn scatter_lanes(ph: &Phase, go: &[bool; W], x: &mut [u32; W], c: &mut [u32; W], d: &mut [[f32; W]; 3], depth: &mut [f32; W]) {
    let u = words_lanes(go, x, c);
    for i in 0..W {
        let dep = -math::ln(u[3][i]);
        let n = [d[0][i], d[1][i], d[2][i]];
        let r = scatter_l(ph, n, cosine_l(ph, u[0][i], u[1][i]), u[2][i]);
        depth[i] = if go[i] { dep } else { depth[i] };
        for k in 0..3 {
            d[k][i] = if go[i] { r[k] } else { d[k][i] };
        }
    }
}

/// One lane's layer walk set up as `walk::layer_walk` sets it up: the table index of its layer
/// (slice·layers + j), the step (±1), the index of the last layer it can reach, the first
/// distance to a boundary and the distance between boundaries.
#[derive(Clone, Copy, Debug, Default)]
pub struct WalkStart {
    pub idx: i32,
    pub step: i32,
    pub last: i32,
    pub dl: f32,
    pub dl_layer: f32,
}

impl WalkStart {
    /// `walk::layer_walk`'s lines before its loop (same operations).
    #[inline(always)]
    #[must_use]
    pub fn new(m: &Medium, slice: u32, zp: f32, nz: f32) -> Self {
        let base = slice as usize * m.n_layers;
        let j = super::walk::layer_of(m, zp);
        let (last, half) = if nz > 0.0 { (m.n_layers - 1, 0.5f32) } else { (0, -0.5f32) };
        let inv_nz = 1.0 / nz;
        let dl = if nz == 0.0 || j == last {
            f32::INFINITY
        } else {
            ((m.hmin + (j as f32 + half) * m.dh - zp) * inv_nz).max(0.0)
        };
        Self {
            idx: (base + j) as i32,
            step: if half > 0.0 { 1 } else { -1 },
            last: (base + last) as i32,
            dl,
            dl_layer: m.dh * inv_nz.abs(),
        }
    }
}

/// `walk::layer_walk`'s loop for eight lanes in AVX2 registers: each lane runs until its
/// segment ends (scattering or absorption), the loop until every lane in `active` has ended;
/// per lane the scalar loop's operations in its order (so its bits). Returns each lane's
/// (length, absorption depth left); lanes not in `active` get zeros.
///
/// # Safety
/// The CPU must have AVX2; every active lane's layers (from `start.idx` stepping to
/// `start.last`) must lie inside `m.sca` and `m.abs` (as `WalkStart::new` makes them).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[must_use]
pub unsafe fn walk8(
    m: &Medium,
    start: &[WalkStart; W],
    sca_depth: &[f32; W],
    tot: &[f32; W],
    abs_factor: &[f32; W],
    active: &[bool; W],
) -> ([f32; W], [f32; W]) {
    use std::arch::x86_64::*;
    let gi = |f: &dyn Fn(&WalkStart) -> i32| {
        let v: [i32; W] = std::array::from_fn(|i| f(&start[i]));
        _mm256_loadu_si256(v.as_ptr().cast())
    };
    let gf = |f: &dyn Fn(&WalkStart) -> f32| {
        let v: [f32; W] = std::array::from_fn(|i| f(&start[i]));
        _mm256_loadu_ps(v.as_ptr())
    };
    let mut idx = gi(&|w| w.idx);
    let step = gi(&|w| w.step);
    let last = gi(&|w| w.last);
    let mut dl = gf(&|w| w.dl);
    let dl_layer = gf(&|w| w.dl_layer);
    let af = _mm256_loadu_ps(abs_factor.as_ptr());
    let mut sd_left = _mm256_loadu_ps(sca_depth.as_ptr());
    let mut tot_left = _mm256_loadu_ps(tot.as_ptr());
    let act: [i32; W] = std::array::from_fn(|i| if active[i] { -1 } else { 0 });
    let mut act = _mm256_castsi256_ps(_mm256_loadu_si256(act.as_ptr().cast()));
    let mut length = _mm256_setzero_ps();
    let (mut out_len, mut out_tot) = (_mm256_setzero_ps(), _mm256_setzero_ps());
    let inf = _mm256_set1_ps(f32::INFINITY);
    let zero = _mm256_setzero_ps();
    while _mm256_movemask_ps(act) != 0 {
        let s = _mm256_mask_i32gather_ps::<4>(zero, m.sca.as_ptr(), idx, act);
        let a = _mm256_mul_ps(_mm256_mask_i32gather_ps::<4>(zero, m.abs.as_ptr(), idx, act), af);
        let (sd, ad) = (_mm256_mul_ps(s, dl), _mm256_mul_ps(a, dl));
        let ends = _mm256_and_ps(
            act,
            _mm256_or_ps(_mm256_cmp_ps::<_CMP_LE_OQ>(sd_left, sd), _mm256_cmp_ps::<_CMP_LE_OQ>(tot_left, ad)),
        );
        if _mm256_movemask_ps(ends) != 0 {
            // tot·s ≤ sca·a: absorbed (length + tot/a, 0), else scattered at ls = sca/s.
            let absorbed = _mm256_cmp_ps::<_CMP_LE_OQ>(_mm256_mul_ps(tot_left, s), _mm256_mul_ps(sd_left, a));
            let ls = _mm256_div_ps(sd_left, s);
            let len_abs = _mm256_add_ps(length, _mm256_div_ps(tot_left, a));
            let len_sca = _mm256_add_ps(length, ls);
            let tot_sca = _mm256_sub_ps(tot_left, _mm256_mul_ps(a, ls));
            let l = _mm256_blendv_ps(len_sca, len_abs, absorbed);
            let t = _mm256_blendv_ps(tot_sca, zero, absorbed);
            out_len = _mm256_blendv_ps(out_len, l, ends);
            out_tot = _mm256_blendv_ps(out_tot, t, ends);
            act = _mm256_andnot_ps(ends, act);
        }
        length = _mm256_blendv_ps(length, _mm256_add_ps(length, dl), act);
        sd_left = _mm256_blendv_ps(sd_left, _mm256_sub_ps(sd_left, sd), act);
        tot_left = _mm256_blendv_ps(tot_left, _mm256_sub_ps(tot_left, ad), act);
        let acti = _mm256_castps_si256(act);
        idx = _mm256_add_epi32(idx, _mm256_and_si256(step, acti));
        let at_last = _mm256_castsi256_ps(_mm256_cmpeq_epi32(idx, last));
        dl = _mm256_blendv_ps(dl, _mm256_blendv_ps(dl_layer, inf, at_last), act);
    }
    let (mut l, mut t) = ([0f32; W], [0f32; W]);
    _mm256_storeu_ps(l.as_mut_ptr(), out_len);
    _mm256_storeu_ps(t.as_mut_ptr(), out_tot);
    (l, t)
}

/// One lane: its photon between segments, streams and counts.
#[derive(Clone, Copy)]
struct Lane {
    st: PhotonState,
    id: u64,
    s: u32,
    segments: u32,
    live: bool,
}

/// The photons of one chunk, [`W`] at a time; hits appended to `out` in canonical order. Only
/// for media without hole ice (the caller checks).
///
/// # Safety
/// The CPU must have AVX2.
#[inline(always)]
#[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
pub(super) unsafe fn chunk(
    fast: &Fast,
    m: &Medium,
    doms: &DomIndex,
    sources: &[Source],
    seed: u64,
    mut ids: ChunkIds<'_>,
    out: &mut Vec<RawHit>,
) {
    debug_assert!(m.hole.is_none());
    let first_out = out.len();
    let blank = Lane {
        st: PhotonState {
            photon: crate::source::Photon {
                pos: [0.0; 3],
                dir: [0.0, 0.0, 1.0],
                time: 0.0,
                slice: 0,
                killed: false,
            },
            tot: 0.0,
            sca_depth: 1.0,
            skip: None,
            seq: 0,
            reach: f32::INFINITY,
        },
        id: 0,
        s: 0,
        segments: 0,
        live: false,
    };
    let mut lanes = [blank; W];
    let (mut x, mut c) = ([0u32; W], [0u32; W]);
    let mut exhausted = false;
    let mut go = [false; W];
    let mut d = [[0f32; W]; 3];
    let mut depth = [0f32; W];
    let (mut zp, mut nr, mut sdep, mut tots) = ([0f32; W], [0f32; W], [0f32; W], [0f32; W]);
    let mut ws = [WalkStart::default(); W];
    let mut act = [false; W];
    let (mut gb, mut bl, mut rr) = ([false; W], BfrLanes::default(), [[0f32; W]; 3]);
    loop {
        // Refill finished lanes with the chunk's next photons (emitted as `fast::photon` does).
        if !exhausted {
            for i in 0..W {
                while !lanes[i].live {
                    let Some((id, s)) = ids.next() else {
                        exhausted = true;
                        break;
                    };
                    let src = &sources[s as usize];
                    let mut rng = RandomStream::new(seed, tags::PHOTON, id);
                    let p = emit(src, m, &mut rng);
                    let killed = p.killed;
                    let mut st = PhotonState::start(p, &mut rng);
                    st.reach = fast.reach_of(st.photon.slice);
                    st.skip = src.own_dom;
                    if killed {
                        continue;
                    }
                    let w = Mwc64x::seed(&mut rng);
                    (x[i], c[i]) = (w.x, w.c);
                    lanes[i] = Lane {
                        st,
                        id,
                        s,
                        segments: 0,
                        live: true,
                    };
                }
                if exhausted {
                    break;
                }
            }
        }
        let mut any = false;
        // Each live lane's tilt-corrected height, absorption factor and walk set-up (scalar),
        // then the eight walks together.
        for i in 0..W {
            let lane = &mut lanes[i];
            // Out of reach of every module (reach.rs): the photon ends, as in `step_with`.
            if lane.live && crate::reach::out_of_reach(doms, lane.st.photon.pos, lane.st.tot, lane.st.reach) {
                lane.live = false;
            }
            act[i] = lane.live;
            if !lane.live {
                continue;
            }
            any = true;
            let p = &lane.st.photon;
            zp[i] = p.pos[2] - fast.zshift(m, p.pos);
            nr[i] = fast.absorption_factor(m, p.dir);
            ws[i] = WalkStart::new(m, p.slice, zp[i], p.dir[2]);
            sdep[i] = lane.st.sca_depth;
            tots[i] = lane.st.tot;
        }
        if !any {
            if exhausted {
                break;
            }
            continue; // every lane ended out of reach: refill them
        }
        // SAFETY: AVX2 (the caller's contract); `WalkStart::new` keeps the layers in the tables.
        let (seg_len, seg_tot) = unsafe { walk8(m, &ws, &sdep, &tots, &nr, &act) };
        // The rest of each live lane's segment up to its scattering (scalar).
        for i in 0..W {
            (go[i], gb[i]) = (false, false);
            let lane = &mut lanes[i];
            if !act[i] {
                continue;
            }
            let src = &sources[lane.s as usize];
            let st = &mut lane.st;
            let p = &mut st.photon;
            let seg = Segment {
                length: seg_len[i],
                tot: seg_tot[i],
                bfr: None,
            };
            let zp = zp[i];
            lane.segments += 1;
            if fast.first_hit(doms, p.pos, p.dir, seg.length, st.skip, src.own_dom).is_some() {
                // A segment that meets a DOM: the whole scalar segment (the same pure
                // functions again, then the hits and what follows them).
                let mut words = Mwc64x { x: x[i], c: c[i] };
                let end = step_with(fast, m, doms, src, lane.id, lane.s, st, &mut words, out);
                (x[i], c[i]) = (words.x, words.c);
                if matches!(end, SegmentEnd::Absorbed | SegmentEnd::Killed) || lane.segments >= MAX_SEGMENTS {
                    lane.live = false;
                }
                continue;
            }
            // No DOM met: `step_with`'s path for a bulk segment ending in a scattering.
            st.skip = None;
            st.tot = seg.tot;
            if seg.tot <= 0.0 {
                lane.live = false;
                continue;
            }
            let len = seg.length;
            let ocm = m.slices[p.slice as usize].ocm;
            p.pos = [p.pos[0] + len * p.dir[0], p.pos[1] + len * p.dir[1], p.pos[2] + len * p.dir[2]];
            p.time += len * ocm;
            if let Some(b) = &m.bfr {
                if len > 0.0 {
                    let (ra_l, rb_l) = fast.bfr_integrals(b, m, zp, p.dir[2], len);
                    let n = p.dir;
                    match &fast.bfr {
                        Some(f) => {
                            // `FastBfr::deflect`'s widths here, the rest in lanes.
                            let dot = f.axis[0] * n[0] + f.axis[1] * n[1];
                            let sra = ra_l.sqrt();
                            let w = f.widths(dot);
                            (bl.len[i], bl.dot[i]) = (len, dot);
                            (bl.sx[i], bl.sy[i], bl.mx[i]) = (sra * w[0], sra * w[1], rb_l * w[2]);
                            gb[i] = true;
                        }
                        None => {
                            let mut words = Mwc64x { x: x[i], c: c[i] };
                            let u = words.block4().map(u32_to_unit_f32);
                            (x[i], c[i]) = (words.x, words.c);
                            let (dir, shift) = fast.deflect(b, p.dir, len, ra_l, rb_l, u);
                            p.pos = [p.pos[0] + shift[0], p.pos[1] + shift[1], p.pos[2] + shift[2]];
                            p.dir = dir;
                        }
                    }
                }
            }
            go[i] = true;
            for k in 0..3 {
                d[k][i] = p.dir[k];
                rr[k][i] = p.pos[k];
            }
            depth[i] = st.sca_depth;
        }
        // The scatterings, in lanes.
        if let Some(f) = &fast.bfr {
            if gb.iter().any(|&g| g) {
                deflect_lanes(f.axis, &bl, &gb, &mut x, &mut c, &mut d, &mut rr);
            }
        }
        scatter_lanes(&fast.phase, &go, &mut x, &mut c, &mut d, &mut depth);
        for i in 0..W {
            if go[i] {
                let lane = &mut lanes[i];
                lane.st.photon.dir = [d[0][i], d[1][i], d[2][i]];
                lane.st.photon.pos = [rr[0][i], rr[1][i], rr[2][i]];
                lane.st.sca_depth = depth[i];
                if lane.segments >= MAX_SEGMENTS {
                    lane.live = false;
                }
            }
        }
    }
    // Canonical order: photon id, then the hit's ordinal within its photon.
    out[first_out..].sort_unstable_by_key(|h| (h.photon, h.seq));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lane functions equal the scalar fast path's bit for bit.
    #[test]
    fn lane_functions_equal_the_scalar_ones() {
        let mut r = RandomStream::new(91, 0, 0);
        let aniso = crate::medium::AnisotropyParams {
            azx: 130f32.to_radians().cos(),
            azy: 130f32.to_radians().sin(),
            k: [(-0.069f32).exp(), 0.0345f32.exp(), 1.0 / ((-0.069f32).exp() * 0.0345f32.exp())],
            old_abs_scale: 1.0,
            new_abs: None,
        };
        for ph in [
            Phase::new(0.9, 0.35, None),
            Phase::new(0.9, 0.35, Some(&aniso)),
            Phase::new(0.0, 0.0, None),
        ] {
            for _ in 0..200_000 {
                let w = [r.next_u32(), r.next_u32(), r.next_u32()];
                let u = w.map(u32_to_unit_f32);
                assert_eq!(((w[0] >> 8) + 1) as i32 as f32 * (1.0 / 16_777_216.0), u[0]);
                assert_eq!(cosine_l(&ph, u[0], u[1]).to_bits(), ph.cosine(u[0], u[1]).to_bits());
                let (s, c) = (sincos_turn_l(u[2]), math::sincos_turn(u[2]));
                assert_eq!((s.0.to_bits(), s.1.to_bits()), (c.0.to_bits(), c.1.to_bits()));
                let n = crate::scatter::normalize([r.uniform() - 0.5, r.uniform() - 0.5, r.uniform() - 0.5]);
                // Also the poles (the rotation's other frame).
                let n = if r.uniform() < 0.05 {
                    [0.0, 0.0, if u[0] < 0.5 { 1.0 } else { -1.0 }]
                } else {
                    n
                };
                let cos_t = ph.cosine(u[0], u[1]);
                let (a, b) = (scatter_l(&ph, n, cos_t, u[2]), ph.scatter(n, cos_t, u[2]));
                assert_eq!(a.map(f32::to_bits), b.map(f32::to_bits), "{n:?} {cos_t} {}", u[2]);
            }
        }
    }
    /// Eight walks in AVX2 lanes equal the scalar fast walk bit for bit (random heights inside
    /// and outside the table, directions including horizontal ones, some lanes off).
    #[test]
    fn eight_walks_equal_the_scalar_walk() {
        if !(is_x86_feature_detected!("avx2")) {
            return; // nothing to compare on this CPU (the lanes are not used without AVX2)
        }
        let det = crate::detector::Detector::build(&crate::detector::DetectorOptions {
            ice_dir: Some(crate::test_data::data_dir().join("ice/spice_ftp-v3m")),
            ..Default::default()
        })
        .unwrap();
        let m = &det.medium;
        let mut r = RandomStream::new(92, 0, 0);
        for _ in 0..40_000 {
            let mut ws = [WalkStart::default(); W];
            let (mut s, mut t, mut f, mut act) = ([0f32; W], [0f32; W], [0f32; W], [false; W]);
            let mut args = [(0u32, 0f32, 0f32); W];
            for i in 0..W {
                let zp = m.hmin + (m.n_layers as f32 + 4.0) * m.dh * r.uniform() - 2.0 * m.dh;
                let nz = if r.uniform() < 0.02 { 0.0 } else { 2.0 * r.uniform() - 1.0 };
                let slice = r.next_u32() % m.slices.len() as u32;
                (s[i], t[i], f[i], act[i]) = (r.exponential(), 3.0 * r.exponential(), 0.8 + 0.4 * r.uniform(), r.uniform() < 0.9);
                ws[i] = WalkStart::new(m, slice, zp, nz);
                args[i] = (slice, zp, nz);
            }
            // SAFETY: AVX2 checked above; the starts come from `WalkStart::new`.
            let (len, tot) = unsafe { walk8(m, &ws, &s, &t, &f, &act) };
            for i in 0..W {
                if !act[i] {
                    continue;
                }
                let (slice, zp, nz) = args[i];
                let e = super::super::walk::layer_walk(m, slice, zp, nz, s[i], t[i], f[i]);
                assert_eq!(
                    (len[i].to_bits(), tot[i].to_bits()),
                    (e.length.to_bits(), e.tot.to_bits()),
                    "{:?} {e:?}",
                    args[i]
                );
            }
        }
    }
    /// The lane deflection equals `FastBfr::deflect` bit for bit (spice_ftp-v3m's table).
    #[test]
    fn lane_deflection_equals_the_scalar_one() {
        let d = crate::test_data::data_dir().join("ice/spice_ftp-v3m");
        let cfg = crate::config::Config::read(&d.join("cfg.txt")).unwrap();
        let layers = crate::ice::Layers::read_dir(&d, None, None).unwrap();
        let b = crate::birefringence::Birefringence::new(&cfg, &layers, 1.0, 1.0).unwrap();
        let f = super::super::birefringence::FastBfr::new(&b);
        let mut r = RandomStream::new(93, 0, 0);
        for i in 0..200_000 {
            let n = crate::scatter::normalize([r.uniform() - 0.5, r.uniform() - 0.5, r.uniform() - 0.5]);
            // Also directions along the flow axis (the frame's other branch) and vertical ones.
            let n = match i % 50 {
                0 => [f.axis[0], f.axis[1], 0.0],
                1 => [0.0, 0.0, 1.0],
                _ => n,
            };
            let (len, ra, rb) = (20.0 * r.uniform(), 20.0 * r.uniform(), 20.0 * r.uniform());
            let u = [r.next_u32(), r.next_u32(), r.next_u32(), r.next_u32()].map(u32_to_unit_f32);
            let dot = f.axis[0] * n[0] + f.axis[1] * n[1];
            let (sra, w) = (ra.sqrt(), f.widths(dot));
            let (dl, sl) = deflect_l(f.axis, n, len, dot, sra * w[0], sra * w[1], rb * w[2], u);
            let (de, se) = f.deflect(n, len, ra, rb, u);
            assert_eq!(
                (dl.map(f32::to_bits), sl.map(f32::to_bits)),
                (de.map(f32::to_bits), se.map(f32::to_bits)),
                "{n:?}"
            );
        }
    }
}
