//! `warpdrive bench sky` as a library call: time per scrambled trial of the two-point
//! autocorrelation on all IC86-2011 events (20 bins of 0.25°, the four default energy cuts),
//! per CPU thread count or on a GPU for each kernel switch and end to end
//! (docs/performance/sky.md cites the report).

use crate::bins::AngularBins;
use crate::cuts::Region;
use crate::events::{read_all, ColumnNames};
use crate::gpu::SkyGpu;
use crate::sample::Sample;
use crate::Settings;
use std::path::PathBuf;
use warpdrive_core::bench::{self, BenchReport, Lines};
use warpdrive_core::engine::{Control, Error, Result};

/// What to time; `Default` is the command line's defaults.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BenchOptions {
    /// Event files (empty: both IC86-2011 samples in `$WARPDRIVE_DATA/events/ic86_2011_ps_release`).
    pub files: Vec<PathBuf>,
    /// Trials to time (0: 4 per thread on the CPU, 4 batches on a GPU; a GPU runs whole
    /// batches and does not time the first).
    pub trials: u64,
    /// CPU thread counts (empty: 1 and all cores).
    pub threads: Vec<usize>,
}

impl BenchOptions {
    /// The files the benchmark reads (its report must not replace them).
    pub fn inputs(&self) -> Vec<PathBuf> {
        self.files.clone()
    }
}

/// One row of the report, printed as it is measured.
struct Rows<'a> {
    lines: Lines<'a>,
    json: Vec<serde_json::Value>,
}

impl Rows<'_> {
    fn row(&mut self, device: String, n: u64, secs: f64) {
        let ms = 1e3 * secs / n as f64;
        (self.lines)(&format!("{device:<48} {n:>8} {secs:>12.3} {ms:>14.3} {:>16.3e}", 86_400e3 / ms));
        self.json
            .push(serde_json::json!({"device": device, "trials": n, "seconds": secs, "ms_per_trial": ms, "trials_per_day": 86_400e3 / ms}));
    }
}

/// Time the trials on the control's device (`auto`: the first GPU if CUDA works, else the
/// CPU), printing each row to `lines` as it is measured.
pub fn run(o: &BenchOptions, ctl: &Control, lines: Lines) -> Result<BenchReport> {
    let threads = bench::thread_counts(&o.threads)?;
    let files = if o.files.is_empty() {
        let d = warpdrive_core::data::data_dir().join("events/ic86_2011_ps_release");
        vec![d.join("upgoing_events.txt"), d.join("downgoing_events.txt")]
    } else {
        o.files.clone()
    };
    let gpus = bench::gpus(ctl)?;
    let events = read_all(&files, &ColumnNames::default())
        .map_err(|e| Error::Failed(format!("the benchmark reads the IC86-2011 events (set WARPDRIVE_DATA): {e}")))?;
    let st = Settings {
        region: Region::ALL,
        cuts: crate::cuts::default_cuts(),
        bins: AngularBins::uniform(20, 0.25).map_err(Error::Failed)?,
        seed: 1,
        total_trials: 0,
        trials: 0..0,
        description: String::new(),
        ra_grid_deg: crate::sample::detect_ra_grid(&events.iter().map(|e| e.ra).collect::<Vec<_>>()),
    };
    let (s, _) = crate::prepare(&events, &st).map_err(Error::Failed)?;
    lines(&format!(
        "warpdrive bench sky: {} events, 20 bins of 0.25°, 4 energy cuts; {:.3e} candidate pairs per trial in the declination windows",
        s.len(),
        s.window_pairs() as f64
    ));
    lines(&format!(
        "{:<48} {:>8} {:>12} {:>14} {:>16}",
        "device (kernel time unless 'end to end')", "trials", "seconds", "ms/trial", "trials/day"
    ));
    let mut rows = Rows { lines, json: Vec::new() };
    let device_name = match gpus {
        None => {
            cpu(&s, o.trials, &threads, ctl, &mut rows)?;
            "cpu".to_string()
        }
        Some(d) => gpu(&s, o.trials, d[0], ctl, &mut rows)?,
    };
    (rows.lines)("references (spec §3-4): thesis GTX Titan 0.7 s/trial; Corrfunc 0.49 s per count on one CPU core of this VM kind");
    let report = serde_json::json!({
        "benchmark": "sky-autocorr", "events": s.len(), "bins": 20, "cuts": 4, "device": device_name,
        "candidate_pairs_per_trial": s.window_pairs(), "version": env!("CARGO_PKG_VERSION"), "runs": rows.json,
        "references": {"thesis_gtx_titan_s_per_trial": 0.7, "corrfunc_one_core_s_per_count": 0.49},
    });
    Ok(BenchReport {
        json: serde_json::to_string_pretty(&report).map_err(|e| Error::Failed(e.to_string()))? + "\n",
    })
}

/// `trials` (default 4 per thread) on each thread count.
fn cpu(s: &Sample, trials: u64, threads: &[usize], ctl: &Control, rows: &mut Rows) -> Result<()> {
    for &t in threads {
        let n = if trials > 0 { trials } else { 4 * t as u64 };
        let (_, secs) = bench::timed(ctl, t, || crate::trials::run_cpu(s, 1, 0..n, &ctl.progress))?;
        ctl.check()?;
        rows.row(format!("cpu, {t} thread(s)"), n, secs);
    }
    Ok(())
}

/// Kernel time of whole batches (after one untimed) for the default build and each switch,
/// then the full path (launches, copies, host histograms) as a user run sees it. Returns the
/// GPU's name.
fn gpu(s: &Sample, trials: u64, ordinal: usize, ctl: &Control, rows: &mut Rows) -> Result<String> {
    for switch in std::iter::once(None).chain(crate::gpu::SWITCHES.iter().map(Some)) {
        let defines: Vec<String> = switch.iter().map(|d| d.to_string()).collect();
        let mut g = SkyGpu::with_switches(ordinal, s, &defines)?;
        let batch = u64::from(g.batch);
        g.time_batch(1, 0, g.batch)?; // warm-up (module load, first-touch)
        let n = if trials > 0 { trials.div_ceil(batch) * batch } else { 4 * batch };
        let mut secs = 0.0;
        let mut first = batch;
        while first < batch + n {
            ctl.check()?;
            secs += g.time_batch(1, first, g.batch)?;
            first += batch;
        }
        let label = switch.map_or(format!("default, batch {batch}"), |d| format!("-D{d}"));
        rows.row(format!("{} {label}", g.gpu.name), n, secs);
    }
    let mut g = SkyGpu::new(ordinal, s)?;
    let n = if trials > 0 { trials } else { 256 };
    let t0 = std::time::Instant::now();
    let _ = g.trial_counts(1, 0..n, &ctl.progress)?;
    ctl.check()?;
    rows.row(format!("{}, end to end", g.gpu.name), n, t0.elapsed().as_secs_f64());
    Ok(g.gpu.name.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpdrive_core::engine::{Device, Style};

    #[test]
    fn thread_counts_are_checked_before_the_events_are_read() {
        let o = BenchOptions {
            files: vec!["/nonexistent/events.txt".into()],
            threads: vec![0],
            ..Default::default()
        };
        let e = run(&o, &Control::new().device(Device::Cpu), &mut |_| {}).unwrap_err();
        assert_eq!(e.render(Style::Cli), "--threads: every thread count must be at least 1");
    }

    #[test]
    fn a_small_sky_is_timed_per_thread_count() {
        let d = std::env::temp_dir().join(format!("wd-sky-bench-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join("e.csv");
        let text: String = std::iter::once("ra,dec,logE\n".to_string())
            .chain((0..200).map(|i| format!("{},{},{}\n", (i * 37) % 360, (i % 170) as f64 - 85.0, i % 7)))
            .collect();
        std::fs::write(&f, text).unwrap();
        let o = BenchOptions {
            files: vec![f],
            trials: 3,
            threads: vec![1, 2],
        };
        let mut printed = Vec::new();
        let r = run(&o, &Control::new().device(Device::Cpu), &mut |l| printed.push(l.to_string())).unwrap();
        let v: serde_json::Value = serde_json::from_str(&r.json).unwrap();
        assert_eq!(v["benchmark"], "sky-autocorr");
        assert_eq!(v["runs"][1]["device"], "cpu, 2 thread(s)");
        assert_eq!(v["runs"][1]["trials"], 3);
        assert!(printed.iter().any(|l| l.starts_with("cpu, 1 thread(s)")), "{printed:?}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
