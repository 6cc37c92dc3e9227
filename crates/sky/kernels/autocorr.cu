// Two-point autocorrelation of scrambled skies: the CUDA twin of crates/sky/src/{sphere,
// trials}.rs and of the pair test of count.rs. Compiled without fused multiply-add and without
// fast-math (KernelOptions::precise), so every double below rounds exactly like the Rust code:
// the counts of a trial are the same integers on the CPU and on the GPU.
//
// Per batch of trials (grid.y = trial within the batch):
//   scramble: one thread per event, its new right ascension from the trial's Philox stream and
//             its unit vector (w = energy level);
//   pairs:    events sorted by declination; block = 256 consecutive events i, whose partners are
//             the positions i < j < window_end[i] (declination within θ_max). The block streams
//             the union of those windows through shared memory in tiles and every thread tests
//             the tile against its event; pairs go to a block-private histogram (shared-memory
//             atomics, spec §4 implication 5), added to the trial's global histogram at the end.
#include "philox.cuh"

#define WD_TAG_TRIAL 0x534b0001u
#ifndef WD_TILE
#define WD_TILE 256
#endif
#define WD_MAX_HIST 4096
#define WD_MAX_BINS 1024
// Bin lookup: the table of bins.rs (AngularBins, LUT_CELLS = WD_LUT cells uniform in squared
// chord over [0, limit], each holding a bin at or below the answer), built on the host and read
// into shared memory; a short forward scan finishes the search — the same answer as a search.
// -DWD_BIN_SEARCH: binary search instead (the first version; kept to measure the difference).
#define WD_LUT 1024

// Taylor coefficients 1/n! of sphere.rs (same decimal literals, so the same doubles).
__device__ __forceinline__ void wd_sincos_turn(double t, double* c_out, double* s_out) {
    double k = floor(t * 4.0 + 0.5);
    double r = t - k * 0.25;
    double x = r * 6.283185307179586;
    double x2 = x * x;
    double s = 1.0 / 355687428096000.0;
    s = s * x2 + -1.0 / 1307674368000.0;
    s = s * x2 + 1.0 / 6227020800.0;
    s = s * x2 + -1.0 / 39916800.0;
    s = s * x2 + 1.0 / 362880.0;
    s = s * x2 + -1.0 / 5040.0;
    s = s * x2 + 1.0 / 120.0;
    s = s * x2 + -1.0 / 6.0;
    s = s * x2 + 1.0;
    s = s * x;
    double c = -1.0 / 6402373705728000.0;
    c = c * x2 + 1.0 / 20922789888000.0;
    c = c * x2 + -1.0 / 87178291200.0;
    c = c * x2 + 1.0 / 479001600.0;
    c = c * x2 + -1.0 / 3628800.0;
    c = c * x2 + 1.0 / 40320.0;
    c = c * x2 + -1.0 / 720.0;
    c = c * x2 + 1.0 / 24.0;
    c = c * x2 + -1.0 / 2.0;
    c = c * x2 + 1.0;
    switch (((long long)k) & 3) {
        case 0: *c_out = c; *s_out = s; break;
        case 1: *c_out = -s; *s_out = c; break;
        case 2: *c_out = -c; *s_out = -s; break;
        default: *c_out = s; *s_out = -c; break;
    }
}

// trials.rs: trial_turn.
__device__ __forceinline__ double wd_trial_turn(unsigned long long seed, unsigned long long trial, unsigned int e) {
    unsigned int w[4] = {e / 2u, WD_TAG_TRIAL, (unsigned int)trial, (unsigned int)(trial >> 32)};
    wd_philox4x32_10(w, (unsigned int)seed, (unsigned int)(seed >> 32));
    unsigned long long hi = (e & 1u) ? w[2] : w[0];
    unsigned long long lo = (e & 1u) ? w[3] : w[1];
    unsigned long long x = (hi << 32) | lo;
    return 1.0 - (double)((x >> 11) + 1ull) * (1.0 / 9007199254740992.0);
}

// trials.rs: quantize_turn (grid = 0: continuous).
__device__ __forceinline__ double wd_quantize_turn(double t, unsigned int grid) {
    if (grid == 0u) return t;
    double g = (double)grid;
    double q = floor(t * g + 0.5) / g;
    return q >= 1.0 ? q - 1.0 : q;
}

extern "C" __global__ void scramble(const double* __restrict__ sin_dec, const double* __restrict__ cos_dec,
                                    const unsigned int* __restrict__ order, const unsigned char* __restrict__ level,
                                    unsigned int n, unsigned long long seed, unsigned long long first_trial,
                                    unsigned int ra_grid, double4* __restrict__ vec) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long trial = first_trial + blockIdx.y;
    double t = wd_quantize_turn(wd_trial_turn(seed, trial, order[i]), ra_grid);
    double ca, sa;
    wd_sincos_turn(t, &ca, &sa);
    double cd = cos_dec[i];
    vec[(size_t)blockIdx.y * n + i] = make_double4(cd * ca, cd * sa, sin_dec[i], (double)level[i]);
}

// count.rs: the pair test. hist: [trial in batch][levels × bins] differential counts.
extern "C" __global__ void __launch_bounds__(WD_TILE) pairs(const double4* __restrict__ vec_all,
                                                            const unsigned int* __restrict__ window_end,
                                                            const double* __restrict__ limits,
                                                            const unsigned short* __restrict__ lut, unsigned int n,
                                                            unsigned int bins, unsigned int levels,
                                                            unsigned long long* __restrict__ hist_all) {
    __shared__ double4 tile[WD_TILE];
    __shared__ unsigned int s_hist[WD_MAX_HIST];
    __shared__ double s_lim[WD_MAX_BINS];
#ifndef WD_BIN_SEARCH
    __shared__ unsigned short s_lut[WD_LUT + 1];
#endif
    const double4* vec = vec_all + (size_t)blockIdx.y * n;
    unsigned long long* hist = hist_all + (size_t)blockIdx.y * levels * bins;
    unsigned int nh = levels * bins;
    for (unsigned int k = threadIdx.x; k < nh; k += blockDim.x) s_hist[k] = 0u;
    for (unsigned int k = threadIdx.x; k < bins; k += blockDim.x) s_lim[k] = limits[k];
    double limit = limits[bins - 1];
#ifndef WD_BIN_SEARCH
    double inv_cell = (double)WD_LUT / limit;  // as AngularBins::inv_cell
    for (unsigned int k = threadIdx.x; k <= WD_LUT; k += blockDim.x) s_lut[k] = lut[k];
#endif

    unsigned int i0 = blockIdx.x * blockDim.x;
    unsigned int i = i0 + threadIdx.x;
    unsigned int last = min(i0 + blockDim.x, n) - 1u;
    unsigned int my_end = i < n ? window_end[i] : 0u;
    unsigned int block_end = window_end[last];
    double4 u = i < n ? vec[i] : make_double4(0.0, 0.0, 0.0, 0.0);
    int lp = (int)u.w;

    for (unsigned int base = i0 + 1u; base < block_end; base += WD_TILE) {
        __syncthreads();
        unsigned int j = base + threadIdx.x;
        if (j < n) tile[threadIdx.x] = vec[j];
        __syncthreads();
        unsigned int len = min((unsigned int)WD_TILE, block_end - base);
        // This thread's partners in the tile: base + k in (i, my_end).
        unsigned int k0 = i + 1u > base ? i + 1u - base : 0u;
        unsigned int k1 = my_end > base ? min(len, my_end - base) : 0u;
        for (unsigned int k = k0; k < k1; ++k) {
            double4 v = tile[k];
            double dx = u.x - v.x;
            double dy = u.y - v.y;
            double dz = u.z - v.z;
            double c2 = dx * dx + dy * dy + dz * dz;
            if (c2 <= limit) {
                // First bin whose limit is not below c2 (bins.rs first_bin).
#ifdef WD_BIN_SEARCH
                unsigned int lo = 0u, hi = bins - 1u;
                while (lo < hi) {
                    unsigned int mid = (lo + hi) >> 1;
                    if (s_lim[mid] < c2) lo = mid + 1u; else hi = mid;
                }
#else
                unsigned int lo = s_lut[min((unsigned int)(c2 * inv_cell), (unsigned int)WD_LUT)];
                while (s_lim[lo] < c2) ++lo;
#endif
                int lq = (int)v.w;
                atomicAdd(&s_hist[(unsigned int)min(lp, lq) * bins + lo], 1u);
            }
        }
    }
    __syncthreads();
    for (unsigned int k = threadIdx.x; k < nh; k += blockDim.x) {
        if (s_hist[k]) atomicAdd(&hist[k], (unsigned long long)s_hist[k]);
    }
}

// ---- Signal injection (inject.rs): the signal of each trial is drawn on the host, uploaded once
// per batch (inject.rs SignalBatch) and counted here, after `scramble` and before `pairs`:
//   remove_replaced: the replaced background events of each trial get their stand-in vector
//                    (inject.rs far_vector), whose squared chord to every other vector exceeds
//                    every bin limit, so `pairs` and `signal_pairs` count nothing for them;
//   signal_pairs:    block = one signal event of one trial (grid.y = trial): its pairs with the
//                    background events of its declination window and with the later signal
//                    events of the trial, into the trial's differential histogram (global
//                    atomics: few pairs pass the limit).

// inject.rs: far_vector.
extern "C" __global__ void remove_replaced(const unsigned int* __restrict__ replaced, unsigned int m, unsigned int n,
                                           double4* __restrict__ vec_all) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    unsigned int p = replaced[(size_t)blockIdx.y * m + i];
    if (p >= n) return;  // u32::MAX: nothing replaced in this slot
    double4* v = vec_all + (size_t)blockIdx.y * n + p;
    *v = make_double4(4.0 * ((double)p + 1.0), 0.0, 0.0, v->w);
}

// count.rs's pair test with the bin lookup of `pairs`, reading the limits and the table from
// global memory (a passing pair is rare here).
__device__ __forceinline__ void wd_signal_pair(double4 u, int lp, double4 v, const double* __restrict__ limits,
                                               const unsigned short* __restrict__ lut, double limit, double inv_cell,
                                               unsigned int bins, unsigned long long* __restrict__ hist) {
    double dx = u.x - v.x;
    double dy = u.y - v.y;
    double dz = u.z - v.z;
    double c2 = dx * dx + dy * dy + dz * dz;
    if (c2 <= limit) {
#ifdef WD_BIN_SEARCH
        unsigned int lo = 0u, hi = bins - 1u;
        while (lo < hi) {
            unsigned int mid = (lo + hi) >> 1;
            if (limits[mid] < c2) lo = mid + 1u; else hi = mid;
        }
#else
        unsigned int lo = lut[min((unsigned int)(c2 * inv_cell), (unsigned int)WD_LUT)];
        while (limits[lo] < c2) ++lo;
#endif
        int lq = (int)v.w;
        atomicAdd(&hist[(unsigned int)min(lp, lq) * bins + lo], 1ull);
    }
}

extern "C" __global__ void signal_pairs(const double4* __restrict__ vec_all, const double4* __restrict__ sig_all,
                                        const uint2* __restrict__ window_all, const double* __restrict__ limits,
                                        const unsigned short* __restrict__ lut, unsigned int n, unsigned int m,
                                        unsigned int bins, unsigned int levels,
                                        unsigned long long* __restrict__ hist_all) {
    unsigned int i = blockIdx.x;
    size_t t = blockIdx.y;
    const double4* vec = vec_all + t * n;
    const double4* sig = sig_all + t * m;
    unsigned long long* hist = hist_all + t * levels * bins;
    double4 u = sig[i];
    uint2 w = window_all[t * m + i];
    double limit = limits[bins - 1];
    double inv_cell = (double)WD_LUT / limit;  // as AngularBins::inv_cell
    int lp = (int)u.w;
    for (unsigned int j = w.x + threadIdx.x; j < w.y; j += blockDim.x)
        wd_signal_pair(u, lp, vec[j], limits, lut, limit, inv_cell, bins, hist);
    for (unsigned int j = i + 1u + threadIdx.x; j < m; j += blockDim.x)
        wd_signal_pair(u, lp, sig[j], limits, lut, limit, inv_cell, bins, hist);
}
