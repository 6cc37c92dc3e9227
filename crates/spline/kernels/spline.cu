// Tensor-product B-spline evaluation on the GPU: the CUDA twin of crates/spline/src/eval.rs
// (interval search in double precision on the knots, Cox–de Boor basis values and derivatives,
// contraction over the last dimension innermost) with float32 basis values and sums, as
// photospline's default evaluator. The table's orders are compile-time constants (-DWD_ORDERS=
// 2,2,2,3), so every loop unrolls and the basis stays in registers — the role of photospline's
// template-specialised evaluators (spec §1.2 item 4).
//
// Kernels:
//   eval_points — one thread per point: value (or value + gradient with -DWD_GRAD).
//   response    — Millipede's Λ (crates/spline/src/millipede/model.rs `dom_response`): one
//                 thread per (DOM, source), the amplitude table once and the timing table at
//                 each bin edge; orders from -DWD_AMP_ORDERS and -DWD_TIME_ORDERS.
// -DWD_WINDOW reads the redundant window layout (crates/spline/src/layout.rs) in which the last
// two dimensions' (k+1)(k'+1) coefficients of an evaluation are one contiguous run.

#ifndef WD_ORDERS
#define WD_ORDERS 2, 2, 2, 3
#endif
#ifndef WD_AMP_ORDERS
#define WD_AMP_ORDERS 2, 2, 2
#endif
#ifndef WD_TIME_ORDERS
#define WD_TIME_ORDERS 2, 2, 2, 3
#endif
#ifndef WD_WINDOW
#define WD_WINDOW 0
#endif

#define WD_MAXDIM 8

// Must match TableDev in crates/spline/src/gpu.rs.
struct TableDev {
    const double* knots;  // all knot vectors, concatenated
    const float* coef;    // coefficients in the layout chosen at compile time
    long long stride[WD_MAXDIM];  // offset of a block start per dimension (layout.rs)
    int knot_off[WD_MAXDIM];
    int nknots[WD_MAXDIM];
    int naxes[WD_MAXDIM];
    double lo[WD_MAXDIM];  // extents
    double hi[WD_MAXDIM];
};
static_assert(sizeof(TableDev) == 16 + 64 + 96 + 128, "TableDev size");

template <int... O>
struct Shape {
    static constexpr int nd = sizeof...(O);
    __host__ __device__ static constexpr int order(int d) {
        constexpr int o[] = {O...};
        return o[d];
    }
};

// Product of (order+1) over dimensions first..last-1.
template <class S>
__host__ __device__ constexpr int span(int first, int last) {
    int p = 1;
    for (int d = first; d < last; ++d) p *= S::order(d) + 1;
    return p;
}

#define WD_KMAX 8

// Basis of every dimension (compile-time recursion: each dimension's order is a template
// argument); adds the block start offsets to `base`.
template <class S, bool GRAD, int D = 0>
__device__ __forceinline__ bool basis_all(const TableDev& tb, const double* x, float (*B)[WD_KMAX], float (*Dv)[WD_KMAX],
                                          long long& base);

// Knot interval l with t[l] <= x < t[l+1] (x at the last knot: the last non-degenerate
// interval); false outside [t0, t_last] (eval.rs `interval`).
__device__ __forceinline__ bool find_interval(const double* t, int nk, double x, int& l) {
    double last = t[nk - 1];
    if (!(x >= t[0] && x <= last)) return false;
    bool at_end = !(x < last);
    int lo = 0, hi = nk - 1;
    while (hi - lo > 1) {
        int mid = (lo + hi) >> 1;
        double tm = __ldg(t + mid);
        bool left = at_end ? (tm < x) : (tm <= x);
        if (left) lo = mid; else hi = mid;
    }
    l = lo;
    return true;
}

// Basis values b[0..K] (and derivatives db) of the K+1 coefficients from `start`, as Basis::at
// in eval.rs: Cox–de Boor on the interval's functions, those without coefficients set to 0, the
// window shifted to stay inside 0..n.
template <int K, bool DERIV>
__device__ __forceinline__ bool basis(const double* t, int nk, double x, int& start, float* b, float* db) {
    int l;
    if (!find_interval(t, nk, x, l)) return false;
    const int n = nk - K - 1;
    // Knots t[l-K+1 .. l+K] relative to x, in float (out-of-range indices never used: the
    // functions that would need them do not exist and stay 0).
    float dl[K + 1], dr[K + 1];
#pragma unroll
    for (int j = 0; j <= K; ++j) {
        int il = l - j, ir = l + 1 + j;
        dl[j] = il >= 0 ? (float)(x - __ldg(t + il)) : 0.f;
        dr[j] = ir < nk ? (float)(__ldg(t + ir) - x) : 0.f;
    }
    // v[m] = B_{l-j+m, j}; exists(i, j): 0 <= i and i + j + 1 < nk.
    float v[K + 1], prev[K + 1];
    v[0] = 1.f;
#pragma unroll
    for (int m = 1; m <= K; ++m) v[m] = 0.f;
#pragma unroll
    for (int j = 1; j <= K; ++j) {
#pragma unroll
        for (int m = 0; m <= K; ++m) prev[m] = v[m];
#pragma unroll
        for (int m = 0; m <= j; ++m) {
            int i = l - j + m;
            float out = 0.f;
            if (i >= 0 && i + j + 1 < nk) {
                // (x - t_i)/(t_{i+j} - t_i) · B_{i,j-1} + (t_{i+j+1} - x)/(t_{i+j+1} - t_{i+1}) · B_{i+1,j-1}
                // with t_i = x - dl[j-m], t_{i+j} = x + dr[m-1], t_{i+1} = x - dl[j-m-1], t_{i+j+1} = x + dr[m].
                if (m >= 1) {
                    float den = dr[m - 1] + dl[j - m];
                    if (den > 0.f) out += dl[j - m] / den * prev[m - 1];
                }
                if (m < j) {
                    float den = dr[m] + dl[j - m - 1];
                    if (den > 0.f) out += dr[m] / den * prev[m];
                }
            }
            v[m] = out;
        }
    }
    float d[K + 1];
#pragma unroll
    for (int m = 0; m <= K; ++m) d[m] = 0.f;
    if constexpr (DERIV && K >= 1) {
#pragma unroll
        for (int m = 0; m <= K; ++m) {
            int i = l - K + m;
            if (i >= 0 && i + K + 1 < nk) {
                float acc = 0.f;
                if (m >= 1) {
                    float den = dr[m - 1] + dl[K - m];
                    if (den > 0.f) acc += prev[m - 1] / den;
                }
                if (m < K) {
                    float den = dr[m] + dl[K - m - 1];
                    if (den > 0.f) acc -= prev[m] / den;
                }
                d[m] = (float)K * acc;
            }
        }
    }
    int first = l - K;
    int hi = n - K - 1;
    start = first < 0 ? 0 : (first > hi ? hi : first);
    int shift = first - start;  // position p holds function start + p = first + (p - shift)
#pragma unroll
    for (int p = 0; p <= K; ++p) {
        float bv = 0.f, dv = 0.f;
#pragma unroll
        for (int m = 0; m <= K; ++m) {
            if (m == p - shift && start + p < n) {
                bv = v[m];
                dv = d[m];
            }
        }
        b[p] = bv;
        if (DERIV) db[p] = dv;
    }
    return true;
}

template <class S, bool GRAD, int D>
__device__ __forceinline__ bool basis_all(const TableDev& tb, const double* x, float (*B)[WD_KMAX], float (*Dv)[WD_KMAX],
                                          long long& base) {
    if constexpr (D == S::nd) {
        return true;
    } else {
        int start;
        if (!basis<S::order(D), GRAD>(tb.knots + tb.knot_off[D], tb.nknots[D], x[D], start, B[D], Dv[D])) return false;
        base += (long long)start * tb.stride[D];
        return basis_all<S, GRAD, D + 1>(tb, x, B, Dv, base);
    }
}

// Index of dimension d's basis function in chunk q of the leading dimensions 0..NL-1 (an
// odometer with digits of base order+1, the last leading dimension fastest).
template <class S, int NL>
__device__ __forceinline__ int digit(int q, int d) {
    return (q / span<S>(d + 1, NL)) % (S::order(d) + 1);
}

// Weight Π_{d<NL} B_d of chunk q; adds the chunk's block offsets to `pos`.
template <class S, int NL>
__device__ __forceinline__ float chunk_weight(const TableDev& tb, int q, const float (*B)[WD_KMAX], long long& pos) {
    float w = 1.f;
#pragma unroll
    for (int d = 0; d < NL; ++d) {
        int id = digit<S, NL>(q, d);
        w *= B[d][id];
        pos += id * tb.stride[d];
    }
    return w;
}

// ∂f/∂x_e for the leading dimensions e < NL: the chunk weight with B_e replaced by B'_e, times
// the chunk's contraction s over the trailing dimensions.
template <class S, int NL>
__device__ __forceinline__ void add_chunk_gradients(int q, const float (*B)[WD_KMAX], const float (*D)[WD_KMAX], float s,
                                                    float* g) {
#pragma unroll
    for (int e = 0; e < NL; ++e) {
        float we = 1.f;
#pragma unroll
        for (int d = 0; d < NL; ++d) {
            int id = digit<S, NL>(q, d);
            we *= (d == e) ? D[d][id] : B[d][id];
        }
        g[e] += we * s;
    }
}

// Value (out[0]) and, with GRAD, ∂f/∂x_d (out[1+d]) at x; false outside the knots (value 0).
template <class S, bool GRAD, bool WINDOW>
__device__ __forceinline__ bool evaluate(const TableDev& tb, const double* x, float* out) {
    constexpr int ND = S::nd;
    float B[ND][WD_KMAX], D[ND][WD_KMAX];
    long long base = 0;
    if (!basis_all<S, GRAD>(tb, x, B, D, base)) return false;
    float sum = 0.f, g[ND];
#pragma unroll
    for (int d = 0; d < ND; ++d) g[d] = 0.f;
    if constexpr (!WINDOW || ND < 2) {
        // Standard layout: chunks of the leading dimensions, the last one contiguous.
        constexpr int LAST = ND - 1;
        constexpr int KL = S::order(LAST) + 1;
#pragma unroll
        for (int q = 0; q < span<S>(0, LAST); ++q) {
            long long pos = base;
            float w = chunk_weight<S, LAST>(tb, q, B, pos);
            float s = 0.f, sd = 0.f;
#pragma unroll
            for (int j = 0; j < KL; ++j) {
                float c = __ldg(tb.coef + pos + j);
                s += c * B[LAST][j];
                if (GRAD) sd += c * D[LAST][j];
            }
            sum += w * s;
            if (GRAD) {
                g[LAST] += w * sd;
                add_chunk_gradients<S, LAST>(q, B, D, s, g);
            }
        }
    } else {
        // Window layout: dimensions P = ND-2 and L = ND-1 form one contiguous run of
        // (k_L+1)(k_P+1) floats, element j·(k_P+1) + a ↔ B_L[j]·B_P[a].
        constexpr int P = ND - 2, L = ND - 1;
        constexpr int KP = S::order(P) + 1, KL = S::order(L) + 1;
#pragma unroll
        for (int q = 0; q < span<S>(0, P); ++q) {
            long long pos = base;
            float w = chunk_weight<S, P>(tb, q, B, pos);
            float s = 0.f, sp = 0.f, sl = 0.f;
#pragma unroll
            for (int j = 0; j < KL; ++j) {
                float r = 0.f, rp = 0.f;
#pragma unroll
                for (int a = 0; a < KP; ++a) {
                    float c = __ldg(tb.coef + pos + j * KP + a);
                    r += c * B[P][a];
                    if (GRAD) rp += c * D[P][a];
                }
                s += r * B[L][j];
                if (GRAD) {
                    sp += rp * B[L][j];
                    sl += r * D[L][j];
                }
            }
            sum += w * s;
            if (GRAD) {
                g[P] += w * sp;
                g[L] += w * sl;
                add_chunk_gradients<S, P>(q, B, D, s, g);
            }
        }
    }
    out[0] = sum;
    if (GRAD) {
#pragma unroll
        for (int d = 0; d < ND; ++d) out[1 + d] = g[d];
    }
    return true;
}

#ifdef WD_GRAD
#define WD_OUT_PER_POINT (1 + Shape<WD_ORDERS>::nd)
#define WD_GRAD_ON true
#else
#define WD_OUT_PER_POINT 1
#define WD_GRAD_ON false
#endif

// points: n × nd doubles (row-major); out: n × WD_OUT_PER_POINT floats. Outside the knots the
// value and gradient are 0, a NaN coordinate gives NaN (eval.rs).
extern "C" __global__ void eval_points(const TableDev tb, const double* __restrict__ points, unsigned long long n,
                                       float* __restrict__ out) {
    using S = Shape<WD_ORDERS>;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double x[S::nd];
    bool nan = false;
#pragma unroll
    for (int d = 0; d < S::nd; ++d) {
        x[d] = points[i * S::nd + d];
        nan |= x[d] != x[d];
    }
    float r[1 + S::nd];
    if (!evaluate<S, WD_GRAD_ON, WD_WINDOW != 0>(tb, x, r)) {
        float v = nan ? __int_as_float(0x7fc00000) : 0.f;
#pragma unroll
        for (int k = 0; k < 1 + S::nd; ++k) r[k] = v;
    }
#pragma unroll
    for (int k = 0; k < WD_OUT_PER_POINT; ++k) out[i * WD_OUT_PER_POINT + k] = r[k];
}

// ---- Millipede response ------------------------------------------------------------------

// Must match ResponseParams in crates/spline/src/gpu.rs.
struct ResponseParams {
    const double* dom_pos;      // 3 per binned DOM
    const double* dom_scale;    // light scale per binned DOM
    const unsigned int* first_row;
    const unsigned int* rows;
    const unsigned int* first_edge;
    const double* edges;
    const double* sources;      // 11 per source: pos, dir, time, the amplitude and the timing
                                // table's source-axis values (model.rs `Model::locate`)
    double* out;                // rows × sources, row-major (f64, as the CPU's)
    unsigned int ndoms;
    unsigned int nsources;
    double yield_per_gev;
    double t_geo_per_m;         // n_group / c [ns/m]
    int timing;                 // 0: amplitude only
    int pad;
};

__device__ __forceinline__ bool inside(const TableDev& t, const double* x, int nd) {
    for (int d = 0; d < nd; ++d)
        if (!(x[d] >= t.lo[d] && x[d] <= t.hi[d])) return false;
    return true;
}

// Table coordinates (r, φ [deg], cos θ) of a DOM seen from a source (model.rs `table_coordinates`).
__device__ void table_coordinates(const double* dom, const double* s, double* x) {
    double v0 = dom[0] - s[0], v1 = dom[1] - s[1], v2 = dom[2] - s[2];
    double r = sqrt(v0 * v0 + v1 * v1 + v2 * v2);
    if (r == 0.0) { x[0] = 0.0; x[1] = 0.0; x[2] = 1.0; return; }
    double d0 = s[3], d1 = s[4], d2 = s[5];
    double along = v0 * d0 + v1 * d1 + v2 * d2;
    double e0 = -d2 * d0, e1 = -d2 * d1, e2 = 1.0 - d2 * d2;
    double n1 = sqrt(e0 * e0 + e1 * e1 + e2 * e2);
    if (n1 < 1e-9) { e0 = 1.0; e1 = 0.0; e2 = 0.0; } else { e0 /= n1; e1 /= n1; e2 /= n1; }
    double f0 = d1 * e2 - d2 * e1, f1 = d2 * e0 - d0 * e2, f2 = d0 * e1 - d1 * e0;
    double a = v0 * e0 + v1 * e1 + v2 * e2;
    double b = v0 * f0 + v1 * f1 + v2 * f2;
    x[0] = r;
    x[1] = fabs(atan2(b, a)) * (180.0 / 3.14159265358979323846);
    x[2] = fmin(fmax(along / r, -1.0), 1.0);
}

// CDF of the delay (model.rs `Model::cdf`): 0 before the time extent, 1 after, clamped inside;
// `at` holds the source's values on the table's source axes (dimensions 4 and 5, if it has them).
template <class ST>
__device__ __forceinline__ float delay_cdf(const TableDev& tt, const double* x3, const double* at, double delay) {
    if (delay < tt.lo[3]) return 0.f;
    if (delay >= tt.hi[3]) return 1.f;
    double x[6] = {x3[0], x3[1], x3[2], delay, at[0], at[1]};
    float r[5];
    if (!evaluate<ST, false, WD_WINDOW != 0>(tt, x, r)) return 0.f;
    return fminf(fmaxf(r[0], 0.f), 1.f);
}

extern "C" __global__ void response(const TableDev amp, const TableDev tim, const ResponseParams p) {
    using SA = Shape<WD_AMP_ORDERS>;
    using ST = Shape<WD_TIME_ORDERS>;
    unsigned long long k = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= (unsigned long long)p.ndoms * p.nsources) return;
    // Sources fastest: a warp shares one DOM, so its rows' edges are read once per warp.
    unsigned int dom = (unsigned int)(k / p.nsources), src = (unsigned int)(k % p.nsources);
    const double* s = p.sources + 11 * src;
    unsigned int rows = p.rows[dom], row0 = p.first_row[dom];
    double* out = p.out + (unsigned long long)row0 * p.nsources + src;
    // (r, φ, cos θ), then the amplitude table's source axes (model.rs `Model::amplitude`).
    double x[5];
    table_coordinates(p.dom_pos + 3 * dom, s, x);
    x[3] = s[7];
    x[4] = s[8];
    float a[4];
    double amplitude = 0.0;
    if (inside(amp, x, SA::nd) && evaluate<SA, false, WD_WINDOW != 0>(amp, x, a)) {
        amplitude = p.yield_per_gev * exp((double)a[0]) * p.dom_scale[dom];
    }
    if (amplitude == 0.0 || !p.timing) {
        for (unsigned int q = 0; q < rows; ++q) out[(unsigned long long)q * p.nsources] = amplitude;
        return;
    }
    const double* e = p.edges + p.first_edge[dom];
    double t0 = s[6] + x[0] * p.t_geo_per_m;
    float prev = delay_cdf<ST>(tim, x, s + 9, e[0] - t0);
    for (unsigned int q = 0; q < rows; ++q) {
        float next = delay_cdf<ST>(tim, x, s + 9, e[q + 1] - t0);
        out[(unsigned long long)q * p.nsources] = amplitude * (double)fmaxf(next - prev, 0.f);
        prev = next;
    }
}
