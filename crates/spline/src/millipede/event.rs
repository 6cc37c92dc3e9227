//! An event's DOM pulses and their binning into Millipede's data vector (spec §2.1, §2.3).
//!
//! Event files are Parquet with columns `string`, `om`, `time` [ns], `charge` [PE] (one row per
//! pulse) and the readout window in the metadata keys `window_start`/`window_end` [ns]
//! (default: first pulse − 1 µs to last pulse + 5 µs). Every DOM of the geometry takes part:
//! unhit DOMs as one bin with charge 0 (`UseUnhitDOMs`), hit DOMs with bins that close once
//! they hold `photons_per_bin` PE (edges halfway between pulses; the first bin starts at the
//! window start, the last ends at the window end).
//!
//! A hits file of `warpdrive photon` (columns `string`, `om`, `time_ns`, no `charge`) is read as
//! an event too: each hit a pulse of 1 PE (one event per file: its `event` column must hold one
//! value).

use super::model::{Bins, DomBins};
use std::path::Path;
use warpdrive_core::table::{Column, ParquetFile, Table};
use warpdrive_core::InputError;
use warpdrive_photon::geometry::Geometry;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pulse {
    pub string: i32,
    pub om: i32,
    pub time: f64,
    pub charge: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub pulses: Vec<Pulse>,
    pub window: [f64; 2],
}

/// How pulses become bins.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Binning {
    /// Close a bin once it holds this much charge (Millipede's `PhotonsPerBin`); ≤ 0: one bin
    /// per DOM (amplitude-only fits).
    pub photons_per_bin: f64,
    /// Dark rate per DOM [Hz] giving the noise expectation ρ = rate × bin width.
    pub noise_rate_hz: f64,
}

impl Default for Binning {
    fn default() -> Self {
        Self {
            photons_per_bin: 5.0,
            noise_rate_hz: 500.0,
        }
    }
}

impl Event {
    /// Read an event file once, through the bounded reader
    /// (`warpdrive_core::table::ParquetFile`), decoding only the four columns it uses.
    pub fn read(path: &Path) -> Result<Self, InputError> {
        let f = ParquetFile::read(path)?;
        let names = f.names();
        let index = |name: &str| -> Result<usize, InputError> {
            names
                .iter()
                .position(|n| n == name)
                .ok_or_else(|| InputError::file(path, format!("no column '{name}' (columns: {})", names.join(", "))).field(name))
        };
        let has = |name: &str| names.iter().any(|n| n == name);
        let c: Vec<Vec<f64>> = if !has("time") && !has("charge") && has("time_ns") {
            // `warpdrive photon`'s hits: one photo-electron per hit.
            let which = [index("string")?, index("om")?, index("time_ns")?];
            let mut c: Vec<Vec<f64>> = f.columns(&which)?.into_iter().map(Column::into_f64).collect();
            if has("event") {
                let ev = f.columns(&[index("event")?])?.remove(0).into_f64();
                if let Some(i) = ev.iter().position(|e| *e != ev[0]) {
                    return Err(InputError::file(
                        path,
                        format!(
                            "a hits file of several events (row {}: event {} after event {}); unfold one event at a time",
                            i + 1,
                            ev[i],
                            ev[0]
                        ),
                    )
                    .field("event"));
                }
            }
            c.push(vec![1.0; c[0].len()]);
            c
        } else {
            let which = [index("string")?, index("om")?, index("time")?, index("charge")?];
            f.columns(&which)?.into_iter().map(Column::into_f64).collect()
        };
        let metadata = f.metadata();
        let meta = |k: &str| -> Result<Option<f64>, InputError> {
            metadata
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v)
                .map(|v| {
                    v.parse::<f64>()
                        .map_err(|_| InputError::file(path, format!("metadata {k} = '{v}' is not a number")).field(k))
                })
                .transpose()
        };
        let window = match (meta("window_start")?, meta("window_end")?) {
            (Some(a), Some(b)) => Some([a, b]),
            _ => None,
        };
        Self::from_columns(path, &c[0], &c[1], &c[2], &c[3], window)
    }

    /// An event from its columns (string, om, time [ns], charge [PE]) and readout window (None:
    /// the default around the pulses), checked as a file's rows are; `label` names the input in
    /// errors (the file, or `<arrays>` from Python).
    pub fn from_columns(
        label: &Path,
        string: &[f64],
        om: &[f64],
        time: &[f64],
        charge: &[f64],
        window: Option<[f64; 2]>,
    ) -> Result<Self, InputError> {
        let n = string.len();
        if om.len() != n || time.len() != n || charge.len() != n {
            return Err(InputError::file(
                label,
                format!(
                    "columns of different lengths: string {n}, om {}, time {}, charge {}",
                    om.len(),
                    time.len(),
                    charge.len()
                ),
            ));
        }
        let mut pulses = Vec::with_capacity(n);
        for r in 0..n {
            let bad = |field: &str, why: &str| InputError::new(label, 0, format!("row {}: {why}", r + 1)).field(field);
            if !time[r].is_finite() {
                return Err(bad("time", "not finite"));
            }
            if !(charge[r].is_finite() && charge[r] >= 0.0) {
                return Err(bad("charge", "must be finite and ≥ 0"));
            }
            pulses.push(Pulse {
                string: string[r] as i32,
                om: om[r] as i32,
                time: time[r],
                charge: charge[r],
            });
        }
        let window = window.unwrap_or_else(|| default_window(&pulses));
        if window[1].partial_cmp(&window[0]) != Some(std::cmp::Ordering::Greater) {
            return Err(InputError::file(label, format!("empty readout window {window:?}")));
        }
        if let Some((r, p)) = pulses.iter().enumerate().find(|(_, p)| p.time < window[0] || p.time > window[1]) {
            return Err(InputError::new(
                label,
                0,
                format!("row {}: pulse at {} ns outside the readout window {window:?}", r + 1, p.time),
            )
            .field("time"));
        }
        Ok(Self { pulses, window })
    }

    pub fn to_table(&self) -> Table {
        let mut t = Table::default();
        t.push("string", Column::I32(self.pulses.iter().map(|p| p.string).collect()));
        t.push("om", Column::I32(self.pulses.iter().map(|p| p.om).collect()));
        t.push("time", Column::F64(self.pulses.iter().map(|p| p.time).collect()));
        t.push("charge", Column::F64(self.pulses.iter().map(|p| p.charge).collect()));
        t.meta("window_start", format!("{:?}", self.window[0]));
        t.meta("window_end", format!("{:?}", self.window[1]));
        t
    }

    pub fn total_charge(&self) -> f64 {
        self.pulses.iter().map(|p| p.charge).sum()
    }

    /// Number of distinct DOMs with pulses.
    pub fn hit_doms(&self) -> usize {
        self.pulses
            .iter()
            .map(|p| (p.string, p.om))
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    }

    /// Bin the pulses on `geo`'s DOMs. Pulses on DOMs the geometry does not have are an error.
    pub fn bin(&self, geo: &Geometry, binning: &Binning) -> Result<Bins, String> {
        let mut per_dom: Vec<Vec<Pulse>> = vec![Vec::new(); geo.doms.len()];
        let index: std::collections::HashMap<(i32, i32), usize> = geo.doms.iter().enumerate().map(|(i, d)| ((d.string, d.om), i)).collect();
        for p in &self.pulses {
            let i = index
                .get(&(p.string, p.om))
                .ok_or_else(|| format!("pulse on DOM {}-{} which the geometry {} does not have", p.string, p.om, geo.source))?;
            per_dom[*i].push(*p);
        }
        let rate_per_ns = binning.noise_rate_hz * 1e-9;
        let mut bins = Bins::default();
        for (i, pulses) in per_dom.iter_mut().enumerate() {
            pulses.sort_by(|a, b| a.time.total_cmp(&b.time));
            let first_row = bins.charge.len();
            let first_edge = bins.edges.len();
            bins.edges.push(self.window[0]);
            let mut q = 0.0;
            for (k, p) in pulses.iter().enumerate() {
                q += p.charge;
                let next = pulses.get(k + 1);
                if binning.photons_per_bin > 0.0 && q >= binning.photons_per_bin {
                    if let Some(n) = next {
                        bins.edges.push(0.5 * (p.time + n.time));
                        bins.charge.push(q);
                        q = 0.0;
                    }
                }
            }
            bins.edges.push(self.window[1]);
            bins.charge.push(q);
            let rows = bins.charge.len() - first_row;
            for r in 0..rows {
                let e = &bins.edges[first_edge + r..first_edge + r + 2];
                bins.noise.push(rate_per_ns * (e[1] - e[0]));
            }
            bins.doms.push(DomBins {
                dom: i,
                pos: geo.doms[i].pos,
                scale: geo.doms[i].rde,
                first_row,
                rows,
                first_edge,
            });
        }
        Ok(bins)
    }
}

fn default_window(pulses: &[Pulse]) -> [f64; 2] {
    let lo = pulses.iter().map(|p| p.time).fold(f64::INFINITY, f64::min);
    let hi = pulses.iter().map(|p| p.time).fold(f64::NEG_INFINITY, f64::max);
    if lo.is_finite() {
        [lo - 1000.0, hi + 5000.0]
    } else {
        [0.0, 1.0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_close_at_the_charge_threshold_between_pulses() {
        let geo = Geometry::icecube_like();
        let d = &geo.doms[3];
        let pulse = |t: f64, q: f64| Pulse {
            string: d.string,
            om: d.om,
            time: t,
            charge: q,
        };
        let ev = Event {
            pulses: vec![
                pulse(100.0, 3.0),
                pulse(110.0, 2.5),
                pulse(130.0, 1.0),
                pulse(150.0, 6.0),
                pulse(170.0, 1.0),
            ],
            window: [0.0, 1000.0],
        };
        let b = ev.bin(&geo, &Binning::default()).unwrap();
        assert_eq!(b.doms.len(), geo.doms.len());
        let db = b.doms[3];
        assert_eq!(db.rows, 3);
        assert_eq!(&b.edges[db.first_edge..db.first_edge + 4], &[0.0, 120.0, 160.0, 1000.0]);
        assert_eq!(&b.charge[db.first_row..db.first_row + 3], &[5.5, 7.0, 1.0]);
        let total: f64 = b.charge.iter().sum();
        assert_eq!(total, ev.total_charge());
        // Unhit DOMs: one bin over the window with the window's noise.
        let u = b.doms[0];
        assert_eq!(u.rows, 1);
        assert!((b.noise[u.first_row] - 500e-9 * 1000.0).abs() < 1e-15);
    }

    #[test]
    fn a_hits_file_of_photon_is_an_event_of_one_pe_pulses() {
        let dir = std::env::temp_dir().join(format!("wd-event-hits-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let hits = |events: Vec<i32>| {
            let mut t = Table::default();
            t.push("event", Column::I32(events));
            t.push("string", Column::I32(vec![21, 21, 36]));
            t.push("om", Column::I32(vec![30, 31, 44]));
            t.push("time_ns", Column::F32(vec![250.5, 300.0, 1200.25]));
            t.push("wavelength_nm", Column::F32(vec![400.0, 410.0, 420.0]));
            t
        };
        let p = dir.join("hits.parquet");
        hits(vec![0, 0, 0]).write_parquet(&p).unwrap();
        let ev = Event::read(&p).unwrap();
        assert_eq!(ev.pulses.len(), 3);
        assert_eq!(ev.total_charge(), 3.0);
        assert_eq!(
            ev.pulses[2],
            Pulse {
                string: 36,
                om: 44,
                time: 1200.25,
                charge: 1.0
            }
        );
        assert_eq!(ev.window, [250.5 - 1000.0, 1200.25 + 5000.0]);
        // Several events in one file: refused, the column named.
        hits(vec![0, 0, 1]).write_parquet(&p).unwrap();
        let e = Event::read(&p).unwrap_err().to_string();
        assert!(e.contains("event") && e.contains("row 3: event 1 after event 0"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
