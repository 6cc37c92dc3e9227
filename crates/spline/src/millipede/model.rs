//! Millipede's forward model (spec §2.1): sources (EM cascades of unit energy), the detector's
//! DOMs and their time bins, and the response matrix
//!   Λ_{(dom,q), j} = Y · ε_DOM · exp(S_abs(r, φ, cos θ)) · [CDF(t_{q+1} − t_j − t_geo) − CDF(t_q − t_j − t_geo)],
//! with S_abs the amplitude table (ln of photo-electrons per emitted photon), Y = 32 582 photons/m
//! × 5.21 m/GeV the EM cascade light yield (spec §1.4, `scaleLightYield`), the timing table's CDF
//! of the delay after the direct time t_geo = r·n_group/c, one timing evaluation per bin edge.

use crate::SplineTable;
use warpdrive_core::progress::Progress;

/// Speed of light in vacuum [m/ns].
pub const C_VACUUM: f64 = 0.299_792_458;
/// Cherenkov photons per metre of EM cascade track length (spec §1.4).
pub const PHOTONS_PER_M: f64 = 32_582.0;
/// EM cascade track length per GeV [m/GeV] (spec §1.4).
pub const M_PER_GEV: f64 = 5.21;

/// One light source: an EM cascade of 1 GeV at `pos` [m] pointing along `dir` at time `time` [ns].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Source {
    pub pos: [f64; 3],
    pub dir: [f64; 3],
    pub time: f64,
}

/// A direction from zenith and azimuth [rad] in IceCube's convention: the direction the particle
/// *comes from*, so it travels along −(sin θ cos φ, sin θ sin φ, cos θ).
pub fn direction(zenith: f64, azimuth: f64) -> [f64; 3] {
    [-zenith.sin() * azimuth.cos(), -zenith.sin() * azimuth.sin(), -zenith.cos()]
}

/// The hypothesis whose energies are unfolded.
#[derive(Clone, Debug, PartialEq)]
pub enum Hypothesis {
    /// One cascade.
    Cascade(Source),
    /// A track from `vertex` along `dir` (time of the vertex `time`), cut into segments of
    /// `spacing` metres over `length`; each segment is a cascade at its centre (Millipede's
    /// "MillipedeHighEnergyMuon" showers along the track).
    Track {
        vertex: [f64; 3],
        dir: [f64; 3],
        time: f64,
        length: f64,
        spacing: f64,
    },
}

impl Hypothesis {
    /// Distance of each source from the vertex along the track [m] (segment centres; 0 for a
    /// cascade).
    pub fn distances(&self) -> Vec<f64> {
        match self {
            Hypothesis::Cascade(_) => vec![0.0],
            Hypothesis::Track { length, spacing, .. } => {
                let n = (length / spacing).round().max(1.0) as usize;
                (0..n).map(|i| (i as f64 + 0.5) * spacing).collect()
            }
        }
    }

    pub fn sources(&self) -> Vec<Source> {
        match self {
            Hypothesis::Cascade(s) => vec![*s],
            Hypothesis::Track { vertex, dir, time, .. } => self
                .distances()
                .into_iter()
                .map(|s| Source {
                    pos: [vertex[0] + s * dir[0], vertex[1] + s * dir[1], vertex[2] + s * dir[2]],
                    dir: *dir,
                    time: time + s / C_VACUUM,
                })
                .collect(),
        }
    }
}

/// Table coordinates of a DOM seen from a source: distance r [m], azimuth φ [deg, 0..180] around
/// the source axis measured from the plane containing the axis and the vertical, and cos θ of the
/// angle between the axis and the source→DOM vector. (The public tables are for one source
/// orientation, zenith 0 azimuth 0; rotating them with the source ignores the ice's layering —
/// see docs/spline.md.)
pub fn table_coordinates(dom: [f64; 3], s: &Source) -> [f64; 3] {
    let v = [dom[0] - s.pos[0], dom[1] - s.pos[1], dom[2] - s.pos[2]];
    let r = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    if r == 0.0 {
        return [0.0, 0.0, 1.0];
    }
    let d = s.dir;
    let along = v[0] * d[0] + v[1] * d[1] + v[2] * d[2];
    // Reference axis e1: the vertical projected perpendicular to d (x if d is vertical).
    let mut e1 = [-d[2] * d[0], -d[2] * d[1], 1.0 - d[2] * d[2]];
    let n1 = (e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2]).sqrt();
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
    let a = v[0] * e1[0] + v[1] * e1[1] + v[2] * e1[2];
    let b = v[0] * e2[0] + v[1] * e2[1] + v[2] * e2[2];
    let phi = b.atan2(a).abs().to_degrees();
    [r, phi, (along / r).clamp(-1.0, 1.0)]
}

/// An axis of a table beyond the source frame's (r, φ, cos θ and, for timing, the delay):
/// the source's zenith or depth, as `warpdrive photon tabulate` stacks several sources in
/// photonics' order ([r, φ, cos θ, (t), θ_src, depth]) and `spline fit` names them in the
/// table's `AXISd` keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceAxis {
    /// Zenith of the source [deg], IceCube's convention (where the particle comes from).
    Zenith = 0,
    /// Depth of the source below the surface [m]: `warpdrive_photon::ice::ZOFF` − z.
    Depth = 1,
}

impl SourceAxis {
    /// The name of the axis (the tabulator's column, the table's `AXISd`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            SourceAxis::Zenith => "zenith",
            SourceAxis::Depth => "depth",
        }
    }
}

impl std::str::FromStr for SourceAxis {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "zenith" => Ok(SourceAxis::Zenith),
            "depth" => Ok(SourceAxis::Depth),
            t => Err(format!("'{t}': a source axis is zenith or depth")),
        }
    }
}

/// A source's zenith [deg] and depth below the surface [m] (the coordinates of a table's
/// source axes).
#[must_use]
pub fn source_zenith_depth(s: &Source) -> [f64; 2] {
    [
        (-s.dir[2]).clamp(-1.0, 1.0).acos().to_degrees(),
        warpdrive_photon::ice::ZOFF - s.pos[2],
    ]
}

/// The frame axes of a cascade table, as the tabulator names its columns.
pub const AMPLITUDE_FRAME: [&str; 3] = ["r", "azimuth", "cos_theta"];
pub const TIMING_FRAME: [&str; 4] = ["r", "azimuth", "cos_theta", "delay"];

/// The source axes of a table whose first axes are the cascade frame `frame`: from the table's
/// `AXISd` keys (written by `spline fit` from the tabulator's columns) and/or `explicit` (the
/// user's `source_axes`, in the order the table holds them); neither: none (a table of
/// `frame.len()` dimensions, e.g. the public single-depth pair). The message says what is
/// wrong; the caller names the file.
pub fn source_axes_of(t: &SplineTable, frame: &[&str], explicit: Option<&[SourceAxis]>) -> Result<Vec<SourceAxis>, String> {
    let nd = t.ndim();
    let named: Option<Vec<String>> = t.aux_value("AXIS0").map(|_| {
        (0..nd)
            .map(|d| {
                t.aux_value(&format!("AXIS{d}"))
                    .map(|v| v.text().trim().to_string())
                    .unwrap_or_default()
            })
            .collect()
    });
    // Names that follow the tabulator's frame give the source axes; other names (a table fitted
    // from a histogram with columns of its own naming) say nothing about them, except that a
    // muon-segment table (ρ, φ, Δz) is not a cascade table.
    let follows_frame = |names: &[String]| names.len() >= frame.len() && names[..frame.len()] == *frame;
    let from_names = match &named {
        Some(names) if names.first().map(String::as_str) == Some("rho") => {
            return Err(format!(
                "axes {} (keys AXIS0…AXIS{}): a muon-segment table; Millipede's sources here are cascades ({})",
                names.join(", "),
                nd - 1,
                frame.join(", ")
            ));
        }
        Some(names) if follows_frame(names) => {
            let mut axes = Vec::new();
            for (d, n) in names.iter().enumerate().skip(frame.len()) {
                let a: SourceAxis = n.parse().map_err(|m: String| format!("key AXIS{d} = {m}"))?;
                if axes.contains(&a) {
                    return Err(format!("key AXIS{d}: axis '{n}' appears twice"));
                }
                axes.push(a);
            }
            Some(axes)
        }
        _ => None,
    };
    let axes = match (from_names, explicit) {
        (Some(a), Some(e)) if a != e => {
            return Err(format!(
                "its AXISd keys name the source axes [{}], the source axes given are [{}]",
                a.iter().map(|x| x.name()).collect::<Vec<_>>().join(", "),
                e.iter().map(|x| x.name()).collect::<Vec<_>>().join(", ")
            ))
        }
        (Some(a), _) => a,
        (None, Some(e)) => e.to_vec(),
        (None, None) => Vec::new(),
    };
    if nd != frame.len() + axes.len() {
        let hint = match (&named, explicit) {
            (None, None) => " (no AXISd keys name the extra axes: name them with the source axes option, e.g. zenith,depth)".to_string(),
            (Some(names), None) if !follows_frame(names) => format!(
                " (its AXISd keys, {}, do not start with {}: name the extra axes with the source axes option)",
                names.join(", "),
                frame.join(", ")
            ),
            _ => String::new(),
        };
        return Err(format!(
            "a {nd}-D table where {} dimensions ({}{}) are needed{hint}",
            frame.len() + axes.len(),
            frame.join(", "),
            axes.iter().map(|a| format!(", {}", a.name())).collect::<String>()
        ));
    }
    Ok(axes)
}

/// A source's coordinates on the tables' source axes, each clamped into its table's extents
/// (a table holds no light for a depth outside its range: the nearest tabulated depth is used,
/// and the run says how many sources were moved).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SourcePoint {
    amplitude: [f64; 2],
    timing: [f64; 2],
}

impl SourcePoint {
    /// The values on the amplitude and on the timing table's source axes (in their axes' order;
    /// unused entries 0), as the GPU response kernel reads them.
    #[must_use]
    pub fn values(&self) -> ([f64; 2], [f64; 2]) {
        (self.amplitude, self.timing)
    }
}

/// The photon tables and constants of the forward model.
#[derive(Clone, Debug)]
pub struct Model {
    pub amplitude: SplineTable,
    /// Cumulative delay-time table; `None` = amplitude-only fits (one bin per DOM).
    pub timing: Option<SplineTable>,
    /// The tables' axes after the frame's (none for the public single-depth tables).
    pub amplitude_axes: Vec<SourceAxis>,
    pub timing_axes: Vec<SourceAxis>,
    /// Group refractive index for the direct time (the timing table's NGROUP, else 1.3195).
    pub n_group: f64,
    /// Photo-electrons per GeV per unit of exp(S_abs): photons/m × m/GeV × DOM efficiency.
    pub yield_per_gev: f64,
}

impl Model {
    /// Model of a 3-D amplitude and 4-D timing table (no source axes) with the default light
    /// yield and DOM efficiency 0.99 (Millipede's `DOMEfficiency`).
    pub fn new(amplitude: SplineTable, timing: Option<SplineTable>) -> Result<Self, String> {
        Self::with_axes(amplitude, timing, Vec::new(), Vec::new())
    }

    /// Model of tables with source axes after their frame's (see [`source_axes_of`]): the
    /// amplitude [r, φ, cos θ, axes…], the timing [r, φ, cos θ, t, axes…].
    pub fn with_axes(
        amplitude: SplineTable,
        timing: Option<SplineTable>,
        amplitude_axes: Vec<SourceAxis>,
        timing_axes: Vec<SourceAxis>,
    ) -> Result<Self, String> {
        if amplitude.ndim() != 3 + amplitude_axes.len() {
            return Err(format!(
                "the amplitude table has {} dimensions; expected {} (r, φ, cos θ and {} source axes)",
                amplitude.ndim(),
                3 + amplitude_axes.len(),
                amplitude_axes.len()
            ));
        }
        if let Some(t) = &timing {
            if t.ndim() != 4 + timing_axes.len() {
                return Err(format!(
                    "the timing table has {} dimensions; expected {} (r, φ, cos θ, t and {} source axes)",
                    t.ndim(),
                    4 + timing_axes.len(),
                    timing_axes.len()
                ));
            }
        }
        let n_group = timing
            .as_ref()
            .and_then(|t| t.aux_f64("NGROUP"))
            .or_else(|| amplitude.aux_f64("NGROUP"))
            .unwrap_or(1.3195);
        Ok(Self {
            amplitude,
            timing,
            amplitude_axes,
            timing_axes,
            n_group,
            yield_per_gev: PHOTONS_PER_M * M_PER_GEV * 0.99,
        })
    }

    /// Whether a table is indexed by source zenith or depth.
    #[must_use]
    pub fn has_source_axes(&self) -> bool {
        !self.amplitude_axes.is_empty() || !self.timing_axes.is_empty()
    }

    /// The source's coordinates on the tables' source axes, clamped into their extents.
    #[must_use]
    pub fn locate(&self, s: &Source) -> SourcePoint {
        let zd = source_zenith_depth(s);
        let place = |t: &SplineTable, frame: usize, axes: &[SourceAxis]| {
            let mut out = [0.0; 2];
            for (i, a) in axes.iter().enumerate() {
                let e = t.extents[frame + i];
                out[i] = zd[*a as usize].clamp(e[0], e[1]);
            }
            out
        };
        SourcePoint {
            amplitude: place(&self.amplitude, 3, &self.amplitude_axes),
            timing: self.timing.as_ref().map_or([0.0; 2], |t| place(t, 4, &self.timing_axes)),
        }
    }

    /// Whether a source lies outside a table's range of source zenith or depth (it is then
    /// evaluated at the nearest edge: [`Model::locate`]).
    #[must_use]
    pub fn outside_source_range(&self, s: &Source) -> bool {
        let zd = source_zenith_depth(s);
        let out = |t: &SplineTable, frame: usize, axes: &[SourceAxis]| {
            axes.iter().enumerate().any(|(i, a)| {
                let e = t.extents[frame + i];
                let v = zd[*a as usize];
                v < e[0] || v > e[1]
            })
        };
        out(&self.amplitude, 3, &self.amplitude_axes) || self.timing.as_ref().is_some_and(|t| out(t, 4, &self.timing_axes))
    }

    /// Mean photo-electrons per GeV at a DOM from a source (0 outside the table's extents);
    /// `at` places the source on the table's source axes ([`Model::locate`]).
    pub fn amplitude(&self, x: &[f64; 3], at: &SourcePoint) -> f64 {
        let mut p = [0.0; 5];
        p[..3].copy_from_slice(x);
        let n = 3 + self.amplitude_axes.len();
        p[3..n].copy_from_slice(&at.amplitude[..n - 3]);
        if !inside(&self.amplitude, &p[..n]) {
            return 0.0;
        }
        self.yield_per_gev * self.amplitude.evaluate(&p[..n]).exp()
    }

    /// Probability that a photon's delay after the direct time is ≤ `delay` [ns]: 0 before the
    /// table's time range, 1 after it, the table value clamped to [0, 1] inside. Without a
    /// timing table every photon arrives at the direct time: a step from 0 to 1 at delay 0 (so
    /// an amplitude-only event has its light in the window, not only noise).
    pub fn cdf(&self, x: &[f64; 3], at: &SourcePoint, delay: f64) -> f64 {
        let Some(t) = &self.timing else {
            return if delay >= 0.0 { 1.0 } else { 0.0 };
        };
        let e = t.extents[3];
        if delay < e[0] {
            return 0.0;
        }
        if delay >= e[1] {
            return 1.0;
        }
        let mut p = [x[0], x[1], x[2], delay, 0.0, 0.0];
        let n = 4 + self.timing_axes.len();
        p[4..n].copy_from_slice(&at.timing[..n - 4]);
        t.evaluate(&p[..n]).clamp(0.0, 1.0)
    }

    /// Direct propagation time over r metres [ns].
    pub fn t_geo(&self, r: f64) -> f64 {
        r * self.n_group / C_VACUUM
    }
}

/// Whether a point lies inside a table's extents (the region where the fit is meant to hold).
pub fn inside(t: &SplineTable, x: &[f64]) -> bool {
    x.iter().zip(&t.extents).all(|(v, e)| *v >= e[0] && *v <= e[1])
}

/// The data's binning: rows (DOM, time bin) grouped by DOM, consecutive bins sharing edges.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bins {
    /// Per binned DOM: its position, first row and number of rows; rows of a DOM are
    /// consecutive and its edges are `edges[first_edge .. first_edge + rows + 1]`.
    pub doms: Vec<DomBins>,
    pub edges: Vec<f64>,
    /// Per row: charge (PE) and expected noise (PE).
    pub charge: Vec<f64>,
    pub noise: Vec<f64>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DomBins {
    pub dom: usize,
    pub pos: [f64; 3],
    /// Light scale of this DOM (relative efficiency).
    pub scale: f64,
    pub first_row: usize,
    pub rows: usize,
    pub first_edge: usize,
}

impl Bins {
    pub fn rows(&self) -> usize {
        self.charge.len()
    }
}

/// Dense response matrix, row-major (rows × sources).
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    pub rows: usize,
    pub cols: usize,
    pub values: Vec<f64>,
}

impl Response {
    pub fn at(&self, row: usize, col: usize) -> f64 {
        self.values[row * self.cols + col]
    }

    pub fn row(&self, row: usize) -> &[f64] {
        &self.values[row * self.cols..(row + 1) * self.cols]
    }
}

/// Λ for one DOM and one source: its rows' values (written into `out`, one per row).
pub fn dom_response(model: &Model, d: &DomBins, edges: &[f64], s: &Source, out: &mut [f64]) {
    let x = table_coordinates(d.pos, s);
    let at = model.locate(s);
    let amp = model.amplitude(&x, &at) * d.scale;
    if amp == 0.0 {
        out.iter_mut().for_each(|o| *o = 0.0);
        return;
    }
    if model.timing.is_none() {
        out.iter_mut().for_each(|o| *o = amp);
        return;
    }
    let t0 = s.time + model.t_geo(x[0]);
    let mut prev = model.cdf(&x, &at, edges[0] - t0);
    for (q, o) in out.iter_mut().enumerate() {
        let next = model.cdf(&x, &at, edges[q + 1] - t0);
        *o = amp * (next - prev).max(0.0);
        prev = next;
    }
}

/// Build Λ on the CPU (all cores; wrap in a one-thread rayon pool to measure one core).
pub fn response(model: &Model, bins: &Bins, sources: &[Source]) -> Response {
    response_with(model, bins, sources, &Progress::hidden())
}

/// [`response`] counting DOMs done on `progress`; once it says stop the remaining DOMs are
/// skipped (their rows stay 0: the caller's run is cancelled, the matrix never used).
pub fn response_with(model: &Model, bins: &Bins, sources: &[Source], progress: &Progress) -> Response {
    use rayon::prelude::*;
    let cols = sources.len();
    let mut values = vec![0.0; bins.rows() * cols];
    // Each DOM owns a contiguous block of rows: split the matrix by DOM.
    let mut blocks: Vec<(&DomBins, &mut [f64])> = Vec::with_capacity(bins.doms.len());
    let mut rest: &mut [f64] = &mut values;
    for d in &bins.doms {
        let (head, tail) = rest.split_at_mut(d.rows * cols);
        blocks.push((d, head));
        rest = tail;
    }
    blocks.into_par_iter().with_min_len(16).for_each(|(d, block)| {
        if progress.should_stop() {
            return;
        }
        let edges = &bins.edges[d.first_edge..d.first_edge + d.rows + 1];
        let mut col = vec![0.0; d.rows];
        for (j, s) in sources.iter().enumerate() {
            // A DOM of a long track may take a while: poll the stop request along it too.
            if j % 256 == 255 && progress.should_stop() {
                return;
            }
            dom_response(model, d, edges, s, &mut col);
            for (q, v) in col.iter().enumerate() {
                block[q * cols + j] = *v;
            }
        }
        progress.add(1);
    });
    Response {
        rows: bins.rows(),
        cols,
        values,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinates_of_simple_geometries() {
        let s = Source {
            pos: [0.0; 3],
            dir: [0.0, 0.0, -1.0],
            time: 0.0,
        };
        let x = table_coordinates([0.0, 0.0, -10.0], &s);
        assert_eq!(x, [10.0, 0.0, 1.0]);
        let x = table_coordinates([3.0, 4.0, 0.0], &s);
        assert!((x[0] - 5.0).abs() < 1e-12 && x[2].abs() < 1e-12);
        assert!((x[1] - 53.130_102_354_156).abs() < 1e-9, "{x:?}");
        // A horizontal source: φ is measured from the vertical plane.
        let h = Source { dir: [1.0, 0.0, 0.0], ..s };
        let up = table_coordinates([0.0, 0.0, 5.0], &h);
        assert!(up[1].abs() < 1e-12 && up[2].abs() < 1e-12);
        let side = table_coordinates([0.0, 5.0, 0.0], &h);
        assert!((side[1] - 90.0).abs() < 1e-12);
    }

    #[test]
    fn track_segments_are_centred() {
        let h = Hypothesis::Track {
            vertex: [0.0; 3],
            dir: [1.0, 0.0, 0.0],
            time: 10.0,
            length: 30.0,
            spacing: 10.0,
        };
        let s = h.sources();
        assert_eq!(s.len(), 3);
        assert_eq!(s[1].pos, [15.0, 0.0, 0.0]);
        assert!((s[1].time - (10.0 + 15.0 / C_VACUUM)).abs() < 1e-12);
    }

    /// A table over (r, φ, cos θ, zenith, depth), constant in the frame's axes and linear in
    /// zenith and depth between the corner values `c[zenith][depth]`.
    fn depth_table(c: [[f32; 2]; 2], named: bool) -> SplineTable {
        let knots = vec![
            vec![0.0, 300.0],
            vec![0.0, 180.0],
            vec![-1.0, 1.0],
            vec![0.0, 0.0, 90.0, 90.0],
            vec![1500.0, 1500.0, 2300.0, 2300.0],
        ];
        let coefs = vec![c[0][0], c[0][1], c[1][0], c[1][1]];
        let mut t = SplineTable::new(vec![0, 0, 0, 1, 1], knots, vec![1, 1, 1, 2, 2], coefs).unwrap();
        if named {
            for (d, n) in ["r", "azimuth", "cos_theta", "zenith", "depth"].iter().enumerate() {
                t.aux.push((format!("AXIS{d}"), crate::fits::Value::Str((*n).into())));
            }
        }
        t
    }

    #[test]
    fn a_table_with_source_axes_is_evaluated_at_each_source_s_zenith_and_depth() {
        let c = [[-10.0, -14.0], [-11.0, -17.0]];
        let t = depth_table(c, true);
        let axes = source_axes_of(&t, &AMPLITUDE_FRAME, None).unwrap();
        assert_eq!(axes, [SourceAxis::Zenith, SourceAxis::Depth]);
        let m = Model::with_axes(t, None, axes, Vec::new()).unwrap();
        assert!(m.has_source_axes());
        let at = |zenith_deg: f64, depth: f64| Source {
            pos: [10.0, -5.0, warpdrive_photon::ice::ZOFF - depth],
            dir: direction(zenith_deg.to_radians(), 0.3),
            time: 0.0,
        };
        // A DOM 50 m from the source, off its axis.
        let amp = |s: &Source| {
            let dom = [s.pos[0] + 30.0, s.pos[1], s.pos[2] - 40.0];
            let x = table_coordinates(dom, s);
            assert!((x[0] - 50.0).abs() < 1e-9);
            m.amplitude(&x, &m.locate(s)) / m.yield_per_gev
        };
        let close = |a: f64, b: f64| (a / b - 1.0).abs() < 1e-12;
        // The two depths (and zeniths) give their own values: the corners of the table.
        assert!(close(amp(&at(0.0, 1500.0)), (-10.0f64).exp()));
        assert!(close(amp(&at(0.0, 2300.0)), (-14.0f64).exp()));
        assert!(close(amp(&at(90.0, 1500.0)), (-11.0f64).exp()));
        assert!(close(amp(&at(90.0, 2300.0)), (-17.0f64).exp()));
        // Between them, the (linear) spline.
        assert!(close(amp(&at(45.0, 1900.0)), (-13.0f64).exp()));
        // Outside the depth range: flagged, and evaluated at the nearest edge.
        assert!(!m.outside_source_range(&at(0.0, 2000.0)));
        assert!(m.outside_source_range(&at(0.0, 2400.0)));
        assert!(close(amp(&at(0.0, 2400.0)), (-14.0f64).exp()));
        // The public single-depth model ignores depth: the same value at both depths.
        let flat = SplineTable::new(
            vec![0, 0, 0],
            vec![vec![0.0, 300.0], vec![0.0, 180.0], vec![-1.0, 1.0]],
            vec![1, 1, 1],
            vec![-12.0],
        )
        .unwrap();
        let m3 = Model::new(flat, None).unwrap();
        let s1 = at(0.0, 1500.0);
        let s2 = at(0.0, 2300.0);
        let x = [50.0, 30.0, 0.2];
        assert_eq!(m3.amplitude(&x, &m3.locate(&s1)), m3.amplitude(&x, &m3.locate(&s2)));
    }

    #[test]
    fn source_axes_come_from_the_header_or_are_named() {
        let c = [[-10.0, -14.0], [-11.0, -17.0]];
        // Unnamed 5-D table: refused without the axes, taken with them.
        let t = depth_table(c, false);
        let e = source_axes_of(&t, &AMPLITUDE_FRAME, None).unwrap_err();
        assert!(
            e.contains("a 5-D table where 3 dimensions (r, azimuth, cos_theta) are needed"),
            "{e}"
        );
        assert!(e.contains("no AXISd keys"), "{e}");
        let given = [SourceAxis::Zenith, SourceAxis::Depth];
        assert_eq!(source_axes_of(&t, &AMPLITUDE_FRAME, Some(&given)).unwrap(), given);
        // Named: a contradicting list is refused, as is a wrong count.
        let t = depth_table(c, true);
        let e = source_axes_of(&t, &AMPLITUDE_FRAME, Some(&[SourceAxis::Depth, SourceAxis::Zenith])).unwrap_err();
        assert!(
            e.contains("name the source axes [zenith, depth], the source axes given are [depth, zenith]"),
            "{e}"
        );
        let e = source_axes_of(&t, &TIMING_FRAME, None).unwrap_err();
        assert!(
            e.contains("a 5-D table where 4 dimensions (r, azimuth, cos_theta, delay) are needed"),
            "{e}"
        );
        assert!(e.contains("do not start with r, azimuth, cos_theta, delay"), "{e}");
        // A 3-D table fitted from columns of other names is still a 3-D amplitude table.
        let mut other = SplineTable::new(
            vec![0, 0, 0],
            vec![vec![0.0, 300.0], vec![0.0, 180.0], vec![-1.0, 1.0]],
            vec![1, 1, 1],
            vec![-12.0],
        )
        .unwrap();
        for (d, n) in ["dist", "azi", "cosz"].iter().enumerate() {
            other.aux.push((format!("AXIS{d}"), crate::fits::Value::Str((*n).into())));
        }
        assert_eq!(source_axes_of(&other, &AMPLITUDE_FRAME, None).unwrap(), []);
        // A muon-segment table is named as such.
        let mut m = depth_table(c, false);
        for (d, n) in ["rho", "azimuth", "dz", "zenith", "depth"].iter().enumerate() {
            m.aux.push((format!("AXIS{d}"), crate::fits::Value::Str((*n).into())));
        }
        let e = source_axes_of(&m, &AMPLITUDE_FRAME, None).unwrap_err();
        assert!(e.contains("muon-segment"), "{e}");
        assert!("height".parse::<SourceAxis>().is_err());
    }
}
