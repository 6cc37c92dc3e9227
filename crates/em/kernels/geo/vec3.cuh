// Twin of crates/em/src/geo/vec3.rs: three-vectors and rigid transforms in f64 (mm). Built
// precise (no contraction): every product and sum rounded as the CPU rounds it; `along` is the
// CPU's `mul_add`, here `fma`.

/// +∞ (NVRTC has no <math.h> INFINITY).
#define GEO_INF __longlong_as_double(0x7ff0000000000000LL)

struct V3 {
    double x, y, z;
};

__device__ __forceinline__ V3 v3(double x, double y, double z) { return V3{x, y, z}; }
__device__ __forceinline__ double dot(V3 a, V3 o) { return a.x * o.x + a.y * o.y + a.z * o.z; }
__device__ __forceinline__ V3 sub(V3 a, V3 o) { return v3(a.x - o.x, a.y - o.y, a.z - o.z); }
__device__ __forceinline__ V3 add(V3 a, V3 o) { return v3(a.x + o.x, a.y + o.y, a.z + o.z); }
__device__ __forceinline__ double norm(V3 a) { return sqrt(dot(a, a)); }
/// `self + t·d` (Vec3::along).
__device__ __forceinline__ V3 along(V3 p, V3 d, double t) { return v3(fma(t, d.x, p.x), fma(t, d.y, p.y), fma(t, d.z, p.z)); }
/// √(x² + y²) as written (Vec3::rho).
__device__ __forceinline__ double rho(V3 p) { return sqrt(p.x * p.x + p.y * p.y); }

/// A placement: rotation rows r[0..9], translation t (Transform; daughter → mother).
struct Xf {
    double r[9];
    double t[3];
};

__device__ __forceinline__ Xf xf_load(const double* n) {
    Xf x;
    for (int i = 0; i < 9; ++i) x.r[i] = n[i];
    for (int i = 0; i < 3; ++i) x.t[i] = n[9 + i];
    return x;
}

__device__ __forceinline__ Xf xf_identity() {
    Xf x;
    for (int i = 0; i < 9; ++i) x.r[i] = (i % 4 == 0) ? 1.0 : 0.0;
    for (int i = 0; i < 3; ++i) x.t[i] = 0.0;
    return x;
}

/// Rot3::apply.
__device__ __forceinline__ V3 rot_apply(const double* r, V3 v) {
    return v3(r[0] * v.x + r[1] * v.y + r[2] * v.z, r[3] * v.x + r[4] * v.y + r[5] * v.z, r[6] * v.x + r[7] * v.y + r[8] * v.z);
}
/// Rot3::apply_inverse (Rᵀ v).
__device__ __forceinline__ V3 rot_apply_inverse(const double* r, V3 v) {
    return v3(r[0] * v.x + r[3] * v.y + r[6] * v.z, r[1] * v.x + r[4] * v.y + r[7] * v.z, r[2] * v.x + r[5] * v.y + r[8] * v.z);
}
/// Transform::to_local: rotᵀ (p − translation).
__device__ __forceinline__ V3 to_local(const Xf& x, V3 p) { return rot_apply_inverse(x.r, sub(p, v3(x.t[0], x.t[1], x.t[2]))); }
/// Transform::dir_to_local.
__device__ __forceinline__ V3 dir_to_local(const Xf& x, V3 d) { return rot_apply_inverse(x.r, d); }
/// Transform::to_mother.
__device__ __forceinline__ V3 to_mother(const Xf& x, V3 p) { return add(rot_apply(x.r, p), v3(x.t[0], x.t[1], x.t[2])); }
/// Transform::compose: `inner` placed in the frame `outer` places (Rot3::then_after sums over k in order).
__device__ __forceinline__ Xf compose(const Xf& outer, const Xf& inner) {
    Xf c;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            c.r[3 * i + j] = (outer.r[3 * i] * inner.r[j] + outer.r[3 * i + 1] * inner.r[3 + j]) + outer.r[3 * i + 2] * inner.r[6 + j];
    V3 t = to_mother(outer, v3(inner.t[0], inner.t[1], inner.t[2]));
    c.t[0] = t.x;
    c.t[1] = t.y;
    c.t[2] = t.z;
    return c;
}
