// Photon propagation kernel: the CUDA twin of crates/photon/src/{propagate,collision,scatter,
// source,medium,tilt}.rs (spec §3.5). Every device function mirrors the Rust function of the
// same name, statement by statement and in the same order of random draws, so that in precise
// mode (no FMA contraction, IEEE division/sqrt, no fast-math intrinsics) GPU and CPU follow the
// same photon paths except for rare last-bit differences of the transcendental functions.
//
// One thread per photon, grid-stride over the photon ids of a batch; hits go to a buffer through
// an atomic counter (the host re-runs a batch in halves when the buffer overflows; nothing is
// dropped) and are sorted by (photon, ordinal) on the host.
#include "philox.cuh"

#define WD_WNUM 512
#define WD_TAG_PHOTON 2u
#define WD_MAX_SEGMENTS (1u << 20)
// Hits one segment may record (propagate.rs MAX_HITS_PER_SEGMENT): coincident modules of a
// malformed geometry would otherwise hold a photon at one point, recording hits without end.
#define WD_MAX_SEGMENT_HITS 64
#define WD_ZOFF 1948.07
#define WD_TAU 6.283185307179586f
#define WD_C_VACUUM 0.29979246f

// Must match GpuParams in crates/photon/src/gpu.rs (size and offsets are checked on both sides).
struct PhotonParams {
    const float* slice_wavelength;
    const float* slice_n_phase;
    const float* slice_ocm;
    const float* abs;
    const float* sca;
    const double* tilt_depths;
    const double* tilt_dist;
    const double* tilt_shifts;
    const int* t2_column;
    const float* str_xyr;
    const unsigned int* str_first_count;
    const float* dom_pos;
    const unsigned int* dom_id;
    const unsigned int* cell_start;
    const unsigned int* cell_strings;
    const double* src_f64;
    const int* src_i32;
    const unsigned long long* src_offsets;
    void* hits;
    unsigned long long* hit_count;
    double tilt_r0x, tilt_r0y, tilt_ca, tilt_sa;
    double t2_e1x, t2_e1y, t2_e2x, t2_e2y, t2_first1, t2_step1, t2_first2, t2_step2, t2_cut1, t2_cut2;
    unsigned long long photon_lo, photon_hi, seed, hit_capacity;
    float hmin, dh, g, f_sl, azx, azy, k0, k1, k2, old_abs_scale, na0, na1, na2;
    float grid_x0, grid_y0, grid_cell, r_eff, oversize;
    int n_layers, has_aniso, has_new_abs, tilt_kind, tilt_n_depths, tilt_n_dist, t2_n1, t2_n2, t2_nodes;
    int grid_nx, grid_ny, n_sources;
    // Resampled 1-D tilt (WD_TILT_LUT): shifts on a regular (depth, distance) grid, float.
    int lut_n_depth, lut_n_dist;
    // Fractional table indices as affine functions of (x, y, z), coefficients from the host:
    // depth row fd = d_0 − z·d_z, distance column fx = x·x_x + y·x_y − x_0.
    float lut_d0, lut_dz, lut_xx, lut_xy, lut_x0;
    int n_strings;
    const float* tilt_lut;
    // Factored coefficients (WD_FACTORED_ICE): per layer [sb, se, c1, t], per slice [la, lk, ae, 0].
    const float* layer_f;
    const float* slice_f;
    // Clearance grid (WD_CLEARANCE, collision.rs): per cell a lower bound on the horizontal
    // distance to all but the nearest string's cylinders, that string's x, y and radius + margin
    // (float4), and its index.
    const float* clearance;
    const unsigned int* clear_near;
    float clear_inv;  // 1 / cell size
    int clear_nx, clear_ny;
    float inv_dh;  // 1 / layer thickness (medium.rs: layer_of)
    // Anisotropy constants from the host (medium.rs: squares, inverse_k): 1/k, l = k², 1/l,
    // B2 = Σ 1/l.
    float ik0, ik1, ik2, l0, l1, l2, il0, il1, il2, b2;
    int has_sca_aniso;  // k ≠ (1, 1, 1): the scattering anisotropy on (WD_ISO_SCATTER)
    int aniso_pad;
    // Per-string z index (collision.rs: z_index): [z0, 1/dz] per string, WD_Z_BINS first-DOM
    // entries per string.
    const float* z_grid;
    const unsigned int* z_start;
    // Birefringence (birefringence.rs): per-layer ra, rb; p0…p11; ice-flow axis; on/off.
    const float* bfr_ra;
    const float* bfr_rb;
    float bfr_p[12];
    float bfr_ax, bfr_ay;
    int has_bfr;
    float bfr_rb0;  // icemodel.dat's rb column when the same in every layer (WD_BFR_RB_CONST, set by the host), else −1
    // The 2-D tilt map resampled on a regular (depth, x, y) grid (WD_TILT_LUT, gpu.rs tilt2_lut).
    const float* tilt_lut2;
    int lut2_nx, lut2_ny, lut2_nd;
    float lut2_x0, lut2_y0, lut2_inv_dxy, lut2_d0, lut2_dz;
    int lut2_pad[2];
    // Birefringence widths (σx, σy, μx, 0) at s/(s + c) = k/WD_BFR_BINS (WD_BFR_TABLE, fast mode).
    const float4* bfr_table;
    // Hole ice (hole.rs HoleParams, WD_HOLE): column radius, scattering and absorption
    // coefficients, phase function (g, f_SL); on/off.
    float hole_r, hole_sca, hole_abs, hole_g, hole_f_sl;
    int has_hole;
    // The 2-D tilt map's own lattice in float (WD_TILT2_LATTICE, gpu.rs tilt2_lattice): per depth
    // row k and node j·n1 + i the pair (shift at row k, at row k + 1); lattice coordinates
    // fi = x·lat[0] + y·lat[1] + lat[2], fj = x·lat[3] + y·lat[4] + lat[5]; cuts lat[6], lat[7].
    const float2* tilt_lat;
    float lat[8];
    // Multi-PMT modules' shapes (WD_SHAPES, collision.rs): per DOM in the order of dom_pos its
    // [R, F] (F = Rz/Rr, < 0 a cylinder), and xR·max(R·|F|) for the z range of the search.
    const float2* dom_shape;
    float rz_eff;
    int shape_pad;
    // The bulk phase functions' constants (WD_FAST_PHASE, gpu.rs phase_constants): simplified
    // Liu's (1 − g)/(1 + g); Henyey–Greenstein's 1 − g², 1 + g², 1/(2g).
    float sl_exp, hg[3];
    // The clearance grid's second level (collision.rs clear_more): per cell the second to fourth
    // nearest strings (~0u: none) and, as float bits, the bound on all strings beyond them.
    const uint4* clear_more;
    // The out-of-reach test (WD_REACH, reach.rs): per slice the distance bound per unit of
    // absorption depth; the z range of every DOM widened by rz_eff.
    const float* reach;
    float z_lo, z_hi;
};
static_assert(sizeof(PhotonParams) == 832, "PhotonParams layout differs from gpu.rs");
#define WD_BFR_BINS 512
#define WD_Z_BINS 128
// (NVRTC has no offsetof: field offsets are checked at run time by `layout`, see gpu_check.rs.)

// Must match GpuHit in gpu.rs.
struct GpuHit {
    unsigned long long photon;
    unsigned int source, seq, dom;
    float time;
    unsigned int slice;
    float dir[3];
    float impact[3];
    unsigned int pad;
};
static_assert(sizeof(GpuHit) == 56, "GpuHit layout differs from gpu.rs");

struct V3 { float x, y, z; };

// WD_TWIN_MATH (precise mode, gpu.rs precise_options; issue #29): the transcendental functions the
// kernel calls (logf, expf, powf, sinf/cosf/sincosf) replaced by the CPU fast mode's approximations,
// twins of fast/math.rs (fast_round, fast_ln, fast_exp2, fast_powf, fast_sincos_turn: math::round,
// ln, exp2, powf, sincos_turn), which are built from +, −, ×, ÷ and bit operations only. In a
// precise build (IEEE division and square root, no flush to zero) with every fast-only switch they
// make the GPU side of the CPU's precise twin (fast/twin.rs). The sine and cosine of 2π·u go
// through wd_sincos_turn (below) as the CPU's sincos_turn(u); elsewhere an angle goes through one
// more rounding (radians to turns), and powf skips x¹ inside (fast/mod.rs skips it at the
// absorption's call).
//
// WD_TWIN_FMA (with WD_TWIN_MATH in a build without contraction): the polynomials' Horner steps
// and ln's last sum written as explicit fmaf(a, b, c) (one rounding, as Rust's f32::mul_add), so
// that a twin built with --fmad=false keeps these FMAs, which a CPU twin reproduces bit for bit.
// Without it WD_MAD(a, b, c) is a·b + c as before. WD_TWIN_FMA_GEOM (implies WD_TWIN_FMA; part
// of `--precise`, gpu.rs precise_twin) fuses the per-step geometry as well: the rotation and its
// normalisation, the anisotropy frame, the scattering's sine, the birefringent step, the layer
// walk, the collision tests and the step's end, with 1/sqrt by Newton (wd_rsqrt); the CPU side is
// fast::math::FusedGeom. Without it those lines are the code as before, so no other build changes.
#if defined(WD_TWIN_FMA_GEOM) && !defined(WD_TWIN_FMA)
#define WD_TWIN_FMA
#endif
#ifdef WD_TWIN_FMA
#define WD_MAD(a, b, c) fmaf((a), (b), (c))
#else
#define WD_MAD(a, b, c) ((a) * (b) + (c))
#endif
#ifdef WD_TWIN_MATH
#ifdef WD_TWIN_FMA_GEOM
// 1/x for x = m + 1 ∈ [1 + √½, 1 + √2] (ln's quotient) without the IEEE division: the relative
// minimax line (error ≤ 1.5 %), then two Newton steps r ← r + r·(1 − x·r) in fmaf (≤ 5·10⁻⁸
// before the last rounding). fast/math.rs recip_ln, the same operations.
__device__ __forceinline__ float wd_recip_ln(float x) {
    float r = fmaf(-0.239016f, x, 0.9850615f);
    r = fmaf(r, fmaf(-x, r, 1.0f), r);
    return fmaf(r, fmaf(-x, r, 1.0f), r);
}
#endif
__device__ __forceinline__ float fast_round(float x) {
    float y = x + 0.5f;
    float t = (float)(int)y;
    return t > y ? t - 1.0f : t;
}
__device__ __forceinline__ float fast_ln(float x) {
    unsigned int bits = __float_as_uint(x);
    unsigned int t = bits - 0x3f3504f3u;
    int e = ((int)t) >> 23;
    float m = __uint_as_float(bits - ((unsigned int)e << 23));
#ifdef WD_TWIN_FMA_GEOM
    float s = (m - 1.0f) * wd_recip_ln(m + 1.0f);
#else
    float s = (m - 1.0f) / (m + 1.0f);
#endif
    float s2 = s * s;
    float q = WD_MAD(s2, WD_MAD(s2, WD_MAD(s2, WD_MAD(s2, 2.0f / 9.0f, 2.0f / 7.0f), 2.0f / 5.0f), 2.0f / 3.0f), 2.0f);
    return WD_MAD((float)e, 0.693147180559945f, s * q);
}
__device__ __forceinline__ float fast_exp2(float y) {
    y = fminf(fmaxf(y, -126.0f), 127.0f);
    float n = fast_round(y);
    float f = (y - n) * 0.693147180559945f;
    float q = WD_MAD(f, WD_MAD(f, WD_MAD(f, WD_MAD(f, WD_MAD(f, WD_MAD(f, WD_MAD(f, 1.0f / 5040.0f, 1.0f / 720.0f), 1.0f / 120.0f),
                                                         1.0f / 24.0f), 1.0f / 6.0f), 0.5f), 1.0f), 1.0f);
    return q * __uint_as_float((unsigned int)((int)n + 127) << 23);
}
__device__ __forceinline__ float fast_exp(float y) { return fast_exp2(y * 1.442695040888963f); }
__device__ __forceinline__ float fast_powf(float x, float y) {
    return y == 1.0f ? x : fast_exp2(y * (fast_ln(x) * 1.442695040888963f));
}
__device__ __forceinline__ void fast_sincos_turn(float t, float* sp, float* cp) {
#ifdef WD_TWIN_FMA_GEOM
    // round(4t) with 4t + ½ as one fmaf: 4t is exact, so the same value (no CPU change).
    const float y4 = fmaf(4.0f, t, 0.5f), f4 = (float)(int)y4;
    float q4 = f4 > y4 ? f4 - 1.0f : f4;
#else
    float q4 = fast_round(4.0f * t);
#endif
    // t − q4/4 as one fmaf (the product is exact, so the same value as t − 0.25·q4: no CPU change).
    float x = WD_MAD(-0.25f, q4, t) * 6.283185307179586f, x2 = x * x;
    float s = x * WD_MAD(x2, WD_MAD(x2, WD_MAD(x2, WD_MAD(x2, 1.0f / 362880.0f, -1.0f / 5040.0f), 1.0f / 120.0f), -1.0f / 6.0f), 1.0f);
    float c = WD_MAD(x2, WD_MAD(x2, WD_MAD(x2, WD_MAD(x2, 1.0f / 40320.0f, -1.0f / 720.0f), 1.0f / 24.0f), -0.5f), 1.0f);
    unsigned int q = (unsigned int)(long long)q4, odd = 0u - (q & 1u);
    unsigned int sb = __float_as_uint(s), cb = __float_as_uint(c);
    *sp = __uint_as_float(((cb & odd) | (sb & ~odd)) ^ ((q & 2u) << 30));
    *cp = __uint_as_float(((sb & odd) | (cb & ~odd)) ^ (((q + 1u) & 2u) << 30));
}
__device__ __forceinline__ void fast_sincos(float x, float* sp, float* cp) { fast_sincos_turn(x * 0.15915494309189535f, sp, cp); }
__device__ __forceinline__ float fast_sin(float x) { float s, c; fast_sincos(x, &s, &c); return s; }
__device__ __forceinline__ float fast_cos(float x) { float s, c; fast_sincos(x, &s, &c); return c; }
#define logf(x) fast_ln(x)
#define expf(x) fast_exp(x)
#define powf(x, y) fast_powf(x, y)
#define sincosf(x, s, c) fast_sincos(x, s, c)
#define sinf(x) fast_sin(x)
#define cosf(x) fast_cos(x)
#endif

// The sine and cosine of 2π·u for a uniform u: with WD_TWIN_MATH the CPU fast mode's
// sincos_turn(u) itself (fast/math.rs; 2π·u is not rounded first, as the CPU does not round it),
// else sincosf(2π·u).
#ifdef WD_TWIN_MATH
__device__ __forceinline__ void wd_sincos_turn(float u, float* sp, float* cp) { fast_sincos_turn(u, sp, cp); }
__device__ __forceinline__ float wd_cos_turn(float u) { float s, c; fast_sincos_turn(u, &s, &c); return c; }
#else
__device__ __forceinline__ void wd_sincos_turn(float u, float* sp, float* cp) { sincosf(WD_TAU * u, sp, cp); }
__device__ __forceinline__ float wd_cos_turn(float u) { return cosf(WD_TAU * u); }
#endif

// With WD_TWIN_FMA_GEOM, 1/sqrt(x) in the twin's per-step geometry (the rotation and its frame,
// the absorption anisotropy, the birefringent step's normal) by Newton's iteration from the
// exponent-halving guess, three steps in fmaf: within 3 ulp, without the IEEE square root and
// division, which a precise build makes ~16 instructions with a slow path (fast/math.rs rsqrt).
#ifdef WD_TWIN_FMA_GEOM
__device__ __forceinline__ float wd_rsqrt(float x) {
    const float h = 0.5f * x;
    float y = __uint_as_float(0x5f375a86u - (__float_as_uint(x) >> 1));
    for (int k = 0; k < 3; ++k) y *= fmaf(-h, y * y, 1.5f);
    return y;
}
#else
__device__ __forceinline__ float wd_rsqrt(float x) { return 1.0f / sqrtf(x); }
#endif

__device__ __forceinline__ V3 normalize(V3 v) {
    float r = 1.0f / sqrtf(v.x * v.x + v.y * v.y + v.z * v.z);
    return V3{v.x * r, v.y * r, v.z * r};
}

// scatter.rs ---------------------------------------------------------------------------------
__device__ __forceinline__ float henyey_greenstein(float g, float u) {
    if (fabsf(g) < 1e-6f) return 2.0f * u - 1.0f;
    float s = 2.0f * u - 1.0f;
    float t = (1.0f - g * g) / (1.0f + g * s);
    return fminf(fmaxf((1.0f + g * g - t * t) / (2.0f * g), -1.0f), 1.0f);
}

__device__ __forceinline__ float simplified_liu(float g, float u) {
    return fminf(fmaxf(2.0f * powf(u, (1.0f - g) / (1.0f + g)) - 1.0f, -1.0f), 1.0f);
}

__device__ __forceinline__ float scattering_cosine(float g, float f_sl, float u_choice, float u_angle) {
#ifdef WD_SELECT_SCATTER
    // Both cosines evaluated and one selected: the same values as the branch, without the
    // divergent branch when a warp's lanes choose differently (the mix is per scattering).
    float sl = simplified_liu(g, u_angle), hg = henyey_greenstein(g, u_angle);
    return u_choice <= f_sl ? sl : hg;
#else
    return u_choice <= f_sl ? simplified_liu(g, u_angle) : henyey_greenstein(g, u_angle);
#endif
}

#ifdef WD_FAST_PHASE
// scattering_cosine for the bulk ice with g's constants from the host (fast mode): the same
// formulas without recomputing 1 ± g², 1/(2g) and (1 − g)/(1 + g) each scattering.
__device__ __forceinline__ float bulk_cosine(const PhotonParams& P, float u_choice, float u) {
#ifdef WD_TWIN_FMA_GEOM
    // 2x − 1 as one fmaf is the same value (2x is exact); 1 + g·s and 1 + g² − t² are fused.
    float sl = fminf(fmaxf(fmaf(2.0f, powf(u, P.sl_exp), -1.0f), -1.0f), 1.0f);
    float s = fmaf(2.0f, u, -1.0f);
    float t = P.hg[0] / fmaf(P.g, s, 1.0f);
    float hg = P.hg[2] == 0.0f ? s : fminf(fmaxf(fmaf(-t, t, P.hg[1]) * P.hg[2], -1.0f), 1.0f);
#else
    float sl = fminf(fmaxf(2.0f * powf(u, P.sl_exp) - 1.0f, -1.0f), 1.0f);
    float s = 2.0f * u - 1.0f;
    float t = P.hg[0] / (1.0f + P.g * s);
    float hg = P.hg[2] == 0.0f ? s : fminf(fmaxf((P.hg[1] - t * t) * P.hg[2], -1.0f), 1.0f);
#endif
    return u_choice <= P.f_sl ? sl : hg;
}
#endif

// rotate_unnormalised (scatter.rs): e1 in the plane of n and z, e2 horizontal, from
// s² = nx² + ny²; the x and y axes along the z axis itself (selects, no branch).
__device__ __forceinline__ V3 rotate_unnormalised(V3 n, float cos_t, float sin_t, float u_phi) {
    float sp, cp;
    wd_sincos_turn(u_phi, &sp, &cp);
#ifdef WD_TWIN_FMA_GEOM
    float s2 = fmaf(n.y, n.y, n.x * n.x);
#else
    float s2 = n.x * n.x + n.y * n.y;
#endif
    bool axis = !(s2 > 1e-20f);
    float inv_s = axis ? 0.0f : wd_rsqrt(s2);
    float zi = n.z * inv_s;
    V3 e1 = axis ? V3{1.0f, 0.0f, 0.0f} : V3{n.x * zi, n.y * zi, -s2 * inv_s};
    V3 e2 = axis ? V3{0.0f, 1.0f, 0.0f} : V3{-n.y * inv_s, n.x * inv_s, 0.0f};
    float a = sin_t * cp, b = sin_t * sp;
#ifdef WD_TWIN_FMA_GEOM
    return V3{fmaf(b, e2.x, fmaf(a, e1.x, n.x * cos_t)), fmaf(b, e2.y, fmaf(a, e1.y, n.y * cos_t)),
              fmaf(b, e2.z, fmaf(a, e1.z, n.z * cos_t))};
#else
    return V3{n.x * cos_t + a * e1.x + b * e2.x, n.y * cos_t + a * e1.y + b * e2.y, n.z * cos_t + a * e1.z + b * e2.z};
#endif
}

__device__ __forceinline__ V3 rotate(V3 n, float cos_t, float sin_t, float u_phi) {
#ifdef WD_TWIN_FMA_GEOM
    V3 v = rotate_unnormalised(n, cos_t, sin_t, u_phi);
    float r = wd_rsqrt(fmaf(v.z, v.z, fmaf(v.y, v.y, v.x * v.x)));
    return V3{v.x * r, v.y * r, v.z * r};
#else
    return normalize(rotate_unnormalised(n, cos_t, sin_t, u_phi));
#endif
}

__device__ __forceinline__ V3 to_frame(const PhotonParams& P, V3 n) {
#ifdef WD_TWIN_FMA_GEOM
    return V3{fmaf(P.azy, n.y, P.azx * n.x), fmaf(P.azx, n.y, -P.azy * n.x), n.z};
#else
    return V3{P.azx * n.x + P.azy * n.y, -P.azy * n.x + P.azx * n.y, n.z};
#endif
}

__device__ __forceinline__ V3 from_frame(const PhotonParams& P, V3 m) {
#ifdef WD_TWIN_FMA_GEOM
    return V3{fmaf(-P.azy, m.y, P.azx * m.x), fmaf(P.azx, m.y, P.azy * m.x), m.z};
#else
    return V3{P.azx * m.x - P.azy * m.y, P.azy * m.x + P.azx * m.y, m.z};
#endif
}

__device__ __forceinline__ V3 scatter(const PhotonParams& P, V3 n, float cos_t, float u_phi) {
#ifdef WD_TWIN_FMA_GEOM
    float sin_t = sqrtf(fmaxf(fmaf(-cos_t, cos_t, 1.0f), 0.0f));
#else
    float sin_t = sqrtf(fmaxf(1.0f - cos_t * cos_t, 0.0f));
#endif
#ifdef WD_ISO_SCATTER
    // k = (1, 1, 1) (spice_ftp-v3m, spice_bfr-v2: only the absorption is anisotropic): the frame
    // change, rescaling and renormalisation below are the identity up to rounding (the rotation's
    // axes e1, e2 are built relative to z, which the frame's rotation about z leaves alone).
    if (!P.has_sca_aniso) return rotate(n, cos_t, sin_t, u_phi);
#else
    if (!P.has_aniso) return rotate(n, cos_t, sin_t, u_phi);
#endif
    V3 m = to_frame(P, n);
    m = normalize(V3{P.k0 * m.x, P.k1 * m.y, P.k2 * m.z});
    m = rotate_unnormalised(m, cos_t, sin_t, u_phi);  // normalised after the rescaling
    m = normalize(V3{m.x * P.ik0, m.y * P.ik1, m.z * P.ik2});
    return from_frame(P, m);
}

// medium.rs ----------------------------------------------------------------------------------
__device__ __forceinline__ float absorption_factor(const PhotonParams& P, V3 n) {
    if (!P.has_aniso) return 1.0f;
    V3 m = to_frame(P, n);
    float nr = 1.0f;
    if (P.old_abs_scale != 0.0f) {
        float s0 = m.x * m.x, s1 = m.y * m.y, s2 = m.z * m.z;
#ifdef WD_TWIN_FMA_GEOM
        float nb = fmaf(s2, P.il2, fmaf(s1, P.il1, s0 * P.il0));
        float an = fmaf(s2, P.l2, fmaf(s1, P.l1, s0 * P.l0));
#else
        float nb = s0 * P.il0 + s1 * P.il1 + s2 * P.il2;
        float an = s0 * P.l0 + s1 * P.l1 + s2 * P.l2;
#endif
        nr = powf((P.b2 - nb) * an / 2.0f, P.old_abs_scale);
    }
    if (P.has_new_abs) {
        float v0 = P.na0 * m.x, v1 = P.na1 * m.y, v2 = P.na2 * m.z;
#ifdef WD_TWIN_FMA_GEOM
        nr *= wd_rsqrt(fmaf(v2, v2, fmaf(v1, v1, v0 * v0)));
#else
        nr /= sqrtf(v0 * v0 + v1 * v1 + v2 * v2);
#endif
    }
    return nr;
}

__device__ __forceinline__ int layer_of(const PhotonParams& P, float zp) {
    float i = roundf((zp - P.hmin) * P.inv_dh);
    if (i <= 0.0f) return 0;
    return min((int)i, P.n_layers - 1);
}

// tilt.rs ------------------------------------------------------------------------------------
// partition_point(x <= v), clamped to [1, n-1], minus 1; fraction clamped to [0, 1].
__device__ __forceinline__ int bracket(const double* xs, int n, double v, double* f) {
    if (n < 2) { *f = 0.0; return 0; }
    int lo = 0, hi = n;
    while (lo < hi) { int mid = (lo + hi) / 2; if (xs[mid] <= v) lo = mid + 1; else hi = mid; }
    int k = min(max(lo, 1), n - 1) - 1;
    *f = fmin(fmax((v - xs[k]) / (xs[k + 1] - xs[k]), 0.0), 1.0);
    return k;
}

__device__ __forceinline__ double t2_node(const PhotonParams& P, int row, int i, int j) {
    int c = P.t2_column[j * P.t2_n1 + i];
    return c < 0 ? 0.0 : P.tilt_shifts[(size_t)row * P.t2_nodes + c];
}

__device__ double t2_at(const PhotonParams& P, int row, double fi, double fj) {
    for (int it = 0; it < 3; ++it) {
        fi = fmin(fmax(fi, 0.0), (double)(P.t2_n1 - 1));
        fj = fmin(fmax(fj, 0.0), (double)(P.t2_n2 - 1));
        double d = fi - fj;
        if (d > P.t2_cut1 - 1.0) {
            double e = (d - (P.t2_cut1 - 1.0)) / 2.0;
            fi -= e; fj += e;
        } else if (d < 1.0 - P.t2_cut2) {
            double e = ((1.0 - P.t2_cut2) - d) / 2.0;
            fi += e; fj -= e;
        }
    }
    int i0 = min((int)floor(fi), P.t2_n1 - 2);
    int j0 = min((int)floor(fj), P.t2_n2 - 2);
    double a = fi - (double)i0, b = fj - (double)j0;
    double s00 = t2_node(P, row, i0, j0), s11 = t2_node(P, row, i0 + 1, j0 + 1);
    if (a >= b) return s00 * (1.0 - a) + t2_node(P, row, i0 + 1, j0) * (a - b) + s11 * b;
    return s00 * (1.0 - b) + t2_node(P, row, i0, j0 + 1) * (b - a) + s11 * a;
}

__device__ double zshift(const PhotonParams& P, double x, double y, double z) {
    if (P.tilt_kind == 1) {
        double fi, fj;
        int i = bracket(P.tilt_depths, P.tilt_n_depths, WD_ZOFF - z, &fi);
        double dist = (x - P.tilt_r0x) * P.tilt_ca + (y - P.tilt_r0y) * P.tilt_sa;
        int j = bracket(P.tilt_dist, P.tilt_n_dist, dist, &fj);
        const double* r0 = P.tilt_shifts + (size_t)i * P.tilt_n_dist;
        const double* r1 = r0 + P.tilt_n_dist;
        double a = r0[j] * (1.0 - fj) + r0[j + 1] * fj;
        double b = r1[j] * (1.0 - fj) + r1[j + 1] * fj;
        return a * (1.0 - fi) + b * fi;
    }
    if (P.tilt_kind == 2) {
        double f;
        int k = bracket(P.tilt_depths, P.tilt_n_depths, WD_ZOFF - z, &f);
        double det = P.t2_e1x * P.t2_e2y - P.t2_e2x * P.t2_e1y;
        double u = (x * P.t2_e2y - y * P.t2_e2x) / det;
        double v = (P.t2_e1x * y - P.t2_e1y * x) / det;
        double fi = (u - P.t2_first1) / P.t2_step1, fj = (v - P.t2_first2) / P.t2_step2;
        return t2_at(P, k, fi, fj) * (1.0 - f) + t2_at(P, k + 1, fi, fj) * f;
    }
    return 0.0;
}

// Tilt shift from the resampled float tables (WD_TILT_LUT: the 1-D model, or the 2-D map; falls
// back to the exact shift when the model has neither). Bilinear on a regular grid: direct indexing, no search, no FP64.
__device__ __forceinline__ float zshift_fast(const PhotonParams& P, float x, float y, float z) {
#ifdef WD_NO_TILT
    return 0.0f;  // measurement only (scripts/photon-ftp-breakdown): what the tilt costs
#endif
#ifdef WD_TILT_LUT
    if (P.lut_n_depth > 1) {
#ifdef WD_TWIN_FMA_GEOM
        float fd = fminf(fmaxf(fmaf(-z, P.lut_dz, P.lut_d0), 0.0f), (float)(P.lut_n_depth - 1));
        float fx = fminf(fmaxf(fmaf(y, P.lut_xy, x * P.lut_xx) - P.lut_x0, 0.0f), (float)(P.lut_n_dist - 1));
#else
        float fd = fminf(fmaxf(P.lut_d0 - z * P.lut_dz, 0.0f), (float)(P.lut_n_depth - 1));
        float fx = fminf(fmaxf(x * P.lut_xx + y * P.lut_xy - P.lut_x0, 0.0f), (float)(P.lut_n_dist - 1));
#endif
        int i = min((int)fd, P.lut_n_depth - 2), j = min((int)fx, P.lut_n_dist - 2);
        float a = fd - (float)i, b = fx - (float)j;
        // Nodes stored as pairs (value, next value along the distance): one 8-byte load per row.
        const float2 r0 = ((const float2*)P.tilt_lut)[i * P.lut_n_dist + j];
        const float2 r1 = ((const float2*)P.tilt_lut)[(i + 1) * P.lut_n_dist + j];
#ifdef WD_TWIN_FMA_GEOM
        return fmaf(fmaf(r1.y, b, r1.x * (1.0f - b)), a, fmaf(r0.y, b, r0.x * (1.0f - b)) * (1.0f - a));
#else
        return (r0.x * (1.0f - b) + r0.y * b) * (1.0f - a) + (r1.x * (1.0f - b) + r1.y * b) * a;
#endif
    }
#ifdef WD_TILT2_LATTICE
    if (P.lut2_nd > 1) {
        // 2-D map on its own lattice (tilt.rs Tilt2d::at in float): the hexagon's clamp, the
        // triangle of the rhombus, three nodes of a 110 kB table (the 13 MB regular grid below
        // missed L1; docs/performance/photon.md).
#ifdef WD_TWIN_FMA_GEOM
        float fd = fminf(fmaxf(fmaf(-z, P.lut2_dz, P.lut2_d0), 0.0f), (float)(P.lut2_nd - 1));
#else
        float fd = fminf(fmaxf(P.lut2_d0 - z * P.lut2_dz, 0.0f), (float)(P.lut2_nd - 1));
#endif
        int k = min((int)fd, P.lut2_nd - 2);
        float f = fd - (float)k;
#ifdef WD_TWIN_FMA_GEOM
        float fi = fmaf(y, P.lat[1], x * P.lat[0]) + P.lat[2];
        float fj = fmaf(y, P.lat[4], x * P.lat[3]) + P.lat[5];
#else
        float fi = x * P.lat[0] + y * P.lat[1] + P.lat[2];
        float fj = x * P.lat[3] + y * P.lat[4] + P.lat[5];
#endif
        const int n1 = P.t2_n1, n2 = P.t2_n2;
        // Inside the hexagon (most photons) the clamp below changes nothing: skip it.
        bool inside = fi >= 0.0f && fi <= (float)(n1 - 1) && fj >= 0.0f && fj <= (float)(n2 - 1) &&
                      fi - fj <= P.lat[6] - 1.0f && fi - fj >= 1.0f - P.lat[7];
        for (int it = 0; it < 3 && !inside; ++it) {
            fi = fminf(fmaxf(fi, 0.0f), (float)(n1 - 1));
            fj = fminf(fmaxf(fj, 0.0f), (float)(n2 - 1));
            float d = fi - fj;
            if (d > P.lat[6] - 1.0f) {
                float e = (d - (P.lat[6] - 1.0f)) * 0.5f;
                fi -= e; fj += e;
            } else if (d < 1.0f - P.lat[7]) {
                float e = ((1.0f - P.lat[7]) - d) * 0.5f;
                fi += e; fj -= e;
            }
        }
        int i0 = min((int)floorf(fi), n1 - 2), j0 = min((int)floorf(fj), n2 - 2);
        float a = fi - (float)i0, b = fj - (float)j0;
        const float2* t = P.tilt_lat + (size_t)k * (n1 * n2) + j0 * n1 + i0;
        float2 s00 = t[0], s11 = t[n1 + 1];
        bool lower = a >= b;
        float2 sm = lower ? t[1] : t[n1];
        float w00 = lower ? 1.0f - a : 1.0f - b, wm = lower ? a - b : b - a, w11 = lower ? b : a;
#ifdef WD_TWIN_FMA_GEOM
        float v0 = fmaf(s11.x, w11, fmaf(sm.x, wm, s00.x * w00));
        float v1 = fmaf(s11.y, w11, fmaf(sm.y, wm, s00.y * w00));
        return fmaf(v1, f, v0 * (1.0f - f));
#else
        float v0 = s00.x * w00 + sm.x * wm + s11.x * w11;
        float v1 = s00.y * w00 + sm.y * wm + s11.y * w11;
        return v0 * (1.0f - f) + v1 * f;
#endif
    }
#endif
    if (P.lut2_nd > 1) {
        // 2-D map: trilinear in (depth row, x, y) on the regular grid (gpu.rs tilt2_lut_error).
        float fd = fminf(fmaxf(P.lut2_d0 - z * P.lut2_dz, 0.0f), (float)(P.lut2_nd - 1));
        float fx = fminf(fmaxf((x - P.lut2_x0) * P.lut2_inv_dxy, 0.0f), (float)(P.lut2_nx - 1));
        float fy = fminf(fmaxf((y - P.lut2_y0) * P.lut2_inv_dxy, 0.0f), (float)(P.lut2_ny - 1));
        int i = min((int)fd, P.lut2_nd - 2), ix = min((int)fx, P.lut2_nx - 2), iy = min((int)fy, P.lut2_ny - 2);
        float a = fd - (float)i, bx = fx - (float)ix, by = fy - (float)iy;
        const float* r0 = P.tilt_lut2 + ((size_t)i * P.lut2_ny + iy) * P.lut2_nx + ix;
        const float* r1 = r0 + (size_t)P.lut2_ny * P.lut2_nx;
        const int nx = P.lut2_nx;
        float p0 = (r0[0] * (1.0f - bx) + r0[1] * bx) * (1.0f - by) + (r0[nx] * (1.0f - bx) + r0[nx + 1] * bx) * by;
        float p1 = (r1[0] * (1.0f - bx) + r1[1] * bx) * (1.0f - by) + (r1[nx] * (1.0f - bx) + r1[nx + 1] * bx) * by;
        return p0 * (1.0f - a) + p1 * a;
    }
#endif
    return (float)zshift(P, (double)x, (double)y, (double)z);
}

// propagate.rs: layer_walk -------------------------------------------------------------------
#if defined(WD_BFR) && defined(WD_BFR_WALK)
// The birefringence's path integrals ∫ra dl, ∫rb dl over the segment summed by the walk itself
// (the same layers and path lengths as bfr_path, which would walk them a second time).
#define WD_WALK_BFR 1
struct Segment { float length, tot, ra, rb; };
#else
struct Segment { float length, tot; };
#endif

#if defined(WD_SHARED_TABLES) && defined(WD_FACTORED_ICE) && defined(WD_JOBQUEUE)
// Ice and geometry tables in shared memory (filled by the kernel's prologue): the factored ice
// coefficients per layer and per wavelength slice, and per string its axis, cylinder radius,
// DOM range and z index grid. Models or detectors larger than these arrays read global memory;
// the per-DOM arrays (62 kB for IceCube), the clearance grid (1.1 MB) and the z index entries
// (44 kB) do not fit beside the photon queue at 5 blocks per SM and stay in global memory.
#define WD_SHARED_LAYERS 256
#define WD_SHARED_STRINGS 256
struct StringSh { float x, y, r, z0, inv_dz; unsigned int first, count; };
__shared__ float4 wd_layer_sh[WD_SHARED_LAYERS];
__shared__ float4 wd_slice_sh[WD_WNUM];
__shared__ StringSh wd_string_sh[WD_SHARED_STRINGS];
#define WD_ICE_TABLES 1
#endif

__device__ Segment layer_walk(const PhotonParams& P, unsigned int slice, float zp, float nz, float sca_depth, float tot, float abs_factor) {
#ifdef WD_FACTORED_ICE
    // sca = sb + se·l_a, abs = l_k·c1 + A·e^(−B/λ)·t: a 2.7 kB per-layer table instead of the
    // 700 kB (slice × layer) one.
#ifdef WD_ICE_TABLES
    const bool sh = P.n_layers <= WD_SHARED_LAYERS;  // uniform
    const float4* layer_tab = sh ? wd_layer_sh : (const float4*)P.layer_f;
    const float4 sf = sh ? wd_slice_sh[slice] : ((const float4*)P.slice_f)[slice];
#else
    const float4* layer_tab = (const float4*)P.layer_f;
    const float4 sf = ((const float4*)P.slice_f)[slice];
#endif
    const float la = sf.x, lk = sf.y, ae = sf.z;
#else
    const float* sca = P.sca + (size_t)slice * P.n_layers;
    const float* ab = P.abs + (size_t)slice * P.n_layers;
#endif
    int j = layer_of(P, zp);
    // Fixed for the segment: the last layer in the direction of travel (open-ended), the
    // boundary offset ±½, 1/nz and the path length through a whole layer.
    const int last = nz > 0.0f ? P.n_layers - 1 : 0;
    const float half = nz > 0.0f ? 0.5f : -0.5f;
    const float inv_nz = 1.0f / nz;
    const float inf = __int_as_float(0x7f800000);
#ifdef WD_TWIN_FMA_GEOM
    float dl = (nz == 0.0f || j == last) ? inf : fmaxf((fmaf((float)j + half, P.dh, P.hmin) - zp) * inv_nz, 0.0f);
#else
    float dl = (nz == 0.0f || j == last) ? inf : fmaxf((P.hmin + ((float)j + half) * P.dh - zp) * inv_nz, 0.0f);
#endif
    const float dl_layer = P.dh * fabsf(inv_nz);
    float length = 0.0f;
#ifdef WD_WALK_BFR
    float ra = 0.0f, rb = 0.0f;
#endif
    for (;;) {
#ifdef WD_FACTORED_ICE
        const float4 f = layer_tab[j];
#ifdef WD_TWIN_FMA_GEOM
        float s = fmaf(f.y, la, f.x);
        float a = fmaf(ae, f.w, lk * f.z) * abs_factor;
#else
        float s = f.x + f.y * la;
        float a = (lk * f.z + ae * f.w) * abs_factor;
#endif
#else
        float s = sca[j];
        float a = ab[j] * abs_factor;
#endif
        float sd = s * dl, ad = a * dl;
        if (sca_depth <= sd || tot <= ad) {
#ifdef WD_WALK_BFR
            // One exit (the layer's share of the path integrals needs the last length).
            bool absorbed = tot * s <= sca_depth * a;
#ifdef WD_TWIN_FMA_GEOM
            // One IEEE division of the chosen operands (the same value; the precise build's
            // division is ~10 instructions and a branch, and both were computed).
            float l = (absorbed ? tot : sca_depth) / (absorbed ? a : s);
#else
            float l = absorbed ? tot / a : sca_depth / s;
#endif
            ra = fmaxf(ra + l * P.bfr_ra[j], 0.0f);
#ifdef WD_BFR_RB_CONST
            rb = P.bfr_rb0 * ra;  // rb per layer = ra·c (birefringence.rs)
#else
            rb = fmaxf(rb + l * P.bfr_rb[j], 0.0f);
#endif
#ifdef WD_TWIN_FMA_GEOM
            return Segment{length + l, absorbed ? 0.0f : fmaf(-a, l, tot), ra, rb};
#else
            return Segment{length + l, absorbed ? 0.0f : tot - a * l, ra, rb};
#endif
#else
            // Absorbed if TOT/a ≤ SCA/s (compared without dividing).
#ifdef WD_TWIN_FMA_GEOM
            // One IEEE division of the chosen operands (the same values as below).
            const bool absorbed = tot * s <= sca_depth * a;
            const float l = (absorbed ? tot : sca_depth) / (absorbed ? a : s);
            return Segment{length + l, absorbed ? 0.0f : fmaf(-a, l, tot)};
#else
            if (tot * s <= sca_depth * a) return Segment{length + tot / a, 0.0f};
            float ls = sca_depth / s;
            return Segment{length + ls, tot - a * ls};
#endif
#endif
        }
#ifdef WD_WALK_BFR
        ra += dl * P.bfr_ra[j];
#ifndef WD_BFR_RB_CONST
        rb += dl * P.bfr_rb[j];
#endif
#endif
        length += dl;
        sca_depth -= sd;
        tot -= ad;
#ifdef WD_BRANCHLESS_WALK
        j += nz > 0.0f ? 1 : -1;
        dl = j == last ? inf : dl_layer;
#else
        if (nz > 0.0f) { j += 1; dl = j + 1 < P.n_layers ? dl_layer : inf; }
        else { j -= 1; dl = j > 0 ? dl_layer : inf; }
#endif
    }
}

// collision.rs -------------------------------------------------------------------------------
struct Collision { int dom; float h; V3 impact; };

// collision.rs: reaches_axis — the closest approach of the segment's x–y projection to the
// vertical axis at (x, y) is within `radius`.
__device__ __forceinline__ bool reaches_axis(float x, float y, float radius, V3 r, V3 n, float len) {
    float dx = x - r.x, dy = y - r.y;
#ifdef WD_TWIN_FMA_GEOM
    float nn = fmaf(n.y, n.y, n.x * n.x);
    float t = nn > 0.0f ? fminf(fmaxf(fmaf(dy, n.y, dx * n.x) / nn, 0.0f), len) : 0.0f;
    float px = fmaf(-t, n.x, dx), py = fmaf(-t, n.y, dy);
    return fmaf(py, py, px * px) <= radius * radius;
#else
    float nn = n.x * n.x + n.y * n.y;
    float t = nn > 0.0f ? fminf(fmaxf((dx * n.x + dy * n.y) / nn, 0.0f), len) : 0.0f;
    float px = dx - t * n.x, py = dy - t * n.y;
    return px * px + py * py <= radius * radius;
#endif
}

// The DOM radius R [m] (geometry.rs DOM_RADIUS; PPC's OMR).
#define WD_OMR 0.1651f

#ifdef WD_SHAPES
// collision.rs: shaped_entry — the pancake entry h on a module of shape [R, F] oversized by xr
// (spheroid, or for F < 0 a cylinder's side), d = centre − start, and the entry point on the
// oversized surface relative to the centre in units of xr·R. Same operations, same order.
__device__ __forceinline__ bool shaped_entry(float2 shape, float xr, V3 d, V3 n, float& h, V3& impact) {
    const float radius = shape.x, f = shape.y;
    const float ff = f > 0.0f ? 1.0f / (f * f) : 0.0f;
    const float a = n.x * n.x + n.y * n.y + ff * (n.z * n.z);
    if (a <= 0.0f) return false;
    const float b = (n.x * d.x + n.y * d.y + ff * (n.z * d.z)) / a;
    const float c = d.x * d.x + d.y * d.y + ff * (d.z * d.z);
    const float rr = xr * radius;
    const float disc = b * b - (c - rr * rr) / a;
    if (disc < 0.0f) return false;
    const float sq = sqrtf(disc);
    const float entry = b - sq;
    if (f < 0.0f && fabsf(d.z - n.z * entry) >= -(xr * f * radius)) return false;
    h = b - sq / xr;
    const float inv = 1.0f / rr;
    impact = V3{(entry * n.x - d.x) * inv, (entry * n.y - d.y) * inv, (entry * n.z - d.z) * inv};
    return true;
}
#endif

__device__ __forceinline__ void check_string(const PhotonParams& P, unsigned int si, V3 r, V3 n, float len, int skip, int own, Collision& best) {
#ifdef WD_ICE_TABLES
    StringSh str;
    if (P.n_strings <= WD_SHARED_STRINGS) {
        str = wd_string_sh[si];
    } else {
        str = StringSh{P.str_xyr[3 * si], P.str_xyr[3 * si + 1], P.str_xyr[3 * si + 2], P.z_grid[2 * si], P.z_grid[2 * si + 1],
                       P.str_first_count[2 * si], P.str_first_count[2 * si + 1]};
    }
    const float sx = str.x, sy = str.y, sr = str.r;
    const unsigned int first = str.first, count = str.count;
    const float2 g = make_float2(str.z0, str.inv_dz);
#else
    float sx = P.str_xyr[3 * si], sy = P.str_xyr[3 * si + 1], sr = P.str_xyr[3 * si + 2];
    unsigned int first = P.str_first_count[2 * si], count = P.str_first_count[2 * si + 1];
    const float2 g = ((const float2*)P.z_grid)[si];
#endif
    if (!reaches_axis(sx, sy, sr, r, n, len)) return;
#ifdef WD_TWIN_FMA_GEOM
    float z1 = fmaf(n.z, len, r.z);
#else
    float z1 = r.z + n.z * len;
#endif
#ifdef WD_SHAPES
    float zlo = fminf(r.z, z1) - P.rz_eff, zhi = fmaxf(r.z, z1) + P.rz_eff;
#else
    float zlo = fminf(r.z, z1) - P.r_eff, zhi = fmaxf(r.z, z1) + P.r_eff;
#endif
    const float* pos = P.dom_pos + 3 * (size_t)first;
    // The first DOM at or above zlo from the string's z index (collision.rs: first_at_or_above).
    int bin = min(max((int)floorf((zlo - g.x) * g.y), 0), WD_Z_BINS - 1);
    unsigned int lo = P.z_start[si * WD_Z_BINS + bin];
    while (lo < count && pos[3 * lo + 2] < zlo) ++lo;
    // The DOMs from the first at or above zlo up to zhi (segments are short: zero to a few).
    for (unsigned int k = lo; k < count && pos[3 * k + 2] <= zhi; ++k) {
        unsigned int gi = first + k;
        int id = (int)P.dom_id[gi];
        if (id == skip) continue;
        float cx = P.dom_pos[3 * gi], cy = P.dom_pos[3 * gi + 1], cz = P.dom_pos[3 * gi + 2];
        float d0 = cx - r.x, d1 = cy - r.y, d2 = cz - r.z;
#ifdef WD_SHAPES
        {
#ifdef WD_OWN_DOM
            const float xr = id == own ? 1.0f : P.oversize;
#else
            const float xr = P.oversize;
#endif
            float h;
            V3 imp;
            if (shaped_entry(P.dom_shape[gi], xr, V3{d0, d1, d2}, n, h, imp) && h >= 0.0f && h <= len &&
                !(best.dom >= 0 && best.h <= h)) {
                best.dom = id;
                best.h = h;
                best.impact = imp;
            }
            continue;
        }
#endif
#ifdef WD_TWIN_FMA_GEOM
        float b_par = fmaf(d2, n.z, fmaf(d1, n.y, d0 * n.x));
#else
        float b_par = d0 * n.x + d1 * n.y + d2 * n.z;
#endif
#ifdef WD_OWN_DOM
        // A flasher's own DOM at its real size, every other one oversized (collision.rs).
        const bool is_own = id == own;
        const float radius = is_own ? WD_OMR : P.r_eff, xr = is_own ? 1.0f : P.oversize;
#else
        const float radius = P.r_eff, xr = P.oversize;
#endif
#ifdef WD_TWIN_FMA_GEOM
        float disc = fmaf(b_par, b_par, radius * radius - fmaf(d2, d2, fmaf(d1, d1, d0 * d0)));
#else
        float disc = radius * radius - (d0 * d0 + d1 * d1 + d2 * d2) + b_par * b_par;
#endif
        if (disc < 0.0f) continue;
        float sq = sqrtf(disc);
        float h = b_par - sq / xr;
        if (h < 0.0f || h > len || (best.dom >= 0 && best.h <= h)) continue;
        V3 perp{-d0 + b_par * n.x, -d1 + b_par * n.y, -d2 + b_par * n.z};
        best.dom = id;
        best.h = h;
        best.impact = normalize(V3{perp.x - sq * n.x, perp.y - sq * n.y, perp.z - sq * n.z});
    }
}

// collision.rs: grid_gap2 — the squared horizontal distance from r to the clearance grid's
// rectangle, which holds every string cylinder (0 inside it).
__device__ __forceinline__ float grid_gap2(const PhotonParams& P, V3 r) {
    const float cell = 1.0f / P.clear_inv;
    float x1 = P.grid_x0 + (float)P.clear_nx * cell, y1 = P.grid_y0 + (float)P.clear_ny * cell;
    float dx = fmaxf(fmaxf(P.grid_x0 - r.x, r.x - x1), 0.0f), dy = fmaxf(fmaxf(P.grid_y0 - r.y, r.y - y1), 0.0f);
    return dx * dx + dy * dy;
}

// The clearance pre-test (collision.rs: reachable): from the record of the segment's start cell,
// -2 when no string cylinder is within its horizontal reach, the nearest string's index when only
// that one can be, -1 when undecided (the full search runs). One 16-byte load and a few
// operations, the same for most lanes, instead of the divergent loop over cells.
__device__ __forceinline__ int reachable(const PhotonParams& P, V3 r, V3 n, float len, int& cell) {
    // Cell indices; a point left of or below the grid gives a negative index, which the unsigned
    // compares reject together with those beyond it (|coordinates| ≪ 2^31 cells).
    int i = (int)floorf((r.x - P.grid_x0) * P.clear_inv), j = (int)floorf((r.y - P.grid_y0) * P.clear_inv);
    float reach2 = len * len * (n.x * n.x + n.y * n.y);
    if ((unsigned int)i >= (unsigned int)P.clear_nx || (unsigned int)j >= (unsigned int)P.clear_ny) {
        // Outside the grid, which holds every string cylinder: nothing within reach unless the
        // segment gets back to the grid's rectangle (then the full search; a warp would otherwise
        // run it for any one of its lanes outside, with that lane alone).
        return reach2 < grid_gap2(P, r) ? -2 : -1;
    }
    int c = j * P.clear_nx + i;
    cell = c;
    float4 clear = ((const float4*)P.clearance)[c];  // others' bound, nearest string x, y, r + margin
    if (!(clear.x > 0.0f && reach2 < clear.x * clear.x)) {
        // The second level (Reach::Four): only the four nearest strings within reach?
        float beyond = __uint_as_float(P.clear_more[c].w);
        return beyond > 0.0f && reach2 < beyond * beyond ? -3 : -1;
    }
    // The nearest string: does the segment come within its cylinder (plus the margin)?
    if (!reaches_axis(clear.y, clear.z, clear.w, r, n, len)) return -2;
    return (int)P.clear_near[c];
}

#ifdef WD_REACH
// collision.rs: distance2_lower_bound — a lower bound on the squared distance from r to every
// point where a segment can hit a DOM: h² + v², h horizontally to the string cylinders from the
// clearance grid's bounds (outside the grid, to its rectangle), v to the DOMs' z range.
__device__ __forceinline__ float distance2_lower_bound(const PhotonParams& P, V3 r) {
    int i = (int)floorf((r.x - P.grid_x0) * P.clear_inv), j = (int)floorf((r.y - P.grid_y0) * P.clear_inv);
    float h;
    if ((unsigned int)i >= (unsigned int)P.clear_nx || (unsigned int)j >= (unsigned int)P.clear_ny) {
        h = sqrtf(grid_gap2(P, r));
    } else {
        float4 clear = ((const float4*)P.clearance)[j * P.clear_nx + i];
        float dx = r.x - clear.y, dy = r.y - clear.z;
        h = fmaxf(fminf(clear.x, sqrtf(dx * dx + dy * dy) - clear.w), 0.0f);  // clear.x < 0: another cylinder in the cell
    }
    float v = fmaxf(fmaxf(P.z_lo - r.z, r.z - P.z_hi), 0.0f);
    return h * h + v * v;
}

// reach.rs: out_of_reach — the photon's remaining absorption depth tot cannot carry it to any
// DOM (reach: its slice's path_per_depth).
__device__ __forceinline__ bool out_of_reach(const PhotonParams& P, V3 pos, float tot, float reach) {
    float l = tot * reach;
    return l * l < distance2_lower_bound(P, pos);
}
#endif

__device__ Collision first_hit(const PhotonParams& P, V3 r, V3 n, float len, int skip, int own) {
    Collision best;
    best.dom = -1; best.h = 0.0f; best.impact = V3{0.0f, 0.0f, 0.0f};
#ifdef WD_CLEARANCE
    int cell = 0;
    int near = reachable(P, r, n, len, cell);
    if (near == -2) return best;
    if (near >= 0) {
        check_string(P, (unsigned int)near, r, n, len, skip, own, best);
        return best;
    }
    if (near == -3) {
        // The four nearest strings, nearest first (collision.rs four_nearest).
        check_string(P, P.clear_near[cell], r, n, len, skip, own, best);
        const uint4 m = P.clear_more[cell];
        const unsigned int more[3] = {m.x, m.y, m.z};
        for (int k = 0; k < 3; ++k)
            if (more[k] != 0xffffffffu) check_string(P, more[k], r, n, len, skip, own, best);
        return best;
    }
#endif
    float ex = r.x + n.x * len, ey = r.y + n.y * len;
    float ia = floorf((fminf(r.x, ex) - P.grid_x0) / P.grid_cell), ib = floorf((fmaxf(r.x, ex) - P.grid_x0) / P.grid_cell);
    float ja = floorf((fminf(r.y, ey) - P.grid_y0) / P.grid_cell), jb = floorf((fmaxf(r.y, ey) - P.grid_y0) / P.grid_cell);
    if (ib < 0.0f || jb < 0.0f || ia >= (float)P.grid_nx || ja >= (float)P.grid_ny) return best;
    int i0 = (int)fmaxf(ia, 0.0f), i1 = min((int)ib, P.grid_nx - 1);
    int j0 = (int)fmaxf(ja, 0.0f), j1 = min((int)jb, P.grid_ny - 1);
    bool multi = i1 > i0 || j1 > j0;
    unsigned int last = 0xffffffffu;
    for (int j = j0; j <= j1; ++j)
        for (int i = i0; i <= i1; ++i) {
            int c = j * P.grid_nx + i;
            for (unsigned int q = P.cell_start[c]; q < P.cell_start[c + 1]; ++q) {
                unsigned int si = P.cell_strings[q];
                if (multi && si == last) continue;
                last = si;
                check_string(P, si, r, n, len, skip, own, best);
            }
        }
    return best;
}

// source.rs: emit ----------------------------------------------------------------------------
#ifdef WD_HOLE
// hole.rs: cylinder_span — where the line r + t·n runs inside the vertical cylinder of `radius`
// about (x, y), for a segment of length len: entry t_in = max(0, entry) < len (or 0: starting
// inside) and the column's exit t_out (not cut at len), t_out > WD_HOLE_MIN_EXIT·radius.
#define WD_HOLE_MIN_EXIT 3.0e-3f
__device__ __forceinline__ bool cylinder_span(float x, float y, float radius, V3 r, V3 n, float len, float& t_in, float& t_out) {
    float dx = x - r.x, dy = y - r.y;
    float c = dx * dx + dy * dy;
    float rr = radius * radius;
    float nn = n.x * n.x + n.y * n.y;
    if (nn == 0.0f) {
        t_in = 0.0f;
        t_out = __int_as_float(0x7f800000);
        return c < rr;
    }
    float b = dx * n.x + dy * n.y;
    float disc = b * b - nn * (c - rr);
    if (disc <= 0.0f) return false;
    float sq = sqrtf(disc);
    t_in = fmaxf((b - sq) / nn, 0.0f);
    t_out = (b + sq) / nn;
    return (t_in < len || t_in == 0.0f) && t_out > WD_HOLE_MIN_EXIT * radius;
}

// collision.rs: DomIndex::hole_span — the column the segment enters first (strings as first_hit
// finds them; the string cylinders are at least the column's radius).
__device__ bool hole_span(const PhotonParams& P, V3 r, V3 n, float len, float& t_in, float& t_out) {
    bool found = false;
#ifdef WD_CLEARANCE
    int cell = 0;
    int near = reachable(P, r, n, len, cell);
    if (near == -2) return false;
    if (near >= 0) return cylinder_span(P.str_xyr[3 * near], P.str_xyr[3 * near + 1], P.hole_r, r, n, len, t_in, t_out);
    if (near == -3) {
        // Columns do not overlap: the earliest entry of the four nearest strings' columns.
        const uint4 m = P.clear_more[cell];
        const unsigned int four[4] = {P.clear_near[cell], m.x, m.y, m.z};
        for (int k = 0; k < 4; ++k) {
            float a, b;
            unsigned int si = four[k];
            if (si != 0xffffffffu && cylinder_span(P.str_xyr[3 * si], P.str_xyr[3 * si + 1], P.hole_r, r, n, len, a, b) &&
                (!found || a < t_in)) {
                t_in = a;
                t_out = b;
                found = true;
            }
        }
        return found;
    }
#endif
    float ex = r.x + n.x * len, ey = r.y + n.y * len;
    float ia = floorf((fminf(r.x, ex) - P.grid_x0) / P.grid_cell), ib = floorf((fmaxf(r.x, ex) - P.grid_x0) / P.grid_cell);
    float ja = floorf((fminf(r.y, ey) - P.grid_y0) / P.grid_cell), jb = floorf((fmaxf(r.y, ey) - P.grid_y0) / P.grid_cell);
    if (ib < 0.0f || jb < 0.0f || ia >= (float)P.grid_nx || ja >= (float)P.grid_ny) return false;
    int i0 = (int)fmaxf(ia, 0.0f), i1 = min((int)ib, P.grid_nx - 1);
    int j0 = (int)fmaxf(ja, 0.0f), j1 = min((int)jb, P.grid_ny - 1);
    for (int j = j0; j <= j1; ++j)
        for (int i = i0; i <= i1; ++i) {
            int c = j * P.grid_nx + i;
            for (unsigned int q = P.cell_start[c]; q < P.cell_start[c + 1]; ++q) {
                unsigned int si = P.cell_strings[q];
                float a, b;
                if (cylinder_span(P.str_xyr[3 * si], P.str_xyr[3 * si + 1], P.hole_r, r, n, len, a, b) && (!found || a < t_in)) {
                    t_in = a;
                    t_out = b;
                    found = true;
                }
            }
        }
    return found;
}

#endif

#if defined(WD_HOLE) || defined(WD_BFR)
// propagate.rs: layer_depths — the optical depths (scattering, absorption × abs_factor) over the
// path length len from zp along nz, through the layers of layer_walk (hole ice: up to a column;
// birefringence: up to a hit).
__device__ float2 layer_depths(const PhotonParams& P, unsigned int slice, float zp, float nz, float len, float abs_factor) {
#ifdef WD_FACTORED_ICE
    const float4* layer_tab = (const float4*)P.layer_f;
    const float4 sf = ((const float4*)P.slice_f)[slice];
    const float la = sf.x, lk = sf.y, ae = sf.z;
#else
    const float* sca = P.sca + (size_t)slice * P.n_layers;
    const float* ab = P.abs + (size_t)slice * P.n_layers;
#endif
    int j = layer_of(P, zp);
    const int last = nz > 0.0f ? P.n_layers - 1 : 0;
    const float half = nz > 0.0f ? 0.5f : -0.5f;
    const float inv_nz = 1.0f / nz;
    const float inf = __int_as_float(0x7f800000);
    float dl = (nz == 0.0f || j == last) ? inf : fmaxf((P.hmin + ((float)j + half) * P.dh - zp) * inv_nz, 0.0f);
    const float dl_layer = P.dh * fabsf(inv_nz);
    float left = len, xs = 0.0f, xa = 0.0f;
    for (;;) {
#ifdef WD_FACTORED_ICE
        const float4 f = layer_tab[j];
#ifdef WD_TWIN_FMA_GEOM
        float s = fmaf(f.y, la, f.x);
        float a = fmaf(ae, f.w, lk * f.z) * abs_factor;
#else
        float s = f.x + f.y * la;
        float a = (lk * f.z + ae * f.w) * abs_factor;
#endif
#else
        float s = sca[j];
        float a = ab[j] * abs_factor;
#endif
        if (left <= dl) return make_float2(xs + s * left, xa + a * left);
        xs += s * dl;
        xa += a * dl;
        left -= dl;
        j += nz > 0.0f ? 1 : -1;
        dl = j == last ? inf : dl_layer;
    }
}
#endif

#ifdef WD_FAST_RNG
// Fast mode's per-segment random words: MWC64X (D. B. Thomas, "The MWC64X random number
// generator", 2011: a lag-1 multiply-with-carry x' + c'·2³² = A·x + c with A = 4294883355, period
// ≈ 2⁶³, output x ⊕ c; passes TestU01's BigCrush), one state per photon seeded from the photon's
// own Philox stream at emission. One 32 × 32 → 64-bit multiply-add per word instead of a tenth of a
// Philox4x32-10 block (ten rounds per four words); PPC draws its numbers from a multiply-with-carry
// generator too. Precise mode keeps the CPU twin's Philox blocks (propagate.rs). Streams of
// different photons are random starting points of the one sequence (period P ≈ 2⁶³): among
// N = 10⁹ photons of L = 10³ words, about N²L/P ≈ 100 pairs share a stretch of numbers — the same
// words drawn by two photons in different places and states, 2·10⁻⁷ of the photons, far below
// what any check resolves (PPC instead gives each thread its own multiplier).
#define WD_MWC_A 4294883355u
__device__ __forceinline__ void mwc_seed(WdRng& rng, unsigned int& x, unsigned int& c) {
    x = wd_next_u32(rng);
    c = wd_next_u32(rng);
    if (c >= WD_MWC_A - 1u) c -= WD_MWC_A - 1u;  // c < A − 1: never the fixed point (2³² − 1, A − 1)
    if (x == 0u && c == 0u) c = 1u;             // nor (0, 0)
}
__device__ __forceinline__ unsigned int mwc_next(unsigned int& x, unsigned int& c) {
    unsigned int r = x ^ c;
    unsigned long long t = (unsigned long long)WD_MWC_A * x + c;
    x = (unsigned int)t;
    c = (unsigned int)(t >> 32);
    return r;
}
#endif

#if defined(WD_FAST_RNG) && defined(WD_FAST_GAMMA)
// With both, the emission draws from the photon's MWC64X stream too, seeded by the first two
// words of its Philox stream (the float gamma needs no FP64 draws): one Philox block per photon
// instead of three or more.
struct MwcRng { unsigned int x, c; };
__device__ __forceinline__ float wd_uniform(MwcRng& r) { return wd_u32_to_uniform(mwc_next(r.x, r.c)); }
__device__ __forceinline__ float wd_exponential(MwcRng& r) { return -logf(wd_uniform(r)); }
typedef MwcRng EmitRng;
#define WD_EMIT_MWC 1
#else
typedef WdRng EmitRng;
#endif

struct Photon { V3 pos, dir; float time; unsigned int slice; int killed; };

__device__ __forceinline__ float cascade_xi(float u) {
    const float a = 0.39f, b = 2.61f;
    float i = 1.0f - expf(-b * powf(2.0f, a));
    return fminf(powf(-logf(1.0f - u * i) / b, 1.0f / a), 2.0f);
}

__device__ __forceinline__ V3 deflect(V3 n, float xi, float u_phi) {
    return rotate(n, 1.0f - xi, sqrtf(fmaxf(xi * (2.0f - xi), 0.0f)), u_phi);
}

__device__ __forceinline__ V3 cherenkov(V3 n, float beta, float n_phase, float u) {
    float c = fminf(1.0f / (beta * n_phase), 1.0f);
    return rotate(n, c, sqrtf(fmaxf(1.0f - c * c, 0.0f)), u);
}

// source.rs: Led::azimuth, Led::beam_xi, emit_flasher, meets_cable (photon-ppc-phase2.md §6).
#define WD_FLZ 0.07735f
#define WD_FLR (0.119f - 0.008f)
#define WD_FLB 0.03396f
#define WD_CABLE_R 0.023f

__device__ __forceinline__ float led_azimuth(float fldr, float u) {
    if (fldr < 0.0f) return u * WD_TAU;
    int n = (int)floorf(fldr / 360.0f) + 1;
    int k = (int)floorf(u * (float)n);
    return (fldr + (float)(k * 360 / n)) * (3.14159265358979f / 180.0f);
}

__device__ float led_beam_xi(float ka, bool tilted, EmitRng& rng) {
    if (ka > 999.0f) {
        float s1 = tilted ? 0.0185603f : 0.0196242f, s2 = tilted ? 0.0624481f : 0.0750278f;
        float c1 = tilted ? 0.553192f : 0.606833f, c2 = tilted ? 0.974129f : 0.960863f;
        float u = wd_uniform(rng);
        float xi;
        if (u < c1) {
            float u1 = wd_uniform(rng), u2 = wd_uniform(rng);
            float sn, cs;
            wd_sincos_turn(u2, &sn, &cs);
            xi = s1 * fabsf(sqrtf(-2.0f * logf(u1)) * cs);
        } else if (u < c2) {
            xi = -s2 * logf(wd_uniform(rng));
        } else {
            xi = 2.0f;
        }
        if (xi >= 2.0f) xi = 2.0f * (1.0f - sqrtf(wd_uniform(rng)));
        return xi;
    }
    if (ka > 0.0f) return fminf(-ka * logf(1.0f - (1.0f - wd_uniform(rng)) * (1.0f - expf(-2.0f / ka))), 2.0f);
    if (ka == -1.0f) return 2.0f * (1.0f - wd_uniform(rng));
    return 2.0f * (1.0f - sqrtf(wd_uniform(rng)));
}

__device__ __forceinline__ bool meets_cable(V3 r, V3 n, float phi) {
    const float dc = WD_OMR + WD_CABLE_R;
    float sp, cp;
    sincosf(phi, &sp, &cp);
    float dx = r.x - dc * cp, dy = r.y - dc * sp;
    float a = n.x * n.x + n.y * n.y;
    if (a <= 0.0f) return false;
    float b = n.x * dx + n.y * dy;
    float c = dx * dx + dy * dy - WD_CABLE_R * WD_CABLE_R;
    float d = b * b - a * c;
    return d >= 0.0f && (-b + sqrtf(d)) / a > 0.0f;
}

// Source record: f64[14] = pos3 dir3 time p0..p6; i32[2] = kind, own_dom.
// kind 0 cascade (p0 = profile a, p1 = profile b); 1 track (p0 length, p1 beta, p2 f_direct);
// 2 isotropic; 3 flasher LED pattern, 4 one tilted flasher LED (p0 = ka, p1 = FLDR,
// p2 = elevation, p3 = tilted LEDs, p4..p6 = kind 4's LED position relative to the DOM centre).
#ifdef WD_FAST_GAMMA
// Gamma(a, 1) in float (fast mode): Marsaglia & Tsang (ACM TOMS 26, 2000) as wd_gamma, but with
// 24-bit uniforms and a float Box–Muller instead of the FP64 twin of the CPU's draws (FP64 log,
// sqrt and cos are long instruction sequences; one gamma per cascade photon).
__device__ __forceinline__ float gamma_fast(EmitRng& r, float a) {
    float boost = 1.0f;
    if (a < 1.0f) {
        boost = powf(wd_uniform(r), 1.0f / a);
        a += 1.0f;
    }
    const float d = a - 1.0f / 3.0f, c = 1.0f / sqrtf(9.0f * d);
    for (;;) {
        float u1 = wd_uniform(r), u2 = wd_uniform(r);
        float x = sqrtf(-2.0f * logf(u1)) * wd_cos_turn(u2);
        float v = 1.0f + c * x;
        if (v <= 0.0f) continue;
        v = v * v * v;
        float u = wd_uniform(r);
        if (logf(u) < 0.5f * x * x + d - d * v + d * logf(v)) return d * v * boost;
    }
}
#endif

#ifdef WD_NOINLINE_EMIT
__device__ __noinline__
#else
__device__
#endif
Photon emit(const PhotonParams& P, int s, EmitRng& rng) {
    const double* f = P.src_f64 + 14 * (size_t)s;
    int kind = P.src_i32[2 * s];
    Photon ph;
    unsigned int slice = min((unsigned int)(wd_uniform(rng) * (float)WD_WNUM), (unsigned int)(WD_WNUM - 1));
    float n_phase = P.slice_n_phase[slice];
    V3 axis{(float)f[3], (float)f[4], (float)f[5]};
    V3 p0{(float)f[0], (float)f[1], (float)f[2]};
    float t0 = (float)f[6];
    ph.slice = slice;
    ph.killed = 0;
    if (kind == 0) {
#ifdef WD_FAST_GAMMA
        float l = gamma_fast(rng, (float)f[7]) * (float)f[8];
#else
        float l = (float)(wd_gamma(rng, f[7]) * f[8]);
#endif
        float u1 = wd_uniform(rng), u2 = wd_uniform(rng), u3 = wd_uniform(rng);
        V3 track = deflect(axis, cascade_xi(u1), u2);
        ph.pos = V3{p0.x + l * axis.x, p0.y + l * axis.y, p0.z + l * axis.z};
        ph.dir = cherenkov(track, 1.0f, n_phase, u3);
        ph.time = t0 + l / WD_C_VACUUM;
    } else if (kind == 1) {
        float l = wd_uniform(rng) * (float)f[7];
        float u0 = wd_uniform(rng), u1 = wd_uniform(rng), u2 = wd_uniform(rng), u3 = wd_uniform(rng);
        float beta = (float)f[8];
        V3 track = u0 <= (float)f[9] ? axis : deflect(axis, cascade_xi(u1), u2);
        ph.pos = V3{p0.x + l * axis.x, p0.y + l * axis.y, p0.z + l * axis.z};
        ph.dir = cherenkov(track, beta, n_phase, u3);
        ph.time = t0 + l / (beta * WD_C_VACUUM);
    } else if (kind == 2) {
        float u1 = wd_uniform(rng), u2 = wd_uniform(rng);
        float c = 2.0f * u1 - 1.0f;
        float sn = sqrtf(fmaxf(1.0f - c * c, 0.0f));
        float sp, cp;
        wd_sincos_turn(u2, &sp, &cp);
        ph.pos = p0; ph.dir = V3{sn * cp, sn * sp, c}; ph.time = t0;
    } else {
        // Flasher (source.rs emit_flasher): the LED, the beam's spread, where it leaves the DOM.
        V3 r;
        if (kind == 4) {
            r = V3{(float)f[11], (float)f[12], (float)f[13]};
        } else {
            float sa, ca, su, cu;
            sincosf(led_azimuth((float)f[8], wd_uniform(rng)), &sa, &ca);
            sincosf((float)f[9], &su, &cu);
            r = V3{WD_FLR * ca, WD_FLR * sa, WD_FLZ};
            axis = V3{cu * ca, cu * sa, su};
        }
        float ka = (float)f[7];
        V3 n = axis;
        if (ka != 0.0f) {
            float xi = led_beam_xi(ka, f[10] != 0.0, rng);
            n = deflect(axis, xi, wd_uniform(rng));
        }
        float t;
        if (ka > 999.0f) {
            float b = r.x * n.x + r.y * n.y + r.z * n.z;
            float c = WD_FLZ * WD_FLZ + WD_FLR * WD_FLR - WD_OMR * WD_OMR;
            t = sqrtf(b * b - c) - b;
            r = V3{r.x + t * n.x, r.y + t * n.y, r.z + t * n.z};
            if (fabsf(r.z) < WD_FLB || (kind == 3 && r.z < 0.0f && wd_uniform(rng) < 0.9f)) ph.killed = 1;
            if (ka > 1050.0f && meets_cable(r, n, (ka - 1080.0f) * (3.14159265358979f / 180.0f))) ph.killed = 1;
        } else {
            r = V3{WD_OMR * n.x, WD_OMR * n.y, WD_OMR * n.z};
            t = WD_OMR;
        }
        ph.pos = V3{p0.x + r.x, p0.y + r.y, p0.z + r.z};
        ph.dir = n;
        ph.time = t0 + t / WD_C_VACUUM;
    }
    return ph;
}

// propagate.rs: propagate_photon ------------------------------------------------------------
__device__ __forceinline__ void record(const PhotonParams& P, unsigned long long photon, int s, unsigned int seq, int dom, float time, unsigned int slice, V3 dir, V3 impact) {
    unsigned long long idx = atomicAdd(P.hit_count, 1ull);
    if (idx >= P.hit_capacity) return;  // counted: the host re-runs the batch in smaller pieces
    GpuHit* h = (GpuHit*)P.hits + idx;
    h->photon = photon; h->source = (unsigned int)s; h->seq = seq; h->dom = (unsigned int)dom;
    h->time = time; h->slice = slice;
    h->dir[0] = dir.x; h->dir[1] = dir.y; h->dir[2] = dir.z;
    h->impact[0] = impact.x; h->impact[1] = impact.y; h->impact[2] = impact.z;
    h->pad = 0;
}


// Optimisation switches (-D at compile time, see GpuOptions::defines):
//   WD_NAIVE_LOOP        one whole photon per loop iteration (a warp waits for its longest photon)
//   WD_JOBQUEUE          per-warp job queue: photons emitted warp-wide into shared memory
//   WD_BRANCHLESS_WALK   layer walk with the end layer fixed per segment instead of up/down branches
//   WD_MIN_BLOCKS=n      __launch_bounds__(WD_BLOCK, n): cap registers for n resident blocks
//   WD_NOINLINE_EMIT     emission (FP64 gamma sampling) out of line, to keep the hot loop compact
//   WD_TILT_LUT          1-D tilt from a float table resampled on a regular grid (fast mode only)
//   WD_FACTORED_ICE      absorption/scattering from per-layer × per-wavelength factors (fast only)
//   WD_CLEARANCE         collision search skipped, or only the nearest string checked, when the
//                        clearance grid rules out every (other) string
//   WD_SELECT_SCATTER    both scattering cosines computed and one selected (no divergent branch)
//   WD_DYNAMIC           job queue fed 32 photons at a time from a global counter
//   WD_RNG_WARP          opt-in, changes statistics: the lanes of a warp share the phase-function
//                        choice of each scattering (random-number blocking per warp)
//   WD_TILT2_LATTICE     2-D tilt map evaluated in float on its own lattice (110 kB) instead of
//                        the regular 10 m grid (13 MB) of WD_TILT_LUT (fast mode only)
//   WD_NO_TILT           measurement only, changes the physics: no tilt shift (what the tilt costs)
//   WD_OWN_DOM           a flasher's own DOM at its real size (set by the host for runs with one)
//   WD_SHAPES            every DOM with its own shape, spheroid or cylinder (set by the host for
//                        runs with multi-PMT modules)
//   WD_NO_CONTINUE       measurement only, changes the physics: only the first DOM on a segment
//                        is searched (the rule before continue after hit; what it costs)
//   WD_BFR               birefringence code compiled in (set by the host for models with it)
//   WD_BFR_TABLE         birefringence widths from a 513-entry table in the flow angle (fast mode only)
//   WD_BFR_RB_CONST      icemodel.dat's rb column the same c in every layer, so ∫ra·rb = c·∫ra (set by the host; WD_BFR_WALK)
//   WD_HOLE              hole-ice columns compiled in (set by the host for models with them)
//   WD_BFR_WALK          the birefringence's path integrals summed by the layer walk (fast mode only)
//   WD_FAST_BFR          birefringence deflection without renormalising its unit vectors (fast only)
//   WD_ISO_SCATTER       scattering without the anisotropy frame when k = (1, 1, 1) (fast mode only)
//   WD_FAST_UNIFORM      per-segment uniforms by mantissa placement, 23 bits (fast mode only)
//   WD_FAST_PHASE        the bulk phase functions with g's constants from the host (fast mode only)
//   WD_FAST_GAMMA        the cascade's longitudinal gamma draw in float (fast mode only)
//   WD_PHILOX_PAIR       a segment's two Philox blocks computed together (same words)
//   WD_FAST_RNG          per-segment words from a per-photon MWC64X stream seeded by its Philox one (fast only)
//   WD_REFILL=k          job queue: a warp refills its idle lanes only when k of them are idle
//   WD_SHARED_TABLES     ice tables (factored layers, wavelength slices) and per-string geometry in
//                        shared memory (job-queue kernel with WD_FACTORED_ICE)
//   WD_REACH             a photon whose absorption depth left cannot carry it to any DOM ends
//                        (reach.rs; exact: the same hits, fewer segments; off: on an H200 the
//                        test costs more than the segments it saves, unlike on the CPU)
#ifndef WD_BLOCK
#define WD_BLOCK 256
#endif
#ifdef WD_MIN_BLOCKS
#define WD_BOUNDS __launch_bounds__(WD_BLOCK, WD_MIN_BLOCKS)
#else
#define WD_BOUNDS
#endif

__device__ __forceinline__ int source_of(const PhotonParams& P, unsigned long long id) {
    int lo = 0, hi = P.n_sources;  // largest s with offsets[s] <= id
    while (hi - lo > 1) { int m = (lo + hi) / 2; if (P.src_offsets[m] <= id) lo = m; else hi = m; }
    return lo;
}

// The per-segment uniforms in (0, 1]: in fast mode (WD_FAST_UNIFORM) 23 bits by placing the
// word's low 23 bits in a float's mantissa, 2 − [1, 2) (no integer-to-float conversion, a
// 16-per-clock pipe on sm_90); otherwise the 24-bit conversion of the CPU twin.
__device__ __forceinline__ float seg_uniform(unsigned int x) {
#ifdef WD_FAST_UNIFORM
    // The low 23 bits (both generators pass BigCrush on the whole word): one LOP3 and one FADD.
    return 2.0f - __uint_as_float(0x3f800000u | (x & 0x007fffffu));
#else
    return wd_u32_to_uniform(x);
#endif
}

// birefringence.rs: Birefringence::path_integrals -----------------------------------------------
// ∫ ra dl and ∫ rb dl over `len` from tilt-corrected height zp along nz (layers of the walk).
__device__ __forceinline__ void bfr_path(const PhotonParams& P, float zp, float nz, float len, float& ra, float& rb) {
    const int n = P.n_layers;
    int i = min(max((int)roundf((zp - P.hmin) * P.inv_dh), 0), n - 1);
    float ze = zp + nz * len;
    int j = min(max((int)roundf((ze - P.hmin) * P.inv_dh), 0), n - 1);
    if (i == j) {
        ra = len * P.bfr_ra[i];
        rb = len * P.bfr_rb[i];
    } else {
        bool up = j > i;
        float zi = (zp - P.hmin) / P.dh, zj = (ze - P.hmin) / P.dh;
        float h = up ? (float)i + 0.5f - zi : zi - ((float)i - 0.5f);
        float g = up ? zj - ((float)j - 0.5f) : (float)j + 0.5f - zj;
        ra = h * P.bfr_ra[i] + g * P.bfr_ra[j];
        rb = h * P.bfr_rb[i] + g * P.bfr_rb[j];
        for (int k = up ? i + 1 : i - 1; k != j; k += up ? 1 : -1) {
            ra += P.bfr_ra[k];
            rb += P.bfr_rb[k];
        }
        float f = P.dh / fabsf(nz);
        ra *= f;
        rb *= f;
    }
    ra = fmaxf(ra, 0.0f);
    rb = fmaxf(rb, 0.0f);
}

// birefringence.rs: stereographic
__device__ __forceinline__ V3 bfr_stereographic(V3 n, V3 q, V3 p, float a, float b) {
#ifdef WD_TWIN_FMA_GEOM
    float k = fmaf(b, b, a * a);
#else
    float k = a * a + b * b;
#endif
    float den = 2.0f / (1.0f + k);
    float c = -k * den;
    a *= den;
    b *= den;
#ifdef WD_FAST_BFR
    // (n, q, p) orthonormal: the inverse stereographic projection is a unit vector already
    // (|m|² = (4k + (1 − k)²)/(1 + k)² = 1); the renormalisation only cleans rounding, which
    // the next scattering's normalize does as well.
#ifdef WD_TWIN_FMA_GEOM
    return V3{fmaf(n.x, c, fmaf(p.x, b, fmaf(q.x, a, n.x))), fmaf(n.y, c, fmaf(p.y, b, fmaf(q.y, a, n.y))),
              fmaf(n.z, c, fmaf(p.z, b, fmaf(q.z, a, n.z)))};
#else
    return V3{n.x + q.x * a + p.x * b + n.x * c, n.y + q.y * a + p.y * b + n.y * c, n.z + q.z * a + p.z * b + n.z * c};
#endif
#else
    return normalize(V3{n.x + q.x * a + p.x * b + n.x * c, n.y + q.y * a + p.y * b + n.y * c, n.z + q.z * a + p.z * b + n.z * c});
#endif
}

// birefringence.rs: Birefringence::deflect (four uniforms from one Philox block).
__device__ __forceinline__ V3 bfr_deflect(const PhotonParams& P, V3 n, float len, float ra_l, float rb_l, const unsigned int* w, V3& shift) {
#ifdef WD_TWIN_FMA_GEOM
    float dot = fmaf(P.bfr_ay, n.y, P.bfr_ax * n.x);
#else
    float dot = P.bfr_ax * n.x + P.bfr_ay * n.y;
#endif
    float sra = sqrtf(ra_l);
#ifdef WD_BFR_TABLE
    // Widths from the host's table in the pseudo-angle s/(s + c) (birefringence.rs width_table), linear.
    float tc = fminf(fabsf(dot), 1.0f), ts = sqrtf(fmaxf(1.0f - tc * tc, 0.0f));
    float f = ts / (ts + tc) * (float)WD_BFR_BINS;
    int j = min((int)f, WD_BFR_BINS - 1);
    float a = f - (float)j;
    float4 w0 = P.bfr_table[j], w1 = P.bfr_table[j + 1];
    float sx = sra * (w0.x * (1.0f - a) + w1.x * a);
    float sy = sra * (w0.y * (1.0f - a) + w1.y * a);
    float mx = rb_l * (w0.z * (1.0f - a) + w1.z * a);
#else
    const float* p = P.bfr_p;
    float sdt = sqrtf(fmaxf(1.0f - dot * dot, 0.0f));
    float cdt = fabsf(dot);
    float sx = sra * fmaxf(p[0] * expf(-p[1] * powf(atanf(p[3] * sdt), p[2])), 0.0f);
    float sy = sra * fmaxf(p[4] * expf(-p[5] * powf(atanf(p[7] * sdt), p[6])), 0.0f);
    float mx = rb_l * fmaxf(p[8] * atanf(p[11] * sdt * cdt) * expf(-p[9] * sdt + p[10] * cdt), 0.0f);
#endif
#ifdef WD_TWIN_FMA_GEOM
    V3 q{fmaf(-dot, n.x, P.bfr_ax), fmaf(-dot, n.y, P.bfr_ay), -dot * n.z};
#else
    V3 q{P.bfr_ax - dot * n.x, P.bfr_ay - dot * n.y, -dot * n.z};
#endif
    if (dot < 0.0f) q = V3{-q.x, -q.y, -q.z};
#ifdef WD_TWIN_FMA_GEOM
    float qn = fmaf(q.z, q.z, fmaf(q.y, q.y, q.x * q.x));
#else
    float qn = q.x * q.x + q.y * q.y + q.z * q.z;
#endif
    if (qn > 0.0f) {
        float f = wd_rsqrt(qn);
        q = V3{q.x * f, q.y * f, q.z * f};
    } else {
        q = V3{0.0f, 0.0f, 1.0f};
    }
#ifdef WD_TWIN_FMA_GEOM
    V3 pv{fmaf(n.y, q.z, -(n.z * q.y)), fmaf(n.z, q.x, -(n.x * q.z)), fmaf(n.x, q.y, -(n.y * q.x))};
#else
    V3 pv{n.y * q.z - n.z * q.y, n.z * q.x - n.x * q.z, n.x * q.y - n.y * q.x};
#endif
    float g[4];
    for (int k = 0; k < 2; ++k) {
        float u1 = seg_uniform(w[2 * k]), u2 = seg_uniform(w[2 * k + 1]);
        float r = sqrtf(-2.0f * logf(u1));
        float sn, cs;
        wd_sincos_turn(u2, &sn, &cs);
        g[2 * k] = r * cs;
        g[2 * k + 1] = r * sn;
    }
#ifdef WD_TWIN_FMA_GEOM
    float du = fmaf(sx, g[0], mx), dv = sy * g[1];
#else
    float du = sx * g[0] + mx, dv = sy * g[1];
#endif
    const float r3 = 1.0f / sqrtf(3.0f);
#ifdef WD_TWIN_FMA_GEOM
    V3 m = bfr_stereographic(n, q, pv, fmaf(sx * g[2], r3, du) / 2.0f, fmaf(sy * g[3], r3, dv) / 2.0f);
#else
    V3 m = bfr_stereographic(n, q, pv, (du + sx * g[2] * r3) / 2.0f, (dv + sy * g[3] * r3) / 2.0f);
#endif
    float half = len / 2.0f;
    shift = V3{half * (m.x - n.x), half * (m.y - n.y), half * (m.z - n.z)};
    return bfr_stereographic(n, q, pv, du / 2.0f, dv / 2.0f);
}

// One photon's state between segments.
struct PState {
    V3 pos, dir;
    float time, tot, ocm;
    unsigned int slice, seq, segs;
    int s, own_dom, skip;
    float sca_depth;  // the next segment's scattering depth (drawn with the previous scattering)
#ifdef WD_FAST_RNG
    unsigned int mx, mc;  // the photon's MWC64X state (fast mode: seg_words)
#else
    unsigned int block;  // next Philox block of the photon's stream (one per scattering)
#endif
    unsigned long long id;
};

// Emission and the absorption budget (the start of propagate_photon).
__device__ __forceinline__ void start(const PhotonParams& P, unsigned long long id, PState& st) {
    st.id = id;
    st.s = source_of(P, id);
#ifdef WD_EMIT_MWC
    MwcRng rng;
    {
        WdRng philox = wd_rng(P.seed, WD_TAG_PHOTON, id);
        mwc_seed(philox, rng.x, rng.c);
    }
#else
    WdRng rng = wd_rng(P.seed, WD_TAG_PHOTON, id);
#endif
    Photon p = emit(P, st.s, rng);
    st.pos = p.pos; st.dir = p.dir; st.time = p.time; st.slice = p.slice;
    st.own_dom = P.src_i32[2 * st.s + 1];
    st.ocm = P.slice_ocm[p.slice];
    st.tot = wd_exponential(rng);
#ifdef WD_FLASHER
    if (p.killed) st.tot = 0.0f;  // absorbed where it was made (ends at its first step)
#endif
    st.sca_depth = wd_exponential(rng);
#if defined(WD_EMIT_MWC)
    st.mx = rng.x;
    st.mc = rng.c;
#elif defined(WD_FAST_RNG)
    mwc_seed(rng, st.mx, st.mc);
#else
    st.block = rng.block;  // the rest of the current block stays unused (propagate.rs)
#endif
    // A flasher photon starts on its DOM's surface: its first segment does not meet it (PPC: old = fla).
    st.skip = st.own_dom; st.seq = 0; st.segs = 0;
}

#ifdef WD_BFR
// layer_depths for a hit that ends a birefringent step, out of line: it runs for about one photon
// in a hundred, and inlined its walk's registers spilled the hot loop. P is the kernel's
// __grid_constant__ parameter, so passing it by reference makes no copy.
__device__ __noinline__ float2 depths_to_hit(const PhotonParams& P, unsigned int slice, float zp, float nz, float h, float nr) {
    return layer_depths(P, slice, zp, nz, h, nr);
}
#endif

// One segment of propagate_photon's loop; false when the photon ends.
__device__ __forceinline__ bool step(const PhotonParams& P, PState& st) {
#ifdef WD_FLASHER
    if (st.tot <= 0.0f) return false;  // a flasher photon absorbed at emission (start)
#endif
#ifdef WD_REACH
    // Out of reach of every DOM (reach.rs): the photon ends here, with the hits it has.
    if (out_of_reach(P, st.pos, st.tot, P.reach[st.slice])) return false;
#endif
    float sca_depth = st.sca_depth;
    float zp = st.pos.z - zshift_fast(P, st.pos.x, st.pos.y, st.pos.z);
    float nr = absorption_factor(P, st.dir);
    Segment seg = layer_walk(P, st.slice, zp, st.dir.z, sca_depth, st.tot, nr);
#ifdef WD_HOLE
    // Hole ice (propagate.rs step): the bulk segment cut where it enters a column; inside, the
    // column's coefficients. hole_end: 0 bulk scattering, 1 scattering in the column, 2 cut at
    // its wall (the depths left carry over). Compiled only for models with hole ice.
    float bfr_len = seg.length, sca_left = 0.0f;
    bool curved = true;
    int hole_end = 0;
    float t_in, t_out;
    if (P.has_hole && hole_span(P, st.pos, st.dir, seg.length, t_in, t_out)) {
        float2 x = layer_depths(P, st.slice, zp, st.dir.z, t_in, nr);
        float s = fmaxf(sca_depth - x.x, 0.0f), t = fmaxf(st.tot - x.y, 0.0f);
        float ls = s / P.hole_sca, la = t / P.hole_abs;
        bfr_len = t_in;
        curved = false;
        if (la <= ls && t_in + la <= t_out) {
            seg.length = t_in + la;
            seg.tot = 0.0f;
        } else if (ls < la && t_in + ls <= t_out) {
            seg.length = t_in + ls;
            seg.tot = t - P.hole_abs * ls;
            hole_end = 1;
        } else {
            float d = t_out - t_in;
            seg.length = t_out;
            seg.tot = t - P.hole_abs * d;
            sca_left = fmaxf(s - P.hole_sca * d, 0.0f);
            hole_end = 2;
        }
    }
#else
    float bfr_len = seg.length;
    const bool curved = true;
#endif
#ifdef WD_BFR
    // A hit that ends a birefringent step (propagate.rs SegmentEnd::AfterHit): the DOM, and the
    // scattering depth left at the hit. It shares the diffusion below with the step's end: a
    // second copy of bfr_deflect inlined at the hit spilled the hot loop's registers (local
    // memory 40 → 64 B; docs/performance/photon.md, issue #29).
    int hit_dom = -1;
    float sca_at_hit = 0.0f;
#endif
    // Every DOM the segment hits, in order (propagate.rs step: continue after hit); the one hit
    // last is skipped until the next scattering (through a hole-ice cut it stays skipped).
    // The photon is advanced to each hit and the rest of the segment searched from there, as PPC
    // does (same straight path and end).
    int skip = st.skip;
    for (int k = 0; k < WD_MAX_SEGMENT_HITS; ++k) {
        Collision c = first_hit(P, st.pos, st.dir, seg.length, skip, st.own_dom);
        if (c.dom < 0) break;
        // A flasher's own DOM absorbs the photons that come back to it, recording nothing.
        if (c.dom == st.own_dom) return false;
        record(P, st.id, st.s, st.seq, c.dom, st.time + c.h * st.ocm, st.slice, st.dir, c.impact);
        st.seq += 1;
        if (P.oversize <= 1.0f) return false;
        st.pos = V3{st.pos.x + c.h * st.dir.x, st.pos.y + c.h * st.dir.y, st.pos.z + c.h * st.dir.z};
        st.time += c.h * st.ocm;
#ifdef WD_BFR
        // Birefringence: a hit in the bulk ends the step (propagate.rs step, SegmentEnd::AfterHit):
        // the depths used up to the hit; the diffusion over that piece follows below.
        if (P.has_bfr && c.h <= bfr_len) {
            float2 x = depths_to_hit(P, st.slice, zp, st.dir.z, c.h, nr);
            sca_at_hit = fmaxf(sca_depth - x.x, 0.0f);
            seg.tot = fmaxf(st.tot - x.y, 0.0f);
            seg.length = 0.0f;
            bfr_len = c.h;
            hit_dom = c.dom;
#ifdef WD_HOLE
            curved = true;  // the hit lies before any hole-ice column: a bulk piece, curved
#endif
            break;
        }
#endif
        seg.length -= c.h;
        skip = c.dom;
#ifdef WD_NO_CONTINUE
        break;
#endif
    }
#ifdef WD_HOLE
    st.skip = hole_end == 2 ? skip : -1;
#else
    st.skip = -1;
#endif
    st.tot = seg.tot;
    if (st.tot <= 0.0f) return false;
#ifdef WD_TWIN_FMA_GEOM
    st.pos = V3{fmaf(seg.length, st.dir.x, st.pos.x), fmaf(seg.length, st.dir.y, st.pos.y), fmaf(seg.length, st.dir.z, st.pos.z)};
#else
    st.pos = V3{st.pos.x + seg.length * st.dir.x, st.pos.y + seg.length * st.dir.y, st.pos.z + seg.length * st.dir.z};
#endif
    st.time += seg.length * st.ocm;
#if defined(WD_PHILOX_PAIR) && !defined(WD_FAST_RNG)
    unsigned int ws[4];
    bool paired = false;
#endif
#ifdef WD_BFR
    // Birefringence: one whole block per segment (propagate.rs), before the scattering's.
    // Compiled only for models that have it (gpu.rs run_on sets WD_BFR).
    // With hole ice only the bulk part diffuses, curved only when the segment stayed in the bulk.
    if (P.has_bfr && bfr_len > 0.0f) {
        float ra, rb;
#ifdef WD_WALK_BFR
        // The walk's integrals, unless hole ice cut the bulk part short (then walked again).
        if (curved && hit_dom < 0) { ra = seg.ra; rb = seg.rb; }
        else bfr_path(P, zp, st.dir.z, bfr_len, ra, rb);
#else
        bfr_path(P, zp, st.dir.z, bfr_len, ra, rb);
#endif
        unsigned int wb[4];
#if defined(WD_FAST_RNG)
        for (int k = 0; k < 4; ++k) wb[k] = mwc_next(st.mx, st.mc);
#elif defined(WD_PHILOX_PAIR)
        // The scattering's block (block + 1) computed beside this one: two independent Philox
        // chains interleaved (the same words; the scattering below uses them).
        wd_block4_pair(P.seed, WD_TAG_PHOTON, st.id, st.block, wb, ws);
        paired = true;
        st.block += 1;
#else
        wd_block4(P.seed, WD_TAG_PHOTON, st.id, st.block, wb);
        st.block += 1;
#endif
        V3 shift;
        st.dir = bfr_deflect(P, st.dir, bfr_len, ra, rb, wb, shift);
        if (curved) st.pos = V3{st.pos.x + shift.x, st.pos.y + shift.y, st.pos.z + shift.z};
    }
#endif
#ifdef WD_BFR
    if (hit_dom >= 0) {
        st.sca_depth = sca_at_hit;
        st.skip = hit_dom;
        return ++st.segs < WD_MAX_SEGMENTS;
    }
#endif
#ifdef WD_HOLE
    if (hole_end == 2) {
        st.sca_depth = sca_left;
        return ++st.segs < WD_MAX_SEGMENTS;
    }
#endif
    // One whole block per scattering: its three uniforms and the next segment's depth.
    unsigned int w[4];
#if defined(WD_FAST_RNG)
    for (int k = 0; k < 4; ++k) w[k] = mwc_next(st.mx, st.mc);
#elif defined(WD_PHILOX_PAIR)
    if (paired) { w[0] = ws[0]; w[1] = ws[1]; w[2] = ws[2]; w[3] = ws[3]; }
    else wd_block4(P.seed, WD_TAG_PHOTON, st.id, st.block, w);
    st.block += 1;
#else
    wd_block4(P.seed, WD_TAG_PHOTON, st.id, st.block, w);
    st.block += 1;
#endif
    float u1 = seg_uniform(w[0]), u2 = seg_uniform(w[1]), u3 = seg_uniform(w[2]);
    st.sca_depth = -logf(seg_uniform(w[3]));
#ifdef WD_HOLE
    if (hole_end == 1) {
        // Inside a column: its own phase function, no SPICE anisotropy.
        float ch = scattering_cosine(P.hole_g, P.hole_f_sl, u1, u2);
        st.dir = rotate(st.dir, ch, sqrtf(fmaxf(1.0f - ch * ch, 0.0f)), u3);
        return ++st.segs < WD_MAX_SEGMENTS;
    }
#endif
#ifdef WD_RNG_WARP
    // Random-number blocking per warp (opt-in; changes statistics): the lanes stepping together
    // share the first one's phase-function choice, so only one cosine is computed. Each
    // scattering still picks simplified Liu with probability f_SL, but the choices of the
    // photons of a warp are correlated step by step.
    const unsigned int mask = __activemask();
    u1 = __shfl_sync(mask, u1, __ffs(mask) - 1);
    float cos_t = u1 <= P.f_sl ? simplified_liu(P.g, u2) : henyey_greenstein(P.g, u2);
#elif defined(WD_FAST_PHASE)
    float cos_t = bulk_cosine(P, u1, u2);
#else
    float cos_t = scattering_cosine(P.g, P.f_sl, u1, u2);
#endif
    st.dir = scatter(P, st.dir, cos_t, u3);
    return ++st.segs < WD_MAX_SEGMENTS;
}

#if defined(WD_NAIVE_LOOP)
// One whole photon per iteration (a warp waits for its longest photon).
extern "C" __global__ void WD_BOUNDS propagate(__grid_constant__ const PhotonParams P) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long id = P.photon_lo + (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; id < P.photon_hi; id += stride) {
        PState st;
        start(P, id, st);
        while (step(P, st)) {}
    }
}
#elif defined(WD_JOBQUEUE)
// Per-warp job queue (after CLSim's CUDA port): when the warp's queue is empty and a lane is
// idle, all 32 lanes emit one photon each into shared memory together (emission runs
// warp-uniform instead of one lane at a time); idle lanes then pop photons from the queue.
#define WD_WARPS (WD_BLOCK / 32)
extern "C" __global__ void WD_BOUNDS propagate(__grid_constant__ const PhotonParams P) {
    __shared__ PState queue[WD_WARPS][32];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
#ifdef WD_ICE_TABLES
    if (P.n_layers <= WD_SHARED_LAYERS) {
        for (int i = threadIdx.x; i < P.n_layers; i += blockDim.x) wd_layer_sh[i] = ((const float4*)P.layer_f)[i];
        for (int i = threadIdx.x; i < WD_WNUM; i += blockDim.x) wd_slice_sh[i] = ((const float4*)P.slice_f)[i];
    }
    if (P.n_strings <= WD_SHARED_STRINGS) {
        for (int i = threadIdx.x; i < P.n_strings; i += blockDim.x)
            wd_string_sh[i] = StringSh{P.str_xyr[3 * i], P.str_xyr[3 * i + 1], P.str_xyr[3 * i + 2], P.z_grid[2 * i], P.z_grid[2 * i + 1],
                                       P.str_first_count[2 * i], P.str_first_count[2 * i + 1]};
    }
    __syncthreads();
#endif
    const unsigned long long total_warps = ((unsigned long long)gridDim.x * blockDim.x) >> 5;
    unsigned long long warp_next = P.photon_lo + ((unsigned long long)blockIdx.x * WD_WARPS + w) * 32ull;
    bool more = true;  // photons left for this warp (warp-uniform)
    int qn = 0, qhead = 0;  // warp-uniform
    PState st;
    bool alive = false;
    for (;;) {
        unsigned int idle = __ballot_sync(0xffffffffu, !alive);
#ifdef WD_REFILL
        // Refill only when WD_REFILL lanes are idle (fewer, fuller pops; idle lanes wait). All
        // idle (popc 32) always passes, so the warp still ends.
        if (__popc(idle) >= WD_REFILL) {
#else
        if (idle) {
#endif
            if (qn == 0 && more) {
#ifdef WD_DYNAMIC
                // Dynamic distribution: the warp takes the next 32 photon ids from a counter
                // (hit_count[1], zeroed with the hit count before each launch), so all warps
                // finish together whatever their photons' lifetimes.
                unsigned long long base = 0;
                if (lane == 0) base = atomicAdd(P.hit_count + 1, 32ull);
                warp_next = P.photon_lo + __shfl_sync(0xffffffffu, base, 0);
#endif
                if (warp_next < P.photon_hi) {
                    unsigned long long id = warp_next + (unsigned long long)lane;
                    if (id < P.photon_hi) start(P, id, queue[w][lane]);
                    unsigned long long left = P.photon_hi - warp_next;
                    qn = left < 32ull ? (int)left : 32;
                    qhead = 0;
                }
#ifndef WD_DYNAMIC
                warp_next += total_warps * 32ull;
#endif
                more = warp_next < P.photon_hi;
                __syncwarp();
            }
            int rank = __popc(idle & ((1u << lane) - 1u));
            if (!alive && rank < qn) {
                st = queue[w][qhead + rank];
                alive = true;
            }
            int taken = min(__popc(idle), qn);
            qhead += taken;
            qn -= taken;
            __syncwarp();
            if (!__any_sync(0xffffffffu, alive) && qn == 0 && !more) break;
        }
        if (alive) alive = step(P, st);
    }
}
#else
// Default: one segment per iteration; a lane whose photon ended starts its next photon.
extern "C" __global__ void WD_BOUNDS propagate(__grid_constant__ const PhotonParams P) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long next = P.photon_lo + (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    PState st;
    bool alive = false;
    for (;;) {
        if (!alive) {
            if (next >= P.photon_hi) break;
            start(P, next, st);
            next += stride;
            alive = true;
        }
        alive = step(P, st);
    }
}
#endif

// Field offsets of the shared structs, compared with Rust's offset_of! by gpu-check.
extern "C" __global__ void layout(unsigned long long* out) {
    PhotonParams p;
    GpuHit h;
    const char* b = (const char*)&p;
    out[0] = (const char*)&p.tilt_r0x - b;
    out[1] = (const char*)&p.photon_lo - b;
    out[2] = (const char*)&p.hmin - b;
    out[3] = (const char*)&p.n_layers - b;
    out[4] = (const char*)&p.n_sources - b;
    out[5] = (const char*)&p.t2_cut2 - b;
    out[6] = (const char*)&p.grid_x0 - b;
    out[7] = (const char*)&h.time - (const char*)&h;
    out[8] = (const char*)&h.impact - (const char*)&h;
    out[9] = (const char*)&p.tilt_lut - b;
    out[10] = (const char*)&p.slice_f - b;
    out[11] = (const char*)&p.clear_near - b;
    out[12] = (const char*)&p.clear_ny - b;
    out[13] = (const char*)&p.b2 - b;
    out[14] = (const char*)&p.z_start - b;
    out[15] = (const char*)&p.bfr_p - b;
    out[16] = (const char*)&p.lut2_dz - b;
    out[17] = (const char*)&p.bfr_table - b;
    out[18] = (const char*)&p.hole_r - b;
    out[19] = (const char*)&p.lat - b;
    out[20] = (const char*)&p.rz_eff - b;
    out[21] = (const char*)&p.hg - b;
    out[22] = (const char*)&p.clear_more - b;
    out[23] = (const char*)&p.reach - b;
    out[24] = (const char*)&p.z_hi - b;
}

// Twin checks for scripts/gpu-check: each evaluates device functions on inputs from the host.
// Philox: one draw of each kind from stream (seed, tag, entity = i), then the next whole block
// (u32s[5i] the first word, u32s[5i + 1 .. 5i + 5] the block).
extern "C" __global__ void twin_rng(unsigned long long seed, unsigned int tag, int n, unsigned int* u32s, float* unif, double* unif64, float* expo, double* gam, double a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    WdRng r = wd_rng(seed, tag, (unsigned long long)i);
    u32s[5 * i] = wd_next_u32(r);
    unif[i] = wd_uniform(r);
    unif64[i] = wd_uniform_f64(r);
    expo[i] = wd_exponential(r);
    gam[i] = wd_gamma(r, a);
    unsigned int w[4];
    wd_block4(seed, tag, (unsigned long long)i, r.block, w);
    for (int k = 0; k < 4; ++k) u32s[5 * i + 1 + k] = w[k];
}

// Physics functions on arrays: in[8·i..] = n.xyz, u1, u2, u3, zp, depth; out[16·i..].
extern "C" __global__ void twin_physics(const PhotonParams P, int n, const float* in, float* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float* q = in + 8 * i;
    float* o = out + 16 * i;
    V3 dir = normalize(V3{q[0], q[1], q[2]});
    float cos_t = scattering_cosine(P.g, P.f_sl, q[3], q[4]);
    V3 m = scatter(P, dir, cos_t, q[5]);
    Segment seg = layer_walk(P, (unsigned int)(q[3] * 511.0f), q[6], dir.z, q[7], 3.0f * q[4], absorption_factor(P, dir));
    double zs = zshift(P, 600.0 * (double)q[0], 600.0 * (double)q[1], 500.0 * (double)q[2]);
    V3 r{600.0f * q[0], 600.0f * q[1], 500.0f * q[2]};
    Collision c = first_hit(P, r, dir, 20.0f * q[5], -1, -1);
    o[0] = cos_t; o[1] = m.x; o[2] = m.y; o[3] = m.z;
    o[4] = seg.length; o[5] = seg.tot; o[6] = (float)zs; o[7] = absorption_factor(P, dir);
    o[8] = (float)c.dom; o[9] = c.h; o[10] = c.impact.x; o[11] = c.impact.y; o[12] = c.impact.z;
    o[13] = cascade_xi(q[3]); o[14] = henyey_greenstein(P.g, q[4]); o[15] = simplified_liu(P.g, q[4]);
}
