//! The fast mode's tilt in f32 without searches over depths: the 1-D model's rows indexed
//! directly (they are evenly spaced) and its few distances scanned, the 2-D map on its own lattice in float (`gpu::tilt2_lattice`, WD_TILT2_LATTICE) with the
//! lattice transform's constants computed once (the precise `Tilt2d::lattice` takes the axes'
//! cos/sin in f64 on every call). Direct indexing, no search, no f64.

use super::math::{Plain, Poly};
use crate::gpu::tilt2_lattice;
use crate::tilt::Tilt;

/// The tilt as the fast mode evaluates it.
#[derive(Clone, Debug)]
pub enum FastTilt {
    None,
    /// The precise evaluation (a model whose rows are not evenly spaced).
    Exact,
    /// The 1-D model in f32: the depth row by direct indexing (the rows are evenly spaced),
    /// the distance column by a scan of the few `tilt.par` distances, bilinear as `Tilt1d::zshift`
    /// (exact to float rounding: the GPU's 256-point resampling, WD_TILT_LUT, is off by up to
    /// 10 cm between the strings' distances).
    OneD {
        d0: f32,
        dz: f32,
        ca: f32,
        sa: f32,
        r0: f32,
        n_depth: usize,
        /// Distances and 1/(next − this) per interval.
        dist: Vec<f32>,
        inv: Vec<f32>,
        /// shifts[row · n_dist + column].
        v: Vec<f32>,
    },
    /// Barycentric on the lattice's triangles, linear between the two depth rows packed in each
    /// entry (`gpu::tilt2_lattice_shift`, the same f32 arithmetic).
    TwoD {
        d0: f32,
        dz: f32,
        n_depth: usize,
        n1: usize,
        n2: usize,
        c: [f32; 8],
        v: Vec<[f32; 2]>,
    },
}

impl FastTilt {
    #[must_use]
    pub fn new(tilt: &Tilt) -> Self {
        match tilt {
            Tilt::None => FastTilt::None,
            Tilt::OneD(t) => {
                let nd = t.depths.len();
                let nx = t.distances.len();
                if nd < 2 || nx < 2 {
                    return FastTilt::Exact;
                }
                let dd = (t.depths[nd - 1] - t.depths[0]) / (nd - 1) as f64;
                if t.depths.windows(2).any(|w| ((w[1] - w[0]) - dd).abs() > 1e-6 * dd.abs()) {
                    return FastTilt::Exact;
                }
                let a = crate::tilt::TILT_AZIMUTH_DEG.to_radians();
                let (ca, sa) = (a.cos(), a.sin());
                FastTilt::OneD {
                    d0: ((crate::ice::ZOFF - t.depths[0]) / dd) as f32,
                    dz: (1.0 / dd) as f32,
                    ca: ca as f32,
                    sa: sa as f32,
                    r0: (t.r0[0] * ca + t.r0[1] * sa) as f32,
                    n_depth: nd,
                    dist: t.distances.iter().map(|&d| d as f32).collect(),
                    inv: t.distances.windows(2).map(|w| (1.0 / (w[1] - w[0])) as f32).collect(),
                    v: t.shifts.iter().flat_map(|r| r.iter().map(|&x| x as f32)).collect(),
                }
            }
            Tilt::TwoD(t) => {
                let Some((v, c)) = tilt2_lattice(t) else {
                    return FastTilt::Exact;
                };
                let nd = t.depths.len();
                let dd = (t.depths[nd - 1] - t.depths[0]) / (nd - 1) as f64;
                FastTilt::TwoD {
                    d0: ((crate::ice::ZOFF - t.depths[0]) / dd) as f32,
                    dz: (1.0 / dd) as f32,
                    n_depth: nd,
                    n1: t.axes[0][3] as usize,
                    n2: t.axes[1][3] as usize,
                    c,
                    v,
                }
            }
        }
    }

    /// The depth shift [m] at (x, y, z); `exact` evaluates the precise model (FastTilt::Exact).
    #[inline(always)]
    #[must_use]
    pub fn zshift(&self, x: f32, y: f32, z: f32, exact: &Tilt) -> f32 {
        self.zshift_p::<Plain>(x, y, z, exact)
    }

    /// [`Self::zshift`] with the 2-D lattice's sums through `Poly::gmad` (the precise twin's
    /// `FusedGeom` fuses them, as the kernel's WD_TWIN_FMA_GEOM).
    #[inline(always)]
    #[must_use]
    pub fn zshift_p<P: Poly>(&self, x: f32, y: f32, z: f32, exact: &Tilt) -> f32 {
        match self {
            FastTilt::None => 0.0,
            FastTilt::Exact => exact.zshift(f64::from(x), f64::from(y), f64::from(z)) as f32,
            FastTilt::OneD {
                d0,
                dz,
                ca,
                sa,
                r0,
                n_depth,
                dist,
                inv,
                v,
            } => {
                let fd = (d0 - z * dz).clamp(0.0, (n_depth - 1) as f32);
                let i = (fd as usize).min(n_depth - 2);
                let a = fd - i as f32;
                // Tilt1d::zshift's bracket: the last interval starting at or below d, clamped.
                let d = x * ca + y * sa - r0;
                let n = dist.len();
                let j = dist[1..n - 1].iter().take_while(|&&x| x <= d).count();
                let b = ((d - dist[j]) * inv[j]).clamp(0.0, 1.0);
                let (r0, r1) = (&v[i * n + j..i * n + j + 2], &v[(i + 1) * n + j..(i + 1) * n + j + 2]);
                (r0[0] * (1.0 - b) + r0[1] * b) * (1.0 - a) + (r1[0] * (1.0 - b) + r1[1] * b) * a
            }
            FastTilt::TwoD {
                d0,
                dz,
                n_depth,
                n1,
                n2,
                c,
                v,
            } => {
                let (n1, n2) = (*n1, *n2);
                let fd = P::gmad(-z, *dz, *d0).clamp(0.0, (n_depth - 1) as f32);
                let k = (fd as usize).min(n_depth - 2);
                let f = fd - k as f32;
                let (mut fi, mut fj) = (P::gmad(y, c[1], x * c[0]) + c[2], P::gmad(y, c[4], x * c[3]) + c[5]);
                let (hi1, hi2) = ((n1 - 1) as f32, (n2 - 1) as f32);
                // Inside the hexagon (most photons) the clamp changes nothing: skip it.
                let inside = (0.0..=hi1).contains(&fi) && (0.0..=hi2).contains(&fj) && fi - fj <= c[6] - 1.0 && fi - fj >= 1.0 - c[7];
                if !inside {
                    for _ in 0..3 {
                        fi = fi.clamp(0.0, hi1);
                        fj = fj.clamp(0.0, hi2);
                        let d = fi - fj;
                        if d > c[6] - 1.0 {
                            let e = (d - (c[6] - 1.0)) * 0.5;
                            fi -= e;
                            fj += e;
                        } else if d < 1.0 - c[7] {
                            let e = ((1.0 - c[7]) - d) * 0.5;
                            fi += e;
                            fj -= e;
                        }
                    }
                }
                let (i0, j0) = ((fi.floor() as usize).min(n1 - 2), (fj.floor() as usize).min(n2 - 2));
                let (a, b) = (fi - i0 as f32, fj - j0 as f32);
                let base = k * n1 * n2 + j0 * n1 + i0;
                let (s00, s11) = (v[base], v[base + n1 + 1]);
                let (sm, w00, wm, w11) = if a >= b {
                    (v[base + 1], 1.0 - a, a - b, b)
                } else {
                    (v[base + n1], 1.0 - b, b - a, a)
                };
                let v0 = P::gmad(s11[0], w11, P::gmad(sm[0], wm, s00[0] * w00));
                let v1 = P::gmad(s11[1], w11, P::gmad(sm[1], wm, s00[1] * w00));
                P::gmad(v1, f, v0 * (1.0 - f))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_data::data_dir;
    use warpdrive_core::RandomStream;

    fn tilt(model: &str) -> Tilt {
        let ice = data_dir().join("ice").join(model);
        let geo = crate::geometry::Geometry::read(&ice.join("geo-f2k")).unwrap();
        Tilt::read_dir(&ice, |s| geo.string_xy(s)).unwrap()
    }

    /// The fast tables against the exact models over the detector and beyond (|x|, |y| < 900 m,
    /// depths 1100–2700 m): float rounding only (the 2-D lattice equal to the kernel's host twin
    /// bit for bit).
    #[test]
    fn fast_tilt_close_to_the_exact_models() {
        let mut r = RandomStream::new(21, 0, 0);
        for (model, bound) in [("spice_3.2.1", 2e-3), ("spice_ftp-v3m", 2e-3)] {
            let t = tilt(model);
            let f = FastTilt::new(&t);
            assert!(!matches!(f, FastTilt::Exact | FastTilt::None), "{model}");
            let twin = match &t {
                Tilt::TwoD(t2) => Some((t2, tilt2_lattice(t2).unwrap())),
                _ => None,
            };
            let mut worst = 0.0f64;
            for _ in 0..50_000 {
                let (x, y) = (1800.0 * r.uniform_f64() - 900.0, 1800.0 * r.uniform_f64() - 900.0);
                let z = crate::ice::ZOFF - (1100.0 + 1600.0 * r.uniform_f64());
                let (xf, yf, zf) = (x as f32, y as f32, z as f32);
                let fast = f.zshift(xf, yf, zf, &t);
                let exact = t.zshift(f64::from(xf), f64::from(yf), f64::from(zf));
                worst = worst.max((f64::from(fast) - exact).abs());
                if let Some((t2, (table, c))) = &twin {
                    let gpu = crate::gpu::tilt2_lattice_shift(t2, table, c, xf, yf, zf);
                    assert_eq!(fast.to_bits(), gpu.to_bits(), "({x}, {y}, {z})");
                }
            }
            eprintln!("{model}: fast tilt error {worst:.2e} m");
            assert!(worst < bound, "{model}: {worst} m");
        }
    }
}
