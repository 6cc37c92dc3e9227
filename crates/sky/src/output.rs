//! Result files of an autocorrelation run (or job) and their merge.
//!
//! In the output directory:
//! * `counts.parquet` — one row per (cut, bin): cut, threshold, events in the cut, θ, N_obs,
//!   background mean and standard deviation, TS, trials, trials ≥ N_obs and the three p-values;
//! * `background.parquet` — the exact background distributions: (cut, bin, count, trials);
//! * `summary.json` — configuration, most significant bin (no timings: identical results give identical bytes);
//! * `run.json` — written by the CLI beside it: device, threads and timings of this run;
//! * `autocorr.png` — TS vs θ per cut and the trial distributions;
//! * `trials.parquet` — only in a batch job's directory: every trial's counts, from which
//!   `warpdrive merge` computes the post-trial p-value ([`JOB_TRIALS`]).
//!
//! A signal-injection run (`warpdrive sky inject`) writes `background.parquet` (as above),
//! `signal.parquet` — the injected trials' distributions (sources, cut, bin, count, trials) —,
//! `sensitivity.parquet` — one row per (sources, cut, bin): background median, mean, standard
//! deviation and 3σ/5σ thresholds, signal mean and standard deviation, and the fractions of
//! signal trials above the median and beyond the thresholds —, `summary.json` (settings,
//! sensitivity and discovery potentials) and `inject.png`.
//!
//! Both Parquet files carry the run description in their key/value metadata (`sky.*` keys);
//! `warpdrive merge` checks that jobs describe the same analysis and that their trial ranges
//! do not overlap, adds the background distributions and recomputes everything else, so the
//! merged files equal those of one run with all trials.

use crate::analysis::{analyse, most_significant, BinResult};
use crate::trials::Background;
use std::ops::Range;
use std::path::{Path, PathBuf};
use warpdrive_core::engine::{Error, ParamError};
use warpdrive_core::table::{read_parquet, Column, Table};
use warpdrive_core::InputError;

/// What describes a run besides its numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct RunInfo {
    /// Fingerprint of events, selection, cuts, bins and seed: equal for all jobs of one analysis.
    pub config: String,
    pub seed: u64,
    /// Trials of the full analysis (all jobs).
    pub total_trials: u64,
    /// Trial ranges this file holds (sorted, disjoint).
    pub trials: Vec<Range<u64>>,
    pub edges_deg: Vec<f64>,
    /// Cut labels ("all", "top 10%", …), thresholds (NaN for "all") and events per cut.
    pub cut_labels: Vec<String>,
    pub thresholds: Vec<f64>,
    pub cut_events: Vec<u64>,
    pub n_events: u64,
    /// Free-form description (files, region), carried into the metadata.
    pub description: String,
    /// Cumulative observed counts N[cut][bin].
    pub observed: Vec<u64>,
}

fn fmt_ranges(r: &[Range<u64>]) -> String {
    r.iter().map(|r| format!("{}..{}", r.start, r.end)).collect::<Vec<_>>().join(",")
}

fn parse_ranges(s: &str) -> Option<Vec<Range<u64>>> {
    if s.is_empty() {
        return Some(vec![]);
    }
    s.split(',')
        .map(|p| {
            let (a, b) = p.split_once("..")?;
            Some(a.parse().ok()?..b.parse().ok()?)
        })
        .collect()
}

impl RunInfo {
    pub(crate) fn metadata(&self, t: &mut Table, extra: &[(String, String)]) {
        t.meta("sky.config", &self.config);
        t.meta("sky.seed", self.seed.to_string());
        t.meta("sky.total_trials", self.total_trials.to_string());
        t.meta("sky.trials", fmt_ranges(&self.trials));
        t.meta("sky.n_events", self.n_events.to_string());
        t.meta("sky.cut_labels", self.cut_labels.join(";"));
        t.meta("sky.description", &self.description);
        for (k, v) in extra {
            t.meta(k, v.clone());
        }
    }

    /// Trials held.
    #[must_use]
    pub fn n_trials(&self) -> u64 {
        self.trials.iter().map(|r| r.end - r.start).sum()
    }
}

/// Write `counts.parquet` and `background.parquet` into `dir`; returns the analysed rows.
pub fn write_tables(dir: &Path, info: &RunInfo, bg: &Background, extra_meta: &[(String, String)]) -> Result<Vec<BinResult>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: cannot create: {e}", dir.display()))?;
    let (rows, t, b) = tables(info, bg, extra_meta);
    t.write_parquet(&dir.join("counts.parquet")).map_err(|e| e.to_string())?;
    b.write_parquet(&dir.join("background.parquet")).map_err(|e| e.to_string())?;
    Ok(rows)
}

/// A job's per-trial counts: `trials.parquet`, one row per (trial, cell) in trial order with
/// columns trial, cell (cut-major: cut × bins + bin) and count. Written by the jobs of a split
/// run whose trials × cells fit [`crate::trials::KEEP_CELLS`], so that `warpdrive merge`
/// computes the post-trial p-value as the unsplit run does; a merged or unsplit run has none.
pub const JOB_TRIALS: &str = "trials.parquet";

/// Write [`JOB_TRIALS`] of a job into `dir`.
pub fn write_job_trials(dir: &Path, info: &RunInfo, bg: &Background, extra_meta: &[(String, String)]) -> Result<(), String> {
    let cells = bg.freq.len();
    let trials: Vec<u64> = info.trials.iter().flat_map(Clone::clone).collect();
    if trials.len() != bg.kept.len() {
        return Err(format!("{} trials held, {} kept", trials.len(), bg.kept.len()));
    }
    let mut t = Table::default();
    t.push(
        "trial",
        Column::I64(trials.iter().flat_map(|&k| std::iter::repeat_n(k as i64, cells)).collect()),
    );
    t.push("cell", Column::I32(trials.iter().flat_map(|_| 0..cells as i32).collect()));
    t.push("count", Column::I64(bg.kept.iter().flatten().map(|&c| c as i64).collect()));
    info.metadata(&mut t, extra_meta);
    t.write_parquet(&dir.join(JOB_TRIALS)).map_err(|e| e.to_string())
}

/// Every trial's counts, in trial order, from the jobs' [`JOB_TRIALS`] files; `None` when a
/// job has none (the analysis keeps no per-trial counts) or the merged trials exceed
/// [`crate::trials::KEEP_CELLS`]. `info` is the merged description ([`merge`]).
pub fn read_job_trials(dirs: &[PathBuf], info: &RunInfo) -> Result<Option<Vec<Vec<u64>>>, InputError> {
    let cells = info.observed.len();
    if dirs.iter().any(|d| !d.join(JOB_TRIALS).is_file()) || info.n_trials().saturating_mul(cells as u64) > crate::trials::KEEP_CELLS {
        return Ok(None);
    }
    let mut all: Vec<(u64, Vec<u64>)> = Vec::with_capacity(info.n_trials() as usize);
    for d in dirs {
        let p = d.join(JOB_TRIALS);
        let t = read_parquet(&p)?;
        let meta = |k: &str| t.metadata.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
        let bad = |what: String| InputError::new(&p, 0, what);
        if meta("sky.config") != Some(info.config.as_str()) {
            return Err(bad("from another analysis than the job's counts (sky.config)".into()));
        }
        let ranges = meta("sky.trials")
            .and_then(parse_ranges)
            .ok_or_else(|| bad("metadata 'sky.trials' missing or malformed".into()))?;
        let col = |name: &str| t.columns.iter().find(|(n, _)| n == name).map(|(_, c)| c);
        let (Some(Column::I64(trial)), Some(Column::I32(cell)), Some(Column::I64(count))) = (col("trial"), col("cell"), col("count"))
        else {
            return Err(bad("columns trial (int64), cell (int32) and count (int64) expected".into()));
        };
        let held: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        if trial.len() as u64 != held.saturating_mul(cells as u64) || cell.len() != trial.len() || count.len() != trial.len() {
            return Err(bad(format!("{} rows, but {held} trials × {cells} cells", trial.len())));
        }
        for (j, k) in ranges.iter().flat_map(Clone::clone).enumerate() {
            let rows = j * cells..(j + 1) * cells;
            let in_order = rows
                .clone()
                .all(|r| trial[r] == k as i64 && cell[r] == (r - j * cells) as i32 && count[r] >= 0);
            if !in_order {
                return Err(bad(format!(
                    "rows {}..{} are not trial {k}'s cells 0..{cells} in order",
                    rows.start + 1,
                    rows.end + 1
                )));
            }
            all.push((k, count[rows].iter().map(|&c| c as u64).collect()));
        }
    }
    all.sort_by_key(|(k, _)| *k);
    let expected: Vec<u64> = info.trials.iter().flat_map(Clone::clone).collect();
    if all.len() != expected.len() || all.iter().zip(&expected).any(|((k, _), e)| k != e) {
        return Err(InputError::new(
            &dirs[0],
            0,
            "the jobs' trials.parquet files do not hold the merged trials",
        ));
    }
    Ok(Some(all.into_iter().map(|(_, c)| c).collect()))
}

/// The analysis rows and the two tables `write_tables` writes (`counts`, `background`).
#[must_use]
pub fn tables(info: &RunInfo, bg: &Background, extra_meta: &[(String, String)]) -> (Vec<BinResult>, Table, Table) {
    let rows = analyse(&info.edges_deg, &info.observed, bg);
    let mut t = Table::default();
    let nb = info.edges_deg.len();
    t.push("cut", Column::I32(rows.iter().map(|r| r.cut as i32).collect()));
    t.push("threshold", Column::F64(rows.iter().map(|r| info.thresholds[r.cut]).collect()));
    t.push("events", Column::I64(rows.iter().map(|r| info.cut_events[r.cut] as i64).collect()));
    t.push("bin", Column::I32(rows.iter().map(|r| r.bin as i32).collect()));
    t.push("theta_deg", Column::F64(rows.iter().map(|r| r.theta_deg).collect()));
    t.push("n_obs", Column::I64(rows.iter().map(|r| r.n_obs as i64).collect()));
    t.push("bg_mean", Column::F64(rows.iter().map(|r| r.bg_mean).collect()));
    t.push("bg_std", Column::F64(rows.iter().map(|r| r.bg_std).collect()));
    t.push("ts", Column::F64(rows.iter().map(|r| r.ts).collect()));
    t.push("n_trials", Column::I64(rows.iter().map(|r| r.n_trials as i64).collect()));
    t.push("n_beyond", Column::I64(rows.iter().map(|r| r.n_beyond as i64).collect()));
    t.push("p_trials", Column::F64(rows.iter().map(|r| r.p_trials).collect()));
    t.push("p_gauss", Column::F64(rows.iter().map(|r| r.p_gauss).collect()));
    t.push("p_gamma", Column::F64(rows.iter().map(|r| r.p_gamma).collect()));
    info.metadata(&mut t, extra_meta);

    let (mut cut, mut bin, mut count, mut trials) = (vec![], vec![], vec![], vec![]);
    for (k, m) in bg.freq.iter().enumerate() {
        for (&c, &n) in m {
            cut.push((k / nb) as i32);
            bin.push((k % nb) as i32);
            count.push(c as i64);
            trials.push(n as i64);
        }
    }
    let mut b = Table::default();
    b.push("cut", Column::I32(cut));
    b.push("bin", Column::I32(bin));
    b.push("count", Column::I64(count));
    b.push("trials", Column::I64(trials));
    info.metadata(&mut b, extra_meta);
    (rows, t, b)
}

/// Read a run's (or job's) description, observed counts and background back from `dir`.
pub fn read_run(dir: &Path) -> Result<(RunInfo, Background), InputError> {
    let cp = dir.join("counts.parquet");
    let bp = dir.join("background.parquet");
    let counts = read_parquet(&cp)?;
    let back = read_parquet(&bp)?;
    let meta = |t: &Table, p: &Path, k: &str| -> Result<String, InputError> {
        t.metadata
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
            .ok_or_else(|| InputError::new(p, 0, format!("metadata key '{k}' missing (not a warpdrive sky output?)")))
    };
    let col = |t: &Table, p: &Path, name: &str| -> Result<Column, InputError> {
        t.columns
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| c.clone())
            .ok_or_else(|| InputError::new(p, 0, format!("column '{name}' missing")))
    };
    let bad = |p: &Path, what: &str| InputError::new(p, 0, what);
    for k in ["sky.config", "sky.trials"] {
        if meta(&counts, &cp, k)? != meta(&back, &bp, k)? {
            return Err(InputError::new(
                dir,
                0,
                format!("counts.parquet and background.parquet are from different runs ({k})"),
            ));
        }
    }
    let (Column::I32(cut), Column::I32(bin), Column::F64(theta), Column::I64(n_obs), Column::F64(thr), Column::I64(ev)) = (
        col(&counts, &cp, "cut")?,
        col(&counts, &cp, "bin")?,
        col(&counts, &cp, "theta_deg")?,
        col(&counts, &cp, "n_obs")?,
        col(&counts, &cp, "threshold")?,
        col(&counts, &cp, "events")?,
    ) else {
        return Err(bad(&cp, "unexpected column types"));
    };
    let nb = bin.iter().map(|&b| b as usize + 1).max().unwrap_or(0);
    let nc = cut.iter().map(|&c| c as usize + 1).max().unwrap_or(0);
    if nb * nc != cut.len() || nb == 0 {
        return Err(bad(&cp, "rows do not form a cut × bin grid"));
    }
    let labels: Vec<String> = meta(&counts, &cp, "sky.cut_labels")?.split(';').map(str::to_string).collect();
    if labels.len() != nc {
        return Err(bad(&cp, "cut labels do not match the cut column"));
    }
    let num = |k: &str| -> Result<u64, InputError> {
        meta(&counts, &cp, k)?
            .parse()
            .map_err(|_| bad(&cp, &format!("metadata '{k}' is not a number")))
    };
    let info = RunInfo {
        config: meta(&counts, &cp, "sky.config")?,
        seed: num("sky.seed")?,
        total_trials: num("sky.total_trials")?,
        trials: parse_ranges(&meta(&counts, &cp, "sky.trials")?).ok_or_else(|| bad(&cp, "metadata 'sky.trials' is malformed"))?,
        edges_deg: theta[..nb].to_vec(),
        cut_labels: labels,
        thresholds: (0..nc).map(|c| thr[c * nb]).collect(),
        cut_events: (0..nc).map(|c| ev[c * nb] as u64).collect(),
        n_events: num("sky.n_events")?,
        description: meta(&counts, &cp, "sky.description")?,
        observed: n_obs.iter().map(|&x| x as u64).collect(),
    };
    let (Column::I32(bc), Column::I32(bb), Column::I64(bn), Column::I64(bt)) = (
        col(&back, &bp, "cut")?,
        col(&back, &bp, "bin")?,
        col(&back, &bp, "count")?,
        col(&back, &bp, "trials")?,
    ) else {
        return Err(bad(&bp, "unexpected column types"));
    };
    let mut bg = Background::new(nc * nb);
    for r in 0..bc.len() {
        let (c, b) = (bc[r] as usize, bb[r] as usize);
        if c >= nc || b >= nb || bn[r] < 0 || bt[r] <= 0 {
            return Err(bad(&bp, &format!("row {} is out of range", r + 1)));
        }
        *bg.freq[c * nb + b].entry(bn[r] as u64).or_insert(0) += bt[r] as u64;
    }
    bg.trials = info.n_trials();
    if bg.freq.iter().any(|m| m.values().sum::<u64>() != bg.trials) {
        return Err(bad(&bp, "trial counts do not add up to the trials in the metadata"));
    }
    Ok((info, bg))
}

/// Merge job outputs into one run; `partial` allows trial ranges that do not cover all trials.
pub fn merge(dirs: &[PathBuf], partial: bool) -> Result<(RunInfo, Background), Error> {
    let mut it = dirs.iter();
    let first = it
        .next()
        .ok_or_else(|| ParamError::new("job_dirs", "is empty: give the job directories to merge"))?;
    let (mut info, mut bg) = read_run(first)?;
    for d in it {
        let (i, b) = read_run(d)?;
        if i.config != info.config || i.observed != info.observed || i.edges_deg != info.edges_deg {
            return Err(InputError::new(
                d,
                0,
                format!(
                    "a different analysis than {} (events, selection, cuts, bins or seed differ)",
                    first.display()
                ),
            )
            .into());
        }
        for r in &i.trials {
            if let Some(o) = info.trials.iter().find(|o| o.start < r.end && r.start < o.end) {
                return Err(InputError::new(
                    d,
                    0,
                    format!("trials {}..{} overlap trials {}..{} of another job", r.start, r.end, o.start, o.end),
                )
                .into());
            }
        }
        info.trials.extend(i.trials.iter().cloned());
        bg.merge(&b);
    }
    info.trials.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<u64>> = Vec::new();
    for r in info.trials.drain(..) {
        match merged.last_mut() {
            Some(last) if last.end == r.start => last.end = r.end,
            _ => merged.push(r),
        }
    }
    info.trials = merged;
    let complete = info.trials.len() == 1 && info.trials[0] == (0..info.total_trials);
    if !partial && !complete {
        return Err(ParamError::new(
            "partial",
            format!(
                "not given, but the jobs hold trials {} of 0..{}: give it to merge an incomplete set",
                fmt_ranges(&info.trials),
                info.total_trials
            ),
        )
        .into());
    }
    Ok((info, bg))
}
/// `summary.json`: the run's configuration and the most significant bin (no machine-dependent facts).
#[must_use]
pub fn summary_json(info: &RunInfo, rows: &[BinResult], post: Option<&crate::analysis::PostTrial>, extra: serde_json::Value) -> String {
    let cuts: Vec<serde_json::Value> = (0..info.cut_labels.len())
        .map(|c| {
            serde_json::json!({
                "label": info.cut_labels[c],
                "threshold": if info.thresholds[c].is_finite() { serde_json::json!(info.thresholds[c]) } else { serde_json::Value::Null },
                "events": info.cut_events[c],
            })
        })
        .collect();
    let best = most_significant(rows).map(|r| {
        serde_json::json!({
            "cut": info.cut_labels[r.cut], "theta_deg": r.theta_deg, "n_obs": r.n_obs,
            "bg_mean": r.bg_mean, "bg_std": r.bg_std, "ts": r.ts, "n_beyond": r.n_beyond,
            "n_trials": r.n_trials, "p_trials": r.p_trials, "p_gauss": r.p_gauss, "p_gamma": r.p_gamma,
        })
    });
    let finite = |x: f64| {
        if x.is_finite() {
            serde_json::json!(x)
        } else {
            serde_json::Value::Null
        }
    };
    let ts: Vec<Vec<serde_json::Value>> = (0..info.cut_labels.len())
        .map(|c| rows.iter().filter(|r| r.cut == c).map(|r| finite(r.ts)).collect())
        .collect();
    let v = serde_json::json!({
        "description": info.description,
        "events": info.n_events,
        "seed": info.seed,
        "config": info.config,
        "bins_deg": info.edges_deg,
        "cuts": cuts,
        "trials": { "total": info.total_trials, "held": info.n_trials(), "ranges": fmt_ranges(&info.trials) },
        "ts": ts,
        "most_significant": best,
        "post_trial": post.map(|p| serde_json::json!({
            "p": p.p, "n_beyond": p.n_beyond, "trials": p.trials, "smallest_local_p_observed": p.p_min_observed,
        })),
        "run": extra,
    });
    serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
}

/// Write `signal.parquet` and `sensitivity.parquet` of an injection run into `dir` (module
/// docs; `counts.parquet` and `background.parquet` are [`write_tables`]').
pub fn write_injection(
    dir: &Path,
    r: &crate::engine::InjectResult,
    rows: &[crate::sensitivity::Row],
    extra_meta: &[(String, String)],
) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: cannot create: {e}", dir.display()))?;
    let (signal, sensitivity) = injection_tables(r, rows, extra_meta);
    signal.write_parquet(&dir.join("signal.parquet")).map_err(|e| e.to_string())?;
    sensitivity
        .write_parquet(&dir.join("sensitivity.parquet"))
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// The tables of `signal.parquet` and `sensitivity.parquet` (also Python's `Injection.signal`
/// and `.sensitivity`).
pub fn injection_tables(
    r: &crate::engine::InjectResult,
    rows: &[crate::sensitivity::Row],
    extra_meta: &[(String, String)],
) -> (Table, Table) {
    let nb = r.info.edges_deg.len();
    let (mut src, mut cut, mut bin, mut count, mut trials) = (vec![], vec![], vec![], vec![], vec![]);
    for (&n, sig) in r.sources.iter().zip(&r.signal) {
        for (k, m) in sig.freq.iter().enumerate() {
            for (&c, &t) in m {
                src.push(n as i64);
                cut.push((k / nb) as i32);
                bin.push((k % nb) as i32);
                count.push(c as i64);
                trials.push(t as i64);
            }
        }
    }
    let mut t = Table::default();
    t.push("sources", Column::I64(src));
    t.push("cut", Column::I32(cut));
    t.push("bin", Column::I32(bin));
    t.push("count", Column::I64(count));
    t.push("trials", Column::I64(trials));
    r.info.metadata(&mut t, extra_meta);
    t.meta("sky.n_bins", nb.to_string());
    let signal = t;
    let mut t = Table::default();
    let f = |g: fn(&crate::sensitivity::Row) -> f64| Column::F64(rows.iter().map(g).collect());
    t.push("sources", Column::I64(rows.iter().map(|x| x.sources as i64).collect()));
    t.push("events_per_source", Column::I64(rows.iter().map(|_| r.per_source as i64).collect()));
    t.push("cut", Column::I32(rows.iter().map(|x| x.cut as i32).collect()));
    t.push("bin", Column::I32(rows.iter().map(|x| x.bin as i32).collect()));
    t.push("theta_deg", f(|x| x.theta_deg));
    t.push("bg_mean", f(|x| x.bg_mean));
    t.push("bg_std", f(|x| x.bg_std));
    t.push("bg_median", Column::I64(rows.iter().map(|x| x.bg_median as i64).collect()));
    t.push("threshold_3sigma", f(|x| x.threshold_3sigma.count));
    t.push("threshold_5sigma", f(|x| x.threshold_5sigma.count));
    t.push(
        "threshold_from_trials",
        Column::I32(rows.iter().map(|x| i32::from(x.threshold_5sigma.from_trials)).collect()),
    );
    t.push("signal_trials", Column::I64(rows.iter().map(|x| x.signal_trials as i64).collect()));
    t.push("signal_mean", f(|x| x.signal_mean));
    t.push("signal_std", f(|x| x.signal_std));
    t.push("frac_above_median", f(|x| x.frac_median));
    t.push("frac_3sigma", f(|x| x.frac_3sigma));
    t.push("frac_5sigma", f(|x| x.frac_5sigma));
    r.info.metadata(&mut t, extra_meta);
    (signal, t)
}

/// What an injection's files record about it (`sky.inject.*` metadata): merged jobs must agree.
#[derive(Clone, Debug, PartialEq)]
pub struct InjectionSet {
    pub sources: Vec<u64>,
    pub per_source: u64,
    pub band: crate::inject::DecBand,
    pub spectrum: f64,
    pub energy_threshold: f64,
    pub tail_events: u64,
    pub dec_grid: Option<f64>,
}

impl InjectionSet {
    /// The `sky.inject.*` key/value metadata (numbers in Rust's shortest round-trip form).
    #[must_use]
    pub fn metadata(&self) -> Vec<(String, String)> {
        let kv = |k: &str, v: String| (format!("sky.inject.{k}"), v);
        vec![
            kv("sources", self.sources.iter().map(u64::to_string).collect::<Vec<_>>().join(",")),
            kv("events_per_source", self.per_source.to_string()),
            kv("declination", format!("{}:{}", self.band.lo, self.band.hi)),
            kv("spectrum", self.spectrum.to_string()),
            kv("energy_threshold", self.energy_threshold.to_string()),
            kv("tail_events", self.tail_events.to_string()),
            kv("dec_grid", self.dec_grid.map_or(String::new(), |g| g.to_string())),
        ]
    }

    fn from_table(t: &Table, p: &Path) -> Result<Self, InputError> {
        let get = |k: &str| -> Result<String, InputError> {
            t.meta_value(&format!("sky.inject.{k}")).map(str::to_string).ok_or_else(|| {
                InputError::new(
                    p,
                    0,
                    format!("metadata key 'sky.inject.{k}' missing (not a warpdrive sky inject output?)"),
                )
            })
        };
        let bad = |k: &str| InputError::new(p, 0, format!("metadata 'sky.inject.{k}' is malformed"));
        let num = |k: &str| -> Result<f64, InputError> { get(k)?.parse().map_err(|_| bad(k)) };
        let int = |k: &str| -> Result<u64, InputError> { get(k)?.parse().map_err(|_| bad(k)) };
        let sources = get("sources")?
            .split(',')
            .map(|v| v.parse::<u64>().map_err(|_| bad("sources")))
            .collect::<Result<Vec<_>, _>>()?;
        let dec = get("declination")?;
        let (lo, hi) = dec.split_once(':').ok_or_else(|| bad("declination"))?;
        let grid = get("dec_grid")?;
        Ok(Self {
            sources,
            per_source: int("events_per_source")?,
            band: crate::inject::DecBand {
                lo: lo.parse().map_err(|_| bad("declination"))?,
                hi: hi.parse().map_err(|_| bad("declination"))?,
            },
            spectrum: num("spectrum")?,
            energy_threshold: num("energy_threshold")?,
            tail_events: int("tail_events")?,
            dec_grid: if grid.is_empty() {
                None
            } else {
                Some(grid.parse().map_err(|_| bad("dec_grid"))?)
            },
        })
    }
}

/// Whether `dir` holds an injection run's output.
#[must_use]
pub fn is_injection(dir: &Path) -> bool {
    dir.join("signal.parquet").exists()
}

/// Read an injection job's `signal.parquet`: its settings and one distribution per strength
/// (`cells` cells each), every row checked.
pub fn read_signal(dir: &Path, cells: usize) -> Result<(InjectionSet, Vec<Background>), InputError> {
    let p = dir.join("signal.parquet");
    let t = read_parquet(&p)?;
    let set = InjectionSet::from_table(&t, &p)?;
    let trials = t
        .meta_value("sky.trials")
        .and_then(parse_ranges)
        .ok_or_else(|| InputError::new(&p, 0, "metadata 'sky.trials' missing or malformed"))?;
    let n_trials: u64 = trials.iter().map(|r| r.end - r.start).sum();
    let col = |name: &str| {
        t.columns
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| c.clone())
            .ok_or_else(|| InputError::new(&p, 0, format!("column '{name}' missing")))
    };
    let (Column::I64(src), Column::I32(cut), Column::I32(bin), Column::I64(count), Column::I64(tr)) =
        (col("sources")?, col("cut")?, col("bin")?, col("count")?, col("trials")?)
    else {
        return Err(InputError::new(&p, 0, "unexpected column types"));
    };
    let nb = t
        .meta_value("sky.n_bins")
        .and_then(|v| v.parse::<usize>().ok())
        .ok_or_else(|| InputError::new(&p, 0, "metadata 'sky.n_bins' missing or malformed"))?;
    let mut sig: Vec<Background> = set.sources.iter().map(|_| Background::new(cells)).collect();
    for r in 0..src.len() {
        let s = set.sources.iter().position(|&n| n as i64 == src[r]);
        let k = cut[r] as usize * nb + bin[r] as usize;
        match s {
            Some(s) if cut[r] >= 0 && bin[r] >= 0 && (bin[r] as usize) < nb && k < cells && count[r] >= 0 && tr[r] > 0 => {
                *sig[s].freq[k].entry(count[r] as u64).or_insert(0) += tr[r] as u64;
            }
            _ => return Err(InputError::new(&p, 0, format!("row {} is out of range", r + 1))),
        }
    }
    for b in &mut sig {
        b.trials = n_trials;
        if b.freq.iter().any(|m| m.values().sum::<u64>() != n_trials) {
            return Err(InputError::new(&p, 0, "trial counts do not add up to the trials in the metadata"));
        }
    }
    Ok((set, sig))
}

/// `summary.json` of an injection run: settings, per strength the cell with the largest
/// fraction beyond 5σ, and the sensitivity and discovery potentials (best cell of each).
#[must_use]
pub fn injection_json(r: &crate::engine::InjectResult, scan: &crate::sensitivity::Scan) -> String {
    let nb = r.info.edges_deg.len();
    let cells = r.info.cut_labels.len() * nb;
    let rows = r.rows();
    let cell = |k: usize| serde_json::json!({ "cut": r.info.cut_labels[k / nb], "theta_deg": r.info.edges_deg[k % nb] });
    // The best cell of one target: its interpolated strength, or "below the scan" (the first
    // strength already reaches it); null when no cell reaches it within the scan.
    let crossing = |c: Option<crate::sensitivity::CellScan>, g: fn(&crate::sensitivity::CellScan) -> crate::sensitivity::Reach| {
        c.map(|c| match g(&c) {
            crate::sensitivity::Reach::At(x) => serde_json::json!({
                "cell": cell(c.cell),
                "sources": x.strength,
                "sources_error": x.error,
                "signal_events": x.strength * r.per_source as f64,
            }),
            _ => serde_json::json!({
                "cell": cell(c.cell),
                "below_scan": true,
                "sources_below": r.sources.first(),
            }),
        })
    };
    let strengths: Vec<serde_json::Value> = r
        .sources
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let rs = &rows[i * cells..(i + 1) * cells];
            let best = rs
                .iter()
                .enumerate()
                .max_by(|a, b| a.1.frac_5sigma.total_cmp(&b.1.frac_5sigma).then(b.0.cmp(&a.0)))
                .map(|(k, x)| {
                    serde_json::json!({
                        "cell": cell(k), "frac_5sigma": x.frac_5sigma, "frac_3sigma": x.frac_3sigma,
                        "frac_above_median": x.frac_median, "threshold_5sigma": x.threshold_5sigma.count,
                        "threshold_from_trials": x.threshold_5sigma.from_trials,
                        "signal_mean": x.signal_mean, "bg_mean": x.bg_mean, "bg_std": x.bg_std,
                    })
                });
            serde_json::json!({ "sources": n, "signal_events": n * r.per_source, "trials": r.signal[i].trials, "best_5sigma": best })
        })
        .collect();
    let v = serde_json::json!({
        "description": r.info.description,
        "injection": r.description(),
        "events": r.info.n_events,
        "seed": r.info.seed,
        "config": r.info.config,
        "bins_deg": r.info.edges_deg,
        "cuts": r.info.cut_labels,
        "events_per_source": r.per_source,
        "declination": [r.band.lo, r.band.hi],
        "spectrum": r.spectrum,
        "energy_threshold": r.energy_threshold,
        "tail_events": r.tail_events,
        "dec_grid_deg": r.dec_grid,
        "background_trials": r.bg.trials,
        "strengths": strengths,
        "sensitivity": crossing(scan.best_sensitivity, |c| c.sensitivity),
        "discovery_3sigma": crossing(scan.best_discovery_3sigma, |c| c.discovery_3sigma),
        "discovery_5sigma": crossing(scan.best_discovery_5sigma, |c| c.discovery_5sigma),
    });
    serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_round_trip() {
        let r = vec![0..5, 7..9];
        assert_eq!(parse_ranges(&fmt_ranges(&r)), Some(r));
        assert_eq!(parse_ranges(""), Some(vec![]));
        assert_eq!(parse_ranges("1-2"), None);
    }
}
