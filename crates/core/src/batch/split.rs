//! A splittable warpdrive command taken apart: which command, how many jobs, where the merged
//! result goes, and the words every job repeats; from it, each job's command line and the
//! merge's.

use super::{BatchError, CommandShape, OptionShape, Piece, Word};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The options that make a command splittable (ARCHITECTURE.md, "Batch jobs").
const JOBS: &str = "jobs";
const JOB_INDEX: &str = "job-index";
const OUTPUT: &str = "output";
/// The global flag that lets an output be replaced.
const FORCE: &str = "force";

/// One run split into batch jobs: `warpdrive <command> … --jobs N -o OUT`, taken apart.
#[derive(Clone, Debug)]
pub struct Split {
    /// The warpdrive executable the jobs run (absolute).
    pub program: PathBuf,
    /// The command's words, e.g. `["sky", "autocorr"]`.
    pub command: Vec<String>,
    /// Number of jobs (`--jobs`).
    pub jobs: u64,
    /// Where the merged result goes (absolute).
    pub output: PathBuf,
    /// Where the scripts, logs and job outputs go (absolute; default `OUT.jobs` beside OUT).
    pub work_dir: PathBuf,
    /// The user asked to replace an existing output (`--force`): the merge replaces OUT.
    pub force: bool,
    /// The directory the command was given in: jobs run there, so relative inputs resolve as
    /// they did for the user (HTCondor jobs run in the work directory instead).
    pub cwd: PathBuf,
    /// The user's other arguments, in order (`--jobs N` among them; no `-o`, `--job-index`,
    /// `--force`).
    rest: Vec<String>,
    /// The extension of OUT's file name (`.parquet`), which every job output keeps.
    extension: String,
}

/// Where a split command's job outputs are named from: absolute paths in the work directory
/// (a shared file system: Slurm), or names relative to the job's directory (HTCondor, whose
/// file transfer brings `job-N` back into the work directory).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobPaths {
    Absolute,
    Relative,
}

impl Split {
    /// Take `words` — a warpdrive command line, with or without the program's name first — apart
    /// against the commands the front end has (`shapes`), and check that it can be split.
    ///
    /// `force`: the submitting command's own `--force` (the merge may replace OUT).
    pub fn new(
        words: &[OsString],
        shapes: &[CommandShape],
        program: &Path,
        work_dir: Option<&Path>,
        force: bool,
    ) -> Result<Self, BatchError> {
        let cwd = std::env::current_dir().map_err(|source| BatchError::Io {
            path: PathBuf::from("."),
            source,
        })?;
        Self::in_dir(words, shapes, program, work_dir, force, &cwd)
    }

    /// [`Split::new`] as if the command were given in `cwd`.
    pub fn in_dir(
        words: &[OsString],
        shapes: &[CommandShape],
        program: &Path,
        work_dir: Option<&Path>,
        force: bool,
        cwd: &Path,
    ) -> Result<Self, BatchError> {
        let words: Vec<String> = super::command_words(words)
            .iter()
            .map(|w| {
                w.to_str().map(str::to_string).ok_or_else(|| BatchError::NotUtf8 {
                    arg: w.to_string_lossy().into_owned(),
                })
            })
            .collect::<Result<_, _>>()?;
        let mut force = force;
        // Global flags before the command's words (`warpdrive --force sky autocorr`).
        let mut at = 0;
        while let Some(w) = words.get(at) {
            if w == "--force" {
                force = true;
                at += 1;
            } else if w.starts_with('-') {
                return Err(BatchError::NoCommand {
                    found: w.clone(),
                    commands: splittable(shapes),
                });
            } else {
                break;
            }
        }
        let shape = shapes
            .iter()
            .filter(|s| !s.path.is_empty() && words[at..].starts_with(&s.path))
            .max_by_key(|s| s.path.len())
            .ok_or_else(|| BatchError::NoCommand {
                found: words.get(at).cloned().unwrap_or_default(),
                commands: splittable(shapes),
            })?;
        let name = shape.path.join(" ");
        for needed in [JOBS, JOB_INDEX, OUTPUT] {
            if shape.find_long(needed).is_none() {
                return Err(BatchError::NotSplittable {
                    command: name,
                    commands: splittable(shapes),
                });
            }
        }
        let tokens = &words[at + shape.path.len()..];
        let mut rest = Vec::new();
        let mut jobs: Option<(String, String)> = None;
        let mut output: Option<String> = None;
        let mut i = 0;
        while i < tokens.len() {
            let t = &tokens[i];
            i += 1;
            if t == "--" {
                rest.extend(tokens[i - 1..].iter().cloned());
                break;
            }
            let Some((opt, spelled, inline)) = shape.option_of(t) else {
                rest.push(t.clone());
                continue;
            };
            let inline_value = inline.is_some();
            let value = if opt.takes_value {
                match inline {
                    Some(v) => Some(v),
                    None => {
                        let v = tokens
                            .get(i)
                            .cloned()
                            .ok_or_else(|| BatchError::MissingValue { option: spelled.clone() })?;
                        i += 1;
                        Some(v)
                    }
                }
            } else {
                None
            };
            match opt.long.as_deref() {
                Some(JOB_INDEX) => {
                    return Err(BatchError::JobIndexGiven);
                }
                Some(OUTPUT) => output = value,
                Some(FORCE) => force = true,
                Some(JOBS) => {
                    let v = value.unwrap_or_default();
                    rest.push(format!("--{JOBS}"));
                    rest.push(v.clone());
                    jobs = Some((spelled, v));
                }
                _ => {
                    rest.push(t.clone());
                    if !inline_value && opt.takes_value {
                        rest.push(value.unwrap_or_default());
                    }
                }
            }
        }
        let Some((_, jobs_text)) = jobs else {
            return Err(BatchError::NoJobs { command: name });
        };
        let jobs: u64 = jobs_text
            .trim()
            .parse()
            .map_err(|_| BatchError::BadJobs { value: jobs_text.clone() })?;
        if jobs < 1 {
            return Err(BatchError::BadJobs { value: jobs_text });
        }
        let output = output.ok_or_else(|| BatchError::NoOutput { command: name.clone() })?;
        if output.is_empty() {
            return Err(BatchError::NoOutput { command: name });
        }
        let output = lexical_absolute(cwd, Path::new(&output));
        let Some(file_name) = output.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            return Err(BatchError::NoOutput { command: name });
        };
        let extension = Path::new(&file_name)
            .extension()
            .map(|e| format!(".{}", e.to_string_lossy()))
            .unwrap_or_default();
        let work_dir = match work_dir {
            Some(d) => lexical_absolute(cwd, d),
            None => output.with_file_name(format!("{file_name}.jobs")),
        };
        if work_dir == output || work_dir.starts_with(&output) {
            return Err(BatchError::WorkDirInOutput { work_dir, output });
        }
        let program = lexical_absolute(cwd, program);
        Ok(Split {
            program,
            command: shape.path.clone(),
            jobs,
            output,
            work_dir,
            force,
            cwd: cwd.to_path_buf(),
            rest,
            extension,
        })
    }

    /// The user's command as it was asked for (for headers and messages), one line.
    #[must_use]
    pub fn description(&self) -> String {
        let mut w = vec!["warpdrive".to_string()];
        w.extend(self.command.iter().cloned());
        w.extend(self.rest.iter().cloned());
        w.push("-o".into());
        w.push(self.output.to_string_lossy().into_owned());
        w.iter().map(|s| super::quote::shell(s)).collect::<Vec<_>>().join(" ")
    }

    /// The output of job `index` (`job-7`, or `job-7.parquet` when OUT is `x.parquet`).
    #[must_use]
    pub fn job_output(&self, index: u64) -> PathBuf {
        self.work_dir.join(format!("job-{index}{}", self.extension))
    }

    /// Every job's output, in job order: what the merge reads.
    #[must_use]
    pub fn job_outputs(&self) -> Vec<PathBuf> {
        (0..self.jobs).map(|i| self.job_output(i)).collect()
    }

    /// The arguments of every job (after the program): the command's words, `--job-index I`,
    /// `-o` the job's output, `--force` (a job run again replaces its own output), then the
    /// user's arguments.
    #[must_use]
    pub fn job_words(&self, paths: JobPaths) -> Vec<Word> {
        let text = |s: &str| vec![Piece::Text(s.to_string())];
        let mut w: Vec<Word> = self.command.iter().map(|c| text(c)).collect();
        w.push(text("--job-index"));
        w.push(vec![Piece::JobIndex]);
        w.push(text("-o"));
        let prefix = match paths {
            JobPaths::Absolute => format!("{}/job-", self.work_dir.to_string_lossy()),
            JobPaths::Relative => "job-".to_string(),
        };
        let mut out = vec![Piece::Text(prefix), Piece::JobIndex];
        if !self.extension.is_empty() {
            out.push(Piece::Text(self.extension.clone()));
        }
        w.push(out);
        w.push(text("--force"));
        w.extend(self.rest.iter().map(|r| text(r)));
        w
    }

    /// The merge's arguments (after the program) with the job outputs spelled by `jobs`.
    #[must_use]
    pub fn merge_words(&self, jobs: Vec<String>) -> Vec<String> {
        let mut w = vec!["merge".to_string()];
        w.extend(jobs);
        w.push("-o".into());
        w.push(self.output.to_string_lossy().into_owned());
        if self.force {
            w.push("--force".into());
        }
        w
    }

    /// The relative job-output names of the merge when it runs in the work directory.
    #[must_use]
    pub fn relative_job_outputs(&self) -> Vec<String> {
        (0..self.jobs).map(|i| format!("job-{i}{}", self.extension)).collect()
    }

    /// The job outputs' extension (`.parquet`, or empty).
    #[must_use]
    pub fn extension(&self) -> &str {
        &self.extension
    }

    /// Arguments that name existing files or directories by a relative path: a job that runs
    /// elsewhere than the submitting directory (HTCondor's work directory, a grid slot) will
    /// not find them.
    #[must_use]
    pub fn relative_inputs(&self) -> Vec<String> {
        let mut found = Vec::new();
        for r in &self.rest {
            let value = r.split_once('=').map_or(r.as_str(), |(_, v)| v);
            for v in [r.as_str(), value] {
                let p = Path::new(v);
                if !v.is_empty() && !v.starts_with('-') && p.is_relative() && self.cwd.join(p).exists() {
                    found.push(v.to_string());
                    break;
                }
            }
        }
        found
    }
}

/// `p` made absolute against `cwd`, `.` and `..` resolved without reading the file system.
fn lexical_absolute(cwd: &Path, p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in cwd.join(p).components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The commands that can be split, for error messages: `sky autocorr, sky inject`.
fn splittable(shapes: &[CommandShape]) -> String {
    let names: Vec<String> = shapes
        .iter()
        .filter(|s| !s.path.is_empty() && [JOBS, JOB_INDEX, OUTPUT].iter().all(|o| s.find_long(o).is_some()))
        .map(|s| s.path.join(" "))
        .collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

impl CommandShape {
    fn find_long(&self, long: &str) -> Option<&OptionShape> {
        self.options.iter().find(|o| o.long.as_deref() == Some(long))
    }

    /// The option a token starts (`--name`, `--name=value`, `-o`, `-oVALUE`, `-o=VALUE`), how
    /// it was spelled, and its value when written in the same token. Short flags given as a
    /// cluster (`-ab`) name their last option; a token that is no option of this command
    /// (a positional argument, a negative number) gives `None`.
    fn option_of(&self, token: &str) -> Option<(&OptionShape, String, Option<String>)> {
        if let Some(long) = token.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let opt = self.find_long(name)?;
            return Some((opt, format!("--{name}"), inline));
        }
        let mut chars = token.strip_prefix('-')?.chars();
        let mut last = None;
        while let Some(c) = chars.next() {
            let opt = self.options.iter().find(|o| o.short == Some(c))?;
            if opt.takes_value {
                let rest: String = chars.collect();
                let rest = rest.strip_prefix('=').map(str::to_string).unwrap_or(rest);
                return Some((opt, format!("-{c}"), (!rest.is_empty()).then_some(rest)));
            }
            last = Some((opt, format!("-{c}"), None));
        }
        last
    }
}
