//! The sampled track-length estimator (`--estimator sampled`, docs/spline.md "Estimators"): a
//! cheaper unbiased alternative to [`super::bins`]' exact one, with the same tables.
//!
//! * **Points**: along a photon's whole path (its segments one after the other), points at the
//!   cumulative path lengths (u + k)·Δ, k = 0, 1, …, with one uniform u ∈ (0, 1] per photon from
//!   its own stream ([`TAG`], independent of the path's). Each point adds weight × Δ to the
//!   (spatial, delay) cell it lies in. For any path, E_u[Σ_k f(x((u + k)Δ))·Δ] = ∫ f(x(s)) ds
//!   (the points are a uniformly shifted comb), so the expected contribution to a cell is the
//!   photon's weighted track length in it: amplitude and timing tables are unbiased.
//! * **Δ = ∞ (`segment`)**: one point per straight segment at u_k × its length, adding weight ×
//!   length; u_k = the photon's 32 random bits + k·⌊2³²/φ⌋ (mod 2³², a Weyl sequence: each u_k
//!   uniform, independent of the path), k the segment's index. The cheapest unbiased
//!   track-length estimator: one record per segment.
//! * **Adaptive step** (`--sample-step auto`, [`AdaptiveStep`]): each segment's Δ_seg is as
//!   large as the cells it crosses allow in the direction it crosses them: half the narrowest
//!   radial (axial, delay) bin over the fastest rate at which the segment's r (z, delay) changes
//!   along it, and the narrowest angular bin k [rad] over its fastest angular rate seen from the
//!   source (b/r_min², b its impact parameter); clamped to [Δ, the narrowest bin in path length].
//!   ([`AdaptiveStep::segment_step`]; session 35's rule, clamp(k·r, Δ, Δ_max) with r the nearer
//!   end's distance, remains only as the GPU's comparison build `WD_SAMP_ADAPT=1`.) The comb
//!   runs in units of the step: point k of the photon at cumulative u = (u₀ + k) with du =
//!   ds/Δ_seg, each adding weight × Δ_seg. Δ_seg depends on the path alone, not on the comb, so
//!   E_u[Σ f(x_k)·Δ_seg] = ∫ f ds still holds: the same unbiased tables with fewer points
//!   where the cells are large (docs/spline.md "The adaptive step", "The directional step").
//! * **Runs**: consecutive points of a photon in the grid that fall in the same cell are merged
//!   before they are added; Σx² then sums the squares of a photon's *runs* in a cell (a photon
//!   that leaves a cell and comes back adds two squares, not the square of their sum), likewise
//!   per spatial cell. N_eff = (Σx)²/Σx² is thus somewhat larger than the per-photon one (the
//!   cross terms of a photon's returns are missing): measured in the tests and docs.
//! * **Lookup** ([`Lookup`]): the point's coordinates as [`super::bins`]' (radial, folded
//!   azimuth, polar, delay), its bin by arithmetic on axes with equal bins ([`Axis`]), by
//!   binary search otherwise.
//!
//! The GPU twin is `kernels/sampled.cu` (the fast propagation build, float arithmetic).

use super::bins::{Binning, Frame, Shape};
use warpdrive_core::rng::u32_to_unit_f32;
use warpdrive_core::RandomStream;

/// The random stream of a photon's sample offset (entity = global photon id); the photon's own
/// path uses `source::tags::PHOTON`.
pub const TAG: u32 = 4;
/// ⌊2³²/φ⌋: the Weyl increment of the per-segment offsets (Δ = ∞).
pub const GOLDEN: u32 = 0x9E37_79B9;
/// The smallest step [m] (bounds the points per photon).
pub const MIN_STEP: f64 = 0.01;

/// One axis's bin lookup: by arithmetic when the edges are equal steps (each within 10⁻⁹ of a
/// bin width of lo + i·w), else by binary search; `None` outside [first, last] (the last edge
/// belongs to the last bin, as [`Binning`]'s `cell`).
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    pub edges: Vec<f64>,
    pub lo: f64,
    /// bins / (last − first) for equal bins, 0 otherwise.
    pub inv: f64,
}

impl Axis {
    #[must_use]
    pub fn new(edges: &[f64]) -> Self {
        let n = edges.len() - 1;
        let (lo, hi) = (edges[0], edges[n]);
        let w = (hi - lo) / n as f64;
        let uniform = edges.iter().enumerate().all(|(i, &e)| (e - (lo + w * i as f64)).abs() <= 1e-9 * w);
        Self {
            edges: edges.to_vec(),
            lo,
            inv: if uniform { n as f64 / (hi - lo) } else { 0.0 },
        }
    }

    /// The bin of `x`.
    #[inline]
    #[must_use]
    pub fn bin(&self, x: f64) -> Option<usize> {
        let e = &self.edges;
        let n = e.len() - 1;
        if !(x >= e[0] && x <= e[n]) {
            return None;
        }
        if self.inv > 0.0 {
            Some((((x - self.lo) * self.inv) as usize).min(n - 1))
        } else {
            Some(e.partition_point(|&b| b <= x).clamp(1, n) - 1)
        }
    }
}

/// The cell lookup of points: the binning's axes as [`Axis`], the frame's constants.
#[derive(Clone, Debug, PartialEq)]
pub struct Lookup {
    pub shape: Shape,
    pub radial: Axis,
    pub azimuth: Axis,
    pub polar: Axis,
    /// `None`: no time axis (one time cell).
    pub delay: Option<Axis>,
    pub time_cells: u32,
}

impl Lookup {
    #[must_use]
    pub fn new(b: &Binning) -> Self {
        Self {
            shape: b.shape,
            radial: Axis::new(&b.radial),
            azimuth: Axis::new(&b.azimuth),
            polar: Axis::new(&b.polar),
            delay: if b.delay.is_empty() { None } else { Some(Axis::new(&b.delay)) },
            time_cells: b.time_cells() as u32,
        }
    }

    /// The coordinates (radial, φ [deg] folded, polar, delay) of the point `x` at time `t` [ns]
    /// (as `Binning::coordinates` of a path through it).
    #[must_use]
    pub fn coordinates(&self, f: &Frame, x: [f64; 3], t: f64) -> [f64; 4] {
        let rel = [x[0] - f.origin[0], x[1] - f.origin[1], x[2] - f.origin[2]];
        let dot = |a: [f64; 3], b: [f64; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
        let axial = dot(rel, f.axis);
        let phi = dot(rel, f.e2).atan2(dot(rel, f.e1)).abs().to_degrees();
        match self.shape {
            Shape::Spherical => {
                let r = dot(rel, rel).sqrt();
                let polar = if r > 0.0 { (axial / r).clamp(-1.0, 1.0) } else { 1.0 };
                [r, phi, polar, t - f.ng_over_c * r]
            }
            Shape::Cylindrical => {
                let p = [rel[0] - axial * f.axis[0], rel[1] - axial * f.axis[1], rel[2] - axial * f.axis[2]];
                let rho = dot(p, p).sqrt();
                [rho, phi, axial, t - axial * f.inv_c - rho * f.cone]
            }
        }
    }

    /// The cell (spatial index × time cells + time cell: 0 underflow, last overflow) of
    /// coordinates `c`, if they lie in the spatial grid.
    #[inline]
    #[must_use]
    pub fn cell(&self, c: [f64; 4]) -> Option<u32> {
        let i = self.radial.bin(c[0])?;
        let j = self.azimuth.bin(c[1])?;
        let k = self.polar.bin(c[2])?;
        let na = self.azimuth.edges.len() - 1;
        let np = self.polar.edges.len() - 1;
        let spatial = (i * na + j) * np + k;
        let t = match &self.delay {
            None => 0,
            Some(d) => {
                let e = &d.edges;
                if c[3] < e[0] {
                    0
                } else if c[3] >= e[e.len() - 1] {
                    e.len()
                } else {
                    1 + d.bin(c[3]).unwrap_or(0)
                }
            }
        };
        Some((spatial * self.time_cells as usize + t) as u32)
    }
}

/// The adaptive comb's rule (module doc).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdaptiveStep {
    /// Δ [m]: the smallest step (near the source).
    pub min: f64,
    /// k [rad]: the narrowest angular bin.
    pub slope: f64,
    /// Δ_max [m]: half the narrowest radial (cylinders: also axial) bin, and of the narrowest
    /// delay bin over the fastest rate at which a path's delay can change ([`Self::segment_step`]
    /// takes up to twice it, a whole bin; session 35's rule, the GPU's `WD_SAMP_ADAPT=1`, up to it).
    pub max: f64,
    /// Half the narrowest radial bin [m] (r or ρ).
    pub half_radial: f64,
    /// Cylinders: half the narrowest axial bin [m]; spheres: ∞.
    pub half_axial: f64,
    /// Half the narrowest delay bin [ns]; no delay axis: ∞.
    pub half_delay: f64,
}

impl AdaptiveStep {
    /// The rule for the bins `b` and frame `f` with the smallest step `step`; `None` when the
    /// bins leave no room above it (Δ_max ≤ Δ: the fixed comb).
    #[must_use]
    pub fn for_bins(b: &Binning, f: &Frame, step: f64) -> Option<Self> {
        let narrowest = |e: &[f64]| e.windows(2).map(|w| w[1] - w[0]).fold(f64::INFINITY, f64::min);
        let mut angle = narrowest(&b.azimuth).to_radians();
        let half_radial = 0.5 * narrowest(&b.radial);
        let mut half_axial = f64::INFINITY;
        // The rate [ns/m] at which a path's delay changes at most: t grows by n_g/c a metre and
        // the direct light's time r·n_g/c (cylinders: z/c + ρ·cone) changes by at most as much.
        let rate = match b.shape {
            Shape::Spherical => {
                // Polar edges are cos θ: the narrowest bin in θ.
                let theta = |c: f64| c.clamp(-1.0, 1.0).acos();
                angle = angle.min(b.polar.windows(2).map(|w| theta(w[0]) - theta(w[1])).fold(f64::INFINITY, f64::min));
                2.0 * f.ng_over_c
            }
            Shape::Cylindrical => {
                half_axial = 0.5 * narrowest(&b.polar);
                f.ng_over_c + f.inv_c + f.cone
            }
        };
        let half_delay = if b.delay.is_empty() {
            f64::INFINITY
        } else {
            0.5 * narrowest(&b.delay)
        };
        let max = half_radial.min(half_axial).min(half_delay / rate);
        (max > step && angle > 0.0 && angle.is_finite()).then_some(Self {
            min: step,
            slope: angle,
            max,
            half_radial,
            half_axial,
            half_delay,
        })
    }

    /// The step of the straight segment from `x0` along the unit vector `dir`, `len` long, of a
    /// photon whose time grows by `ocm` [ns/m] (sampled.cu `samp_segment_step`). Along a
    /// straight line the distance's rate dr/ds = cos α (α the angle between the direction and
    /// the source-to-point vector; cylinders: in the plane across the axis) grows monotonically
    /// from its value c₀ at the start to c₁ at the end, so over the segment:
    /// * |dr/ds| ≤ max(|c₀|, |c₁|): the radial bound ½w_r / that;
    /// * the delay t − r·n_g/c (cylinders: t − z/c − ρ·cone) changes at ocm − n_g/c·cos α
    ///   (ocm − d_z/c − cone·cos α), largest in size at one of the ends: ½w_t / that;
    /// * cylinders: |dz/ds| = |d·axis|: ½w_z / that;
    /// * the direction seen from the source turns at b/r² (b = |p × d| the impact parameter),
    ///   at most b/r_min² with r_min the segment's closest distance: k·r_min²/b.
    ///
    /// Δ_seg is the smallest bound, clamped to [Δ, 2·Δ_max] (a whole bin in the fastest
    /// direction at most): at least two points per crossing of a cell in each coordinate.
    #[must_use]
    pub fn segment_step(&self, f: &Frame, shape: Shape, x0: [f64; 3], dir: [f64; 3], len: f64, ocm: f64) -> f64 {
        let dot = |a: [f64; 3], b: [f64; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
        let p = [x0[0] - f.origin[0], x0[1] - f.origin[1], x0[2] - f.origin[2]];
        // Across the axis for cylinders: p and d less their axial parts; the delay's axial rate.
        let (p, d, dz, delay_rate) = match shape {
            Shape::Spherical => (p, dir, 0.0, ocm),
            Shape::Cylindrical => {
                let (up, ud) = (dot(p, f.axis), dot(dir, f.axis));
                let perp = |v: [f64; 3], u: f64| [v[0] - u * f.axis[0], v[1] - u * f.axis[1], v[2] - u * f.axis[2]];
                (perp(p, up), perp(dir, ud), ud, ocm - ud * f.inv_c)
            }
        };
        let radial_delay = match shape {
            Shape::Spherical => f.ng_over_c,
            Shape::Cylindrical => f.cone,
        };
        let (pp, pd, dd) = (dot(p, p), dot(p, d), dot(d, d));
        // The end from its coordinates (not pp + len·(2pd + len·dd): that cancels near the source).
        let e = [p[0] + len * d[0], p[1] + len * d[1], p[2] + len * d[2]];
        let (ee, ed) = (dot(e, e), dot(e, d));
        let c0 = if pp > 0.0 { pd / pp.sqrt() } else { 1.0 };
        let c1 = if ee > 0.0 { ed / ee.sqrt() } else { 1.0 };
        let radial = self.half_radial / c0.abs().max(c1.abs());
        let delay = self.half_delay / (delay_rate - radial_delay * c0).abs().max((delay_rate - radial_delay * c1).abs());
        let axial = self.half_axial / dz.abs();
        // b² = |p × d|² = pp·dd − pd²: the squared impact parameter (cylinders: of the lines
        // projected across the axis, times |d|² there).
        let b2 = (pp * dd - pd * pd).max(0.0);
        let s_min = if dd > 0.0 { -pd / dd } else { 0.0 };
        let r_min2 = if s_min <= 0.0 {
            pp
        } else if s_min >= len {
            ee
        } else {
            b2 / dd
        };
        // The angular rate b/r²; a line through the source (b = 0 = r_min) turns without bound
        // there.
        let angular = if b2 > 0.0 {
            self.slope * r_min2 / b2.sqrt()
        } else if r_min2 > 0.0 {
            f64::INFINITY
        } else {
            0.0
        };
        radial.min(delay).min(axial).min(angular).clamp(self.min, 2.0 * self.max)
    }
}

/// One photon's sampling state: the distance from the current segment's start to the next point
/// (Δ finite), or the photon's random bits (Δ = ∞); the open runs.
#[derive(Clone, Debug)]
pub struct Sampler {
    pub step: f64,
    /// The adaptive comb (`next` then in units of the segment's step), or the fixed one.
    adaptive: Option<AdaptiveStep>,
    next: f64,
    bits: u32,
    segment: u32,
    /// The open run (cell, x) and spatial run (spatial cell, x); u32::MAX: none.
    run: (u32, f64),
    spatial: (u32, f64),
    /// Points in the grid and runs closed (cells added to) so far.
    pub points: u64,
    pub runs: u64,
}

impl Sampler {
    /// Photon `id`'s sampler (its offset from stream ([`TAG`], id) of `seed`), with the
    /// adaptive comb's rule (its smallest step is `step`) or the fixed step.
    #[must_use]
    pub fn new(step: f64, adaptive: Option<AdaptiveStep>, seed: u64, id: u64) -> Self {
        let bits = RandomStream::new(seed, TAG, id).next_u32();
        let u = f64::from(u32_to_unit_f32(bits));
        Self {
            step,
            adaptive,
            next: if adaptive.is_some() { u } else { u * step },
            bits,
            segment: 0,
            run: (u32::MAX, 0.0),
            spatial: (u32::MAX, 0.0),
            points: 0,
            runs: 0,
        }
    }

    /// The points of one straight segment (start `x0` [m], unit direction, length [m], time at
    /// the start [ns], group delay per metre [ns/m], weight): `add(cell, x)` for each closed run.
    #[allow(clippy::too_many_arguments)]
    pub fn segment(
        &mut self,
        look: &Lookup,
        f: &Frame,
        x0: [f64; 3],
        dir: [f64; 3],
        len: f64,
        time: f64,
        ocm: f64,
        weight: f64,
        add: &mut impl FnMut(Record),
    ) {
        if len.is_nan() || len <= 0.0 {
            self.segment = self.segment.wrapping_add(1);
            return;
        }
        let mut point = |s: f64, x: f64, this: &mut Self| {
            let at = [x0[0] + s * dir[0], x0[1] + s * dir[1], x0[2] + s * dir[2]];
            if let Some(cell) = look.cell(look.coordinates(f, at, time + s * ocm)) {
                this.points += 1;
                this.record(cell, x, look.time_cells, add);
            }
        };
        if self.step.is_infinite() {
            let u = u32_to_unit_f32(self.bits.wrapping_add(self.segment.wrapping_mul(GOLDEN)));
            point(f64::from(u) * len, weight * len, self);
        } else if let Some(a) = self.adaptive {
            // The comb in units of the segment's step (module doc).
            let ds = a.segment_step(f, look.shape, x0, dir, len, ocm);
            let x = weight * ds;
            let mut s = self.next * ds;
            while s < len {
                point(s, x, self);
                self.next += 1.0;
                s = self.next * ds;
            }
            self.next -= len / ds;
        } else {
            let x = weight * self.step;
            while self.next < len {
                let s = self.next;
                point(s, x, self);
                self.next += self.step;
            }
            self.next -= len;
        }
        self.segment = self.segment.wrapping_add(1);
    }

    fn record(&mut self, cell: u32, x: f64, time_cells: u32, add: &mut impl FnMut(Record)) {
        if cell != self.run.0 {
            if self.run.0 != u32::MAX {
                self.runs += 1;
                add(Record::Cell(self.run.0, self.run.1));
            }
            self.run = (cell, 0.0);
        }
        self.run.1 += x;
        let sp = cell / time_cells;
        if sp != self.spatial.0 {
            if self.spatial.0 != u32::MAX {
                add(Record::Spatial(self.spatial.0, self.spatial.1));
            }
            self.spatial = (sp, 0.0);
        }
        self.spatial.1 += x;
    }

    /// Close the open runs at the photon's end.
    pub fn finish(&mut self, add: &mut impl FnMut(Record)) {
        if self.run.0 != u32::MAX {
            self.runs += 1;
            add(Record::Cell(self.run.0, self.run.1));
            add(Record::Spatial(self.spatial.0, self.spatial.1));
        }
        self.run = (u32::MAX, 0.0);
        self.spatial = (u32::MAX, 0.0);
    }
}

/// A closed run: a cell's weighted length (to its sum and, squared, its Σx²), or a spatial
/// cell's (squared, to its spatial Σx²).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Record {
    Cell(u32, f64),
    Spatial(u32, f64),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Equal steps are found (by arithmetic, the same bins as the search), other edges searched;
    /// points outside are `None`, the last edge in the last bin.
    #[test]
    fn axis_bins_as_the_edges_say() {
        let lin: Vec<f64> = (0..=30).map(|i| 10.0 * f64::from(i)).collect();
        let a = Axis::new(&lin);
        assert!(a.inv > 0.0);
        let b = Axis { inv: 0.0, ..a.clone() };
        let mut r = RandomStream::new(3, 0, 0);
        for _ in 0..100_000 {
            let x = 320.0 * f64::from(r.uniform()) - 10.0;
            assert_eq!(a.bin(x), b.bin(x), "{x}");
        }
        for (x, want) in [
            (-1e-9, None),
            (0.0, Some(0)),
            (10.0, Some(1)),
            (299.999, Some(29)),
            (300.0, Some(29)),
            (300.1, None),
        ] {
            assert_eq!(a.bin(x), want, "{x}");
        }
        assert_eq!(a.bin(f64::NAN), None);
        let c = Axis::new(&[0.0, 1.0, 3.0, 10.0]);
        assert_eq!(c.inv, 0.0);
        assert_eq!(
            (c.bin(0.5), c.bin(1.0), c.bin(9.0), c.bin(10.0)),
            (Some(0), Some(1), Some(2), Some(2))
        );
    }

    /// The lookup agrees with the exact estimator's cell of the same point on random paths
    /// (both shapes, with delays): the exact `deposit` of a tiny piece around the point lands
    /// in the lookup's cell.
    #[test]
    fn lookup_is_the_exact_estimators_cell() {
        let lin = |a: f64, b: f64, n: usize| (0..=n).map(|i| a + (b - a) * i as f64 / n as f64).collect::<Vec<_>>();
        let mut r = RandomStream::new(9, 0, 0);
        for shape in [Shape::Spherical, Shape::Cylindrical] {
            let b = Binning {
                shape,
                radial: lin(0.0, 50.0, 10),
                azimuth: vec![0.0, 15.0, 60.0, 100.0, 180.0],
                polar: if shape == Shape::Spherical {
                    lin(-1.0, 1.0, 8)
                } else {
                    lin(-30.0, 40.0, 7)
                },
                delay: lin(-20.0, 300.0, 16),
            };
            let d = [0.3f64, -0.5, 0.812];
            let n = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
            let f = Frame::new([1.0, -2.0, 3.0], [d[0] / n, d[1] / n, d[2] / n], 1.35, 1.32);
            let look = Lookup::new(&b);
            let mut cuts = Vec::new();
            let mut matched = 0;
            for _ in 0..20_000 {
                let mut u = || f64::from(r.uniform());
                let x = [100.0 * (u() - 0.5), 100.0 * (u() - 0.5), 100.0 * (u() - 0.5)];
                let c = 2.0 * u() - 1.0;
                let s = (1.0 - c * c).sqrt();
                let p = 2.0 * std::f64::consts::PI * u();
                let dir = [s * p.cos(), s * p.sin(), c];
                let t = 400.0 * u();
                let want = look.cell(look.coordinates(&f, x, t));
                // A piece of 2 µm centred on the point.
                let h = 1e-6;
                let path = super::super::bins::Path {
                    start: [x[0] - h * dir[0], x[1] - h * dir[1], x[2] - h * dir[2]],
                    dir,
                    len: 2.0 * h,
                    time: t - h * 4.5,
                    ocm: 4.5,
                    weight: 1.0,
                };
                let mut got = Vec::new();
                b.deposit(&f, &path, &mut cuts, |cell, x| got.push((cell as u32, x)));
                // A point within 2 µm of a boundary gives two pieces: skip it.
                if got.len() > 1 {
                    continue;
                }
                matched += 1;
                assert_eq!(want, got.first().map(|g| g.0), "{shape:?} at {x:?}");
            }
            assert!(matched > 19_000, "{matched}");
        }
    }
}
