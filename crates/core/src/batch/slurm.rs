//! Slurm: an sbatch job array (one task per job, `--job-index $SLURM_ARRAY_TASK_ID`) and a merge
//! job that waits for all of it (`--dependency=afterok:<array>`).

use super::quote::{shell, shell_word};
use super::{one_line, run_tool, BatchError, BatchFile, JobPaths, Split};
use std::ffi::OsStr;

/// The array script's name in the work directory.
pub const ARRAY_SCRIPT: &str = "work.sbatch";
/// The merge script's name in the work directory.
pub const MERGE_SCRIPT: &str = "merge.sbatch";

/// What each job asks Slurm for.
#[derive(Clone, Debug, Default)]
pub struct SlurmOptions {
    /// GPUs per job (`--gres=gpu:K`); 0: CPU jobs.
    pub gpus_per_job: u32,
    pub partition: Option<String>,
    pub time: Option<String>,
    pub account: Option<String>,
    pub mem: Option<String>,
    pub cpus_per_task: Option<u32>,
    /// At most this many array tasks at once (`--array=0-9%M`).
    pub max_running: Option<u32>,
    /// More `#SBATCH` options for the jobs and the merge, as sbatch takes them (`--qos=long`).
    pub sbatch_args: Vec<String>,
}

/// The two scripts.
#[derive(Clone, Debug)]
pub struct SlurmScripts {
    pub array: BatchFile,
    pub merge: BatchFile,
}

/// The job ids sbatch gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlurmIds {
    pub array: String,
    pub merge: String,
}

/// An `#SBATCH` line: the value in double quotes when it holds white space (sbatch reads these
/// lines itself, without a shell).
fn directive(option: &str, value: &str) -> String {
    if value.contains(char::is_whitespace) {
        format!("#SBATCH {option}=\"{value}\"\n")
    } else {
        format!("#SBATCH {option}={value}\n")
    }
}

/// The `#SBATCH` lines both scripts share: partition, account, time, memory, extra options.
fn shared_directives(o: &SlurmOptions) -> Result<String, BatchError> {
    let mut s = String::new();
    for (option, value) in [
        ("--partition", &o.partition),
        ("--account", &o.account),
        ("--time", &o.time),
        ("--mem", &o.mem),
    ] {
        if let Some(v) = value {
            one_line(option, v)?;
            s.push_str(&directive(option, v));
        }
    }
    for a in &o.sbatch_args {
        one_line("--sbatch-arg", a)?;
        if !a.starts_with('-') {
            return Err(BatchError::BadOption {
                option: "--sbatch-arg",
                value: a.clone(),
                what: "an sbatch option starts with - (e.g. --sbatch-arg=--qos=long)",
            });
        }
        s.push_str(&format!("#SBATCH {a}\n"));
    }
    Ok(s)
}

/// The array script and the merge script of `split`.
pub fn scripts(split: &Split, o: &SlurmOptions) -> Result<SlurmScripts, BatchError> {
    if o.max_running == Some(0) {
        return Err(BatchError::BadOption {
            option: "--max-running",
            value: "0".into(),
            what: "at least one job has to run at a time",
        });
    }
    if o.cpus_per_task == Some(0) {
        return Err(BatchError::BadOption {
            option: "--cpus-per-task",
            value: "0".into(),
            what: "a job needs at least one CPU",
        });
    }
    let work = split.work_dir.to_string_lossy();
    let cwd = split.cwd.to_string_lossy();
    for (option, v) in [("--work-dir", &*work), ("the current directory", &*cwd)] {
        one_line(option, v)?;
    }
    let shared = shared_directives(o)?;
    let program = shell(&split.program.to_string_lossy());
    let last = split.jobs - 1;
    let throttle = o.max_running.map(|m| format!("%{m}")).unwrap_or_default();

    let mut array = String::from("#!/bin/bash\n");
    array.push_str(&format!(
        "# warpdrive submit slurm: {} jobs of\n#   {}\n",
        split.jobs,
        split.description()
    ));
    array.push_str(&format!(
        "# Job I runs the command with --job-index I and writes {work}/job-I{ext} (--force: a job run\n\
         # again replaces its own output); {MERGE_SCRIPT} merges job-0 … job-{last} into the output.\n\
         # Submitted by `warpdrive submit slurm` as\n\
         #   sbatch --parsable {ARRAY_SCRIPT}\n\
         #   sbatch --parsable --dependency=afterok:<array id> --kill-on-invalid-dep=yes {MERGE_SCRIPT}\n\
         # Re-run failed job I alone, then the merge:\n\
         #   sbatch --array=I {work_q}/{ARRAY_SCRIPT}\n\
         #   sbatch --dependency=afterok:<its id> {work_q}/{MERGE_SCRIPT}\n",
        ext = split.extension(),
        work_q = shell(&work),
    ));
    array.push_str(&directive("--job-name", &format!("warpdrive-{}", split.command.join("-"))));
    array.push_str(&format!("#SBATCH --array=0-{last}{throttle}\n"));
    array.push_str(&directive("--output", &format!("{work}/job-%a.log")));
    array.push_str(&directive("--chdir", &cwd));
    array.push_str("#SBATCH --ntasks=1\n");
    if let Some(c) = o.cpus_per_task {
        array.push_str(&format!("#SBATCH --cpus-per-task={c}\n"));
    }
    if o.gpus_per_job > 0 {
        array.push_str(&format!("#SBATCH --gres=gpu:{}\n", o.gpus_per_job));
    }
    array.push_str(&shared);
    array.push_str("set -euo pipefail\n");
    let words: Vec<String> = split
        .job_words(JobPaths::Absolute)
        .iter()
        .map(|w| shell_word(w, "SLURM_ARRAY_TASK_ID"))
        .collect();
    array.push_str(&format!("exec {program} {}\n", words.join(" ")));

    let mut merge = String::from("#!/bin/bash\n");
    merge.push_str(&format!(
        "# warpdrive submit slurm: the merge of the {} jobs of {ARRAY_SCRIPT} (run after all of them\n\
         # succeeded: --dependency=afterok:<array id>) into {}\n",
        split.jobs,
        split.output.to_string_lossy()
    ));
    merge.push_str(&directive("--job-name", &format!("warpdrive-merge-{}", split.command.join("-"))));
    merge.push_str(&directive("--output", &format!("{work}/merge.log")));
    merge.push_str(&directive("--chdir", &cwd));
    merge.push_str("#SBATCH --ntasks=1\n");
    merge.push_str(&shared);
    merge.push_str("set -euo pipefail\n");
    // Exactly job-0 … job-(N-1), by bash's brace expansion (a stale job-N of an earlier
    // submission with more jobs is never merged).
    let jobs = if split.jobs == 1 {
        shell(&split.job_output(0).to_string_lossy())
    } else {
        format!(
            "{}{{0..{last}}}{}",
            shell(&format!("{work}/job-")),
            if split.extension().is_empty() {
                String::new()
            } else {
                shell(split.extension())
            }
        )
    };
    let mut merge_words: Vec<String> = split.merge_words(vec![]).iter().map(|w| shell(w)).collect();
    merge_words.insert(1, jobs);
    merge.push_str(&format!("exec {program} {}\n", merge_words.join(" ")));
    Ok(SlurmScripts {
        array: BatchFile {
            name: ARRAY_SCRIPT.into(),
            text: array,
        },
        merge: BatchFile {
            name: MERGE_SCRIPT.into(),
            text: merge,
        },
    })
}

/// Submit the written scripts: the array, then the merge depending on it (cancelled by Slurm if
/// a job fails: `--kill-on-invalid-dep=yes`).
pub fn submit(split: &Split) -> Result<SlurmIds, BatchError> {
    let dir = &split.work_dir;
    let id = |out: String| out.lines().next().unwrap_or("").split(';').next().unwrap_or("").trim().to_string();
    let array = id(run_tool(
        "sbatch",
        &[OsStr::new("--parsable"), dir.join(ARRAY_SCRIPT).as_os_str()],
        dir,
        "Slurm",
    )?);
    let dependency = format!("--dependency=afterok:{array}");
    let merge = run_tool(
        "sbatch",
        &[
            OsStr::new("--parsable"),
            OsStr::new(&dependency),
            OsStr::new("--kill-on-invalid-dep=yes"),
            dir.join(MERGE_SCRIPT).as_os_str(),
        ],
        dir,
        "Slurm",
    )
    .map_err(|e| BatchError::Submit {
        what: format!("the merge (the array is job {array}; submit the merge yourself)"),
        status: String::new(),
        stderr: e.to_string(),
    })?;
    Ok(SlurmIds { array, merge: id(merge) })
}
