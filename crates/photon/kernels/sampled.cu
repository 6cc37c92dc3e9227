// The sampled tabulation kernel: the CUDA twin of crates/photon/src/tabulate/sampled.rs
// (`warpdrive photon tabulate --device cuda --estimator sampled`, issue #32). Compiled after
// propagate.cu (tabulate/gpu.rs SAMPLED_SRC) in the FAST propagation build (the switches of
// `bench photon --device cuda` that concern one photon's path: MWC64X per-segment words, float
// tilt tables, factored ice, ...): the photon's emission, layer walk, tilt, anisotropy,
// birefringence and scattering are propagate.cu's `start` and `step` without modules or hole ice.
//
// The estimator (sampled.rs): points at cumulative path length (u + k)·Δ, u ∈ (0, 1] one uniform
// per photon from Philox stream (seed, WD_TAG_TABULATE, id), or with the adaptive comb (WD_SAMP_ADAPT,
// sampled_enqueue) at u + k in units of each segment's own step; Δ = ∞ (step ≤ 0 here): one point per
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
// WD_SAMP_STEPWISE (issue #32's rate; docs/spline.md "One point per step"): each lane bins its
// own photon's points, one point per loop step, its open runs in registers (sampled_record, in
// the photon's order: the same integers as the other paths), no queue of points; a lane whose
// segment has points left keeps it while the other lanes walk their next segments. Photons from
// the warp's job queue (WD_SAMP_JOBQ), the counters in shared memory. Opt-in: measured at the
// default's rate on an H200 (docs/spline.md).
#ifndef WD_SAMP_STEPWISE
#define WD_SAMP_STEPWISE 0
#endif
// WD_SAMP_SCAN (issue #32's rate; docs/spline.md "Warp scans of the points"): every lane walks one
// segment a step; the warp then bins all the step's points together, a warp's width at a time
// (each slot finds its lane by a prefix sum of the lanes' point counts and takes the segment by
// shuffles), and forms the runs by segmented prefix sums of the points' integer amounts
// (WD_SAMP_QPOINT), so that no lane merges its points one at a time. Photons from the job queue.
// Opt-in: measured 14 % slower than the default at Δ = 1 m on an H200 (the scans' own
// instructions outweigh the busier physics; docs/spline.md).
#ifndef WD_SAMP_SCAN
#define WD_SAMP_SCAN 0
#endif
// WD_SAMP_QPOINT (with WD_SAMP_SCAN, or with WD_SAMP_STEPWISE as its reference): each point's
// weighted length is rounded to the fixed point (q = rint(x·2¹⁶)) and a run is the integer sum Q
// of its points' q, added as Q to the cell's sum and Q² to its squares — the same integers
// whichever lane adds which part of a run; and the comb's points are s_k = fma(k, Δ, s₀) from the
// segment's first s₀ (not repeated additions), the next segment's s₀ = fma(m, Δ, s₀) − length.
// The tables differ from the float runs' (one rounding per run) by less than 2⁻¹⁶ m a point.
#ifndef WD_SAMP_QPOINT
#define WD_SAMP_QPOINT WD_SAMP_SCAN
#endif
// The warp compaction of the points (sampled_points_warp below; 1, default) or one lane at a
// time (0), and where the per-thread counters live: shared memory (1, the default with the
// compaction: 64 registers without spills on sm_90) or registers (0, the default without it).
#ifndef WD_SAMP_COMPACT
#define WD_SAMP_COMPACT (!WD_SAMP_STEPWISE && !WD_SAMP_SCAN)
#endif
#if (WD_SAMP_STEPWISE || WD_SAMP_SCAN) && WD_SAMP_COMPACT
#error "WD_SAMP_STEPWISE and WD_SAMP_SCAN have no queue of points: WD_SAMP_COMPACT=0"
#endif
#if WD_SAMP_STEPWISE && WD_SAMP_SCAN
#error "WD_SAMP_STEPWISE and WD_SAMP_SCAN are two loops: one of them"
#endif
#if WD_SAMP_QPOINT && !(WD_SAMP_STEPWISE || WD_SAMP_SCAN)
#error "WD_SAMP_QPOINT needs WD_SAMP_SCAN or WD_SAMP_STEPWISE"
#endif
// WD_SAMP_STEP_POINTS=K (with WD_SAMP_STEPWISE, default 1): at most K points per lane and step.
#ifndef WD_SAMP_STEP_POINTS
#define WD_SAMP_STEP_POINTS 1
#endif
#if WD_SAMP_STEP_POINTS < 1
#error "WD_SAMP_STEP_POINTS must be at least 1"
#endif
#ifndef WD_SAMP_SHARED_COUNTS
#define WD_SAMP_SHARED_COUNTS (WD_SAMP_COMPACT || WD_SAMP_STEPWISE || WD_SAMP_SCAN)
#endif
// Exact speed-ups of the tabulation machinery (issue #32's profile, docs/spline.md "Cheaper
// tabulation machinery"; each leaves the tables the same integers for the same photons, so default on; 0 for
// the earlier code, to A/B on a GPU):
// WD_SAMP_NODIV: the lookup hands the merge the spatial cell it computed, instead of the merge
// dividing the cell by the time cells (a runtime integer division per point, the hottest line).
// WD_SAMP_EDGES: the first and last edges of each axis from the parameters (lo, hi: the same
// floats as the uploaded edges' first and last) instead of two loads per axis and point.
// WD_SAMP_SLOTS (with WD_SAMP_COMPACT): the merge writes the runs a point closes into that
// point's slot (no shared-memory atomics), drops the points outside the grid by one ballot,
// counts points and runs once per batch, and the closes are packed so that all lanes add them
// in one pass (cells and spatial cells together) instead of two passes of a few lanes each.
#ifndef WD_SAMP_NODIV
#define WD_SAMP_NODIV 1
#endif
#ifndef WD_SAMP_EDGES
#define WD_SAMP_EDGES 1
#endif
#ifndef WD_SAMP_SLOTS
#define WD_SAMP_SLOTS 1
#endif
// WD_SAMP_UNROLL: the acceptance polynomial's loop (once per segment) unrolled by 4 (the same
// multiply-adds in the same order).
#ifndef WD_SAMP_UNROLL
#define WD_SAMP_UNROLL 1
#endif
// WD_SAMP_DEFER (with WD_SAMP_COMPACT and WD_SAMP_SLOTS, default with them): the warp's queue
// is not emptied at each segment's end but kept across segments, each point with its weighted
// length, so every batch is a warp's width of points (the lookup on all lanes) instead of one
// full and one partial batch per segment; a photon's end is a marker in the queue after its
// points, whose merge closes the photon's open runs (sampled_end; with batch means the sign of
// its last point instead, WD_SAMP_ENDBITS below), and the queue is emptied once more when the
// warp's photons are all done. The same runs, the same order per photon.
#ifndef WD_SAMP_DEFER
#define WD_SAMP_DEFER WD_SAMP_SLOTS
#endif
// WD_SAMP_ROUNDS=K (with WD_SAMP_DEFER; default 2 since 2026-12-02 — 2 % faster than 4 in two
// A/B calls on an H200 —, 0: no limit): a segment's points enter the
// queue at most K per lane and loop step; a lane whose segment has points left keeps it (no
// walk, no move) and goes on at the next step while the other lanes walk their next segments,
// instead of the whole warp looping over the longest segment's points with the other lanes idle.
// The same points in the same order per photon.
#ifndef WD_SAMP_ROUNDS
#define WD_SAMP_ROUNDS 2
#endif
#if WD_SAMP_COMPACT && WD_SAMP_DEFER && !WD_SAMP_SLOTS
#error "WD_SAMP_DEFER needs WD_SAMP_SLOTS"
#endif
#define WD_SAMP_DEFERRED (WD_SAMP_COMPACT && WD_SAMP_DEFER)
// Structural alternatives for issue #32's rate (docs/spline.md "Job queue and fire-and-forget
// squares"; each leaves the tables the same integers; the default since their A/B on an H200,
// 2026-12-02: 3.60 → 5.14·10⁸ photons/s together):
// WD_SAMP_JOBQ (with the deferred queue): the warp's photons come from a per-warp job queue in
// shared memory, WD_SAMP_JOBS photons emitted together by that many lanes (propagate.cu's
// WD_JOBQUEUE) whenever the queue is empty and a lane is idle, their ids taken from a global
// counter (counters[WD_SAMP_COUNTERS], zeroed by the host before each launch: WD_DYNAMIC), so
// an idle lane takes the next photon at once. The profile of the default loop: the walk at 22.4
// of 32 lanes (each lane's fixed share of the launch ends at a different time, the warp runs to
// its slowest lane) and the emission at 1.5 lanes (7.7 % of the instructions).
#ifndef WD_SAMP_JOBQ
#define WD_SAMP_JOBQ (WD_SAMP_DEFERRED || WD_SAMP_STEPWISE || WD_SAMP_SCAN)
#endif
#if WD_SAMP_JOBQ && !WD_SAMP_DEFERRED && !WD_SAMP_STEPWISE && !WD_SAMP_SCAN
#error "WD_SAMP_JOBQ needs the deferred queue (WD_SAMP_COMPACT, WD_SAMP_SLOTS and WD_SAMP_DEFER on), WD_SAMP_STEPWISE or WD_SAMP_SCAN"
#endif
// WD_SAMP_RED: each square (x² in the fixed point, an integer v < 2⁹⁶) is added as fire-and-forget
// 64-bit adds of its three 32-bit digits — v = a + b·2³² + c·2⁶⁴ to three words of the cell —
// instead of add_u128's add that waits for the old value to carry (the profile's largest stall:
// 7.7 % of the samples on that one atomic). Each word gets fewer than 2³² adds of < 2³² in a
// launch (the host checks the launch's runs), so none wraps; after every launch the host's
// sampled_fold adds each cell's a + b·2³² + c·2⁶⁴ to its u128 (two words, add_u128's format) and
// zeroes the digits: the same integers as add_u128's. A v ≥ 2⁹⁶ (a run longer than 2³² m) is
// counted in counters[WD_SAMP_COUNTERS + 1] and refused by the host.
#ifndef WD_SAMP_RED
#define WD_SAMP_RED 1
#endif
// WD_SAMP_ANGC (default 1): the acceptance polynomial's coefficients from the parameter block
// (SampParams::angc, WD_SAMP_ANGC_MAX of them, zero above n_ang) in a loop unrolled to that
// length, instead of a loop over n_ang loads from global memory: per segment ~60 warp
// instructions (address arithmetic, loads, the loop's control; 5-6 % of the kernel's, issue
// #32's profile of 2026-12-02) become WD_SAMP_ANGC_MAX multiply-adds with constant-bank operands.
// The same bits: Horner from the top through the zero coefficients keeps acc = +0 (fma(+0, nz,
// +0) = +0 for every finite nz), so the first nonzero step is acc = ang[n_ang - 1] as before.
#ifndef WD_SAMP_ANGC
#define WD_SAMP_ANGC 1
#endif
// WD_SAMP_NOSQ (measurement only, off; needs the deferred queue): each point's weighted length
// rounded on its own, rint(x·2¹⁶), to its cell's sum, and nothing else — no runs, no squares, no
// spatial squares (N_eff is not formed; `tabulated` counts every photon's end). What the points
// cost without the ordered merge and its closes (docs/spline.md "What the 50 % would cost").
#ifndef WD_SAMP_NOSQ
#define WD_SAMP_NOSQ 0
#endif
// WD_SAMP_ADAPT (the host adds =2 for `--sample-step auto`, the GPU's default; needs the warp
// queue of points, WD_SAMP_COMPACT): the adaptive comb of sampled.rs AdaptiveStep, the points at
// u + k in units of the segments' steps (S.next in those units), each of weight × Δ_seg. 2 (since
// session 37): the directional step, half a bin over the segment's fastest rate in each coordinate
// (AdaptiveStep::segment_step). 1 (session 35's rule, kept for comparisons): Δ_seg =
// clamp(T.adapt_slope·r, T.step, T.adapt_max), r the distance of the segment's nearer end from
// the source. Both are samp_segment_step. 0: the fixed comb of step T.step.
#ifndef WD_SAMP_ADAPT
#define WD_SAMP_ADAPT 0
#endif
#if WD_SAMP_ADAPT && !WD_SAMP_COMPACT
#error "WD_SAMP_ADAPT needs the warp queue of points (WD_SAMP_COMPACT)"
#endif
#if WD_SAMP_ADAPT < 0 || WD_SAMP_ADAPT > 2
#error "WD_SAMP_ADAPT is 0 (the fixed comb), 1 (the distance rule) or 2 (the directional step)"
#endif
// WD_SAMP_REP=R (needs the deferred queue and WD_SAMP_RED; R a power of two, 0: off): the spatial
// cells' variance by batch means instead of the runs' squares. Each point adds its weighted
// length, rounded on its own (rint(x·2¹⁶)), to its cell's sum and to replica r = id mod R of its
// spatial cell (T.rep[r·n_spatial + sp]), so a photon's whole light in a cell is in one replica.
// After every launch sampled_rep_fold adds V = R/(R − 1)·Σ_r (S_r − S/R)² of each spatial cell's
// replicas to its squares (the launch's photons split into R independent parts: an unbiased
// estimate of the variance of the cell's sum, a photon's returns to the cell included, which the
// runs miss) and zeroes them. No runs, no ordered merge, no closes; the cells' squares stay zero
// (the tables do not use them; tabulate::agreement then takes them from the spatial cell's).
// docs/spline.md "Batch means".
#ifndef WD_SAMP_REP
#define WD_SAMP_REP 0
#endif
#if WD_SAMP_REP && (!WD_SAMP_DEFERRED || !WD_SAMP_RED || (WD_SAMP_REP & (WD_SAMP_REP - 1)) || WD_SAMP_NOSQ)
#error "WD_SAMP_REP needs the deferred queue, WD_SAMP_RED, a power of two and no WD_SAMP_NOSQ"
#endif
#if WD_SAMP_NOSQ && !WD_SAMP_DEFERRED
#error "WD_SAMP_NOSQ needs the deferred queue (WD_SAMP_COMPACT, WD_SAMP_SLOTS and WD_SAMP_DEFER on)"
#endif
// WD_SAMP_LEAN_SMEM (default with batch means and the job queue, session 36): the point queue
// without the runs' arrays (cell, sp, close_i, close_v: unused with batch means) and the counters
// per warp instead of per thread (48 bytes a warp; a lane's photon end adds by shared-memory
// atomics, the points by one lane per batch): 21.7 → 12.6 kB of shared memory a block of 128. The
// same counts. What it buys is room: a job queue of 32 photons (below) on 8 blocks a
// multiprocessor without the L1 shrinking (docs/spline.md "Session 36").
#ifndef WD_SAMP_LEAN_SMEM
#define WD_SAMP_LEAN_SMEM (WD_SAMP_REP && WD_SAMP_JOBQ)
#endif
#if WD_SAMP_LEAN_SMEM && !(WD_SAMP_REP && WD_SAMP_JOBQ)
#error "WD_SAMP_LEAN_SMEM needs batch means (WD_SAMP_REP) and the job queue"
#endif
// WD_SAMP_ENDBITS (default with batch means, session 36): a photon's end is the sign bit of its last
// queued point's amount, set when the photon ends, instead of a marker entry in the queue: no
// marker slots (one a photon, 4 % of the entries) and no ballot a step. A photon that ends with
// none of its points left in the queue is counted at once (r.cell ≥ 0: one of its drained points
// fell in the grid); one that queued no point is not tabulated. The same counts as the markers'.
#ifndef WD_SAMP_ENDBITS
#define WD_SAMP_ENDBITS (WD_SAMP_REP != 0)
#endif
#if WD_SAMP_ENDBITS && !WD_SAMP_REP
#error "WD_SAMP_ENDBITS needs batch means (WD_SAMP_REP)"
#endif
// WD_SAMP_JOBS: photons a refill. 32 with the lean shared memory (session 36: the emission at
// every lane of the warp; with the 21.7 kB a block before, a larger job queue pushed the shared
// memory past the 196 KiB carveout and halved the L1: 16 ran 7 % slower than 8), else 8 (session 34:
// with the batch means' light drain, 8 ran 9 % faster than 16 at Δ = 1 m and the same at 2 m; with
// the runs 16 had been 3 % faster).
#ifndef WD_SAMP_JOBS
#define WD_SAMP_JOBS (WD_SAMP_LEAN_SMEM ? 32 : 8)
#endif
#if WD_SAMP_JOBS < 1 || WD_SAMP_JOBS > 32
#error "WD_SAMP_JOBS: 1 to 32 photons a refill"
#endif
// WD_SAMP_AOS (default with batch means since session 38; =0: six arrays): the point queue's
// entries as two vectors a slot, (x, y, z, t) and (w, replica), instead of six arrays: a point
// queued by two shared-memory stores instead of six, looked up after two loads, moved by four
// instead of twelve. The same points, so the same integers. H200, session 38: 1.4 % (2000 m) and
// 2.0 % (2300 m) faster (docs/spline.md "The queue as vectors").
#ifndef WD_SAMP_AOS
#define WD_SAMP_AOS (WD_SAMP_REP != 0)
#endif
#if WD_SAMP_AOS && !WD_SAMP_REP
#error "WD_SAMP_AOS needs batch means (WD_SAMP_REP)"
#endif
// WD_SAMP_SHAPE (the host adds it for the table's grid since session 39: tabulate/gpu.rs
// with_shape): the grid's shape fixed at compile time, 1 spheres (cascades), 2 cylinders (muon
// segments), so that the branches on it (samp_spherical) compile out: H200, 3.4 % faster at
// 2000 m, 1.8 % at 2300 m (session 38). 0, the kernel's own default: from T.spherical. A build
// for the other shape is wrong.
#ifndef WD_SAMP_SHAPE
#define WD_SAMP_SHAPE 0
#endif
// WD_SAMP_PHYSICS (measurement only, off; needs the deferred queue): the deferred loop without
// its points and end markers — the job queue, the walk and the move only (the weight, unused, is
// compiled out), the tables left empty. What the loop costs without the point machinery
// (docs/spline.md "The floor").
#ifndef WD_SAMP_PHYSICS
#define WD_SAMP_PHYSICS 0
#endif
#if WD_SAMP_PHYSICS && !WD_SAMP_DEFERRED
#error "WD_SAMP_PHYSICS needs the deferred queue (WD_SAMP_COMPACT, WD_SAMP_SLOTS and WD_SAMP_DEFER on)"
#endif
#define WD_SAMP_ANGC_MAX 16
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
    unsigned long long* sumsq;          // 2 × cells: (low, high) words of a u128 (WD_SAMP_RED: 3 × cells, digits)
    unsigned long long* spatial_sumsq;  // 2 × spatial cells (WD_SAMP_RED: 3 ×)
    unsigned long long* counters;       // WD_SAMP_COUNTERS, the job counter (WD_SAMP_JOBQ), squares ≥ 2⁹⁶ (WD_SAMP_RED)
    unsigned long long photon_lo, photon_hi;
    float origin[3], axis[3], e1[3], e2[3];
    float ng_over_c, cone, inv_c, margin, mas;
    float step;                         // Δ [m]; ≤ 0: one point per segment
    float lo[4], inv[4];                // per axis (radial, azimuth, polar, delay): first edge, bins/span (0: search)
    int n_radial, n_azimuth, n_polar, n_delay;  // edges
    int spherical, n_ang;
    unsigned int time_cells;
    int equal_steps;                    // every axis of equal steps (inv > 0, no delays or inv[3] > 0): WD_SAMP_LEAN
    float hi[4];                        // per axis: last edge (lo: first edge)
    float angc[WD_SAMP_ANGC_MAX];       // ang's coefficients, zero above n_ang (WD_SAMP_ANGC)
    unsigned long long* rep;            // WD_SAMP_REP: R × n_spatial replica sums, replica-major
    unsigned int n_spatial, rep_pad;
    float adapt_slope, adapt_max;       // WD_SAMP_ADAPT: the adaptive comb (samp_segment_step)
    // WD_SAMP_ADAPT=2: one over half the narrowest radial, axial and delay bin (0: none; axial
    // for spheres), and one over the angular bound's slope (SampParams::set_adaptive).
    float adapt_inv_hr, adapt_inv_hz, adapt_inv_ht, adapt_inv_slope;
};

// Whether the grid is spheres (cascades) or cylinders (WD_SAMP_SHAPE: fixed at compile time).
__device__ __forceinline__ bool samp_spherical(const SampParams& T) {
#if WD_SAMP_SHAPE
    (void)T;
    return WD_SAMP_SHAPE == 1;
#else
    return T.spherical;
#endif
}

// sampled.rs Axis::bin for x within [e0, e_last]: the last edge in the last bin.
// The bin of x on an axis of equal steps (inv = bins / span > 0; x within the axis).
__device__ __forceinline__ int axis_step_bin(int n, float lo, float inv, float x) { return min((int)((x - lo) * inv), n - 2); }

__device__ __forceinline__ int axis_bin_in(const float* e, int n, float lo, float inv, float x) {
    if (inv > 0.0f) return axis_step_bin(n, lo, inv, x);
    int a = 0, b = n;  // partition_point(e <= x)
    while (a < b) {
        int m = (a + b) >> 1;
        if (e[m] <= x) a = m + 1; else b = m;
    }
    return max(min(a, n - 1), 1) - 1;
}

// sampled.rs Axis::bin: -1 outside [e0, e_last] (lo = e0, hi = e_last as floats).
__device__ __forceinline__ int axis_bin(const float* e, int n, float lo, float hi, float inv, float x) {
#if WD_SAMP_EDGES
    if (!(x >= lo && x <= hi)) return -1;
#else
    if (!(x >= e[0] && x <= e[n - 1])) return -1;
#endif
    return axis_bin_in(e, n, lo, inv, x);
}

// WD_SAMP_ATAN (default since its A/B on an H200, 2026-12-03: +3.5 % at Δ = 1 m; issue #32's
// profile: atan2f was the hottest line of the lookup, ~6 % of the kernel's instructions; 0: atan2f): |atan2(b, a)| in degrees from an octant reduction, t = min/max of
// |a|, |b| and atan t = t·P(t²), P of degree 7 fitted by least squares on Chebyshev nodes of
// [0, 1] (relative weights), in degrees so that the octants' offsets 90 and 180 are exact:
// within 2·10⁻⁵ degrees of atan2 in double, as the default (atan2f in float, host twin
// `azimuth_polynomial_is_atan2`), so a point's azimuth bin differs from atan2f's only within
// ~10⁻⁵ degrees of an edge.
#ifndef WD_SAMP_ATAN
#define WD_SAMP_ATAN 1
#endif
// WD_SAMP_LEAN (issue #32's rate; docs/spline.md "Walk and bin in the same step, session 33"): when every
// axis has equal steps, sampled_cell_sp computes all four bins and tests the ranges once (one
// predicate, no return after each axis); the same cells (the same float arithmetic per axis).
// ncu of the lookup: the three per-axis range tests and their early returns were 1.4 of its
// 7.4 warp instructions a point.
#ifndef WD_SAMP_LEAN
#define WD_SAMP_LEAN 1
#endif
__device__ __forceinline__ float samp_azimuth_deg(float b, float a) {
    const float x = fabsf(a), y = fabsf(b);
    const float hi = fmaxf(x, y), lo = fminf(x, y);
    const float t = hi > 0.0f ? __fdividef(lo, hi) : 0.0f, u = t * t;
    float p = -4.743196070e-03f;
    p = p * u + 2.445040457e-02f;
    p = p * u - 5.980099738e-02f;
    p = p * u + 9.939748794e-02f;
    p = p * u - 1.403047442e-01f;
    p = p * u + 1.997213215e-01f;
    p = p * u - 3.333221376e-01f;
    p = p * u + 9.999999404e-01f;
    float r = p * t * 57.29577951308232f;  // atan(lo / hi) in degrees, ∈ [0, 45]
    if (y > x) r = 90.0f - r;              // (the octants' offsets exact in degrees)
    if (a < 0.0f) r = 180.0f - r;
    return r;
}

// sampled.rs Lookup::coordinates' azimuth [deg] of the point (rx, ry, rz) from the source: |atan2| in the
// source's frame (e1, e2), by samp_azimuth_deg or atan2f.
__device__ __forceinline__ float sampled_azimuth(const SampParams& T, float rx, float ry, float rz) {
    float a = rx * T.e1[0] + ry * T.e1[1] + rz * T.e1[2];
    float b = rx * T.e2[0] + ry * T.e2[1] + rz * T.e2[2];
#if WD_SAMP_ATAN
    return samp_azimuth_deg(b, a);
#else
    return fabsf(atan2f(b, a)) * 57.29577951308232f;
#endif
}

// sampled.rs Lookup::coordinates + Lookup::cell: the cell of the point x at time t, or -1; sp
// its spatial cell (the cell / time cells; set only for cells ≥ 0).
__device__ __forceinline__ int sampled_cell_sp(const SampParams& T, V3 x, float t, int& sp) {
    float rx = x.x - T.origin[0], ry = x.y - T.origin[1], rz = x.z - T.origin[2];
    float axial = rx * T.axis[0] + ry * T.axis[1] + rz * T.axis[2];
    float rad, polar, delay;
    if (samp_spherical(T)) {
        rad = sqrtf(rx * rx + ry * ry + rz * rz);
        polar = rad > 0.0f ? fminf(fmaxf(axial / rad, -1.0f), 1.0f) : 1.0f;
        delay = t - T.ng_over_c * rad;
    } else {
        float px = rx - axial * T.axis[0], py = ry - axial * T.axis[1], pz = rz - axial * T.axis[2];
        rad = sqrtf(px * px + py * py + pz * pz);
        polar = axial;
        delay = t - axial * T.inv_c - rad * T.cone;
    }
#if WD_SAMP_LEAN && WD_SAMP_EDGES
    if (T.equal_steps) {
        // Every axis of equal steps (set by the host, uniform over the launch): the same bins by
        // the same float arithmetic as below, the range tests folded into one predicate instead
        // of a return after each axis.
        const float phi = sampled_azimuth(T, rx, ry, rz);
        const bool in = rad >= T.lo[0] && rad <= T.hi[0] && polar >= T.lo[2] && polar <= T.hi[2] && phi >= T.lo[1] && phi <= T.hi[1];
        const int i = axis_step_bin(T.n_radial, T.lo[0], T.inv[0], rad);
        const int j = axis_step_bin(T.n_azimuth, T.lo[1], T.inv[1], phi);
        const int k = axis_step_bin(T.n_polar, T.lo[2], T.inv[2], polar);
        const int spatial = (i * (T.n_azimuth - 1) + j) * (T.n_polar - 1) + k;
        int tc = 0;
        if (T.n_delay > 0) tc = delay < T.lo[3] ? 0 : delay >= T.hi[3] ? T.n_delay : 1 + max(axis_step_bin(T.n_delay, T.lo[3], T.inv[3], delay), 0);
        if (!in) return -1;
        sp = spatial;
        return spatial * (int)T.time_cells + tc;
    }
#endif
    int i = axis_bin(T.radial, T.n_radial, T.lo[0], T.hi[0], T.inv[0], rad);
    if (i < 0) return -1;
    int k = axis_bin(T.polar, T.n_polar, T.lo[2], T.hi[2], T.inv[2], polar);
    if (k < 0) return -1;
    float phi = sampled_azimuth(T, rx, ry, rz);
    int j = axis_bin(T.azimuth, T.n_azimuth, T.lo[1], T.hi[1], T.inv[1], phi);
    if (j < 0) return -1;
    int spatial = (i * (T.n_azimuth - 1) + j) * (T.n_polar - 1) + k;
    int tc = 0;
    if (T.n_delay > 0) {
#if WD_SAMP_EDGES
        // delay ∈ [e0, e_last): within the axis, so its range test is not repeated.
        if (delay < T.lo[3]) tc = 0;
        else if (delay >= T.hi[3]) tc = T.n_delay;
        else tc = 1 + max(axis_bin_in(T.delay, T.n_delay, T.lo[3], T.inv[3], delay), 0);
#else
        if (delay < T.delay[0]) tc = 0;
        else if (delay >= T.delay[T.n_delay - 1]) tc = T.n_delay;
        else tc = 1 + max(axis_bin(T.delay, T.n_delay, T.lo[3], T.hi[3], T.inv[3], delay), 0);
#endif
    }
    sp = spatial;
    return spatial * (int)T.time_cells + tc;
}

__device__ __forceinline__ int sampled_cell(const SampParams& T, V3 x, float t) {
    int sp;
    return sampled_cell_sp(T, x, t, sp);
}

// mod.rs Acceptance::weight, in float.
__device__ __forceinline__ float sampled_weight(const SampParams& T, unsigned int slice, float nz) {
    float acc = 0.0f;
#if WD_SAMP_ANGC
    if (T.n_ang <= WD_SAMP_ANGC_MAX) {  // the same for every thread (a longer polynomial: the loop)
#pragma unroll
        for (int i = WD_SAMP_ANGC_MAX - 1; i >= 0; --i) acc = acc * nz + T.angc[i];
        return T.share[slice] * fminf(fmaxf(acc / T.mas, 0.0f), 1.0f);
    }
#endif
#if WD_SAMP_UNROLL
#pragma unroll 4
#endif
    for (int i = T.n_ang - 1; i >= 0; --i) acc = acc * nz + T.ang[i];
    return T.share[slice] * fminf(fmaxf(acc / T.mas, 0.0f), 1.0f);
}

// add_u128: fixed_point.cuh (assembled before this file).

// Words per cell of the squares (and spatial squares) the kernel adds to: add_u128's (low,
// high) pair, or WD_SAMP_RED's three digits.
#define WD_SAMP_SQ_WORDS (WD_SAMP_RED ? 3 : 2)

// WD_SAMP_RED's digits of an integer-valued v, 0 ≤ v < 2⁹⁶: v = a + b·2³² + c·2⁶⁴, each < 2³². All
// exact in double: ⌊v/2³²⌋ and ⌊v/2⁶⁴⌋ are power-of-two scalings and floors, and v − ⌊v/2³²⌋·2³²
// (v mod 2³²) and ⌊v/2³²⌋ − ⌊v/2⁶⁴⌋·2³² are representable differences. (samp_add_sq's atomics,
// sampled_rep_fold's plain adds.)
__device__ __forceinline__ void samp_digits(double v, double& a, double& b, double& c) {
    double hb = floor(v * (1.0 / 4294967296.0));
    c = floor(v * (1.0 / 18446744073709551616.0));
    b = hb - c * 4294967296.0;
    a = v - hb * 4294967296.0;
}

// A square's integer v (0 ≤ v, integer-valued) to the cell's words at p: add_u128, or with
// WD_SAMP_RED its digits a, b, c (samp_digits) by adds whose results are unused (`red`).
__device__ __forceinline__ void samp_add_sq(const SampParams& T, unsigned long long* p, double v) {
#if WD_SAMP_RED
    if (!(v < 79228162514264337593543950336.0)) {  // 2⁹⁶
        atomicAdd(T.counters + WD_SAMP_COUNTERS + 1, 1ull);
        return;
    }
    double a, b, c;
    samp_digits(v, a, b, c);
    atomicAdd(p, (unsigned long long)a);
    if (b > 0.0) atomicAdd(p + 1, (unsigned long long)b);
    if (c > 0.0) atomicAdd(p + 2, (unsigned long long)c);
#else
    (void)T;
    add_u128(p, v);
#endif
}

// What a run sums: its points' float weighted lengths (one rounding to the fixed point per run,
// as sampled.rs), or with WD_SAMP_QPOINT their integer amounts q = rint(x·2¹⁶).
#if WD_SAMP_QPOINT
typedef unsigned long long SampAmt;
__device__ __forceinline__ SampAmt samp_amount(float x) { return (unsigned long long)rintf(x * 65536.0f); }
#else
typedef float SampAmt;
__device__ __forceinline__ SampAmt samp_amount(float x) { return x; }
#endif

// sampled.rs Sampler: the open runs of a photon.
struct SampRuns {
    int cell, spatial;
    SampAmt x, spatial_x;
};

// Per-thread counters, added to the global ones once at the thread's end: in shared memory
// with WD_SAMP_SHARED_COUNTS (48 bytes per thread), else in registers.
struct SampCounts { unsigned long long tabulated, absorbed, escaped, segments, runs, points; };

// A lane's count v added to counter c: per thread a plain add, per warp (WD_SAMP_LEAN_SMEM) an
// atomic add in shared memory.
__device__ __forceinline__ void samp_count(unsigned long long& c, unsigned long long v) {
#if WD_SAMP_LEAN_SMEM
    if (v) atomicAdd(&c, v);
#else
    c += v;
#endif
}

#if WD_SAMP_QPOINT
// WD_SAMP_QPOINT: a run's integer sum Q (< 2⁴⁸: a run below 2³² m) squared exactly, Q² < 2⁹⁶, to
// the cell's words at p: WD_SAMP_RED's digits (Q² = a + b·2³² + c·2⁶⁴) or add_u128's two words.
__device__ __forceinline__ void samp_add_sq_q(const SampParams& T, unsigned long long* p, unsigned long long q) {
    unsigned long long lo = q * q, hi = __umul64hi(q, q);
#if WD_SAMP_RED
    if (hi >> 32) {
        atomicAdd(T.counters + WD_SAMP_COUNTERS + 1, 1ull);
        return;
    }
    atomicAdd(p, lo & 0xffffffffull);
    if (lo >> 32) atomicAdd(p + 1, lo >> 32);
    if (hi) atomicAdd(p + 2, hi);
#else
    (void)T;
    unsigned long long old = atomicAdd(p, lo);
    if (old + lo < old) hi += 1;
    if (hi) atomicAdd(p + 1, hi);
#endif
}
#endif

// sampled.rs Histogram::record of a closed run: x to the cell's sum, x² to its squares.
__device__ __forceinline__ void close_cell(const SampParams& T, int c, SampAmt x) {
#if WD_SAMP_QPOINT
    atomicAdd(T.sum + c, x);
    samp_add_sq_q(T, T.sumsq + WD_SAMP_SQ_WORDS * (size_t)c, x);
#else
    double xd = (double)x;
    atomicAdd(T.sum + c, (unsigned long long)round(xd * WD_SUM_UNIT));
    samp_add_sq(T, T.sumsq + WD_SAMP_SQ_WORDS * (size_t)c, round(xd * xd * WD_SQ_UNIT));
#endif
}

__device__ __forceinline__ void close_spatial(const SampParams& T, int sp, SampAmt x) {
#if WD_SAMP_QPOINT
    samp_add_sq_q(T, T.spatial_sumsq + WD_SAMP_SQ_WORDS * (size_t)sp, x);
#else
    double xd = (double)x;
    samp_add_sq(T, T.spatial_sumsq + WD_SAMP_SQ_WORDS * (size_t)sp, round(xd * xd * WD_SQ_UNIT));
#endif
}

// The runs one point closes (cell < 0, spatial < 0: none), added by the caller.
struct SampClosed {
    int cell;
    SampAmt x;
    int spatial;
    SampAmt spatial_x;
};

// sampled.rs Sampler::record without the additions: a point of weighted length x in cell c
// (spatial cell sp) extends the open runs or closes them (returned) and opens new ones. The
// float sums follow the photon's points in order, so both kernel paths (below) give the same bits.
__device__ __forceinline__ SampClosed sampled_merge(const SampParams& T, SampRuns& r, int c, int sp, SampAmt x, SampCounts& n) {
    SampClosed o{-1, 0, -1, 0};
    n.points += 1;
    if (c != r.cell) {
        if (r.cell >= 0) { o.cell = r.cell; o.x = r.x; n.runs += 1; }
        r.cell = c;
        r.x = 0;
    }
    r.x += x;
#if !WD_SAMP_NODIV
    sp = c / (int)T.time_cells;
#endif
    if (sp != r.spatial) {
        if (r.spatial >= 0) { o.spatial = r.spatial; o.spatial_x = r.spatial_x; }
        r.spatial = sp;
        r.spatial_x = 0;
    }
    r.spatial_x += x;
    return o;
}

// sampled.rs Sampler::record: a point of weighted length x in cell c, closed runs added at once.
__device__ __forceinline__ void sampled_record(const SampParams& T, SampRuns& r, int c, int sp, float x, SampCounts& n) {
    SampClosed o = sampled_merge(T, r, c, sp, samp_amount(x), n);
    if (o.cell >= 0) close_cell(T, o.cell, o.x);
    if (o.spatial >= 0) close_spatial(T, o.spatial, o.spatial_x);
}

// A point of the segment from p along d at distance s (and its time): one expression for both
// kernel paths, so that both round (and contract) it alike.
__device__ __forceinline__ V3 sampled_at(V3 p, V3 d, float s) {
    return V3{p.x + s * d.x, p.y + s * d.y, p.z + s * d.z};
}
__device__ __forceinline__ float sampled_time(float t, float ocm, float s) {
    return t + s * ocm;
}

// One photon's state between segments: propagate.cu's PState, the sampler's (the photon's random
// bits, the distance from the segment's start to the next point, the segment's index) and the
// open runs.
struct SampState {
    PState st;
    unsigned int bits, k;
    float next;
    SampRuns runs;
};

// mod.rs Tabulate::walk's start: the photon's emission (propagate.cu's start) and the
// sampler's random bits (Philox stream tag 4 of the photon's id).
__device__ __forceinline__ void sampled_emit(const PhotonParams& P, unsigned long long id, PState& st, unsigned int& bits) {
    start(P, id, st);
    WdRng r = wd_rng(P.seed, WD_TAG_TABULATE, id);
    bits = wd_next_u32(r);
}

// Tabulate::photon_sampled's Sampler::new from the photon's bits (sampled_start, and the job
// queue's pop: the same state whichever lane and step take the photon).
__device__ __forceinline__ void sampled_begin(const SampParams& T, unsigned int bits, SampState& S) {
    S.bits = bits;
#if WD_SAMP_ADAPT
    S.next = wd_u32_to_uniform(S.bits);  // the adaptive comb: in units of each segment's step
#else
    S.next = wd_u32_to_uniform(S.bits) * T.step;
#endif
    S.k = 0;
}

// mod.rs Tabulate::walk's start with Tabulate::photon_sampled's Sampler::new.
__device__ __forceinline__ void sampled_start(const PhotonParams& P, const SampParams& T, unsigned long long id, SampState& S) {
    unsigned int bits;
    sampled_emit(P, id, S.st, bits);
    sampled_begin(T, bits, S);
#if !WD_SAMP_DEFERRED
    S.runs = SampRuns{-1, -1, 0, 0};  // (deferred: the end marker's merge resets them)
#endif
}

// The photon's end: its counts added (here), its open runs closed (sampled_end; deferred: by
// its end marker's merge in sampled_drain).
__device__ __forceinline__ void sampled_end_counts(const SampState& S, SampCounts& n, bool absorbed, bool escaped) {
    samp_count(n.segments, S.k);
    samp_count(n.absorbed, absorbed);
    samp_count(n.escaped, escaped);
}

__device__ __forceinline__ void sampled_end(const SampParams& T, SampState& S, SampCounts& n, bool absorbed, bool escaped) {
    if (S.runs.cell >= 0) {
        close_cell(T, S.runs.cell, S.runs.x);
        close_spatial(T, S.runs.spatial, S.runs.spatial_x);
        n.runs += 1;
        n.tabulated += 1;
    }
    sampled_end_counts(S, n, absorbed, escaped);
}

// sampled_move's end of the photon: the counts and, unless deferred, the runs.
__device__ __forceinline__ void sampled_end_move(const SampParams& T, SampState& S, SampCounts& n, bool absorbed, bool escaped) {
#if WD_SAMP_DEFERRED
    sampled_end_counts(S, n, absorbed, escaped);
#else
    sampled_end(T, S, n, absorbed, escaped);
#endif
}

// One segment of the photon (the fast build's `step` without modules or hole ice): its layer
// walk and the weight of its points.
struct SampSeg {
    Segment seg;
    float zp, w;
};

__device__ __forceinline__ void sampled_walk(const PhotonParams& P, const SampParams& T, const SampState& S, SampSeg& g) {
    const PState& st = S.st;
    g.zp = st.pos.z - zshift_fast(P, st.pos.x, st.pos.y, st.pos.z);
    float nr = absorption_factor(P, st.dir);
    g.seg = layer_walk(P, st.slice, g.zp, st.dir.z, st.sca_depth, st.tot, nr);
    g.w = g.seg.length > 0.0f ? sampled_weight(T, st.slice, st.dir.z) : 0.0f;
}

// Tabulate::photon_sampled's points of a segment, one lane at a time (WD_SAMP_COMPACT=0).
__device__ __forceinline__ void sampled_points(const SampParams& T, SampState& S, const SampSeg& g, SampCounts& n) {
    const PState& st = S.st;
    float len = g.seg.length;
    if (len > 0.0f) {
        if (!(T.step > 0.0f)) {
            float s = wd_u32_to_uniform(S.bits + S.k * WD_GOLDEN) * len;
            int sp;
            int c = sampled_cell_sp(T, sampled_at(st.pos, st.dir, s), sampled_time(st.time, st.ocm, s), sp);
            if (c >= 0) sampled_record(T, S.runs, c, sp, g.w * len, n);
        } else {
            float x = g.w * T.step;
            for (; S.next < len; S.next += T.step) {
                int sp;
                int c = sampled_cell_sp(T, sampled_at(st.pos, st.dir, S.next), sampled_time(st.time, st.ocm, S.next), sp);
                if (c >= 0) sampled_record(T, S.runs, c, sp, x, n);
            }
            S.next -= len;
        }
    }
}

// The rest of mod.rs Tabulate::walk's segment after its points: absorption, escape, the move,
// birefringence and the scattering; false when the photon ends (then its runs are closed).
__device__ __forceinline__ bool sampled_move(const PhotonParams& P, const SampParams& T, SampState& S, const SampSeg& g, SampCounts& n) {
    PState& st = S.st;
    float len = g.seg.length;
    S.k += 1;
    st.tot = g.seg.tot;
    if (st.tot <= 0.0f) { sampled_end_move(T, S, n, true, false); return false; }
    st.pos = V3{st.pos.x + len * st.dir.x, st.pos.y + len * st.dir.y, st.pos.z + len * st.dir.z};
    st.time += len * st.ocm;
    {
        // bins.rs Binning::escaped, in float.
        float rx = st.pos.x - T.origin[0], ry = st.pos.y - T.origin[1], rz = st.pos.z - T.origin[2];
#if WD_SAMP_EDGES
        float r_hi = T.hi[0], p_lo = T.lo[2], p_hi = T.hi[2];
#else
        float r_hi = T.radial[T.n_radial - 1], p_lo = T.polar[0], p_hi = T.polar[T.n_polar - 1];
#endif
        float rmax = r_hi + T.margin;
        bool out;
        if (samp_spherical(T)) {
            out = rx * rx + ry * ry + rz * rz > rmax * rmax;
        } else {
            float u = rx * T.axis[0] + ry * T.axis[1] + rz * T.axis[2];
            float px = rx - u * T.axis[0], py = ry - u * T.axis[1], pz = rz - u * T.axis[2];
            out = px * px + py * py + pz * pz > rmax * rmax || u < p_lo - T.margin || u > p_hi + T.margin;
        }
        if (out) { sampled_end_move(T, S, n, false, true); return false; }
    }
#ifdef WD_BFR
    if (P.has_bfr && len > 0.0f) {
        // propagate.cu step: one whole draw per segment, the deflection and the end-point shift.
        float ra, rb;
#ifdef WD_WALK_BFR
        ra = g.seg.ra; rb = g.seg.rb;
#else
        bfr_path(P, g.zp, st.dir.z, len, ra, rb);
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
    if (S.k >= WD_MAX_SEGMENTS) { sampled_end_move(T, S, n, false, false); return false; }
    return true;
}

// One segment of mod.rs Tabulate::walk with Tabulate::photon_sampled's points, one lane at a
// time; false when the photon ends.
__device__ __forceinline__ bool sampled_step(const PhotonParams& P, const SampParams& T, SampState& S, SampCounts& n) {
    SampSeg g;
    sampled_walk(P, T, S, g);
    sampled_points(T, S, g, n);
    return sampled_move(P, T, S, g, n);
}

// Warp compaction of the points (issue #32; docs/spline.md "Measured GPU rate": 8.8 of 32 lanes
// were active, the lanes of a warp having different numbers of points per segment). Once per
// segment the whole warp bins its points together: in rounds, every lane with a point left puts
// its next one (position and time) into the warp's queue in shared memory (slot = the queue's
// length + the number of lanes below with a point, __ballot_sync/__popc); as soon as the queue
// holds a warp's width of points, all lanes look up one point's cell each; then each lane merges
// its own points' cells into its photon's runs in the photon's order (float sums, the same bits
// as one lane at a time) and the runs closed are added by all lanes, one close each. The queue
// is emptied at the segment's end. Integer atomics: the sums do not depend on which lane adds
// them, so the tables are the same integers as WD_SAMP_COMPACT=0's for the same photons.
// Default on (top of the file); WD_SAMP_COMPACT=0 for the lane-at-a-time path.
#if WD_SAMP_COMPACT
// Up to 2·32 − 1 points: fewer than a warp's width left from the last round plus one per lane.
#define WD_SAMP_QUEUE 64
struct SampQueue {
#if WD_SAMP_AOS
    float4 p[WD_SAMP_QUEUE];   // the point (x, y, z) and its time
    float2 wr[WD_SAMP_QUEUE];  // its weighted length (as w below) and replica (as rp below, the int's bits)
#else
    float x[WD_SAMP_QUEUE], y[WD_SAMP_QUEUE], z[WD_SAMP_QUEUE], t[WD_SAMP_QUEUE];
#endif
#if WD_SAMP_DEFER && !WD_SAMP_AOS
    float w[WD_SAMP_QUEUE];  // the point's weighted length; < 0: its photon's end marker (WD_SAMP_ENDBITS: its last point)
#if WD_SAMP_REP
    int rp[WD_SAMP_QUEUE];  // the point's replica (its photon's id mod WD_SAMP_REP)
#endif
#endif
#if WD_SAMP_DEFER
    // Between the kernel loop's queue steps (not in registers across the propagation): per lane
    // its entries among the slots and the queue's length (the same on every lane).
    unsigned long long mine[32];
    int queued[32];
    SampSeg seg[32];  // WD_SAMP_ROUNDS: the segment of a lane with points left
#if WD_SAMP_ENDBITS
    int fresh[32];  // per lane: its photon has queued a point
#endif
#endif
#if !WD_SAMP_LEAN_SMEM
    int cell[32], sp[32];
    int n_cell, n_spatial;
    // WD_SAMP_SLOTS: per slot j the cell run its point closed (close_i[j], close_v[j]) and the
    // spatial run (close_i[32 + j], close_v[32 + j]), -1 for none; then the same arrays hold the
    // closes packed (a cell c as c, a spatial cell s as ~s). Else the closes appended: cells
    // close_i[0..n_cell), spatial cells close_i[32..32 + n_spatial).
    int close_i[64];
    float close_v[64];
#endif
};

// The queue's entries whichever the layout (WD_SAMP_AOS): slot i's point and time, its weighted
// length (a reference: the end flag is set in place) and replica; a point queued. (sampled_batch
// moves the entries left after a batch itself, by layout.)
__device__ __forceinline__ V3 samp_q_at(const SampQueue& q, int i, float& t) {
#if WD_SAMP_AOS
    const float4 v = q.p[i];
    t = v.w;
    return V3{v.x, v.y, v.z};
#else
    t = q.t[i];
    return V3{q.x[i], q.y[i], q.z[i]};
#endif
}
#if WD_SAMP_DEFER
__device__ __forceinline__ float& samp_q_w(SampQueue& q, int i) {
#if WD_SAMP_AOS
    return q.wr[i].x;
#else
    return q.w[i];
#endif
}
#endif
#if WD_SAMP_REP
__device__ __forceinline__ int samp_q_rp(const SampQueue& q, int i) {
#if WD_SAMP_AOS
    return __float_as_int(q.wr[i].y);
#else
    return q.rp[i];
#endif
}
#endif
// Slot i: the point at, time t, weighted length w and replica rp (those two with WD_SAMP_DEFER and
// WD_SAMP_REP).
__device__ __forceinline__ void samp_q_put(SampQueue& q, int i, V3 at, float t, float w, int rp) {
#if WD_SAMP_AOS
    q.p[i] = make_float4(at.x, at.y, at.z, t);
    q.wr[i] = make_float2(w, __int_as_float(rp));
#else
    q.x[i] = at.x;
    q.y[i] = at.y;
    q.z[i] = at.z;
    q.t[i] = t;
#if WD_SAMP_DEFER
    q.w[i] = w;
#endif
#if WD_SAMP_REP
    q.rp[i] = rp;
#endif
    (void)w;
    (void)rp;
#endif
}

// One batch of the queue's first `count` points (count ≤ width): the cells by all lanes, the merge by each
// point's lane (`mine`: its points among the batch's slots, in the photon's order; x its points'
// weighted length), the closed runs added by all lanes.
__device__ __forceinline__ void sampled_drain(const SampParams& T, SampQueue& q, unsigned full, int lane, int count, unsigned mine, float x, SampRuns& r, SampCounts& n) {
    __syncwarp(full);
#if WD_SAMP_SLOTS
    int cl = -1, sl = -1;
#if WD_SAMP_ENDBITS
    // The end flag is the amount's sign; the point is a point all the same.
    bool mark = lane < count && signbit(samp_q_w(q, lane));
    const bool look = lane < count;
#elif WD_SAMP_DEFER
    bool mark = lane < count && samp_q_w(q, lane) < 0.0f;
    const bool look = lane < count && !mark;
#else
    const bool look = lane < count;
#endif
    if (look) {
        float qt;
        const V3 qx = samp_q_at(q, lane, qt);
        cl = sampled_cell_sp(T, qx, qt, sl);
    }
#if WD_SAMP_NOSQ
    if (cl >= 0) atomicAdd(T.sum + cl, (unsigned long long)rintf(samp_q_w(q, lane) * (float)WD_SUM_UNIT));
    {
        unsigned in = __ballot_sync(full, cl >= 0), marks = __ballot_sync(full, mark);
        n.points += __popc(mine & in);
        n.tabulated += __popc(mine & marks);
    }
    __syncwarp(full);
    return;
#endif
#if WD_SAMP_REP
    // Batch means (WD_SAMP_REP): the point to its cell's sum and its replica, by its lookup lane.
    if (cl >= 0) {
#if WD_SAMP_ENDBITS
        unsigned long long a = (unsigned long long)rintf(fabsf(samp_q_w(q, lane)) * (float)WD_SUM_UNIT);
#else
        unsigned long long a = (unsigned long long)rintf(samp_q_w(q, lane) * (float)WD_SUM_UNIT);
#endif
        atomicAdd(T.sum + cl, a);
        atomicAdd(T.rep + (size_t)samp_q_rp(q, lane) * T.n_spatial + sl, a);
    }
    {
        // sampled_end's count: a photon is tabulated when one of its points fell in the grid.
        // Per lane its batch slots in the photon's order: the points inside (hits) and the end
        // markers (ends; WD_SAMP_ENDBITS: the photons' last points); r.cell ≥ 0 says "a point
        // inside so far" across batches (no runs here).
        const unsigned in = __ballot_sync(full, cl >= 0);
        unsigned hits = mine & in, ends = mine & __ballot_sync(full, mark);
#if WD_SAMP_LEAN_SMEM
        if (lane == 0) n.points += __popc(in);  // the warp's counters: the batch's points at once
#else
        n.points += __popc(hits);
#endif
        while (ends) {
#if WD_SAMP_ENDBITS
            const unsigned low = ends & (0u - ends), upto = low | (low - 1u);  // up to the photon's last point
#else
            const unsigned upto = (ends & (0u - ends)) - 1u;  // the slots below the next end marker
#endif
            if (r.cell >= 0 || (hits & upto)) samp_count(n.tabulated, 1);
            r.cell = -1;
            hits &= ~upto;
            ends &= ends - 1u;
        }
        if (hits) r.cell = 0;
    }
    __syncwarp(full);
    return;
#endif
#if !WD_SAMP_LEAN_SMEM  // (the runs' merge and closes: batch means have none)
    q.cell[lane] = cl;
    q.sp[lane] = sl;
    q.close_i[lane] = -1;
    q.close_i[32 + lane] = -1;
    unsigned inside = __ballot_sync(full, cl >= 0);
    n.points += __popc(mine & inside);
#if WD_SAMP_DEFER
    mine &= inside | __ballot_sync(full, mark);  // the points outside the grid add nothing
    unsigned ended = 0;
#else
    mine &= inside;  // the points outside the grid add nothing
#endif
    __syncwarp(full);
    unsigned runs = 0;
    while (mine) {
        // sampled_merge, the closes into the point's slot.
        int j = __ffs(mine) - 1;
        mine &= mine - 1;
#if WD_SAMP_DEFER
        x = samp_q_w(q, j);
        if (x < 0.0f) {
            // The photon's end marker: sampled_end's closes, the runs reset for the next photon.
            if (r.cell >= 0) {
                q.close_i[j] = r.cell;
                q.close_v[j] = r.x;
                q.close_i[32 + j] = r.spatial;
                q.close_v[32 + j] = r.spatial_x;
                runs += 1;
                ended += 1;
            }
            r = SampRuns{-1, -1, 0, 0};
            continue;
        }
#endif
        int c = q.cell[j];
        if (c != r.cell) {
            if (r.cell >= 0) { q.close_i[j] = r.cell; q.close_v[j] = r.x; runs += 1; }
            r.cell = c;
            r.x = 0.0f;
        }
        r.x += x;
#if WD_SAMP_NODIV
        int sp = q.sp[j];
#else
        int sp = c / (int)T.time_cells;
#endif
        if (sp != r.spatial) {
            if (r.spatial >= 0) { q.close_i[32 + j] = r.spatial; q.close_v[32 + j] = r.spatial_x; }
            r.spatial = sp;
            r.spatial_x = 0.0f;
        }
        r.spatial_x += x;
    }
    n.runs += runs;
#if WD_SAMP_DEFER
    n.tabulated += ended;
#endif
    __syncwarp(full);
    // Pack the closes: cells first, then spatial cells; all lanes add them, a warp's width at a time.
    int ci = -1, si = -1;
    float cv = 0.0f, sv = 0.0f;
    if (lane < count) { ci = q.close_i[lane]; cv = q.close_v[lane]; si = q.close_i[32 + lane]; sv = q.close_v[32 + lane]; }
    unsigned bc = __ballot_sync(full, ci >= 0), bs = __ballot_sync(full, si >= 0);
    unsigned below = (1u << lane) - 1u;
    int nc = __popc(bc), total = nc + __popc(bs);
    __syncwarp(full);
    if (ci >= 0) { int k = __popc(bc & below); q.close_i[k] = ci; q.close_v[k] = cv; }
    if (si >= 0) { int k = nc + __popc(bs & below); q.close_i[k] = ~si; q.close_v[k] = sv; }
    __syncwarp(full);
    for (int b = 0, w = __popc(full); b < total; b += w) {
        if (b + lane < total) {
            int i = q.close_i[b + lane];
            double xd = (double)q.close_v[b + lane];
            // close_cell / close_spatial
            bool cell = i >= 0;
            int k = cell ? i : ~i;
            if (cell) atomicAdd(T.sum + k, (unsigned long long)round(xd * WD_SUM_UNIT));
            samp_add_sq(T, (cell ? T.sumsq : T.spatial_sumsq) + WD_SAMP_SQ_WORDS * (size_t)k, round(xd * xd * WD_SQ_UNIT));
        }
    }
    __syncwarp(full);
#endif
#else
    if (lane < count) {
        float qt;
        const V3 qx = samp_q_at(q, lane, qt);
        q.cell[lane] = sampled_cell_sp(T, qx, qt, q.sp[lane]);
    }
    if (lane == 0) { q.n_cell = 0; q.n_spatial = 0; }
    __syncwarp(full);
    while (mine) {
        int j = __ffs(mine) - 1;
        mine &= mine - 1;
        int c = q.cell[j];
        if (c < 0) continue;
        SampClosed o = sampled_merge(T, r, c, q.sp[j], x, n);
        if (o.cell >= 0) {
            int k = atomicAdd(&q.n_cell, 1);
            q.close_i[k] = o.cell;
            q.close_v[k] = o.x;
        }
        if (o.spatial >= 0) {
            int k = atomicAdd(&q.n_spatial, 1);
            q.close_i[32 + k] = o.spatial;
            q.close_v[32 + k] = o.spatial_x;
        }
    }
    __syncwarp(full);
    if (lane < q.n_cell) close_cell(T, q.close_i[lane], q.close_v[lane]);
    if (lane < q.n_spatial) close_spatial(T, q.close_i[32 + lane], q.close_v[32 + lane]);
    __syncwarp(full);
#endif
}

// The queue's first `width` entries (a batch) drained, the rest moved to the front (slots ≥
// width to slots < width).
__device__ __forceinline__ void sampled_batch(const SampParams& T, SampQueue& q, unsigned full, int width, int lane, float x, SampRuns& r, SampCounts& n, unsigned long long& mine, int& queued) {
    unsigned m = width == 32 ? (unsigned)mine : (unsigned)mine & ((1u << width) - 1u);
    sampled_drain(T, q, full, lane, width, m, x, r, n);
    int left = queued - width;
#if WD_SAMP_AOS
    float4 pp = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float2 pw = make_float2(0.0f, 0.0f);
    if (lane < left) { pp = q.p[lane + width]; pw = q.wr[lane + width]; }
    if (lane < left) { q.p[lane] = pp; q.wr[lane] = pw; }
#else
    float px = 0.0f, py = 0.0f, pz = 0.0f, pt = 0.0f;
    if (lane < left) { px = q.x[lane + width]; py = q.y[lane + width]; pz = q.z[lane + width]; pt = q.t[lane + width]; }
#if WD_SAMP_DEFER
    float pw = 0.0f;
    if (lane < left) pw = q.w[lane + width];
#endif
#if WD_SAMP_REP
    int pr = 0;
    if (lane < left) pr = q.rp[lane + width];
#endif
    if (lane < left) { q.x[lane] = px; q.y[lane] = py; q.z[lane] = pz; q.t[lane] = pt; }
#if WD_SAMP_DEFER
    if (lane < left) q.w[lane] = pw;
#endif
#if WD_SAMP_REP
    if (lane < left) q.rp[lane] = pr;
#endif
#endif
    __syncwarp(full);
    mine >>= width;
    queued = left;
}

#if WD_SAMP_ADAPT == 2
// sampled.rs AdaptiveStep::segment_step for the segment from x along the unit vector d, len long,
// of a photon whose time grows by ocm a metre. p the start from the source (cylinders: across the
// axis, d too, da the axial part). Each coordinate's bound is half its bin over its fastest rate
// on the segment; here as rates a metre in half bins (T.adapt_inv_*: the inverse half bins, 0 for
// none), the step one over the fastest: two rsqrt and one reciprocal instead of seven divisions.
// Along the line dr/ds = cos α grows from c0 (start) to c1 (end): the radial rate
// max(|c0|, |c1|)/½w_r; the delay t − r·n_g/c (cylinders: t − z/c − ρ·cone) changes at rate
// − kr·cos α (kr = n_g/c, cylinders: cone), largest at an end; cylinders |da|/½w_z; the direction
// from the source turns at b/r² at most (b² = |p|²|d|² − (p·d)², r_min the segment's closest
// distance): b/(r_min²·slope), 1/r_min² from the ends' rsqrt when the closest point is an end,
// else |d|²/b². A segment on a line through the source (b = 0) turns only if it passes the source
// itself (r_min = 0: the smallest step). The step clamped to [Δ, 2·Δ_max].
__device__ __forceinline__ float samp_segment_step(const SampParams& T, V3 x, V3 d, float len, float ocm) {
    float px = x.x - T.origin[0], py = x.y - T.origin[1], pz = x.z - T.origin[2];
    float da = 0.0f, rate = ocm, kr = T.ng_over_c;
    if (!samp_spherical(T)) {
        const float up = px * T.axis[0] + py * T.axis[1] + pz * T.axis[2];
        da = d.x * T.axis[0] + d.y * T.axis[1] + d.z * T.axis[2];
        px -= up * T.axis[0];
        py -= up * T.axis[1];
        pz -= up * T.axis[2];
        d = V3{d.x - da * T.axis[0], d.y - da * T.axis[1], d.z - da * T.axis[2]};
        rate = ocm - da * T.inv_c;
        kr = T.cone;
    }
    const float pp = px * px + py * py + pz * pz, pd = px * d.x + py * d.y + pz * d.z, dd = d.x * d.x + d.y * d.y + d.z * d.z;
    // The end from its coordinates (not pp + len·(2pd + len·dd): that cancels near the source).
    const float ex = px + len * d.x, ey = py + len * d.y, ez = pz + len * d.z;
    const float ee = ex * ex + ey * ey + ez * ez, ed = ex * d.x + ey * d.y + ez * d.z;
    const float ip = rsqrtf(pp), ie = rsqrtf(ee);  // 1/r at the ends (∞ at the source)
    const float c0 = pp > 0.0f ? pd * ip : 1.0f, c1 = ee > 0.0f ? ed * ie : 1.0f;
    const float radial = fmaxf(fabsf(c0), fabsf(c1)) * T.adapt_inv_hr;
    const float delay = fmaxf(fabsf(rate - kr * c0), fabsf(rate - kr * c1)) * T.adapt_inv_ht;
    const float axial = fabsf(da) * T.adapt_inv_hz;
    const float b2 = fmaxf(pp * dd - pd * pd, 0.0f), ib = rsqrtf(b2);
    // 1/r_min²: the start when the segment leads away (p·d ≥ 0), the end when it stops short of
    // the closest point (−p·d ≥ len·|d|²), else the closest point's |d|²/b².
    const float inv_rmin2 = pd >= 0.0f ? ip * ip : (-pd >= len * dd ? ie * ie : dd * ib * ib);
    const float inf = __int_as_float(0x7f800000);
    const float angular = b2 > 0.0f ? b2 * ib * inv_rmin2 * T.adapt_inv_slope : (inv_rmin2 < inf ? 0.0f : inf);
    const float fastest = fmaxf(fmaxf(radial, delay), fmaxf(axial, angular));
    return fminf(fmaxf(1.0f / fastest, T.step), 2.0f * T.adapt_max);
}
#else
// WD_SAMP_ADAPT=1, session 35's rule (a comparison build; no longer on the CPU): the step of the
// segment from p along d of length len, clamp(slope·r, Δ, max) with r the distance of its nearer
// end from the source (the vertex; cylinders: the axis), as Frame::distance.
__device__ __forceinline__ float samp_segment_step(const SampParams& T, V3 p, V3 d, float len, float) {
    float ax = p.x - T.origin[0], ay = p.y - T.origin[1], az = p.z - T.origin[2];
    float bx = ax + len * d.x, by = ay + len * d.y, bz = az + len * d.z;
    float ra = ax * ax + ay * ay + az * az, rb = bx * bx + by * by + bz * bz;
    if (!samp_spherical(T)) {
        float ua = ax * T.axis[0] + ay * T.axis[1] + az * T.axis[2];
        float ub = bx * T.axis[0] + by * T.axis[1] + bz * T.axis[2];
        ra -= ua * ua;
        rb -= ub * ub;
    }
    return fminf(fmaxf(T.adapt_slope * sqrtf(fmaxf(fminf(ra, rb), 0.0f)), T.step), T.adapt_max);
}
#endif

// A segment's points into the warp's queue (every lane of `full` calls it, `width` lanes), a
// batch drained whenever the queue holds a warp's width: `mine` this lane's entries among the
// queue's slots, `queued` the queue's length (the same on every lane). A lane whose photon ended
// or whose segment is empty (has false) adds no points. At most `rounds` points per lane (0: all);
// `left`: this lane's segment has points left (then S.next is the next one's distance from the
// segment's start, else from the next segment's). Returns the points' weighted length.
__device__ __forceinline__ float sampled_enqueue(const SampParams& T, SampQueue& q, unsigned full, int width, int lane, bool has, SampState& S, const SampSeg& g, SampCounts& n, unsigned long long& mine, int& queued, int rounds, bool& left) {
    const PState& st = S.st;
    float len = g.seg.length;
    bool step = T.step > 0.0f;
    has = has && len > 0.0f;
    float s = 0.0f, x = 0.0f;
#if WD_SAMP_ADAPT
    // The adaptive comb (sampled.rs AdaptiveStep): the segment's own step, S.next in its units.
    float ds = T.step;
    if (has) {
        if (step) ds = samp_segment_step(T, st.pos, st.dir, len, st.ocm);
        s = step ? S.next * ds : wd_u32_to_uniform(S.bits + S.k * WD_GOLDEN) * len;
        x = step ? g.w * ds : g.w * len;
    }
#else
    const float ds = T.step;
    if (has) {
        s = step ? S.next : wd_u32_to_uniform(S.bits + S.k * WD_GOLDEN) * len;
        x = step ? g.w * T.step : g.w * len;
    }
#endif
    bool more = has && (!step || s < len);
#if WD_SAMP_ENDBITS
    if (more) q.fresh[lane] = 1;  // the photon queues a point (below, in the first round)
#endif
    unsigned below = (1u << lane) - 1u;
    for (int round = 0; rounds == 0 || round < rounds; ++round) {
        unsigned b = __ballot_sync(full, more);
        if (b == 0u) break;
        if (more) {
            int slot = queued + __popc(b & below);
#if WD_SAMP_REP
            const int rp = (int)(st.id & (unsigned long long)(WD_SAMP_REP - 1));
#else
            const int rp = 0;
#endif
            samp_q_put(q, slot, sampled_at(st.pos, st.dir, s), sampled_time(st.time, st.ocm, s), x, rp);
            mine |= 1ull << slot;
            if (step) {
                s += ds;
                more = s < len;
            } else {
                more = false;
            }
        }
        queued += __popc(b);
        if (queued >= width) sampled_batch(T, q, full, width, lane, x, S.runs, n, mine, queued);
    }
    left = more;
#if WD_SAMP_ADAPT
    if (has && step) S.next = (more ? s : s - len) / ds;
#else
    if (has && step) S.next = more ? s : s - len;
#endif
    return x;
}

// sampled_points for the whole warp, the queue emptied at the segment's end.
__device__ __forceinline__ void sampled_points_warp(const SampParams& T, SampQueue& q, unsigned full, int width, int lane, bool has, SampState& S, const SampSeg& g, SampCounts& n) {
    unsigned long long mine = 0;
    int queued = 0;
    bool left;
    float x = sampled_enqueue(T, q, full, width, lane, has, S, g, n, mine, queued, 0, left);
    if (queued > 0) sampled_drain(T, q, full, lane, queued, (unsigned)mine, x, S.runs, n);
}

#if WD_SAMP_DEFER
// WD_SAMP_DEFER: the end markers of the lanes whose photon ended (`ending`; its counts added by
// sampled_end_counts) into the queue after their points, a batch drained if the queue is full.
__device__ __forceinline__ void sampled_mark(const SampParams& T, SampQueue& q, unsigned full, int width, int lane, bool ending, SampRuns& r, SampCounts& n, unsigned long long& mine, int& queued) {
    unsigned b = __ballot_sync(full, ending);
    if (b == 0u) return;
    if (ending) {
        int slot = queued + __popc(b & ((1u << lane) - 1u));
        samp_q_w(q, slot) = -1.0f;
        mine |= 1ull << slot;
    }
    queued += __popc(b);
    if (queued >= width) sampled_batch(T, q, full, width, lane, 0.0f, r, n, mine, queued);
}
#endif
#endif

// WD_SAMP_JOBQ: a warp's job queue (shared memory): photons emitted together, popped by idle lanes.
// Its turn (also sampled_split.cu's, so outside the switches):
// A turn of a warp's job queue (every lane of `full` calls it): when a lane is idle and the queue
// is empty, the warp takes min(WD_SAMP_JOBS, width) jobs lo + counter… below hi (counter: the
// launch's or round's, zeroed by the host) and that many lanes call emit(job, slot) to fill the
// queue's slots; each idle lane then pops the next slot in lane order (pop(slot), before the
// warp's last sync) and is alive. jq, warp-uniform: the queue's jobs (bits 0-7), its first
// (8-15), jobs left (16). Returns (warp-uniform) whether the warp is done: every lane was idle
// and no job is left to pop (then no ids are left either: the refill found none), so no lane is
// alive after the turn, the queue is empty and no ids are left — from the turn's own ballot, not
// another vote. Shared by tabulate_sampled's loops (sampled_take) and sampled_paths.
template <class Emit, class Pop>
__device__ __forceinline__ bool samp_jobq_turn(unsigned full, int width, int lane, bool& alive, unsigned long long* counter, const unsigned long long& lo, const unsigned long long& hi, unsigned int& jq, Emit emit, Pop pop) {
    unsigned idle = __ballot_sync(full, !alive);
    if (!idle) return false;
    int jn = jq & 0xff, jhead = (jq >> 8) & 0xff;
    if (jn == 0 && (jq >> 16)) {
        int cap = min(WD_SAMP_JOBS, width);
        unsigned long long base = 0;
        if (lane == 0) base = atomicAdd(counter, (unsigned long long)cap);
        base = __shfl_sync(full, base, 0);
        unsigned long long first = lo + base;
        if (first < hi) {
            unsigned long long left = hi - first;
            jn = left < (unsigned long long)cap ? (int)left : cap;
            jhead = 0;
            if (lane < jn) emit(first + (unsigned long long)lane, lane);
        } else {
            jq = 0u;
        }
        __syncwarp(full);
    }
    int rank = __popc(idle & ((1u << lane) - 1u));
    if (!alive && rank < jn) {
        pop(jhead + rank);
        alive = true;
    }
    int taken = min(__popc(idle), jn);
    jq = (jq & (1u << 16)) | ((unsigned)(jhead + taken) << 8) | (unsigned)(jn - taken);
    __syncwarp(full);
    return idle == full && jn == 0;
}

#if WD_SAMP_COMPACT || WD_SAMP_STEPWISE || WD_SAMP_SCAN
struct SampJobs {
    PState st[WD_SAMP_JOBS];
    unsigned int bits[WD_SAMP_JOBS];
};

#if WD_SAMP_JOBQ
// The job queue's emission, out of line: inlined, its temporaries compete with the live photon
// states of the other lanes for the 64 registers (ptxas, sm_90: 40–52 bytes of spills against 36
// out of line, with the queue's counts packed into one register).
__device__ __noinline__ void sampled_emit_jobs(const PhotonParams& P, unsigned long long id, SampJobs* J, int lane) {
    sampled_emit(P, id, J->st[lane], J->bits[lane]);
}

// tabulate_sampled's turn of the job queue: photon ids from counters[WD_SAMP_COUNTERS], emitted
// into J; the same photon state whichever lane and step take it. True when the warp is done (no
// lane alive, the job queue empty and no ids left: samp_jobq_turn).
__device__ __forceinline__ bool sampled_take(const PhotonParams& P, const SampParams& T, SampJobs* J, unsigned full, int width, int lane, bool& alive, SampState& S, unsigned int& jq) {
    return samp_jobq_turn(
        full, width, lane, alive, T.counters + WD_SAMP_COUNTERS, T.photon_lo, T.photon_hi, jq,
        [&](unsigned long long id, int e) { sampled_emit_jobs(P, id, J, e); },
        [&](int e) {
            S.st = J->st[e];
            sampled_begin(T, J->bits[e], S);
#if !WD_SAMP_DEFERRED
            S.runs = SampRuns{-1, -1, 0, 0};  // (deferred: the end marker's merge resets them)
#endif
        });
}
#endif

#if WD_SAMP_STEPWISE || WD_SAMP_SCAN
// A step's photons for the idle lanes (every lane of `full` calls it): the job queue
// (WD_SAMP_JOBQ: sampled_take, jq its state, 1 << 16 at the start) or each lane's own ids next,
// next + stride, … below photon_hi. True when the warp is done.
__device__ __forceinline__ bool sampled_supply(const PhotonParams& P, const SampParams& T, SampJobs* J, unsigned full, int width, int lane, bool& alive, SampState& S, unsigned int& jq, unsigned long long& next, unsigned long long stride) {
#if WD_SAMP_JOBQ
    (void)next;
    (void)stride;
    return sampled_take(P, T, J, full, width, lane, alive, S, jq);
#else
    (void)J;
    (void)width;
    (void)lane;
    (void)jq;
    if (!alive && next < T.photon_hi) {
        sampled_start(P, T, next, S);
        next += stride;
        alive = true;
    }
    return !__any_sync(full, alive);
#endif
}
#endif

#if WD_SAMP_DEFERRED
// The kernel's loop for one warp with the deferred queue (every lane of `full` calls it; J: the
// warp's job queue with WD_SAMP_JOBQ, else unused): one segment per lane and step, a segment
// with points left after WD_SAMP_ROUNDS kept for the next step, a photon's end a marker in the
// queue; the queue emptied once more at the end. Photons: without WD_SAMP_JOBQ each lane's own
// ids next, next + stride, … below photon_hi (a lane whose photon ended starts its next one);
// with it the warp takes min(WD_SAMP_JOBS, width) ids at a time from the launch's counter
// (counters[WD_SAMP_COUNTERS]), emitted by that many lanes into J when the queue is empty and a
// lane is idle, and the idle lanes pop them in lane order.
__device__ __forceinline__ void sampled_loop(const PhotonParams& P, const SampParams& T, SampQueue& q, SampJobs* J, unsigned full, int width, int lane, unsigned long long next, unsigned long long stride, SampCounts& n) {
    SampState S;
    bool alive = false;
    // The queue kept across segments and photons: this lane's entries, the queue's length.
    q.mine[lane] = 0;
    q.queued[lane] = 0;
#if WD_SAMP_ENDBITS
    q.fresh[lane] = 0;
#endif
    S.runs = SampRuns{-1, -1, 0, 0};
    bool pending = false;
#if WD_SAMP_JOBQ
    (void)next;
    (void)stride;
    // The job queue's photons (bits 0-7), its first (8-15), ids left in the launch (16); warp-uniform.
    unsigned int jq = 1u << 16;
#else
    (void)J;
#endif
    for (;;) {
#if WD_SAMP_JOBQ
        if (sampled_take(P, T, J, full, width, lane, alive, S, jq)) break;
#else
        if (!alive && next < T.photon_hi) {
            sampled_start(P, T, next, S);
            next += stride;
            alive = true;
        }
        if (!__any_sync(full, alive)) break;
#endif
        SampSeg g{};
        // pending: this lane's segment (walked at an earlier step) has points left.
        if (alive && !pending) sampled_walk(P, T, S, g);
        if (pending) g = q.seg[lane];
#if !WD_SAMP_PHYSICS
        {
            unsigned long long mine = q.mine[lane];
            int queued = q.queued[lane];
            sampled_enqueue(T, q, full, width, lane, alive, S, g, n, mine, queued, WD_SAMP_ROUNDS, pending);
            q.mine[lane] = mine;
            q.queued[lane] = queued;
        }
#endif
        if (pending) q.seg[lane] = g;
        bool ending = false;
        if (alive && !pending) {
            alive = sampled_move(P, T, S, g, n);
            ending = !alive;
        }
#if WD_SAMP_PHYSICS
        (void)ending;
#elif WD_SAMP_ENDBITS
        if (ending && q.fresh[lane]) {
            // The photon's end: the sign of its last queued point's amount, or, with none of its
            // points left in the queue, its count now (its drained points' r.cell).
            const unsigned long long mine = q.mine[lane];
            if (mine) {
                const int top = 63 - __clzll((long long)mine);
                float& w = samp_q_w(q, top);
                w = __int_as_float(__float_as_int(w) | (int)0x80000000);
            } else {
                if (S.runs.cell >= 0) samp_count(n.tabulated, 1);
                S.runs.cell = -1;
            }
            q.fresh[lane] = 0;
        }
#else
        {
            unsigned long long mine = q.mine[lane];
            int queued = q.queued[lane];
            sampled_mark(T, q, full, width, lane, ending, S.runs, n, mine, queued);
            q.mine[lane] = mine;
            q.queued[lane] = queued;
        }
#endif
    }
    if (q.queued[lane] > 0) sampled_drain(T, q, full, lane, q.queued[lane], (unsigned)q.mine[lane], 0.0f, S.runs, n);
}
#endif
#endif

#if WD_SAMP_QPOINT
// WD_SAMP_QPOINT's comb on a segment: the number m of points s_k = fma(k, Δ, s₀) < length
// (k = 0 … m − 1; s_k does not decrease with k), from an estimate corrected both ways.
__device__ __forceinline__ int sampled_count(float s0, float step, float len) {
    if (!(s0 < len)) return 0;
    int m = max((int)ceilf((len - s0) / step), 1);
    while (m > 1 && !(fmaf((float)(m - 1), step, s0) < len)) --m;
    while (fmaf((float)m, step, s0) < len) ++m;
    return m;
}
#endif

#if WD_SAMP_STEPWISE
// The point at distance s along the photon's segment, of weighted length x: its cell, and the
// runs it extends or closes (sampled_points' loop body).
__device__ __forceinline__ void sampled_point(const SampParams& T, SampState& S, float s, float x, SampCounts& n) {
    const PState& st = S.st;
    int sp;
    int c = sampled_cell_sp(T, sampled_at(st.pos, st.dir, s), sampled_time(st.time, st.ocm, s), sp);
    if (c >= 0) sampled_record(T, S.runs, c, sp, x, n);
}

// WD_SAMP_STEPWISE: the kernel's loop for one warp (every lane of `full` calls it), one lane at a
// time but at most WD_SAMP_STEP_POINTS points (1) per lane and step. A step of a lane: walk its
// next segment unless it holds one with points left (`walked`); bin the segment's next point
// (sampled_points' loop body: the same positions, times and float run sums as one lane at a time,
// so the same integers); move (absorption, escape, scattering: sampled_move) once the segment has
// no point left. So a segment of m points takes max(1, m) steps, and a lane with a long segment
// does not hold the warp's other lanes in a loop over its points. Photons as in the deferred
// loop: the job queue (WD_SAMP_JOBQ, default) or each lane's own ids next, next + stride, ….
__device__ __forceinline__ void sampled_loop(const PhotonParams& P, const SampParams& T, SampJobs* J, unsigned full, int width, int lane, unsigned long long next, unsigned long long stride, SampCounts& n) {
    SampState S;
    SampSeg g{};
    bool alive = false, walked = false;
    const bool step = T.step > 0.0f;
#if WD_SAMP_QPOINT
    int kp = 0, np = 0;  // the segment's points binned, its points (sampled_count)
#endif
    unsigned int jq = 1u << 16;  // sampled_supply's job queue
    for (;;) {
        if (sampled_supply(P, T, J, full, width, lane, alive, S, jq, next, stride)) break;
        if (!alive) continue;
        if (!walked) {
            sampled_walk(P, T, S, g);
            walked = true;
#if WD_SAMP_QPOINT
            kp = 0;
            np = step && g.seg.length > 0.0f ? sampled_count(S.next, T.step, g.seg.length) : 0;
#endif
        }
        // The segment's next points (Tabulate::photon_sampled; sampled_points' body), at most
        // WD_SAMP_STEP_POINTS of them in this step.
        const float len = g.seg.length;
        bool left = false;
        if (len > 0.0f) {
            if (step) {
                const float x = g.w * T.step;
#if WD_SAMP_QPOINT
                for (int k = 0; k < WD_SAMP_STEP_POINTS && kp < np; ++k, ++kp) sampled_point(T, S, fmaf((float)kp, T.step, S.next), x, n);
                left = kp < np;
#else
                for (int k = 0; k < WD_SAMP_STEP_POINTS && S.next < len; ++k) {
                    sampled_point(T, S, S.next, x, n);
                    S.next += T.step;
                }
                left = S.next < len;
#endif
            } else {
                sampled_point(T, S, wd_u32_to_uniform(S.bits + S.k * WD_GOLDEN) * len, g.w * len, n);
            }
        }
        if (!left) {
#if WD_SAMP_QPOINT
            if (step && len > 0.0f) S.next = fmaf((float)np, T.step, S.next) - len;
#else
            if (step && len > 0.0f) S.next -= len;
#endif
            alive = sampled_move(P, T, S, g, n);
            walked = false;
        }
    }
}
#endif

#if WD_SAMP_SCAN
// A warp's scratch for sampled_scan: per slot of a batch, the lane whose first point in the
// batch it holds (else -1).
struct SampScan {
    int owner[32];
};

// WD_SAMP_SCAN: the points of the warp's segments of this step (every lane of `full` calls it;
// this lane's m points s_k = fma(k, ds, s0), each of amount x, on its photon's segment from
// S.st.pos along S.st.dir), binned by the whole warp a `width` of points at a time. Slot j of the
// step is point j − off of the lane whose points are [off, off + m) (an exclusive prefix sum of
// the counts in lane order, so each lane's points are consecutive slots in its photon's order).
// A batch: the slots' lanes (a max-scan of the lanes' first slots in it), the segments by
// shuffles, one lookup per slot; a point continues its photon's run when its cell is that of the
// photon's previous recorded point (in the batch, found by a max-scan of the recorded slots, or
// the open run the lane carries in S.runs); the runs' integer sums by a segmented inclusive scan
// (the carried run's sum entering at the lane's first slot); a point that starts a run closes
// the previous one (close_cell with its sum); at the batch's end each lane carries the run of its
// last recorded point. The spatial runs alike with the spatial cells. Points outside the grid
// record nothing and do not break a run (sampled_points: only points in a cell are recorded).
// The same closes, sums and squares as sampled_record one point at a time in the photon's order
// (WD_SAMP_STEPWISE with WD_SAMP_QPOINT): integers, added in any order.
__device__ __forceinline__ void sampled_scan(const SampParams& T, SampScan& sc, unsigned full, int width, int lane, SampState& S, int m, float s0, float ds, float x, SampCounts& n) {
    int incl = m;
    for (int d = 1; d < 32; d <<= 1) {
        int v = __shfl_up_sync(full, incl, d);
        if (lane >= d) incl += v;
    }
    const int total = __shfl_sync(full, incl, width - 1);
    const int off = incl - m;
    const SampAmt q = samp_amount(x);
    for (int base = 0; base < total; base += width) {
        // This lane's slots in the batch [lo, hi); each slot's lane.
        const int lo = max(off - base, 0), hi = min(off + m - base, width);
        const bool mine = lo < hi;
        sc.owner[lane] = -1;
        __syncwarp(full);
        if (mine) sc.owner[lo] = lane;
        __syncwarp(full);
        int o = sc.owner[lane];
        __syncwarp(full);
        for (int d = 1; d < 32; d <<= 1) {
            int v = __shfl_up_sync(full, o, d);
            if (lane >= d) o = max(o, v);
        }
        const int j = base + lane;
        const bool valid = j < total;
        const int src = valid ? o : lane;
        // The slot's segment, amount and carried runs, from its lane.
        const int o_off = __shfl_sync(full, off, src);
        const float o_s0 = __shfl_sync(full, s0, src), o_ds = __shfl_sync(full, ds, src);
        const SampAmt o_q = __shfl_sync(full, q, src);
        const V3 at{__shfl_sync(full, S.st.pos.x, src), __shfl_sync(full, S.st.pos.y, src), __shfl_sync(full, S.st.pos.z, src)};
        const V3 dir{__shfl_sync(full, S.st.dir.x, src), __shfl_sync(full, S.st.dir.y, src), __shfl_sync(full, S.st.dir.z, src)};
        const float t0 = __shfl_sync(full, S.st.time, src), ocm = __shfl_sync(full, S.st.ocm, src);
        const int carry_c = __shfl_sync(full, S.runs.cell, src), carry_sp = __shfl_sync(full, S.runs.spatial, src);
        const SampAmt carry_q = __shfl_sync(full, S.runs.x, src), carry_sq = __shfl_sync(full, S.runs.spatial_x, src);
        int c = -1, sp = -1;
        if (valid) {
            const float s = fmaf((float)(j - o_off), o_ds, o_s0);
            c = sampled_cell_sp(T, sampled_at(at, dir, s), sampled_time(t0, ocm, s), sp);
        }
        const bool rec = c >= 0;
        n.points += rec;
        // The last recorded slot up to this one (r) and before it (prev), and whether prev is this lane's photon's.
        int r = rec ? lane : -1;
        for (int d = 1; d < 32; d <<= 1) {
            int v = __shfl_up_sync(full, r, d);
            if (lane >= d) r = max(r, v);
        }
        int prev = __shfl_up_sync(full, r, 1);
        if (lane == 0) prev = -1;
        const int pi = max(prev, 0);
        const int prev_o = __shfl_sync(full, o, pi), prev_c = __shfl_sync(full, c, pi), prev_sp = __shfl_sync(full, sp, pi);
        const bool in_batch = prev >= 0 && prev_o == o;
        const int pc = in_batch ? prev_c : carry_c, psp = in_batch ? prev_sp : carry_sp;
        const bool first = valid && j == max(o_off, base);
        const bool head = rec && c != pc, shead = rec && sp != psp;
        // Segmented inclusive sums (a segment starts at a run's first point and at a lane's first slot).
        SampAmt v = rec ? o_q : 0, sv = v;
        if (first && !head) v += carry_q;
        if (first && !shead) sv += carry_sq;
        bool f = !valid || first || head, sf = !valid || first || shead;
        for (int d = 1; d < 32; d <<= 1) {
            SampAmt vu = __shfl_up_sync(full, v, d), svu = __shfl_up_sync(full, sv, d);
            int fu = __shfl_up_sync(full, (int)f, d), sfu = __shfl_up_sync(full, (int)sf, d);
            if (lane >= d) {
                if (!f) v += vu;
                if (!sf) sv += svu;
                f = f || fu;
                sf = sf || sfu;
            }
        }
        // A run's first point closes the photon's previous run: its sum at prev, or the carried one.
        const SampAmt prev_v = __shfl_sync(full, v, pi), prev_sv = __shfl_sync(full, sv, pi);
        if (head && pc >= 0) {
            close_cell(T, pc, in_batch ? prev_v : carry_q);
            n.runs += 1;
        }
        if (shead && psp >= 0) close_spatial(T, psp, in_batch ? prev_sv : carry_sq);
        // Each lane carries the run of its last recorded point in the batch.
        const int last = __shfl_sync(full, r, mine ? hi - 1 : lane);
        const bool moved = mine && last >= lo;
        const int li = moved ? last : lane;
        const int l_c = __shfl_sync(full, c, li), l_sp = __shfl_sync(full, sp, li);
        const SampAmt l_v = __shfl_sync(full, v, li), l_sv = __shfl_sync(full, sv, li);
        if (moved) S.runs = SampRuns{l_c, l_sp, l_v, l_sv};
    }
}

// WD_SAMP_SCAN: the kernel's loop for one warp (every lane of `full` calls it): each step every
// lane with a photon walks one segment; the warp bins all their points (sampled_scan); each lane
// moves its photon (absorption, escape, scattering; at its end the open runs are closed).
// Photons from the job queue (WD_SAMP_JOBQ, default) or each lane's own ids.
__device__ __forceinline__ void sampled_loop(const PhotonParams& P, const SampParams& T, SampJobs* J, SampScan& sc, unsigned full, int width, int lane, unsigned long long next, unsigned long long stride, SampCounts& n) {
    SampState S;
    S.runs = SampRuns{-1, -1, 0, 0};
    bool alive = false;
    const bool step = T.step > 0.0f;
    unsigned int jq = 1u << 16;  // sampled_supply's job queue
    for (;;) {
        if (sampled_supply(P, T, J, full, width, lane, alive, S, jq, next, stride)) break;
        SampSeg g{};
        int m = 0;
        float s0 = 0.0f, ds = 0.0f, x = 0.0f;
        if (alive) {
            sampled_walk(P, T, S, g);
            const float len = g.seg.length;
            if (len > 0.0f) {
                if (step) {
                    m = sampled_count(S.next, T.step, len);
                    s0 = S.next;
                    ds = T.step;
                    x = g.w * T.step;
                } else {
                    m = 1;
                    s0 = wd_u32_to_uniform(S.bits + S.k * WD_GOLDEN) * len;
                    x = g.w * len;
                }
            }
        }
        sampled_scan(T, sc, full, width, lane, S, m, s0, ds, x, n);
        if (alive) {
            const float len = g.seg.length;
            if (step && len > 0.0f) S.next = fmaf((float)m, T.step, S.next) - len;
            alive = sampled_move(P, T, S, g, n);
        }
    }
}
#endif

// Static shared memory of a warp's point queue (WD_SAMP_COMPACT) or scan scratch (WD_SAMP_SCAN),
// for the kernel's 48 kB check.
#if WD_SAMP_COMPACT
#define WD_SAMP_QUEUE_BYTES sizeof(SampQueue)
#elif WD_SAMP_SCAN
#define WD_SAMP_QUEUE_BYTES sizeof(SampScan)
#else
#define WD_SAMP_QUEUE_BYTES 0
#endif

// A thread's counters added to the launch's (the kernels' end).
__device__ __forceinline__ void sampled_count_up(const SampParams& T, const SampCounts& n) {
    unsigned long long* c = T.counters;
    if (n.tabulated) atomicAdd(c + 0, n.tabulated);
    if (n.absorbed) atomicAdd(c + 1, n.absorbed);
    if (n.escaped) atomicAdd(c + 2, n.escaped);
    if (n.segments) atomicAdd(c + 3, n.segments);
    if (n.runs) atomicAdd(c + 4, n.runs);
    if (n.points) atomicAdd(c + 5, n.points);
}

// As propagate.cu's default loop: one segment per iteration, a lane whose photon ended starts
// its next photon (a warp does not wait for its longest photon). With WD_SAMP_COMPACT the lanes
// without photons left stay in the loop (adding no points) until the whole warp is done.
extern "C" __global__ void __launch_bounds__(WD_SAMP_BLOCK, WD_SAMP_MIN_BLOCKS) tabulate_sampled(__grid_constant__ const PhotonParams P, __grid_constant__ const SampParams T) {
#if WD_SAMP_SHARED_COUNTS
#if WD_SAMP_LEAN_SMEM
    // The warp's counters (samp_count): set by its first lane before the warp's loop.
    __shared__ SampCounts counts[(WD_SAMP_BLOCK + 31) / 32];
    SampCounts& n = counts[threadIdx.x >> 5];
    if ((threadIdx.x & 31) == 0) n = SampCounts{0, 0, 0, 0, 0, 0};
#else
    __shared__ SampCounts counts[WD_SAMP_BLOCK];
    SampCounts& n = counts[threadIdx.x];
    n = SampCounts{0, 0, 0, 0, 0, 0};
#endif
#else
    SampCounts n = {0, 0, 0, 0, 0, 0};
#endif
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long next = T.photon_lo + (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
#if WD_SAMP_COMPACT || WD_SAMP_STEPWISE || WD_SAMP_SCAN
    // The warp loops: the warp's lanes, the job queue. Static shared memory: at most 48 kB per
    // block (the point queues with WD_SAMP_COMPACT: 2.9 kB per warp with WD_SAMP_DEFER, 1.8 kB
    // without; the job queues: 1.3 kB per warp with WD_SAMP_JOBQ; WD_SAMP_SCAN's scratch: 128
    // bytes per warp; the counters: 48 bytes per thread).
    static_assert(WD_SAMP_QUEUE_BYTES * ((WD_SAMP_BLOCK + 31) / 32) + WD_SAMP_SHARED_COUNTS * sizeof(SampCounts) * WD_SAMP_BLOCK
                          + WD_SAMP_JOBQ * sizeof(SampJobs) * ((WD_SAMP_BLOCK + 31) / 32) <= 48 * 1024,
                  "the tabulation's queues and counters exceed 48 kB of static shared memory per block: a smaller WD_SAMP_BLOCK, WD_SAMP_JOBQ=0, WD_SAMP_DEFER=0, WD_SAMP_SHARED_COUNTS=0 or WD_SAMP_COMPACT=0");
#if WD_SAMP_COMPACT
    __shared__ SampQueue queues[(WD_SAMP_BLOCK + 31) / 32];
    SampQueue& q = queues[threadIdx.x >> 5];
#endif
    int lane = threadIdx.x & 31;
    int width = min(32, (int)(blockDim.x - (threadIdx.x & ~31u)));
    unsigned full = width == 32 ? 0xffffffffu : (1u << width) - 1u;
#if WD_SAMP_JOBQ
    __shared__ SampJobs jobs[(WD_SAMP_BLOCK + 31) / 32];
    SampJobs* J = &jobs[threadIdx.x >> 5];
#else
    SampJobs* J = nullptr;
#endif
#endif
#if WD_SAMP_SCAN
    __shared__ SampScan scans[(WD_SAMP_BLOCK + 31) / 32];
    sampled_loop(P, T, J, scans[threadIdx.x >> 5], full, width, lane, next, stride, n);
#elif WD_SAMP_STEPWISE
    sampled_loop(P, T, J, full, width, lane, next, stride, n);
#elif WD_SAMP_COMPACT
#if WD_SAMP_DEFER
    sampled_loop(P, T, q, J, full, width, lane, next, stride, n);
#else
    (void)J;
    SampState S;
    bool alive = false;
    for (;;) {
        if (!alive && next < T.photon_hi) {
            sampled_start(P, T, next, S);
            next += stride;
            alive = true;
        }
        if (!__any_sync(full, alive)) break;
        SampSeg g{};
        if (alive) sampled_walk(P, T, S, g);
        sampled_points_warp(T, q, full, width, lane, alive, S, g, n);
        if (alive) alive = sampled_move(P, T, S, g, n);
    }
#endif
#else
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
#endif
#if WD_SAMP_LEAN_SMEM
    // The warp's counters, added once by its first lane after every lane's last count.
    __syncwarp(full);
    if (lane == 0) sampled_count_up(T, n);
#else
    sampled_count_up(T, n);
#endif
}

// WD_SAMP_RED: after every tabulate_sampled launch, each of n cells' digits (a, b, c at w[3i..])
// added to its u128 (acc[2i], acc[2i + 1]: low, high) and zeroed. a, b, c < 2⁶⁴ (fewer than 2³²
// adds of < 2³² each in a launch), so a + b·2³² + c·2⁶⁴ is formed in two words with the carry.
extern "C" __global__ void sampled_fold(unsigned long long* w, unsigned long long* acc, unsigned long long n) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        unsigned long long a = w[3 * i], b = w[3 * i + 1], c = w[3 * i + 2];
        if ((a | b | c) == 0ull) continue;
        unsigned long long lo = a + (b << 32);
        unsigned long long hi = (b >> 32) + c + (lo < a ? 1ull : 0ull);
        unsigned long long old = acc[2 * i];
        acc[2 * i] = old + lo;
        acc[2 * i + 1] += hi + (old + lo < old ? 1ull : 0ull);
        w[3 * i] = 0ull;
        w[3 * i + 1] = 0ull;
        w[3 * i + 2] = 0ull;
    }
}

// WD_SAMP_REP: after every tabulate_sampled launch (before sampled_fold), each spatial cell's
// variance by batch means from its R replica sums S_r (rep[r·n + i]): V = R/(R − 1)·Σ_r (S_r − S̄)²,
// S̄ = Σ S_r / R, in double (S_r < 2⁵³; the sum over r in a fixed order, so V does not depend on
// the order of the launch's additions), rounded, added to the cell's square digits (w[3i..],
// WD_SAMP_RED's: samp_digits) and the replicas zeroed. V ≥ 2⁹⁶ is counted in counters[WD_SAMP_COUNTERS + 1]
// (refused by the host). One thread a cell: plain adds.
extern "C" __global__ void sampled_rep_fold(unsigned long long* rep, unsigned long long* w, unsigned long long* counters, unsigned long long n, int reps) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        double s = 0.0;
        for (int r = 0; r < reps; ++r) s += (double)rep[(size_t)r * n + i];
        if (s == 0.0) continue;
        double mean = s / reps, ss = 0.0;
        for (int r = 0; r < reps; ++r) {
            double d = (double)rep[(size_t)r * n + i] - mean;
            ss += d * d;
            rep[(size_t)r * n + i] = 0ull;
        }
        double v = rint(ss * reps / (reps - 1));
        if (!(v < 79228162514264337593543950336.0)) {  // 2⁹⁶
            atomicAdd(counters + WD_SAMP_COUNTERS + 1, 1ull);
            continue;
        }
        double a, b, c;
        samp_digits(v, a, b, c);
        w[3 * i] += (unsigned long long)a;
        w[3 * i + 1] += (unsigned long long)b;
        w[3 * i + 2] += (unsigned long long)c;
    }
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
    out[6] = (const char*)&t.hi - b;
    out[7] = (const char*)&t.angc - b;
    out[8] = (const char*)&t.rep - b;
    out[9] = (const char*)&t.adapt_slope - b;
    out[10] = (const char*)&t.adapt_inv_hr - b;
    out[11] = sizeof(SampParams);
}

// Twin check of the lookup (gpu-check and scripts/tabulate-twin-check): the cell of n points
// (x, y, z, t) = in[4i..4i+4].
extern "C" __global__ void sampled_twin_cells(__grid_constant__ const SampParams T, int n, const float* in, int* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = sampled_cell(T, V3{in[4 * i], in[4 * i + 1], in[4 * i + 2]}, in[4 * i + 3]);
}
