// The tabulation kernels' 128-bit fixed-point squares, shared by tabulate.cu and sampled.cu
// (tabulate/gpu.rs KERNEL_SRC and SAMPLED_SRC assemble propagate.cu, this file, then the kernel;
// the Rust twin is mod.rs Histogram's u128 sums). Integer atomics: the order of the additions
// (threads, launches, GPUs) does not change the sums.

#define WD_TWO64 18446744073709551616.0

// Add an integer-valued double v (0 ≤ v < 2¹²⁸) to a u128 held as (low, high) words.
__device__ __forceinline__ void add_u128(unsigned long long* p, double v) {
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
