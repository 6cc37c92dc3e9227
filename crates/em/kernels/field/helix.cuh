// Twin of crates/em/src/field/helix.rs: a charged track's helix in a uniform field, with the
// portable trigonometry (pmath.cuh pm_sincos, pm_sin: the same bits as warpdrive_core::pmath),
// the same operations in the same order as the Rust code (built without contraction).
// (after geo/vec3.cuh; pmath.cuh comes later in the GDML build, with shower.cu: declared here)

__device__ void pm_sincos(double x, double* s_out, double* c_out);
__device__ double pm_sin(double x);

/// helix.rs C_LIGHT: c in m/ns.
#define FIELD_C_LIGHT 0.299792458

/// Vec3 * s (helix.rs `Mul<f64>`).
__device__ __forceinline__ V3 scale(V3 a, double s) { return v3(a.x * s, a.y * s, a.z * s); }
/// Vec3::cross.
__device__ __forceinline__ V3 cross(V3 a, V3 o) { return v3(a.y * o.z - a.z * o.y, a.z * o.x - a.x * o.z, a.x * o.y - a.y * o.x); }

/// UniformField: B [T].
struct UniformField {
    V3 b;
};

/// Helix.
struct Helix {
    V3 origin, parallel, u, v;
    double omega;
};

/// Helix::new.
__device__ __forceinline__ Helix helix_new(V3 origin, V3 dir, double q, double p, const UniformField& field) {
    Helix h;
    double bmag = norm(field.b);
    h.origin = origin;
    if (bmag == 0.0 || q == 0.0) {
        h.parallel = dir;
        h.u = v3(0.0, 0.0, 0.0);
        h.v = v3(0.0, 0.0, 0.0);
        h.omega = 0.0;
        return h;
    }
    V3 bhat = scale(field.b, 1.0 / bmag);
    h.parallel = scale(bhat, dot(dir, bhat));
    h.u = sub(dir, h.parallel);
    h.v = cross(h.u, bhat);
    h.omega = FIELD_C_LIGHT * q * bmag / p;
    return h;
}

/// Helix::radius.
__device__ __forceinline__ double helix_radius(const Helix& h) { return h.omega == 0.0 ? GEO_INF : norm(h.u) / fabs(h.omega); }

/// Helix::at: position and unit direction after a path length `s` [mm].
__device__ __forceinline__ void helix_at(const Helix& h, double s, V3& pos, V3& dir) {
    if (h.omega == 0.0) {
        V3 d = add(h.parallel, h.u);
        pos = along(h.origin, d, s);
        dir = d;
        return;
    }
    double th = h.omega * s;
    double sn, cs;
    pm_sincos(th, &sn, &cs);
    double half = pm_sin(0.5 * th);
    double one_minus_cos = 2.0 * half * half;
    pos = add(add(add(h.origin, scale(h.parallel, s)), scale(h.u, sn / h.omega)), scale(h.v, one_minus_cos / h.omega));
    dir = add(add(h.parallel, scale(h.u, cs)), scale(h.v, sn));
}

/// Helix::max_step_for_sagitta.
__device__ __forceinline__ double helix_max_step_for_sagitta(const Helix& h, double delta_chord) {
    double r = helix_radius(h);
    if (!isfinite(r)) return GEO_INF;
    double theta = fmin(sqrt(8.0 * delta_chord / r), 1.5707963267948966);
    return theta / fabs(h.omega);
}
