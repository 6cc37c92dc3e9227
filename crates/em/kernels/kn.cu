// The Klein–Nishina mini-app on the GPU: the CUDA twin of crates/em/src/{xs,klein_nishina,
// transport}.rs. One thread per track slot; per iteration the host launches `step` (move,
// kill-or-interact, hits and secondaries claimed from 32-bit stack allocators with one atomic
// per warp, a full stack makes the track retry next iteration with its random stream rewound),
// after `init` has set up a batch of tracks,
// `bin_hits` (fixed-point tally in block-private shared memory, exact integer atomics) and
// `clear` (reset the stacks). Counters are summed per warp before their one atomic. Compiled in precise mode (IEEE,
// no FMA contraction), so each track follows the CPU's arithmetic step by step; only the last
// bits of the double-precision log/exp/sqrt/sin/cos can differ from the host's libm.
#include "philox.cuh"
#include "pmath.cuh"

#define WD_TAG_TRACK 0x454d0001u
#define WD_ELECTRON_MASS 0.5109989461
#define WD_KILL_ENERGY 0.01
#define WD_SECONDARY_CUTOFF 1e-4
#define WD_EDEP_SCALE 1073741824.0
#define WD_MOMENT_SCALE 1048576.0

struct EmParams {
    // Cross-section grid (xs.rs XsGrid).
    const double* xs_energy;
    const double* xs_value;
    double log_front;
    double log_delta;
    unsigned int xs_size;
    unsigned int prime_index;
    // Tally grid.
    double tally_front;
    double tally_delta;
    unsigned int tally_size;
    unsigned int slots;
    unsigned long long seed;
    unsigned long long first_track;
    // Track state (structure of arrays).
    double* px; double* py; double* pz;
    double* dx; double* dy; double* dz;
    double* energy;
    unsigned int* rng_block;
    uint4* rng_buf;
    unsigned char* rng_used;
    unsigned char* alive;
    unsigned char* pending;
    unsigned int* steps;
    unsigned int* electrons;
    // Stacks: hits (z, edep) and secondaries (energy, direction).
    double2* hits;
    unsigned int* hit_size;
    unsigned int hit_capacity;
    double4* secondaries;
    unsigned int* secondary_size;
    unsigned int secondary_capacity;
    // Results: tally (fixed point) and totals.
    unsigned long long* tally;
    unsigned long long* totals;  // [0] Σ edep q, [1] Σ edep·z q low 64 bits, [2] alive, [3] steps, [4] electrons, [5] retries, [6] Σ edep·z q high 64 bits
};
// Must match EmParams in crates/em/src/gpu.rs.
static_assert(sizeof(EmParams) == 256, "EmParams size");

// Warp-aggregated additions to one counter: same-address atomics from every thread serialise
// (8 M hits per iteration on two addresses cost more than the physics), so the active lanes of
// a warp sum first and one lane adds.
__device__ __forceinline__ unsigned long long wd_warp_sum(unsigned long long v) {
    for (int off = 16; off > 0; off >>= 1) {
        unsigned long long o = __shfl_down_sync(0xffffffffu, v, off);
        v += o;
    }
    return v;
}

// Σ edep·z in fixed point is a 128-bit two's-complement integer, as the CPU's i128: in the
// unbounded medium one 100 TeV photon deposits beyond 2⁶³ units (transport.rs MOMENT_SCALE).
// Integer additions modulo 2¹²⁸ give the CPU's sum in any order.
struct WdI128 {
    unsigned long long lo, hi;
};
// The integer value of a double that is already whole (|m| < 2¹²⁷): exact, as Rust's `as i128`.
// a − h·2⁶⁴ is exact: it is a multiple of a's ulp below 2⁶⁴, so it needs at most 53 bits.
__device__ __forceinline__ WdI128 wd_i128(double m) {
    // Almost every deposit: one conversion, sign-extended.
    if (fabs(m) < 0x1p62) {
        long long v = (long long)m;
        return {(unsigned long long)v, v < 0 ? ~0ull : 0ull};
    }
    double a = fabs(m);
    double h = floor(a * 0x1p-64);
    WdI128 v = {(unsigned long long)(a - h * 0x1p64), (unsigned long long)h};
    if (m < 0.0) {  // −(hi·2⁶⁴ + lo) = ~hi·2⁶⁴ + ~lo + 1, the carry into hi when lo was 0
        v.lo = ~v.lo + 1ull;
        v.hi = ~v.hi + (v.lo == 0ull ? 1ull : 0ull);
    }
    return v;
}
__device__ __forceinline__ void wd_i128_add(WdI128& s, WdI128 v) {
    s.lo += v.lo;
    s.hi += v.hi + (s.lo < v.lo ? 1ull : 0ull);
}
__device__ __forceinline__ WdI128 wd_warp_sum_i128(WdI128 v) {
    for (int off = 16; off > 0; off >>= 1) {
        WdI128 o = {__shfl_down_sync(0xffffffffu, v.lo, off), __shfl_down_sync(0xffffffffu, v.hi, off)};
        wd_i128_add(v, o);
    }
    return v;
}
// One 128-bit atomic addition from two 64-bit ones: the low word's atomic returns the value it
// added to, so its carry is known exactly and goes to the high word.
__device__ __forceinline__ void wd_atomic_add_i128(unsigned long long* lo, unsigned long long* hi, WdI128 v) {
    unsigned long long old = atomicAdd(lo, v.lo);
    unsigned long long carry = old + v.lo < old ? 1ull : 0ull;
    if (v.hi + carry) atomicAdd(hi, v.hi + carry);
}

// XsGrid::eval.
__device__ __forceinline__ double wd_xs(const EmParams& P, double e) {
    unsigned int n = P.xs_size;
    if (e <= P.xs_energy[0]) return 0u >= P.prime_index ? P.xs_value[0] / P.xs_energy[0] : P.xs_value[0];
    if (e >= P.xs_energy[n - 1]) return n - 1 >= P.prime_index ? P.xs_value[n - 1] / P.xs_energy[n - 1] : P.xs_value[n - 1];
    unsigned int i = min((unsigned int)((pm_ln(e) - P.log_front) / P.log_delta), n - 2);
    double e0 = P.xs_energy[i], e1 = P.xs_energy[i + 1];
    double v0 = P.xs_value[i];
    double v1 = P.xs_value[i + 1];
    if (i + 1 == P.prime_index) v1 /= e1;
    double v = v0 + (e - e0) / (e1 - e0) * (v1 - v0);
    return i >= P.prime_index ? v / e : v;
}

// klein_nishina.rs: rotate.
__device__ __forceinline__ void wd_rotate(double ux, double uy, double uz, double& dx, double& dy, double& dz) {
    double rho2 = dx * dx + dy * dy;
    double ox, oy, oz;
    if (rho2 > 1e-20) {
        double rho = sqrt(rho2);
        ox = (dx * dz * ux - dy * uy) / rho + dx * uz;
        oy = (dy * dz * ux + dx * uy) / rho + dy * uz;
        oz = -rho * ux + dz * uz;
    } else if (dz > 0.0) {
        ox = ux; oy = uy; oz = uz;
    } else {
        ox = -ux; oy = uy; oz = -uz;
    }
    double norm = sqrt(ox * ox + oy * oy + oz * oz);
    dx = ox / norm; dy = oy / norm; dz = oz / norm;
}

// klein_nishina.rs: sample_epsilon. Returns ε, writes t = 1 − cos θ.
__device__ __forceinline__ double wd_sample_epsilon(double energy, WdRng& rng, double& t_out) {
    double k = energy / WD_ELECTRON_MASS;
    double eps0 = 1.0 / (1.0 + 2.0 * k);
    double eps0_sq = eps0 * eps0;
    double alpha1 = -pm_ln(eps0);
    double alpha2 = 0.5 * (1.0 - eps0_sq);
    for (;;) {
        double eps, eps_sq;
        if (wd_uniform_f64(rng) * (alpha1 + alpha2) < alpha1) {
            eps = pm_exp(-alpha1 * wd_uniform_f64(rng));
            eps_sq = eps * eps;
        } else {
            eps_sq = eps0_sq + (1.0 - eps0_sq) * wd_uniform_f64(rng);
            eps = sqrt(eps_sq);
        }
        double t = (1.0 - eps) / (eps * k);
        double sin2 = t * (2.0 - t);
        if (wd_uniform_f64(rng) * (1.0 + eps_sq) >= eps * sin2) {
            t_out = t;
            return eps;
        }
    }
}

// transport.rs: step, for every live slot.
// StackAllocator::push for the lanes of a warp with `want` set (all 32 lanes call it): one
// atomic per warp. The claim of the warp's n slots fails as a whole when it passes the capacity;
// the first failing claim puts the size back to where it started (spec §2.5). Returns the slot
// of this lane, or -1.
__device__ __forceinline__ int wd_warp_claim(unsigned int* size, unsigned int capacity, bool want) {
    unsigned int ballot = __ballot_sync(0xffffffffu, want);
    if (ballot == 0u) return -1;
    unsigned int lane = threadIdx.x & 31u;
    unsigned int leader = __ffs(ballot) - 1u;
    unsigned int count = __popc(ballot);
    unsigned int start = 0u;
    if (lane == leader) {
        start = atomicAdd(size, count);
        if (start + count > capacity) {
            if (start <= capacity) atomicExch(size, start);
            start = 0xffffffffu;
        }
    }
    start = __shfl_sync(0xffffffffu, start, leader);
    if (!want || start == 0xffffffffu) return -1;
    return (int)(start + __popc(ballot & ((1u << lane) - 1u)));
}

// transport.rs: step, for every live slot. Phase 1 per lane (move; kill, or sample the
// interaction), phase 2 for the whole warp (claim secondaries, then hits), phase 3 per lane
// (commit, or rewind the random stream and retry next iteration).
// -DWD_MIN_BLOCKS=N: ask for N resident blocks of 256 per SM (caps the registers).
#ifdef WD_MIN_BLOCKS
#define WD_STEP_BOUNDS __launch_bounds__(256, WD_MIN_BLOCKS)
#else
#define WD_STEP_BOUNDS __launch_bounds__(256)
#endif
extern "C" __global__ void WD_STEP_BOUNDS step(const EmParams P) {
    unsigned int s = blockIdx.x * blockDim.x + threadIdx.x;
    bool active = s < P.slots && P.alive[s];
    WdRng rng;
    double x = 0.0, y = 0.0, z = 0.0, ux = 0.0, uy = 0.0, uz = 0.0, e = 0.0;
    unsigned int steps = 0u;
    bool kill = false, want_sec = false;
    double new_e = 0.0, nx = 0.0, ny = 0.0, nz = 0.0, edep = 0.0;
    double4 sec = make_double4(0.0, 0.0, 0.0, 0.0);
    WdRng saved;
    if (active) {
        rng = wd_rng(P.seed, WD_TAG_TRACK, P.first_track + s);
        rng.block = P.rng_block[s];
        uint4 b = P.rng_buf[s];
        rng.buf[0] = b.x; rng.buf[1] = b.y; rng.buf[2] = b.z; rng.buf[3] = b.w;
        rng.used = P.rng_used[s];
        x = P.px[s]; y = P.py[s]; z = P.pz[s];
        ux = P.dx[s]; uy = P.dy[s]; uz = P.dz[s];
        e = P.energy[s];
        steps = P.steps[s];
        if (!P.pending[s]) {
            double sigma = wd_xs(P, e);
            double d = -pm_ln(wd_uniform_f64(rng)) / sigma;
            x += d * ux; y += d * uy; z += d * uz;
            steps += 1u;
        }
        saved = rng;
        if (e < WD_KILL_ENERGY) {
            kill = true;
            edep = e;
        } else {
            double t;
            double eps = wd_sample_epsilon(e, rng, t);
            double phi = 6.283185307179586 * wd_uniform_f64(rng);
            double cos_theta = 1.0 - t;
            double sin_theta = sqrt(fmax(t * (2.0 - t), 0.0));
            double sp, cp;
            pm_sincos(phi, &sp, &cp);
            nx = ux; ny = uy; nz = uz;
            wd_rotate(sin_theta * cp, sin_theta * sp, cos_theta, nx, ny, nz);
            new_e = eps * e;
            edep = e - new_e;
            if (edep >= WD_SECONDARY_CUTOFF) {
                double qx = e * ux - new_e * nx, qy = e * uy - new_e * ny, qz = e * uz - new_e * nz;
                double norm = sqrt(qx * qx + qy * qy + qz * qz);
                want_sec = true;
                sec = make_double4(edep, qx / norm, qy / norm, qz / norm);
            }
        }
    }
    int k = wd_warp_claim(P.secondary_size, P.secondary_capacity, want_sec);
    if (k >= 0) P.secondaries[k] = sec;
    bool ok = !want_sec || k >= 0;
    int h = wd_warp_claim(P.hit_size, P.hit_capacity, active && ok);
    if (h >= 0) P.hits[h] = make_double2(z, edep);
    ok = ok && h >= 0;
    unsigned long long n_alive = 0, n_steps = 0, n_electrons = 0, n_retries = 0;
    if (active) {
        if (!ok) {
            rng = saved;
            n_retries = 1;
        } else if (!kill) {
            e = new_e; ux = nx; uy = ny; uz = nz;
            if (want_sec) P.electrons[s] += 1u;
        }
        P.px[s] = x; P.py[s] = y; P.pz[s] = z;
        P.dx[s] = ux; P.dy[s] = uy; P.dz[s] = uz;
        P.energy[s] = e;
        P.pending[s] = ok ? 0 : 1;
        P.steps[s] = steps;
        P.rng_block[s] = rng.block;
        P.rng_buf[s] = make_uint4(rng.buf[0], rng.buf[1], rng.buf[2], rng.buf[3]);
        P.rng_used[s] = (unsigned char)rng.used;
        if (ok && kill) {
            P.alive[s] = 0;
            n_steps = steps;
            n_electrons = P.electrons[s];
        } else {
            n_alive = 1;
        }
    }
    n_alive = wd_warp_sum(n_alive);
    n_steps = wd_warp_sum(n_steps);
    n_electrons = wd_warp_sum(n_electrons);
    n_retries = wd_warp_sum(n_retries);
    if ((threadIdx.x & 31u) == 0u) {
        if (n_alive) atomicAdd(&P.totals[2], n_alive);
        if (n_steps) atomicAdd(&P.totals[3], n_steps);
        if (n_electrons) atomicAdd(&P.totals[4], n_electrons);
        if (n_retries) atomicAdd(&P.totals[5], n_retries);
    }
}

// transport.rs: the hit binning (fixed point; signed moment added in two's complement). A
// block-private tally in shared memory (tallies up to WD_SHARED_BINS bins) and warp sums of the
// totals keep the global atomics to one per bin and block.
#define WD_SHARED_BINS 4096
extern "C" __global__ void __launch_bounds__(256) bin_hits(const EmParams P) {
    __shared__ unsigned long long s_tally[WD_SHARED_BINS];
    bool shared = P.tally_size <= WD_SHARED_BINS;
    if (shared)
        for (unsigned int k = threadIdx.x; k < P.tally_size; k += blockDim.x) s_tally[k] = 0ull;
    __syncthreads();
    unsigned int n = min(*P.hit_size, P.hit_capacity);
    unsigned long long sum_q = 0;
    WdI128 sum_m = {0ull, 0ull};
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        double2 h = P.hits[i];
        double b = floor((h.x - P.tally_front) / P.tally_delta);
        unsigned int bin = b < 0.0 ? 0u : (unsigned int)fmin(b, (double)(P.tally_size - 1));
        unsigned long long q = (unsigned long long)round(h.y * WD_EDEP_SCALE);
        if (shared) atomicAdd(&s_tally[bin], q); else atomicAdd(&P.tally[bin], q);
        sum_q += q;
        wd_i128_add(sum_m, wd_i128(round(h.y * h.x * WD_MOMENT_SCALE)));
    }
    sum_q = wd_warp_sum(sum_q);
    sum_m = wd_warp_sum_i128(sum_m);
    if ((threadIdx.x & 31u) == 0u) {
        if (sum_q) atomicAdd(&P.totals[0], sum_q);
        if (sum_m.lo | sum_m.hi) wd_atomic_add_i128(&P.totals[1], &P.totals[6], sum_m);
    }
    __syncthreads();
    if (shared)
        for (unsigned int k = threadIdx.x; k < P.tally_size; k += blockDim.x)
            if (s_tally[k]) atomicAdd(&P.tally[k], s_tally[k]);
}

// A fresh batch: primaries at the origin along +z with energy e0, streams at their start
// (RandomStream::new: block 0, nothing buffered), alive.
extern "C" __global__ void init(const EmParams P, double e0) {
    unsigned int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= P.slots) return;
    P.px[s] = 0.0; P.py[s] = 0.0; P.pz[s] = 0.0;
    P.dx[s] = 0.0; P.dy[s] = 0.0; P.dz[s] = 1.0;
    P.energy[s] = e0;
    P.rng_block[s] = 0u;
    P.rng_buf[s] = make_uint4(0u, 0u, 0u, 0u);
    P.rng_used[s] = 4;
    P.alive[s] = 1;
    P.pending[s] = 0;
    P.steps[s] = 0u;
    P.electrons[s] = 0u;
}

extern "C" __global__ void clear(const EmParams P) {
    *P.hit_size = 0u;
    *P.secondary_size = 0u;
    P.totals[2] = 0ull;
}
