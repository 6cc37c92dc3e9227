// Photon tabulation kernel: the CUDA twin of crates/photon/src/tabulate/{mod.rs,bins.rs}
// (`warpdrive photon tabulate --device cuda`, issue #32). Compiled after propagate.cu (the host
// concatenates the two sources, tabulate/gpu.rs KERNEL_SRC): the photon's emission (`start`),
// layer walk, tilt, anisotropy, birefringence and scattering are propagate.cu's device functions,
// called as `Tabulate::photon` calls their Rust twins; this file adds the fluence estimator of
// bins.rs (every device function carries the name of its Rust twin and follows it statement by
// statement, in f64) and the fixed-point histogram of mod.rs (`Histogram::photon_done`).
//
// Always built precise (NVRTC --fmad=false, IEEE division and square root): the histogram's
// integer sums are then the CPU's for every photon whose path is the CPU's. Differences are the
// photon kernel's (last-bit differences of logf and friends, which change a photon's path; the
// precise photon check finds ≥ 99 % of photons identical) and one of this file: the azimuth of a
// piece's midpoint comes from CUDA's atan2, not glibc's, which moves a piece to the next azimuth
// bin only when its midpoint lies within an ulp of an edge. The sines and cosines of the azimuth
// edges come from the host.
//
// One thread per photon, grid-stride over the ids of a launch. A photon's pieces are merged per
// cell in local memory in the order they are made (as the CPU's `touched` list), sorted by cell
// at the photon's end, then added to the global histogram with 64-bit integer atomics (the
// 128-bit squares as two words with a carry). A photon with more distinct cells than
// WD_TAB_CELLS, or a segment with more cuts than WD_TAB_CUTS, adds nothing here: its id goes to
// the overflow list and the host tabulates it on the CPU (nothing is lost, the sums are the same).

#ifdef WD_FAST_RNG
#error "tabulate.cu is built precise only (tabulate/gpu.rs kernel_defines)"
#endif
#define WD_TAB_CUTS 256
// Distinct cells of one photon (a -D WD_TAB_CELLS=… of the checks forces the host's overflow path).
#ifndef WD_TAB_CELLS
#define WD_TAB_CELLS 512
#endif
#ifndef WD_TAB_BLOCK
#define WD_TAB_BLOCK 128
#endif
// Fixed-point units of the sums (tabulate/mod.rs SUM_UNIT, SQ_UNIT).
#define WD_SUM_UNIT 65536.0
#define WD_SQ_UNIT 4294967296.0
// Rust's f64::to_degrees factor and to_radians (π/180).
#define WD_PIS_IN_180 57.2957795130823208767981548141051703
// Counters (tabulate/gpu.rs COUNTERS): tabulated, absorbed, escaped, segments, entries, inside
// (2⁻¹⁶ m), the largest per-photon mismatch (f64 bits, atomicMax), overflowed photons.
#define WD_TAB_COUNTERS 8

// Must match TabParams in crates/photon/src/tabulate/gpu.rs (offsets checked by gpu-check).
struct TabParams {
    const double* radial;
    const double* azimuth;
    const double* polar;
    const double* delay;
    // sin and cos of the inner azimuth edges (radians), from the host's sin_cos.
    const double* az_sin;
    const double* az_cos;
    // The acceptance (mod.rs Acceptance): per-slice share, angular polynomial (lowest order first).
    const double* share;
    const double* ang;
    unsigned long long* sum;            // cells
    unsigned long long* sumsq;          // 2 × cells: (low, high) words of a u128
    unsigned long long* spatial_sumsq;  // 2 × spatial cells
    unsigned long long* counters;       // WD_TAB_COUNTERS
    unsigned long long* overflow;       // ids of photons left to the host
    double origin[3], axis[3], e1[3], e2[3];
    double ng_over_c, cone, inv_c;
    double margin, mas;
    unsigned long long photon_lo, photon_hi, overflow_capacity;
    int n_radial, n_azimuth, n_polar, n_delay;  // edges
    int spherical, n_ang;
    unsigned int time_cells;
    int pad;
};

struct TabPath { double start[3], dir[3], len, time, ocm, weight; };
struct TabLocal { double p[3], d[3], u, v, a, b, q; };

struct TabScratch {
    double cuts[WD_TAB_CUTS];
    int n_cuts;
    unsigned int cell[WD_TAB_CELLS];
    double x[WD_TAB_CELLS];
    int n_cells;
    double deposited;
    bool overflow;
};

__device__ __forceinline__ double tdot(const double* a, const double* b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

// Rust's f64::clamp (NaN stays NaN).
__device__ __forceinline__ double tclamp(double x, double lo, double hi) {
    if (x < lo) x = lo;
    if (x > hi) x = hi;
    return x;
}

// slice::partition_point of an increasing array: the number of edges e with e < v (`strict`) or
// e <= v.
__device__ __forceinline__ int count_below(const double* e, int n, double v, bool strict) {
    int lo = 0, hi = n;
    while (lo < hi) {
        int m = (lo + hi) / 2;
        bool in = strict ? e[m] < v : e[m] <= v;
        if (in) lo = m + 1; else hi = m;
    }
    return lo;
}

// mod.rs Acceptance::weight.
__device__ __forceinline__ double weight(const TabParams& T, unsigned int slice, V3 dir) {
    double x = (double)dir.z, acc = 0.0;
    for (int i = T.n_ang - 1; i >= 0; --i) acc = acc * x + T.ang[i];
    double ang = tclamp(acc / T.mas, 0.0, 1.0);
    return T.share[slice] * ang;
}

__device__ __forceinline__ void push_cut(TabScratch& s, double v) {
    if (s.n_cuts < WD_TAB_CUTS) s.cuts[s.n_cuts++] = v;
    else s.overflow = true;
}

// bins.rs roots: real roots in (0, len) of a2 s² + a1 s + a0 = 0 appended to the cuts.
__device__ void roots(double a2, double a1, double a0, double len, TabScratch& s) {
    double scale = fmax(fmax(fabs(a1), fabs(a0)), 2.2250738585072014e-308);
    if (fabs(a2) <= 1e-14 * scale) {
        if (a1 != 0.0) {
            double r = -a0 / a1;
            if (r > 0.0 && r < len) push_cut(s, r);
        }
        return;
    }
    double disc = a1 * a1 - 4.0 * a2 * a0;
    if (disc < 0.0) return;
    double q = -0.5 * (a1 + copysign(1.0, a1) * sqrt(disc));
    if (q != 0.0) {
        double r1 = q / a2, r2 = a0 / q;
        if (r1 > 0.0 && r1 < len) push_cut(s, r1);
        if (r2 > 0.0 && r2 < len) push_cut(s, r2);
    }
}

// bins.rs within: the interval of s ∈ [0, len] where |P + sD|² ≤ r² (empty: lo ≥ hi).
__device__ double2 within(const double* p, const double* d, double r, double len) {
    double dd = tdot(d, d);
    double c = tdot(p, p) - r * r;
    if (dd <= 0.0) return c <= 0.0 ? make_double2(0.0, len) : make_double2(0.0, 0.0);
    double b = tdot(p, d) / dd;
    double disc = b * b - c / dd;
    if (disc <= 0.0) return make_double2(0.0, 0.0);
    double h = sqrt(disc);
    return make_double2(fmax(-b - h, 0.0), fmin(-b + h, len));
}

// bins.rs Binning::local.
__device__ TabLocal local(const TabParams& T, const TabPath& path) {
    TabLocal l;
    double rel[3] = {path.start[0] - T.origin[0], path.start[1] - T.origin[1], path.start[2] - T.origin[2]};
    l.u = tdot(rel, T.axis);
    l.v = tdot(path.dir, T.axis);
    if (T.spherical) {
        for (int k = 0; k < 3; ++k) { l.p[k] = rel[k]; l.d[k] = path.dir[k]; }
        l.a = path.time;
        l.b = path.ocm;
        l.q = T.ng_over_c;
    } else {
        for (int k = 0; k < 3; ++k) {
            l.p[k] = -l.u * T.axis[k] + rel[k];
            l.d[k] = -l.v * T.axis[k] + path.dir[k];
        }
        l.a = path.time - l.u * T.inv_c;
        l.b = path.ocm - l.v * T.inv_c;
        l.q = T.cone;
    }
    return l;
}

// bins.rs Binning::coordinates: (radial, φ [deg], polar, delay) at s.
__device__ void coordinates(const TabParams& T, const TabLocal& l, double s, double c[4]) {
    double x[3] = {s * l.d[0] + l.p[0], s * l.d[1] + l.p[1], s * l.d[2] + l.p[2]};
    double rad = sqrt(tdot(x, x));
    double axial = l.u + s * l.v;
    double a = tdot(x, T.e1), b = tdot(x, T.e2);
    double phi = fabs(atan2(b, a)) * WD_PIS_IN_180;
    double polar;
    if (T.spherical) polar = rad > 0.0 ? tclamp(axial / rad, -1.0, 1.0) : 1.0;
    else polar = axial;
    c[0] = rad;
    c[1] = phi;
    c[2] = polar;
    c[3] = l.a + l.b * s - l.q * rad;
}

// bins.rs Binning::cell's `bin`: -1 outside [e0, e_last].
__device__ __forceinline__ int bin(const double* e, int n, double x) {
    if (!(x >= e[0] && x <= e[n - 1])) return -1;
    int k = count_below(e, n, x, false);
    k = k < 1 ? 1 : (k > n - 1 ? n - 1 : k);
    return k - 1;
}

// bins.rs Binning::cell: spatial index × time cells + time cell, or -1 outside the grid.
__device__ long long cell(const TabParams& T, const double c[4]) {
    int i = bin(T.radial, T.n_radial, c[0]);
    if (i < 0) return -1;
    int j = bin(T.azimuth, T.n_azimuth, c[1]);
    if (j < 0) return -1;
    int k = bin(T.polar, T.n_polar, c[2]);
    if (k < 0) return -1;
    long long spatial = ((long long)i * (T.n_azimuth - 1) + j) * (T.n_polar - 1) + k;
    long long t;
    if (T.n_delay == 0 || c[3] < T.delay[0]) t = 0;
    else if (c[3] >= T.delay[T.n_delay - 1]) t = T.n_delay;
    else t = count_below(T.delay, T.n_delay, c[3], false);
    return spatial * (long long)T.time_cells + t;
}

// The `add` of Tabulate::photon: a piece's weighted length merged into the photon's cell list
// (the CPU's `touched`, summed per cell in the order the pieces come).
__device__ __forceinline__ void add(TabScratch& s, unsigned int c, double x) {
    s.deposited += x;
    for (int i = s.n_cells - 1; i >= 0; --i) {
        if (s.cell[i] == c) { s.x[i] += x; return; }
    }
    if (s.n_cells < WD_TAB_CELLS) {
        s.cell[s.n_cells] = c;
        s.x[s.n_cells] = x;
        s.n_cells += 1;
    } else {
        s.overflow = true;
    }
}

// bins.rs Binning::deposit: the path cut at every boundary it crosses, each piece inside the grid
// added to the cell of its midpoint.
__device__ void deposit(const TabParams& T, const TabPath& path, TabScratch& s) {
    double len = path.len;
    if (isnan(len) || len <= 0.0) return;
    TabLocal l = local(T, path);
    s.n_cuts = 0;
    push_cut(s, 0.0);
    double pp = tdot(l.p, l.p), pd = tdot(l.p, l.d), dd = tdot(l.d, l.d);
#define WD_R_END(sv) sqrt(fmax(pp + 2.0 * (sv) * pd + (sv) * (sv) * dd, 0.0))
    double s_near = dd > 0.0 ? tclamp(-pd / dd, 0.0, len) : 0.0;
    double near = WD_R_END(s_near), far = fmax(WD_R_END(0.0), WD_R_END(len));
    int lo = count_below(T.radial, T.n_radial, near * (1.0 - 1e-12), true);
    int hi = count_below(T.radial, T.n_radial, far * (1.0 + 1e-12), false);
    for (int i = lo; i < hi; ++i) {
        double r = T.radial[i];
        roots(dd, 2.0 * pd, pp - r * r, len, s);
    }
    if (T.spherical) {
        for (int i = 1; i < T.n_polar - 1; ++i) {
            double c = T.polar[i];
            if (c == 0.0) {
                roots(0.0, l.v, l.u, len, s);
                continue;
            }
            double c2 = c * c;
            roots(l.v * l.v - c2 * dd, 2.0 * (l.u * l.v - c2 * pd), l.u * l.u - c2 * pp, len, s);
        }
    } else {
        for (int i = 0; i < T.n_polar; ++i) roots(0.0, l.v, l.u - T.polar[i], len, s);
    }
    double rel[3] = {path.start[0] - T.origin[0], path.start[1] - T.origin[1], path.start[2] - T.origin[2]};
    for (int i = 1; i < T.n_azimuth - 1; ++i) {
        double sn = T.az_sin[i - 1], cs = T.az_cos[i - 1];
        for (int k = 0; k < 2; ++k) {
            double sign = k == 0 ? 1.0 : -1.0;
            double n[3];
            for (int m = 0; m < 3; ++m) n[m] = cs * T.e2[m] + -sign * sn * T.e1[m];
            roots(0.0, tdot(n, path.dir), tdot(n, rel), len, s);
        }
    }
    if (T.n_delay > 0) {
        double t0 = l.a + l.b * 0.0 - l.q * WD_R_END(0.0);
        double t1 = l.a + l.b * len - l.q * WD_R_END(len);
        double t_lo = fmin(t0, t1);
        double t_hi = l.a + fmax(l.b * len, 0.0) - l.q * near;
        double slack = 1e-9 * (fabs(t_lo) + fabs(t_hi) + 1.0);
        int dlo = count_below(T.delay, T.n_delay, t_lo - slack, true);
        int dhi = count_below(T.delay, T.n_delay, t_hi + slack, false);
        double q2 = l.q * l.q;
        for (int i = dlo; i < dhi; ++i) {
            double a = l.a - T.delay[i];
            roots(l.b * l.b - q2 * dd, 2.0 * (l.b * a - q2 * pd), a * a - q2 * pp, len, s);
        }
    }
#undef WD_R_END
    push_cut(s, len);
    if (s.overflow) return;
    // Insertion sort (the cuts are finite: roots keeps only those in (0, len)).
    for (int i = 1; i < s.n_cuts; ++i) {
        double v = s.cuts[i];
        int j = i - 1;
        while (j >= 0 && s.cuts[j] > v) { s.cuts[j + 1] = s.cuts[j]; --j; }
        s.cuts[j + 1] = v;
    }
    for (int i = 0; i + 1 < s.n_cuts; ++i) {
        double w0 = s.cuts[i], w1 = s.cuts[i + 1];
        double piece = w1 - w0;
        if (piece <= 0.0) continue;
        double c[4];
        coordinates(T, l, 0.5 * (w0 + w1), c);
        long long k = cell(T, c);
        if (k >= 0) add(s, (unsigned int)k, piece * path.weight);
    }
}

// bins.rs Binning::inside_length: the weighted length inside the spatial grid from its outer
// and inner boundaries alone.
__device__ double inside_length(const TabParams& T, const TabPath& path) {
    double len = path.len;
    if (isnan(len) || len <= 0.0) return 0.0;
    TabLocal l = local(T, path);
    double r0 = T.radial[0], r1 = T.radial[T.n_radial - 1];
    double inside;
    if (T.spherical) {
        double2 o = within(l.p, l.d, r1, len), i = within(l.p, l.d, r0, len);
        inside = fmax(o.y - o.x, 0.0) - fmax(i.y - i.x, 0.0);
    } else {
        double z0 = T.polar[0], z1 = T.polar[T.n_polar - 1];
        double2 slab;
        if (l.v == 0.0) {
            slab = (l.u >= z0 && l.u <= z1) ? make_double2(0.0, len) : make_double2(0.0, 0.0);
        } else {
            double a = (z0 - l.u) / l.v, b = (z1 - l.u) / l.v;
            slab = make_double2(fmax(fmin(a, b), 0.0), fmin(fmax(a, b), len));
        }
        double2 o = within(l.p, l.d, r1, len), i = within(l.p, l.d, r0, len);
        double co = fmax(fmin(o.y, slab.y) - fmax(o.x, slab.x), 0.0);
        double ci = fmax(fmin(i.y, slab.y) - fmax(i.x, slab.x), 0.0);
        inside = co - ci;
    }
    return fmax(inside, 0.0) * path.weight;
}

// bins.rs Binning::escaped: farther than the margin outside the grid's outer boundary.
__device__ bool escaped(const TabParams& T, const double* x) {
    double rel[3] = {x[0] - T.origin[0], x[1] - T.origin[1], x[2] - T.origin[2]};
    double rmax = T.radial[T.n_radial - 1] + T.margin;
    if (T.spherical) return tdot(rel, rel) > rmax * rmax;
    double u = tdot(rel, T.axis);
    double perp[3] = {-u * T.axis[0] + rel[0], -u * T.axis[1] + rel[1], -u * T.axis[2] + rel[2]};
    return tdot(perp, perp) > rmax * rmax || u < T.polar[0] - T.margin || u > T.polar[T.n_polar - 1] + T.margin;
}

// add_u128: fixed_point.cuh (assembled before this file).

// mod.rs Histogram::photon_done: a photon's per-cell sums, sorted by cell, rounded to the fixed
// point and added (x to the sum, x² to the squares; per spatial cell the square of its sum over
// the time cells). Returns the number of cells added to.
__device__ unsigned int photon_done(const TabParams& T, TabScratch& s) {
    int n = s.n_cells;
    for (int i = 1; i < n; ++i) {
        unsigned int c = s.cell[i];
        double x = s.x[i];
        int j = i - 1;
        while (j >= 0 && s.cell[j] > c) { s.cell[j + 1] = s.cell[j]; s.x[j + 1] = s.x[j]; --j; }
        s.cell[j + 1] = c;
        s.x[j + 1] = x;
    }
    unsigned int spatial = 0xffffffffu;
    double spatial_x = 0.0;
    for (int i = 0; i < n; ++i) {
        unsigned int c = s.cell[i];
        double x = s.x[i];
        atomicAdd(T.sum + c, (unsigned long long)round(x * WD_SUM_UNIT));
        add_u128(T.sumsq + 2 * (size_t)c, round(x * x * WD_SQ_UNIT));
        unsigned int sp = c / T.time_cells;
        if (sp != spatial) {
            if (spatial != 0xffffffffu) add_u128(T.spatial_sumsq + 2 * (size_t)spatial, round(spatial_x * spatial_x * WD_SQ_UNIT));
            spatial = sp;
            spatial_x = 0.0;
        }
        spatial_x += x;
    }
    if (n > 0) add_u128(T.spatial_sumsq + 2 * (size_t)spatial, round(spatial_x * spatial_x * WD_SQ_UNIT));
    return (unsigned int)n;
}

// Per-thread counters, added to the global ones once at the thread's end.
struct TabCounts { unsigned long long tabulated, absorbed, escaped, segments, entries, inside; double worst; };

// mod.rs Tabulate::photon: emitted, propagated segment by segment without modules or hole ice
// (propagate.cu's functions, the precise build), each segment deposited; then the photon's
// per-cell sums added. A photon that overflows the scratch goes to the host's list instead.
__device__ void photon(const PhotonParams& P, const TabParams& T, unsigned long long id, TabScratch& s, TabCounts& n) {
    PState st;
    start(P, id, st);
    s.n_cells = 0;
    s.deposited = 0.0;
    s.overflow = false;
    double inside = 0.0;
    unsigned long long segments = 0, absorbed = 0, escaped_ = 0;
    for (unsigned int k = 0; k < WD_MAX_SEGMENTS; ++k) {
        float zp = st.pos.z - zshift_fast(P, st.pos.x, st.pos.y, st.pos.z);
        float nr = absorption_factor(P, st.dir);
        Segment seg = layer_walk(P, st.slice, zp, st.dir.z, st.sca_depth, st.tot, nr);
        TabPath piece;
        piece.start[0] = (double)st.pos.x; piece.start[1] = (double)st.pos.y; piece.start[2] = (double)st.pos.z;
        piece.dir[0] = (double)st.dir.x; piece.dir[1] = (double)st.dir.y; piece.dir[2] = (double)st.dir.z;
        piece.len = (double)seg.length;
        piece.time = (double)st.time;
        piece.ocm = (double)st.ocm;
        piece.weight = weight(T, st.slice, st.dir);
        segments += 1;
        inside += inside_length(T, piece);
        deposit(T, piece, s);
        if (s.overflow) break;
        st.tot = seg.tot;
        if (seg.tot <= 0.0f) { absorbed = 1; break; }
        float len = seg.length;
        st.pos = V3{st.pos.x + len * st.dir.x, st.pos.y + len * st.dir.y, st.pos.z + len * st.dir.z};
        st.time += len * st.ocm;
        double at[3] = {(double)st.pos.x, (double)st.pos.y, (double)st.pos.z};
        if (escaped(T, at)) { escaped_ = 1; break; }
#ifdef WD_BFR
        if (P.has_bfr) {
            // mod.rs birefringent: one block, the deflection and the curved path's end-point shift.
            float ra, rb;
            bfr_path(P, zp, st.dir.z, len, ra, rb);
            unsigned int wb[4];
            wd_block4(P.seed, WD_TAG_PHOTON, st.id, st.block, wb);
            st.block += 1;
            V3 shift;
            st.dir = bfr_deflect(P, st.dir, len, ra, rb, wb, shift);
            st.pos = V3{st.pos.x + shift.x, st.pos.y + shift.y, st.pos.z + shift.z};
        }
#endif
        unsigned int w[4];
        wd_block4(P.seed, WD_TAG_PHOTON, st.id, st.block, w);
        st.block += 1;
        float u1 = wd_u32_to_uniform(w[0]), u2 = wd_u32_to_uniform(w[1]), u3 = wd_u32_to_uniform(w[2]);
        st.sca_depth = -logf(wd_u32_to_uniform(w[3]));
        st.dir = scatter(P, st.dir, scattering_cosine(P.g, P.f_sl, u1, u2), u3);
    }
    if (s.overflow) {
        unsigned long long k = atomicAdd(T.counters + 7, 1ull);
        if (k < T.overflow_capacity) T.overflow[k] = id;
        return;
    }
    n.segments += segments;
    n.absorbed += absorbed;
    n.escaped += escaped_;
    n.inside += (unsigned long long)round(inside * WD_SUM_UNIT);
    n.worst = fmax(n.worst, fabs(s.deposited - inside));
    unsigned int cells = photon_done(T, s);
    if (cells > 0) {
        n.tabulated += 1;
        n.entries += cells;
    }
}

extern "C" __global__ void __launch_bounds__(WD_TAB_BLOCK) tabulate(__grid_constant__ const PhotonParams P, __grid_constant__ const TabParams T) {
    TabScratch s;
    TabCounts n = {0, 0, 0, 0, 0, 0, 0.0};
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long id = T.photon_lo + (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; id < T.photon_hi; id += stride) {
        photon(P, T, id, s, n);
    }
    unsigned long long* c = T.counters;
    if (n.tabulated) atomicAdd(c + 0, n.tabulated);
    if (n.absorbed) atomicAdd(c + 1, n.absorbed);
    if (n.escaped) atomicAdd(c + 2, n.escaped);
    if (n.segments) atomicAdd(c + 3, n.segments);
    if (n.entries) atomicAdd(c + 4, n.entries);
    if (n.inside) atomicAdd(c + 5, n.inside);
    // Non-negative doubles order as their bit patterns.
    if (n.worst > 0.0) atomicMax(c + 6, (unsigned long long)__double_as_longlong(n.worst));
}

// Field offsets of TabParams, compared with Rust's offset_of! by gpu-check.
extern "C" __global__ void tabulate_layout(unsigned long long* out) {
    TabParams t;
    const char* b = (const char*)&t;
    out[0] = (const char*)&t.origin - b;
    out[1] = (const char*)&t.ng_over_c - b;
    out[2] = (const char*)&t.photon_lo - b;
    out[3] = (const char*)&t.n_radial - b;
    out[4] = (const char*)&t.time_cells - b;
    out[5] = sizeof(TabParams);
}
