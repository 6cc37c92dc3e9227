//! The solids and their navigation primitives, in f64 and mm.
//!
//! Every solid answers five questions (the interface Geant4's `G4VSolid` made standard, here
//! implemented from the geometry alone):
//!
//! * [`Solids::inside`] — [`Inside::Inside`], [`Inside::Surface`] (within
//!   [`SURFACE_TOLERANCE`] of the boundary) or [`Inside::Outside`];
//! * [`Solids::distance_to_in`] / [`Solids::distance_to_out`] — the distance along a unit
//!   direction to where the ray enters / leaves the solid;
//! * [`Solids::safety_to_in`] / [`Solids::safety_to_out`] — a distance within which the point
//!   surely stays outside / inside: an underestimate, never an overestimate.
//!
//! ## How distances are found
//!
//! A solid is described by two things: a strict membership test `contains(p)` (no tolerance:
//! the definition of the solid), and the surfaces its boundary lies on (planes, cylinders,
//! cones, spheres; [`super::roots`]). Along a ray `p + t·d` the solid's membership can change
//! only at a root of one of those surfaces, so the roots `0 < t₁ < t₂ < …` cut the ray into
//! segments of constant membership; each segment is classified by `contains` at its midpoint,
//! and the distance to in (out) is the start of the first segment that is inside (outside).
//! Extra roots (a cone's other nappe, a plane outside a face) only add segments of the same
//! state; booleans take the roots of both operands and combine `contains`. The result is exact
//! to the precision of the roots (polished quadric roots: about 1e-13 of the solid's size).
//!
//! Safeties come from a signed distance `sd(p)` that is a lower bound of the true distance to
//! the boundary: exact for the box, the largest plane distance for convex polyhedra, the exact
//! distance in the meridian plane for solids of revolution (tube, cone, polycone: the distance
//! to a surface of revolution is the distance in the (ρ, z) half-plane), the max/min rules of
//! intersections/unions (`max(sd_a, sd_b)` bounds the distance to an intersection from outside
//! and is its exact negative inside; `min` for unions; `max(sd_a, −sd_b)` for `a − b`).
//!
//! ## Data layout
//!
//! Solids are plain enum values in one arena ([`Solids`]); a boolean refers to its operands by
//! index ([`SolidId`]), never by pointer or trait object, so the whole set can be flattened into
//! arrays for a CUDA twin (the variant tag, the parameters, the polygon vertices in one array
//! with ranges) without changing the algorithms.

use super::roots;
use super::vec3::{Transform, Vec3};

/// Half-thickness of a surface [mm]: points closer than this to the boundary are on it
/// (Geant4's `kCarTolerance` is 1e-9 mm, a surface ±0.5e-9 mm).
pub const SURFACE_TOLERANCE: f64 = 0.5e-9;

/// Index of a solid in [`Solids`].
pub type SolidId = u32;

/// Where a point is relative to a solid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inside {
    Inside,
    Surface,
    Outside,
}

/// An axis-aligned box.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aabb {
    pub min: Vec3,
    pub max: Vec3,
}

impl Aabb {
    /// The smallest box holding `self` transformed by `t` (its eight corners).
    #[must_use]
    pub fn transformed(&self, t: &Transform) -> Aabb {
        let mut lo = Vec3::new(f64::INFINITY, f64::INFINITY, f64::INFINITY);
        let mut hi = -lo;
        for i in 0..8 {
            let c = Vec3::new(
                if i & 1 == 0 { self.min.x } else { self.max.x },
                if i & 2 == 0 { self.min.y } else { self.max.y },
                if i & 4 == 0 { self.min.z } else { self.max.z },
            );
            let q = t.to_mother(c);
            lo = lo.min(q);
            hi = hi.max(q);
        }
        Aabb { min: lo, max: hi }
    }

    #[must_use]
    pub fn union(&self, o: &Aabb) -> Aabb {
        Aabb {
            min: self.min.min(o.min),
            max: self.max.max(o.max),
        }
    }

    #[must_use]
    pub fn contains(&self, p: Vec3) -> bool {
        p.x >= self.min.x && p.x <= self.max.x && p.y >= self.min.y && p.y <= self.max.y && p.z >= self.min.z && p.z <= self.max.z
    }

    /// The entry distance of the ray into the box (0 if it starts inside), or ∞ if it misses
    /// (the slab method, Kay & Kajiya 1986).
    #[must_use]
    pub fn ray_entry(&self, p: Vec3, d: Vec3) -> f64 {
        let mut t0: f64 = 0.0;
        let mut t1 = f64::INFINITY;
        for (pi, di, lo, hi) in [
            (p.x, d.x, self.min.x, self.max.x),
            (p.y, d.y, self.min.y, self.max.y),
            (p.z, d.z, self.min.z, self.max.z),
        ] {
            if di == 0.0 {
                if pi < lo || pi > hi {
                    return f64::INFINITY;
                }
            } else {
                let inv = 1.0 / di;
                let (a, b) = ((lo - pi) * inv, (hi - pi) * inv);
                let (a, b) = if a < b { (a, b) } else { (b, a) };
                t0 = t0.max(a);
                t1 = t1.min(b);
                if t0 > t1 {
                    return f64::INFINITY;
                }
            }
        }
        t0
    }

    /// A lower bound of the distance from `p` to the box (0 inside).
    #[must_use]
    pub fn distance(&self, p: Vec3) -> f64 {
        let dx = (self.min.x - p.x).max(p.x - self.max.x).max(0.0);
        let dy = (self.min.y - p.y).max(p.y - self.max.y).max(0.0);
        let dz = (self.min.z - p.z).max(p.z - self.max.z).max(0.0);
        (dx * dx + dy * dy + dz * dz).sqrt()
    }
}

/// A φ segment `[start, start + delta]` about the z axis (absent = the full circle).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PhiSegment {
    pub start: f64,
    pub delta: f64,
    /// (cos, sin) of the start and end angles.
    cs_start: (f64, f64),
    cs_end: (f64, f64),
}

impl PhiSegment {
    /// `None` for a full circle (|delta| ≥ 2π).
    #[must_use]
    pub fn new(start: f64, delta: f64) -> Option<PhiSegment> {
        if delta >= std::f64::consts::TAU - 1e-15 {
            return None;
        }
        let end = start + delta;
        Some(PhiSegment {
            start,
            delta,
            cs_start: (start.cos(), start.sin()),
            cs_end: (end.cos(), end.sin()),
        })
    }

    /// (cos, sin) of the start and of the end angle.
    #[must_use]
    pub fn cos_sin(&self) -> ((f64, f64), (f64, f64)) {
        (self.cs_start, self.cs_end)
    }

    /// Signed distances to the two bounding planes (positive on the outer side): the start
    /// half-plane's `−(ŝ × p)_z` and the end's `−(p × ê)_z`.
    #[inline]
    fn plane_distances(&self, p: Vec3) -> (f64, f64) {
        let (cs, ss) = self.cs_start;
        let (ce, se) = self.cs_end;
        (-(cs * p.y - ss * p.x), -(p.x * se - p.y * ce))
    }

    #[inline]
    fn contains(&self, p: Vec3) -> bool {
        let (d1, d2) = self.plane_distances(p);
        if self.delta <= std::f64::consts::PI {
            d1 <= 0.0 && d2 <= 0.0
        } else {
            d1 <= 0.0 || d2 <= 0.0
        }
    }

    /// Lower-bound signed distance: the wedge is the intersection (Δφ ≤ π) or the union
    /// (Δφ > π) of two half-spaces.
    #[inline]
    fn sd(&self, p: Vec3) -> f64 {
        let (d1, d2) = self.plane_distances(p);
        if self.delta <= std::f64::consts::PI {
            d1.max(d2)
        } else {
            d1.min(d2)
        }
    }

    fn roots(&self, out: &mut Vec<f64>, p: Vec3, d: Vec3) {
        let (cs, ss) = self.cs_start;
        let (ce, se) = self.cs_end;
        roots::plane(out, p, d, Vec3::new(ss, -cs, 0.0), 0.0);
        roots::plane(out, p, d, Vec3::new(se, -ce, 0.0), 0.0);
    }
}

/// A closed polygon in a half-plane (ρ ≥ 0 or u ≥ 0, z), vertices in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Polygon {
    pub vertices: Vec<(f64, f64)>,
}

impl Polygon {
    fn edges(&self) -> impl Iterator<Item = ((f64, f64), (f64, f64))> + '_ {
        let n = self.vertices.len();
        (0..n).map(move |i| (self.vertices[i], self.vertices[(i + 1) % n]))
    }

    /// Even–odd test with the half-open rule (an edge counts when it straddles `z` and crosses
    /// strictly to the right of `r`).
    fn contains(&self, r: f64, z: f64) -> bool {
        let mut inside = false;
        for ((r1, z1), (r2, z2)) in self.edges() {
            if (z1 > z) != (z2 > z) {
                let rc = r1 + (z - z1) * (r2 - r1) / (z2 - z1);
                if rc > r {
                    inside = !inside;
                }
            }
        }
        inside
    }

    /// The distance from (r, z) to the polygon's edges, edges on the axis (r = 0 at both ends:
    /// no surface in 3D) left out.
    fn boundary_distance(&self, r: f64, z: f64) -> f64 {
        let mut best = f64::INFINITY;
        for ((r1, z1), (r2, z2)) in self.edges() {
            if r1 == 0.0 && r2 == 0.0 {
                continue;
            }
            let (er, ez) = (r2 - r1, z2 - z1);
            let len2 = er * er + ez * ez;
            let s = if len2 > 0.0 {
                (((r - r1) * er + (z - z1) * ez) / len2).clamp(0.0, 1.0)
            } else {
                0.0
            };
            let (dr, dz) = (r - (r1 + s * er), z - (z1 + s * ez));
            // √ as written, not `hypot`: the GPU twin gives the same bits.
            best = best.min((dr * dr + dz * dz).sqrt());
        }
        best
    }
}

/// A polyhedra's sides: `n` flat sides over φ ∈ [start, start + delta], side k's outward normal
/// at φ = start + (k + ½)·delta/n; the cross-section polygon is in (u, z), u = p·n̂_k.
#[derive(Clone, Debug, PartialEq)]
pub struct Sides {
    pub start: f64,
    pub delta: f64,
    pub normals: Vec<(f64, f64)>,
}

impl Sides {
    fn side_of(&self, p: Vec3) -> usize {
        let n = self.normals.len();
        let mut rel = (p.y.atan2(p.x) - self.start).rem_euclid(std::f64::consts::TAU);
        if rel > self.delta {
            // Outside a partial segment (membership is decided by the φ segment): nearest side.
            rel = if rel - self.delta < std::f64::consts::TAU - rel {
                self.delta
            } else {
                0.0
            };
        }
        ((rel / self.delta * n as f64) as usize).min(n - 1)
    }
}

/// A convex polyhedron: `n·x ≤ c` for every face, and its vertices (for the bounding box).
#[derive(Clone, Debug, PartialEq)]
pub struct Convex {
    pub planes: Vec<(Vec3, f64)>,
    pub vertices: Vec<Vec3>,
}

/// Boolean operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoolOp {
    Union,
    Subtraction,
    Intersection,
}

/// One solid. Lengths in mm, angles in rad.
#[derive(Clone, Debug, PartialEq)]
pub enum Solid {
    /// Half-lengths.
    Box { half: Vec3 },
    /// Trd, trap, para: a convex polyhedron.
    Convex(Convex),
    /// Tube, cone, polycone, generic polycone: a polygon in (ρ, z) revolved about z, cut to a φ
    /// segment.
    Revolved { polygon: Polygon, phi: Option<PhiSegment> },
    /// Spherical shell with φ and θ ranges.
    Sphere {
        rmin: f64,
        rmax: f64,
        phi: Option<PhiSegment>,
        theta_start: f64,
        theta_end: f64,
    },
    /// Polyhedra: a polygon in (u, z) swept over flat sides.
    Polyhedra {
        polygon: Polygon,
        sides: Sides,
        phi: Option<PhiSegment>,
        /// Largest corner radius (bounding box).
        rmax_corner: f64,
    },
    /// `a op b`, each operand placed by its transform in this solid's frame.
    Boolean {
        op: BoolOp,
        a: SolidId,
        b: SolidId,
        a_placement: Transform,
        b_placement: Transform,
    },
}

/// The arena of solids.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Solids {
    pub solids: Vec<Solid>,
}

impl Solids {
    /// Add a solid; its id.
    pub fn push(&mut self, s: Solid) -> SolidId {
        self.solids.push(s);
        (self.solids.len() - 1) as SolidId
    }

    #[must_use]
    pub fn get(&self, id: SolidId) -> &Solid {
        &self.solids[id as usize]
    }

    /// Strict membership (no tolerance): the definition of the solid.
    #[must_use]
    pub fn contains(&self, id: SolidId, p: Vec3) -> bool {
        match self.get(id) {
            Solid::Box { half } => p.x.abs() <= half.x && p.y.abs() <= half.y && p.z.abs() <= half.z,
            Solid::Convex(c) => c.planes.iter().all(|&(n, k)| n.dot(p) <= k),
            Solid::Revolved { polygon, phi } => phi.as_ref().is_none_or(|w| w.contains(p)) && polygon.contains(p.rho(), p.z),
            Solid::Sphere {
                rmin,
                rmax,
                phi,
                theta_start,
                theta_end,
            } => {
                let r2 = p.dot(p);
                if r2 > rmax * rmax || r2 < rmin * rmin || !phi.as_ref().is_none_or(|w| w.contains(p)) {
                    return false;
                }
                if *theta_start > 0.0 || *theta_end < std::f64::consts::PI {
                    let th = p.rho().atan2(p.z);
                    th >= *theta_start && th <= *theta_end
                } else {
                    true
                }
            }
            Solid::Polyhedra { polygon, sides, phi, .. } => {
                if !phi.as_ref().is_none_or(|w| w.contains(p)) {
                    return false;
                }
                let (nx, ny) = sides.normals[sides.side_of(p)];
                polygon.contains(nx * p.x + ny * p.y, p.z)
            }
            Solid::Boolean {
                op,
                a,
                b,
                a_placement,
                b_placement,
            } => {
                let ina = self.contains(*a, a_placement.to_local(p));
                match op {
                    BoolOp::Union => ina || self.contains(*b, b_placement.to_local(p)),
                    BoolOp::Intersection => ina && self.contains(*b, b_placement.to_local(p)),
                    BoolOp::Subtraction => ina && !self.contains(*b, b_placement.to_local(p)),
                }
            }
        }
    }

    /// A signed distance whose magnitude never exceeds the true distance to the boundary
    /// (positive outside). Its sign may be wrong within the bound's slack for polyhedra, so
    /// callers take the side from [`Solids::contains`].
    #[must_use]
    pub fn signed_distance(&self, id: SolidId, p: Vec3) -> f64 {
        match self.get(id) {
            Solid::Box { half } => {
                let q = Vec3::new(p.x.abs() - half.x, p.y.abs() - half.y, p.z.abs() - half.z);
                let outside = q.max(Vec3::ZERO).norm();
                if outside > 0.0 {
                    outside
                } else {
                    q.x.max(q.y).max(q.z)
                }
            }
            Solid::Convex(c) => c.planes.iter().map(|&(n, k)| n.dot(p) - k).fold(f64::NEG_INFINITY, f64::max),
            Solid::Revolved { polygon, phi } => {
                let (r, z) = (p.rho(), p.z);
                let m = polygon.boundary_distance(r, z);
                let s = if polygon.contains(r, z) { -m } else { m };
                match phi {
                    Some(w) => s.max(w.sd(p)),
                    None => s,
                }
            }
            Solid::Sphere {
                rmin,
                rmax,
                phi,
                theta_start,
                theta_end,
            } => {
                let r = p.norm();
                let mut s = (r - rmax).max(rmin - r);
                if let Some(w) = phi {
                    s = s.max(w.sd(p));
                }
                let th = p.rho().atan2(p.z);
                // Distance to the nappe θ = θ₀ in the meridian half-plane: r·sin|θ − θ₀|, or r
                // beyond a right angle.
                let nappe = |a: f64| {
                    if a.abs() <= std::f64::consts::FRAC_PI_2 {
                        r * a.abs().sin()
                    } else {
                        r
                    }
                };
                if *theta_start > 0.0 {
                    let a = th - theta_start;
                    s = s.max(if a >= 0.0 { -nappe(a) } else { nappe(a) });
                }
                if *theta_end < std::f64::consts::PI {
                    let a = theta_end - th;
                    s = s.max(if a >= 0.0 { -nappe(a) } else { nappe(a) });
                }
                s
            }
            Solid::Polyhedra { polygon, sides, phi, .. } => {
                // The boundary lies on the extrusions of the polygon's edges along every side
                // (and the φ planes): the least of those distances bounds the true one.
                let mut m = f64::INFINITY;
                for &(nx, ny) in &sides.normals {
                    m = m.min(polygon.boundary_distance(nx * p.x + ny * p.y, p.z));
                }
                if let Some(w) = phi {
                    let (d1, d2) = w.plane_distances(p);
                    m = m.min(d1.abs()).min(d2.abs());
                }
                if self.contains(id, p) {
                    -m
                } else {
                    m
                }
            }
            Solid::Boolean {
                op,
                a,
                b,
                a_placement,
                b_placement,
            } => {
                let sa = self.signed_distance(*a, a_placement.to_local(p));
                let sb = self.signed_distance(*b, b_placement.to_local(p));
                match op {
                    BoolOp::Union => sa.min(sb),
                    BoolOp::Intersection => sa.max(sb),
                    BoolOp::Subtraction => sa.max(-sb),
                }
            }
        }
    }

    /// Push the roots along the ray of every surface the solid's boundary lies on.
    pub fn roots(&self, id: SolidId, p: Vec3, d: Vec3, out: &mut Vec<f64>) {
        match self.get(id) {
            Solid::Box { half } => {
                for (n, h) in [
                    (Vec3::new(1.0, 0.0, 0.0), half.x),
                    (Vec3::new(0.0, 1.0, 0.0), half.y),
                    (Vec3::new(0.0, 0.0, 1.0), half.z),
                ] {
                    roots::plane(out, p, d, n, h);
                    roots::plane(out, p, d, n, -h);
                }
            }
            Solid::Convex(c) => {
                for &(n, k) in &c.planes {
                    roots::plane(out, p, d, n, k);
                }
            }
            Solid::Revolved { polygon, phi } => {
                for ((r1, z1), (r2, z2)) in polygon.edges() {
                    if z1 == z2 {
                        roots::plane(out, p, d, Vec3::new(0.0, 0.0, 1.0), z1);
                    } else if r1 == r2 {
                        if r1 > 0.0 {
                            roots::cylinder(out, p, d, r1);
                        }
                    } else {
                        let k = (r2 - r1) / (z2 - z1);
                        roots::cone(out, p, d, r1 - k * z1, k);
                    }
                }
                if let Some(w) = phi {
                    w.roots(out, p, d);
                }
            }
            Solid::Sphere {
                rmin,
                rmax,
                phi,
                theta_start,
                theta_end,
            } => {
                roots::sphere(out, p, d, *rmax);
                if *rmin > 0.0 {
                    roots::sphere(out, p, d, *rmin);
                }
                if let Some(w) = phi {
                    w.roots(out, p, d);
                }
                if *theta_start > 0.0 {
                    roots::theta_cone(out, p, d, *theta_start);
                }
                if *theta_end < std::f64::consts::PI {
                    roots::theta_cone(out, p, d, *theta_end);
                }
            }
            Solid::Polyhedra { polygon, sides, phi, .. } => {
                for ((u1, z1), (u2, z2)) in polygon.edges() {
                    if u1 == 0.0 && u2 == 0.0 {
                        continue;
                    }
                    if z1 == z2 {
                        roots::plane(out, p, d, Vec3::new(0.0, 0.0, 1.0), z1);
                        continue;
                    }
                    // The edge's line (z2 − z1)·u − (u2 − u1)·z = (z2 − z1)·u1 − (u2 − u1)·z1,
                    // a plane in 3D for each side.
                    let (a, b) = (z2 - z1, -(u2 - u1));
                    let c = a * u1 + b * z1;
                    for &(nx, ny) in &sides.normals {
                        roots::plane(out, p, d, Vec3::new(a * nx, a * ny, b), c);
                    }
                }
                if let Some(w) = phi {
                    w.roots(out, p, d);
                }
            }
            Solid::Boolean {
                a,
                b,
                a_placement,
                b_placement,
                ..
            } => {
                self.roots(*a, a_placement.to_local(p), a_placement.dir_to_local(d), out);
                self.roots(*b, b_placement.to_local(p), b_placement.dir_to_local(d), out);
            }
        }
    }

    /// The start of the first segment of the ray whose membership is `want` (see the module
    /// docs); ∞ if none.
    fn first_segment(&self, id: SolidId, p: Vec3, d: Vec3, want: bool) -> f64 {
        let mut ts = Vec::with_capacity(16);
        ts.push(0.0);
        self.roots(id, p, d, &mut ts);
        ts.sort_unstable_by(f64::total_cmp);
        for i in 0..ts.len() {
            let a = ts[i];
            let mid = match ts.get(i + 1) {
                Some(&b) => 0.5 * (a + b),
                None => a + 1.0 + a,
            };
            if self.contains(id, p.along(d, mid)) == want {
                return a;
            }
        }
        f64::INFINITY
    }

    /// Where the point is, with the surface [`SURFACE_TOLERANCE`] thick.
    #[must_use]
    pub fn inside(&self, id: SolidId, p: Vec3) -> Inside {
        if self.signed_distance(id, p).abs() <= SURFACE_TOLERANCE {
            Inside::Surface
        } else if self.contains(id, p) {
            Inside::Inside
        } else {
            Inside::Outside
        }
    }

    /// Distance along the unit direction `d` to where the ray enters the solid (0 if the first
    /// stretch of the ray is already inside; ∞ if it never enters).
    #[must_use]
    pub fn distance_to_in(&self, id: SolidId, p: Vec3, d: Vec3) -> f64 {
        self.first_segment(id, p, d, true)
    }

    /// Distance along the unit direction `d` to where the ray leaves the solid (0 if the first
    /// stretch is already outside).
    #[must_use]
    pub fn distance_to_out(&self, id: SolidId, p: Vec3, d: Vec3) -> f64 {
        self.first_segment(id, p, d, false)
    }

    /// A distance (≤ the true one) from an outside point to the solid; 0 inside.
    #[must_use]
    pub fn safety_to_in(&self, id: SolidId, p: Vec3) -> f64 {
        if self.contains(id, p) {
            0.0
        } else {
            self.signed_distance(id, p).abs()
        }
    }

    /// A distance (≤ the true one) from an inside point to the boundary; 0 outside.
    #[must_use]
    pub fn safety_to_out(&self, id: SolidId, p: Vec3) -> f64 {
        if self.contains(id, p) {
            self.signed_distance(id, p).abs()
        } else {
            0.0
        }
    }

    /// An axis-aligned box holding the solid.
    #[must_use]
    pub fn bounding_box(&self, id: SolidId) -> Aabb {
        match self.get(id) {
            Solid::Box { half } => Aabb { min: -*half, max: *half },
            Solid::Convex(c) => {
                let mut lo = Vec3::new(f64::INFINITY, f64::INFINITY, f64::INFINITY);
                let mut hi = -lo;
                for &v in &c.vertices {
                    lo = lo.min(v);
                    hi = hi.max(v);
                }
                Aabb { min: lo, max: hi }
            }
            Solid::Revolved { polygon, .. } => {
                let r = polygon.vertices.iter().map(|v| v.0).fold(0.0, f64::max);
                let (zl, zh) = z_range(polygon);
                Aabb {
                    min: Vec3::new(-r, -r, zl),
                    max: Vec3::new(r, r, zh),
                }
            }
            Solid::Sphere { rmax, .. } => Aabb {
                min: Vec3::new(-rmax, -rmax, -rmax),
                max: Vec3::new(*rmax, *rmax, *rmax),
            },
            Solid::Polyhedra { polygon, rmax_corner, .. } => {
                let (zl, zh) = z_range(polygon);
                Aabb {
                    min: Vec3::new(-rmax_corner, -rmax_corner, zl),
                    max: Vec3::new(*rmax_corner, *rmax_corner, zh),
                }
            }
            Solid::Boolean {
                op,
                a,
                b,
                a_placement,
                b_placement,
            } => {
                let ba = self.bounding_box(*a).transformed(a_placement);
                match op {
                    BoolOp::Union => ba.union(&self.bounding_box(*b).transformed(b_placement)),
                    BoolOp::Subtraction => ba,
                    BoolOp::Intersection => {
                        let bb = self.bounding_box(*b).transformed(b_placement);
                        Aabb {
                            min: ba.min.max(bb.min),
                            max: ba.max.min(bb.max),
                        }
                    }
                }
            }
        }
    }
}

fn z_range(p: &Polygon) -> (f64, f64) {
    p.vertices
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(v.1), h.max(v.1)))
}
