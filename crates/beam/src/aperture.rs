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
//! * `OPEN_SIDE` (MAXAMP, RCOL, ECOL; the manual: "which side, if any, is open (+x, -x, +y, -y)";
//!   `x` and `y` are read as `+x` and `+y`): that side's boundary is removed. A rectangle with
//!   `+x` open keeps x − DX ≥ −X_MAX and |y − DY| ≤ Y_MAX; an ellipse with `+x` open is its closed
//!   half (x − DX ≤ 0) joined to the band |y − DY| ≤ Y_MAX beyond its centre (x − DX > 0) — the
//!   manual does not define the elliptical case further, this is our reading of "open".
//! * `INVERT` (RCOL, ECOL): the opening is an obstruction — particles inside it are lost, those
//!   outside pass.
//!
//! A particle on the boundary is inside (ELEGANT loses particles beyond X_MAX); NaN and ±∞ are
//! outside (an inverted opening passes them, and the non-finite check after every element loses
//! them there). The test is written once here ([`Aperture::inside`]) and once as CUDA text
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

/// The open side of an opening (OPEN_SIDE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    PlusX,
    MinusX,
    PlusY,
    MinusY,
}

impl Side {
    /// ELEGANT's OPEN_SIDE text: `+x`, `-x`, `+y`, `-y` (`x`, `y`: `+x`, `+y`), any case.
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "+x" | "x" => Some(Side::PlusX),
            "-x" => Some(Side::MinusX),
            "+y" | "y" => Some(Side::PlusY),
            "-y" => Some(Side::MinusY),
            _ => None,
        }
    }
}

/// An opening: half-apertures (0 = that plane unlimited), centre, shape, open side, inverted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aperture {
    pub x_max: f64,
    pub y_max: f64,
    pub dx: f64,
    pub dy: f64,
    pub shape: Shape,
    /// OPEN_SIDE: this side's boundary is removed.
    pub open_side: Option<Side>,
    /// INVERT: particles inside are lost.
    pub invert: bool,
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

    /// Does a particle at (x, y) pass (inside the opening, boundary included; with INVERT:
    /// not inside)? NaN and ±∞ are outside in every limited plane.
    #[inline]
    pub fn inside(&self, x: f64, y: f64) -> bool {
        let (u, v) = (x - self.dx, y - self.dy);
        let within = match self.shape {
            Shape::Elliptical { ex, ey } if self.x_max > 0.0 && self.y_max > 0.0 => {
                let ellipse = power(u / self.x_max, ex) + power(v / self.y_max, ey) <= 1.0;
                // The open side: the band of the other plane beyond the centre.
                match self.open_side {
                    None => ellipse,
                    Some(Side::PlusX) => ellipse || (u > 0.0 && v.abs() <= self.y_max),
                    Some(Side::MinusX) => ellipse || (u < 0.0 && v.abs() <= self.y_max),
                    Some(Side::PlusY) => ellipse || (v > 0.0 && u.abs() <= self.x_max),
                    Some(Side::MinusY) => ellipse || (v < 0.0 && u.abs() <= self.x_max),
                }
            }
            // A rectangle, or an ellipse with one plane unlimited (then a band in the other);
            // an open side drops that side's bound.
            _ => {
                let bound = |w: f64, max: f64, plus: Side, minus: Side| {
                    max == 0.0
                        || match self.open_side {
                            Some(s) if s == plus => w >= -max,
                            Some(s) if s == minus => w <= max,
                            _ => w.abs() <= max,
                        }
                };
                bound(u, self.x_max, Side::PlusX, Side::MinusX) && bound(v, self.y_max, Side::PlusY, Side::MinusY)
            }
        };
        within != self.invert
    }

    /// The same test as a CUDA boolean expression of the registers `z0` (x) and `z2` (y),
    /// constants written as exact literals (`{:e}` of an f64 prints the shortest text that
    /// reads back to the same double).
    pub fn cuda_inside(&self) -> String {
        let lit = |v: f64| format!("{v:e}");
        let u = format!("(z0 - {})", lit(self.dx));
        let v = format!("(z2 - {})", lit(self.dy));
        let within = match self.shape {
            Shape::Elliptical { ex, ey } if self.x_max > 0.0 && self.y_max > 0.0 => {
                let p = |w: &str, m: f64, e: u32| {
                    let q = format!("({w} / {})", lit(m));
                    vec![q; e as usize].join(" * ")
                };
                let ellipse = format!("(({}) + ({}) <= 1.0)", p(&u, self.x_max, ex), p(&v, self.y_max, ey));
                let band = |w: &str, cmp: &str, other: &str, max: f64| {
                    format!("({ellipse} || (({w} {cmp} 0.0) && (fabs({other}) <= {})))", lit(max))
                };
                match self.open_side {
                    None => ellipse,
                    Some(Side::PlusX) => band(&u, ">", &v, self.y_max),
                    Some(Side::MinusX) => band(&u, "<", &v, self.y_max),
                    Some(Side::PlusY) => band(&v, ">", &u, self.x_max),
                    Some(Side::MinusY) => band(&v, "<", &u, self.x_max),
                }
            }
            _ => {
                let bound = |w: &str, max: f64, plus: Side, minus: Side| match self.open_side {
                    Some(s) if s == plus => format!("({w} >= -{})", lit(max)),
                    Some(s) if s == minus => format!("({w} <= {})", lit(max)),
                    _ => format!("(fabs({w}) <= {})", lit(max)),
                };
                let mut terms = Vec::new();
                if self.x_max != 0.0 {
                    terms.push(bound(&u, self.x_max, Side::PlusX, Side::MinusX));
                }
                if self.y_max != 0.0 {
                    terms.push(bound(&v, self.y_max, Side::PlusY, Side::MinusY));
                }
                if terms.is_empty() {
                    "true".to_string()
                } else {
                    format!("({})", terms.join(" && "))
                }
            }
        };
        if self.invert {
            format!("(!{within})")
        } else {
            within
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
            open_side: None,
            invert: false,
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

    fn opened(a: Aperture, side: &str) -> Aperture {
        Aperture {
            open_side: Side::parse(side),
            ..a
        }
    }

    #[test]
    fn open_sides_drop_one_bound() {
        assert_eq!(Side::parse("x"), Some(Side::PlusX));
        assert_eq!(Side::parse(" -Y "), Some(Side::MinusY));
        assert_eq!(Side::parse("+z"), None);
        let r = rect(1e-3, 2e-3);
        // +x: far beyond +X_MAX passes, beyond −X_MAX does not; y still limited.
        let px = opened(r, "+x");
        assert!(px.inside(1.0, 0.0) && px.inside(-1e-3, 2e-3));
        assert!(!px.inside(-up(1e-3), 0.0) && !px.inside(1.0, up(2e-3)));
        let mx = opened(r, "-x");
        assert!(mx.inside(-1.0, 0.0) && !mx.inside(up(1e-3), 0.0));
        let py = opened(r, "+y");
        assert!(py.inside(0.0, 1.0) && !py.inside(0.0, -up(2e-3)) && !py.inside(up(1e-3), 1.0));
        let my = opened(r, "-y");
        assert!(my.inside(0.0, -1.0) && !my.inside(0.0, up(2e-3)));
        assert!(!px.inside(f64::NAN, 0.0) && !px.inside(f64::INFINITY, f64::NAN));
        // An ellipse opened on +x: its closed half, and the band |y| ≤ Y_MAX beyond the centre.
        let e = opened(ellipse(2e-3, 1e-3, 2, 2), "+x");
        assert!(e.inside(5e-3, 0.99e-3) && e.inside(5e-3, -1e-3) && !e.inside(5e-3, up(1e-3)));
        assert!(e.inside(-2e-3, 0.0) && !e.inside(-up(2e-3), 0.0));
        assert!(!e.inside(-0.9 * 2e-3, 0.9 * 1e-3), "the closed half is still the ellipse");
        let ey = opened(ellipse(2e-3, 1e-3, 2, 2), "-y");
        assert!(ey.inside(1.9e-3, -1.0) && !ey.inside(up(2e-3), -1.0) && !ey.inside(0.0, up(1e-3)));
    }

    #[test]
    fn inverted_openings_lose_what_is_inside() {
        let r = Aperture {
            invert: true,
            ..rect(1e-3, 2e-3)
        };
        assert!(!r.inside(0.0, 0.0) && !r.inside(1e-3, 2e-3), "inside (boundary included) is lost");
        assert!(r.inside(up(1e-3), 0.0) && r.inside(0.0, -up(2e-3)));
        let e = Aperture {
            invert: true,
            ..ellipse(2e-3, 1e-3, 2, 2)
        };
        assert!(!e.inside(0.0, 0.0) && e.inside(0.9 * 2e-3, 0.9 * 1e-3));
        // Inverted and opened: the obstruction reaches to +∞ in x.
        let o = opened(e, "+x");
        assert!(!o.inside(1.0, 0.0) && o.inside(-1.0, 0.0));
    }

    #[test]
    fn cuda_text_of_open_sides_and_inversion() {
        assert_eq!(
            opened(rect(1e-3, 2e-3), "+x").cuda_inside(),
            "(((z0 - 0e0) >= -1e-3) && (fabs((z2 - 0e0)) <= 2e-3))"
        );
        assert_eq!(opened(rect(1e-3, 0.0), "-x").cuda_inside(), "(((z0 - 0e0) <= 1e-3))");
        assert_eq!(
            opened(ellipse(2e-3, 1e-3, 2, 2), "+y").cuda_inside(),
            "(((((z0 - 0e0) / 2e-3) * ((z0 - 0e0) / 2e-3)) + (((z2 - 0e0) / 1e-3) * ((z2 - 0e0) / 1e-3)) <= 1.0) || (((z2 - 0e0) > 0.0) && (fabs((z0 - 0e0)) <= 2e-3)))"
        );
        let inv = Aperture {
            invert: true,
            ..rect(1e-3, 0.0)
        };
        assert_eq!(inv.cuda_inside(), "(!((fabs((z0 - 0e0)) <= 1e-3)))");
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
