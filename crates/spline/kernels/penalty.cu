// The difference penalty λ·(I ⊗ … ⊗ DᵀD ⊗ … ⊗ I) added to the dense normal matrix on the GPU:
// the twin of `add_kron_penalty` in crates/spline/src/fit/penalty.rs (Eilers & Marx 1996;
// Currie, Durban & Eilers 2006 §3.1), one thread per row, each addition rounded as the CPU's.

extern "C" __global__ void add_kron_penalty(double* m, unsigned long long n, unsigned long long stride, int na,
                                            double lambda, const double* __restrict__ dtd, int p) {
    const unsigned long long row = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n) return;
    const int i = (int)(row / stride % na);
    const int lo = i > p ? i - p : 0;
    const int hi = i + p < na - 1 ? i + p : na - 1;
    double* out = m + row * n;
    for (int j = lo; j <= hi; j++) {
        const unsigned long long col = row + (unsigned long long)j * stride - (unsigned long long)i * stride;
        out[col] = __dadd_rn(out[col], __dmul_rn(lambda, dtd[i * na + j]));
    }
}
