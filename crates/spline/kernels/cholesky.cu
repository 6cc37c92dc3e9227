// The dense Cholesky factor A = L Lᵀ of the fitter's normal matrix and its two triangular
// solves on the GPU: the twins of crates/spline/src/fit/cholesky.rs, kernel for function, with
// the same blocks (64 columns), the same floating-point operations in the same order (every sum
// is `dot`, the twin of `dot`: four accumulators over strides of four, then the tail; products
// and sums rounded one by one with __dmul_rn/__dadd_rn, never fused) and IEEE division and
// square root, so the factor and the solution equal the CPU's bit for bit.
// (G. H. Golub & C. F. Van Loan, "Matrix Computations", 4th ed., Algorithm 4.2.1 and §4.2.9.)
//
// Kernels, launched per block column kb (b columns) by crates/spline/src/fit/gpu.rs:
//   factor_diagonal_block — one block of 64 threads: the b × b diagonal block.
//   solve_panel           — one thread per row below the block.
//   update_trailing       — 64 × 64 tiles of the lower trailing matrix, 16 × 16 threads.
//   solve_lower / solve_upper — one block: column sweeps of the forward and backward solves.

// Must match PivotStatus in crates/spline/src/fit/gpu.rs.
struct PivotStatus {
    long long index;  // −1 while every pivot was positive
    double pivot;
    double diagonal;
};

// Twin of `dot` (cholesky.rs).
__device__ __forceinline__ double dot(const double* x, const double* y, long long len) {
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    const long long m4 = len / 4 * 4;
    for (long long p = 0; p < m4; p += 4) {
        s0 = __dadd_rn(s0, __dmul_rn(x[p], y[p]));
        s1 = __dadd_rn(s1, __dmul_rn(x[p + 1], y[p + 1]));
        s2 = __dadd_rn(s2, __dmul_rn(x[p + 2], y[p + 2]));
        s3 = __dadd_rn(s3, __dmul_rn(x[p + 3], y[p + 3]));
    }
    double t = __dadd_rn(__dadd_rn(s0, s1), __dadd_rn(s2, s3));
    for (long long p = m4; p < len; p++) t = __dadd_rn(t, __dmul_rn(x[p], y[p]));
    return t;
}

// Phase 1 (`factor_diagonal_block`): thread t owns row kb + t of the block. Column j: its
// owner computes the pivot, then the rows below it divide by it.
extern "C" __global__ void factor_diagonal_block(double* a, long long n, long long kb, int b, const double* diag,
                                                 double tol, PivotStatus* status) {
    __shared__ int stop;
    const int t = threadIdx.x;
    if (t == 0) stop = 0;
    __syncthreads();
    for (int jj = 0; jj < b; jj++) {
        const long long j = kb + jj;
        double* rj = a + j * n;
        if (t == jj) {
            const double s = __dsub_rn(rj[j], dot(rj + kb, rj + kb, jj));
            if (isnan(s) || s <= __dmul_rn(tol, diag[j]) || !isfinite(s)) {
                status->index = j;
                status->pivot = s;
                status->diagonal = diag[j];
                stop = 1;
            } else {
                rj[j] = __dsqrt_rn(s);
            }
        }
        __syncthreads();
        if (stop) return;
        if (t > jj && t < b) {
            double* ri = a + (kb + t) * n;
            ri[j] = __ddiv_rn(__dsub_rn(ri[j], dot(ri + kb, rj + kb, jj)), rj[j]);
        }
        __syncthreads();
    }
}

// Phase 2 (`solve_panel`): row i ≥ kb + b solves L_21 L_11ᵀ = A_21 by forward substitution.
extern "C" __global__ void solve_panel(double* a, long long n, long long kb, int b) {
    const long long i = kb + b + (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double* ri = a + i * n;
    for (int c = 0; c < b; c++) {
        const double* lc = a + (kb + c) * n + kb;
        const double s = __dsub_rn(ri[kb + c], dot(ri + kb, lc, c));
        ri[kb + c] = __ddiv_rn(s, lc[c]);
    }
}

#define TT 64   // tile edge (rows and columns of the trailing matrix)
#define KC 32   // panel columns staged in shared memory at a time

// Phase 3 (`update_trailing`): A_22 −= L_21 L_21ᵀ on the lower triangle. Block (x, y) owns the
// 64 × 64 tile at tile row y, tile column x ≤ y; thread (tx, ty) owns rows ty + 16e and columns
// tx + 16f (e, f < 4), each element with the four accumulators of `dot` over the panel's b
// columns (b = 64 whenever a trailing matrix exists; any b is handled).
extern "C" __global__ void __launch_bounds__(256, 1) update_trailing(double* a, long long n, long long kb, int b) {
    const int tr = blockIdx.y, tc = blockIdx.x;
    if (tc > tr) return;
    const long long end = kb + b, m = n - end;
    const long long r0 = (long long)tr * TT, c0 = (long long)tc * TT;
    __shared__ double rs[KC][TT + 1];
    __shared__ double cs[KC][TT + 1];
    const int tx = threadIdx.x, ty = threadIdx.y, t = ty * 16 + tx;
    double acc[4][4][4];
#pragma unroll
    for (int e = 0; e < 4; e++)
#pragma unroll
        for (int f = 0; f < 4; f++)
#pragma unroll
            for (int l = 0; l < 4; l++) acc[e][f][l] = 0.0;
    const int b4 = b / 4 * 4;
    for (int q0 = 0; q0 < b4; q0 += KC) {
        const int kc = min(KC, b4 - q0);
        for (int e = t; e < TT * KC; e += 256) {
            const int r = e / KC, q = e % KC;
            double vr = 0.0, vc = 0.0;
            if (q < kc) {
                if (r0 + r < m) vr = a[(end + r0 + r) * n + kb + q0 + q];
                if (c0 + r < m) vc = a[(end + c0 + r) * n + kb + q0 + q];
            }
            rs[q][r] = vr;
            cs[q][r] = vc;
        }
        __syncthreads();
        for (int q = 0; q < kc; q += 4) {
#pragma unroll
            for (int l = 0; l < 4; l++) {
                double x[4], y[4];
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    x[e] = rs[q + l][ty + 16 * e];
                    y[e] = cs[q + l][tx + 16 * e];
                }
#pragma unroll
                for (int e = 0; e < 4; e++)
#pragma unroll
                    for (int f = 0; f < 4; f++) acc[e][f][l] = __dadd_rn(acc[e][f][l], __dmul_rn(x[e], y[f]));
            }
        }
        __syncthreads();
    }
#pragma unroll
    for (int e = 0; e < 4; e++) {
        const long long r = r0 + ty + 16 * e;
#pragma unroll
        for (int f = 0; f < 4; f++) {
            const long long c = c0 + tx + 16 * f;
            if (r >= m || c > r) continue;
            double s = __dadd_rn(__dadd_rn(acc[e][f][0], acc[e][f][1]), __dadd_rn(acc[e][f][2], acc[e][f][3]));
            const double* li = a + (end + r) * n + kb;
            const double* lc = a + (end + c) * n + kb;
            for (int p = b4; p < b; p++) s = __dadd_rn(s, __dmul_rn(li[p], lc[p]));
            double* out = a + (end + r) * n + end + c;
            *out = __dsub_rn(*out, s);
        }
    }
}

// `solve_lower`: L x = y in place of s (= y on entry). Column sweep: once x_j = s_j / L_jj is
// known, every row i > j subtracts L_ij x_j — for each i the terms in ascending j, as the CPU's
// row loop subtracts them. One block.
extern "C" __global__ void solve_lower(const double* l, long long n, double* s) {
    __shared__ double xj;
    for (long long j = 0; j < n; j++) {
        if (threadIdx.x == 0) {
            xj = __ddiv_rn(s[j], l[j * n + j]);
            s[j] = xj;
        }
        __syncthreads();
        const double x = xj;
        for (long long i = j + 1 + threadIdx.x; i < n; i += blockDim.x) s[i] = __dsub_rn(s[i], __dmul_rn(l[i * n + j], x));
        __syncthreads();
    }
}

// `solve_upper`: Lᵀ x = y in place of s. For j from the last down: x_j = s_j / L_jj, then every
// i < j subtracts L_ji x_j (row j of L). One block.
extern "C" __global__ void solve_upper(const double* l, long long n, double* s) {
    __shared__ double xj;
    for (long long j = n - 1; j >= 0; j--) {
        if (threadIdx.x == 0) {
            xj = __ddiv_rn(s[j], l[j * n + j]);
            s[j] = xj;
        }
        __syncthreads();
        const double x = xj;
        const double* lj = l + j * n;
        for (long long i = threadIdx.x; i < j; i += blockDim.x) s[i] = __dsub_rn(s[i], __dmul_rn(lj[i], x));
        __syncthreads();
    }
}

// The original diagonal of A (the pivot test's reference, `diag` in `factor`).
extern "C" __global__ void diagonal(const double* a, long long n, double* d) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) d[i] = a[i * n + i];
}
