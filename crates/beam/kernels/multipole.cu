// CUDA twins of crates/beam/src/elements/multipole.rs: the thin and kick-integrated multipole
// (`Multipole::kick_drift` = `Multipole::track`: KQUAD, KSEXT, KOCT), the same operations in
// the same order; constants from `Multipole::track_constants`.
namespace multipole {

// (Δp_x, Δp_y) of the normal multipole of order n (multipole.rs `kick`); f = K_nL/n!.
__device__ __forceinline__ void kick(double x, double y, int n, double f, double& dx, double& dy) {
    double re = 1.0, im = 0.0;
    for (int k = 1; k <= n; ++k) {
        const double r = re * x - im * y;
        im = re * y + im * x;
        re = r;
    }
    dx = -(f * re);
    dy = f * im;
}

// multipole.rs `Multipole::track` (layout of k: `Multipole::track_constants`). Not inlined,
// as bend::track: one copy of the integrator however many elements call it.
__device__ __noinline__ void track(double& z0, double& z1, double& z2, double& z3, double& z4, double& z5, const double* k) {
    double px, py, dx, dy;
    elements::to_canonical(z1, z3, z5, px, py);
    const int n = (int)k[1];
    if (k[0] != 0.0) {
        kick(z0, z2, n, k[4], dx, dy);
        px = px + dx;
        py = py + dy;
    } else {
        const int steps = (int)k[2], nw = (int)k[3];
        for (int s = 0; s < steps; ++s) {
            for (int w = 0; w < nw; ++w) {
                const double* q = k + 5 + 2 * w;
                elements::straight_drift(z0, z2, z4, z5, px, py, q[0]);
                kick(z0, z2, n, q[1], dx, dy);
                px = px + dx;
                py = py + dy;
                elements::straight_drift(z0, z2, z4, z5, px, py, q[0]);
            }
        }
    }
    elements::from_canonical(z1, z3, z5, px, py);
}

}  // namespace multipole
