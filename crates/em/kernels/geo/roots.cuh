// Twin of crates/em/src/geo/roots.rs: the crossing distances of a ray with the surfaces that
// bound the solids. The CPU pushes them into a vector and sorts it; the device keeps no list:
// a RootScan asks for the least root beyond `after` and how often it occurs, and the solids'
// `first_segment` walks the sorted roots one scan at a time (solid.cuh). Same roots, same bits.
// (after vec3.cuh: crates/em/src/geo/gpu.rs concatenates vec3, roots, solid, navigator, trace)

struct RootScan {
    double after;  // only roots > after count
    double best;   // least such root so far (∞ none)
    int count;     // its multiplicity
};

/// roots::push: a usable forward distance (t > 0, finite).
__device__ __forceinline__ void push(RootScan& s, double t) {
    if (t > 0.0 && isfinite(t) && t > s.after) {
        if (t < s.best) {
            s.best = t;
            s.count = 1;
        } else if (t == s.best) {
            s.count += 1;
        }
    }
}

/// roots::plane: n·x = c.
__device__ __forceinline__ void plane(RootScan& s, V3 p, V3 d, V3 n, double c) {
    double dn = dot(n, d);
    if (dn != 0.0) push(s, (c - dot(n, p)) / dn);
}

/// roots::quadratic: a t² + 2 b t + c = 0 (Numerical Recipes §5.6).
__device__ __forceinline__ void quadratic(double a, double b, double c, double out[2]) {
    const double nan = __longlong_as_double(0x7ff8000000000000LL);
    out[0] = nan;
    out[1] = nan;
    if (a == 0.0) {
        if (b != 0.0) out[0] = -c / (2.0 * b);
        return;
    }
    double disc = b * b - a * c;
    if (disc < 0.0) {
        if (disc > -1e-12 * b * b) out[0] = -b / a;
        return;
    }
    double q = -(b + copysign(1.0, b) * sqrt(disc));
    if (q == 0.0) {
        out[0] = 0.0;
        return;
    }
    out[0] = q / a;
    out[1] = c / q;
}

/// roots::quadric: solve, polish by one Newton step on the surface function, keep both when the
/// step moved far.
template <class F, class DF>
__device__ __forceinline__ void quadric(RootScan& s, double a, double b, double c, F f, DF df) {
    double ts[2];
    quadratic(a, b, c, ts);
    for (int i = 0; i < 2; ++i) {
        double t = ts[i];
        if (isfinite(t)) {
            double g = df(t);
            double t1 = g != 0.0 ? t - f(t) / g : t;
            push(s, t1);
            if (fabs(t1 - t) > 1e-9) push(s, t);
        }
    }
}

/// roots::cylinder: x² + y² = r².
__device__ __noinline__ void cylinder(RootScan& s, V3 p, V3 d, double r) {
    double a = d.x * d.x + d.y * d.y;
    double b = p.x * d.x + p.y * d.y;
    double c = p.x * p.x + p.y * p.y - r * r;
    auto f = [&](double t) {
        V3 q = along(p, d, t);
        return q.x * q.x + q.y * q.y - r * r;
    };
    auto df = [&](double t) {
        V3 q = along(p, d, t);
        return 2.0 * (q.x * d.x + q.y * d.y);
    };
    quadric(s, a, b, c, f, df);
}

/// roots::cone: ρ = r0 + k z (both nappes).
__device__ __noinline__ void cone(RootScan& s, V3 p, V3 d, double r0, double k) {
    double w = r0 + k * p.z;
    double a = d.x * d.x + d.y * d.y - k * k * d.z * d.z;
    double b = p.x * d.x + p.y * d.y - k * d.z * w;
    double c = p.x * p.x + p.y * p.y - w * w;
    auto f = [&](double t) {
        V3 q = along(p, d, t);
        double w = r0 + k * q.z;
        return q.x * q.x + q.y * q.y - w * w;
    };
    auto df = [&](double t) {
        V3 q = along(p, d, t);
        return 2.0 * (q.x * d.x + q.y * d.y - k * d.z * (r0 + k * q.z));
    };
    quadric(s, a, b, c, f, df);
}

/// roots::sphere: |x| = r.
__device__ __noinline__ void sphere(RootScan& s, V3 p, V3 d, double r) {
    double b = dot(p, d);
    double c = dot(p, p) - r * r;
    auto f = [&](double t) {
        V3 q = along(p, d, t);
        return dot(q, q) - r * r;
    };
    auto df = [&](double t) { return 2.0 * dot(along(p, d, t), d); };
    quadric(s, dot(d, d), b, c, f, df);
}

/// roots::theta_cone: polar angle θ about +z, apex at the origin; `sn`, `cs` are sin θ, cos θ
/// computed by the host's libm (the CPU calls the same `sin_cos`).
__device__ __noinline__ void theta_cone(RootScan& s, V3 p, V3 d, double sn, double cs) {
    if (fabs(cs) < 1e-15) {
        plane(s, p, d, v3(0.0, 0.0, 1.0), 0.0);
        return;
    }
    double s2 = sn * sn, c2 = cs * cs;
    double a = (d.x * d.x + d.y * d.y) * c2 - d.z * d.z * s2;
    double b = (p.x * d.x + p.y * d.y) * c2 - p.z * d.z * s2;
    double cc = (p.x * p.x + p.y * p.y) * c2 - p.z * p.z * s2;
    auto f = [&](double t) {
        V3 q = along(p, d, t);
        return (q.x * q.x + q.y * q.y) * c2 - q.z * q.z * s2;
    };
    auto df = [&](double t) {
        V3 q = along(p, d, t);
        return 2.0 * ((q.x * d.x + q.y * d.y) * c2 - q.z * d.z * s2);
    };
    quadric(s, a, b, cc, f, df);
}
