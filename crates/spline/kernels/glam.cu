// GLAM's array arithmetic on the GPU: the twins of crates/spline/src/fit/glam.rs (Currie, Durban
// & Eilers 2006, JRSS B 68:259, §2). Products and sums are rounded one by one (__dmul_rn,
// __dadd_rn) in the CPU's order, so the arrays equal the CPU's bit for bit.
//
//   rho           — ρ(X, A): one thread per element of the result (other axes first, X's rows
//                   last); X is given by rows (CSR), each row's entries in ascending column, the
//                   order in which the CPU's tile accumulates them.
//   normal_matrix — the dense BᵀWB from the banded inner-product array: one thread per
//                   (coefficient row, offset in the band's support); pure copies.

extern "C" __global__ void rho(const unsigned* __restrict__ row_off, const unsigned* __restrict__ cols,
                               const double* __restrict__ vals, unsigned rows, const double* __restrict__ a,
                               unsigned long long rest, double* __restrict__ out) {
    const unsigned long long idx = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= rest * rows) return;
    const unsigned long long u = idx / rows;
    const unsigned row = (unsigned)(idx % rows);
    double acc = 0.0;
    for (unsigned e = row_off[row]; e < row_off[row + 1]; e++)
        acc = __dadd_rn(acc, __dmul_rn(vals[e], a[(unsigned long long)cols[e] * rest + u]));
    out[u * rows + row] = acc;
}

// Must match NormalDev in crates/spline/src/fit/gpu.rs.
struct NormalDev {
    unsigned long long cs[8];  // C-order strides of the coefficients
    unsigned long long bs[8];  // and of the band array
    int n_ax[8];               // coefficients per axis
    int w[8];                  // band width 2k + 1 per axis
    int k[8];                  // degree per axis
    int nd;
    int support;               // Π w
    unsigned long long n;      // coefficients
};

extern "C" __global__ void normal_matrix(const NormalDev p, const double* __restrict__ band, double* __restrict__ m) {
    const unsigned long long idx = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= p.n * (unsigned long long)p.support) return;
    const unsigned long long row = idx / p.support;
    int s = (int)(idx % p.support);
    unsigned long long idxd[8];
    unsigned long long rem = row;
    for (int d = 0; d < p.nd; d++) {
        idxd[d] = rem / p.cs[d];
        rem %= p.cs[d];
    }
    unsigned long long col = 0, at = 0;
    for (int d = p.nd - 1; d >= 0; d--) {
        const int delta = s % p.w[d];
        s /= p.w[d];
        const long long j = (long long)idxd[d] + delta - p.k[d];
        if (j < 0 || j >= p.n_ax[d]) return;
        col += (unsigned long long)j * p.cs[d];
        at += (idxd[d] * p.w[d] + delta) * p.bs[d];
    }
    m[row * p.n + col] = band[at];
}
