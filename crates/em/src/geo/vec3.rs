//! Three-vectors and rigid transforms in f64 (mm).

use std::ops::{Add, Mul, Neg, Sub};

/// A point or direction [mm].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Vec3 {
    pub x: f64,
    pub y: f64,
    pub z: f64,
}

impl Vec3 {
    pub const ZERO: Vec3 = Vec3 { x: 0.0, y: 0.0, z: 0.0 };

    #[must_use]
    pub const fn new(x: f64, y: f64, z: f64) -> Vec3 {
        Vec3 { x, y, z }
    }
    #[must_use]
    pub fn dot(self, o: Vec3) -> f64 {
        self.x * o.x + self.y * o.y + self.z * o.z
    }
    #[must_use]
    pub fn cross(self, o: Vec3) -> Vec3 {
        Vec3::new(
            self.y * o.z - self.z * o.y,
            self.z * o.x - self.x * o.z,
            self.x * o.y - self.y * o.x,
        )
    }
    #[must_use]
    pub fn norm(self) -> f64 {
        self.dot(self).sqrt()
    }
    #[must_use]
    pub fn unit(self) -> Vec3 {
        self * (1.0 / self.norm())
    }
    /// `self + t·d`: the point at distance `t` along a unit direction.
    #[must_use]
    pub fn along(self, d: Vec3, t: f64) -> Vec3 {
        Vec3::new(t.mul_add(d.x, self.x), t.mul_add(d.y, self.y), t.mul_add(d.z, self.z))
    }
    #[must_use]
    pub fn min(self, o: Vec3) -> Vec3 {
        Vec3::new(self.x.min(o.x), self.y.min(o.y), self.z.min(o.z))
    }
    #[must_use]
    pub fn max(self, o: Vec3) -> Vec3 {
        Vec3::new(self.x.max(o.x), self.y.max(o.y), self.z.max(o.z))
    }
    /// √(x² + y²), as written (not `hypot`): IEEE square root of correctly rounded products
    /// and sum, so the GPU twin (`kernels/geo/vec3.cuh`) gives the same bits.
    #[must_use]
    pub fn rho(self) -> f64 {
        (self.x * self.x + self.y * self.y).sqrt()
    }
}

impl Add for Vec3 {
    type Output = Vec3;
    fn add(self, o: Vec3) -> Vec3 {
        Vec3::new(self.x + o.x, self.y + o.y, self.z + o.z)
    }
}
impl Sub for Vec3 {
    type Output = Vec3;
    fn sub(self, o: Vec3) -> Vec3 {
        Vec3::new(self.x - o.x, self.y - o.y, self.z - o.z)
    }
}
impl Neg for Vec3 {
    type Output = Vec3;
    fn neg(self) -> Vec3 {
        Vec3::new(-self.x, -self.y, -self.z)
    }
}
impl Mul<f64> for Vec3 {
    type Output = Vec3;
    fn mul(self, s: f64) -> Vec3 {
        Vec3::new(self.x * s, self.y * s, self.z * s)
    }
}

/// A 3×3 rotation matrix, rows `r[i]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rot3 {
    pub r: [[f64; 3]; 3],
}

impl Rot3 {
    pub const IDENTITY: Rot3 = Rot3 {
        r: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
    };

    /// The active right-handed rotation by `a` about x: (x, y, z) → (x, y cos a − z sin a, y sin a + z cos a).
    #[must_use]
    pub fn about_x(a: f64) -> Rot3 {
        let (s, c) = a.sin_cos();
        Rot3 {
            r: [[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]],
        }
    }
    #[must_use]
    pub fn about_y(a: f64) -> Rot3 {
        let (s, c) = a.sin_cos();
        Rot3 {
            r: [[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]],
        }
    }
    #[must_use]
    pub fn about_z(a: f64) -> Rot3 {
        let (s, c) = a.sin_cos();
        Rot3 {
            r: [[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]],
        }
    }
    #[must_use]
    pub fn apply(&self, v: Vec3) -> Vec3 {
        let r = &self.r;
        Vec3::new(
            r[0][0] * v.x + r[0][1] * v.y + r[0][2] * v.z,
            r[1][0] * v.x + r[1][1] * v.y + r[1][2] * v.z,
            r[2][0] * v.x + r[2][1] * v.y + r[2][2] * v.z,
        )
    }
    /// Rᵀ v (the inverse rotation).
    #[must_use]
    pub fn apply_inverse(&self, v: Vec3) -> Vec3 {
        let r = &self.r;
        Vec3::new(
            r[0][0] * v.x + r[1][0] * v.y + r[2][0] * v.z,
            r[0][1] * v.x + r[1][1] * v.y + r[2][1] * v.z,
            r[0][2] * v.x + r[1][2] * v.y + r[2][2] * v.z,
        )
    }
    /// The product `self · o`.
    #[must_use]
    pub fn then_after(&self, o: &Rot3) -> Rot3 {
        let mut m = [[0.0; 3]; 3];
        for (i, row) in m.iter_mut().enumerate() {
            for (j, v) in row.iter_mut().enumerate() {
                *v = (0..3).map(|k| self.r[i][k] * o.r[k][j]).sum();
            }
        }
        Rot3 { r: m }
    }
    #[must_use]
    pub fn transpose(&self) -> Rot3 {
        let r = &self.r;
        Rot3 {
            r: [
                [r[0][0], r[1][0], r[2][0]],
                [r[0][1], r[1][1], r[2][1]],
                [r[0][2], r[1][2], r[2][2]],
            ],
        }
    }
    #[must_use]
    pub fn is_identity(&self) -> bool {
        *self == Rot3::IDENTITY
    }
}

/// A placement: a point `p_local` of the placed (daughter) frame is `rot · p_local + translation`
/// in the mother frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Transform {
    pub rot: Rot3,
    pub translation: Vec3,
}

impl Transform {
    pub const IDENTITY: Transform = Transform {
        rot: Rot3::IDENTITY,
        translation: Vec3::ZERO,
    };

    /// Mother → local point: `rotᵀ (p − translation)`.
    #[must_use]
    pub fn to_local(&self, p: Vec3) -> Vec3 {
        self.rot.apply_inverse(p - self.translation)
    }
    /// Mother → local direction.
    #[must_use]
    pub fn dir_to_local(&self, d: Vec3) -> Vec3 {
        self.rot.apply_inverse(d)
    }
    /// Local → mother point.
    #[must_use]
    pub fn to_mother(&self, p: Vec3) -> Vec3 {
        self.rot.apply(p) + self.translation
    }
    /// The transform of `inner` placed in a frame that `self` places: local of `inner` → mother of `self`.
    #[must_use]
    pub fn compose(&self, inner: &Transform) -> Transform {
        Transform {
            rot: self.rot.then_after(&inner.rot),
            translation: self.to_mother(inner.translation),
        }
    }
}
