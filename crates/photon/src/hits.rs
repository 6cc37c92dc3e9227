//! Hits after the CPU-side acceptance (spec §2.4, §3.4): relative efficiency and wavelength
//! (`rde/rde_max`, or per DOM type `share_t(slice)·rde/rde_max,t`), angular sensitivity (`mas·u < Σ sᵢxⁱ`), and their outputs: a Parquet
//! table and PPC's `HIT` lines.

use std::path::Path;
use warpdrive_core::table::{Column, Table, TableError};
use warpdrive_core::RandomStream;

use crate::detector::Detector;
use crate::propagate::RawHit;
use crate::source::{tags, Source};

/// A detected photon.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit {
    pub event: i32,
    /// Source index within the event, global source ordinal and photon id (trace to the source).
    pub source: u32,
    pub source_ordinal: u32,
    pub photon: u64,
    pub string: i32,
    pub om: i32,
    /// Arrival time [ns] and wavelength [nm].
    pub time: f32,
    pub wavelength: f32,
    /// Photon direction at impact and direction from the DOM centre to the impact point.
    pub dir: [f32; 3],
    pub impact: [f32; 3],
}

/// (θ, φ) of a unit vector [rad].
#[must_use]
pub fn angles(v: [f32; 3]) -> (f32, f32) {
    (v[2].clamp(-1.0, 1.0).acos(), v[1].atan2(v[0]))
}

/// Apply the acceptance to the raw hits. Each hit draws from its own stream (photon id, hit
/// ordinal), so the result is independent of threading.
pub fn accept(det: &Detector, raw: &[RawHit], sources: &[Source], seed: u64) -> Vec<Hit> {
    let mut out = Vec::with_capacity(raw.len() * 3 / 4);
    for h in raw {
        let mut rng = RandomStream::new(seed, tags::ACCEPT | (h.seq << 4), h.photon);
        let dom = &det.geometry.doms[h.dom as usize];
        let wl = det.medium.slices[h.slice as usize].wavelength;
        let p_eff = match &det.dom_types {
            Some(t) => t.keep(dom.high_qe, dom.rde, h.slice as usize),
            None => dom.rde / det.rde_max,
        };
        let (u1, u2) = (f64::from(rng.uniform()), f64::from(rng.uniform()));
        if u1 > p_eff {
            continue;
        }
        // DOM axis (0, 0, 1): the PMT looks down, so upgoing photons hit head-on (x = +1).
        let ok = if det.angular.surface_mode() {
            f64::from(h.impact[2]) > det.angular.coeffs[0]
        } else {
            det.angular.mas * u2 < det.angular.acceptance(f64::from(h.dir[2]))
        };
        if !ok {
            continue;
        }
        let s = &sources[h.source as usize];
        out.push(Hit {
            event: s.event,
            source: s.index,
            source_ordinal: h.source,
            photon: h.photon,
            string: dom.string,
            om: dom.om,
            time: h.time,
            wavelength: wl,
            dir: h.dir,
            impact: h.impact,
        });
    }
    out
}

/// PPC's output line: `HIT str om time wavelength pθ pφ dθ dφ` (printf `%f`).
#[must_use]
pub fn hit_line(h: &Hit) -> String {
    let (pt, pp) = angles(h.dir);
    let (dt, dp) = angles(h.impact);
    format!(
        "HIT {} {} {:.6} {:.6} {:.6} {:.6} {:.6} {:.6}",
        h.string, h.om, h.time, h.wavelength, pt, pp, dt, dp
    )
}

/// The hits as a table; schema documented in docs/photon.md.
pub fn hits_table(hits: &[Hit], metadata: &[(String, String)]) -> Table {
    let mut t = Table::default();
    let col_i32 = |f: &dyn Fn(&Hit) -> i32| Column::I32(hits.iter().map(f).collect());
    let col_f32 = |f: &dyn Fn(&Hit) -> f32| Column::F32(hits.iter().map(f).collect());
    t.push("event", col_i32(&|h| h.event));
    t.push("string", col_i32(&|h| h.string));
    t.push("om", col_i32(&|h| h.om));
    t.push("time_ns", col_f32(&|h| h.time));
    t.push("wavelength_nm", col_f32(&|h| h.wavelength));
    t.push("photon_theta", col_f32(&|h| angles(h.dir).0));
    t.push("photon_phi", col_f32(&|h| angles(h.dir).1));
    t.push("impact_theta", col_f32(&|h| angles(h.impact).0));
    t.push("impact_phi", col_f32(&|h| angles(h.impact).1));
    t.push("source", Column::I32(hits.iter().map(|h| h.source as i32).collect()));
    t.push(
        "source_ordinal",
        Column::I32(hits.iter().map(|h| h.source_ordinal as i32).collect()),
    );
    t.push("photon_id", Column::I64(hits.iter().map(|h| h.photon as i64).collect()));
    t.metadata = metadata.to_vec();
    t
}

pub fn write_parquet(hits: &[Hit], path: &Path, metadata: &[(String, String)]) -> Result<(), TableError> {
    hits_table(hits, metadata).write_parquet(path)
}
