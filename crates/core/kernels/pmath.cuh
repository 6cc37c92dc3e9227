// Portable transcendental functions: the CUDA twin of crates/core/src/pmath.rs, line by line
// (same operations in the same order, same constants), so that with IEEE arithmetic and no FMA
// contraction (NVRTC --fmad=false, the precise build) every function returns the host's bits.
// See the Rust file for the methods and their accuracy.
#pragma once

// How the larger functions are compiled: inlined where the compiler likes (default), or, in a
// kernel with many call sites and divergent lanes, once (`#define PM_FN __device__ __noinline__`
// before the include: the shower kernel, whose inlined copies overflowed the instruction cache).
#ifndef PM_FN
#define PM_FN __device__
#endif

#define PM_LN2_HI 0.6931471803691238
#define PM_LN2_LO 1.9082149292705877e-10
#define PM_INV_LN2 1.4426950408889634
#define PM_SQRT_HALF 0.70710678118654752440
#define PM_PIO2_1 1.5707963267341256
#define PM_PIO2_2 6.077100506303966e-11
#define PM_PIO2_3 2.0222662487959506e-21
#define PM_TWO_OVER_PI 0.63661977236758134308

// IEEE classification by comparisons only (no library calls, the same in every compiler).
__device__ __forceinline__ double pm_inf() { return __longlong_as_double(0x7ff0000000000000ll); }
__device__ __forceinline__ bool pm_isnan(double x) { return x != x; }
__device__ __forceinline__ bool pm_isfinite(double x) { return x - x == 0.0; }

__device__ __forceinline__ double pm_pow2(long long k) {
    return __longlong_as_double((unsigned long long)(k + 1023) << 52);
}

__device__ __forceinline__ double pm_scale(double x, long long k) {
    if (k > 1023) return x * pm_pow2(1023) * pm_pow2(k - 1023);
    if (k < -1022) return x * pm_pow2(-1022) * pm_pow2(k + 1022);
    return x * pm_pow2(k);
}

PM_FN double pm_ln(double x) {
    if (pm_isnan(x) || x < 0.0) return __longlong_as_double(0x7ff8000000000000ll);
    if (x == 0.0) return -pm_inf();
    if (x == pm_inf()) return x;
    unsigned long long bits = (unsigned long long)__double_as_longlong(x);
    long long k = 0;
    if ((bits >> 52) == 0) {
        bits = (unsigned long long)__double_as_longlong(x * pm_pow2(54));
        k = -54;
    }
    k += (long long)(bits >> 52) - 1023;
    double m = __longlong_as_double((long long)((bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull));
    if (m >= 2.0 * PM_SQRT_HALF) {
        m *= 0.5;
        k += 1;
    }
    double f = m - 1.0;
    double s = f / (2.0 + f);
    double z = s * s;
    double z2 = z * z;
    double z4 = z2 * z2;
    double z8 = z4 * z4;
    double a0 = 2.0 / 3.0 + 2.0 / 5.0 * z;
    double a1 = 2.0 / 7.0 + 2.0 / 9.0 * z;
    double a2 = 2.0 / 11.0 + 2.0 / 13.0 * z;
    double a3 = 2.0 / 15.0 + 2.0 / 17.0 * z;
    double a4 = 2.0 / 19.0 + 2.0 / 21.0 * z;
    double b0 = a0 + a1 * z2;
    double b1 = a2 + a3 * z2;
    double b2 = a4 + 2.0 / 23.0 * z2;
    double r = z * ((b0 + b1 * z4) + b2 * z8);
    double hfsq = 0.5 * f * f;
    double kf = (double)k;
    return kf * PM_LN2_HI - ((hfsq - (s * (hfsq + r) + kf * PM_LN2_LO)) - f);
}

__device__ __forceinline__ double pm_exp_reduced(double r) {
    double r2 = r * r;
    double r4 = r2 * r2;
    double r8 = r4 * r4;
    double a0 = 0.5 + r * (1.0 / 6.0);
    double a1 = 1.0 / 24.0 + r * (1.0 / 120.0);
    double a2 = 1.0 / 720.0 + r * (1.0 / 5040.0);
    double a3 = 1.0 / 40320.0 + r * (1.0 / 362880.0);
    double a4 = 1.0 / 3628800.0 + r * (1.0 / 39916800.0);
    double a5 = 1.0 / 479001600.0 + r * (1.0 / 6227020800.0);
    double b0 = a0 + a1 * r2;
    double b1 = a2 + a3 * r2;
    double b2 = a4 + a5 * r2;
    double p = (b0 + b1 * r4) + b2 * r8;
    return 1.0 + (r + r2 * p);
}

PM_FN double pm_exp(double x) {
    if (pm_isnan(x)) return x;
    if (x > 709.782712893384) return pm_inf();
    if (x < -745.1332191019411) return 0.0;
    double k = floor(x * PM_INV_LN2 + 0.5);
    double r = (x - k * PM_LN2_HI) - k * PM_LN2_LO;
    return pm_scale(pm_exp_reduced(r), (long long)k);
}

__device__ __forceinline__ double pm_exp_m1_reduced(double x) {
    double x2 = x * x;
    double x4 = x2 * x2;
    double x8 = x4 * x4;
    double a0 = 0.5 + x * (1.0 / 6.0);
    double a1 = 1.0 / 24.0 + x * (1.0 / 120.0);
    double a2 = 1.0 / 720.0 + x * (1.0 / 5040.0);
    double a3 = 1.0 / 40320.0 + x * (1.0 / 362880.0);
    double a4 = 1.0 / 3628800.0 + x * (1.0 / 39916800.0);
    double a5 = 1.0 / 479001600.0 + x * (1.0 / 6227020800.0);
    double b0 = a0 + a1 * x2;
    double b1 = a2 + a3 * x2;
    double b2 = a4 + a5 * x2;
    double d0 = b0 + b1 * x4;
    double d1 = b2 + 1.0 / 87178291200.0 * x4;
    return x + x2 * (d0 + d1 * x8);
}

PM_FN double pm_exp_m1(double x) {
    if (pm_isnan(x)) return x;
    if (fabs(x) < 0.34657359027997265) return pm_exp_m1_reduced(x);
    if (fabs(x) > 40.0) return pm_exp(x) - 1.0;
    double k = floor(x * PM_INV_LN2 + 0.5);
    double r = (x - k * PM_LN2_HI) - k * PM_LN2_LO;
    double p = pm_pow2((long long)k);
    return p * pm_exp_m1_reduced(r) + (p - 1.0);
}

PM_FN double pm_ln_1p(double x) {
    double u = 1.0 + x;
    if (u == 1.0) return x;
    if (u == pm_inf()) return u;
    return pm_ln(u) * x / (u - 1.0);
}

PM_FN double pm_pow(double x, double y) {
    if (y == 0.0) return 1.0;
    if (x == 0.0) return y > 0.0 ? 0.0 : pm_inf();
    if (x == 1.0) return 1.0;
    return pm_exp(y * pm_ln(x));
}

PM_FN double pm_powi(double x, int n) {
    double base = n < 0 ? 1.0 / x : x;
    unsigned int e = n < 0 ? (unsigned int)(-(long long)n) : (unsigned int)n;
    double acc = 1.0;
    while (e > 0) {
        if (e & 1u) acc *= base;
        base *= base;
        e >>= 1;
    }
    return acc;
}

__device__ __forceinline__ double pm_sin_reduced(double r) {
    double z = r * r;
    double p = -1.0 / 355687428096000.0;
    p = p * z + 1.0 / 1307674368000.0;
    p = p * z - 1.0 / 6227020800.0;
    p = p * z + 1.0 / 39916800.0;
    p = p * z - 1.0 / 362880.0;
    p = p * z + 1.0 / 5040.0;
    p = p * z - 1.0 / 120.0;
    p = p * z + 1.0 / 6.0;
    return r - r * z * p;
}

__device__ __forceinline__ double pm_cos_reduced(double r) {
    double z = r * r;
    double p = -1.0 / 6402373705728000.0;
    p = p * z + 1.0 / 20922789888000.0;
    p = p * z - 1.0 / 87178291200.0;
    p = p * z + 1.0 / 479001600.0;
    p = p * z - 1.0 / 3628800.0;
    p = p * z + 1.0 / 40320.0;
    p = p * z - 1.0 / 720.0;
    p = p * z + 1.0 / 24.0;
    double hz = 0.5 * z;
    double w = 1.0 - hz;
    return w + (((1.0 - w) - hz) + z * z * p);
}

PM_FN void pm_sincos(double x, double* s_out, double* c_out) {
    if (!pm_isfinite(x)) {
        *s_out = __longlong_as_double(0x7ff8000000000000ll);
        *c_out = *s_out;
        return;
    }
    double k = floor(x * PM_TWO_OVER_PI + 0.5);
    double r = ((x - k * PM_PIO2_1) - k * PM_PIO2_2) - k * PM_PIO2_3;
    double s = pm_sin_reduced(r), c = pm_cos_reduced(r);
    long long q = ((long long)k % 4 + 4) % 4;
    if (q == 0) { *s_out = s; *c_out = c; }
    else if (q == 1) { *s_out = c; *c_out = -s; }
    else if (q == 2) { *s_out = -s; *c_out = -c; }
    else { *s_out = -c; *c_out = s; }
}

PM_FN double pm_sin(double x) {
    if (!pm_isfinite(x)) return __longlong_as_double(0x7ff8000000000000ll);
    double k = floor(x * PM_TWO_OVER_PI + 0.5);
    double r = ((x - k * PM_PIO2_1) - k * PM_PIO2_2) - k * PM_PIO2_3;
    long long q = ((long long)k % 4 + 4) % 4;
    if (q == 0) return pm_sin_reduced(r);
    if (q == 1) return pm_cos_reduced(r);
    if (q == 2) return -pm_sin_reduced(r);
    return -pm_cos_reduced(r);
}
PM_FN double pm_cos(double x) {
    if (!pm_isfinite(x)) return __longlong_as_double(0x7ff8000000000000ll);
    double k = floor(x * PM_TWO_OVER_PI + 0.5);
    double r = ((x - k * PM_PIO2_1) - k * PM_PIO2_2) - k * PM_PIO2_3;
    long long q = ((long long)k % 4 + 4) % 4;
    if (q == 0) return pm_cos_reduced(r);
    if (q == 1) return -pm_sin_reduced(r);
    if (q == 2) return -pm_cos_reduced(r);
    return pm_sin_reduced(r);
}

PM_FN double pm_cbrt(double x) {
    if (x == 0.0 || !pm_isfinite(x)) return x;
    double a = fabs(x);
    unsigned long long bits = (unsigned long long)__double_as_longlong(a);
    long long k = (long long)(bits >> 52) - 1023;
    double m = __longlong_as_double((long long)((bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull));
    if ((bits >> 52) == 0) {
        unsigned long long b = (unsigned long long)__double_as_longlong(a * pm_pow2(54));
        k = (long long)(b >> 52) - 1023 - 54;
        m = __longlong_as_double((long long)((b & 0x000fffffffffffffull) | 0x3ff0000000000000ull));
    }
    long long r = ((k % 3) + 3) % 3;
    long long q = (k - r) / 3;
    m = m * pm_pow2(r);
    double y = 1.0 + (m - 1.0) / 7.0;
    for (int i = 0; i < 5; ++i) y -= (y * y * y - m) / (3.0 * y * y);
    y = pm_scale(y, q);
    return x < 0.0 ? -y : y;
}
