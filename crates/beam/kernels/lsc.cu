// Longitudinal space charge on the GPU (spec §3), the twin of src/lsc.rs step by step:
//   lsc_times        steps 1, 2, 6: t = s/(βc), min/max of t, sums for σx, σy (fused)
//   hist_*           step 3 (three strategies, integer counts) ; hist_bounds for `sort`
//   lsc_current      steps 4, 5: max count, I_b = n_b q/Δt zero-padded to 2N
//   (cuFFT D2Z)      step 5
//   lsc_impedance    step 7: multiply by i·Im Z(ω)·L_eff·filter
//   (cuFFT Z2D)      step 8
//   lsc_kick         steps 9, 10: interpolate V, exact energy change, s rescaled (fused)
// Reduction slots in `red` (double[RED_SLOTS]): see the RED_* names.

#define C_LIGHT 299792458.0
#define Z0 376.730313412
#define PI_D 3.141592653589793

enum { RED_TMIN = 0, RED_TMAX, RED_SX, RED_SXX, RED_SY, RED_SYY, RED_N, RED_MAXCOUNT, RED_SLOTS };

// Order-preserving map of doubles onto unsigned 64-bit integers (for atomic min/max).
__device__ __forceinline__ unsigned long long ordered(double v) {
    unsigned long long b = __double_as_longlong(v);
    return (b & 0x8000000000000000ull) ? ~b : (b | 0x8000000000000000ull);
}
__device__ __forceinline__ double unordered(unsigned long long b) {
    return __longlong_as_double((b & 0x8000000000000000ull) ? (b & 0x7fffffffffffffffull) : ~b);
}

__device__ __forceinline__ double time_of(double s, double delta, double p0) {
    double p = p0 * (1.0 + delta);
    double beta = p / sqrt(1.0 + p * p);
    return s / (beta * C_LIGHT);
}

__device__ __forceinline__ unsigned bin_of(double t, double tmin, double dt, unsigned bins) {
    unsigned b = (unsigned)((t - tmin) / dt);
    return b >= bins ? bins - 1 : b;
}

// min/max slots hold ordered() integers; ordered_red[0] = min, [1] = max.
extern "C" __global__ void lsc_times(const double* __restrict__ x, const double* __restrict__ y,
                                     const double* __restrict__ s, const double* __restrict__ delta,
                                     const unsigned* __restrict__ lost, unsigned n, double p0,
                                     double* __restrict__ t, unsigned long long* __restrict__ ordered_red,
                                     double* __restrict__ red) {
    __shared__ double sh[5][256];
    __shared__ unsigned long long mm[2][256];
    double sx = 0, sxx = 0, sy = 0, syy = 0, cnt = 0;
    unsigned long long lo = ~0ull, hi = 0ull;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        if (lost[i]) { t[i] = 0.0; continue; }
        double ti = time_of(s[i], delta[i], p0);
        t[i] = ti;
        unsigned long long o = ordered(ti);
        lo = o < lo ? o : lo;
        hi = o > hi ? o : hi;
        sx += x[i]; sxx += x[i] * x[i]; sy += y[i]; syy += y[i] * y[i]; cnt += 1.0;
    }
    unsigned k = threadIdx.x;
    sh[0][k] = sx; sh[1][k] = sxx; sh[2][k] = sy; sh[3][k] = syy; sh[4][k] = cnt;
    mm[0][k] = lo; mm[1][k] = hi;
    __syncthreads();
    for (unsigned w = blockDim.x / 2; w > 0; w >>= 1) {
        if (k < w) {
            for (int q = 0; q < 5; ++q) sh[q][k] += sh[q][k + w];
            mm[0][k] = mm[0][k + w] < mm[0][k] ? mm[0][k + w] : mm[0][k];
            mm[1][k] = mm[1][k + w] > mm[1][k] ? mm[1][k + w] : mm[1][k];
        }
        __syncthreads();
    }
    if (k == 0) {
        atomicMin(&ordered_red[0], mm[0][0]);
        atomicMax(&ordered_red[1], mm[1][0]);
        atomicAdd(&red[RED_SX], sh[0][0]);
        atomicAdd(&red[RED_SXX], sh[1][0]);
        atomicAdd(&red[RED_SY], sh[2][0]);
        atomicAdd(&red[RED_SYY], sh[3][0]);
        atomicAdd(&red[RED_N], sh[4][0]);
    }
}

// One thread: decode min/max into red[RED_TMIN/TMAX].
extern "C" __global__ void lsc_minmax(const unsigned long long* __restrict__ ordered_red, double* __restrict__ red) {
    red[RED_TMIN] = unordered(ordered_red[0]);
    red[RED_TMAX] = unordered(ordered_red[1]);
}

__device__ __forceinline__ double bin_width(const double* red, unsigned bins) {
    return (red[RED_TMAX] - red[RED_TMIN]) / (double)bins;
}

// Strategy block-atomic: private histogram per block in shared memory, added at the end.
extern "C" __global__ void hist_block_atomic(const double* __restrict__ t, const unsigned* __restrict__ lost, unsigned n,
                                             const double* __restrict__ red, unsigned bins, unsigned* __restrict__ counts) {
    extern __shared__ unsigned h[];
    for (unsigned b = threadIdx.x; b < bins; b += blockDim.x) h[b] = 0;
    __syncthreads();
    double tmin = red[RED_TMIN], dt = bin_width(red, bins);
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        if (!lost[i]) atomicAdd(&h[bin_of(t[i], tmin, dt, bins)], 1u);
    }
    __syncthreads();
    for (unsigned b = threadIdx.x; b < bins; b += blockDim.x)
        if (h[b]) atomicAdd(&counts[b], h[b]);
}

#define SORT_BLOCK 1024  // keys per block of hist_block_sort_scan (512 threads × 2)

// Strategy block-sort-scan: each block sorts its 1024 bin indices (bitonic, shared memory);
// the run of equal keys [start, end) adds end − start to its bin: the thread at a run's start
// subtracts its index and the thread at its end adds end (modular arithmetic, exact result).
extern "C" __global__ void hist_block_sort_scan(const double* __restrict__ t, const unsigned* __restrict__ lost, unsigned n,
                                                const double* __restrict__ red, unsigned bins, unsigned* __restrict__ counts) {
    __shared__ unsigned key[SORT_BLOCK];
    double tmin = red[RED_TMIN], dt = bin_width(red, bins);
    for (unsigned base = blockIdx.x * SORT_BLOCK; base < n; base += gridDim.x * SORT_BLOCK) {
        for (unsigned j = threadIdx.x; j < SORT_BLOCK; j += blockDim.x) {
            unsigned i = base + j;
            key[j] = (i < n && !lost[i]) ? bin_of(t[i], tmin, dt, bins) : 0xffffffffu;
        }
        __syncthreads();
        for (unsigned k = 2; k <= SORT_BLOCK; k <<= 1) {
            for (unsigned j = k >> 1; j > 0; j >>= 1) {
                for (unsigned a = threadIdx.x; a < SORT_BLOCK; a += blockDim.x) {
                    unsigned b = a ^ j;
                    if (b > a) {
                        bool up = (a & k) == 0;
                        unsigned ka = key[a], kb = key[b];
                        if ((ka > kb) == up) { key[a] = kb; key[b] = ka; }
                    }
                }
                __syncthreads();
            }
        }
        for (unsigned a = threadIdx.x; a < SORT_BLOCK; a += blockDim.x) {
            unsigned k = key[a];
            if (k == 0xffffffffu) continue;
            if (a == 0 || key[a - 1] != k) atomicAdd(&counts[k], 0u - a);
            if (a == SORT_BLOCK - 1 || key[a + 1] != k) atomicAdd(&counts[k], a + 1);
        }
        __syncthreads();
    }
}

// Strategy sort: bin index of every particle (lost and padding: 0xffffffff) ...
extern "C" __global__ void hist_keys(const double* __restrict__ t, const unsigned* __restrict__ lost, unsigned n,
                                     unsigned padded, const double* __restrict__ red, unsigned bins,
                                     unsigned* __restrict__ keys) {
    double tmin = red[RED_TMIN], dt = bin_width(red, bins);
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < padded; i += gridDim.x * blockDim.x)
        keys[i] = (i < n && !lost[i]) ? bin_of(t[i], tmin, dt, bins) : 0xffffffffu;
}

// ... one step (k, j) of a global bitonic sort of the power-of-two key array ...
extern "C" __global__ void bitonic_step(unsigned* __restrict__ keys, unsigned padded, unsigned k, unsigned j) {
    for (unsigned a = blockIdx.x * blockDim.x + threadIdx.x; a < padded; a += gridDim.x * blockDim.x) {
        unsigned b = a ^ j;
        if (b > a) {
            bool up = (a & k) == 0;
            unsigned ka = keys[a], kb = keys[b];
            if ((ka > kb) == up) { keys[a] = kb; keys[b] = ka; }
        }
    }
}

// ... then each bin's count from two lower bounds (binary search) in the sorted keys.
__device__ unsigned lower_bound(const unsigned* keys, unsigned n, unsigned v) {
    unsigned lo = 0, hi = n;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (keys[mid] < v) lo = mid + 1; else hi = mid;
    }
    return lo;
}
extern "C" __global__ void hist_bounds(const unsigned* __restrict__ keys, unsigned padded, unsigned bins, unsigned* __restrict__ counts) {
    unsigned b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < bins) counts[b] = lower_bound(keys, padded, b + 1) - lower_bound(keys, padded, b);
}

// Steps 4, 5: maximum count and the zero-padded current I_b = n_b q / Δt (length 2·bins).
extern "C" __global__ void lsc_current(const unsigned* __restrict__ counts, unsigned bins, double q,
                                       double* __restrict__ red, double* __restrict__ current) {
    double dt = bin_width(red, bins);
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < 2 * bins; i += gridDim.x * blockDim.x) {
        if (i < bins) {
            current[i] = (double)counts[i] * q / dt;
            atomicMax((unsigned long long*)&red[RED_MAXCOUNT], (unsigned long long)counts[i]);
        } else {
            current[i] = 0.0;
        }
    }
}

// I1, K1, I1·K1: the formulas of src/bessel.rs.
__device__ double bessel_i1(double x) {
    double q = 0.25 * x * x, term = 0.5 * x, sum = term;
    for (int k = 1; k < 200; ++k) {
        term *= q / ((double)k * (double)(k + 1));
        sum += term;
        if (term < sum * 1e-17) break;
    }
    return sum;
}
__device__ double bessel_k1(double x) {
    if (x <= 2.0) {
        const double euler = 0.5772156649015329;
        double q = 0.25 * x * x, h_k = 0.0, coef = 1.0, sum = 0.0;
        for (int k = 0; k < 100; ++k) {
            double h_k1 = h_k + 1.0 / (double)(k + 1);
            double term = coef * (h_k + h_k1 - 2.0 * euler);
            sum += term;
            if (k > 2 && fabs(term) < 1e-18 * fabs(sum)) break;
            h_k = h_k1;
            coef *= q / ((double)(k + 1) * (double)(k + 2));
        }
        return 1.0 / x + log(0.5 * x) * bessel_i1(x) - 0.25 * x * sum;
    }
    double upper = acosh(1.0 + 40.0 / x), h = 0.1;
    int n = (int)ceil(upper / h);
    double sum = 0.5 * exp(-x);
    for (int j = 1; j <= n; ++j) {
        double c = cosh((double)j * h);
        sum += exp(-x * c) * c;
    }
    return sum * h;
}
__device__ double bessel_i1k1(double x) {
    if (x <= 40.0) return bessel_i1(x) * bessel_k1(x);
    double u = 1.0 / (x * x);
    return 0.5 / x * (1.0 - u * (3.0 / 8.0 + u * (45.0 / 128.0 + u * (4725.0 / 3072.0 + u * (1488375.0 / 98304.0)))));
}

__device__ double taper(double r, double c0, double c1) {
    if (r <= c0) return 1.0;
    if (c1 <= c0 || r >= c1) return 0.0;
    return 0.5 * (1.0 + cos(PI_D * (r - c0) / (c1 - c0)));
}

struct LscDev {
    double beta0, gamma0, l_eff, radius_factor;
    double low0, low1, high0, high1;
    double p0, mass_ev;
    unsigned bins, interpolate;
};

// Step 7: spectrum (cuFFT D2Z output, M/2+1 values) × i·Im Z(ω_j)·L_eff·filter(j).
extern "C" __global__ void lsc_impedance(double2* __restrict__ spec, const double* __restrict__ red, LscDev p) {
    unsigned m = 2 * p.bins;
    unsigned j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j > m / 2) return;
    double nn = red[RED_N];
    double mx = red[RED_SX] / nn, my = red[RED_SY] / nn;
    double sx = sqrt(fmax(red[RED_SXX] / nn - mx * mx, 0.0));
    double sy = sqrt(fmax(red[RED_SYY] / nn - my * my, 0.0));
    double rb = p.radius_factor * 0.5 * (sx + sy);
    double dt = bin_width(red, p.bins);
    double im = 0.0;
    if (j != 0 && 2 * j != m) {
        double omega = 2.0 * PI_D * (double)j / ((double)m * dt);
        double k = omega / (p.beta0 * C_LIGHT);
        double r = (double)j / (0.5 * (double)m);
        double xi = fabs(k) * rb / p.gamma0;
        double z = -Z0 / (PI_D * k * rb * rb) * (1.0 - 2.0 * bessel_i1k1(xi));
        double f = 1.0;
        if (p.high0 >= 0.0) f *= taper(r, p.high0, p.high1);
        if (p.low0 >= 0.0) f *= 1.0 - taper(r, p.low0, p.low1);
        im = z * p.l_eff * f;
    }
    double2 c = spec[j];
    spec[j] = make_double2(-c.y * im, c.x * im);
}

// Steps 9, 10: voltage at each particle's t (volts = inverse FFT / M), exact energy change,
// s rescaled so t is continuous.
extern "C" __global__ void lsc_kick(double* __restrict__ s, double* __restrict__ delta, const unsigned* __restrict__ lost,
                                    const double* __restrict__ t, unsigned n, const double* __restrict__ volts_raw,
                                    const double* __restrict__ red, LscDev p) {
    unsigned bins = p.bins;
    double m = 2.0 * (double)bins;
    double tmin = red[RED_TMIN], dt = bin_width(red, bins);
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        if (lost[i]) continue;
        double ti = t[i], v;
        if (!p.interpolate) {
            v = volts_raw[bin_of(ti, tmin, dt, bins)] / m;
        } else {
            double u = (ti - tmin) / dt - 0.5;
            if (u <= 0.0) v = volts_raw[0] / m;
            else {
                unsigned b = (unsigned)u;
                if (b >= bins - 1) v = volts_raw[bins - 1] / m;
                else {
                    double f = u - (double)b;
                    v = (volts_raw[b] / m) * (1.0 - f) + (volts_raw[b + 1] / m) * f;
                }
            }
        }
        double pp = p.p0 * (1.0 + delta[i]);
        double e = sqrt(1.0 + pp * pp);
        double de = -v / p.mass_ev;
        double p_new = sqrt(pp * pp + de * (2.0 * e + de));
        double beta = pp / e;
        double beta_new = p_new / sqrt(1.0 + p_new * p_new);
        delta[i] = p_new / p.p0 - 1.0;
        s[i] = s[i] * (beta_new / beta);
    }
}
