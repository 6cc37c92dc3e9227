// CUDA twins of crates/beam/src/elements/bend.rs: the CSBEND kick–drift integrator
// (`Bend::kick_drift` = `Bend::track` with N_KICKS steps of INTEGRATION_ORDER), the same
// operations in the same order. The constants come from `Bend::track_constants` (host libm's
// sin, cos, tan); the only device transcendental is asin in `dipole` and `wedge`.
namespace bend {

// Exact arc of a uniform field (bend.rs `dipole_arc`); a: φ, sin φ, cos φ, 1 − cos φ, h, 1/h.
__device__ __forceinline__ void dipole(double& z0, double& z2, double& z4, double z5, double& px, double py, const double* a) {
    const double d1 = 1.0 + z5;
    const double pperp2 = d1 * d1 - py * py;
    const double ps = sqrt(pperp2 - px * px);
    const double x = z0;
    const double px1 = px * a[2] + (ps - 1.0 - a[4] * x) * a[1];
    const double ps1 = sqrt(pperp2 - px1 * px1);
    const double x1 = x * a[2] + (ps1 - ps * a[2] + px * a[1] - a[3]) * a[5];
    const double pperp = sqrt(pperp2);
    const double alpha = a[0] + asin(px / pperp) - asin(px1 / pperp);
    z0 = x1;
    z2 = z2 + alpha * py * a[5];
    z4 = z4 + alpha * d1 * a[5];
    px = px1;
}

// Hard-edge pole-face kick (bend.rs `edge`): p_x += h tan(e) x, p_y −= h tan(e − ψ) y.
__device__ __forceinline__ void edge(double z0, double z2, double& px, double& py, double hte, double htpsi) {
    px = px + hte * z0;
    py = py - htpsi * z2;
}

// Leading nonlinear hard-edge term (bend.rs `fringe`): a = ±h/2, b = ±h.
__device__ __forceinline__ void fringe(double& z0, double z2, double px, double& py, double a, double b) {
    const double y = z2;
    z0 = z0 + a * y * y;
    py = py - b * y * px;
}

// Field-free change of frame to the frame turned by θ (bend.rs `rotate_frame`); c, s: cos θ, sin θ.
__device__ __forceinline__ void rotate_frame(double& z0, double& z2, double& z4, double z5, double& px, double py, double c, double s) {
    const double d1 = 1.0 + z5;
    const double ps = sqrt(d1 * d1 - px * px - py * py);
    const double den = ps * c - px * s;
    const double tau = z0 * s / den;
    z0 = z0 * ps / den;
    z2 = z2 + tau * py;
    z4 = z4 + tau * d1;
    px = px * c + ps * s;
}

// The wedge: change of frame inside the field (bend.rs `wedge`); w: θ, cos θ, sin θ, sin 2θ, sin²θ, h, 1/h.
__device__ __forceinline__ void wedge(double& z0, double& z2, double& z4, double z5, double& px, double py, const double* w) {
    const double d1 = 1.0 + z5;
    const double pperp2 = d1 * d1 - py * py;
    const double ps = sqrt(pperp2 - px * px);
    const double x = z0;
    const double px1 = px * w[1] + (ps - w[5] * x) * w[2];
    const double ps1 = sqrt(pperp2 - px1 * px1);
    const double num = x * px * w[3] + w[4] * (2.0 * x * ps - w[5] * x * x);
    const double x1 = x * w[1] + num / (ps1 + ps * w[1] - px * w[2]);
    const double pperp = sqrt(pperp2);
    const double alpha = w[0] + asin(px / pperp) - asin(px1 / pperp);
    z0 = x1;
    z2 = z2 + alpha * py * w[6];
    z4 = z4 + alpha * d1 * w[6];
    px = px1;
}

// Hard-edge fringe in the pole face's frame (bend.rs `edge_fringe`); t = tan(σψ), a = σh/2, b = σh.
__device__ __forceinline__ void edge_fringe(double& z0, double z2, double& z4, double z5, double px, double& py, double t, double a, double b) {
    const double d1 = 1.0 + z5;
    const double pz = sqrt(d1 * d1 - px * px);
    const double u = px / pz;
    const double g = (u - t) / (1.0 + u * t);
    const double gg = 1.0 + g * g;
    const double y = z2;
    const double q = a * y * y * gg / pz;
    z0 = z0 + q;
    z4 = z4 + q * px / d1;
    py = py - b * y * g;
}

// The exact edge with its wedge (bend.rs `wedge_edge`; w: `Bend::wedge_edge`'s 12 constants).
__device__ __forceinline__ void wedge_edge(double& z0, double& z2, double& z4, double z5, double& px, double& py, const double* w, bool entrance) {
    if (entrance) {
        rotate_frame(z0, z2, z4, z5, px, py, w[0], w[1]);
        edge_fringe(z0, z2, z4, z5, px, py, w[9], w[10], w[11]);
        wedge(z0, z2, z4, z5, px, py, w + 2);
    } else {
        wedge(z0, z2, z4, z5, px, py, w + 2);
        edge_fringe(z0, z2, z4, z5, px, py, w[9], w[10], w[11]);
        rotate_frame(z0, z2, z4, z5, px, py, w[0], w[1]);
    }
}

// The body's multipole kick over t (the closure of bend.rs `Bend::track`); m: K1, K2/2, h K1, K2 + h K1.
__device__ __forceinline__ void kick(double x, double y, double& px, double& py, const double* m, double t) {
    px = px - t * (m[0] * x + m[1] * (x * x - y * y) + m[2] * (x * x - 0.5 * y * y));
    py = py + t * (m[0] * y + m[3] * x * y);
}

// bend.rs `Bend::track` (layout of k: `Bend::track_constants`). Not inlined: a ring calls it
// at every bend, and NVRTC compiled each inlined copy of the integrator anew (a 193-element ring
// with 96 integrated elements took 105 s to compile inlined, 2 s with one copy).
__device__ __noinline__ void track(double& z0, double& z1, double& z2, double& z3, double& z4, double& z5, const double* k) {
    double px, py;
    elements::to_canonical(z1, z3, z5, px, py);
    // Each edge's wedge flag and constants follow the weights (`Bend::track_constants`).
    const double* we = k + 24 + 7 * (int)k[13];
    if (we[0] != 0.0) {
        wedge_edge(z0, z2, z4, z5, px, py, we + 1, true);
    } else {
        if (k[4] != 0.0) fringe(z0, z2, px, py, k[0], k[1]);
        if (k[5] != 0.0) edge(z0, z2, px, py, k[6], k[7]);
    }
    if (k[11] == 0.0) {
        dipole(z0, z2, z4, z5, px, py, k + 18);
    } else {
        const int steps = (int)k[12], nw = (int)k[13];
        for (int s = 0; s < steps; ++s) {
            for (int w = 0; w < nw; ++w) {
                const double* q = k + 24 + 7 * w;
                dipole(z0, z2, z4, z5, px, py, q);
                kick(z0, z2, px, py, k + 14, q[6]);
                dipole(z0, z2, z4, z5, px, py, q);
            }
        }
    }
    if (we[13] != 0.0) {
        wedge_edge(z0, z2, z4, z5, px, py, we + 14, false);
    } else {
        if (k[8] != 0.0) edge(z0, z2, px, py, k[9], k[10]);
        if (k[4] != 0.0) fringe(z0, z2, px, py, k[2], k[3]);
    }
    elements::from_canonical(z1, z3, z5, px, py);
}

}  // namespace bend
