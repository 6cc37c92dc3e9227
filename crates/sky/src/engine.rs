//! The sky runs as library calls (DESIGN.md §2, `warpdrive_core::engine`): [`Autocorr`] is a
//! validated request built from typed values, [`Autocorr::run`] computes it under a
//! [`Control`], and [`AutocorrResult::save`] writes the output directory with the output
//! discipline. `warpdrive sky autocorr`, `warpdrive merge` and `warpdrive.sky.autocorr` are thin
//! translations of their arguments into these calls.

use crate::analysis::{self, BinResult, PostTrial};
use crate::bins::AngularBins;
use crate::cuts::{EnergyCut, Region};
use crate::events::{ColumnNames, Event};
use crate::output::{self, RunInfo};
use crate::trials::Background;
use crate::{Backend, Settings};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Instant;
use warpdrive_core::engine::{Control, Error, ParamError, Result};
use warpdrive_core::output::Staged;

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
            Events::Arrays { ra, dec, energy } => {
                let label = Path::new("<arrays>");
                let (energy, cuts) = match energy {
                    Some(e) => (e, o.cuts.clone()),
                    None if o.cuts.is_empty() => (vec![0.0; ra.len()], Vec::new()),
                    None => {
                        return Err(ParamError::new("cuts", "need energies ({energy}); pass cuts=[] to analyse all events only").into())
                    }
                };
                let ev = crate::events::from_arrays(label, &ra, &dec, &energy)?;
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
            let bg = crate::run_trials(&sample, st.seed, st.trials.clone(), &backend, &ctl.progress).map_err(Error::Failed)?;
            ctl.check()?;
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
        let (info, bg) = output::merge(jobs, partial)?;
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
