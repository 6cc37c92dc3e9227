// Twin of crates/em/src/geo/solid.rs: strict membership, the lower-bound signed distance, the
// surfaces' roots and the distances to in/out by the segment walk, over the flat records of
// crates/em/src/geo/device.rs. Booleans recurse (depth ≤ MAX_BOOLEAN_DEPTH, checked on the host).
// (after roots.cuh)

#define SOLID_BOX 0
#define SOLID_CONVEX 1
#define SOLID_REVOLVED 2
#define SOLID_SPHERE 3
#define SOLID_POLYHEDRA 4
#define SOLID_BOOLEAN 5
#define GEO_PI 3.141592653589793
#define GEO_TAU 6.283185307179586
#define GEO_SURFACE_TOLERANCE 0.5e-9

struct SolidRecord {
    unsigned kind, count, aux, a, b, pad;
    unsigned long long offset;
};
static_assert(sizeof(SolidRecord) == 32, "SolidRecord layout");

struct Solids {
    const SolidRecord* rec;
    const double* pool;
};

// ---- PhiSegment: the φ block (present start delta cos_start sin_start cos_end sin_end) ----

/// PhiSegment::plane_distances.
__device__ __forceinline__ void phi_plane_distances(const double* w, V3 p, double& d1, double& d2) {
    double cs = w[3], ss = w[4], ce = w[5], se = w[6];
    d1 = -(cs * p.y - ss * p.x);
    d2 = -(p.x * se - p.y * ce);
}

/// PhiSegment::contains (true when the block is absent).
__device__ __forceinline__ bool phi_contains(const double* w, V3 p) {
    if (w[0] == 0.0) return true;
    double d1, d2;
    phi_plane_distances(w, p, d1, d2);
    return w[2] <= GEO_PI ? (d1 <= 0.0 && d2 <= 0.0) : (d1 <= 0.0 || d2 <= 0.0);
}

/// PhiSegment::sd.
__device__ __forceinline__ double phi_sd(const double* w, V3 p) {
    double d1, d2;
    phi_plane_distances(w, p, d1, d2);
    return w[2] <= GEO_PI ? fmax(d1, d2) : fmin(d1, d2);
}

/// PhiSegment::roots.
__device__ __forceinline__ void phi_roots(const double* w, RootScan& s, V3 p, V3 d) {
    if (w[0] == 0.0) return;
    plane(s, p, d, v3(w[4], -w[3], 0.0), 0.0);
    plane(s, p, d, v3(w[6], -w[5], 0.0), 0.0);
}

// ---- Polygon: n vertices (r z) ----

/// Polygon::contains: even–odd, half-open rule.
__device__ __forceinline__ bool polygon_contains(const double* v, unsigned n, double r, double z) {
    bool inside = false;
    for (unsigned i = 0; i < n; ++i) {
        unsigned j = i + 1 == n ? 0 : i + 1;
        double r1 = v[2 * i], z1 = v[2 * i + 1], r2 = v[2 * j], z2 = v[2 * j + 1];
        if ((z1 > z) != (z2 > z)) {
            double rc = r1 + (z - z1) * (r2 - r1) / (z2 - z1);
            if (rc > r) inside = !inside;
        }
    }
    return inside;
}

/// Polygon::boundary_distance (edges on the axis left out).
__device__ __forceinline__ double polygon_boundary_distance(const double* v, unsigned n, double r, double z) {
    double best = GEO_INF;
    for (unsigned i = 0; i < n; ++i) {
        unsigned j = i + 1 == n ? 0 : i + 1;
        double r1 = v[2 * i], z1 = v[2 * i + 1], r2 = v[2 * j], z2 = v[2 * j + 1];
        if (r1 == 0.0 && r2 == 0.0) continue;
        double er = r2 - r1, ez = z2 - z1;
        double len2 = er * er + ez * ez;
        double s = len2 > 0.0 ? fmin(fmax(((r - r1) * er + (z - z1) * ez) / len2, 0.0), 1.0) : 0.0;
        double dr = r - (r1 + s * er), dz = z - (z1 + s * ez);
        best = fmin(best, sqrt(dr * dr + dz * dz));
    }
    return best;
}

// ---- Sides (polyhedra): start delta, then n normals ----

/// Sides::side_of.
__device__ __forceinline__ unsigned side_of(const double* sides, unsigned n, V3 p) {
    double start = sides[0], delta = sides[1];
    double rel = fmod(atan2(p.y, p.x) - start, GEO_TAU);
    if (rel < 0.0) rel = rel + GEO_TAU;
    if (rel > delta) rel = (rel - delta < GEO_TAU - rel) ? delta : 0.0;
    double k = rel / delta * (double)n;
    unsigned kk = k >= 0.0 ? (unsigned)k : 0u;
    return kk < n - 1 ? kk : n - 1;
}

// ---- the solids ----

__device__ bool contains(Solids S, unsigned id, V3 p);

/// Solids::contains: strict membership, the definition of the solid.
__device__ __noinline__ bool contains(Solids S, unsigned id, V3 p) {
    SolidRecord r = S.rec[id];
    const double* q = S.pool + r.offset;
    switch (r.kind) {
    case SOLID_BOX:
        return fabs(p.x) <= q[0] && fabs(p.y) <= q[1] && fabs(p.z) <= q[2];
    case SOLID_CONVEX:
        for (unsigned i = 0; i < r.count; ++i) {
            const double* pl = q + 4 * i;
            if (!(dot(v3(pl[0], pl[1], pl[2]), p) <= pl[3])) return false;
        }
        return true;
    case SOLID_REVOLVED:
        return phi_contains(q, p) && polygon_contains(q + 7, r.count, rho(p), p.z);
    case SOLID_SPHERE: {
        const double* s = q + 7;  // rmin rmax θs θe sinθs cosθs sinθe cosθe
        double r2 = dot(p, p);
        if (r2 > s[1] * s[1] || r2 < s[0] * s[0] || !phi_contains(q, p)) return false;
        if (s[2] > 0.0 || s[3] < GEO_PI) {
            double th = atan2(rho(p), p.z);
            return th >= s[2] && th <= s[3];
        }
        return true;
    }
    case SOLID_POLYHEDRA: {
        if (!phi_contains(q, p)) return false;
        const double* sides = q + 7;
        unsigned k = side_of(sides, r.aux, p);
        double nx = sides[2 + 2 * k], ny = sides[3 + 2 * k];
        return polygon_contains(sides + 2 + 2 * r.aux, r.count, nx * p.x + ny * p.y, p.z);
    }
    default: {  // SOLID_BOOLEAN
        Xf xa = xf_load(q), xb = xf_load(q + 12);
        bool ina = contains(S, r.a, to_local(xa, p));
        if (r.aux == 0) return ina || contains(S, r.b, to_local(xb, p));
        if (r.aux == 2) return ina && contains(S, r.b, to_local(xb, p));
        return ina && !contains(S, r.b, to_local(xb, p));
    }
    }
}

/// Solids::signed_distance: a lower bound of the distance to the boundary (positive outside).
__device__ __noinline__ double signed_distance(Solids S, unsigned id, V3 p) {
    SolidRecord r = S.rec[id];
    const double* q = S.pool + r.offset;
    switch (r.kind) {
    case SOLID_BOX: {
        V3 e = v3(fabs(p.x) - q[0], fabs(p.y) - q[1], fabs(p.z) - q[2]);
        double outside = norm(v3(fmax(e.x, 0.0), fmax(e.y, 0.0), fmax(e.z, 0.0)));
        return outside > 0.0 ? outside : fmax(fmax(e.x, e.y), e.z);
    }
    case SOLID_CONVEX: {
        double s = -GEO_INF;
        for (unsigned i = 0; i < r.count; ++i) {
            const double* pl = q + 4 * i;
            s = fmax(s, dot(v3(pl[0], pl[1], pl[2]), p) - pl[3]);
        }
        return s;
    }
    case SOLID_REVOLVED: {
        double rr = rho(p), z = p.z;
        double m = polygon_boundary_distance(q + 7, r.count, rr, z);
        double s = polygon_contains(q + 7, r.count, rr, z) ? -m : m;
        return q[0] != 0.0 ? fmax(s, phi_sd(q, p)) : s;
    }
    case SOLID_SPHERE: {
        const double* sp = q + 7;
        double rr = norm(p);
        double s = fmax(rr - sp[1], sp[0] - rr);
        if (q[0] != 0.0) s = fmax(s, phi_sd(q, p));
        double th = atan2(rho(p), p.z);
        auto nappe = [&](double a) { return fabs(a) <= 0.5 * GEO_PI ? rr * sin(fabs(a)) : rr; };
        if (sp[2] > 0.0) {
            double a = th - sp[2];
            s = fmax(s, a >= 0.0 ? -nappe(a) : nappe(a));
        }
        if (sp[3] < GEO_PI) {
            double a = sp[3] - th;
            s = fmax(s, a >= 0.0 ? -nappe(a) : nappe(a));
        }
        return s;
    }
    case SOLID_POLYHEDRA: {
        const double* sides = q + 7;
        const double* poly = sides + 2 + 2 * r.aux;
        double m = GEO_INF;
        for (unsigned k = 0; k < r.aux; ++k) {
            double nx = sides[2 + 2 * k], ny = sides[3 + 2 * k];
            m = fmin(m, polygon_boundary_distance(poly, r.count, nx * p.x + ny * p.y, p.z));
        }
        if (q[0] != 0.0) {
            double d1, d2;
            phi_plane_distances(q, p, d1, d2);
            m = fmin(fmin(m, fabs(d1)), fabs(d2));
        }
        return contains(S, id, p) ? -m : m;
    }
    default: {
        Xf xa = xf_load(q), xb = xf_load(q + 12);
        double sa = signed_distance(S, r.a, to_local(xa, p));
        double sb = signed_distance(S, r.b, to_local(xb, p));
        if (r.aux == 0) return fmin(sa, sb);
        if (r.aux == 2) return fmax(sa, sb);
        return fmax(sa, -sb);
    }
    }
}

/// Solids::roots: every surface the boundary lies on, into the scan.
__device__ __noinline__ void roots(Solids S, unsigned id, V3 p, V3 d, RootScan& s) {
    SolidRecord r = S.rec[id];
    const double* q = S.pool + r.offset;
    switch (r.kind) {
    case SOLID_BOX:
        plane(s, p, d, v3(1.0, 0.0, 0.0), q[0]);
        plane(s, p, d, v3(1.0, 0.0, 0.0), -q[0]);
        plane(s, p, d, v3(0.0, 1.0, 0.0), q[1]);
        plane(s, p, d, v3(0.0, 1.0, 0.0), -q[1]);
        plane(s, p, d, v3(0.0, 0.0, 1.0), q[2]);
        plane(s, p, d, v3(0.0, 0.0, 1.0), -q[2]);
        return;
    case SOLID_CONVEX:
        for (unsigned i = 0; i < r.count; ++i) {
            const double* pl = q + 4 * i;
            plane(s, p, d, v3(pl[0], pl[1], pl[2]), pl[3]);
        }
        return;
    case SOLID_REVOLVED: {
        const double* v = q + 7;
        for (unsigned i = 0; i < r.count; ++i) {
            unsigned j = i + 1 == r.count ? 0 : i + 1;
            double r1 = v[2 * i], z1 = v[2 * i + 1], r2 = v[2 * j], z2 = v[2 * j + 1];
            if (z1 == z2) {
                plane(s, p, d, v3(0.0, 0.0, 1.0), z1);
            } else if (r1 == r2) {
                if (r1 > 0.0) cylinder(s, p, d, r1);
            } else {
                double k = (r2 - r1) / (z2 - z1);
                cone(s, p, d, r1 - k * z1, k);
            }
        }
        phi_roots(q, s, p, d);
        return;
    }
    case SOLID_SPHERE: {
        const double* sp = q + 7;
        sphere(s, p, d, sp[1]);
        if (sp[0] > 0.0) sphere(s, p, d, sp[0]);
        phi_roots(q, s, p, d);
        if (sp[2] > 0.0) theta_cone(s, p, d, sp[4], sp[5]);
        if (sp[3] < GEO_PI) theta_cone(s, p, d, sp[6], sp[7]);
        return;
    }
    case SOLID_POLYHEDRA: {
        const double* sides = q + 7;
        const double* v = sides + 2 + 2 * r.aux;
        for (unsigned i = 0; i < r.count; ++i) {
            unsigned j = i + 1 == r.count ? 0 : i + 1;
            double u1 = v[2 * i], z1 = v[2 * i + 1], u2 = v[2 * j], z2 = v[2 * j + 1];
            if (u1 == 0.0 && u2 == 0.0) continue;
            if (z1 == z2) {
                plane(s, p, d, v3(0.0, 0.0, 1.0), z1);
                continue;
            }
            double a = z2 - z1, b = -(u2 - u1);
            double c = a * u1 + b * z1;
            for (unsigned k = 0; k < r.aux; ++k) plane(s, p, d, v3(a * sides[2 + 2 * k], a * sides[3 + 2 * k], b), c);
        }
        phi_roots(q, s, p, d);
        return;
    }
    default: {
        Xf xa = xf_load(q), xb = xf_load(q + 12);
        roots(S, r.a, to_local(xa, p), dir_to_local(xa, d), s);
        roots(S, r.b, to_local(xb, p), dir_to_local(xb, d), s);
        return;
    }
    }
}

/// The least root beyond `after` and its multiplicity (`count` 0: none).
__device__ __forceinline__ RootScan next_root(Solids S, unsigned id, V3 p, V3 d, double after) {
    RootScan s{after, GEO_INF, 0};
    roots(S, id, p, d, s);
    return s;
}

/// Solids::first_segment: the CPU sorts [0, roots…] and classifies each segment by `contains` at
/// its midpoint (the last one at a + 1 + a). Here the sorted list is walked one scan at a time;
/// a root that occurs k > 1 times is a zero-length segment first (midpoint = the root itself).
__device__ __noinline__ double first_segment(Solids S, unsigned id, V3 p, V3 d, bool want) {
    double a = 0.0;
    int k = 1;
    for (;;) {
        if (k > 1 && contains(S, id, along(p, d, a)) == want) return a;
        RootScan n = next_root(S, id, p, d, a);
        double mid = n.count > 0 ? 0.5 * (a + n.best) : a + 1.0 + a;
        if (contains(S, id, along(p, d, mid)) == want) return a;
        if (n.count == 0) return GEO_INF;
        a = n.best;
        k = n.count;
    }
}

/// Solids::distance_to_in.
__device__ __forceinline__ double distance_to_in(Solids S, unsigned id, V3 p, V3 d) { return first_segment(S, id, p, d, true); }
/// Solids::distance_to_out.
__device__ __forceinline__ double distance_to_out(Solids S, unsigned id, V3 p, V3 d) { return first_segment(S, id, p, d, false); }
/// Solids::safety_to_in.
__device__ __forceinline__ double safety_to_in(Solids S, unsigned id, V3 p) { return contains(S, id, p) ? 0.0 : fabs(signed_distance(S, id, p)); }
/// Solids::safety_to_out.
__device__ __forceinline__ double safety_to_out(Solids S, unsigned id, V3 p) { return contains(S, id, p) ? fabs(signed_distance(S, id, p)) : 0.0; }
