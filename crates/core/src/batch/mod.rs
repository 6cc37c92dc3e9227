//! Runs spread over batch systems (issue #33): a splittable warpdrive command — one that takes
//! `--jobs N --job-index I` and `-o/--output PATH`, whose job outputs `warpdrive merge JOBS… -o
//! OUT` combines into the single run's result — turned into the files a batch system runs:
//!
//! * [`slurm`]: an sbatch array script (`--job-index $SLURM_ARRAY_TASK_ID`) and a merge script
//!   submitted with `--dependency=afterok:<array>`;
//! * [`htcondor`]: a submit description queueing N processes (`--job-index $(Process)`), the
//!   merge's, and a DAGMan file whose merge node is the child of the work node.
//!
//! The front end describes its commands ([`CommandShape`]: the words that name a command and its
//! options), [`Split`] takes the user's command apart against them and refuses what cannot be
//! split; every job runs the same command with `--job-index I -o WORK/job-I --force` (so a job
//! run again replaces its own output), and the merge reads `WORK/job-0 … job-(N-1)` — exactly
//! those, so outputs of an earlier submission with more jobs are never merged. The work
//! directory is `OUT.jobs` beside the output unless chosen. The files are written by
//! [`write_files`]; the front end only prints or submits them.

pub mod htcondor;
pub mod quote;
pub mod slurm;
mod split;

pub use split::{JobPaths, Split};

use crate::output::Staged;
use std::path::{Path, PathBuf};

/// One piece of a job's argument: literal text or the job's index (filled in by the batch
/// system: `$SLURM_ARRAY_TASK_ID`, `$(Process)`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    JobIndex,
}

/// One argument of a job's command line, in pieces (`job-` + index + `.parquet`).
pub type Word = Vec<Piece>;

/// A command of the front end, as far as splitting needs to know it: the words that name it
/// (`["sky", "autocorr"]`; empty for the program itself, whose options are the global ones) and
/// its options (which take a value, so that values are never mistaken for options).
#[derive(Clone, Debug, Default)]
pub struct CommandShape {
    pub path: Vec<String>,
    pub options: Vec<OptionShape>,
}

/// An option of a command: `--long` and/or `-s`, flag or taking a value.
#[derive(Clone, Debug)]
pub struct OptionShape {
    pub long: Option<String>,
    pub short: Option<char>,
    pub takes_value: bool,
}

/// The command's words without the program's name, if they start with it (`-- warpdrive sky
/// autocorr …` and `-- sky autocorr …` are the same command).
#[must_use]
pub fn command_words(words: &[std::ffi::OsString]) -> &[std::ffi::OsString] {
    match words.first() {
        Some(w) if Path::new(w).file_name().is_some_and(|n| n == "warpdrive") => &words[1..],
        _ => words,
    }
}

/// A file the batch system reads, by its name in the work directory.
#[derive(Clone, Debug)]
pub struct BatchFile {
    pub name: String,
    pub text: String,
}

/// Why a command cannot be submitted.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    #[error("'{found}' is not a warpdrive command; give the command to split after `--`, e.g. `-- warpdrive sky autocorr --jobs 10 -o out` (commands that can be split: {commands})")]
    NoCommand { found: String, commands: String },
    #[error("`warpdrive {command}` cannot be split into batch jobs: it has no --jobs/--job-index/-o options (commands that can be split: {commands})")]
    NotSplittable { command: String, commands: String },
    #[error("`warpdrive {command}` has no --jobs N: say into how many jobs the run is split")]
    NoJobs { command: String },
    #[error("--jobs {value}: the number of jobs is a whole number of at least 1")]
    BadJobs { value: String },
    #[error("--job-index is set for each job by the batch system ($SLURM_ARRAY_TASK_ID, $(Process)); remove it from the command")]
    JobIndexGiven,
    #[error("`warpdrive {command}` has no -o/--output: name where the merged result goes (the jobs' outputs go to OUT.jobs/ beside it)")]
    NoOutput { command: String },
    #[error("{option} needs a value")]
    MissingValue { option: String },
    #[error("argument '{arg}' is not UTF-8 text; batch files are text: rename the file or use a link with a UTF-8 name")]
    NotUtf8 { arg: String },
    #[error("argument {arg:?}: {what}")]
    Unrepresentable { arg: String, what: &'static str },
    #[error("{option} {value:?}: {what}")]
    BadOption {
        option: &'static str,
        value: String,
        what: &'static str,
    },
    #[error("the work directory {} lies in the output {}; choose --work-dir outside it", work_dir.display(), output.display())]
    WorkDirInOutput { work_dir: PathBuf, output: PathBuf },
    #[error("{}: exists; the merge would refuse to replace it: remove it, choose another -o, or pass --force to replace it", output.display())]
    OutputExists { output: PathBuf },
    #[error("{}: exists and was not made by `warpdrive submit` (no {MARKER} in it); choose another --work-dir or remove it", work_dir.display())]
    ForeignWorkDir { work_dir: PathBuf },
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Output(#[from] crate::output::OutputError),
    #[error("`{program}` was not found: submit from a machine where {system} is installed, or pass --dry-run to only write the files")]
    NoScheduler { program: String, system: &'static str },
    #[error("{what} failed ({status}): {stderr}")]
    Submit { what: String, status: String, stderr: String },
}

/// The file that marks a work directory as made by `warpdrive submit`.
pub const MARKER: &str = ".warpdrive-submit";

/// Write `files` into the split's work directory (created; one made by an earlier submission —
/// it holds [`MARKER`] — is reused, its job outputs replaced by the jobs that run again). The
/// merged output must not exist unless the split may replace it.
pub fn write_files(split: &Split, files: &[BatchFile]) -> Result<(), BatchError> {
    if !split.force && std::fs::symlink_metadata(&split.output).is_ok() {
        return Err(BatchError::OutputExists {
            output: split.output.clone(),
        });
    }
    let dir = &split.work_dir;
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| BatchError::Io { path, source }
    };
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() && !dir.join(MARKER).exists() {
                return Err(BatchError::ForeignWorkDir { work_dir: dir.clone() });
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::create_dir_all(dir).map_err(io(dir))?,
        Err(e) => return Err(io(dir)(e)),
    }
    let marker = format!("{}\n", split.description());
    Staged::file(&dir.join(MARKER), true, &[])?.write(marker.as_bytes())?;
    for f in files {
        Staged::file(&dir.join(&f.name), true, &[])?.write(f.text.as_bytes())?;
    }
    Ok(())
}

/// Run a batch system's submit command; its standard output when it succeeds.
fn run_tool(program: &str, args: &[&std::ffi::OsStr], dir: &Path, system: &'static str) -> Result<String, BatchError> {
    let out = std::process::Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => BatchError::NoScheduler {
                program: program.to_string(),
                system,
            },
            _ => BatchError::Io {
                path: PathBuf::from(program),
                source: e,
            },
        })?;
    let what = std::iter::once(program.to_string())
        .chain(args.iter().map(|a| a.to_string_lossy().into_owned()))
        .collect::<Vec<_>>()
        .join(" ");
    if !out.status.success() {
        return Err(BatchError::Submit {
            what,
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A value that goes into a batch file on a line of its own: refused when it holds a line break.
fn one_line(option: &'static str, value: &str) -> Result<(), BatchError> {
    if value.contains(['\n', '\r']) {
        return Err(BatchError::BadOption {
            option,
            value: value.to_string(),
            what: "a value in a batch file cannot hold a line break",
        });
    }
    if value.trim().is_empty() {
        return Err(BatchError::BadOption {
            option,
            value: value.to_string(),
            what: "give a value or leave the option out",
        });
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests;
