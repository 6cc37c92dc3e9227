//! The sky runs as library calls (DESIGN.md §2, `warpdrive_core::engine`): [`Autocorr`] is a
//! validated request built from typed values, [`Autocorr::run`] computes it under a
//! [`Control`], and [`AutocorrResult::save`] writes the output directory with the output
//! discipline. `warpdrive sky autocorr`, `warpdrive merge` and `warpdrive.sky.autocorr` are thin
//! translations of their arguments into these calls.

use crate::analysis::{self, BinResult, PostTrial};
use crate::bins::AngularBins;
use crate::cuts::{EnergyCut, Region};
use crate::events::{ColumnNames, Event};
use crate::inject::DecBand;
use crate::output::{self, RunInfo};
use crate::trials::Background;
use crate::{Backend, Settings};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Instant;
use warpdrive_core::engine::{Control, Error, ParamError, Result};
use warpdrive_core::output::Staged;
use warpdrive_core::InputError;

/// Where the events come from.
#[derive(Clone, Debug)]
pub enum Events {
    /// IceCube text releases, CSV or Parquet files, analysed together in the order given.
    Files { paths: Vec<PathBuf>, columns: ColumnNames },
    /// Right ascension and declination [deg] and an energy proxy per event (`None`: no energy,
    /// so only the cut "all" is possible).
    Arrays {
        ra: Vec<f64>,
        dec: Vec<f64>,
        energy: Option<Vec<f64>>,
        /// Angular errors [deg] (needed by signal injection only).
        ang_err: Option<Vec<f64>>,
    },
    /// A generated isotropic sky of this many events (drawn from the run's seed).
    Synthetic(usize),
}

/// `--hemisphere` / `hemisphere=`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Hemisphere {
    #[default]
    All,
    North,
    South,
}

impl FromStr for Hemisphere {
    type Err = ParamError;
    fn from_str(s: &str) -> Result<Self, ParamError> {
        match s {
            "all" => Ok(Self::All),
            "north" => Ok(Self::North),
            "south" => Ok(Self::South),
            _ => Err(ParamError::new("hemisphere", format!("'{s}': expected all, north or south"))),
        }
    }
}

/// `--ra-grid` / `ra_grid=`: rounding of scrambled right ascensions.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum RaGrid {
    /// The grid the selected events' right ascensions lie on, if any.
    #[default]
    Auto,
    /// Continuous right ascensions.
    Off,
    /// A step in degrees that divides 360°.
    Step(f64),
}

impl FromStr for RaGrid {
    type Err = ParamError;
    fn from_str(s: &str) -> Result<Self, ParamError> {
        match s {
            "auto" => Ok(Self::Auto),
            "off" => Ok(Self::Off),
            v => v
                .parse::<f64>()
                .ok()
                .filter(|q| *q > 0.0 && q.is_finite())
                .map(Self::Step)
                .ok_or_else(|| ParamError::new("ra_grid", format!("{v}: expected auto, off or a positive step in degrees"))),
        }
    }
}

/// An energy cut as the user writes it (`top:0.01`, `1%`, a threshold), for front ends.
pub fn parse_cut(s: &str) -> Result<EnergyCut, ParamError> {
    EnergyCut::parse(s).map_err(|m| ParamError::new("cuts", format!(": {m}")))
}

/// The angular bins: `n` uniform bins of `width` degrees, or explicit upper edges [deg].
#[derive(Clone, Debug, PartialEq)]
pub enum Bins {
    Uniform { n: usize, width: f64 },
    Edges(Vec<f64>),
}

/// The options of one autocorrelation run; `Default` is the command line's defaults.
#[derive(Clone, Debug)]
pub struct AutocorrOptions {
    pub hemisphere: Hemisphere,
    /// Keep only events with declination ≥ this [deg].
    pub dec_min: Option<f64>,
    /// Keep only events with declination ≤ this [deg].
    pub dec_max: Option<f64>,
    /// Nested energy cuts besides "all".
    pub cuts: Vec<EnergyCut>,
    pub bins: Bins,
    /// Scrambled trials of the whole analysis (all jobs).
    pub trials: u64,
    pub seed: u64,
    /// Batch jobs the trials are split into, and the one this run computes.
    pub jobs: u64,
    pub job_index: u64,
    pub ra_grid: RaGrid,
}

impl Default for AutocorrOptions {
    fn default() -> Self {
        Self {
            hemisphere: Hemisphere::All,
            dec_min: None,
            dec_max: None,
            cuts: crate::cuts::default_cuts(),
            bins: Bins::Uniform { n: 20, width: 0.25 },
            trials: 1000,
            seed: 1,
            jobs: 1,
            job_index: 0,
            ra_grid: RaGrid::Auto,
        }
    }
}

/// The most trials one run accepts (2⁴⁰ ≈ 10¹²: about 30 years of one H100).
pub const MAX_TRIALS: u64 = 1 << 40;

/// A validated two-point autocorrelation run.
#[derive(Clone, Debug)]
pub struct Autocorr {
    events: Vec<Event>,
    settings: Settings,
    inputs: Vec<PathBuf>,
    jobs: u64,
    job_index: u64,
    notes: Vec<String>,
}

fn region(o: &AutocorrOptions) -> Result<Region, ParamError> {
    let name = match o.hemisphere {
        Hemisphere::All => "all",
        Hemisphere::North => "north",
        Hemisphere::South => "south",
    };
    let mut r = Region::hemisphere(name).map_err(|m| ParamError::new("hemisphere", m))?;
    for (param, v) in [("dec_min", o.dec_min), ("dec_max", o.dec_max)] {
        if let Some(v) = v {
            if !(-90.0..=90.0).contains(&v) {
                return Err(ParamError::new(param, format!("{v}°: must be in [-90, 90]")));
            }
        }
    }
    if let Some(v) = o.dec_min {
        r.dec_min = r.dec_min.max(v);
    }
    if let Some(v) = o.dec_max {
        r.dec_max = r.dec_max.min(v);
    }
    if r.dec_min > r.dec_max {
        return Err(ParamError::new(
            "dec_min",
            format!("{}° and {{dec_max}} {}° leave an empty declination range", r.dec_min, r.dec_max),
        ));
    }
    Ok(r)
}

fn bins(b: &Bins) -> Result<AngularBins, ParamError> {
    match b {
        Bins::Uniform { n, width } => {
            if *n == 0 {
                return Err(ParamError::new("bins", "must be at least 1"));
            }
            if !(width.is_finite() && *width > 0.0) {
                return Err(ParamError::new(
                    "bin_width",
                    format!("{width}: must be a positive number of degrees"),
                ));
            }
            AngularBins::uniform(*n, *width).map_err(|m| ParamError::new("bin_width", format!("{width}: {m}")))
        }
        Bins::Edges(e) => AngularBins::new(e.clone()).map_err(|m| ParamError::new("edges", format!(": {m}"))),
    }
}

impl Autocorr {
    /// Read and check the events and every option; nothing runs yet.
    pub fn new(events: Events, o: &AutocorrOptions) -> Result<Self> {
        if o.trials > MAX_TRIALS {
            return Err(ParamError::new("trials", format!("{}: at most {MAX_TRIALS}", o.trials)).into());
        }
        if o.jobs == 0 {
            return Err(ParamError::new("jobs", "must be at least 1").into());
        }
        if o.job_index >= o.jobs {
            return Err(ParamError::new("job_index", format!("{} must be below {{jobs}} {}", o.job_index, o.jobs)).into());
        }
        let region = region(o)?;
        let bins = bins(&o.bins)?;
        let mut notes = Vec::new();
        let mut inputs = Vec::new();
        let (events, source, cuts) = match events {
            Events::Synthetic(n) => {
                if n < 2 {
                    return Err(ParamError::new("synthetic_events", "must be at least 2").into());
                }
                warpdrive_core::limits::check_alloc(
                    "synthetic_events",
                    n as u64,
                    3 * std::mem::size_of::<Event>() as u64,
                    "generate fewer events",
                )?;
                notes.push(format!("events: none given; using a generated isotropic sky of {n} events"));
                (
                    crate::events::synthetic(n, o.seed),
                    format!("synthetic isotropic sky, {n} events, seed {}", o.seed),
                    o.cuts.clone(),
                )
            }
            Events::Files { paths, columns } => {
                if paths.is_empty() {
                    return Err(Error::Failed("no event files given".into()));
                }
                let ev = crate::events::read_all(&paths, &columns)?;
                let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
                inputs = paths;
                (ev, names.join(" + "), o.cuts.clone())
            }
            Events::Arrays { ra, dec, energy, ang_err } => {
                let label = Path::new("<arrays>");
                let (energy, cuts) = match energy {
                    Some(e) => (e, o.cuts.clone()),
                    None if o.cuts.is_empty() => (vec![0.0; ra.len()], Vec::new()),
                    None => {
                        return Err(ParamError::new("cuts", "need energies ({energy}); pass cuts=[] to analyse all events only").into())
                    }
                };
                let mut ev = crate::events::from_arrays(label, &ra, &dec, &energy)?;
                if let Some(err) = ang_err {
                    crate::events::set_ang_err(label, &mut ev, &err)?;
                }
                let n = ev.len();
                (ev, format!("arrays, {n} events"), cuts)
            }
        };
        warpdrive_core::limits::check_alloc("the events", events.len() as u64, 96, "analyse fewer events")?;
        let (ra_grid_deg, detected) = match o.ra_grid {
            RaGrid::Off => (None, false),
            RaGrid::Step(q) => {
                let n = 360.0 / q;
                if (n - n.round()).abs() > 1e-9 || n.round() > f64::from(u32::MAX) {
                    return Err(ParamError::new("ra_grid", format!("{q}°: the step must divide 360° into a whole number of steps")).into());
                }
                (Some(q), false)
            }
            RaGrid::Auto => {
                let ra: Vec<f64> = events.iter().filter(|e| region.contains(e)).map(|e| e.ra).collect();
                let g = crate::sample::detect_ra_grid(&ra);
                (g, g.is_some())
            }
        };
        if let (Some(q), true) = (ra_grid_deg, detected) {
            notes.push(format!(
                "RA grid: every right ascension is a multiple of {q}°; scrambled ones are rounded to it too (an RA grid of `off` keeps them continuous)"
            ));
        }
        let range = crate::job_range(o.trials, o.jobs, o.job_index).map_err(Error::Failed)?;
        let description = format!(
            "{source}; declination {}° to {}°; scrambled RA {}",
            region.dec_min,
            region.dec_max,
            ra_grid_deg.map_or("continuous".to_string(), |q| format!("on a {q}° grid"))
        );
        Ok(Self {
            events,
            settings: Settings {
                region,
                cuts,
                bins,
                seed: o.seed,
                total_trials: o.trials,
                trials: range,
                description,
                ra_grid_deg,
            },
            inputs,
            jobs: o.jobs,
            job_index: o.job_index,
            notes,
        })
    }

    /// The files the run reads (outputs must not replace or contain them).
    pub fn inputs(&self) -> &[PathBuf] {
        &self.inputs
    }

    /// Events read (before the region and cuts select).
    pub fn events(&self) -> usize {
        self.events.len()
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Count the observed sky and run this job's trials on the control's device and threads.
    /// Returns [`Error::Cancelled`] when the token is raised (within one trial on the CPU, one
    /// batch on a GPU).
    pub fn run(&self, ctl: &Control) -> Result<AutocorrResult> {
        let st = &self.settings;
        for n in &self.notes {
            ctl.note(n);
        }
        let gpus = ctl.gpus()?;
        ctl.install(|| {
            let t0 = Instant::now();
            let (sample, info) = crate::prepare(&self.events, st).map_err(Error::Failed)?;
            ctl.check()?;
            let observed_s = t0.elapsed().as_secs_f64();
            let (backend, device) = match &gpus {
                None => (Backend::Cpu, format!("cpu ({} threads)", rayon::current_num_threads())),
                Some(d) => (
                    Backend::Cuda(d.clone()),
                    d.iter().map(|i| format!("cuda:{i}")).collect::<Vec<_>>().join(","),
                ),
            };
            let n = st.trials.end - st.trials.start;
            ctl.progress.begin("trials", n, "trials");
            let t1 = Instant::now();
            let mut bg = crate::run_trials(&sample, st.seed, st.trials.clone(), &backend, &ctl.progress).map_err(Error::Failed)?;
            ctl.check()?;
            // Per-trial counts are kept when the whole analysis's fit (a job decides as the
            // unsplit run does, so that merged jobs give the same post-trial p-value).
            if st.total_trials.saturating_mul(sample.hist_len() as u64) > crate::trials::KEEP_CELLS {
                bg.forget_trials();
            }
            Ok(AutocorrResult {
                info,
                bg,
                device,
                observed_seconds: observed_s,
                trial_seconds: t1.elapsed().as_secs_f64(),
                window_pairs: sample.window_pairs(),
                jobs: self.jobs,
                job_index: self.job_index,
                merged_from: Vec::new(),
            })
        })?
    }
}

/// The observed counts, the background of the trials and how they were computed.
#[derive(Clone, Debug)]
pub struct AutocorrResult {
    pub info: RunInfo,
    pub bg: Background,
    /// Where the trials ran (`cpu (2 threads)`, `cuda:0`, `merge`).
    pub device: String,
    pub observed_seconds: f64,
    pub trial_seconds: f64,
    /// Candidate pairs per trial in the declination windows.
    pub window_pairs: u64,
    pub jobs: u64,
    pub job_index: u64,
    /// The job directories of a merged result.
    pub merged_from: Vec<PathBuf>,
}

/// Prepare a run's output directory before it computes (the output discipline).
pub use warpdrive_core::engine::prepare_dir as prepare_output;

impl AutocorrResult {
    /// Combine job directories (`--jobs N --job-index I`) into the result of one run.
    pub fn merge(jobs: &[PathBuf], partial: bool, ctl: &Control) -> Result<Self> {
        ctl.check()?;
        if let Some(d) = jobs.iter().find(|d| output::is_injection(d)) {
            return Err(InputError::new(
                d,
                0,
                "is a signal-injection run (signal.parquet): merge injection jobs with `warpdrive merge`",
            )
            .into());
        }
        let (info, mut bg) = output::merge(jobs, partial)?;
        ctl.check()?;
        if let Some(kept) = output::read_job_trials(jobs, &info)? {
            // The per-trial counts must be the trials the background distributions count.
            let mut check = Background::new(bg.freq.len());
            for c in &kept {
                check.add(c);
            }
            if check.freq != bg.freq {
                return Err(InputError::new(
                    &jobs[0],
                    0,
                    format!("the jobs' {} do not match their background.parquet", output::JOB_TRIALS),
                )
                .into());
            }
            bg.restore_trials(kept);
        }
        Ok(Self {
            info,
            bg,
            device: "merge".into(),
            observed_seconds: 0.0,
            trial_seconds: 0.0,
            window_pairs: 0,
            jobs: 1,
            job_index: 0,
            merged_from: jobs.to_vec(),
        })
    }

    /// Trials computed.
    pub fn trials(&self) -> u64 {
        self.bg.trials
    }

    /// The analysed (cut, bin) rows: TS and local p-values.
    pub fn rows(&self) -> Vec<BinResult> {
        analysis::analyse(&self.info.edges_deg, &self.info.observed, &self.bg)
    }

    /// The post-trial p-value, when every trial's counts were kept.
    pub fn post_trial(&self) -> Option<PostTrial> {
        analysis::post_trial(&self.info.observed, &self.bg)
    }

    /// (count values, number of trials with that count) of one (cut, bin).
    pub fn background_distribution(&self, cut: usize, bin: usize) -> Result<(Vec<u64>, Vec<u64>), ParamError> {
        let (nc, nb) = (self.info.cut_labels.len(), self.info.edges_deg.len());
        if cut >= nc {
            return Err(ParamError::new(
                "cut",
                format!("{cut}: this run has cuts 0..{} ({})", nc, self.info.cut_labels.join(", ")),
            ));
        }
        if bin >= nb {
            return Err(ParamError::new("bin", format!("{bin}: this run has bins 0..{nb}")));
        }
        let m = &self.bg.freq[cut * nb + bin];
        Ok((m.keys().copied().collect(), m.values().copied().collect()))
    }

    /// Write `counts.parquet`, `background.parquet`, `summary.json`, `run.json` and, if `plot`,
    /// `autocorr.png` into the prepared directory and commit it whole. The data files hold only
    /// what the events, options and seed determine (the same bytes from the CLI and from
    /// Python); `command` (how the run was asked for), the device and the timings go to
    /// `run.json`.
    pub fn save(&self, out: Staged, plot: bool, command: &str) -> Result<()> {
        let dir = out.path().to_path_buf();
        let meta = vec![("warpdrive.version".to_string(), env!("CARGO_PKG_VERSION").to_string())];
        let shown = out.dest().display().to_string();
        let fail = |e: String| Error::Failed(format!("{shown}: {e}"));
        let rows = output::write_tables(&dir, &self.info, &self.bg, &meta).map_err(fail)?;
        if self.jobs > 1 && self.bg.holds_trials() {
            // A job's trials, for the post-trial p-value of the merged run.
            output::write_job_trials(&dir, &self.info, &self.bg, &meta).map_err(fail)?;
        }
        let run = if self.merged_from.is_empty() {
            serde_json::json!({
                "version": env!("CARGO_PKG_VERSION"),
                "job": { "jobs": self.jobs, "index": self.job_index },
            })
        } else {
            serde_json::json!({
                "merged_from": self.merged_from.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            })
        };
        let post = self.post_trial();
        let json = output::summary_json(&self.info, &rows, post.as_ref(), run);
        let write =
            |name: &str, text: &str| std::fs::write(dir.join(name), text.as_bytes()).map_err(|e| fail(format!("writing {name}: {e}")));
        write("summary.json", &json)?;
        let n = self.bg.trials;
        let environment = if self.merged_from.is_empty() {
            serde_json::json!({
                "command": command,
                "device": self.device,
                "observed_seconds": self.observed_seconds,
                "trial_seconds": self.trial_seconds,
                "ms_per_trial": if n > 0 { 1e3 * self.trial_seconds / n as f64 } else { 0.0 },
                "candidate_pairs_per_trial_dec_window": self.window_pairs,
            })
        } else {
            serde_json::json!({ "command": command, "device": "merge" })
        };
        write("run.json", &(serde_json::to_string_pretty(&environment).unwrap_or_default() + "\n"))?;
        if plot {
            crate::plot::draw(&dir.join("autocorr.png"), &self.info, &rows, &self.bg).map_err(|e| fail(e.to_string()))?;
        }
        out.commit()?;
        Ok(())
    }
}

/// `--declination LO:HI` / `declination=(lo, hi)`: the band the injected sources lie in [deg].
impl FromStr for DecBand {
    type Err = ParamError;
    fn from_str(s: &str) -> Result<Self, ParamError> {
        let bad = || ParamError::new("declination", format!("'{s}': expected LO:HI in degrees, e.g. -5:90"));
        let (lo, hi) = s.split_once(':').ok_or_else(bad)?;
        let lo: f64 = lo.trim().parse().map_err(|_| bad())?;
        let hi: f64 = hi.trim().parse().map_err(|_| bad())?;
        Ok(DecBand { lo, hi })
    }
}

/// The options of a signal-injection run; `Default` is the command line's defaults.
#[derive(Clone, Debug)]
pub struct InjectOptions {
    /// Region, cuts, bins, trials, seed and RA grid, as for the background run.
    pub base: AutocorrOptions,
    /// The scan in the number of sources N (ascending; 0 is the background itself).
    pub sources: Vec<u64>,
    /// Events per source, K.
    pub events_per_source: u64,
    /// Spectral index γ of dN/dE ∝ E^γ of the signal.
    pub spectrum: f64,
    /// The sources' declination band (default: the selected events' declination range).
    pub declination: Option<DecBand>,
    /// The tail of the data whose energy proxies and angular errors signal events take: events
    /// at or above this cut (default `top:0.5`, the upper half).
    pub energy_threshold: EnergyCut,
}

impl Default for InjectOptions {
    fn default() -> Self {
        Self {
            base: AutocorrOptions {
                trials: 100,
                ..AutocorrOptions::default()
            },
            sources: vec![10],
            events_per_source: 5,
            spectrum: -2.0,
            declination: None,
            energy_threshold: EnergyCut::TopFraction(0.5),
        }
    }
}

/// The most strengths one scan takes.
pub const MAX_STRENGTHS: usize = 64;

/// Memory of one event of an injected trial on one worker thread: the event (40 bytes), its
/// scrambled RA, and its share of the trial's sample and cell-list workspace (≈ 100 bytes).
const INJECT_BYTES_PER_EVENT: u64 = 160;

/// A validated signal-injection run: background trials and, for every strength of the scan,
/// the same trials with N sources of K events injected (`crate::inject`).
#[derive(Clone, Debug)]
pub struct Inject {
    base: Autocorr,
    sources: Vec<u64>,
    injection: crate::inject::Injection,
    energy_threshold: f64,
}

fn ang_err_columns(events: Events) -> Events {
    match events {
        Events::Files { paths, columns } => {
            let columns = if columns.ang_err.is_some() {
                columns
            } else {
                columns.with_ang_err(None)
            };
            Events::Files { paths, columns }
        }
        e => e,
    }
}

impl Inject {
    /// Read and check the events (with their angular errors) and every option; nothing runs yet.
    pub fn new(events: Events, o: &InjectOptions) -> Result<Self> {
        if let Events::Arrays { ang_err: None, .. } = &events {
            return Err(ParamError::new(
                "ang_err",
                "is needed: signal events are displaced from their sources by the angular errors",
            )
            .into());
        }
        if o.sources.is_empty() {
            return Err(ParamError::new("sources", "is empty: give at least one number of sources").into());
        }
        if o.sources.len() > MAX_STRENGTHS {
            return Err(ParamError::new("sources", format!("has {} values: at most {MAX_STRENGTHS}", o.sources.len())).into());
        }
        if o.sources.windows(2).any(|w| w[0] >= w[1]) {
            return Err(ParamError::new("sources", "must be strictly increasing (a scan in the number of sources)").into());
        }
        if !o.spectrum.is_finite() {
            return Err(ParamError::new("spectrum", format!("{}: must be a finite spectral index (e.g. -2)", o.spectrum)).into());
        }
        if let Some(b) = o.declination {
            if !(-90.0..=90.0).contains(&b.lo) || !(-90.0..=90.0).contains(&b.hi) || b.lo > b.hi {
                return Err(ParamError::new(
                    "declination",
                    format!("{}:{}: must be LO:HI with -90 <= LO <= HI <= 90", b.lo, b.hi),
                )
                .into());
            }
        }
        let base = Autocorr::new(ang_err_columns(events), &o.base)?;
        let region = base.settings.region;
        let sel: Vec<Event> = base.events.iter().copied().filter(|e| region.contains(e)).collect();
        if sel.len() < 2 {
            return Err(Error::Failed(format!(
                "{} event(s) in the selected region (declination {}° to {}°): pair counting needs at least two",
                sel.len(),
                region.dec_min,
                region.dec_max
            )));
        }
        if let Some(e) = sel.iter().find(|e| e.ang_err.is_none()) {
            return Err(Error::Failed(format!(
                "the event at RA {}°, Dec {}° has no angular error: signal events are displaced by the events' angular errors",
                e.ra, e.dec
            )));
        }
        let n = sel.len() as u64;
        let k = o.events_per_source;
        if k > n {
            return Err(ParamError::new("events_per_source", format!("{k}: more than the {n} selected events")).into());
        }
        let n_max = *o.sources.last().unwrap_or(&0);
        match n_max.checked_mul(k) {
            Some(m) if m <= n => {}
            _ => {
                return Err(ParamError::new(
                    "sources",
                    format!("{n_max} × {{events_per_source}} {k} signal events: more than the {n} selected events they replace"),
                )
                .into())
            }
        }
        let (dmin, dmax) = sel
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), e| (a.min(e.dec), b.max(e.dec)));
        let band = o.declination.unwrap_or(DecBand { lo: dmin, hi: dmax });
        if !sel.iter().any(|e| (band.lo..=band.hi).contains(&e.dec)) {
            return Err(ParamError::new(
                "declination",
                format!(
                    "{}:{}: no selected event lies in this band (the selection spans {dmin}° to {dmax}°); sources must lie where the sample has events",
                    band.lo, band.hi
                ),
            )
            .into());
        }
        let threshold = crate::cuts::resolve(&sel, &[o.energy_threshold])
            .map_err(|m| ParamError::new("energy_threshold", format!(": {m}")))?
            .thresholds[0];
        let tail = crate::inject::Tail::new(&sel, threshold).ok_or_else(|| {
            ParamError::new(
                "energy_threshold",
                format!("{}: no selected event at or above it", o.energy_threshold),
            )
        })?;
        // Per worker thread and trial: the trial's events and its sample (`INJECT_BYTES_PER_EVENT`);
        // `run` checks it again for its thread count.
        warpdrive_core::limits::check_alloc("the events of an injected trial", n, INJECT_BYTES_PER_EVENT, "analyse fewer events")?;
        let decs: Vec<f64> = sel.iter().map(|e| e.dec).collect();
        let dec_grid = crate::sample::detect_ra_grid(&decs);
        Ok(Self {
            base,
            sources: o.sources.clone(),
            injection: crate::inject::Injection {
                per_source: k,
                band,
                gamma: o.spectrum,
                tail,
                dec_grid,
            },
            energy_threshold: threshold,
        })
    }

    /// The files the run reads (outputs must not replace or contain them).
    pub fn inputs(&self) -> &[PathBuf] {
        self.base.inputs()
    }

    /// The background run's settings (region, cuts, bins, trials, seed).
    pub fn settings(&self) -> &Settings {
        self.base.settings()
    }

    /// Events read (before the region selects).
    pub fn events(&self) -> usize {
        self.base.events()
    }

    /// What is injected (band, spectrum, tail, grids).
    pub fn injection(&self) -> &crate::inject::Injection {
        &self.injection
    }

    /// Run the background trials and the injected trials of every strength, on the CPU or on
    /// the control's GPUs (the same counts for the same seed: the signal is drawn on the host
    /// by the same code on both paths, `crate::inject::SignalBatch`). Returns
    /// [`Error::Cancelled`] when the token is raised (within one trial on the CPU, one batch on
    /// a GPU).
    pub fn run(&self, ctl: &Control) -> Result<InjectResult> {
        for n in &self.base.notes {
            ctl.note(n);
        }
        let gpus = ctl.gpus()?;
        let st = &self.base.settings;
        ctl.install(|| {
            let t0 = Instant::now();
            let (sample, info) = crate::prepare(&self.base.events, st).map_err(Error::Failed)?;
            ctl.check()?;
            let sel: Vec<Event> = self.base.events.iter().copied().filter(|e| st.region.contains(e)).collect();
            let selection = crate::inject::Selection::new(&sel, &sample);
            let threads = rayon::current_num_threads();
            let n = st.trials.end - st.trials.start;
            let (bg, signal, device) = match &gpus {
                None => {
                    warpdrive_core::limits::check_alloc(
                        "the events of the injected trials on every thread",
                        (sel.len() as u64).saturating_mul(threads as u64),
                        INJECT_BYTES_PER_EVENT,
                        "use fewer threads or analyse fewer events",
                    )?;
                    ctl.progress
                        .begin("trials", n.saturating_mul(1 + self.sources.len() as u64), "trials");
                    let bg = crate::trials::run_cpu(&sample, st.seed, st.trials.clone(), &ctl.progress);
                    ctl.check()?;
                    let mut signal = Vec::with_capacity(self.sources.len());
                    for &ns in &self.sources {
                        let b = crate::inject::run_cpu(&selection, &self.injection, st.seed, ns, st.trials.clone(), &ctl.progress)
                            .map_err(Error::Failed)?;
                        ctl.check()?;
                        signal.push(b);
                    }
                    (bg, signal, format!("cpu ({threads} threads)"))
                }
                Some(d) => {
                    // The signal of two batches per GPU (the one counted and the next one
                    // drawn) lives on the host at a time; as much again on each GPU.
                    let m = self.sources.last().copied().unwrap_or(0) * self.injection.per_source;
                    warpdrive_core::limits::check_alloc(
                        "the signal events of the GPU batches",
                        m.saturating_mul(2 * u64::from(crate::gpu::MAX_BATCH) * d.len() as u64),
                        crate::inject::SIGNAL_BYTES,
                        "inject fewer sources or events per source",
                    )?;
                    ctl.progress
                        .begin("trials", n.saturating_mul(1 + self.sources.len() as u64), "trials");
                    let (bg, signal) = crate::gpu::run_injected(
                        d,
                        &selection,
                        &self.injection,
                        st.seed,
                        &self.sources,
                        st.trials.clone(),
                        threads,
                        &ctl.progress,
                    )
                    .map_err(|e| Error::Failed(e.to_string()))?;
                    ctl.check()?;
                    (bg, signal, d.iter().map(|i| format!("cuda:{i}")).collect::<Vec<_>>().join(","))
                }
            };
            Ok(InjectResult {
                info,
                bg,
                sources: self.sources.clone(),
                signal,
                per_source: self.injection.per_source,
                band: self.injection.band,
                spectrum: self.injection.gamma,
                energy_threshold: self.energy_threshold,
                tail_events: self.injection.tail.energy.len() as u64,
                dec_grid: self.injection.dec_grid,
                device,
                seconds: t0.elapsed().as_secs_f64(),
                jobs: self.base.jobs,
                job_index: self.base.job_index,
                merged_from: Vec::new(),
            })
        })?
    }
}

/// The background and injected count distributions of a run, and how they were computed.
#[derive(Clone, Debug)]
pub struct InjectResult {
    /// The data's selection, cuts, bins and observed counts (as a background run's).
    pub info: RunInfo,
    pub bg: Background,
    /// The scan: number of sources of each signal distribution.
    pub sources: Vec<u64>,
    /// One count distribution per strength (cut-major cells, as `bg`).
    pub signal: Vec<Background>,
    pub per_source: u64,
    pub band: DecBand,
    pub spectrum: f64,
    /// The injection threshold on the energy proxy and the tail events at or above it.
    pub energy_threshold: f64,
    pub tail_events: u64,
    pub dec_grid: Option<f64>,
    pub device: String,
    pub seconds: f64,
    pub jobs: u64,
    pub job_index: u64,
    /// The job directories of a merged result.
    pub merged_from: Vec<PathBuf>,
}

impl InjectResult {
    /// Combine the job directories of an injection (`--jobs N --job-index I`) into the result
    /// of one run: the background as [`AutocorrResult::merge`] checks and adds it, the signal
    /// distributions of every strength added likewise; the jobs must describe the same
    /// injection (sources, K, band, spectrum, threshold).
    pub fn merge(jobs: &[PathBuf], partial: bool, ctl: &Control) -> Result<Self> {
        ctl.check()?;
        let (info, bg) = output::merge(jobs, partial)?;
        let first = jobs
            .first()
            .ok_or_else(|| ParamError::new("job_dirs", "is empty: give the job directories to merge"))?;
        let (set, mut signal) = output::read_signal(first, info.cut_labels.len() * info.edges_deg.len())?;
        for d in &jobs[1..] {
            let (other, sig) = output::read_signal(d, info.cut_labels.len() * info.edges_deg.len())?;
            if other != set {
                return Err(InputError::new(
                    d,
                    0,
                    format!(
                        "a different injection than {} (sources, events per source, band, spectrum or threshold differ)",
                        first.display()
                    ),
                )
                .into());
            }
            for (a, b) in signal.iter_mut().zip(&sig) {
                a.merge(b);
            }
        }
        Ok(Self {
            info,
            bg,
            sources: set.sources,
            signal,
            per_source: set.per_source,
            band: set.band,
            spectrum: set.spectrum,
            energy_threshold: set.energy_threshold,
            tail_events: set.tail_events,
            dec_grid: set.dec_grid,
            device: "merge".into(),
            seconds: 0.0,
            jobs: 1,
            job_index: 0,
            merged_from: jobs.to_vec(),
        })
    }

    /// The injection's settings as its files record them.
    pub fn settings(&self) -> output::InjectionSet {
        output::InjectionSet {
            sources: self.sources.clone(),
            per_source: self.per_source,
            band: self.band,
            spectrum: self.spectrum,
            energy_threshold: self.energy_threshold,
            tail_events: self.tail_events,
            dec_grid: self.dec_grid,
        }
    }

    /// The key/value metadata of the data files (version and the injection's settings).
    pub fn metadata(&self) -> Vec<(String, String)> {
        let mut meta = vec![("warpdrive.version".to_string(), env!("CARGO_PKG_VERSION").to_string())];
        meta.extend(self.settings().metadata());
        meta
    }

    /// One row per (strength, cut, bin): thresholds and signal fractions.
    pub fn rows(&self) -> Vec<crate::sensitivity::Row> {
        crate::sensitivity::rows(&self.info.edges_deg, &self.bg, &self.sources, &self.signal)
    }

    /// Sensitivity and discovery potentials, per cell and the best cell of each.
    pub fn scan(&self) -> crate::sensitivity::Scan {
        crate::sensitivity::scan(&self.rows(), &self.sources, self.info.cut_labels.len() * self.info.edges_deg.len())
    }

    /// Write `counts.parquet` and `background.parquet` (as a background run), `signal.parquet`,
    /// `sensitivity.parquet`, `summary.json`, `run.json` and, if `plot`, `inject.png` into the
    /// prepared directory and commit it whole. The data files hold only what the events,
    /// options and seed determine; the command, device and timings go to `run.json`.
    pub fn save(&self, out: Staged, plot: bool, command: &str) -> Result<()> {
        let dir = out.path().to_path_buf();
        let shown = out.dest().display().to_string();
        let fail = |e: String| Error::Failed(format!("{shown}: {e}"));
        let meta = self.metadata();
        let rows = self.rows();
        let scan = self.scan();
        output::write_tables(&dir, &self.info, &self.bg, &meta).map_err(fail)?;
        output::write_injection(&dir, self, &rows, &meta).map_err(fail)?;
        let json = output::injection_json(self, &scan);
        let write =
            |name: &str, text: &str| std::fs::write(dir.join(name), text.as_bytes()).map_err(|e| fail(format!("writing {name}: {e}")));
        write("summary.json", &json)?;
        let n = self.bg.trials * (1 + self.sources.len() as u64);
        let environment = if self.merged_from.is_empty() {
            serde_json::json!({
                "command": command,
                "device": self.device,
                "job": { "jobs": self.jobs, "index": self.job_index },
                "seconds": self.seconds,
                "ms_per_trial": if n > 0 { 1e3 * self.seconds / n as f64 } else { 0.0 },
            })
        } else {
            serde_json::json!({
                "command": command,
                "device": "merge",
                "merged_from": self.merged_from.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            })
        };
        write("run.json", &(serde_json::to_string_pretty(&environment).unwrap_or_default() + "\n"))?;
        if plot {
            crate::plot::draw_injection(&dir.join("inject.png"), self, &rows, &scan).map_err(|e| fail(e.to_string()))?;
        }
        out.commit()?;
        Ok(())
    }

    /// One line describing the injection (also the `sky.inject` metadata).
    pub fn description(&self) -> String {
        format!(
            "{} events per source; sources {}; declination {}° to {}°; spectrum E^{}; energy proxy and angular error from the {} events with proxy >= {}",
            self.per_source,
            self.sources.iter().map(u64::to_string).collect::<Vec<_>>().join(","),
            self.band.lo,
            self.band.hi,
            self.spectrum,
            self.tail_events,
            self.energy_threshold
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sky(n: usize) -> Events {
        Events::Synthetic(n)
    }

    #[test]
    fn options_are_checked_with_their_names() {
        let o = AutocorrOptions {
            bins: Bins::Uniform { n: 20, width: -1.0 },
            ..Default::default()
        };
        let e = Autocorr::new(sky(100), &o).unwrap_err();
        assert_eq!(
            e.render(warpdrive_core::engine::Style::Cli),
            "--bin-width -1: must be a positive number of degrees"
        );
        let o = AutocorrOptions {
            jobs: 2,
            job_index: 2,
            ..Default::default()
        };
        let e = Autocorr::new(sky(100), &o).unwrap_err();
        assert_eq!(e.render(warpdrive_core::engine::Style::Python), "job_index 2 must be below jobs 2");
        assert!("west".parse::<Hemisphere>().is_err());
        assert!(matches!("0.1".parse::<RaGrid>(), Ok(RaGrid::Step(_))));
    }

    #[test]
    fn a_raised_token_cancels_the_run() {
        let o = AutocorrOptions {
            trials: 100_000,
            ..Default::default()
        };
        let req = Autocorr::new(sky(2000), &o).unwrap();
        let ctl = Control::new().device(warpdrive_core::engine::Device::Cpu).threads(Some(1));
        let t = ctl.cancel.after(std::time::Duration::from_millis(200));
        let t0 = Instant::now();
        let r = req.run(&ctl);
        t.join().unwrap();
        assert!(matches!(r, Err(Error::Cancelled(_))), "{r:?}");
        assert!(t0.elapsed().as_secs_f64() < 2.0, "took {:?}", t0.elapsed());
    }

    #[test]
    fn background_distribution_checks_its_indices() {
        let o = AutocorrOptions {
            trials: 4,
            ..Default::default()
        };
        let ctl = Control::new().device(warpdrive_core::engine::Device::Cpu);
        let r = Autocorr::new(sky(500), &o).unwrap().run(&ctl).unwrap();
        assert!(r.background_distribution(0, 0).is_ok());
        assert!(r
            .background_distribution(4, 0)
            .unwrap_err()
            .to_string()
            .starts_with("cut 4: this run has cuts 0..4"));
        assert!(r.background_distribution(0, 20).is_err());
    }
}

/// A merged result: a background run's or an injection's, as the job directories say.
#[derive(Clone, Debug)]
pub enum Merged {
    Autocorr(AutocorrResult),
    Inject(InjectResult),
}

/// Merge job directories of either kind (`warpdrive merge`): injection jobs (with
/// `signal.parquet`) into an [`InjectResult`], background jobs into an [`AutocorrResult`]; a
/// mixture is refused.
pub fn merge(jobs: &[PathBuf], partial: bool, ctl: &Control) -> Result<Merged> {
    let inject: Vec<bool> = jobs.iter().map(|d| output::is_injection(d)).collect();
    if inject.iter().all(|&i| i) && !jobs.is_empty() {
        return Ok(Merged::Inject(InjectResult::merge(jobs, partial, ctl)?));
    }
    if let Some(k) = inject.iter().position(|&i| i) {
        return Err(InputError::new(
            &jobs[k],
            0,
            "is a signal-injection run, the other jobs are background runs: merge each kind on its own",
        )
        .into());
    }
    Ok(Merged::Autocorr(AutocorrResult::merge(jobs, partial, ctl)?))
}
