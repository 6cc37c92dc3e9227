// Philox4x32-10 (Salmon et al., SC'11; Random123), the CUDA twin of crates/core/src/rng.rs.
// Same constants, same 32-bit arithmetic, same stream layout: key = seed, counter =
// [draw block, stream tag, entity lo, entity hi]; each block gives four words consumed in order.
// The draws below mirror RandomStream's methods one for one (names and order of draws).
#pragma once

// Inlined at every draw by default; `#define WD_PHILOX_FN __device__ __noinline__` before the include
// compiles it once (the shower kernel: instruction-cache pressure).
#ifndef WD_PHILOX_FN
#define WD_PHILOX_FN __device__ __forceinline__
#endif

#define WD_PHILOX_M0 0xD2511F53u
#define WD_PHILOX_M1 0xCD9E8D57u
#define WD_PHILOX_W0 0x9E3779B9u
#define WD_PHILOX_W1 0xBB67AE85u

WD_PHILOX_FN void wd_philox4x32_10(unsigned int c[4], unsigned int k0, unsigned int k1) {
#pragma unroll
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            k0 += WD_PHILOX_W0;
            k1 += WD_PHILOX_W1;
        }
        unsigned int hi0 = __umulhi(WD_PHILOX_M0, c[0]), lo0 = WD_PHILOX_M0 * c[0];
        unsigned int hi1 = __umulhi(WD_PHILOX_M1, c[2]), lo1 = WD_PHILOX_M1 * c[2];
        unsigned int n0 = hi1 ^ c[1] ^ k0, n2 = hi0 ^ c[3] ^ k1;
        c[0] = n0; c[1] = lo1; c[2] = n2; c[3] = lo0;
    }
}

struct WdRng {
    unsigned int key0, key1, tag, ent_lo, ent_hi, block;
    unsigned int buf[4];
    int used;
};

__device__ __forceinline__ WdRng wd_rng(unsigned long long seed, unsigned int tag, unsigned long long entity) {
    WdRng r;
    r.key0 = (unsigned int)seed; r.key1 = (unsigned int)(seed >> 32);
    r.tag = tag; r.ent_lo = (unsigned int)entity; r.ent_hi = (unsigned int)(entity >> 32);
    r.block = 0; r.used = 4;
    r.buf[0] = r.buf[1] = r.buf[2] = r.buf[3] = 0;
    return r;
}

__device__ __forceinline__ unsigned int wd_next_u32(WdRng& r) {
    if (r.used == 4) {
        r.buf[0] = r.block; r.buf[1] = r.tag; r.buf[2] = r.ent_lo; r.buf[3] = r.ent_hi;
        wd_philox4x32_10(r.buf, r.key0, r.key1);
        r.block += 1;
        r.used = 0;
    }
    // Consume from the front and shift (no dynamic indexing: the buffer stays in registers, and
    // no compare chain): the same words in the same order as the Rust stream.
    unsigned int x = r.buf[0];
    r.buf[0] = r.buf[1]; r.buf[1] = r.buf[2]; r.buf[2] = r.buf[3];
    r.used += 1;
    return x;
}

// The next whole block of stream (seed, tag, entity) at block index `block` (RandomStream::block4:
// the rest of the current block is discarded). A loop drawing one block per iteration keeps
// only the block counter, and evaluates Philox at one place per iteration for all lanes.
__device__ __forceinline__ void wd_block4(unsigned long long seed, unsigned int tag, unsigned long long entity, unsigned int block, unsigned int w[4]) {
    w[0] = block; w[1] = tag; w[2] = (unsigned int)entity; w[3] = (unsigned int)(entity >> 32);
    wd_philox4x32_10(w, (unsigned int)seed, (unsigned int)(seed >> 32));
}

// Blocks `block` and `block + 1` of the stream at once (a and b, the same words as two
// wd_block4 calls): the two chains of rounds are independent, so their multiplies interleave.
__device__ __forceinline__ void wd_block4_pair(unsigned long long seed, unsigned int tag, unsigned long long entity, unsigned int block, unsigned int a[4], unsigned int b[4]) {
    unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)(seed >> 32);
    a[0] = block; a[1] = tag; a[2] = (unsigned int)entity; a[3] = (unsigned int)(entity >> 32);
    b[0] = block + 1u; b[1] = a[1]; b[2] = a[2]; b[3] = a[3];
#pragma unroll
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            k0 += WD_PHILOX_W0;
            k1 += WD_PHILOX_W1;
        }
        unsigned int ahi0 = __umulhi(WD_PHILOX_M0, a[0]), alo0 = WD_PHILOX_M0 * a[0];
        unsigned int bhi0 = __umulhi(WD_PHILOX_M0, b[0]), blo0 = WD_PHILOX_M0 * b[0];
        unsigned int ahi1 = __umulhi(WD_PHILOX_M1, a[2]), alo1 = WD_PHILOX_M1 * a[2];
        unsigned int bhi1 = __umulhi(WD_PHILOX_M1, b[2]), blo1 = WD_PHILOX_M1 * b[2];
        unsigned int an0 = ahi1 ^ a[1] ^ k0, an2 = ahi0 ^ a[3] ^ k1;
        unsigned int bn0 = bhi1 ^ b[1] ^ k0, bn2 = bhi0 ^ b[3] ^ k1;
        a[0] = an0; a[1] = alo1; a[2] = an2; a[3] = alo0;
        b[0] = bn0; b[1] = blo1; b[2] = bn2; b[3] = blo0;
    }
}

// Uniform in (0, 1] from one word: ((x >> 8) + 1) * 2^-24.
__device__ __forceinline__ float wd_u32_to_uniform(unsigned int x) {
    return (float)((x >> 8) + 1u) * (1.0f / 16777216.0f);
}

// Uniform in (0, 1].
__device__ __forceinline__ float wd_uniform(WdRng& r) { return wd_u32_to_uniform(wd_next_u32(r)); }

// Uniform in (0, 1] with 53 bits: hi word first.
__device__ __forceinline__ double wd_uniform_f64(WdRng& r) {
    unsigned long long hi = wd_next_u32(r);
    unsigned long long lo = wd_next_u32(r);
    unsigned long long x = (hi << 32) | lo;
    return (double)((x >> 11) + 1ull) * (1.0 / 9007199254740992.0);
}

__device__ __forceinline__ float wd_exponential(WdRng& r) { return -logf(wd_uniform(r)); }

// Box–Muller, one value per two uniforms.
__device__ __forceinline__ double wd_normal(WdRng& r) {
    double u1 = wd_uniform_f64(r);
    double u2 = wd_uniform_f64(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

// Gamma(a, 1): Marsaglia & Tsang with the a < 1 boost, same draw order as the Rust twin.
__device__ __forceinline__ double wd_gamma(WdRng& r, double a) {
    double boost = 1.0;
    bool boosted = false;
    if (a < 1.0) {
        double u = wd_uniform_f64(r);
        boost = pow(u, 1.0 / a);
        boosted = true;
        a = a + 1.0;
    }
    double d = a - 1.0 / 3.0;
    double c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x = wd_normal(r);
        double v = 1.0 + c * x;
        if (v <= 0.0) continue;
        v = v * v * v;
        double u = wd_uniform_f64(r);
        if (log(u) < 0.5 * x * x + d - d * v + d * log(v)) {
            return boosted ? d * v * boost : d * v;
        }
    }
}
