//! The embedded Runge–Kutta pair of Dormand & Prince (J. R. Dormand, P. J. Prince, "A family of
//! embedded Runge–Kutta formulae", J. Comput. Appl. Math. 6 (1980) 19–26; RK5(4)7M, the pair
//! Geant4's `G4DormandPrince745` and Celeritas' `DormandPrinceStepper` use) for a charged track
//! in a static magnetic field, with step-size control.
//!
//! State y = (x, Ω) along the path length s [mm]: dx/ds = Ω, dΩ/ds = k Ω × B(x) with
//! k = 0.299792458 q/p [1/(mm·T)] (the helix's equation, [`super::helix`]). One step of length h
//! evaluates the seven stages k_i = f(y + h Σ_j a_ij k_j) and gives the 5th-order solution
//! y5 = y + h Σ b_i k_i (propagated: local extrapolation) and the 4th-order y4 = y + h Σ b*_i k_i;
//! their difference estimates the error. A step is accepted when
//! e = max(|Δx|/h, |ΔΩ|) ≤ ε (a relative error per unit length), else it is retried with
//! h·max(0.2, 0.9 (ε/e)^{1/5}); accepted steps grow by at most ×5 (Hairer, Nørsett & Wanner,
//! Solving ODEs I, §II.4). Ω is renormalised after each step (|p| is conserved in a magnetic
//! field). The step-size factor (ε/e)^{1/5} is `warpdrive_core::pmath::pow` (the same bits as
//! its CUDA twin `kernels/field/rk.cuh`).

use crate::geo::Vec3;
use warpdrive_core::pmath::Portable;

/// Butcher tableau of RK5(4)7M (Dormand & Prince 1980, table 2).
/// (The nodes c_i = Σ_j a_ij are not needed: a static field does not depend on s.)
const A: [[f64; 6]; 7] = [
    [0.0; 6],
    [1.0 / 5.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    [3.0 / 40.0, 9.0 / 40.0, 0.0, 0.0, 0.0, 0.0],
    [44.0 / 45.0, -56.0 / 15.0, 32.0 / 9.0, 0.0, 0.0, 0.0],
    [19372.0 / 6561.0, -25360.0 / 2187.0, 64448.0 / 6561.0, -212.0 / 729.0, 0.0, 0.0],
    [
        9017.0 / 3168.0,
        -355.0 / 33.0,
        46732.0 / 5247.0,
        49.0 / 176.0,
        -5103.0 / 18656.0,
        0.0,
    ],
    [35.0 / 384.0, 0.0, 500.0 / 1113.0, 125.0 / 192.0, -2187.0 / 6784.0, 11.0 / 84.0],
];
/// 5th-order weights (the last row of A: first same as last).
const B5: [f64; 7] = [35.0 / 384.0, 0.0, 500.0 / 1113.0, 125.0 / 192.0, -2187.0 / 6784.0, 11.0 / 84.0, 0.0];
/// 4th-order weights.
const B4: [f64; 7] = [
    5179.0 / 57600.0,
    0.0,
    7571.0 / 16695.0,
    393.0 / 640.0,
    -92097.0 / 339_200.0,
    187.0 / 2100.0,
    1.0 / 40.0,
];

/// Position [mm] and unit direction.
pub type State = (Vec3, Vec3);

/// One Dormand–Prince step of length `h`: the 5th-order state and the error estimate
/// max(|x5 − x4|/h, |Ω5 − Ω4|). `k` = 0.299792458 q/p, `field` gives B [T] at a point [mm].
pub fn dormand_prince_step(y: State, h: f64, k: f64, field: &dyn Fn(Vec3) -> Vec3) -> (State, f64) {
    // y' = f(y) = (Ω, k Ω × B(x)).
    let f = |(x, d): State| -> State { (d, d.cross(field(x)) * k) };
    let mut ks: [State; 7] = [(Vec3::ZERO, Vec3::ZERO); 7];
    for i in 0..7 {
        let mut x = y.0;
        let mut d = y.1;
        for (j, kj) in ks.iter().enumerate().take(i) {
            let a = A[i][j] * h;
            if a != 0.0 {
                x = x + kj.0 * a;
                d = d + kj.1 * a;
            }
        }
        ks[i] = f((x, d));
    }
    let (mut x5, mut d5, mut dx, mut dd) = (y.0, y.1, Vec3::ZERO, Vec3::ZERO);
    for i in 0..7 {
        x5 = x5 + ks[i].0 * (B5[i] * h);
        d5 = d5 + ks[i].1 * (B5[i] * h);
        dx = dx + ks[i].0 * ((B5[i] - B4[i]) * h);
        dd = dd + ks[i].1 * ((B5[i] - B4[i]) * h);
    }
    let err = (dx.norm() / h).max(dd.norm());
    ((x5, d5 * (1.0 / d5.norm())), err)
}

/// Integrate from `y` over the path length `s` [mm] with error control `epsilon`, starting
/// with sub-steps of at most `h0` (updated to the last accepted size, for the next call).
/// At most 100 000 sub-steps (then the rest is taken in one).
pub fn integrate(y: State, s: f64, k: f64, field: &dyn Fn(Vec3) -> Vec3, epsilon: f64, h0: &mut f64) -> State {
    let mut y = y;
    let mut done = 0.0;
    let mut h = h0.min(s).max(1e-9);
    let mut guard = 0u32;
    while done < s {
        guard += 1;
        let last = s - done <= h || guard > 100_000;
        let step = if last { s - done } else { h };
        let (next, err) = dormand_prince_step(y, step, k, field);
        if err <= epsilon || step <= 1e-9 || guard > 100_000 {
            y = next;
            done = if last { s } else { done + step };
            if !last {
                h = step
                    * if err > 0.0 {
                        (0.9 * (epsilon / err).ppowf(0.2)).min(5.0)
                    } else {
                        5.0
                    };
            }
        } else {
            h = step * (0.9 * (epsilon / err).ppowf(0.2)).max(0.2);
        }
    }
    *h0 = h;
    y
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In a uniform field one step follows the exact helix to 5th order: halving the step
    /// divides the position error by about 2⁶ = 64 (local error O(h⁶)).
    #[test]
    fn fifth_order_against_the_helix() {
        let b = Vec3::new(0.0, 0.0, 2.0);
        let field = |_: Vec3| b;
        let (q, p) = (-1.0, 100.0);
        let k = super::super::helix::C_LIGHT * q / p;
        let d0 = Vec3::new(0.6, 0.0, 0.8);
        let h = super::super::helix::Helix::new(Vec3::ZERO, d0, q, p, &super::super::helix::UniformField { b });
        let err = |step: f64| {
            let ((x, _), _) = dormand_prince_step((Vec3::ZERO, d0), step, k, &field);
            (x - h.at(step).0).norm()
        };
        let (e1, e2) = (err(20.0), err(10.0));
        assert!(e1 / e2 > 45.0 && e1 / e2 < 90.0, "{e1} {e2}");
    }
}
