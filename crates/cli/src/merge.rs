//! `warpdrive merge`: the outputs of a run's batch jobs as one run's result. The job outputs say
//! what ran (`warpdrive_core::jobs::JobStamp`); the domain's merge checks and combines them.

use crate::sky;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use warpdrive_core::jobs::{self, Share};

/// `--jobs N --job-index I` of every splittable command.
#[derive(Args, Clone, Debug)]
pub struct SplitArgs {
    /// Share the run into this many batch jobs …
    #[arg(long, default_value_t = 1)]
    jobs: u64,
    /// … and run job number I (0-based); combine the outputs with `warpdrive merge`.
    #[arg(long, default_value_t = 0)]
    job_index: u64,
}

impl SplitArgs {
    pub fn split(&self) -> Result<Share> {
        Ok(Share::new(self.jobs, self.job_index)?)
    }

    /// The line that tells a job's user how to combine the jobs.
    pub fn note(&self) {
        if self.jobs > 1 {
            println!(
                "job {} of {}: combine all jobs' outputs with `warpdrive merge -o OUT JOB_OUTPUT...`",
                self.job_index, self.jobs
            );
        }
    }
}

#[derive(Args)]
pub struct MergeArgs {
    /// Outputs of the jobs (`warpdrive … --jobs N --job-index I -o PATH`), in any order.
    #[arg(required = true)]
    pub(crate) jobs: Vec<PathBuf>,
    /// The merged result: a directory, or a file where the jobs wrote files (photon hits,
    /// spline values).
    #[arg(long, short)]
    pub(crate) output: PathBuf,
    /// Sky: allow a set of jobs that does not cover every trial.
    #[arg(long)]
    pub(crate) partial: bool,
    /// Do not draw plots (autocorr.png, inject.png, profile.png).
    #[arg(long)]
    pub(crate) no_plot: bool,
}

pub fn merge(a: &MergeArgs, force: bool) -> Result<()> {
    // The output must not be or hold a job's output: refused before any job is read.
    warpdrive_core::output::check_paths(&paths(&a.jobs), &[a.output.as_path()])?;
    let Some(kind) = jobs::kind_of(&a.jobs[0])? else {
        return sky::merge(a, force);
    };
    let ctl = crate::process_control();
    match kind.as_str() {
        warpdrive_photon::engine::JOB_KIND => {
            let table = warpdrive_photon::engine::merge(&a.jobs, Some(&a.output), force, &ctl)?;
            println!("merged:         {} photon jobs, {} hits", a.jobs.len(), table.rows());
        }
        warpdrive_spline::engine::EVAL_JOB_KIND => {
            let table = warpdrive_spline::engine::merge_eval(&a.jobs, Some(&a.output), force, &ctl)?;
            println!("merged:         {} spline eval jobs, {} points", a.jobs.len(), table.rows());
        }
        warpdrive_spline::event_list::JOB_KIND => {
            let out = warpdrive_spline::engine::prepare_dir(&a.output, force, &a.jobs)?;
            let n = warpdrive_spline::event_list::merge(&a.jobs, out, &ctl)?;
            println!("merged:         {} spline unfold jobs, {n} events", a.jobs.len());
        }
        warpdrive_beam::engine::TRACK_JOB_KIND => {
            let out = warpdrive_beam::engine::prepare_output(&a.output, force, &a.jobs)?;
            let m = warpdrive_beam::engine::merge_tracks(&a.jobs, out, &ctl)?;
            println!(
                "merged:         {} beam track jobs, {} particles, {} watch events, {} watch files",
                a.jobs.len(),
                m.particles,
                m.watch_events,
                m.watch_files.len()
            );
        }
        warpdrive_em::engine::SHOWER_JOB_KIND => return crate::em_shower::merge(&a.jobs, &a.output, !a.no_plot, force),
        other => anyhow::bail!(
            "{}: a `{other}` job's output, which this warpdrive cannot merge",
            a.jobs[0].display()
        ),
    }
    println!("output:         {}", a.output.display());
    Ok(())
}

fn paths(p: &[PathBuf]) -> Vec<&std::path::Path> {
    p.iter().map(PathBuf::as_path).collect()
}
