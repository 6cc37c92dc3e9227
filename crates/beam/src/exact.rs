//! Exact body maps of the magnetic elements (spec §2.1, §2.2), generic over the number type so
//! the same code tracks particles (f64) and yields the second-order map ([`crate::tpsa::Tpsa2`]).
//!
//! Coordinates (ELEGANT, spec §1): z = (x, x', y, y', s, δ) with slopes x' = dx/ds_ref and s the
//! path length. Inside a magnet the motion follows the Hamiltonian in canonical variables
//! normalised to p0, with the path coordinate ζ along the magnet:
//!   H = −p_z + K1 (x² − y²)/2 + K2 (x³ − 3xy²)/6,  p_z = √((1+δ)² − p_x² − p_y²),
//! slopes x' = p_x/p_z, ds/dζ = (1+δ)/p_z. It is split into the exactly solvable parts
//! "drift" (−p_z) and "kick" (the potential) and composed to sixth order by Yoshida's triple jump
//! (H. Yoshida, Phys. Lett. A 150 (1990) 262), with steps short enough that the result is exact
//! to rounding.

use crate::tpsa::Real;

/// Phase-space point in ELEGANT's coordinates.
pub type Coords<R> = [R; 6];

/// Exact field-free drift of length `l` [m]: x += L x', y += L y', s += L √(1 + x'² + y'²).
pub fn drift<R: Real>(z: &mut Coords<R>, l: f64) {
    let one = R::cst(1.0);
    let len = R::cst(l);
    let path = (one + z[1] * z[1] + z[3] * z[3]).sqrt();
    z[0] = z[0] + len * z[1];
    z[2] = z[2] + len * z[3];
    z[4] = z[4] + len * path;
}

/// Slopes → canonical momenta: p_x = (1+δ) x' / √(1 + x'² + y'²).
fn to_canonical<R: Real>(z: &Coords<R>) -> (R, R) {
    let one = R::cst(1.0);
    let f = (one + z[5]) / (one + z[1] * z[1] + z[3] * z[3]).sqrt();
    (z[1] * f, z[3] * f)
}

/// Body of a multipole of length `l` with quadrupole K1 [m⁻²] and sextupole K2 [m⁻³]
/// strengths, integrated exactly (to rounding) with `steps` sixth-order steps.
pub fn multipole<R: Real>(z: &mut Coords<R>, l: f64, k1: f64, k2: f64, steps: usize) {
    let (mut px, mut py) = to_canonical(z);
    let one = R::cst(1.0);
    let d1 = one + z[5];
    let h = l / steps as f64;
    // Triple-jump weights: S4 = S2(a) S2(b) S2(a), S6 = S4(c) S4(d) S4(c).
    let a = 1.0 / (2.0 - 2f64.powf(1.0 / 3.0));
    let b = 1.0 - 2.0 * a;
    let c = 1.0 / (2.0 - 2f64.powf(1.0 / 5.0));
    let d = 1.0 - 2.0 * c;
    let mut subs = Vec::with_capacity(9);
    for w6 in [c, d, c] {
        for w4 in [a, b, a] {
            subs.push(w6 * w4 * h);
        }
    }
    let drift_part = |z: &mut Coords<R>, px: R, py: R, t: f64| {
        let pz = (d1 * d1 - px * px - py * py).sqrt();
        let tt = R::cst(t);
        z[0] = z[0] + tt * px / pz;
        z[2] = z[2] + tt * py / pz;
        z[4] = z[4] + tt * d1 / pz;
    };
    for _ in 0..steps {
        for &t in &subs {
            // S2(t) = drift(t/2) kick(t) drift(t/2).
            drift_part(z, px, py, 0.5 * t);
            let (x, y) = (z[0], z[2]);
            let tt = R::cst(t);
            // ṗ_x = −∂H/∂x, ṗ_y = −∂H/∂y.
            px = px - tt * (R::cst(k1) * x + R::cst(0.5 * k2) * (x * x - y * y));
            py = py + tt * (R::cst(k1) * y + R::cst(k2) * x * y);
            drift_part(z, px, py, 0.5 * t);
        }
    }
    let pz = (d1 * d1 - px * px - py * py).sqrt();
    z[1] = px / pz;
    z[3] = py / pz;
}

/// Steps per metre of the exact integration (each a sixth-order composition of 9 kicks).
pub fn default_steps(l: f64) -> usize {
    ((l * 400.0).ceil() as usize).max(16)
}
