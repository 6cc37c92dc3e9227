//! The tables' coordinates and the track-length (fluence) estimator (docs/spline.md, "Making
//! tables").
//!
//! * **Frame** (photonics' source frame, as `warpdrive_spline::millipede::model::
//!   table_coordinates` reads the tables): origin at the source vertex, axis `d` = the source's
//!   direction of travel, azimuth φ ∈ [0°, 180°] around it measured from the plane holding the
//!   axis and the vertical (e1 = the vertical projected perpendicular to d; x for a vertical
//!   source), folded (|φ|: the two sides of that plane share a bin).
//! * **Spherical** (cascades, photonics `GEOMETRY = 1`): r = distance from the vertex,
//!   cos θ = d·x̂. **Cylindrical** (muon segments, `GEOMETRY = 2`): ρ = distance from the axis,
//!   Δz = d·x (along the track from the vertex).
//! * **Delay**: the photon's time minus the direct time — cascades: r·n_g/c from the vertex;
//!   muon segments: the Cherenkov cone's arrival of an infinite track through the vertex,
//!   Δz/c + ρ·(n_g − cos θ_c)/(c sin θ_c) (the muon passing the vertex at t = 0) — both of the
//!   form `A + B·s − Q·|P + s·D|` along a straight photon path of parameter s.
//!
//! The estimator (the fluence of a point: Φ = Σ track length / volume, e.g. Lux & Koblinger,
//! "Monte Carlo particle transport methods", 1991, ch. 5; photonics and CLSim's tabulator record
//! photon track length per bin): every straight segment of a photon is cut at each bin boundary
//! it crosses — spheres or cylinders (quadratic in s), cones (quadratic), azimuth half-planes and
//! Δz planes (linear), delay boundaries (quadratic after squaring) — and each piece adds its
//! length × weight to the cell of its midpoint. Spurious roots (the other nappe of a cone, the
//! other half of an azimuth plane, the squared delay equation's second branch) only cut a piece
//! in two inside one cell, so they change nothing; a missing root would put a piece into the
//! wrong cell, which is what the tests look for. Nothing is lost: the pieces add up to the
//! segment's length inside the table (checked against [`Binning::inside_length`], computed
//! from the shells' intersections alone).

use std::f64::consts::PI;

/// Spherical (cascades) or cylindrical (muon segments) coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Spherical,
    Cylindrical,
}

/// The source frame: vertex, axis d, the azimuth's reference axes e1, e2, and the direct time's
/// constants.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Frame {
    pub origin: [f64; 3],
    pub axis: [f64; 3],
    pub e1: [f64; 3],
    pub e2: [f64; 3],
    /// Group delay per metre of the direct light, n_g/c [ns/m].
    pub ng_over_c: f64,
    /// Muon segments: (n_g − cos θ_c)/(c sin θ_c) [ns/m] and 1/c (the muon's speed) [ns/m].
    pub cone: f64,
    pub inv_c: f64,
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn axpy(a: f64, x: [f64; 3], y: [f64; 3]) -> [f64; 3] {
    [a * x[0] + y[0], a * x[1] + y[1], a * x[2] + y[2]]
}

impl Frame {
    /// The frame of a source at `origin` moving along the unit vector `axis`; `ng` the group
    /// index and `n_phase` the phase index of the direct light.
    #[must_use]
    pub fn new(origin: [f64; 3], axis: [f64; 3], ng: f64, n_phase: f64) -> Self {
        let d = axis;
        // e1: the vertical projected perpendicular to d (x if d is vertical), as the Millipede
        // model's table_coordinates.
        let mut e1 = [-d[2] * d[0], -d[2] * d[1], 1.0 - d[2] * d[2]];
        let n1 = dot(e1, e1).sqrt();
        if n1 < 1e-9 {
            e1 = [1.0, 0.0, 0.0];
        } else {
            e1 = [e1[0] / n1, e1[1] / n1, e1[2] / n1];
        }
        let e2 = [
            d[1] * e1[2] - d[2] * e1[1],
            d[2] * e1[0] - d[0] * e1[2],
            d[0] * e1[1] - d[1] * e1[0],
        ];
        let c = crate::optics::C_VACUUM;
        let cos_c = 1.0 / n_phase;
        let sin_c = (1.0 - cos_c * cos_c).max(0.0).sqrt();
        Self {
            origin,
            axis: d,
            e1,
            e2,
            ng_over_c: ng / c,
            cone: (ng - cos_c) / (c * sin_c),
            inv_c: 1.0 / c,
        }
    }

    /// The distance of point `x` from the source: from the vertex (spheres) or from the axis
    /// (cylinders): the radial coordinate of [`Binning::coordinates`].
    #[must_use]
    pub fn distance(&self, x: [f64; 3], shape: Shape) -> f64 {
        let rel = sub(x, self.origin);
        match shape {
            Shape::Spherical => dot(rel, rel).sqrt(),
            Shape::Cylindrical => {
                let u = dot(rel, self.axis);
                (dot(rel, rel) - u * u).max(0.0).sqrt()
            }
        }
    }
}

/// The bin edges of a table: radial (r or ρ) [m], azimuth [deg], polar (cos θ or Δz [m]) and
/// delay [ns] (empty: no time axis).
#[derive(Clone, Debug, PartialEq)]
pub struct Binning {
    pub shape: Shape,
    pub radial: Vec<f64>,
    pub azimuth: Vec<f64>,
    pub polar: Vec<f64>,
    pub delay: Vec<f64>,
}

/// A straight piece of photon path: start, unit direction, length [m], time at the start [ns],
/// group delay per metre [ns/m], weight.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Path {
    pub start: [f64; 3],
    pub dir: [f64; 3],
    pub len: f64,
    pub time: f64,
    pub ocm: f64,
    pub weight: f64,
}

/// A path in the frame's coordinates: P + s·D (3-D for spheres; the part perpendicular to the
/// axis for cylinders), the axial coordinate u + s·v, and the delay A + B·s − Q·|P + s·D|.
struct Local {
    p: [f64; 3],
    d: [f64; 3],
    u: f64,
    v: f64,
    a: f64,
    b: f64,
    q: f64,
}

/// Real roots in (0, len) of a2·s² + a1·s + a0 = 0 appended to `out` (a2 may be 0).
fn roots(a2: f64, a1: f64, a0: f64, len: f64, out: &mut Vec<f64>) {
    let mut push = |s: f64| {
        if s > 0.0 && s < len {
            out.push(s);
        }
    };
    let scale = a1.abs().max(a0.abs()).max(f64::MIN_POSITIVE);
    if a2.abs() <= 1e-14 * scale {
        if a1 != 0.0 {
            push(-a0 / a1);
        }
        return;
    }
    let disc = a1 * a1 - 4.0 * a2 * a0;
    if disc < 0.0 {
        return;
    }
    // The stable pair (Numerical Recipes §5.6).
    let q = -0.5 * (a1 + a1.signum() * disc.sqrt());
    if q != 0.0 {
        push(q / a2);
        push(a0 / q);
    } else {
        push(0.0);
    }
}

/// The interval of s ∈ [0, len] where |P + s·D|² ≤ r² (empty: lo ≥ hi).
fn within(p: [f64; 3], d: [f64; 3], r: f64, len: f64) -> (f64, f64) {
    let dd = dot(d, d);
    let c = dot(p, p) - r * r;
    if dd <= 0.0 {
        return if c <= 0.0 { (0.0, len) } else { (0.0, 0.0) };
    }
    let b = dot(p, d) / dd;
    let disc = b * b - c / dd;
    if disc <= 0.0 {
        return (0.0, 0.0);
    }
    let h = disc.sqrt();
    ((-b - h).max(0.0), (-b + h).min(len))
}

impl Binning {
    /// Cells of the spatial grid (radial × azimuth × polar).
    #[must_use]
    pub fn spatial_cells(&self) -> u64 {
        let n = |e: &Vec<f64>| (e.len().saturating_sub(1)) as u64;
        n(&self.radial).saturating_mul(n(&self.azimuth)).saturating_mul(n(&self.polar))
    }

    /// Time cells per spatial cell: underflow, the delay bins, overflow (1 without a time axis).
    #[must_use]
    pub fn time_cells(&self) -> u64 {
        if self.delay.is_empty() {
            1
        } else {
            self.delay.len() as u64 + 1
        }
    }

    /// The volume of spatial cell (i, j, k) [m³]: azimuth bins cover both sides (2Δφ).
    #[must_use]
    pub fn volume(&self, i: usize, j: usize, k: usize) -> f64 {
        let (r0, r1) = (self.radial[i], self.radial[i + 1]);
        let dphi = 2.0 * (self.azimuth[j + 1] - self.azimuth[j]).to_radians();
        let dp = self.polar[k + 1] - self.polar[k];
        match self.shape {
            Shape::Spherical => (r1 * r1 * r1 - r0 * r0 * r0) / 3.0 * dphi * dp,
            Shape::Cylindrical => (r1 * r1 - r0 * r0) / 2.0 * dphi * dp,
        }
    }

    fn local(&self, f: &Frame, path: &Path) -> Local {
        let rel = sub(path.start, f.origin);
        let (u, v) = (dot(rel, f.axis), dot(path.dir, f.axis));
        match self.shape {
            Shape::Spherical => Local {
                p: rel,
                d: path.dir,
                u,
                v,
                a: path.time,
                b: path.ocm,
                q: f.ng_over_c,
            },
            Shape::Cylindrical => Local {
                p: axpy(-u, f.axis, rel),
                d: axpy(-v, f.axis, path.dir),
                u,
                v,
                // t − Δz/c − ρ·cone.
                a: path.time - u * f.inv_c,
                b: path.ocm - v * f.inv_c,
                q: f.cone,
            },
        }
    }

    /// The coordinates (radial, φ [deg], polar, delay) of the point at `s` of a path.
    fn coordinates(&self, f: &Frame, l: &Local, s: f64) -> [f64; 4] {
        let x = axpy(s, l.d, l.p);
        let rad = dot(x, x).sqrt();
        let axial = l.u + s * l.v;
        // φ from the full position (the radial part is ⊥ the axis for cylinders already).
        let (a, b) = (dot(x, f.e1), dot(x, f.e2));
        let phi = b.atan2(a).abs().to_degrees();
        let polar = match self.shape {
            Shape::Spherical => {
                if rad > 0.0 {
                    (axial / rad).clamp(-1.0, 1.0)
                } else {
                    1.0
                }
            }
            Shape::Cylindrical => axial,
        };
        [rad, phi, polar, l.a + l.b * s - l.q * rad]
    }

    /// The cell of a point, if it lies in the spatial grid: spatial index × time cells + time
    /// cell (0 underflow, last overflow).
    fn cell(&self, c: [f64; 4]) -> Option<usize> {
        let bin = |e: &[f64], x: f64| -> Option<usize> {
            if !(x >= e[0] && x <= e[e.len() - 1]) {
                return None;
            }
            Some((e.partition_point(|&b| b <= x)).clamp(1, e.len() - 1) - 1)
        };
        let i = bin(&self.radial, c[0])?;
        let j = bin(&self.azimuth, c[1])?;
        let k = bin(&self.polar, c[2])?;
        let spatial = (i * (self.azimuth.len() - 1) + j) * (self.polar.len() - 1) + k;
        let t = if self.delay.is_empty() || c[3] < self.delay[0] {
            0
        } else if c[3] >= self.delay[self.delay.len() - 1] {
            self.delay.len()
        } else {
            self.delay.partition_point(|&b| b <= c[3])
        };
        Some(spatial * self.time_cells() as usize + t)
    }

    /// Cut `path` at every boundary it crosses and call `add(cell, weight × length)` for each
    /// piece inside the grid. `cuts` is scratch space.
    pub fn deposit(&self, f: &Frame, path: &Path, cuts: &mut Vec<f64>, mut add: impl FnMut(usize, f64)) {
        let len = path.len;
        if len.is_nan() || len <= 0.0 {
            return;
        }
        let l = self.local(f, path);
        cuts.clear();
        cuts.push(0.0);
        // Radial shells: |P + sD|² = R², only those between the path's nearest and farthest
        // distances (|P + sD| is convex in s: its maximum is at an end).
        let (pp, pd, dd) = (dot(l.p, l.p), dot(l.p, l.d), dot(l.d, l.d));
        let r_end = |s: f64| (pp + 2.0 * s * pd + s * s * dd).max(0.0).sqrt();
        let s_near = if dd > 0.0 { (-pd / dd).clamp(0.0, len) } else { 0.0 };
        let (near, far) = (r_end(s_near), r_end(0.0).max(r_end(len)));
        let lo = self.radial.partition_point(|&e| e < near * (1.0 - 1e-12));
        let hi = self.radial.partition_point(|&e| e <= far * (1.0 + 1e-12));
        for &r in &self.radial[lo..hi] {
            roots(dd, 2.0 * pd, pp - r * r, len, cuts);
        }
        // Polar: cones (u + sv)² = c²(|p|² + 2s p·d + s²) or planes u + sv = z.
        let inner = &self.polar[1..self.polar.len() - 1];
        match self.shape {
            Shape::Spherical => {
                for &c in inner {
                    if c == 0.0 {
                        // The cone of cos θ = 0 is the plane u + sv = 0: squared, its root is
                        // double and rounding can hide it.
                        roots(0.0, l.v, l.u, len, cuts);
                        continue;
                    }
                    let c2 = c * c;
                    roots(l.v * l.v - c2 * dd, 2.0 * (l.u * l.v - c2 * pd), l.u * l.u - c2 * pp, len, cuts);
                }
            }
            Shape::Cylindrical => {
                for &z in &self.polar {
                    roots(0.0, l.v, l.u - z, len, cuts);
                }
            }
        }
        // Azimuth: the planes through the axis at ±φ_k (normal −sin φ e1 + cos φ e2).
        for &phi in &self.azimuth[1..self.azimuth.len() - 1] {
            let (s, c) = phi.to_radians().sin_cos();
            for sign in [1.0, -1.0] {
                let n = axpy(c, f.e2, [-sign * s * f.e1[0], -sign * s * f.e1[1], -sign * s * f.e1[2]]);
                let (n0, n1) = (dot(n, sub(path.start, f.origin)), dot(n, path.dir));
                roots(0.0, n1, n0, len, cuts);
            }
        }
        // Delay boundaries: (A − T + Bs)² = Q²|P + sD|², among the delays the path can reach
        // (concave in s: the minimum at an end, the maximum below A + max(0, B·len) − Q·near).
        if !self.delay.is_empty() {
            let t_at = |s: f64| l.a + l.b * s - l.q * r_end(s);
            let t_lo = t_at(0.0).min(t_at(len));
            let t_hi = l.a + (l.b * len).max(0.0) - l.q * near;
            let slack = 1e-9 * (t_lo.abs() + t_hi.abs() + 1.0);
            let lo = self.delay.partition_point(|&e| e < t_lo - slack);
            let hi = self.delay.partition_point(|&e| e <= t_hi + slack);
            let q2 = l.q * l.q;
            for &t in &self.delay[lo..hi] {
                let a = l.a - t;
                roots(l.b * l.b - q2 * dd, 2.0 * (l.b * a - q2 * pd), a * a - q2 * pp, len, cuts);
            }
        }
        cuts.push(len);
        cuts.sort_by(f64::total_cmp);
        for w in cuts.windows(2) {
            let piece = w[1] - w[0];
            if piece <= 0.0 {
                continue;
            }
            if let Some(cell) = self.cell(self.coordinates(f, &l, 0.5 * (w[0] + w[1]))) {
                add(cell, piece * path.weight);
            }
        }
    }

    /// The weighted length of `path` inside the spatial grid, from the outer and inner
    /// boundaries alone (spheres, or cylinders and the Δz slab): what [`Binning::deposit`] must
    /// add up to.
    #[must_use]
    pub fn inside_length(&self, f: &Frame, path: &Path) -> f64 {
        let len = path.len;
        if len.is_nan() || len <= 0.0 {
            return 0.0;
        }
        let l = self.local(f, path);
        let (r0, r1) = (self.radial[0], self.radial[self.radial.len() - 1]);
        let span = |(a, b): (f64, f64)| (b - a).max(0.0);
        let inside = match self.shape {
            Shape::Spherical => span(within(l.p, l.d, r1, len)) - span(within(l.p, l.d, r0, len)),
            Shape::Cylindrical => {
                let (z0, z1) = (self.polar[0], self.polar[self.polar.len() - 1]);
                // The slab z0 ≤ u + s v ≤ z1.
                let slab = if l.v == 0.0 {
                    if l.u >= z0 && l.u <= z1 {
                        (0.0, len)
                    } else {
                        (0.0, 0.0)
                    }
                } else {
                    let (a, b) = ((z0 - l.u) / l.v, (z1 - l.u) / l.v);
                    (a.min(b).max(0.0), a.max(b).min(len))
                };
                let cap = |(a, b): (f64, f64)| span((a.max(slab.0), b.min(slab.1)));
                cap(within(l.p, l.d, r1, len)) - cap(within(l.p, l.d, r0, len))
            }
        };
        inside.max(0.0) * path.weight
    }

    /// Whether a point lies farther than `margin` [m] outside the spatial grid's outer boundary.
    #[must_use]
    pub fn escaped(&self, f: &Frame, x: [f64; 3], margin: f64) -> bool {
        let rel = sub(x, f.origin);
        let rmax = self.radial[self.radial.len() - 1] + margin;
        match self.shape {
            Shape::Spherical => dot(rel, rel) > rmax * rmax,
            Shape::Cylindrical => {
                let u = dot(rel, f.axis);
                let perp = axpy(-u, f.axis, rel);
                dot(perp, perp) > rmax * rmax || u < self.polar[0] - margin || u > self.polar[self.polar.len() - 1] + margin
            }
        }
    }
}

/// The full solid angle's volume of a shell, used in tests: 4π/3 (r1³ − r0³).
#[must_use]
pub fn shell_volume(r0: f64, r1: f64) -> f64 {
    4.0 * PI / 3.0 * (r1 * r1 * r1 - r0 * r0 * r0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpdrive_core::RandomStream;

    fn grid(shape: Shape, delay: bool) -> Binning {
        let lin = |a: f64, b: f64, n: usize| (0..=n).map(|i| a + (b - a) * i as f64 / n as f64).collect::<Vec<_>>();
        Binning {
            shape,
            radial: lin(2.0, 50.0, 12),
            azimuth: lin(0.0, 180.0, 6),
            polar: if shape == Shape::Spherical {
                lin(-1.0, 1.0, 8)
            } else {
                lin(-30.0, 40.0, 7)
            },
            delay: if delay { lin(-20.0, 300.0, 16) } else { Vec::new() },
        }
    }

    fn frame() -> Frame {
        let d = [0.3f64, -0.5, 0.812];
        let n = dot(d, d).sqrt();
        Frame::new([1.0, -2.0, 3.0], [d[0] / n, d[1] / n, d[2] / n], 1.35, 1.32)
    }

    fn random_paths(n: usize) -> Vec<Path> {
        let mut rng = RandomStream::new(5, 0, 0);
        (0..n)
            .map(|_| {
                let mut u = || f64::from(rng.uniform());
                let start = [60.0 * (u() - 0.5), 60.0 * (u() - 0.5), 60.0 * (u() - 0.5)];
                let c = 2.0 * u() - 1.0;
                let s = (1.0 - c * c).sqrt();
                let p = 2.0 * PI * u();
                Path {
                    start,
                    dir: [s * p.cos(), s * p.sin(), c],
                    len: 80.0 * u(),
                    time: 100.0 * u(),
                    ocm: 4.5,
                    weight: 0.5 + u(),
                }
            })
            .collect()
    }

    /// The pieces add up to the length inside the grid, and every piece lies in the cell of
    /// each of its points (checked at 9 points per piece longer than 1 nm: a missed boundary puts a
    /// piece across two cells). Both shapes, with and without delays.
    #[test]
    fn pieces_conserve_length_and_stay_in_their_cells() {
        for shape in [Shape::Spherical, Shape::Cylindrical] {
            for delay in [false, true] {
                let b = grid(shape, delay);
                let f = frame();
                let mut cuts = Vec::new();
                let (mut total, mut inside) = (0.0, 0.0);
                for path in random_paths(3000) {
                    let l = b.local(&f, &path);
                    b.deposit(&f, &path, &mut cuts, |_, x| total += x);
                    inside += b.inside_length(&f, &path);
                    // Pieces shorter than 1 nm sit on a boundary within rounding (two roots
                    // a few ulp apart): their points cannot be told apart, their length is nil.
                    for w in cuts.windows(2).filter(|w| w[1] - w[0] > 1e-9) {
                        let cell = |s: f64| b.cell(b.coordinates(&f, &l, s));
                        let mid = cell(0.5 * (w[0] + w[1]));
                        for k in 1..10 {
                            let s = w[0] + (w[1] - w[0]) * f64::from(k) / 10.0;
                            assert_eq!(
                                cell(s),
                                mid,
                                "{shape:?} delay {delay}: piece {w:?} of {path:?} crosses a boundary at {s}"
                            );
                        }
                    }
                }
                assert!(inside > 1e4, "{inside}");
                assert!((total - inside).abs() <= 1e-9 * inside, "{shape:?} {delay}: {total} vs {inside}");
            }
        }
    }

    /// Cell volumes add up to the grid's volume.
    #[test]
    fn volumes_add_up() {
        let b = grid(Shape::Spherical, false);
        let mut v = 0.0;
        for i in 0..12 {
            for j in 0..6 {
                for k in 0..8 {
                    v += b.volume(i, j, k);
                }
            }
        }
        assert!((v - shell_volume(2.0, 50.0)).abs() < 1e-9 * v);
        let c = grid(Shape::Cylindrical, false);
        let mut v = 0.0;
        for i in 0..12 {
            for j in 0..6 {
                for k in 0..7 {
                    v += c.volume(i, j, k);
                }
            }
        }
        assert!((v - PI * (50.0f64.powi(2) - 4.0) * 70.0).abs() < 1e-9 * v);
    }
}
