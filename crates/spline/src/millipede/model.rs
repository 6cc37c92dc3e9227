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

/// The photon tables and constants of the forward model.
#[derive(Clone, Debug)]
pub struct Model {
    pub amplitude: SplineTable,
    /// Cumulative delay-time table; `None` = amplitude-only fits (one bin per DOM).
    pub timing: Option<SplineTable>,
    /// Group refractive index for the direct time (the timing table's NGROUP, else 1.3195).
    pub n_group: f64,
    /// Photo-electrons per GeV per unit of exp(S_abs): photons/m × m/GeV × DOM efficiency.
    pub yield_per_gev: f64,
}

impl Model {
    /// Model with the default light yield and DOM efficiency 0.99 (Millipede's `DOMEfficiency`).
    pub fn new(amplitude: SplineTable, timing: Option<SplineTable>) -> Result<Self, String> {
        if amplitude.ndim() != 3 {
            return Err(format!(
                "the amplitude table has {} dimensions; expected 3 (r, φ, cos θ)",
                amplitude.ndim()
            ));
        }
        if let Some(t) = &timing {
            if t.ndim() != 4 {
                return Err(format!("the timing table has {} dimensions; expected 4 (r, φ, cos θ, t)", t.ndim()));
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
            n_group,
            yield_per_gev: PHOTONS_PER_M * M_PER_GEV * 0.99,
        })
    }

    /// Mean photo-electrons per GeV at a DOM from a source (0 outside the table's extents).
    pub fn amplitude(&self, x: &[f64; 3]) -> f64 {
        if !inside(&self.amplitude, x) {
            return 0.0;
        }
        self.yield_per_gev * self.amplitude.evaluate(x).exp()
    }

    /// Probability that a photon's delay after the direct time is ≤ `delay` [ns]: 0 before the
    /// table's time range, 1 after it, the table value clamped to [0, 1] inside. Without a
    /// timing table every photon arrives at the direct time: a step from 0 to 1 at delay 0 (so
    /// an amplitude-only event has its light in the window, not only noise).
    pub fn cdf(&self, x: &[f64; 3], delay: f64) -> f64 {
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
        t.evaluate(&[x[0], x[1], x[2], delay]).clamp(0.0, 1.0)
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
    let amp = model.amplitude(&x) * d.scale;
    if amp == 0.0 {
        out.iter_mut().for_each(|o| *o = 0.0);
        return;
    }
    if model.timing.is_none() {
        out.iter_mut().for_each(|o| *o = amp);
        return;
    }
    let t0 = s.time + model.t_geo(x[0]);
    let mut prev = model.cdf(&x, edges[0] - t0);
    for (q, o) in out.iter_mut().enumerate() {
        let next = model.cdf(&x, edges[q + 1] - t0);
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
}
