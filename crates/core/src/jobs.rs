//! Runs split into batch jobs (`--jobs N --job-index I`) and the checks `warpdrive merge` makes
//! before it combines their outputs (issue #33).
//!
//! A split run gives each job a contiguous share of its items — photons, events, points,
//! particles — by [`Share::share`]. Every item draws its random numbers from its own stream keyed
//! by the seed and the item's global number, so a job computes exactly what the whole run
//! computes for those items, and the merged outputs equal the unsplit run's for any job count.
//!
//! Each job's output carries a [`JobStamp`] (Parquet key/value metadata, `warpdrive.job.*`):
//! what ran, a fingerprint of the request (inputs by content, options, seed, arithmetic), the
//! warpdrive version, the job's index and count and its items. [`check_jobs`] refuses a set
//! with a missing, repeated or foreign job, naming it.

use crate::engine::{Control, Error, ParamError};
use crate::error::InputError;
use crate::hash::Fnv64;
use crate::table::{Column, ParquetFile, Table};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// Which share of a run this process computes: job `index` of `jobs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Share {
    pub jobs: u64,
    pub index: u64,
}

impl Default for Share {
    fn default() -> Self {
        Self::WHOLE
    }
}

impl Share {
    /// The whole run in one job.
    pub const WHOLE: Share = Share { jobs: 1, index: 0 };

    /// Job `index` of `jobs` (`--jobs`, `--job-index`; `jobs`, `job_index` in Python).
    pub fn new(jobs: u64, index: u64) -> Result<Self, ParamError> {
        if jobs == 0 {
            return Err(ParamError::new("jobs", "must be at least 1"));
        }
        if index >= jobs {
            return Err(ParamError::new("job_index", format!("{index} must be below {{jobs}} {jobs}")));
        }
        Ok(Self { jobs, index })
    }

    #[must_use]
    pub fn is_whole(&self) -> bool {
        self.jobs == 1
    }

    /// The items of this job when `total` items are cut into `jobs` contiguous shares whose
    /// sizes differ by at most one: job k gets ⌊total·k/jobs⌋ .. ⌊total·(k+1)/jobs⌋.
    #[must_use]
    pub fn items(&self, total: u64) -> Range<u64> {
        let at = |k: u64| (u128::from(total) * u128::from(k) / u128::from(self.jobs)) as u64;
        at(self.index)..at(self.index + 1)
    }
}

/// What a job's output records about the job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobStamp {
    /// What ran, as the command line names it: `photon`, `em shower`, `spline eval`, …
    pub kind: String,
    /// Fingerprint of the request besides the split ([`fingerprint`]).
    pub run: String,
    pub version: String,
    pub jobs: u64,
    pub index: u64,
    /// The items this job computed, of `total`.
    pub items: Range<u64>,
    pub total: u64,
    /// How the job was asked for (provenance only; not compared).
    pub command: String,
}

const KEYS: [&str; 7] = [
    "warpdrive.job.kind",
    "warpdrive.job.run",
    "warpdrive.job.version",
    "warpdrive.job.jobs",
    "warpdrive.job.index",
    "warpdrive.job.items",
    "warpdrive.job.command",
];

impl JobStamp {
    /// The stamp of job `share` of a run of `kind` with fingerprint `run` over `total` items.
    #[must_use]
    pub fn new(kind: &str, run: String, share: Share, total: u64, command: &str) -> Self {
        Self {
            kind: kind.to_string(),
            run,
            version: env!("CARGO_PKG_VERSION").to_string(),
            jobs: share.jobs,
            index: share.index,
            items: share.items(total),
            total,
            command: command.to_string(),
        }
    }

    /// The stamp as Parquet key/value metadata (`warpdrive.job.*`).
    #[must_use]
    pub fn metadata(&self) -> Vec<(String, String)> {
        let values = [
            self.kind.clone(),
            self.run.clone(),
            self.version.clone(),
            self.jobs.to_string(),
            self.index.to_string(),
            format!("{}..{} of {}", self.items.start, self.items.end, self.total),
            self.command.clone(),
        ];
        KEYS.iter().map(|k| k.to_string()).zip(values).collect()
    }

    /// The stamp in the metadata of `path`, or `None` when it is not a job's output.
    pub fn from_metadata(path: &Path, meta: &[(String, String)]) -> Result<Option<Self>, InputError> {
        let get = |k: &str| meta.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
        let Some(kind) = get(KEYS[0]) else { return Ok(None) };
        let need = |k: &str| get(k).ok_or_else(|| InputError::file(path, format!("job metadata without `{k}`")));
        let number = |k: &str, v: &str| {
            v.trim()
                .parse::<u64>()
                .map_err(|_| InputError::file(path, format!("job metadata `{k}` = {v:?} is not a count")))
        };
        let items = need(KEYS[5])?;
        let bad = || InputError::file(path, format!("job metadata `{}` = {items:?} is not `lo..hi of total`", KEYS[5]));
        let (range, total) = items.split_once(" of ").ok_or_else(bad)?;
        let (lo, hi) = range.split_once("..").ok_or_else(bad)?;
        Ok(Some(Self {
            kind: kind.to_string(),
            run: need(KEYS[1])?.to_string(),
            version: need(KEYS[2])?.to_string(),
            jobs: number(KEYS[3], need(KEYS[3])?)?,
            index: number(KEYS[4], need(KEYS[4])?)?,
            items: number(KEYS[5], lo)?..number(KEYS[5], hi)?,
            total: number(KEYS[5], total)?,
            command: get(KEYS[6]).unwrap_or("").to_string(),
        }))
    }

    /// `meta` without the job's keys: what the unsplit run's output holds.
    #[must_use]
    pub fn strip(meta: &[(String, String)]) -> Vec<(String, String)> {
        meta.iter().filter(|(k, _)| !KEYS.contains(&k.as_str())).cloned().collect()
    }
}

/// Fingerprint of a request: its defining `fields` (name, value) and the contents of its input
/// files (of a directory: its files), so that jobs given the same paths to different files are
/// told apart.
pub fn fingerprint(fields: &[(String, String)], inputs: &[PathBuf]) -> Result<String, InputError> {
    let mut h = Fnv64::new();
    for (k, v) in fields {
        h.part(k.as_bytes()).part(v.as_bytes());
    }
    let read = |p: &Path| std::fs::read(p).map_err(|e| InputError::file(p, format!("cannot read it to fingerprint the run: {e}")));
    for p in inputs {
        if p.is_dir() {
            // A directory (an ice model): its files, by name, not its subdirectories.
            let listing = std::fs::read_dir(p).map_err(|e| InputError::file(p, format!("cannot list it to fingerprint the run: {e}")))?;
            let mut files: Vec<PathBuf> = listing.filter_map(|e| e.ok().map(|e| e.path())).filter(|f| f.is_file()).collect();
            files.sort();
            for f in files {
                h.part(f.file_name().map(|n| n.as_encoded_bytes()).unwrap_or_default())
                    .part(&read(&f)?);
            }
        } else {
            h.part(&read(p)?);
        }
    }
    Ok(h.hex())
}

/// Check that `stamps` (one per output, with its path) are the jobs of one run, each exactly
/// once and none missing; returns the outputs' positions in job order.
pub fn check_jobs(stamps: &[(PathBuf, JobStamp)]) -> Result<Vec<usize>, Error> {
    let Some((p0, s0)) = stamps.first() else {
        return Err(Error::Failed("no job outputs given: name every job's output".into()));
    };
    let shown = |p: &Path| p.display().to_string();
    let mut by_index: Vec<Option<usize>> = vec![None; usize::try_from(s0.jobs).unwrap_or(usize::MAX).min(1 << 24)];
    if (by_index.len() as u64) < s0.jobs {
        return Err(InputError::file(p0, format!("claims {} jobs, more than a merge can take", s0.jobs)).into());
    }
    for (k, (p, s)) in stamps.iter().enumerate() {
        let foreign = |what: String| -> Error { InputError::file(p, what).into() };
        if s.kind != s0.kind {
            return Err(foreign(format!("is a `{}` job, but {} is a `{}` job", s.kind, shown(p0), s0.kind)));
        }
        if s.version != s0.version {
            return Err(foreign(format!(
                "was made by warpdrive {}, {} by {}: re-run the jobs with one version",
                s.version,
                shown(p0),
                s0.version
            )));
        }
        if s.run != s0.run || s.total != s0.total {
            return Err(foreign(format!(
                "is a job of a different run than {} (inputs, options, seed or arithmetic differ)",
                shown(p0)
            )));
        }
        if s.jobs != s0.jobs {
            return Err(foreign(format!(
                "is one of {} jobs, but {} is one of {}",
                s.jobs,
                shown(p0),
                s0.jobs
            )));
        }
        let expect = Share {
            jobs: s.jobs,
            index: s.index,
        };
        if s.index >= s.jobs || s.items != expect.items(s.total) {
            return Err(foreign(format!(
                "job {} of {} holds items {}..{}, not its share of {}",
                s.index, s.jobs, s.items.start, s.items.end, s.total
            )));
        }
        let slot = &mut by_index[s.index as usize];
        if let Some(other) = *slot {
            return Err(foreign(format!(
                "is job {} of {}, as is {}: give each job's output once",
                s.index,
                s.jobs,
                shown(&stamps[other].0)
            )));
        }
        *slot = Some(k);
    }
    let missing: Vec<String> = (0..by_index.len())
        .filter(|&i| by_index[i].is_none())
        .map(|i| i.to_string())
        .collect();
    if !missing.is_empty() {
        let list = if missing.len() > 12 {
            format!("{} … ({} jobs)", missing[..12].join(", "), missing.len())
        } else {
            missing.join(", ")
        };
        return Err(Error::Failed(format!(
            "the job outputs lack job {list} of {}: run the missing job (`--job-index I`) and merge again",
            s0.jobs
        )));
    }
    Ok(by_index.into_iter().flatten().collect())
}

/// The kind of job whose output `path` is (a Parquet file, or a directory holding one with the
/// job's stamp), or `None` for an output without a stamp (sky's job directories keep theirs in
/// their own files).
pub fn kind_of(path: &Path) -> Result<Option<String>, InputError> {
    let file = if path.is_dir() {
        let listing = std::fs::read_dir(path).map_err(|e| InputError::file(path, format!("cannot list it: {e}")))?;
        let mut parquet: Vec<PathBuf> = listing
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|f| f.extension().is_some_and(|x| x == "parquet"))
            .collect();
        parquet.sort();
        match parquet.into_iter().next() {
            Some(f) => f,
            None => return Ok(None),
        }
    } else {
        path.to_path_buf()
    };
    let f = ParquetFile::open(&file)?;
    match JobStamp::from_metadata(&file, &f.metadata())? {
        Some(s) => Ok(Some(s.kind)),
        None if path.is_dir() => Ok(None),
        None => Err(not_a_job(path)),
    }
}

fn not_a_job(path: &Path) -> InputError {
    InputError::file(
        path,
        "is not the output of a job (no warpdrive.job metadata): merge the outputs of a run given --jobs N --job-index I",
    )
}

/// The job stamps of `jobs` (Parquet files), checked as one run of `kind` ([`check_jobs`]),
/// with each file in job order.
pub fn read_jobs(jobs: &[PathBuf], kind: &str) -> Result<Vec<(PathBuf, ParquetFile)>, Error> {
    let mut files = Vec::with_capacity(jobs.len());
    let mut stamps = Vec::with_capacity(jobs.len());
    for p in jobs {
        let f = ParquetFile::open(p)?;
        let stamp = JobStamp::from_metadata(p, &f.metadata())?.ok_or_else(|| not_a_job(p))?;
        if stamp.kind != kind {
            return Err(InputError::file(p, format!("is a `{}` job, not a `{kind}` job", stamp.kind)).into());
        }
        stamps.push((p.clone(), stamp));
        files.push(Some(f));
    }
    let order = check_jobs(&stamps)?;
    Ok(order
        .into_iter()
        .map(|k| (jobs[k].clone(), files[k].take().expect("each job once")))
        .collect())
}

/// [`merge_tables`], written to `output` (a Parquet file; refused when it exists without
/// `force` or is one of the jobs) when given: the file appears whole or not at all.
pub fn merge_tables_into(jobs: &[PathBuf], kind: &str, output: Option<&Path>, force: bool, ctl: &Control) -> Result<Table, Error> {
    let staged = match output {
        Some(o) => Some(crate::output::Staged::file(
            o,
            force,
            &jobs.iter().map(PathBuf::as_path).collect::<Vec<_>>(),
        )?),
        None => None,
    };
    let table = merge_tables(jobs, kind, ctl)?;
    if let Some(out) = staged {
        table
            .write_parquet(out.path())
            .map_err(|e| Error::Failed(format!("{}: {e}", out.dest().display())))?;
        out.commit()?;
    }
    Ok(table)
}

/// The tables of the Parquet outputs `jobs` of one split run of `kind`, rows appended in job
/// order, with the metadata of the unsplit run (the job keys dropped): the unsplit run's table
/// when each job's rows are those of its share of the items, in item order.
pub fn merge_tables(jobs: &[PathBuf], kind: &str, ctl: &Control) -> Result<Table, Error> {
    ctl.check()?;
    let files = read_jobs(jobs, kind)?;
    let (first_path, first) = &files[0];
    let names = first.names();
    let metadata = JobStamp::strip(&first.metadata());
    let rows: u64 = files.iter().map(|(_, f)| f.rows()).sum();
    crate::limits::check_alloc(
        &format!("the merged table ({} columns × {rows} rows)", names.len()),
        rows.saturating_mul(names.len() as u64),
        8,
        "merge fewer jobs at a time",
    )?;
    let mut merged: Option<Vec<Column>> = None;
    for (p, f) in &files {
        ctl.check()?;
        if f.names() != names {
            return Err(InputError::file(p, format!("has columns {:?}, {} has {:?}", f.names(), first_path.display(), names)).into());
        }
        if JobStamp::strip(&f.metadata()) != metadata {
            return Err(InputError::file(p, format!("has other run metadata than {}", first_path.display())).into());
        }
        let cols = f.columns_with_text(&(0..names.len()).collect::<Vec<_>>())?;
        match &mut merged {
            None => merged = Some(cols),
            Some(all) => {
                for ((name, into), c) in names.iter().zip(all.iter_mut()).zip(cols) {
                    if !into.append(c) {
                        return Err(
                            InputError::file(p, format!("column `{name}` has another type than in {}", first_path.display())).into(),
                        );
                    }
                }
            }
        }
    }
    Ok(Table {
        columns: names.into_iter().zip(merged.unwrap_or_default()).collect(),
        metadata,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Style;

    fn stamp(jobs: u64, index: u64) -> (PathBuf, JobStamp) {
        let s = Share::new(jobs, index).unwrap();
        (
            format!("job-{index}").into(),
            JobStamp::new("photon", "abc".into(), s, 1000, "warpdrive photon"),
        )
    }

    fn err(set: &[(PathBuf, JobStamp)]) -> String {
        check_jobs(set).unwrap_err().render(Style::Cli)
    }

    #[test]
    fn shares_cover_the_items_once_for_any_job_count() {
        for total in [0u64, 1, 7, 1000, u64::MAX] {
            for jobs in [1u64, 2, 3, 7, 64] {
                let mut next = 0;
                for index in 0..jobs {
                    let r = Share::new(jobs, index).unwrap().items(total);
                    assert_eq!(r.start, next, "total {total} jobs {jobs} index {index}");
                    assert!(r.end - r.start - total / jobs <= 1);
                    next = r.end;
                }
                assert_eq!(next, total);
            }
        }
    }

    #[test]
    fn bad_splits_name_the_option() {
        assert_eq!(Share::new(0, 0).unwrap_err().render(Style::Cli), "--jobs must be at least 1");
        assert_eq!(
            Share::new(3, 3).unwrap_err().render(Style::Cli),
            "--job-index 3 must be below --jobs 3"
        );
        assert_eq!(
            Share::new(3, 3).unwrap_err().render(Style::Python),
            "job_index 3 must be below jobs 3"
        );
    }

    #[test]
    fn stamps_round_trip_through_metadata() {
        let (p, s) = stamp(7, 3);
        let mut meta = vec![("warpdrive.seed".to_string(), "1".to_string())];
        meta.extend(s.metadata());
        assert_eq!(JobStamp::from_metadata(&p, &meta).unwrap(), Some(s));
        assert_eq!(JobStamp::strip(&meta), vec![("warpdrive.seed".to_string(), "1".to_string())]);
        assert_eq!(JobStamp::from_metadata(&p, &JobStamp::strip(&meta)).unwrap(), None);
        meta.retain(|(k, _)| k != "warpdrive.job.items");
        assert!(JobStamp::from_metadata(&p, &meta)
            .unwrap_err()
            .to_string()
            .contains("warpdrive.job.items"));
    }

    #[test]
    fn a_complete_set_comes_back_in_job_order() {
        let set = vec![stamp(3, 2), stamp(3, 0), stamp(3, 1)];
        assert_eq!(check_jobs(&set).unwrap(), vec![1, 2, 0]);
    }

    #[test]
    fn missing_repeated_and_foreign_jobs_are_named() {
        assert_eq!(
            err(&[stamp(4, 0), stamp(4, 2)]),
            "the job outputs lack job 1, 3 of 4: run the missing job (`--job-index I`) and merge again"
        );
        assert!(err(&[stamp(2, 0), stamp(2, 0)]).contains("job-0: is job 0 of 2, as is job-0"));
        assert!(err(&[stamp(2, 0), stamp(3, 1)]).contains("is one of 3 jobs, but job-0 is one of 2"));
        let mut other = stamp(2, 1);
        other.1.run = "def".into();
        assert!(err(&[stamp(2, 0), other]).contains("job-1: is a job of a different run than job-0"));
        let mut old = stamp(2, 1);
        old.1.version = "0.0.1".into();
        assert!(err(&[stamp(2, 0), old]).contains("was made by warpdrive 0.0.1"));
        let mut kind = stamp(2, 1);
        kind.1.kind = "em shower".into();
        assert!(err(&[stamp(2, 0), kind]).contains("is a `em shower` job"));
        let mut moved = stamp(2, 1);
        moved.1.items = 400..1000;
        assert!(err(&[stamp(2, 0), moved]).contains("not its share of 1000"));
        assert!(err(&[]).contains("no job outputs given"));
    }

    #[test]
    fn the_fingerprint_reads_the_inputs() {
        let dir = std::env::temp_dir().join(format!("wd-split-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("in.txt");
        std::fs::write(&f, "a").unwrap();
        let fields = vec![("seed".to_string(), "1".to_string())];
        let a = fingerprint(&fields, std::slice::from_ref(&f)).unwrap();
        std::fs::write(&f, "b").unwrap();
        let b = fingerprint(&fields, std::slice::from_ref(&f)).unwrap();
        assert_ne!(a, b);
        assert_ne!(fingerprint(&[], std::slice::from_ref(&f)).unwrap(), b);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
