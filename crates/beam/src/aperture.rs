//! Apertures (issue #30): ELEGANT's `MAXAMP`, `RCOL` and `ECOL`, as its manual's element
//! dictionary defines them (M. Borland, "User's Manual for elegant", sections MAXAMP, RCOL,
//! ECOL; implemented from that text, no code of ELEGANT's):
//!
//! * `MAXAMP` (X_MAX, Y_MAX, ELLIPTICAL, EXPONENT, YEXPONENT) sets the aperture for itself and all
//!   following elements until the next `MAXAMP`; a half-aperture of 0 (the default) leaves that
//!   plane unlimited (the manual: "the default values of X_MAX and Y_MAX are 0, which causes the
//!   aperture to be ignored").
//! * `RCOL` (L, X_MAX, Y_MAX, DX, DY): a drift with a rectangular opening centred at (DX, DY),
//!   checked at its entrance and (L > 0) at its exit.
//! * `ECOL` (L, X_MAX, Y_MAX, DX, DY, EXPONENT, YEXPONENT): the same with the opening
//!   |(x − DX)/X_MAX|^EXPONENT + |(y − DY)/Y_MAX|^YEXPONENT ≤ 1 (2, 2: an ellipse).
//!
//! A particle on the boundary is inside (ELEGANT loses particles beyond X_MAX); NaN and ±∞ are
//! outside. The test is written once here ([`Aperture::inside`]) and once as CUDA text
//! ([`Aperture::cuda_inside`]) with the same operations in the same order, so the GPU flags
//! the same particles.

/// The shape of an opening.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shape {
    Rectangular,
    /// |u/a|^ex + |v/b|^ey ≤ 1 with even exponents (so |u|^e = u^e).
    Elliptical {
        ex: u32,
        ey: u32,
    },
}

/// An opening: half-apertures (0 = that plane unlimited), centre, shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aperture {
    pub x_max: f64,
    pub y_max: f64,
    pub dx: f64,
    pub dy: f64,
    pub shape: Shape,
}

/// The largest exponent accepted (EXPONENT, YEXPONENT): u^e is computed by repeated products.
pub const MAX_EXPONENT: u32 = 64;

/// u^e by e − 1 products, left to right (the CUDA text repeats the same order).
#[inline]
fn power(u: f64, e: u32) -> f64 {
    let mut p = u;
    for _ in 1..e {
        p *= u;
    }
    p
}

impl Aperture {
    /// Does it limit anything? (Both half-apertures 0: no.)
    pub fn is_open(&self) -> bool {
        self.x_max == 0.0 && self.y_max == 0.0
    }

    /// Is a particle at (x, y) inside (boundary included)? NaN and ±∞ are outside in every
    /// limited plane.
    #[inline]
    pub fn inside(&self, x: f64, y: f64) -> bool {
        let (u, v) = (x - self.dx, y - self.dy);
        match self.shape {
            Shape::Elliptical { ex, ey } if self.x_max > 0.0 && self.y_max > 0.0 => {
                power(u / self.x_max, ex) + power(v / self.y_max, ey) <= 1.0
            }
            // A rectangle, or an ellipse with one plane unlimited (then a band in the other).
            _ => (self.x_max == 0.0 || u.abs() <= self.x_max) && (self.y_max == 0.0 || v.abs() <= self.y_max),
        }
    }

    /// The same test as a CUDA boolean expression of the registers `z0` (x) and `z2` (y),
    /// constants written as exact literals (`{:e}` of an f64 prints the shortest text that
    /// reads back to the same double).
    pub fn cuda_inside(&self) -> String {
        let lit = |v: f64| format!("{v:e}");
        let u = format!("(z0 - {})", lit(self.dx));
        let v = format!("(z2 - {})", lit(self.dy));
        match self.shape {
            Shape::Elliptical { ex, ey } if self.x_max > 0.0 && self.y_max > 0.0 => {
                let p = |w: &str, m: f64, e: u32| {
                    let q = format!("({w} / {})", lit(m));
                    vec![q; e as usize].join(" * ")
                };
                format!("(({}) + ({}) <= 1.0)", p(&u, self.x_max, ex), p(&v, self.y_max, ey))
            }
            _ => {
                let mut terms = Vec::new();
                if self.x_max != 0.0 {
                    terms.push(format!("(fabs({u}) <= {})", lit(self.x_max)));
                }
                if self.y_max != 0.0 {
                    terms.push(format!("(fabs({v}) <= {})", lit(self.y_max)));
                }
                if terms.is_empty() {
                    "true".to_string()
                } else {
                    format!("({})", terms.join(" && "))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rect(x_max: f64, y_max: f64) -> Aperture {
        Aperture {
            x_max,
            y_max,
            dx: 0.0,
            dy: 0.0,
            shape: Shape::Rectangular,
        }
    }

    fn ellipse(x_max: f64, y_max: f64, ex: u32, ey: u32) -> Aperture {
        Aperture {
            shape: Shape::Elliptical { ex, ey },
            ..rect(x_max, y_max)
        }
    }

    /// The next double above / below `v` (for "just inside, just outside").
    fn up(v: f64) -> f64 {
        f64::from_bits(v.to_bits() + 1)
    }

    #[test]
    fn rectangle_just_inside_and_just_outside() {
        let a = rect(1e-3, 2e-3);
        assert!(a.inside(1e-3, 2e-3), "the boundary is inside");
        assert!(a.inside(-1e-3, -2e-3));
        assert!(!a.inside(up(1e-3), 0.0));
        assert!(!a.inside(-up(1e-3), 0.0));
        assert!(!a.inside(0.0, up(2e-3)));
        assert!(!a.inside(f64::NAN, 0.0) && !a.inside(0.0, f64::INFINITY));
        // X_MAX = 0: x unlimited; y still limited.
        let band = rect(0.0, 2e-3);
        assert!(band.inside(1e3, 0.0) && !band.inside(0.0, 3e-3));
        assert!(rect(0.0, 0.0).is_open());
    }

    #[test]
    fn offset_rectangle_is_centred_at_dx_dy() {
        let a = Aperture {
            dx: 1e-3,
            dy: -1e-3,
            ..rect(1e-3, 1e-3)
        };
        assert!(a.inside(2e-3, -2e-3) && a.inside(0.0, 0.0));
        assert!(!a.inside(2.1e-3, 0.0) && !a.inside(-0.1e-3, 0.0) && !a.inside(0.0, 0.1e-3));
    }

    #[test]
    fn ellipse_just_inside_and_just_outside() {
        let a = ellipse(2e-3, 1e-3, 2, 2);
        // On the axes the boundary is inside, one ulp beyond is outside.
        assert!(a.inside(2e-3, 0.0) && a.inside(0.0, -1e-3));
        assert!(!a.inside(up(2e-3), 0.0) && !a.inside(0.0, -up(1e-3)));
        // At 45° on the ellipse (x/a = y/b = 1/√2): 0.999 of it inside, 1.001 outside, while the
        // rectangle's corner region (x/a = y/b = 0.9) is outside the ellipse.
        let c = std::f64::consts::FRAC_1_SQRT_2;
        assert!(a.inside(0.999 * c * 2e-3, 0.999 * c * 1e-3));
        assert!(!a.inside(1.001 * c * 2e-3, 1.001 * c * 1e-3));
        assert!(!a.inside(0.9 * 2e-3, 0.9 * 1e-3));
        assert!(rect(2e-3, 1e-3).inside(0.9 * 2e-3, 0.9 * 1e-3));
        // A higher exponent is closer to the rectangle: (0.9)^4·2 = 1.31 > 1, (0.8)^4·2 = 0.82.
        let s = ellipse(2e-3, 1e-3, 4, 4);
        assert!(s.inside(0.8 * 2e-3, 0.8 * 1e-3) && !s.inside(0.9 * 2e-3, 0.9 * 1e-3));
        assert!(!a.inside(0.8 * 2e-3, 0.8 * 1e-3));
        // One plane unlimited: a band in the other.
        let band = ellipse(0.0, 1e-3, 2, 2);
        assert!(band.inside(5.0, 1e-3) && !band.inside(0.0, up(1e-3)));
        assert!(!a.inside(f64::NAN, 0.0));
    }

    #[test]
    fn cuda_text_names_the_same_test() {
        assert_eq!(rect(1e-3, 0.0).cuda_inside(), "((fabs((z0 - 0e0)) <= 1e-3))");
        assert_eq!(
            ellipse(2e-3, 1e-3, 2, 4).cuda_inside(),
            "((((z0 - 0e0) / 2e-3) * ((z0 - 0e0) / 2e-3)) + (((z2 - 0e0) / 1e-3) * ((z2 - 0e0) / 1e-3) * ((z2 - 0e0) / 1e-3) * ((z2 - 0e0) / 1e-3)) <= 1.0)"
        );
        assert_eq!(rect(0.0, 0.0).cuda_inside(), "true");
        // Literals read back to the same doubles.
        for v in [0.1f64, 1.0 / 3.0, 2.5e-3, 1e-300] {
            assert_eq!(format!("{v:e}").parse::<f64>().unwrap(), v);
        }
    }
}
