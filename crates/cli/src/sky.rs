//! `warpdrive sky autocorr` and `warpdrive merge`: argument parsing and output only; the
//! analysis lives in warpdrive-sky.

use crate::{command_line, CommonArgs};
use anyhow::Result;
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use warpdrive_core::progress::Bar;
use warpdrive_sky::engine::{self, Autocorr, AutocorrOptions, AutocorrResult, Bins, Events, Inject, InjectOptions, InjectResult, Merged};
use warpdrive_sky::events::ColumnNames;
use warpdrive_sky::output::RunInfo;
use warpdrive_sky::sensitivity::{CellScan, Reach};

#[derive(Subcommand)]
pub enum SkyCommand {
    /// Two-point autocorrelation of event directions with RA-scrambled trials.
    Autocorr(AutocorrArgs),
    /// Scrambled trials with N point sources of K events injected: TS distributions with
    /// signal, sensitivity and discovery potential (CPU or GPU, the same counts).
    Inject(InjectArgs),
}

/// What the autocorrelation and the injection read and how they select, cut and bin it.
#[derive(Args)]
pub struct SampleArgs {
    /// Event files: IceCube public text releases, CSV or Parquet with named columns (RA and Dec
    /// in degrees, an energy proxy). Several files are analysed together. Default: a generated
    /// isotropic sky (see --synthetic-events).
    pub(crate) files: Vec<PathBuf>,
    /// all, north (δ ≥ 0) or south (δ < 0).
    #[arg(long, default_value = "all")]
    hemisphere: String,
    /// Keep only events with declination ≥ this [deg] (combines with --hemisphere).
    #[arg(long, allow_hyphen_values = true)]
    dec_min: Option<f64>,
    /// Keep only events with declination ≤ this [deg].
    #[arg(long, allow_hyphen_values = true)]
    dec_max: Option<f64>,
    /// Nested energy cuts besides "all": top:F (highest fraction F, ties kept), P% or a threshold.
    #[arg(long, value_delimiter = ',', default_value = "top:0.1,top:0.01,top:0.001")]
    cuts: Vec<String>,
    /// Number of cumulative angular bins.
    #[arg(long, default_value_t = 20)]
    bins: usize,
    /// Width of the angular bins [deg].
    #[arg(long, default_value_t = 0.25, allow_hyphen_values = true)]
    bin_width: f64,
    /// Explicit upper bin edges [deg] instead of --bins/--bin-width, e.g. 0.5,1,2,5.
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    edges: Vec<f64>,
    /// Random seed (trial k is the same for a given seed on any device and in any job).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Name of the right-ascension column (default: RA, Ra_deg, ra, …).
    #[arg(long)]
    ra_column: Option<String>,
    /// Name of the declination column (default: Dec, Dec_deg, dec, …).
    #[arg(long)]
    dec_column: Option<String>,
    /// Name of the energy-proxy column (default: log10(E), log10(Ereco), logE, energy, …).
    #[arg(long)]
    energy_column: Option<String>,
    /// Round scrambled right ascensions to a grid: auto (the grid the data's RAs lie on, e.g.
    /// 0.1° for IceCube's public releases), off, or a step in degrees.
    #[arg(long, default_value = "auto", allow_hyphen_values = true)]
    ra_grid: String,
    /// Size of the generated sky when no file is given.
    #[arg(long, default_value_t = 10_000)]
    synthetic_events: usize,
}

impl SampleArgs {
    /// The events and the options they share (trials and jobs are the caller's).
    fn options(&self, columns: ColumnNames) -> Result<(Events, AutocorrOptions)> {
        let events = if self.files.is_empty() {
            Events::Synthetic(self.synthetic_events)
        } else {
            Events::Files {
                paths: self.files.clone(),
                columns: columns.with(self.ra_column.as_deref(), self.dec_column.as_deref(), self.energy_column.as_deref()),
            }
        };
        let opts = AutocorrOptions {
            hemisphere: self.hemisphere.parse()?,
            dec_min: self.dec_min,
            dec_max: self.dec_max,
            cuts: self
                .cuts
                .iter()
                .filter(|c| !c.trim().is_empty())
                .map(|c| engine::parse_cut(c))
                .collect::<Result<_, _>>()?,
            bins: if self.edges.is_empty() {
                Bins::Uniform {
                    n: self.bins,
                    width: self.bin_width,
                }
            } else {
                Bins::Edges(self.edges.clone())
            },
            seed: self.seed,
            ra_grid: self.ra_grid.parse()?,
            ..AutocorrOptions::default()
        };
        Ok((events, opts))
    }
}

#[derive(Args)]
pub struct AutocorrArgs {
    #[command(flatten)]
    sample: SampleArgs,
    /// Scrambled trials of the whole analysis (all jobs).
    #[arg(long, default_value_t = 1000)]
    trials: u64,
    /// Split the trials into this many batch jobs …
    #[arg(long, default_value_t = 1)]
    jobs: u64,
    /// … and run job number I (0-based); combine the outputs with `warpdrive merge`.
    #[arg(long, default_value_t = 0)]
    job_index: u64,
    /// Output directory (counts.parquet, background.parquet, summary.json, autocorr.png).
    #[arg(long, short, default_value = "autocorr")]
    output: PathBuf,
    /// Do not draw autocorr.png.
    #[arg(long)]
    no_plot: bool,
    #[command(flatten)]
    pub common: CommonArgs,
}

pub fn autocorr(a: &AutocorrArgs, force: bool) -> Result<()> {
    let ctl = a.common.control()?;
    let (events, base) = a.sample.options(ColumnNames::default())?;
    let opts = AutocorrOptions {
        trials: a.trials,
        jobs: a.jobs,
        job_index: a.job_index,
        ..base
    };
    let req = Autocorr::new(events, &opts)?;
    let out = engine::prepare_output(&a.output, force, req.inputs())?;
    let st = req.settings();
    let _bar = Bar::show(&ctl.progress);
    let r = req.run(&ctl)?;
    drop(_bar);
    println!(
        "events:          {} selected of {} ({})",
        r.info.n_events,
        req.events(),
        st.description
    );
    print_cuts(&r.info);
    r.save(out, !a.no_plot, &command_line())?;
    print_result(&r, &a.output, !a.no_plot);
    let n = st.trials.end - st.trials.start;
    println!(
        "trials:          {} ({}..{} of {}) in {:.2} s = {:.3} ms/trial on {}",
        n,
        st.trials.start,
        st.trials.end,
        a.trials,
        r.trial_seconds,
        if n > 0 { 1e3 * r.trial_seconds / n as f64 } else { 0.0 },
        r.device
    );
    if a.jobs > 1 {
        println!(
            "job {} of {}: combine all job directories with `warpdrive merge -o DIR JOBDIR...`",
            a.job_index, a.jobs
        );
    }
    Ok(())
}

fn print_cuts(info: &RunInfo) {
    for c in 0..info.cut_labels.len() {
        let t = if c == 0 {
            String::new()
        } else {
            format!(", E >= {}", info.thresholds[c])
        };
        println!("cut {c}:           {} ({} events{t})", info.cut_labels[c], info.cut_events[c]);
    }
}

#[derive(Args)]
pub struct InjectArgs {
    #[command(flatten)]
    sample: SampleArgs,
    /// Numbers of sources N to inject, one or an increasing list for a scan (e.g. 25,50,100).
    #[arg(long, value_delimiter = ',', default_value = "10")]
    sources: Vec<u64>,
    /// Events per source K (N·K background events of each trial are replaced).
    #[arg(long, default_value_t = 5)]
    events_per_source: u64,
    /// Spectral index γ of the signal, dN/dE ∝ E^γ, applied to 10^(energy proxy).
    #[arg(long, default_value_t = -2.0, allow_hyphen_values = true)]
    spectrum: f64,
    /// Declination band of the sources LO:HI [deg] (default: the selected events' range).
    #[arg(long, allow_hyphen_values = true)]
    declination: Option<String>,
    /// Signal events take energy proxy and angular error from data events at or above this cut
    /// (top:F, P% or a threshold).
    #[arg(long, default_value = "top:0.5")]
    energy_threshold: String,
    /// Name of the angular-error column [deg] (default: ang_err, AngErr[deg], AngErr, Unc_deg, sigma_deg).
    #[arg(long)]
    ang_err_column: Option<String>,
    /// Trials: background and, with the same scrambles, each number of sources (all jobs).
    #[arg(long, default_value_t = 100)]
    trials: u64,
    /// Split the trials into this many batch jobs …
    #[arg(long, default_value_t = 1)]
    jobs: u64,
    /// … and run job number I (0-based); combine the outputs with `warpdrive merge`.
    #[arg(long, default_value_t = 0)]
    job_index: u64,
    /// Output directory (background.parquet, signal.parquet, sensitivity.parquet, summary.json, inject.png).
    #[arg(long, short, default_value = "inject")]
    output: PathBuf,
    /// Do not draw inject.png.
    #[arg(long)]
    no_plot: bool,
    #[command(flatten)]
    pub common: CommonArgs,
}

pub fn inject(a: &InjectArgs, force: bool) -> Result<()> {
    let ctl = a.common.control()?;
    let columns = ColumnNames::default().with_ang_err(a.ang_err_column.as_deref());
    let (events, base) = a.sample.options(columns)?;
    let opts = InjectOptions {
        base: AutocorrOptions {
            trials: a.trials,
            jobs: a.jobs,
            job_index: a.job_index,
            ..base
        },
        sources: a.sources.clone(),
        events_per_source: a.events_per_source,
        spectrum: a.spectrum,
        declination: a.declination.as_deref().map(str::parse).transpose()?,
        energy_threshold: engine::parse_cut(&a.energy_threshold)?,
    };
    let req = Inject::new(events, &opts)?;
    let out = engine::prepare_output(&a.output, force, req.inputs())?;
    let _bar = Bar::show(&ctl.progress);
    let r = req.run(&ctl)?;
    drop(_bar);
    println!(
        "events:          {} selected of {} ({})",
        r.info.n_events,
        req.events(),
        req.settings().description
    );
    print_cuts(&r.info);
    println!("injection:       {}", r.description());
    r.save(out, !a.no_plot, &command_line())?;
    print_injection(&r, &a.output, !a.no_plot);
    if a.jobs > 1 {
        println!(
            "job {} of {}: combine all job directories with `warpdrive merge -o DIR JOBDIR...`",
            a.job_index, a.jobs
        );
    }
    Ok(())
}

/// Print the result lines of an injection run or merge.
fn print_injection(r: &InjectResult, shown: &Path, plot: bool) {
    let rows = r.rows();
    let scan = r.scan();
    let nb = r.info.edges_deg.len();
    let cells = r.info.cut_labels.len() * nb;
    let k = warpdrive_sky::plot::injection_cell(&rows, &scan, cells, r.sources.len());
    println!(
        "cell:            {}, θ <= {}° (background {:.1} ± {:.1}, median {}, 5σ threshold {:.1}{})",
        r.info.cut_labels[k / nb],
        r.info.edges_deg[k % nb],
        rows[k].bg_mean,
        rows[k].bg_std,
        rows[k].bg_median,
        rows[k].threshold_5sigma.count,
        if rows[k].threshold_5sigma.from_trials {
            " from the trials"
        } else {
            " from the gamma tail fit"
        }
    );
    println!(
        "{:>8} {:>8} {:>12} {:>10} {:>10} {:>10}",
        "sources", "events", "signal mean", "> median", ">= 3σ", ">= 5σ"
    );
    for (i, &n) in r.sources.iter().enumerate() {
        let x = &rows[i * cells + k];
        println!(
            "{:>8} {:>8} {:>12.1} {:>10.3} {:>10.3} {:>10.3}",
            n,
            n * r.per_source,
            x.signal_mean,
            x.frac_median,
            x.frac_3sigma,
            x.frac_5sigma
        );
    }
    let show = |what: &str, c: Option<CellScan>, g: fn(&CellScan) -> Reach| match c.map(|c| (c.cell, g(&c))) {
        Some((cell, Reach::At(x))) => println!(
            "{what} N = {:.1} ± {:.1} sources ({}, θ <= {}°)",
            x.strength,
            x.error,
            r.info.cut_labels[cell / nb],
            r.info.edges_deg[cell % nb]
        ),
        Some((cell, _)) => println!(
            "{what} N <= {} sources, at or below the scan's first strength ({}, θ <= {}°)",
            r.sources[0],
            r.info.cut_labels[cell / nb],
            r.info.edges_deg[cell % nb]
        ),
        None => println!("{what} not reached within the scan"),
    };
    show("sensitivity:     ", scan.best_sensitivity, |c| c.sensitivity);
    show("discovery 3σ:    ", scan.best_discovery_3sigma, |c| c.discovery_3sigma);
    show("discovery 5σ:    ", scan.best_discovery_5sigma, |c| c.discovery_5sigma);
    println!(
        "trials:          {} background + {} × {} injected in {:.2} s on {}",
        r.bg.trials,
        r.sources.len(),
        r.bg.trials,
        r.seconds,
        r.device
    );
    println!(
        "output:          {}/{{counts,background,signal,sensitivity}}.parquet, summary.json{}",
        shown.display(),
        if plot { ", inject.png" } else { "" }
    );
}

/// Print the result lines of a run or a merge.
fn print_result(r: &AutocorrResult, shown: &Path, plot: bool) {
    let (info, bg) = (&r.info, &r.bg);
    let rows = r.rows();
    let post = r.post_trial();
    let nb = info.edges_deg.len();
    println!(
        "{:<16} {:>12} {:>14} {:>9} {:>10}",
        "N(<=θmax)", "observed", "background", "TS", "p(trials)"
    );
    for c in 0..info.cut_labels.len() {
        let r = &rows[c * nb + nb - 1];
        println!(
            "{:<16} {:>12} {:>14.1} {:>9.4} {:>10.4}",
            info.cut_labels[c], r.n_obs, r.bg_mean, r.ts, r.p_trials
        );
    }
    if let Some(b) = warpdrive_sky::analysis::most_significant(&rows) {
        println!(
            "most significant: {}, θ <= {}°: N = {} vs {:.1} ± {:.1}, TS = {:.4}, p = {}/{} = {:.4} (Gauss {:.3e}, gamma {:.3e})",
            info.cut_labels[b.cut],
            b.theta_deg,
            b.n_obs,
            b.bg_mean,
            b.bg_std,
            b.ts,
            b.n_beyond,
            b.n_trials,
            b.p_trials,
            b.p_gauss,
            b.p_gamma
        );
    }
    match &post {
        Some(p) if p.n_beyond == 0 => println!(
            "post-trial:      p < 1/{} (no trial reaches the observed smallest local p = {:.2e} in any of the {} cells)",
            p.trials,
            p.p_min_observed,
            info.observed.len()
        ),
        Some(p) => println!(
            "post-trial:      p = {}/{} = {:.4} (trials whose smallest local p over the {} cells is <= the observed {:.2e})",
            p.n_beyond,
            p.trials,
            p.p,
            info.observed.len(),
            p.p_min_observed
        ),
        None if bg.trials > 0 => println!(
            "post-trial:      not computed (needs each trial's counts: single runs of at most {} trials x cells, not merged jobs)",
            warpdrive_sky::trials::KEEP_CELLS
        ),
        None => {}
    }
    println!(
        "output:          {}/{{counts,background}}.parquet, summary.json{}",
        shown.display(),
        if plot { ", autocorr.png" } else { "" }
    );
}

pub fn merge(a: &crate::merge::MergeArgs, force: bool) -> Result<()> {
    let ctl = crate::process_control();
    let out = engine::prepare_output(&a.output, force, &a.jobs)?;
    match engine::merge(&a.jobs, a.partial, &ctl)? {
        Merged::Autocorr(r) => {
            println!("merged:          {} job directories, {} trials", a.jobs.len(), r.bg.trials);
            r.save(out, !a.no_plot, &command_line())?;
            print_result(&r, &a.output, !a.no_plot);
        }
        Merged::Inject(r) => {
            println!(
                "merged:          {} injection job directories, {} trials",
                a.jobs.len(),
                r.bg.trials
            );
            println!("injection:       {}", r.description());
            r.save(out, !a.no_plot, &command_line())?;
            print_injection(&r, &a.output, !a.no_plot);
        }
    }
    Ok(())
}
