//! DOM collision search (spec §3.5 step 3): a uniform x–y cell grid lists the strings whose
//! cylinder reaches each cell; per string the candidate DOMs come from a binary search in z;
//! per DOM the "pancake" intersection: impact parameter against the oversized radius xR·R, entry
//! distance h = b − √D/xR (the DOM squashed by xR along the photon direction). With multi-PMT
//! modules every DOM has its own shape (PPC `pro.cu`, photon-ppc-phase2.md §7): a spheroid of
//! equatorial radius R and polar radius F·R (F = Rz/Rr > 0) or a vertical cylinder of radius R and
//! half-height |F|·R (F < 0, side only), oversized by xR.

use crate::fast::math::{Plain, Poly};
use crate::geometry::{Geometry, DOM_RADIUS};

#[derive(Clone, Copy, Debug)]
pub(crate) struct StringCol {
    pub(crate) x: f32,
    pub(crate) y: f32,
    /// Cylinder radius: largest horizontal DOM offset + xR·R.
    pub(crate) r: f32,
    /// Range of this string's DOMs in the z-sorted arrays.
    pub(crate) first: u32,
    pub(crate) count: u32,
}

/// Whether the segment r + t·n, t ∈ [0, len], comes within `radius` of the vertical axis at
/// (x, y): the closest approach of its x–y projection. The sums through `Poly::gmad` in their
/// written order (`Plain`: as written; the precise twin's `FusedGeom` fuses them).
#[inline(always)]
pub(crate) fn reaches_axis<P: Poly>(x: f32, y: f32, radius: f32, r: [f32; 3], n: [f32; 3], len: f32) -> bool {
    let (dx, dy) = (x - r[0], y - r[1]);
    let nn = P::gmad(n[1], n[1], n[0] * n[0]);
    let t = if nn > 0.0 {
        (P::gmad(dy, n[1], dx * n[0]) / nn).clamp(0.0, len)
    } else {
        0.0
    };
    let (px, py) = (P::gmad(-t, n[0], dx), P::gmad(-t, n[1], dy));
    P::gmad(py, py, px * px) <= radius * radius
}

/// The pancake test of a nominal sphere: b = d·n and the discriminant R² − |d|² + b² (sums through
/// `Poly::gmad`, as [`reaches_axis`]).
#[inline(always)]
pub(crate) fn sphere_disc<P: Poly>(d: [f32; 3], n: [f32; 3], radius: f32) -> (f32, f32) {
    let b_par = P::gmad(d[2], n[2], P::gmad(d[1], n[1], d[0] * n[0]));
    let dd = P::gmad(d[2], d[2], P::gmad(d[1], d[1], d[0] * d[0]));
    (b_par, P::gmad(b_par, b_par, radius * radius - dd))
}

impl StringCol {
    /// Whether the segment r + t·n, t ∈ [0, len], comes within the cylinder.
    fn reached_by<P: Poly>(&self, r: [f32; 3], n: [f32; 3], len: f32) -> bool {
        reaches_axis::<P>(self.x, self.y, self.r, r, n, len)
    }
}

/// The geometry in the form the propagation loop searches.
#[derive(Clone, Debug)]
pub struct DomIndex {
    pub(crate) strings: Vec<StringCol>,
    /// DOMs sorted by (string, z): centre and index into `Geometry::doms`.
    pub(crate) pos: Vec<[f32; 3]>,
    pub(crate) id: Vec<u32>,
    /// Grid over x–y: origin, cell size, dimensions, CSR lists of string indices.
    pub(crate) x0: f32,
    pub(crate) y0: f32,
    pub(crate) cell: f32,
    pub(crate) nx: usize,
    pub(crate) ny: usize,
    pub(crate) cell_start: Vec<u32>,
    pub(crate) cell_strings: Vec<u32>,
    /// Per string a z index over its DOMs: `[z0, 1/dz]` and, per bin of `Z_BINS`, the first DOM
    /// (counted from the string's first) at or above the bin's lower edge minus 1 m. The DOMs
    /// from a z upwards start at that entry after a step or two (no binary search).
    pub(crate) z_grid: Vec<[f32; 2]>,
    pub(crate) z_start: Vec<u32>,
    /// Clearance grid (same origin, cells of `clear_cell`): per cell the string nearest to it
    /// (index; axis x, y and cylinder radius plus margin) and a lower bound on the horizontal
    /// distance from any point of the cell to the cylinders of all other strings,
    /// `[others, x, y, r + margin]`. A segment whose horizontal reach is below that bound can
    /// only hit the nearest string, and not even that one when it passes outside the nearest
    /// cylinder (plus the margin). Both shortcuts give the full
    /// search's result (a uniform, cheap test instead of a divergent loop over cells).
    pub(crate) clear_cell: f32,
    pub(crate) clear_nx: usize,
    pub(crate) clear_ny: usize,
    pub(crate) clearance: Vec<[f32; 4]>,
    pub(crate) clear_near: Vec<u32>,
    /// The second level for segments the first leaves undecided: per cell the second, third and
    /// fourth nearest strings (u32::MAX where there are fewer) and, as f32 bits, a lower bound on
    /// the distance to all strings beyond them. A segment whose horizontal reach is below it can
    /// only hit the four nearest strings (`Reach::Four`), tested one by one instead of through
    /// the cells of its bounding box (in the DeepCore region, where strings are 40–70 m apart,
    /// the first level alone sent one lane in tens through the cell loop, its warp waiting).
    pub(crate) clear_more: Vec<[u32; 4]>,
    /// Oversized radius xR·R and the oversize factor.
    pub r_eff: f32,
    pub oversize: f32,
    /// Per DOM (order of `pos`) the module shape [R, F] (see the module comment), or empty when
    /// every DOM is the nominal sphere (the sphere-only search, bit for bit as before shapes).
    pub(crate) shape: Vec<[f32; 2]>,
    /// Half-height of the tallest oversized DOM: xR·max(R·|F|) (`r_eff` without shapes).
    pub rz_eff: f32,
    /// Radius of the hole-ice column about every string axis [m], 0 without hole ice
    /// (`hole.rs`). String cylinders are at least this wide, so the grid and the clearance
    /// pre-test find the columns as they find the DOMs.
    pub hole_radius: f32,
    /// The z range a segment must come within to hit a DOM: the lowest and highest DOM centres
    /// ∓ `rz_eff` (`distance2_lower_bound`; empty, lo > hi, without DOMs).
    pub z_lo: f32,
    pub z_hi: f32,
}

/// A DOM hit along a segment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Collision {
    /// Index into `Geometry::doms`.
    pub dom: u32,
    /// Distance along the segment to the pancake's entry point [m].
    pub h: f32,
    /// The impact point on the (oversized) surface relative to the DOM centre, in units of xR·R:
    /// a unit vector for spheres.
    pub impact: [f32; 3],
}

impl DomIndex {
    /// Nominal spheres, no hole ice.
    pub fn new(geo: &Geometry, oversize: f64) -> Self {
        Self::build(geo, oversize, 0.0, None)
    }

    /// The index with hole-ice columns of `hole_radius` [m] about the string axes (0: none) and
    /// every DOM's shape: `shapes[i]` = [R, F] of `geo.doms[i]` (multi-PMT modules; `None`: all
    /// nominal spheres, the sphere-only search). Strings reach out to the widest oversized DOM and
    /// z ranges to the tallest (PPC's Rr, Rz).
    pub fn build(geo: &Geometry, oversize: f64, hole_radius: f32, shapes: Option<&[[f64; 2]]>) -> Self {
        let r_eff = (DOM_RADIUS * oversize) as f32;
        let (reach, rz_eff) = match shapes {
            Some(sh) => {
                let r = sh.iter().map(|s| s[0]).fold(DOM_RADIUS, f64::max);
                let z = sh.iter().map(|s| s[0] * s[1].abs()).fold(DOM_RADIUS, f64::max);
                ((r * oversize) as f32, (z * oversize) as f32)
            }
            None => (r_eff, r_eff),
        };
        let mut by_string: std::collections::BTreeMap<i32, Vec<usize>> = Default::default();
        for (i, d) in geo.doms.iter().enumerate() {
            by_string.entry(d.string).or_default().push(i);
        }
        let (mut strings, mut pos, mut id) = (Vec::new(), Vec::new(), Vec::new());
        for (_, mut idx) in by_string {
            idx.sort_by(|&a, &b| geo.doms[a].pos[2].total_cmp(&geo.doms[b].pos[2]));
            let n = idx.len() as f64;
            let cx = idx.iter().map(|&i| geo.doms[i].pos[0]).sum::<f64>() / n;
            let cy = idx.iter().map(|&i| geo.doms[i].pos[1]).sum::<f64>() / n;
            let off = idx
                .iter()
                .map(|&i| (geo.doms[i].pos[0] - cx).hypot(geo.doms[i].pos[1] - cy))
                .fold(0.0, f64::max);
            strings.push(StringCol {
                x: cx as f32,
                y: cy as f32,
                r: ((off + 1e-3) as f32 + reach).max(hole_radius),
                first: pos.len() as u32,
                count: idx.len() as u32,
            });
            for &i in &idx {
                let p = geo.doms[i].pos;
                pos.push([p[0] as f32, p[1] as f32, p[2] as f32]);
                id.push(i as u32);
            }
        }
        let shape = match shapes {
            Some(sh) => id.iter().map(|&i| [sh[i as usize][0] as f32, sh[i as usize][1] as f32]).collect(),
            None => Vec::new(),
        };
        let (z_grid, z_start) = z_index(&strings, &pos);
        let z_lo = pos.iter().map(|p| p[2]).fold(f32::INFINITY, f32::min);
        let z_hi = pos.iter().map(|p| p[2]).fold(f32::NEG_INFINITY, f32::max);
        let cell = 10.0f32;
        let xmin = strings.iter().map(|s| s.x - s.r).fold(f32::MAX, f32::min) - cell;
        let ymin = strings.iter().map(|s| s.y - s.r).fold(f32::MAX, f32::min) - cell;
        let xmax = strings.iter().map(|s| s.x + s.r).fold(f32::MIN, f32::max) + cell;
        let ymax = strings.iter().map(|s| s.y + s.r).fold(f32::MIN, f32::max) + cell;
        let nx = (((xmax - xmin) / cell).ceil() as usize).max(1);
        let ny = (((ymax - ymin) / cell).ceil() as usize).max(1);
        let mut lists: Vec<Vec<u32>> = vec![Vec::new(); nx * ny];
        for (si, s) in strings.iter().enumerate() {
            let i0 = ((s.x - s.r - xmin) / cell).floor().max(0.0) as usize;
            let i1 = (((s.x + s.r - xmin) / cell).floor() as usize).min(nx - 1);
            let j0 = ((s.y - s.r - ymin) / cell).floor().max(0.0) as usize;
            let j1 = (((s.y + s.r - ymin) / cell).floor() as usize).min(ny - 1);
            for j in j0..=j1 {
                for i in i0..=i1 {
                    lists[j * nx + i].push(si as u32);
                }
            }
        }
        let mut cell_start = vec![0u32];
        let mut cell_strings = Vec::new();
        for l in &lists {
            cell_strings.extend_from_slice(l);
            cell_start.push(cell_strings.len() as u32);
        }
        let (clear_nx, clear_ny, clearance, clear_near, clear_more) =
            clearance_grid(&strings, xmin, ymin, CLEAR_CELL, nx as f32 * cell, ny as f32 * cell);
        Self {
            strings,
            pos,
            id,
            x0: xmin,
            y0: ymin,
            cell,
            nx,
            ny,
            cell_start,
            cell_strings,
            z_grid,
            z_start,
            clear_cell: CLEAR_CELL,
            clear_nx,
            clear_ny,
            clearance,
            clear_near,
            clear_more,
            r_eff,
            oversize: oversize as f32,
            shape,
            rz_eff,
            hole_radius,
            z_lo: z_lo - rz_eff,
            z_hi: z_hi + rz_eff,
        }
    }

    /// The squared horizontal distance from `r` to the clearance grid's rectangle, which holds
    /// every string cylinder (0 inside it).
    #[inline(always)]
    fn grid_gap2(&self, r: [f32; 3]) -> f32 {
        let x1 = self.x0 + self.clear_nx as f32 * self.clear_cell;
        let y1 = self.y0 + self.clear_ny as f32 * self.clear_cell;
        let dx = (self.x0 - r[0]).max(r[0] - x1).max(0.0);
        let dy = (self.y0 - r[1]).max(r[1] - y1).max(0.0);
        dx * dx + dy * dy
    }

    /// A lower bound on the squared distance from `r` to every point where a segment can hit a
    /// DOM (`reach.rs`): h² + v², h the horizontal distance to the string cylinders as the
    /// clearance grid bounds it (`reachable`'s bounds: the other strings' bound of r's cell and
    /// the nearest cylinder with its margin; outside the grid, which holds every cylinder, the
    /// distance to its rectangle), v the distance to [`z_lo`, `z_hi`].
    #[inline(always)]
    #[must_use]
    pub fn distance2_lower_bound(&self, r: [f32; 3]) -> f32 {
        let inv = 1.0 / self.clear_cell;
        // Truncation of the non-negative indices (the integers of floor; a negative one fails
        // the test below as floor's would).
        let (fi, fj) = ((r[0] - self.x0) * inv, (r[1] - self.y0) * inv);
        let h = if fi >= 0.0 && fj >= 0.0 && fi < self.clear_nx as f32 && fj < self.clear_ny as f32 {
            let [others, sx, sy, rm] = self.clearance[fj as usize * self.clear_nx + fi as usize];
            let (dx, dy) = (r[0] - sx, r[1] - sy);
            // `others` is negative where another cylinder reaches into the cell: no distance.
            others.min((dx * dx + dy * dy).sqrt() - rm).max(0.0)
        } else {
            self.grid_gap2(r).sqrt()
        };
        let v = (self.z_lo - r[2]).max(r[2] - self.z_hi).max(0.0);
        h * h + v * v
    }

    /// The hole-ice column the segment r + t·n, t ∈ [0, len], enters first: (entry, exit)
    /// distances along it (`hole::cylinder_span`: entry 0 when it starts inside, the exit where
    /// the line leaves the column, possibly beyond `len`), or `None`. Strings are found as in `first_hit` (clearance pre-test, then the cells
    /// of the segment's bounding box); columns do not overlap, the earliest entry wins.
    pub fn hole_span(&self, r: [f32; 3], n: [f32; 3], len: f32) -> Option<(f32, f32)> {
        self.hole_span_p::<Plain>(r, n, len)
    }

    /// [`Self::hole_span`] with the nearest cylinder's pre-test rounded as `P` says (the kernel's
    /// `hole_span` goes through the same `reachable` as its collision search).
    pub fn hole_span_p<P: Poly>(&self, r: [f32; 3], n: [f32; 3], len: f32) -> Option<(f32, f32)> {
        let span = |si: usize| {
            let s = &self.strings[si];
            crate::hole::cylinder_span(s.x, s.y, self.hole_radius, r, n, len)
        };
        match self.reachable_p::<P>(r, n, len) {
            Reach::None => None,
            Reach::Nearest(si) => span(si as usize),
            Reach::Four(c) => {
                // Columns do not overlap: the earliest entry of the four.
                let mut best: Option<(f32, f32)> = None;
                for si in self.four_nearest(c) {
                    if let Some(sp) = span(si as usize) {
                        if best.is_none_or(|b| sp.0 < b.0) {
                            best = Some(sp);
                        }
                    }
                }
                best
            }
            Reach::Unknown => {
                let mut best: Option<(f32, f32)> = None;
                self.visit_cells(r, n, len, |si| {
                    if let Some(sp) = span(si as usize) {
                        if best.is_none_or(|b| sp.0 < b.0) {
                            best = Some(sp);
                        }
                    }
                });
                best
            }
        }
    }

    /// Every string listed in the cells of the segment's bounding box (a string may come more
    /// than once, as in `grid_search`).
    fn visit_cells(&self, r: [f32; 3], n: [f32; 3], len: f32, mut f: impl FnMut(u32)) {
        let e = [r[0] + n[0] * len, r[1] + n[1] * len];
        let fx = |x: f32| ((x - self.x0) / self.cell).floor();
        let fy = |y: f32| ((y - self.y0) / self.cell).floor();
        let (ia, ib) = (fx(r[0].min(e[0])), fx(r[0].max(e[0])));
        let (ja, jb) = (fy(r[1].min(e[1])), fy(r[1].max(e[1])));
        if ib < 0.0 || jb < 0.0 || ia >= self.nx as f32 || ja >= self.ny as f32 {
            return;
        }
        let (i0, i1) = (ia.max(0.0) as usize, (ib as usize).min(self.nx - 1));
        let (j0, j1) = (ja.max(0.0) as usize, (jb as usize).min(self.ny - 1));
        for j in j0..=j1 {
            for i in i0..=i1 {
                let c = j * self.nx + i;
                for &si in &self.cell_strings[self.cell_start[c] as usize..self.cell_start[c + 1] as usize] {
                    f(si);
                }
            }
        }
    }

    /// The earliest DOM whose pancake the segment r + t·n, t ∈ [0, len], enters; `skip` excludes
    /// one DOM (the one just hit, while the photon continues from the hit: "continue after
    /// hit"; a flasher photon's own DOM on its first segment). `own`, a flasher's own DOM (PPC's
    /// `ofla`), is not oversized: it is met at its real radius R, with entry distance b − √D
    /// (PPC `pro.cu`: xR = 1 for l == ofla).
    pub fn first_hit(&self, r: [f32; 3], n: [f32; 3], len: f32, skip: Option<u32>, own: Option<u32>) -> Option<Collision> {
        self.first_hit_p::<Plain>(r, n, len, skip, own)
    }

    /// [`Self::first_hit`] with the collision tests' sums rounded as `P` says.
    pub fn first_hit_p<P: Poly>(&self, r: [f32; 3], n: [f32; 3], len: f32, skip: Option<u32>, own: Option<u32>) -> Option<Collision> {
        match self.reachable_p::<P>(r, n, len) {
            Reach::None => None,
            Reach::Nearest(si) => {
                let mut best = None;
                self.check_string::<P>(si as usize, r, n, len, skip, own, &mut best);
                best
            }
            Reach::Four(c) => {
                let mut best = None;
                for si in self.four_nearest(c) {
                    self.check_string::<P>(si as usize, r, n, len, skip, own, &mut best);
                }
                best
            }
            Reach::Unknown => self.grid_search_p::<P>(r, n, len, skip, own),
        }
    }

    /// The four strings nearest to clearance cell `c` (fewer when the detector has fewer), nearest first.
    fn four_nearest(&self, c: u32) -> impl Iterator<Item = u32> + '_ {
        let m = &self.clear_more[c as usize];
        std::iter::once(self.clear_near[c as usize]).chain(m[..3].iter().copied().filter(|&si| si != u32::MAX))
    }

    /// The clearance pre-test: which strings the segment's horizontal reach from `r` can get to,
    /// from the clearances of the cell `r` lies in. Outside the clearance grid (which holds every
    /// string cylinder with the cell grid's 10 m margin) nothing is within reach unless the
    /// segment's horizontal reach gets back to the grid; those few are left to the full search.
    pub fn reachable(&self, r: [f32; 3], n: [f32; 3], len: f32) -> Reach {
        self.reachable_p::<Plain>(r, n, len)
    }

    /// [`Self::reachable`] with the nearest cylinder's test rounded as `P` says.
    pub fn reachable_p<P: Poly>(&self, r: [f32; 3], n: [f32; 3], len: f32) -> Reach {
        let inv = 1.0 / self.clear_cell;
        let fi = ((r[0] - self.x0) * inv).floor();
        let fj = ((r[1] - self.y0) * inv).floor();
        let reach2 = len * len * (n[0] * n[0] + n[1] * n[1]);
        if fi < 0.0 || fj < 0.0 || fi >= self.clear_nx as f32 || fj >= self.clear_ny as f32 {
            return if reach2 < self.grid_gap2(r) { Reach::None } else { Reach::Unknown };
        }
        let c = fj as usize * self.clear_nx + fi as usize;
        let [others, sx, sy, rm] = self.clearance[c];
        if !(others > 0.0 && reach2 < others * others) {
            // The second level: only the four nearest strings within reach?
            let beyond = f32::from_bits(self.clear_more[c][3]);
            return if beyond > 0.0 && reach2 < beyond * beyond {
                Reach::Four(c as u32)
            } else {
                Reach::Unknown
            };
        }
        // The nearest string: does the segment come within its cylinder (plus the margin)?
        if reaches_axis::<P>(sx, sy, rm, r, n, len) {
            Reach::Nearest(self.clear_near[c])
        } else {
            Reach::None
        }
    }

    /// The search through the cells of the segment's bounding box.
    pub fn grid_search(&self, r: [f32; 3], n: [f32; 3], len: f32, skip: Option<u32>, own: Option<u32>) -> Option<Collision> {
        self.grid_search_p::<Plain>(r, n, len, skip, own)
    }

    /// [`Self::grid_search`] with the collision tests rounded as `P` says.
    pub fn grid_search_p<P: Poly>(&self, r: [f32; 3], n: [f32; 3], len: f32, skip: Option<u32>, own: Option<u32>) -> Option<Collision> {
        let e = [r[0] + n[0] * len, r[1] + n[1] * len];
        let fx = |x: f32| ((x - self.x0) / self.cell).floor();
        let fy = |y: f32| ((y - self.y0) / self.cell).floor();
        let (ia, ib) = (fx(r[0].min(e[0])), fx(r[0].max(e[0])));
        let (ja, jb) = (fy(r[1].min(e[1])), fy(r[1].max(e[1])));
        if ib < 0.0 || jb < 0.0 || ia >= self.nx as f32 || ja >= self.ny as f32 {
            return None;
        }
        let (i0, i1) = (ia.max(0.0) as usize, (ib as usize).min(self.nx - 1));
        let (j0, j1) = (ja.max(0.0) as usize, (jb as usize).min(self.ny - 1));
        let mut best: Option<Collision> = None;
        let mut last_string = u32::MAX;
        let multi_cell = i1 > i0 || j1 > j0;
        for j in j0..=j1 {
            for i in i0..=i1 {
                let c = j * self.nx + i;
                for &si in &self.cell_strings[self.cell_start[c] as usize..self.cell_start[c + 1] as usize] {
                    // A string listed in several cells of the box is tested more than once only
                    // when the box spans cells; the result is the same, so only skip repeats.
                    if multi_cell && si == last_string {
                        continue;
                    }
                    last_string = si;
                    self.check_string::<P>(si as usize, r, n, len, skip, own, &mut best);
                }
            }
        }
        best
    }

    /// Index (within string `si`) of its first DOM with z ≥ `zlo`, from the z index.
    fn first_at_or_above(&self, si: usize, zlo: f32) -> usize {
        let s = &self.strings[si];
        let doms = &self.pos[s.first as usize..(s.first + s.count) as usize];
        let [z0, inv_dz] = self.z_grid[si];
        let b = ((zlo - z0) * inv_dz).floor().clamp(0.0, (Z_BINS - 1) as f32);
        let b = if b.is_nan() { 0 } else { b as usize };
        let mut k = self.z_start[si * Z_BINS + b] as usize;
        while k < doms.len() && doms[k][2] < zlo {
            k += 1;
        }
        k
    }

    #[allow(clippy::too_many_arguments)]
    fn check_string<P: Poly>(
        &self,
        si: usize,
        r: [f32; 3],
        n: [f32; 3],
        len: f32,
        skip: Option<u32>,
        own: Option<u32>,
        best: &mut Option<Collision>,
    ) {
        let s = &self.strings[si];
        if !s.reached_by::<P>(r, n, len) {
            return;
        }
        let z1 = P::gmad(n[2], len, r[2]);
        let (zlo, zhi) = (r[2].min(z1) - self.rz_eff, r[2].max(z1) + self.rz_eff);
        let doms = &self.pos[s.first as usize..(s.first + s.count) as usize];
        // The DOMs from the first at or above zlo up to zhi (segments are short: zero to a few).
        let a = self.first_at_or_above(si, zlo);
        let b = a + doms[a..].iter().take_while(|p| p[2] <= zhi).count();
        for k in a..b {
            let gi = s.first as usize + k;
            let id = self.id[gi];
            if skip == Some(id) {
                continue;
            }
            let c = self.pos[gi];
            let d = [c[0] - r[0], c[1] - r[1], c[2] - r[2]];
            if !self.shape.is_empty() {
                let xr = if own == Some(id) { 1.0 } else { self.oversize };
                if let Some((h, impact)) = shaped_entry(self.shape[gi], xr, d, n) {
                    if h >= 0.0 && h <= len && best.is_none_or(|bh| bh.h > h) {
                        *best = Some(Collision { dom: id, h, impact });
                    }
                }
                continue;
            }
            // A flasher's own DOM at its real size, every other one oversized.
            let (radius, xr) = if own == Some(id) {
                (DOM_RADIUS as f32, 1.0)
            } else {
                (self.r_eff, self.oversize)
            };
            let (b_par, disc) = sphere_disc::<P>(d, n, radius);
            if disc < 0.0 {
                continue;
            }
            let sq = disc.sqrt();
            let h = b_par - sq / xr;
            if h < 0.0 || h > len || best.is_some_and(|bh| bh.h <= h) {
                continue;
            }
            // Impact direction: perpendicular offset and −√D along n on the (oversized) sphere.
            let perp = [-d[0] + b_par * n[0], -d[1] + b_par * n[1], -d[2] + b_par * n[2]];
            let imp = crate::scatter::normalize([perp[0] - sq * n[0], perp[1] - sq * n[1], perp[2] - sq * n[2]]);
            *best = Some(Collision { dom: id, h, impact: imp });
        }
    }
}

/// The pancake entry on a shaped DOM (PPC `pro.cu`): `shape` = [R, F], oversize `xr`, `d` = centre −
/// segment start, `n` the direction. In the metric that makes the spheroid a sphere (z scaled by
/// 1/F; the cylinder: z left out), a = |n'|², b = n'·d'/a, D = b² − (|d'|² − (xR·R)²)/a; the oversized
/// surface is entered at b − √D (a cylinder only within |z| < xR·|F|·R of its centre there), the
/// pancake at h = b − √D/xR. Returns h and the entry point on the oversized surface relative to the
/// centre in units of xR·R. The kernel's `shaped_entry` does the same operations in the same order.
#[inline]
#[must_use]
pub fn shaped_entry(shape: [f32; 2], xr: f32, d: [f32; 3], n: [f32; 3]) -> Option<(f32, [f32; 3])> {
    let [radius, f] = shape;
    let ff = if f > 0.0 { 1.0 / (f * f) } else { 0.0 };
    let a = n[0] * n[0] + n[1] * n[1] + ff * (n[2] * n[2]);
    if a <= 0.0 {
        return None; // along a cylinder's axis: its side is never met
    }
    let b = (n[0] * d[0] + n[1] * d[1] + ff * (n[2] * d[2])) / a;
    let c = d[0] * d[0] + d[1] * d[1] + ff * (d[2] * d[2]);
    let rr = xr * radius;
    let disc = b * b - (c - rr * rr) / a;
    if disc < 0.0 {
        return None;
    }
    let sq = disc.sqrt();
    let entry = b - sq;
    if f < 0.0 && (d[2] - n[2] * entry).abs() >= -(xr * f * radius) {
        return None;
    }
    let h = b - sq / xr;
    let inv = 1.0 / rr;
    let impact = [
        (entry * n[0] - d[0]) * inv,
        (entry * n[1] - d[1]) * inv,
        (entry * n[2] - d[2]) * inv,
    ];
    Some((h, impact))
}

/// What the clearance pre-test rules out for a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// No string cylinder is within reach.
    None,
    /// Only this string (index into the strings) can be within reach.
    Nearest(u32),
    /// Only the four strings nearest to this clearance cell can be within reach (`clear_more`).
    Four(u32),
    /// Undecided: the full search runs.
    Unknown,
}

/// Bins of the per-string z index.
pub const Z_BINS: usize = 128;

/// The per-string z index (see `DomIndex::z_grid`): bins over [z_min − 1 m, z_max + 1 m] of each
/// string's DOMs; an entry is the first DOM at or above the bin's lower edge minus 1 m, so a
/// query rounded into the bin above never starts past a DOM it needs.
fn z_index(strings: &[StringCol], pos: &[[f32; 3]]) -> (Vec<[f32; 2]>, Vec<u32>) {
    let mut grid = Vec::with_capacity(strings.len());
    let mut start = Vec::with_capacity(strings.len() * Z_BINS);
    for s in strings {
        let doms = &pos[s.first as usize..(s.first + s.count) as usize];
        let (lo, hi) = doms
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(f64::from(p[2])), b.max(f64::from(p[2]))));
        let (z0, dz) = (lo - 1.0, ((hi - lo + 2.0) / Z_BINS as f64).max(0.1));
        grid.push([z0 as f32, (1.0 / dz) as f32]);
        for b in 0..Z_BINS {
            let edge = z0 + b as f64 * dz - 1.0;
            start.push(doms.partition_point(|p| f64::from(p[2]) < edge) as u32);
        }
    }
    (grid, start)
}

/// Cell size of the clearance grid [m].
pub const CLEAR_CELL: f32 = 5.0;

/// Safety margin of the clearance [m]: covers the f32 rounding of the cylinder test (coordinates
/// of ~1 km carry ~1e-4 m of rounding), so the pre-test never skips a segment the full search
/// would find a hit on. It only makes the pre-test slightly less often decisive.
const CLEAR_MARGIN: f64 = 0.01;

/// Clearances of each cell of a grid over [x0, x0 + width) × [y0, y0 + height): for each string
/// the distance from the cell's rectangle to its axis minus its cylinder radius and the margin;
/// per cell the string with the smallest (the nearest: its index, x, y and radius + margin
/// rounded up) and the second smallest distance (a bound for all others, rounded down), and the
/// second level: the second to fourth nearest strings and the fifth smallest distance (a bound
/// for all beyond the four, rounded down, as f32 bits); in f64 on the host. Ties go to the lower
/// string index.
#[allow(clippy::type_complexity)]
fn clearance_grid(
    strings: &[StringCol],
    x0: f32,
    y0: f32,
    cell: f32,
    width: f32,
    height: f32,
) -> (usize, usize, Vec<[f32; 4]>, Vec<u32>, Vec<[u32; 4]>) {
    let nx = ((width / cell).ceil() as usize).max(1);
    let ny = ((height / cell).ceil() as usize).max(1);
    let c = f64::from(cell);
    let down = |v: f64| {
        let f = v as f32;
        if f64::from(f) > v {
            f.next_down()
        } else {
            f
        }
    };
    let (mut clear, mut near, mut more) = (
        Vec::with_capacity(nx * ny),
        Vec::with_capacity(nx * ny),
        Vec::with_capacity(nx * ny),
    );
    let mut ds: Vec<(f64, u32)> = Vec::with_capacity(strings.len());
    for j in 0..ny {
        let (ya, yb) = (f64::from(y0) + j as f64 * c, f64::from(y0) + (j + 1) as f64 * c);
        for i in 0..nx {
            let (xa, xb) = (f64::from(x0) + i as f64 * c, f64::from(x0) + (i + 1) as f64 * c);
            ds.clear();
            for (si, s) in strings.iter().enumerate() {
                let (sx, sy) = (f64::from(s.x), f64::from(s.y));
                let dx = (xa - sx).max(sx - xb).max(0.0);
                let dy = (ya - sy).max(sy - yb).max(0.0);
                ds.push((dx.hypot(dy) - f64::from(s.r) - CLEAR_MARGIN, si as u32));
            }
            // The five nearest in order ((distance, index): ties to the lower index).
            let order = |a: &(f64, u32), b: &(f64, u32)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
            let k = ds.len().min(5);
            if ds.len() > 5 {
                ds.select_nth_unstable_by(4, order);
            }
            ds[..k].sort_by(order);
            let at = |q: usize| ds.get(q).copied().unwrap_or((f64::INFINITY, u32::MAX));
            // (the nearest's own clearance is tested exactly per point; no strings at all:
            // nothing within reach anywhere.)
            let nearest = at(0).1.min(strings.len().saturating_sub(1) as u32);
            let (sx, sy, sr) = strings.get(nearest as usize).map_or((0.0, 0.0, 0.0), |s| (s.x, s.y, s.r));
            let rm = -down(-(f64::from(sr) + CLEAR_MARGIN));
            clear.push([down(at(1).0), sx, sy, rm]);
            near.push(if strings.is_empty() { 0 } else { nearest });
            more.push([at(1).1, at(2).1, at(3).1, down(at(4).0).to_bits()]);
        }
    }
    (nx, ny, clear, near, more)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Dom;

    fn one_dom(x: f64) -> Geometry {
        Geometry {
            doms: vec![Dom {
                string: 1,
                om: 1,
                pos: [x, 0.0, 0.0],
                rde: 1.0,
                high_qe: false,
                cable_deg: None,
                axis: None,
            }],
            source: "t".into(),
        }
    }

    #[test]
    fn pancake_entry_distance() {
        let idx = DomIndex::new(&one_dom(10.0), 5.0);
        // Head-on from 10 m: oversized sphere radius 0.8255 m, pancake entry at 10 − 0.8255/5.
        let c = idx.first_hit([0.0, 0.0, 0.0], [1.0, 0.0, 0.0], 20.0, None, None).unwrap();
        assert!((c.h - (10.0 - 0.16510)).abs() < 1e-4, "{}", c.h);
        assert!((c.impact[0] + 1.0).abs() < 1e-5);
        // Impact parameter 0.8 m < 0.8255 m still hits; 0.83 m misses.
        assert!(idx.first_hit([0.0, 0.8, 0.0], [1.0, 0.0, 0.0], 20.0, None, None).is_some());
        assert!(idx.first_hit([0.0, 0.83, 0.0], [1.0, 0.0, 0.0], 20.0, None, None).is_none());
        // Segment too short, wrong direction, skipped DOM.
        assert!(idx.first_hit([0.0, 0.0, 0.0], [1.0, 0.0, 0.0], 9.0, None, None).is_none());
        assert!(idx.first_hit([0.0, 0.0, 0.0], [-1.0, 0.0, 0.0], 20.0, None, None).is_none());
        assert!(idx.first_hit([0.0, 0.0, 0.0], [1.0, 0.0, 0.0], 20.0, Some(0), None).is_none());
    }

    /// The shaped entry (PPC's spheroid/cylinder): the nominal sphere [R₀, 1] gives the sphere
    /// search's h and impact; a spheroid (Rr 0.2, Rz 0.3, oversize 5) head-on from 10 m is entered
    /// at 10 − Rz along its axis and 10 − Rr across it (the pancake), at the oversized surface point;
    /// a cylinder (R 0.2, half-height 0.4) is hit from the side within |z| < xR·0.4 of its centre
    /// and never along its axis.
    #[test]
    fn shaped_entry_of_spheroids_and_cylinders() {
        let idx = DomIndex::new(&one_dom(10.0), 5.0);
        for (r, n) in [([0.0, 0.3, 0.1], [1.0, 0.0, 0.0]), ([3.0, -0.2, -5.0], [7.0, 0.3, 5.2])] {
            let n = crate::scatter::normalize(n);
            let c = idx.first_hit(r, n, 20.0, None, None).unwrap();
            let d = [10.0 - r[0], -r[1], -r[2]];
            let (h, imp) = shaped_entry([DOM_RADIUS as f32, 1.0], 5.0, d, n).unwrap();
            assert!((h - c.h).abs() < 1e-5, "{h} vs {}", c.h);
            assert!((0..3).all(|k| (imp[k] - c.impact[k]).abs() < 1e-5), "{imp:?} vs {:?}", c.impact);
        }
        let (h, imp) = shaped_entry([0.2, 1.5], 5.0, [0.0, 0.0, 10.0], [0.0, 0.0, 1.0]).unwrap();
        assert!((h - (10.0 - 0.3)).abs() < 1e-5 && (imp[2] + 1.5).abs() < 1e-5, "{h} {imp:?}");
        let (h, imp) = shaped_entry([0.2, 1.5], 5.0, [10.0, 0.0, 0.0], [1.0, 0.0, 0.0]).unwrap();
        assert!((h - (10.0 - 0.2)).abs() < 1e-5 && (imp[0] + 1.0).abs() < 1e-5, "{h} {imp:?}");
        assert!(shaped_entry([0.2, 1.5], 5.0, [10.0, 0.0, 0.0], [0.0, 1.0, 0.0]).is_none());
        // Cylinder of half-height 0.4 (F = −2), oversize 5: |z| < 2 m at the oversized entry.
        assert!(shaped_entry([0.2, -2.0], 5.0, [10.0, 0.0, 1.9], [1.0, 0.0, 0.0]).is_some());
        assert!(shaped_entry([0.2, -2.0], 5.0, [10.0, 0.0, 2.1], [1.0, 0.0, 0.0]).is_none());
        assert!(shaped_entry([0.2, -2.0], 5.0, [0.0, 0.0, 10.0], [0.0, 0.0, 1.0]).is_none());
        let (h, imp) = shaped_entry([0.2, -2.0], 5.0, [10.0, 0.0, 0.5], [1.0, 0.0, 0.0]).unwrap();
        assert!((h - (10.0 - 0.2)).abs() < 1e-5, "{h}");
        assert!((imp[0] + 1.0).abs() < 1e-5 && (imp[2] + 0.5).abs() < 1e-5, "{imp:?}");
    }

    /// A flasher's own DOM (PPC's `ofla`) is met at its real radius: head-on at 10 − R, an impact
    /// parameter of 0.16 m hits, 0.17 m (inside the oversized 0.8255 m) misses.
    #[test]
    fn own_dom_is_not_oversized() {
        let idx = DomIndex::new(&one_dom(10.0), 5.0);
        let c = idx.first_hit([0.0, 0.0, 0.0], [1.0, 0.0, 0.0], 20.0, None, Some(0)).unwrap();
        assert!((c.h - (10.0 - 0.16510)).abs() < 1e-4, "{}", c.h);
        assert!(idx.first_hit([0.0, 0.16, 0.0], [1.0, 0.0, 0.0], 20.0, None, Some(0)).is_some());
        assert!(idx.first_hit([0.0, 0.17, 0.0], [1.0, 0.0, 0.0], 20.0, None, Some(0)).is_none());
        assert!(idx.first_hit([0.0, 0.17, 0.0], [1.0, 0.0, 0.0], 20.0, None, None).is_some());
    }

    #[test]
    fn earliest_of_two_doms_wins() {
        let mut g = one_dom(10.0);
        g.doms.push(Dom {
            string: 2,
            om: 1,
            pos: [5.0, 0.0, 0.0],
            rde: 1.0,
            high_qe: false,
            cable_deg: None,
            axis: None,
        });
        let idx = DomIndex::new(&g, 1.0);
        let c = idx.first_hit([0.0, 0.0, 0.0], [1.0, 0.0, 0.0], 20.0, None, None).unwrap();
        assert_eq!(c.dom, 1);
    }

    /// The clearance pre-test is sound (a segment it clears stays outside every string cylinder,
    /// one it sends to the nearest string stays outside all others, tested against every string)
    /// and decisive for most segments of the detector volume. Every fifth segment starts within
    /// 10 m of a string axis, so the nearest-string path is exercised too.
    #[test]
    fn clearance_never_skips_a_cylinder() {
        let g = Geometry::icecube_like();
        let idx = DomIndex::new(&g, 5.0);
        let mut rng = warpdrive_core::RandomStream::new(11, 0, 0);
        let (w, h) = (idx.nx as f32 * idx.cell, idx.ny as f32 * idx.cell);
        let (mut cleared, mut nearest, mut reached, total) = (0usize, 0usize, 0usize, 200_000usize);
        let (mut four, mut unknown) = (0usize, 0usize);
        for k in 0..total {
            let r = if k % 5 == 0 {
                let s = &idx.strings[(rng.next_u32() as usize) % idx.strings.len()];
                [
                    s.x + 20.0 * (rng.uniform() - 0.5),
                    s.y + 20.0 * (rng.uniform() - 0.5),
                    1000.0 * rng.uniform() - 500.0,
                ]
            } else if k % 5 == 1 {
                // Around and outside the grid (within 60 m of its edge, or inside it).
                [
                    idx.x0 - 60.0 + (w + 120.0) * rng.uniform(),
                    idx.y0 - 60.0 + (h + 120.0) * rng.uniform(),
                    1000.0 * rng.uniform() - 500.0,
                ]
            } else {
                [
                    idx.x0 + w * rng.uniform(),
                    idx.y0 + h * rng.uniform(),
                    1000.0 * rng.uniform() - 500.0,
                ]
            };
            let n = crate::scatter::normalize([rng.uniform() - 0.5, rng.uniform() - 0.5, rng.uniform() - 0.5]);
            // Long enough for segments from outside to get back into the grid.
            let len = if k % 5 == 1 { 100.0 * rng.uniform() } else { 40.0 * rng.uniform() };
            let touches: Vec<bool> = idx.strings.iter().map(|s| s.reached_by::<Plain>(r, n, len)).collect();
            reached += usize::from(touches.iter().any(|&t| t));
            match idx.reachable(r, n, len) {
                Reach::None => {
                    cleared += 1;
                    assert!(
                        !touches.iter().any(|&t| t),
                        "cleared a segment that reaches a string: r {r:?} n {n:?} len {len}"
                    );
                }
                Reach::Nearest(si) => {
                    nearest += 1;
                    let others = touches.iter().enumerate().any(|(k, &t)| t && k != si as usize);
                    assert!(
                        !others,
                        "a segment reaches a string other than the nearest: r {r:?} n {n:?} len {len}"
                    );
                    // The shortcut's result is the full search's.
                    assert_eq!(idx.first_hit(r, n, len, None, None), idx.grid_search(r, n, len, None, None));
                }
                Reach::Four(c) => {
                    four += 1;
                    let listed: Vec<u32> = idx.four_nearest(c).collect();
                    let others = touches.iter().enumerate().any(|(k, &t)| t && !listed.contains(&(k as u32)));
                    assert!(
                        !others,
                        "a segment reaches a string beyond the four nearest {listed:?}: r {r:?} n {n:?} len {len}"
                    );
                    assert_eq!(idx.first_hit(r, n, len, None, None), idx.grid_search(r, n, len, None, None));
                }
                Reach::Unknown => {
                    // (Counted for points inside the grid: outside, long segments that get back
                    // to it go to the full search by design.)
                    let inside = (0.0..w).contains(&(r[0] - idx.x0)) && (0.0..h).contains(&(r[1] - idx.y0));
                    unknown += usize::from(inside);
                }
            }
        }
        // IceCube strings are 125 m apart: most random segments are far from all of them.
        assert!(reached > 100, "test exercises cylinders: {reached}");
        assert!(cleared > total * 8 / 10, "pre-test decisive for {cleared} of {total}");
        assert!(nearest > 1000, "nearest-string shortcut exercised: {nearest}");
        eprintln!("cleared {cleared}, nearest {nearest}, four nearest {four}, undecided inside the grid {unknown} of {total}");
        assert!(four > 1000, "four-nearest level exercised: {four}");
        assert!(
            4 * unknown < four,
            "the second level decides most of what the first leaves inside the grid: {four} vs {unknown}"
        );
    }

    /// `hole_span` through the clearance levels gives what testing every string's column gives
    /// (the earliest entry): random segments over and around the grid, many of them long enough to
    /// leave the first level undecided (then the four nearest strings, or the cells).
    #[test]
    fn hole_span_equals_every_column_tested() {
        let g = Geometry::icecube_like();
        let idx = DomIndex::build(&g, 5.0, 0.3, None);
        let mut rng = warpdrive_core::RandomStream::new(13, 0, 0);
        let (w, h) = (idx.nx as f32 * idx.cell, idx.ny as f32 * idx.cell);
        let mut found = 0;
        for k in 0..100_000 {
            // Every other segment starts within 2 m of a string axis.
            let r = if k % 2 == 0 {
                let s = &idx.strings[(rng.next_u32() as usize) % idx.strings.len()];
                [s.x + 4.0 * (rng.uniform() - 0.5), s.y + 4.0 * (rng.uniform() - 0.5), 0.0]
            } else {
                [
                    idx.x0 - 60.0 + (w + 120.0) * rng.uniform(),
                    idx.y0 - 60.0 + (h + 120.0) * rng.uniform(),
                    0.0,
                ]
            };
            let n = crate::scatter::normalize([rng.uniform() - 0.5, rng.uniform() - 0.5, rng.uniform() - 0.5]);
            let len = 120.0 * rng.uniform();
            let mut want: Option<(f32, f32)> = None;
            for s in &idx.strings {
                if let Some(sp) = crate::hole::cylinder_span(s.x, s.y, 0.3, r, n, len) {
                    if want.is_none_or(|b| sp.0 < b.0) {
                        want = Some(sp);
                    }
                }
            }
            found += usize::from(want.is_some());
            assert_eq!(idx.hole_span(r, n, len), want, "r {r:?} n {n:?} len {len}");
        }
        assert!(found > 1000, "columns met: {found}");
    }

    /// The z index gives the binary search's answer for any height, on and between DOMs.
    #[test]
    fn z_index_matches_binary_search() {
        let idx = DomIndex::new(&Geometry::icecube_like(), 5.0);
        let mut rng = warpdrive_core::RandomStream::new(12, 0, 0);
        for si in 0..idx.strings.len() {
            let s = &idx.strings[si];
            let doms = &idx.pos[s.first as usize..(s.first + s.count) as usize];
            let mut zs: Vec<f32> = (0..400).map(|_| 1400.0 * rng.uniform() - 700.0).collect();
            zs.extend(doms.iter().flat_map(|p| [p[2], p[2].next_up(), p[2].next_down()]));
            for z in zs {
                assert_eq!(
                    idx.first_at_or_above(si, z),
                    doms.partition_point(|p| p[2] < z),
                    "string {si}, z {z}"
                );
            }
        }
    }

    /// Brute force over all DOMs of the real geometry agrees with the grid search.
    #[test]
    fn grid_search_matches_brute_force() {
        let g = Geometry::icecube_like();
        let idx = DomIndex::new(&g, 5.0);
        let mut rng = warpdrive_core::RandomStream::new(9, 0, 0);
        let mut hits = 0;
        for _ in 0..20_000 {
            let d = &g.doms[(rng.next_u32() as usize) % g.doms.len()];
            let r = [
                d.pos[0] as f32 + 8.0 * (rng.uniform() - 0.5),
                d.pos[1] as f32 + 8.0 * (rng.uniform() - 0.5),
                d.pos[2] as f32 + 8.0 * (rng.uniform() - 0.5),
            ];
            let n = crate::scatter::normalize([rng.uniform() - 0.5, rng.uniform() - 0.5, rng.uniform() - 0.5]);
            let len = if rng.uniform() < 0.8 {
                10.0 * rng.uniform()
            } else {
                10.0 + 40.0 * rng.uniform()
            };
            let fast = idx.first_hit(r, n, len, None, None).map(|c| c.dom);
            let mut brute: Option<(u32, f32)> = None;
            for (i, dd) in g.doms.iter().enumerate() {
                let dv = [dd.pos[0] as f32 - r[0], dd.pos[1] as f32 - r[1], dd.pos[2] as f32 - r[2]];
                let b = dv[0] * n[0] + dv[1] * n[1] + dv[2] * n[2];
                let disc = idx.r_eff * idx.r_eff - (dv[0] * dv[0] + dv[1] * dv[1] + dv[2] * dv[2]) + b * b;
                if disc >= 0.0 {
                    let h = b - disc.sqrt() / 5.0;
                    if (0.0..=len).contains(&h) && brute.is_none_or(|(_, bh)| h < bh) {
                        brute = Some((i as u32, h));
                    }
                }
            }
            assert_eq!(fast, brute.map(|b| b.0));
            hits += usize::from(fast.is_some());
        }
        assert!(hits > 100, "test exercises hits: {hits}");
    }
}
