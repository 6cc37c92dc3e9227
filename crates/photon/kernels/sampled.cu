// The sampled tabulation kernel: the CUDA twin of crates/photon/src/tabulate/sampled.rs
// (`warpdrive photon tabulate --device cuda --estimator sampled`, issue #32). Compiled after
// propagate.cu (tabulate/gpu.rs SAMPLED_SRC) in the FAST propagation build (the switches of
// `bench photon --device cuda` that concern one photon's path: MWC64X per-segment words, float
// tilt tables, factored ice, ...): the photon's emission, layer walk, tilt, anisotropy,
// birefringence and scattering are propagate.cu's `start` and `step` without modules or hole ice.
//
// The estimator (sampled.rs): points at cumulative path length (u + k)·Δ, u ∈ (0, 1] one uniform
// per photon from Philox stream (seed, WD_TAG_TABULATE, id); Δ = ∞ (step ≤ 0 here): one point per
// segment at u_k·length, u_k = the photon's bits + k·WD_GOLDEN. Each point adds weight × Δ (or ×
// the segment's length) to its cell; consecutive points in the same cell are merged into runs,
// and a run closed is added with 64-bit integer atomics in the CPU's fixed point (its square to
// the 128-bit squares, two words with a carry), so the tables do not depend on the order of the
// additions. Float arithmetic throughout; bins by arithmetic on equal-step axes (inv > 0), else a
// binary search over float edges. No per-thread scratch: nothing overflows to the host.

#define WD_TAG_TABULATE 4u
#define WD_GOLDEN 0x9E3779B9u
#define WD_SUM_UNIT 65536.0
#define WD_SQ_UNIT 4294967296.0
#define WD_TWO64 18446744073709551616.0
// Counters (tabulate/gpu.rs SAMPLED_COUNTERS): tabulated, absorbed, escaped, segments, runs, points.
#define WD_SAMP_COUNTERS 6
#ifndef WD_SAMP_BLOCK
#define WD_SAMP_BLOCK 128
#endif
#ifndef WD_SAMP_MIN_BLOCKS
#define WD_SAMP_MIN_BLOCKS 8
#endif

// Must match SampParams in crates/photon/src/tabulate/gpu.rs (offsets checked by gpu-check).
struct SampParams {
    const float* radial;
    const float* azimuth;
    const float* polar;
    const float* delay;
    const float* share;                 // per-slice share of the envelope
    const float* ang;                   // angular polynomial, lowest order first
    unsigned long long* sum;            // cells
    unsigned long long* sumsq;          // 2 × cells: (low, high) words of a u128
    unsigned long long* spatial_sumsq;  // 2 × spatial cells
    unsigned long long* counters;       // WD_SAMP_COUNTERS
    unsigned long long photon_lo, photon_hi;
    float origin[3], axis[3], e1[3], e2[3];
    float ng_over_c, cone, inv_c, margin, mas;
    float step;                         // Δ [m]; ≤ 0: one point per segment
    float lo[4], inv[4];                // per axis (radial, azimuth, polar, delay): first edge, bins/span (0: search)
    int n_radial, n_azimuth, n_polar, n_delay;  // edges
    int spherical, n_ang;
    unsigned int time_cells;
    int pad;
};

// sampled.rs Axis::bin: -1 outside [e0, e_last]; the last edge in the last bin.
__device__ __forceinline__ int axis_bin(const float* e, int n, float lo, float inv, float x) {
    if (!(x >= e[0] && x <= e[n - 1])) return -1;
    if (inv > 0.0f) return min((int)((x - lo) * inv), n - 2);
    int a = 0, b = n;  // partition_point(e <= x)
    while (a < b) {
        int m = (a + b) >> 1;
        if (e[m] <= x) a = m + 1; else b = m;
    }
    return max(min(a, n - 1), 1) - 1;
}

// sampled.rs Lookup::coordinates + Lookup::cell: the cell of the point x at time t, or -1.
__device__ __forceinline__ int sampled_cell(const SampParams& T, V3 x, float t) {
    float rx = x.x - T.origin[0], ry = x.y - T.origin[1], rz = x.z - T.origin[2];
    float axial = rx * T.axis[0] + ry * T.axis[1] + rz * T.axis[2];
    float rad, polar, delay;
    if (T.spherical) {
        rad = sqrtf(rx * rx + ry * ry + rz * rz);
        polar = rad > 0.0f ? fminf(fmaxf(axial / rad, -1.0f), 1.0f) : 1.0f;
        delay = t - T.ng_over_c * rad;
    } else {
        float px = rx - axial * T.axis[0], py = ry - axial * T.axis[1], pz = rz - axial * T.axis[2];
        rad = sqrtf(px * px + py * py + pz * pz);
        polar = axial;
        delay = t - axial * T.inv_c - rad * T.cone;
    }
    int i = axis_bin(T.radial, T.n_radial, T.lo[0], T.inv[0], rad);
    if (i < 0) return -1;
    int k = axis_bin(T.polar, T.n_polar, T.lo[2], T.inv[2], polar);
    if (k < 0) return -1;
    float a = rx * T.e1[0] + ry * T.e1[1] + rz * T.e1[2];
    float b = rx * T.e2[0] + ry * T.e2[1] + rz * T.e2[2];
    float phi = fabsf(atan2f(b, a)) * 57.29577951308232f;
    int j = axis_bin(T.azimuth, T.n_azimuth, T.lo[1], T.inv[1], phi);
    if (j < 0) return -1;
    int spatial = (i * (T.n_azimuth - 1) + j) * (T.n_polar - 1) + k;
    int tc = 0;
    if (T.n_delay > 0) {
        if (delay < T.delay[0]) tc = 0;
        else if (delay >= T.delay[T.n_delay - 1]) tc = T.n_delay;
        else tc = 1 + max(axis_bin(T.delay, T.n_delay, T.lo[3], T.inv[3], delay), 0);
    }
    return spatial * (int)T.time_cells + tc;
}

// mod.rs Acceptance::weight, in float.
__device__ __forceinline__ float sampled_weight(const SampParams& T, unsigned int slice, float nz) {
    float acc = 0.0f;
    for (int i = T.n_ang - 1; i >= 0; --i) acc = acc * nz + T.ang[i];
    return T.share[slice] * fminf(fmaxf(acc / T.mas, 0.0f), 1.0f);
}

// Add an integer-valued double v (0 ≤ v < 2¹²⁸) to a u128 held as (low, high) words.
__device__ __forceinline__ void sampled_add_u128(unsigned long long* p, double v) {
    unsigned long long hi = 0, lo;
    if (v < WD_TWO64) {
        lo = (unsigned long long)v;
    } else {
        double h = floor(v / WD_TWO64);
        hi = (unsigned long long)h;
        lo = (unsigned long long)(v - h * WD_TWO64);
    }
    unsigned long long old = atomicAdd(p, lo);
    if (old + lo < old) hi += 1;
    if (hi) atomicAdd(p + 1, hi);
}

// sampled.rs Sampler: the open runs of a photon.
struct SampRuns {
    int cell, spatial;
    float x, spatial_x;
    unsigned int runs, points;
};

// sampled.rs Histogram::record of a closed run: x to the cell's sum, x² to its squares.
__device__ __forceinline__ void close_cell(const SampParams& T, int c, float x) {
    double xd = (double)x;
    atomicAdd(T.sum + c, (unsigned long long)round(xd * WD_SUM_UNIT));
    sampled_add_u128(T.sumsq + 2 * (size_t)c, round(xd * xd * WD_SQ_UNIT));
}

__device__ __forceinline__ void close_spatial(const SampParams& T, int sp, float x) {
    double xd = (double)x;
    sampled_add_u128(T.spatial_sumsq + 2 * (size_t)sp, round(xd * xd * WD_SQ_UNIT));
}

// sampled.rs Sampler::record: a point of weighted length x in cell c.
__device__ __forceinline__ void sampled_record(const SampParams& T, SampRuns& r, int c, float x) {
    r.points += 1;
    if (c != r.cell) {
        if (r.cell >= 0) { close_cell(T, r.cell, r.x); r.runs += 1; }
        r.cell = c;
        r.x = 0.0f;
    }
    r.x += x;
    int sp = c / (int)T.time_cells;
    if (sp != r.spatial) {
        if (r.spatial >= 0) close_spatial(T, r.spatial, r.spatial_x);
        r.spatial = sp;
        r.spatial_x = 0.0f;
    }
    r.spatial_x += x;
}

// Per-thread counters, added to the global ones once at the thread's end.
struct SampCounts { unsigned long long tabulated, absorbed, escaped, segments, runs, points; };

// One photon's state between segments: propagate.cu's PState, the sampler's (the photon's random
// bits, the distance from the segment's start to the next point, the segment's index) and the
// open runs.
struct SampState {
    PState st;
    unsigned int bits, k;
    float next;
    SampRuns runs;
};

// mod.rs Tabulate::walk's start with Tabulate::photon_sampled's Sampler::new.
__device__ __forceinline__ void sampled_start(const PhotonParams& P, const SampParams& T, unsigned long long id, SampState& S) {
    start(P, id, S.st);
    WdRng r = wd_rng(P.seed, WD_TAG_TABULATE, id);
    S.bits = wd_next_u32(r);
    S.next = wd_u32_to_uniform(S.bits) * T.step;
    S.k = 0;
    S.runs = SampRuns{-1, -1, 0.0f, 0.0f, 0u, 0u};
}

// The photon's end: its open runs closed, its counts added.
__device__ __forceinline__ void sampled_end(const SampParams& T, SampState& S, SampCounts& n, bool absorbed, bool escaped) {
    if (S.runs.cell >= 0) {
        close_cell(T, S.runs.cell, S.runs.x);
        close_spatial(T, S.runs.spatial, S.runs.spatial_x);
        S.runs.runs += 1;
        n.tabulated += 1;
    }
    n.segments += S.k;
    n.absorbed += absorbed;
    n.escaped += escaped;
    n.runs += S.runs.runs;
    n.points += S.runs.points;
}

// One segment of mod.rs Tabulate::walk (the fast build's `step` without modules or hole ice)
// with Tabulate::photon_sampled's points; false when the photon ends (then its runs are closed).
__device__ __forceinline__ bool sampled_step(const PhotonParams& P, const SampParams& T, SampState& S, SampCounts& n) {
    PState& st = S.st;
    float zp = st.pos.z - zshift_fast(P, st.pos.x, st.pos.y, st.pos.z);
    float nr = absorption_factor(P, st.dir);
    Segment seg = layer_walk(P, st.slice, zp, st.dir.z, st.sca_depth, st.tot, nr);
    float len = seg.length;
    if (len > 0.0f) {
        float w = sampled_weight(T, st.slice, st.dir.z);
        if (!(T.step > 0.0f)) {
            float s = wd_u32_to_uniform(S.bits + S.k * WD_GOLDEN) * len;
            V3 at{st.pos.x + s * st.dir.x, st.pos.y + s * st.dir.y, st.pos.z + s * st.dir.z};
            int c = sampled_cell(T, at, st.time + s * st.ocm);
            if (c >= 0) sampled_record(T, S.runs, c, w * len);
        } else {
            float x = w * T.step;
            for (; S.next < len; S.next += T.step) {
                V3 at{st.pos.x + S.next * st.dir.x, st.pos.y + S.next * st.dir.y, st.pos.z + S.next * st.dir.z};
                int c = sampled_cell(T, at, st.time + S.next * st.ocm);
                if (c >= 0) sampled_record(T, S.runs, c, x);
            }
            S.next -= len;
        }
    }
    S.k += 1;
    st.tot = seg.tot;
    if (st.tot <= 0.0f) { sampled_end(T, S, n, true, false); return false; }
    st.pos = V3{st.pos.x + len * st.dir.x, st.pos.y + len * st.dir.y, st.pos.z + len * st.dir.z};
    st.time += len * st.ocm;
    {
        // bins.rs Binning::escaped, in float.
        float rx = st.pos.x - T.origin[0], ry = st.pos.y - T.origin[1], rz = st.pos.z - T.origin[2];
        float rmax = T.radial[T.n_radial - 1] + T.margin;
        bool out;
        if (T.spherical) {
            out = rx * rx + ry * ry + rz * rz > rmax * rmax;
        } else {
            float u = rx * T.axis[0] + ry * T.axis[1] + rz * T.axis[2];
            float px = rx - u * T.axis[0], py = ry - u * T.axis[1], pz = rz - u * T.axis[2];
            out = px * px + py * py + pz * pz > rmax * rmax || u < T.polar[0] - T.margin || u > T.polar[T.n_polar - 1] + T.margin;
        }
        if (out) { sampled_end(T, S, n, false, true); return false; }
    }
#ifdef WD_BFR
    if (P.has_bfr && len > 0.0f) {
        // propagate.cu step: one whole draw per segment, the deflection and the end-point shift.
        float ra, rb;
#ifdef WD_WALK_BFR
        ra = seg.ra; rb = seg.rb;
#else
        bfr_path(P, zp, st.dir.z, len, ra, rb);
#endif
        unsigned int wb[4];
#if defined(WD_FAST_RNG)
        for (int q = 0; q < 4; ++q) wb[q] = mwc_next(st.mx, st.mc);
#else
        wd_block4(P.seed, WD_TAG_PHOTON, st.id, st.block, wb);
        st.block += 1;
#endif
        V3 shift;
        st.dir = bfr_deflect(P, st.dir, len, ra, rb, wb, shift);
        st.pos = V3{st.pos.x + shift.x, st.pos.y + shift.y, st.pos.z + shift.z};
    }
#endif
    unsigned int w4[4];
#if defined(WD_FAST_RNG)
    for (int q = 0; q < 4; ++q) w4[q] = mwc_next(st.mx, st.mc);
#else
    wd_block4(P.seed, WD_TAG_PHOTON, st.id, st.block, w4);
    st.block += 1;
#endif
    float u1 = seg_uniform(w4[0]), u2 = seg_uniform(w4[1]), u3 = seg_uniform(w4[2]);
    st.sca_depth = -logf(seg_uniform(w4[3]));
#if defined(WD_FAST_PHASE)
    float cos_t = bulk_cosine(P, u1, u2);
#else
    float cos_t = scattering_cosine(P.g, P.f_sl, u1, u2);
#endif
    st.dir = scatter(P, st.dir, cos_t, u3);
    if (S.k >= WD_MAX_SEGMENTS) { sampled_end(T, S, n, false, false); return false; }
    return true;
}

// As propagate.cu's default loop: one segment per iteration, a lane whose photon ended starts
// its next photon (a warp does not wait for its longest photon).
extern "C" __global__ void __launch_bounds__(WD_SAMP_BLOCK, WD_SAMP_MIN_BLOCKS) tabulate_sampled(__grid_constant__ const PhotonParams P, __grid_constant__ const SampParams T) {
    SampCounts n = {0, 0, 0, 0, 0, 0};
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long next = T.photon_lo + (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    SampState S;
    bool alive = false;
    for (;;) {
        if (!alive) {
            if (next >= T.photon_hi) break;
            sampled_start(P, T, next, S);
            next += stride;
            alive = true;
        }
        alive = sampled_step(P, T, S, n);
    }
    unsigned long long* c = T.counters;
    if (n.tabulated) atomicAdd(c + 0, n.tabulated);
    if (n.absorbed) atomicAdd(c + 1, n.absorbed);
    if (n.escaped) atomicAdd(c + 2, n.escaped);
    if (n.segments) atomicAdd(c + 3, n.segments);
    if (n.runs) atomicAdd(c + 4, n.runs);
    if (n.points) atomicAdd(c + 5, n.points);
}

// Field offsets of SampParams, compared with Rust's offset_of! by gpu-check.
extern "C" __global__ void sampled_layout(unsigned long long* out) {
    SampParams t;
    const char* b = (const char*)&t;
    out[0] = (const char*)&t.photon_lo - b;
    out[1] = (const char*)&t.origin - b;
    out[2] = (const char*)&t.step - b;
    out[3] = (const char*)&t.lo - b;
    out[4] = (const char*)&t.n_radial - b;
    out[5] = (const char*)&t.time_cells - b;
    out[6] = sizeof(SampParams);
}

// Twin check of the lookup (gpu-check and scripts/tabulate-twin-check): the cell of n points
// (x, y, z, t) = in[4i..4i+4].
extern "C" __global__ void sampled_twin_cells(__grid_constant__ const SampParams T, int n, const float* in, int* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = sampled_cell(T, V3{in[4 * i], in[4 * i + 1], in[4 * i + 2]}, in[4 * i + 3]);
}
