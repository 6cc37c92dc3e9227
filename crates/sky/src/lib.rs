//! `warpdrive-sky`: the two-point autocorrelation test of neutrino arrival directions with
//! right-ascension-scrambled trials (spec `specs/sky.md`).
//!
//! Data flow: [`events`] (read IceCube event lists) → [`cuts`] (region, nested energy cuts) →
//! [`sample`] (sorted by declination, fixed quantities precomputed: the "params") →
//! [`count`] (exact pair counts on the CPU, cell lists) or [`gpu`] (CUDA, `kernels/autocorr.cu`)
//! for the observed sky and for every [`trials`] scramble → [`analysis`] (TS, p-values) →
//! [`output`] (Parquet, JSON, merge of batch jobs) and [`plot`] (PNG). Signal injection
//! ([`inject`]) builds trials with point sources in them; [`sensitivity`] turns their count
//! distributions into sensitivity and discovery potential.
//!
//! Geometry lives in [`sphere`] (squared chords, a bit-reproducible sin/cos), the edge rule in
//! [`bins`].

pub mod analysis;
pub mod bench;
pub mod bins;
pub mod count;
pub mod cuts;
pub mod engine;
pub mod events;
pub mod gpu;
pub mod gpu_check;
pub mod inject;
pub mod output;
pub mod plot;
pub mod sample;
pub mod sensitivity;
pub mod setup;
pub mod sphere;
pub mod trials;

use bins::AngularBins;
use cuts::{EnergyCut, Region};
use events::Event;
use output::RunInfo;
use sample::Sample;
use std::ops::Range;
use trials::Background;
use warpdrive_core::progress::Progress;

/// Where trials run.
#[derive(Clone, Debug, PartialEq)]
pub enum Backend {
    Cpu,
    Cuda(Vec<usize>),
}

/// Trials of job `index` of `jobs` when `total` trials are split into contiguous shares.
pub fn job_range(total: u64, jobs: u64, index: u64) -> Result<Range<u64>, String> {
    if jobs == 0 || index >= jobs {
        return Err(format!("--job-index {index} must be below --jobs {jobs} (and --jobs at least 1)"));
    }
    let at = |k: u64| (u128::from(total) * u128::from(k) / u128::from(jobs)) as u64;
    Ok(at(index)..at(index + 1))
}

/// What an analysis needs besides the events.
#[derive(Clone, Debug)]
pub struct Settings {
    pub region: Region,
    pub cuts: Vec<EnergyCut>,
    pub bins: AngularBins,
    pub seed: u64,
    pub total_trials: u64,
    pub trials: Range<u64>,
    pub description: String,
    /// Round scrambled right ascensions to this step [deg] (None: continuous). It must divide
    /// 360° into a whole number of steps.
    pub ra_grid_deg: Option<f64>,
}

/// Select, sort and precompute; count the observed pairs (CPU). Returns the sample and the run
/// description with the observed counts.
pub fn prepare(events: &[Event], st: &Settings) -> Result<(Sample, RunInfo), String> {
    let sel: Vec<Event> = events.iter().copied().filter(|e| st.region.contains(e)).collect();
    if sel.is_empty() {
        return Err(format!(
            "no events in the selected region (declination {}° to {}°)",
            st.region.dec_min, st.region.dec_max
        ));
    }
    let cuts = cuts::resolve(&sel, &st.cuts)?;
    let mut sample = Sample::new(&sel, st.bins.clone(), cuts)?;
    if let Some(q) = st.ra_grid_deg {
        let n = 360.0 / q;
        if q.is_nan() || q <= 0.0 || (n - n.round()).abs() > 1e-9 || n.round() > f64::from(u32::MAX) {
            return Err(format!("RA grid {q}°: the step must divide 360° into a whole number of steps"));
        }
        sample.ra_grid = n.round() as u32;
    }
    // The fingerprint covers everything that decides the numbers of a trial.
    let mut h = warpdrive_core::hash::Fnv64::new();
    for p in 0..sample.len() {
        h.write(&sample.dec[p].to_le_bytes())
            .write(&sample.ra_turn[p].to_le_bytes())
            .write(&[sample.level[p]]);
    }
    h.part(&[]);
    let edges: Vec<u8> = st.bins.edges_deg.iter().flat_map(|e| e.to_le_bytes()).collect();
    let thr: Vec<u8> = sample.cuts.thresholds.iter().flat_map(|e| e.to_le_bytes()).collect();
    h.part(&edges)
        .part(&thr)
        .part(&st.seed.to_le_bytes())
        .part(&st.total_trials.to_le_bytes())
        .part(&sample.ra_grid.to_le_bytes());
    let config = h.hex();
    let mut thresholds = vec![f64::NAN];
    thresholds.extend(&sample.cuts.thresholds);
    let info = RunInfo {
        config,
        seed: st.seed,
        total_trials: st.total_trials,
        trials: if st.trials.is_empty() { vec![] } else { vec![st.trials.clone()] },
        edges_deg: st.bins.edges_deg.clone(),
        cut_labels: (0..sample.cuts.levels()).map(|c| sample.cuts.label(c)).collect(),
        thresholds,
        cut_events: sample.cuts.counts.iter().map(|&n| n as u64).collect(),
        n_events: sample.len() as u64,
        description: st.description.clone(),
        observed: count::observed(&sample),
    };
    Ok((sample, info))
}

/// Run the scrambled trials `range` on `backend`.
pub fn run_trials(s: &Sample, seed: u64, range: Range<u64>, backend: &Backend, progress: &Progress) -> Result<Background, String> {
    match backend {
        Backend::Cpu => Ok(trials::run_cpu(s, seed, range, progress)),
        Backend::Cuda(devices) => gpu::run_trials(devices, s, seed, range, progress).map_err(|e| e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ranges_partition_the_trials() {
        let total = 1003;
        let mut next = 0;
        for i in 0..7 {
            let r = job_range(total, 7, i).unwrap();
            assert_eq!(r.start, next);
            next = r.end;
        }
        assert_eq!(next, total);
        assert!(job_range(10, 2, 2).is_err());
        assert!(job_range(10, 0, 0).is_err());
    }
}
