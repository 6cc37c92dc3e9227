// Twin of crates/em/src/field/rk.rs: the embedded Runge–Kutta pair RK5(4)7M of Dormand & Prince
// (J. R. Dormand, P. J. Prince, J. Comput. Appl. Math. 6 (1980) 19–26, table 2) for a charged
// track in a static field map, with rk.rs's step-size control (Hairer, Nørsett & Wanner,
// Solving ODEs I, §II.4). The same operations in the same order as the Rust code (built without
// contraction); the step-size factor uses the portable pow (pmath.cuh pm_pow: the same bits as
// warpdrive_core::pmath::pow).
// (after geo/vec3.cuh, field/helix.cuh and field/map.cuh; pmath.cuh comes later, with shower.cu)

__device__ double pm_pow(double x, double y);

/// rk.rs State: position [mm] and unit direction.
struct RkState {
    V3 x, d;
};

/// rk.rs A (Butcher tableau, row i, column j < i), B5, B4: the Rust constants' expressions.
__device__ __forceinline__ double rk_a(int i, int j) {
    switch (i * 8 + j) {
        case 8: return 1.0 / 5.0;
        case 16: return 3.0 / 40.0;
        case 17: return 9.0 / 40.0;
        case 24: return 44.0 / 45.0;
        case 25: return -56.0 / 15.0;
        case 26: return 32.0 / 9.0;
        case 32: return 19372.0 / 6561.0;
        case 33: return -25360.0 / 2187.0;
        case 34: return 64448.0 / 6561.0;
        case 35: return -212.0 / 729.0;
        case 40: return 9017.0 / 3168.0;
        case 41: return -355.0 / 33.0;
        case 42: return 46732.0 / 5247.0;
        case 43: return 49.0 / 176.0;
        case 44: return -5103.0 / 18656.0;
        case 48: return 35.0 / 384.0;
        case 49: return 0.0;
        case 50: return 500.0 / 1113.0;
        case 51: return 125.0 / 192.0;
        case 52: return -2187.0 / 6784.0;
        case 53: return 11.0 / 84.0;
        default: return 0.0;
    }
}
__device__ __forceinline__ double rk_b5(int i) {
    switch (i) {
        case 0: return 35.0 / 384.0;
        case 2: return 500.0 / 1113.0;
        case 3: return 125.0 / 192.0;
        case 4: return -2187.0 / 6784.0;
        case 5: return 11.0 / 84.0;
        default: return 0.0;
    }
}
__device__ __forceinline__ double rk_b4(int i) {
    switch (i) {
        case 0: return 5179.0 / 57600.0;
        case 2: return 7571.0 / 16695.0;
        case 3: return 393.0 / 640.0;
        case 4: return -92097.0 / 339200.0;
        case 5: return 187.0 / 2100.0;
        case 6: return 1.0 / 40.0;
        default: return 0.0;
    }
}

/// rk.rs dormand_prince_step: one step of length `h` in the map; the 5th-order state in `out`
/// and the error estimate max(|x5 − x4|/h, |Ω5 − Ω4|) returned. `k` = 0.299792458 q/p.
__device__ __noinline__ double dormand_prince_step(const FieldMap& m, RkState y, double h, double k, RkState& out) {
    RkState ks[7];
    for (int i = 0; i < 7; ++i) {
        V3 x = y.x, d = y.d;
        for (int j = 0; j < i; ++j) {
            double a = rk_a(i, j) * h;
            if (a != 0.0) {
                x = add(x, scale(ks[j].x, a));
                d = add(d, scale(ks[j].d, a));
            }
        }
        // f(y) = (Ω, k Ω × B(x)).
        ks[i].x = d;
        ks[i].d = scale(cross(d, field_map_at(m, x)), k);
    }
    V3 x5 = y.x, d5 = y.d, dx = v3(0.0, 0.0, 0.0), dd = v3(0.0, 0.0, 0.0);
    for (int i = 0; i < 7; ++i) {
        x5 = add(x5, scale(ks[i].x, rk_b5(i) * h));
        d5 = add(d5, scale(ks[i].d, rk_b5(i) * h));
        dx = add(dx, scale(ks[i].x, (rk_b5(i) - rk_b4(i)) * h));
        dd = add(dd, scale(ks[i].d, (rk_b5(i) - rk_b4(i)) * h));
    }
    double err = fmax(norm(dx) / h, norm(dd));
    out.x = x5;
    out.d = scale(d5, 1.0 / norm(d5));
    return err;
}

/// rk.rs integrate: from `y` over the path length `s` [mm] with error control `epsilon`, starting
/// with sub-steps of at most `h0` (updated to the last accepted size). At most 100 000 sub-steps.
__device__ __noinline__ RkState integrate(const FieldMap& m, RkState y, double s, double k, double epsilon, double& h0) {
    double done = 0.0;
    double h = fmax(fmin(h0, s), 1e-9);
    unsigned int guard = 0u;
    while (done < s) {
        guard += 1u;
        bool last = s - done <= h || guard > 100000u;
        double step = last ? s - done : h;
        RkState next;
        double err = dormand_prince_step(m, y, step, k, next);
        if (err <= epsilon || step <= 1e-9 || guard > 100000u) {
            y = next;
            done = last ? s : done + step;
            if (!last) h = step * (err > 0.0 ? fmin(0.9 * pm_pow(epsilon / err, 0.2), 5.0) : 5.0);
        } else {
            h = step * fmax(0.9 * pm_pow(epsilon / err, 0.2), 0.2);
        }
    }
    h0 = h;
    return y;
}
