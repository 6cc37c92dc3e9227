// The sampled estimator in two kernels (issue #32's rate; docs/spline.md "Two kernels"),
// compiled after sampled.cu (tabulate/gpu.rs SAMPLED_SRC), whose device functions it calls;
// the host runs it with the switch WD_SAMP_SPLIT=1 (tabulate/gpu.rs `run_split`).
//
// Why: with the photon's physics and the binning of its points in one kernel, a lane either
// walks or bins in a loop step, so one of the two always runs with idle lanes (the queue of
// points, one point per step and the warp scans all end within 15 % of each other). Here every
// round of a launch is two kernels:
// * sampled_paths: each lane propagates photons (tabulate_sampled's sampled_walk and
//   sampled_move, nothing binned) and writes each segment's start, time, direction and length to
//   its job's path (at most the round's cap, WD_SAMP_PATH segments while photons are fresh); the
//   warp's photons come from a job queue as in tabulate_sampled (WD_SAMP_JOBS emitted together).
// * sampled_bins: each lane bins one job's path at a time, one point per loop step (the lookup
//   and the run merge of sampled_points, sampled_record in the photon's order), taking the next
//   job when its path is done.
// A photon still alive after WD_SAMP_PATH segments is paused: sampled_paths writes its state to a
// continuation (cont_out), sampled_bins leaves its open runs and its comb there, and the next
// round resumes it (as cont_in) beside fresh photons; after the source's last fresh photons,
// rounds of the paused ones alone, each job then holding the whole buffer's share of segments,
// until none is paused (tabulate/gpu.rs Split: three continuation buffers in turn). The segments,
// points and float run sums are those of tabulate_sampled in the same order per photon, so the
// tables are the same integers. Measured slower than tabulate_sampled (docs/spline.md "Two
// kernels a round"): opt-in.

#ifndef WD_SAMP_SPLIT
#define WD_SAMP_SPLIT 0  // read by the host only: these kernels are in every sampled build
#endif
#ifndef WD_SAMP_PATH
#define WD_SAMP_PATH 96
#endif
#ifndef WD_SAMP_BIN_BLOCK
#define WD_SAMP_BIN_BLOCK 256
#endif
#ifndef WD_SAMP_BIN_MIN_BLOCKS
#define WD_SAMP_BIN_MIN_BLOCKS 4
#endif

// One segment of a path: its start (x, y, z) and time, its direction and length (32 bytes).
struct SampSegRec {
    float4 a, b;
};

// A job's path besides its segments: the photon's sampler bits, the index of its first segment
// in this round (k0), the segments written, its wavelength slice and ocm, and the continuation
// it was paused to (-1: it ended in this round).
struct SampHead {
    unsigned int bits, k0, count, slice;
    float ocm;
    int cont;
    unsigned int pad[2];
};

// A paused photon: its state after the round's last segment (sampled_paths), its open runs and
// the distance to its next point (sampled_bins).
struct SampCont {
    PState st;
    unsigned int bits, k;
    float next;
    SampRuns runs;
};

// Must match SplitParams in crates/photon/src/tabulate/gpu.rs.
struct SampSplit {
    SampSegRec* path;           // jobs × cap segments
    SampHead* head;             // jobs
    const SampCont* cont_in;    // the round's resumed jobs
    SampCont* cont_out;         // the photons paused in this round
    unsigned long long* work;   // [0] sampled_paths' job counter, [1] sampled_bins', [2] photons paused
    unsigned long long jobs;    // this round's jobs
    unsigned long long resumed; // jobs j < resumed resume cont_in[j]; the others are photons photon_lo + j − resumed
    unsigned long long cap;     // segments a job's path holds in this round (WD_SAMP_PATH, more when few jobs are left)
};

// sampled_paths' job queue (per warp, shared memory): up to WD_SAMP_JOBS photons emitted or
// resumed together, popped by idle lanes.
struct SampPathJobs {
    PState st[WD_SAMP_JOBS];
    unsigned int bits[WD_SAMP_JOBS], k[WD_SAMP_JOBS], job[WD_SAMP_JOBS];
};

// Job j's photon into slot e of the queue: emitted (round 0) or resumed. Out of line, as
// sampled_emit_jobs (its temporaries would compete with the lanes' photon states).
__device__ __noinline__ void paths_emit(const PhotonParams& P, const SampParams& T, const SampSplit& X, unsigned long long j, SampPathJobs* J, int e) {
    if (j < X.resumed) {
        const SampCont& c = X.cont_in[j];
        J->st[e] = c.st;
        J->bits[e] = c.bits;
        J->k[e] = c.k;
    } else {
        sampled_emit(P, T.photon_lo + (j - X.resumed), J->st[e], J->bits[e]);
        J->k[e] = 0u;
    }
    J->job[e] = (unsigned int)j;
}

// The job queue's turn for sampled_paths (samp_jobq_turn): jobs from the round's counter
// (work[0]), emitted or resumed into J; a lane that pops one starts its segments' count at k0.
// True when the warp is done.
__device__ __forceinline__ bool paths_take(const PhotonParams& P, const SampParams& T, const SampSplit& X, SampPathJobs* J, unsigned full, int width, int lane, bool& alive, SampState& S, unsigned int& k0, unsigned int& job, unsigned int& jq) {
    return samp_jobq_turn(
        full, width, lane, alive, X.work + 0, 0ull, X.jobs, jq,
        [&](unsigned long long j, int e) { paths_emit(P, T, X, j, J, e); },
        [&](int e) {
            S.st = J->st[e];
            S.bits = J->bits[e];
            S.k = J->k[e];
            S.runs = SampRuns{-1, -1, 0, 0};  // (sampled_move's end closes nothing here)
            k0 = S.k;
            job = J->job[e];
        });
}

// sampled_paths for one warp: walk, record the segment, move; at the photon's end or after
// X.cap segments (paused: its state to cont_out) the job's head.
__device__ __forceinline__ void sampled_paths_loop(const PhotonParams& P, const SampParams& T, const SampSplit& X, SampPathJobs* J, unsigned full, int width, int lane, SampCounts& n) {
    SampState S;
    bool alive = false;
    unsigned int k0 = 0u, job = 0u, jq = 1u << 16;
    for (;;) {
        if (paths_take(P, T, X, J, full, width, lane, alive, S, k0, job, jq)) break;
        if (!alive) continue;
        SampSeg g;
        sampled_walk(P, T, S, g);  // (its weight is sampled_bins' work: unused here)
        SampSegRec* r = X.path + job * X.cap + (S.k - k0);
        r->a = make_float4(S.st.pos.x, S.st.pos.y, S.st.pos.z, S.st.time);
        r->b = make_float4(S.st.dir.x, S.st.dir.y, S.st.dir.z, g.seg.length);
        alive = sampled_move(P, T, S, g, n);
        unsigned int count = S.k - k0;
        bool pause = alive && count >= X.cap;
        if (!alive || pause) {
            int cont = -1;
            if (pause) {
                cont = (int)atomicAdd(X.work + 2, 1ull);
                SampCont& c = X.cont_out[cont];
                c.st = S.st;
                c.bits = S.bits;
                c.k = S.k;
                alive = false;
            }
            X.head[job] = SampHead{S.bits, k0, count, S.st.slice, S.st.ocm, cont, {0u, 0u}};
        }
    }
}

// sampled_bins for one warp: each lane one job's path at a time, one point per loop step (the
// segments without a point left skipped first), the next job when the path is done (its open
// runs closed as sampled_end does, or left in its continuation with the comb).
__device__ __forceinline__ void sampled_bins_loop(const SampParams& T, const SampSplit& X, unsigned full, int lane, SampCounts& n) {
    const bool step = T.step > 0.0f;
    bool has = false, more = true, pending = false;
    unsigned long long job = 0;
    SampHead h{};
    int i = 0;
    float4 a = make_float4(0.0f, 0.0f, 0.0f, 0.0f), b = a;  // the segment: (x, y, z, t), (dx, dy, dz, length)
    float next = 0.0f, x = 0.0f;
    SampRuns runs{-1, -1, 0, 0};
    for (;;) {
        unsigned idle = __ballot_sync(full, !has);
        if (idle && more) {
            int want = __popc(idle), first = __ffs(idle) - 1;
            unsigned long long base = 0;
            if (lane == first) base = atomicAdd(X.work + 1, (unsigned long long)want);
            base = __shfl_sync(full, base, first);
            more = base + (unsigned long long)want < X.jobs;
            unsigned long long j = base + (unsigned long long)__popc(idle & ((1u << lane) - 1u));
            if (!has && j < X.jobs) {
                job = j;
                h = X.head[j];
                if (j < X.resumed) {
                    runs = X.cont_in[j].runs;
                    next = X.cont_in[j].next;
                } else {
                    runs = SampRuns{-1, -1, 0, 0};
                    next = wd_u32_to_uniform(h.bits) * T.step;  // sampled_begin
                }
                i = -1;
                b.w = 0.0f;
                pending = false;
                has = true;
            }
        }
        if (!more && !__any_sync(full, has)) break;
        bool point = false;
        while (has) {
            if (step ? next < b.w : pending) {
                point = true;
                break;
            }
            if (step && b.w > 0.0f) next -= b.w;  // the segment's end (sampled_points)
            if (++i >= (int)h.count) {
                if (h.cont >= 0) {
                    X.cont_out[h.cont].runs = runs;
                    X.cont_out[h.cont].next = next;
                } else if (runs.cell >= 0) {  // sampled_end
                    close_cell(T, runs.cell, runs.x);
                    close_spatial(T, runs.spatial, runs.spatial_x);
                    n.runs += 1;
                    n.tabulated += 1;
                }
                has = false;
                break;
            }
            const SampSegRec* r = X.path + job * X.cap + i;
            a = r->a;
            b = r->b;
            pending = b.w > 0.0f;
            if (pending) {
                float w = sampled_weight(T, h.slice, b.z);  // sampled_walk's g.w
                x = step ? w * T.step : w * b.w;
            }
        }
        if (point) {
            float s = step ? next : wd_u32_to_uniform(h.bits + (h.k0 + (unsigned int)i) * WD_GOLDEN) * b.w;
            int sp;
            int c = sampled_cell_sp(T, sampled_at(V3{a.x, a.y, a.z}, V3{b.x, b.y, b.z}, s), sampled_time(a.w, h.ocm, s), sp);
            if (c >= 0) sampled_record(T, runs, c, sp, x, n);
            if (step) next += T.step;
            pending = false;
        }
    }
}

// The kernels (sampled_count_up: sampled.cu).
extern "C" __global__ void __launch_bounds__(WD_SAMP_BLOCK, WD_SAMP_MIN_BLOCKS) sampled_paths(__grid_constant__ const PhotonParams P, __grid_constant__ const SampParams T, __grid_constant__ const SampSplit X) {
    __shared__ SampPathJobs jobs[(WD_SAMP_BLOCK + 31) / 32];
    __shared__ SampCounts counts[WD_SAMP_BLOCK];
    SampCounts& n = counts[threadIdx.x];
    n = SampCounts{0, 0, 0, 0, 0, 0};
    int lane = threadIdx.x & 31;
    int width = min(32, (int)(blockDim.x - (threadIdx.x & ~31u)));
    unsigned full = width == 32 ? 0xffffffffu : (1u << width) - 1u;
    sampled_paths_loop(P, T, X, &jobs[threadIdx.x >> 5], full, width, lane, n);
    sampled_count_up(T, n);
}

extern "C" __global__ void __launch_bounds__(WD_SAMP_BIN_BLOCK, WD_SAMP_BIN_MIN_BLOCKS) sampled_bins(__grid_constant__ const SampParams T, __grid_constant__ const SampSplit X) {
    SampCounts n = {0, 0, 0, 0, 0, 0};
    int lane = threadIdx.x & 31;
    int width = min(32, (int)(blockDim.x - (threadIdx.x & ~31u)));
    unsigned full = width == 32 ? 0xffffffffu : (1u << width) - 1u;
    sampled_bins_loop(T, X, full, lane, n);
    sampled_count_up(T, n);
}

// Offsets of SampSplit's work, jobs and cap, its size, the records' sizes and WD_SAMP_PATH, compared
// with Rust's SPLIT_LAYOUT by gpu-check.
extern "C" __global__ void sampled_split_layout(unsigned long long* out) {
    SampSplit s;
    const char* p = (const char*)&s;
    out[0] = (const char*)&s.work - p;
    out[1] = (const char*)&s.jobs - p;
    out[2] = (const char*)&s.cap - p;
    out[3] = sizeof(SampSplit);
    out[4] = sizeof(SampSegRec);
    out[5] = sizeof(SampHead);
    out[6] = sizeof(SampCont);
    out[7] = WD_SAMP_PATH;
}
