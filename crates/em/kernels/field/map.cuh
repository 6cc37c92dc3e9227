// Twin of crates/em/src/field/map.rs: a cylindrically symmetric field map on an (r, z) grid,
// B(x) = (B_r x/r, B_r y/r, B_z) with B_r and B_z interpolated bilinearly in the cell
// [r_i, r_i+1] × [z_j, z_j+1] (Press et al., Numerical Recipes §3.6), clamped to the grid; the
// same operations in the same order as the Rust code (built without contraction).
// (after geo/vec3.cuh and field/helix.cuh)

/// FieldMap: increasing node coordinates r[nr], z[nz] [mm]; per node, index i·nz + j, (B_r, B_z)
/// [T] at b[2 (i·nz + j)], b[2 (i·nz + j) + 1]; the largest |B| at a node [T].
struct FieldMap {
    const double* r;
    const double* z;
    const double* b;
    unsigned int nr, nz;
    double b_max;
};

/// map.rs cell: the cell [v_i, v_i+1] holding x (clamped) in `i`, and x's fraction t in it
/// (returned). partition_point(|&a| a <= x), less one (saturating), at most n − 2; t clamped to
/// [0, 1] as f64::clamp (NaN passes through).
__device__ __forceinline__ double field_map_cell(const double* v, unsigned int n, double x, unsigned int& i) {
    unsigned int lo = 0u, hi = n;
    while (lo < hi) {
        unsigned int mid = lo + (hi - lo) / 2u;
        if (v[mid] <= x) lo = mid + 1u; else hi = mid;
    }
    i = lo > 0u ? lo - 1u : 0u;
    if (i > n - 2u) i = n - 2u;
    double t = (x - v[i]) / (v[i + 1u] - v[i]);
    if (t < 0.0) t = 0.0;
    if (t > 1.0) t = 1.0;
    return t;
}

/// FieldMap::brz: (B_r, B_z) [T] at (r, z), bilinear; clamped to the grid.
__device__ __forceinline__ void field_map_brz(const FieldMap& m, double r, double z, double& br, double& bz) {
    unsigned int i, j;
    double t = field_map_cell(m.r, m.nr, r, i);
    double u = field_map_cell(m.z, m.nz, z, j);
    unsigned int nz = m.nz;
    const double* b00 = m.b + 2u * (i * nz + j);
    const double* b10 = m.b + 2u * ((i + 1u) * nz + j);
    const double* b01 = m.b + 2u * (i * nz + j + 1u);
    const double* b11 = m.b + 2u * ((i + 1u) * nz + j + 1u);
    double mix[2];
    for (int k = 0; k < 2; ++k)
        mix[k] = (1.0 - t) * (1.0 - u) * b00[k] + t * (1.0 - u) * b10[k] + (1.0 - t) * u * b01[k] + t * u * b11[k];
    br = mix[0];
    bz = mix[1];
}

/// FieldMap::at: B [T] at a point [mm] in the world's frame (r = √(x² + y²) as written).
__device__ __forceinline__ V3 field_map_at(const FieldMap& m, V3 p) {
    double r = sqrt(p.x * p.x + p.y * p.y);
    double br, bz;
    field_map_brz(m, r, p.z, br, bz);
    if (r < 1e-12) return v3(0.0, 0.0, bz);
    return v3(br * p.x / r, br * p.y / r, bz);
}
