//! Ray–surface intersections: the candidate crossing distances along `p + t·d` (unit `d`) of the
//! surfaces that bound the solids. Each function pushes every root `t > 0`; a root of a surface
//! that is not part of the solid's boundary (a cone's other nappe, a plane beyond a face's edge)
//! is harmless, because [`super::solid`] keeps only the roots at which the solid's `contains`
//! changes (see the module docs there). Quadric roots are polished by one Newton step on the
//! surface equation evaluated at the point itself, which restores full precision for rays that
//! are nearly tangent (where the textbook formula loses digits).

use super::vec3::Vec3;

/// Push `t` when it is a usable forward distance.
#[inline]
fn push(out: &mut Vec<f64>, t: f64) {
    if t > 0.0 && t.is_finite() {
        out.push(t);
    }
}

/// The plane `n·x = c`.
#[inline]
pub fn plane(out: &mut Vec<f64>, p: Vec3, d: Vec3, n: Vec3, c: f64) {
    let dn = n.dot(d);
    if dn != 0.0 {
        push(out, (c - n.dot(p)) / dn);
    }
}

/// The roots of `a t² + 2 b t + c = 0` (b is half the linear coefficient), numerically stable
/// (Press et al., Numerical Recipes §5.6: q = −(b + sign(b)√(b² − ac)), t = q/a, c/q).
#[inline]
fn quadratic(a: f64, b: f64, c: f64) -> [f64; 2] {
    let nan = f64::NAN;
    if a == 0.0 {
        return if b == 0.0 { [nan, nan] } else { [-c / (2.0 * b), nan] };
    }
    let disc = b * b - a * c;
    if disc < 0.0 {
        // A tangent ray whose discriminant rounds below zero: keep the touching point as a
        // candidate (harmless if the ray misses).
        if disc > -1e-12 * b * b {
            return [-b / a, nan];
        }
        return [nan, nan];
    }
    let q = -(b + b.signum() * disc.sqrt());
    if q == 0.0 {
        return [0.0, nan];
    }
    [q / a, c / q]
}

/// Solve and polish: `f(t)` is the surface function along the ray and `df(t)` its derivative.
#[inline]
fn quadric(out: &mut Vec<f64>, a: f64, b: f64, c: f64, f: impl Fn(f64) -> f64, df: impl Fn(f64) -> f64) {
    for t in quadratic(a, b, c) {
        if t.is_finite() {
            let g = df(t);
            let t1 = if g != 0.0 { t - f(t) / g } else { t };
            // A Newton step that moves far means the root was ill-conditioned: keep both.
            push(out, t1);
            if (t1 - t).abs() > 1e-9 {
                push(out, t);
            }
        }
    }
}

/// The cylinder `x² + y² = r²` about the z axis.
pub fn cylinder(out: &mut Vec<f64>, p: Vec3, d: Vec3, r: f64) {
    let a = d.x * d.x + d.y * d.y;
    let b = p.x * d.x + p.y * d.y;
    let c = p.x * p.x + p.y * p.y - r * r;
    let f = |t: f64| {
        let q = p.along(d, t);
        q.x * q.x + q.y * q.y - r * r
    };
    let df = |t: f64| {
        let q = p.along(d, t);
        2.0 * (q.x * d.x + q.y * d.y)
    };
    quadric(out, a, b, c, f, df);
}

/// The cone `ρ = r0 + k z` (both nappes of `ρ² = (r0 + k z)²`) about the z axis.
pub fn cone(out: &mut Vec<f64>, p: Vec3, d: Vec3, r0: f64, k: f64) {
    let w = r0 + k * p.z;
    let a = d.x * d.x + d.y * d.y - k * k * d.z * d.z;
    let b = p.x * d.x + p.y * d.y - k * d.z * w;
    let c = p.x * p.x + p.y * p.y - w * w;
    let f = |t: f64| {
        let q = p.along(d, t);
        let w = r0 + k * q.z;
        q.x * q.x + q.y * q.y - w * w
    };
    let df = |t: f64| {
        let q = p.along(d, t);
        2.0 * (q.x * d.x + q.y * d.y - k * d.z * (r0 + k * q.z))
    };
    quadric(out, a, b, c, f, df);
}

/// The sphere `|x| = r` about the origin.
pub fn sphere(out: &mut Vec<f64>, p: Vec3, d: Vec3, r: f64) {
    let b = p.dot(d);
    let c = p.dot(p) - r * r;
    let f = |t: f64| {
        let q = p.along(d, t);
        q.dot(q) - r * r
    };
    let df = |t: f64| 2.0 * p.along(d, t).dot(d);
    quadric(out, d.dot(d), b, c, f, df);
}

/// The cone of polar angle θ about +z with its apex at the origin (both nappes:
/// `ρ² cos²θ = z² sin²θ`); θ = π/2 is the plane z = 0.
pub fn theta_cone(out: &mut Vec<f64>, p: Vec3, d: Vec3, theta: f64) {
    let (s, c) = theta.sin_cos();
    if c.abs() < 1e-15 {
        plane(out, p, d, Vec3::new(0.0, 0.0, 1.0), 0.0);
        return;
    }
    let (s2, c2) = (s * s, c * c);
    let a = (d.x * d.x + d.y * d.y) * c2 - d.z * d.z * s2;
    let b = (p.x * d.x + p.y * d.y) * c2 - p.z * d.z * s2;
    let cc = (p.x * p.x + p.y * p.y) * c2 - p.z * p.z * s2;
    let f = |t: f64| {
        let q = p.along(d, t);
        (q.x * q.x + q.y * q.y) * c2 - q.z * q.z * s2
    };
    let df = |t: f64| {
        let q = p.along(d, t);
        2.0 * ((q.x * d.x + q.y * d.y) * c2 - q.z * d.z * s2)
    };
    quadric(out, a, b, cc, f, df);
}
