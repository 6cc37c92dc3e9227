// CUDA twins of crates/beam/src/elements/mod.rs (canonical momenta, the straight drift, TILT),
// the same operations in the same order as the Rust functions of the same names. Included in
// the generated map kernels (src/gpu.rs) ahead of bend.cu and multipole.cu.
namespace elements {

// ELEGANT slopes -> canonical momenta: p_x = (1+δ) x' / √(1 + x'² + y'²).
__device__ __forceinline__ void to_canonical(double z1, double z3, double z5, double& px, double& py) {
    const double f = (1.0 + z5) / sqrt(1.0 + z1 * z1 + z3 * z3);
    px = z1 * f;
    py = z3 * f;
}

// p_s = √((1+δ)² − p_x² − p_y²).
__device__ __forceinline__ double longitudinal(double delta, double px, double py) {
    const double d1 = 1.0 + delta;
    return sqrt(d1 * d1 - px * px - py * py);
}

// Canonical momenta -> slopes x' = p_x/p_s, y' = p_y/p_s.
__device__ __forceinline__ void from_canonical(double& z1, double& z3, double z5, double px, double py) {
    const double ps = longitudinal(z5, px, py);
    z1 = px / ps;
    z3 = py / ps;
}

// The exact field-free drift over t (H = −p_s): x += t p_x/p_s, y += t p_y/p_s, ℓ += t (1+δ)/p_s.
__device__ __forceinline__ void straight_drift(double& z0, double& z2, double& z4, double z5, double px, double py, double t) {
    const double ps = longitudinal(z5, px, py);
    z0 = z0 + t * px / ps;
    z2 = z2 + t * py / ps;
    z4 = z4 + t * (1.0 + z5) / ps;
}

// Rotation into a frame turned by an angle with cosine c and sine s (host values).
__device__ __forceinline__ void rotate(double& z0, double& z1, double& z2, double& z3, double c, double s) {
    const double x = z0, y = z2;
    z0 = c * x + s * y;
    z2 = c * y - s * x;
    const double xp = z1, yp = z3;
    z1 = c * xp + s * yp;
    z3 = c * yp - s * xp;
}

}  // namespace elements
