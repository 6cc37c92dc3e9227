//! Hits after the CPU-side acceptance (spec §2.4, §3.4; cable shadow photon-ppc-phase2.md §3): relative efficiency and wavelength
//! (per DOM type `share_t(slice)·rde/rde_max,t`, `crate::envelope`), angular sensitivity (`mas·u < Σ sᵢxⁱ`), and their outputs: a Parquet
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
    /// PMT index within a multi-PMT module (om.conf order); 0 for single-PMT DOMs.
    pub pmt: i32,
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

/// Radius of the main cable [m] (PPC f2k.cxx; photon-ppc-phase2.md §3).
pub const CABLE_RADIUS: f32 = 0.023;

/// Does the module's cable shadow this hit? The cable is a vertical cylinder of radius 0.023 m
/// whose axis runs at R + 0.023 m from the module centre at azimuth `phi_deg` (dx.dat), R the
/// module's (equatorial) radius `r` (the DOM's 0.1651 m). The hit is lost if the photon's path
/// before the impact point R·`impact` (in the horizontal plane; `impact` in units of the oversized
/// radius, as the collision gives it) crosses the cylinder: with d = impact point − cable axis, the
/// larger root h of |d − h·n|² = rc² is positive. As PPC's f2k.cxx, in f32.
#[must_use]
pub fn cable_shadows(r: f32, phi_deg: f64, dir: [f32; 3], impact: [f32; 3]) -> bool {
    let dc = r + CABLE_RADIUS;
    let phi = (phi_deg as f32).to_radians();
    let drx = r * impact[0] - dc * phi.cos();
    let dry = r * impact[1] - dc * phi.sin();
    let a = dir[0] * dir[0] + dir[1] * dir[1];
    if a <= 0.0 {
        return false;
    }
    let b = -2.0 * (dir[0] * drx + dir[1] * dry);
    let c = drx * drx + dry * dry - CABLE_RADIUS * CABLE_RADIUS;
    let disc = b * b - 4.0 * a * c;
    disc >= 0.0 && (-b + disc.sqrt()) / (2.0 * a) > 0.0
}

/// Apply the acceptance to the raw hits. Each hit draws from its own stream (photon id, hit
/// ordinal), so the result is independent of threading.
pub fn accept(det: &Detector, raw: &[RawHit], sources: &[Source], seed: u64) -> Vec<Hit> {
    use rayon::prelude::*;
    // Chunks in parallel, concatenated in order: the same hits in the same order for any pool.
    let parts: Vec<Vec<Hit>> = raw.par_chunks(1 << 16).map(|c| accept_chunk(det, c, sources, seed)).collect();
    parts.concat()
}

fn accept_chunk(det: &Detector, raw: &[RawHit], sources: &[Source], seed: u64) -> Vec<Hit> {
    let mut out = Vec::with_capacity(raw.len() * 3 / 4);
    for h in raw {
        let mut rng = RandomStream::new(seed, tags::ACCEPT | (h.seq << 4), h.photon);
        let dom = &det.geometry.doms[h.dom as usize];
        // Multi-PMT module (photon-ppc-phase2.md §7): its type's wavelength share and RDE, then
        // the PMT from the photon direction (crate::sensors); as.dat and cx.dat do not apply.
        let module = det.sensors.as_ref().and_then(|s| s.module_of(h.dom as usize));
        let mut pmt = 0;
        if let Some(m) = module {
            let p_eff = m.keep(dom.high_qe, dom.rde, h.slice as usize);
            let (u1, u2) = (f64::from(rng.uniform()), f64::from(rng.uniform()));
            if u1 > p_eff {
                continue;
            }
            match m.choose(h.dir, dom.cable_deg, u2) {
                Some(k) => pmt = k as i32,
                None => continue,
            }
        }
        let p_eff = det.dom_types.keep(dom.high_qe, dom.rde, h.slice as usize);
        let (u1, u2) = if module.is_some() {
            (0.0, 0.0)
        } else {
            (f64::from(rng.uniform()), f64::from(rng.uniform()))
        };
        if module.is_none() && u1 > p_eff {
            continue;
        }
        // DOM axis (0, 0, 1): the PMT looks down, so upgoing photons hit head-on (x = +1).
        // Against the module's axis (cx.dat; (0, 0, 1) by default: the PMT looks down, so upgoing
        // photons hit head-on). Surface mode: PPC's r·axis > s0, r the unit vector from the impact
        // point to the centre.
        let axis = dom.axis.unwrap_or([0.0, 0.0, 1.0]);
        let along = |v: [f32; 3]| axis[0] * f64::from(v[0]) + axis[1] * f64::from(v[1]) + axis[2] * f64::from(v[2]);
        let ok = if module.is_some() {
            true
        } else if det.angular.surface_mode() {
            -along(h.impact) > det.angular.coeffs[0]
        } else {
            det.angular.mas * u2 < det.angular.acceptance(along(h.dir))
        };
        if !ok {
            continue;
        }
        let radius = module.map_or(crate::geometry::DOM_RADIUS, |m| m.rr) as f32;
        if dom.cable_deg.is_some_and(|phi| cable_shadows(radius, phi, h.dir, h.impact)) {
            continue;
        }
        let s = &sources[h.source as usize];
        // The printed wavelength: uniform within the hit's slice (PPC's wvs[n].x()).
        let wl = det.medium.slices[h.slice as usize].hit_wavelength(rng.uniform());
        out.push(Hit {
            event: s.event,
            source: s.index,
            source_ordinal: h.source,
            photon: h.photon,
            string: dom.string,
            om: dom.om,
            pmt,
            time: h.time,
            wavelength: wl,
            dir: h.dir,
            impact: module.map_or(h.impact, |m| module_impact(h.impact, (m.rz / m.rr) as f32)),
        });
    }
    out
}

/// A module hit's impact as the direction whose angles PPC prints (f2k.cxx: dθ from the surface
/// point's height in units of the polar radius, dφ its azimuth): `q` = impact point − centre in
/// units of the oversized equatorial radius, F = Rz/Rr (< 0: cylinder). cos θ = q_z/F (clamped),
/// the azimuth of q. For the spheroid this is (q_x, q_y, q_z/F), a unit vector; for F = 1, q.
#[must_use]
pub fn module_impact(q: [f32; 3], f: f32) -> [f32; 3] {
    let c = (q[2] / f).clamp(-1.0, 1.0);
    let s = (1.0 - c * c).max(0.0).sqrt();
    let n = q[0].hypot(q[1]);
    if n > 0.0 {
        [s * q[0] / n, s * q[1] / n, c]
    } else {
        [0.0, 0.0, c]
    }
}

/// PPC's output line: `HIT str om time wavelength pθ pφ dθ dφ` (printf `%f`).
#[must_use]
pub fn hit_line(h: &Hit) -> String {
    let mut s = String::with_capacity(96);
    push_hit_line(&mut s, h);
    s
}

/// The HIT line for `det`: with multi-PMT modules configured (om.conf), PPC prints the module as
/// `om_pmt` on every line (`HIT str om_pmt t λ …`, single-PMT DOMs `om_0`).
pub fn push_hit_line_for(out: &mut String, h: &Hit, with_pmt: bool) {
    write_line(out, h, with_pmt);
}

/// Append the newline-terminated HIT lines of `hits` to `out`, in order, on this thread.
pub fn push_hit_lines<'a>(out: &mut String, hits: impl IntoIterator<Item = &'a Hit>, with_pmt: bool) {
    for h in hits {
        write_line(out, h, with_pmt);
        out.push('\n');
    }
}

/// Lines per window of [`hit_lines`]: a caller formats this many at a time, so memory stays
/// bounded (~90 MB of text) however many hits a run has.
pub const HIT_LINE_WINDOW: usize = 1 << 20;

/// The HIT lines (newline-terminated) of `hits[order[0]]`, `hits[order[1]]`, …, formatted in
/// parallel on the current rayon pool, as consecutive pieces of text to write in order. PPC's
/// benchmark prints 4–6 million lines: one core took 1.7 s of a 5 s run for them.
#[must_use]
pub fn hit_lines(hits: &[Hit], order: &[u32], with_pmt: bool) -> Vec<String> {
    use rayon::prelude::*;
    order
        .par_chunks(1 << 14)
        .map(|c| {
            let mut s = String::with_capacity(c.len() * 88);
            push_hit_lines(&mut s, c.iter().map(|&i| &hits[i as usize]), with_pmt);
            s
        })
        .collect()
}

/// Append `h`'s HIT line (without newline) to `out`: `HIT str om t λ θ φ θ' φ'` with six decimals,
/// the text `format!("{:.6}")` gives, written without the formatting machinery (PPC's files
/// have millions of lines).
pub fn push_hit_line(out: &mut String, h: &Hit) {
    write_line(out, h, false);
}

fn write_line(out: &mut String, h: &Hit, with_pmt: bool) {
    let (pt, pp) = angles(h.dir);
    // PPC prints the direction from the impact point to the module centre (−impact).
    let (dt, dp) = angles([-h.impact[0], -h.impact[1], -h.impact[2]]);
    out.push_str("HIT ");
    push_int(out, i64::from(h.string));
    out.push(' ');
    push_int(out, i64::from(h.om));
    if with_pmt {
        out.push('_');
        push_int(out, i64::from(h.pmt));
    }
    for v in [h.time, h.wavelength, pt, pp, dt, dp] {
        out.push(' ');
        push_fixed6(out, v);
    }
}

fn push_int(out: &mut String, v: i64) {
    if v < 0 {
        out.push('-');
    }
    let mut digits = [0u8; 20];
    let (mut n, mut u) = (0, v.unsigned_abs());
    loop {
        digits[n] = b'0' + (u % 10) as u8;
        n += 1;
        u /= 10;
        if u == 0 {
            break;
        }
    }
    for &d in digits[..n].iter().rev() {
        out.push(d as char);
    }
}

/// `format!("{:.6}", v)` for an f32: v·10⁶ is exact in f64 (24 + 20 bits), so rounding it to an
/// integer with ties to even is the correctly rounded six-decimal value, as Rust's formatter
/// gives (sign kept for negative zero and values that round to zero).
pub fn push_fixed6(out: &mut String, v: f32) {
    let x = f64::from(v);
    if !x.is_finite() || x.abs() >= 1e12 {
        out.push_str(&format!("{v:.6}"));
        return;
    }
    let scaled = (x.abs() * 1e6).round_ties_even() as u64;
    if v.is_sign_negative() {
        out.push('-');
    }
    push_int(out, (scaled / 1_000_000) as i64);
    out.push('.');
    let frac = scaled % 1_000_000;
    let mut div = 100_000;
    while div > 0 {
        out.push((b'0' + ((frac / div) % 10) as u8) as char);
        div /= 10;
    }
}

/// The hits as a table; schema documented in docs/photon.md.
pub fn hits_table(hits: &[Hit], metadata: &[(String, String)]) -> Table {
    let mut t = Table::default();
    let col_i32 = |f: &dyn Fn(&Hit) -> i32| Column::I32(hits.iter().map(f).collect());
    let col_f32 = |f: &dyn Fn(&Hit) -> f32| Column::F32(hits.iter().map(f).collect());
    t.push("event", col_i32(&|h| h.event));
    t.push("string", col_i32(&|h| h.string));
    t.push("om", col_i32(&|h| h.om));
    t.push("pmt", col_i32(&|h| h.pmt));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cable_shadows_only_photons_that_crossed_it() {
        const R0: f32 = crate::geometry::DOM_RADIUS as f32;
        // Cable at azimuth 0: its axis at x = R + 0.023 m.
        // A photon travelling −x (coming from +x) hits the +x side: its path crossed the cable.
        assert!(cable_shadows(R0, 0.0, [-1.0, 0.0, 0.0], [1.0, 0.0, 0.0]));
        // The same photon with the cable on the other side (180°) is not shadowed.
        assert!(!cable_shadows(R0, 180.0, [-1.0, 0.0, 0.0], [1.0, 0.0, 0.0]));
        // Coming from −x onto the −x side: the cable is behind the DOM.
        assert!(!cable_shadows(R0, 0.0, [1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]));
        // Vertical photons never cross a vertical cable; passing 0.1 m beside it neither.
        assert!(!cable_shadows(R0, 0.0, [0.0, 0.0, 1.0], [0.0, 0.0, -1.0]));
        assert!(!cable_shadows(R0, 90.0, [-1.0, 0.0, 0.0], [1.0, 0.0, 0.0]));
        // Negative azimuths as PPC reads them (−90 ≡ 270).
        assert_eq!(
            cable_shadows(R0, 270.0, [0.0, 1.0, 0.0], [0.0, -1.0, 0.0]),
            cable_shadows(R0, (-90.0f64).rem_euclid(360.0), [0.0, 1.0, 0.0], [0.0, -1.0, 0.0])
        );
        assert!(cable_shadows(R0, 270.0, [0.0, 1.0, 0.0], [0.0, -1.0, 0.0]));
    }

    /// The fast six-decimal formatter writes exactly what `format!("{:.6}")` writes.
    #[test]
    fn fixed6_equals_the_formatter() {
        let mut r = warpdrive_core::RandomStream::new(11, 0, 0);
        let mut cases: Vec<f32> = vec![
            0.0,
            -0.0,
            0.125,
            0.5e-6,
            1.5e-6,
            2.5e-6,
            -2.5e-6,
            1e-7,
            -1e-9,
            std::f32::consts::PI,
            -std::f32::consts::PI,
            99_999.99,
            1e11,
            1e13,
            f32::NAN,
            f32::INFINITY,
        ];
        for _ in 0..1_000_000 {
            let bits = r.next_u32();
            let v = f32::from_bits(bits);
            cases.push(v);
            // Typical HIT values: times up to 10^5 ns, wavelengths, angles.
            cases.push((r.uniform_f64() * 2e5 - 1e5) as f32);
            cases.push((r.uniform_f64() * 7.0 - 3.5) as f32);
        }
        for v in cases {
            let mut s = String::new();
            push_fixed6(&mut s, v);
            assert_eq!(s, format!("{v:.6}"), "bits {:#x}", v.to_bits());
        }
        let mut s = String::new();
        push_int(&mut s, -1234);
        push_int(&mut s, 0);
        assert_eq!(s, "-12340");
    }

    /// HIT lines print PPC's impact angles: the direction from the impact point to the module
    /// centre (PPC pro.cu: dom.r − r). A photon from below hits the bottom: θ = 0.
    #[test]
    fn hit_line_impact_angles_follow_ppc() {
        let h = Hit {
            event: 0,
            source: 0,
            source_ordinal: 0,
            photon: 0,
            string: 1,
            om: 2,
            pmt: 0,
            time: 10.0,
            wavelength: 400.0,
            dir: [0.0, 0.0, 1.0],
            impact: [0.0, 0.0, -1.0],
        };
        let l = hit_line(&h);
        let t: Vec<f64> = l.split_whitespace().skip(3).map(|v| v.parse().unwrap()).collect();
        assert_eq!(t[2], 0.0, "photon θ: travelling up");
        assert_eq!(t[4], 0.0, "impact θ towards the centre: up, {l}");
        // With multi-PMT modules PPC prints `om_pmt`.
        let mut s = String::new();
        push_hit_line_for(
            &mut s,
            &Hit {
                string: 12,
                om: 34,
                pmt: 17,
                ..h
            },
            true,
        );
        assert_eq!(s, l.replacen("HIT 1 2 ", "HIT 12 34_17 ", 1));
        let mut s = String::new();
        push_hit_line_for(&mut s, &h, false);
        assert_eq!(s, l);
    }

    /// The parallel writer prints, in the order given, exactly the lines of the one-line writer
    /// (over several tasks: 40 000 hits, chunks of 2^14), with and without `om_pmt`.
    #[test]
    fn parallel_hit_lines_equal_the_line_writer() {
        let mut r = warpdrive_core::RandomStream::new(5, 0, 0);
        let hits: Vec<Hit> = (0..40_000)
            .map(|k| Hit {
                event: 0,
                source: 0,
                source_ordinal: 0,
                photon: k,
                string: (k % 86) as i32 + 1,
                om: (k % 60) as i32 + 1,
                pmt: (k % 24) as i32,
                time: (r.uniform_f64() * 1e4) as f32,
                wavelength: 300.0 + 300.0 * r.uniform(),
                dir: [0.6, 0.0, 0.8],
                impact: [0.0, 0.6, -0.8],
            })
            .collect();
        let order: Vec<u32> = (0..hits.len() as u32).rev().step_by(3).collect();
        for with_pmt in [false, true] {
            let text: String = hit_lines(&hits, &order, with_pmt).concat();
            let mut want = String::new();
            for &i in &order {
                push_hit_line_for(&mut want, &hits[i as usize], with_pmt);
                want.push('\n');
            }
            assert_eq!(text, want);
        }
    }
}
