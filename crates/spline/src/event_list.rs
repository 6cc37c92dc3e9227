//! Millipede over a list of events (`warpdrive spline unfold --events LIST`): every event with
//! its own hypothesis, the tables and geometry read once, and the list splittable into batch
//! jobs (`--jobs N --job-index I`) whose outputs `warpdrive merge` combines.
//!
//! The list is CSV with the header `event,kind,x,y,z,zenith,azimuth,t,length`, one line per
//! event: `event` is the event's Parquet file (as `--event` takes it; relative paths are taken
//! from the list's directory), `kind` is `cascade` or `track`, then the hypothesis as `--cascade`
//! (x, y, z [m], zenith, azimuth [deg], t [ns]) or `--track` (the same and the length [m]; the
//! `length` field is empty for a cascade). Lines starting with `#` and blank lines are skipped.
//!
//! Output directory: `energies.parquet` (event, source, distance, x, y, z, time, energy, sigma),
//! `events.parquet` (one row per event: event, sources, rows, hit_doms, charge_pe,
//! total_energy, total_sigma, log_likelihood, chi2, converged, iterations), `summary.json` (the
//! settings, events and how many converged) and `run.json` (device, timings). A batch job writes
//! its share of the events, in list order, with the job stamp; the merge concatenates the tables
//! and rebuilds the summary from them, so it is the unsplit run's.

use crate::engine::{check_unfold_options, solver_name, EventInput, Setup, Unfold, UnfoldOptions, UnfoldResult};
use crate::millipede::model::Hypothesis;
use std::path::{Path, PathBuf};
use std::time::Instant;
use warpdrive_core::engine::{Control, Error, ParamError, Result};
use warpdrive_core::jobs::{self, JobStamp, Share};
use warpdrive_core::output::Staged;
use warpdrive_core::table::{Column, Table};
use warpdrive_core::InputError;

/// The job kind of a split list unfolding.
pub const JOB_KIND: &str = "spline unfold";
/// The header of an event list.
pub const HEADER: &str = "event,kind,x,y,z,zenith,azimuth,t,length";
/// The most events a list may hold.
pub const MAX_EVENTS: usize = 10_000_000;
/// Metadata key of the run's settings (JSON), from which a merge rebuilds `summary.json`.
const SETTINGS: &str = "spline.unfold.settings";

/// One line of an event list.
#[derive(Clone, Debug)]
pub struct Entry {
    pub event: PathBuf,
    pub hypothesis: Hypothesis,
    /// Its line in the list (for errors).
    pub line: usize,
}

/// Read an event list (module docs); errors name the list, line and field.
pub fn read_list(list: &Path, spacing: f64) -> Result<Vec<Entry>, Error> {
    let text = warpdrive_core::input::read_text(list)?;
    let base = list.parent().unwrap_or(Path::new("."));
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    match lines.next() {
        Some((_, h)) if h.trim().replace(' ', "") == HEADER => {}
        Some((i, h)) => {
            return Err(InputError::new(list, i + 1, format!("header '{}': expected '{HEADER}'", h.trim())).into());
        }
        None => return Err(InputError::file(list, format!("is empty: expected the header '{HEADER}' and one line per event")).into()),
    }
    let mut out = Vec::new();
    for (i, l) in lines {
        let at = i + 1;
        if out.len() >= MAX_EVENTS {
            return Err(InputError::new(list, at, format!("more than {MAX_EVENTS} events: split the list")).into());
        }
        let f: Vec<&str> = l.split(',').map(str::trim).collect();
        if f.len() != 9 {
            return Err(InputError::new(list, at, format!("{} fields, expected 9 ({HEADER})", f.len())).into());
        }
        let names = ["x", "y", "z", "zenith", "azimuth", "t", "length"];
        let mut num = Vec::with_capacity(7);
        for (k, v) in f[2..9].iter().enumerate() {
            if k == 6 && v.is_empty() {
                break;
            }
            let x: f64 = v
                .parse()
                .map_err(|_| InputError::new(list, at, format!("'{v}' is not a number")).field(names[k]))?;
            num.push(x);
        }
        let (cascade, track) = match f[1] {
            "cascade" if num.len() == 6 => (Some(&num[..]), None),
            "cascade" => {
                return Err(InputError::new(list, at, "a cascade has no length (leave the field empty)")
                    .field("length")
                    .into())
            }
            "track" if num.len() == 7 => (None, Some(&num[..])),
            "track" => return Err(InputError::new(list, at, "a track needs its length [m]").field("length").into()),
            other => {
                return Err(InputError::new(list, at, format!("'{other}': expected cascade or track"))
                    .field("kind")
                    .into())
            }
        };
        let hypothesis =
            Hypothesis::from_numbers(cascade, track, spacing).map_err(|e| InputError::new(list, at, e.to_string()).field(f[1]))?;
        if f[0].is_empty() {
            return Err(InputError::new(list, at, "no event file").field("event").into());
        }
        let p = Path::new(f[0]);
        out.push(Entry {
            event: if p.is_absolute() { p.to_path_buf() } else { base.join(p) },
            hypothesis,
            line: at,
        });
    }
    if out.is_empty() {
        return Err(InputError::file(list, "lists no event").into());
    }
    Ok(out)
}

/// Refuse batch jobs of a single-event unfolding (`--event` with `--jobs N`): only a list of
/// events is split.
pub fn refuse_split_of_one_event(split: Share) -> Result<(), ParamError> {
    if split.is_whole() {
        return Ok(());
    }
    Err(ParamError::new(
        "jobs",
        format!(
            "{}: one event cannot be split; give a list of events ({{events}}) to split it into batch jobs",
            split.jobs
        ),
    ))
}

/// A validated unfolding of a list of events (or a batch job's share of it).
#[derive(Debug)]
pub struct UnfoldEvents {
    list: PathBuf,
    entries: Vec<Entry>,
    setup: Setup,
    opts: UnfoldOptions,
    split: Share,
    command: String,
}

impl UnfoldEvents {
    /// Read the tables, geometry and list (the events are read one at a time by [`run`]).
    /// `o.model`'s `cascade`/`track` must be unset: each event has its own hypothesis.
    ///
    /// [`run`]: UnfoldEvents::run
    pub fn new(list: &Path, o: &UnfoldOptions, split: Share) -> Result<Self> {
        check_unfold_options(o)?;
        if o.model.cascade.is_some() || o.model.track.is_some() {
            return Err(ParamError::new(
                if o.model.cascade.is_some() { "cascade" } else { "track" },
                "cannot be given with {events}: each event of the list has its own hypothesis",
            )
            .into());
        }
        let entries = read_list(list, o.model.spacing)?;
        // The model is read once; a placeholder hypothesis is replaced for each event.
        let mut model = o.model.clone();
        model.cascade = Some(vec![0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        let mut setup = Setup::new(&model)?;
        setup.inputs.push(list.to_path_buf());
        if split.jobs > entries.len() as u64 {
            return Err(ParamError::new(
                "jobs",
                format!(
                    "{}: the list holds {} events, and a job unfolds whole events",
                    split.jobs,
                    entries.len()
                ),
            )
            .into());
        }
        Ok(Self {
            list: list.to_path_buf(),
            entries,
            setup,
            opts: o.clone(),
            split,
            // What defines the run (not how it was invoked: a job's `--job-index` must not show).
            command: std::iter::once(format!("spline unfold --events {}", list.display()))
                .chain(o.model.files.paths().iter().map(|p| p.display().to_string()))
                .collect::<Vec<_>>()
                .join(" "),
        })
    }

    /// Events in the list (all jobs).
    pub fn events(&self) -> usize {
        self.entries.len()
    }

    /// The files read (outputs must not replace or contain them); the events are read in
    /// [`UnfoldEvents::run`].
    pub fn inputs(&self) -> Vec<PathBuf> {
        self.setup
            .inputs
            .iter()
            .cloned()
            .chain(self.entries.iter().map(|e| e.event.clone()))
            .collect()
    }

    /// Unfold this job's events, one after the other (each as `spline unfold --event` would,
    /// Λ on the control's GPU or CPU threads). An event that fails names its list line.
    pub fn run(&self, ctl: &Control) -> Result<EventsResult> {
        let range = self.split.items(self.entries.len() as u64);
        let t0 = Instant::now();
        let mut results = Vec::with_capacity((range.end - range.start) as usize);
        for k in range.clone() {
            ctl.check()?;
            let e = &self.entries[k as usize];
            let name = |err: Error| -> Error {
                match err {
                    Error::Cancelled(c) => Error::Cancelled(c),
                    other => Error::Failed(format!("{}:{}: event {}: {other}", self.list.display(), e.line, e.event.display())),
                }
            };
            let u =
                Unfold::with_setup(self.setup.with(e.hypothesis.clone()), EventInput::File(e.event.clone()), &self.opts).map_err(name)?;
            results.push((k, u.run(ctl).map_err(name)?));
        }
        let stamp = if self.split.is_whole() {
            None
        } else {
            let mut fields = vec![("command".to_string(), self.command.clone())];
            fields.push((
                "arithmetic".to_string(),
                if ctl.precise { "precise" } else { "default" }.to_string(),
            ));
            let run = jobs::fingerprint(&fields, &self.inputs())?;
            Some(JobStamp::new(JOB_KIND, run, self.split, self.entries.len() as u64, &self.command))
        };
        Ok(EventsResult {
            settings: self.settings(),
            events: results,
            stamp,
            seconds: t0.elapsed().as_secs_f64(),
        })
    }

    fn settings(&self) -> serde_json::Value {
        let o = &self.opts;
        serde_json::json!({
            "list": self.list.display().to_string(),
            "events_in_list": self.entries.len(),
            "solver": solver_name(o.solver),
            "regularization": o.regularization,
            "tolerance": o.tolerance,
            "max_iterations": o.max_iterations,
            "photons_per_bin": o.photons_per_bin,
            "noise_rate_hz": o.model.noise_rate,
            "spacing": o.model.spacing,
            "command": self.command,
            "version": env!("CARGO_PKG_VERSION"),
        })
    }
}

/// The unfolded events of a run (or job): (index in the list, result), in list order.
#[derive(Debug)]
pub struct EventsResult {
    settings: serde_json::Value,
    pub events: Vec<(u64, UnfoldResult)>,
    stamp: Option<JobStamp>,
    pub seconds: f64,
}

impl EventsResult {
    /// `energies.parquet`: one row per source of every event.
    pub fn energies_table(&self) -> Table {
        let mut t = Table::default();
        let rows = || self.events.iter().flat_map(|(k, r)| (0..r.sources.len()).map(move |j| (*k, r, j)));
        t.push("event", Column::I64(rows().map(|(k, ..)| k as i64).collect()));
        t.push("source", Column::I32(rows().map(|(_, _, j)| j as i32).collect()));
        t.push("distance", Column::F64(rows().map(|(_, r, j)| r.distances[j]).collect()));
        for (c, name) in ["x", "y", "z"].iter().enumerate() {
            t.push(name, Column::F64(rows().map(|(_, r, j)| r.sources[j].pos[c]).collect()));
        }
        t.push("time", Column::F64(rows().map(|(_, r, j)| r.sources[j].time).collect()));
        t.push("energy", Column::F64(rows().map(|(_, r, j)| r.solution.energy[j]).collect()));
        t.push("sigma", Column::F64(rows().map(|(_, r, j)| r.solution.sigma[j]).collect()));
        self.meta(&mut t);
        t
    }

    /// `events.parquet`: one row per event.
    pub fn events_table(&self) -> Table {
        let e = &self.events;
        let mut t = Table::default();
        t.push("event", Column::I64(e.iter().map(|(k, _)| *k as i64).collect()));
        t.push("sources", Column::I64(e.iter().map(|(_, r)| r.cols as i64).collect()));
        t.push("rows", Column::I64(e.iter().map(|(_, r)| r.rows as i64).collect()));
        t.push("hit_doms", Column::I64(e.iter().map(|(_, r)| r.hit_doms as i64).collect()));
        t.push("charge_pe", Column::F64(e.iter().map(|(_, r)| r.charge_pe).collect()));
        t.push("total_energy", Column::F64(e.iter().map(|(_, r)| r.total().0).collect()));
        t.push("total_sigma", Column::F64(e.iter().map(|(_, r)| r.total().1).collect()));
        t.push(
            "log_likelihood",
            Column::F64(e.iter().map(|(_, r)| r.solution.log_likelihood).collect()),
        );
        t.push("chi2", Column::F64(e.iter().map(|(_, r)| r.solution.chi2).collect()));
        t.push(
            "converged",
            Column::I32(e.iter().map(|(_, r)| i32::from(r.solution.converged)).collect()),
        );
        t.push(
            "iterations",
            Column::I64(e.iter().map(|(_, r)| r.solution.iterations as i64).collect()),
        );
        self.meta(&mut t);
        t
    }

    fn meta(&self, t: &mut Table) {
        t.meta("warpdrive.version", env!("CARGO_PKG_VERSION"));
        t.meta(SETTINGS, self.settings.to_string());
        if let Some(s) = &self.stamp {
            t.metadata.extend(s.metadata());
        }
    }

    /// Write the output directory (prepared by [`crate::engine::prepare_dir`]) and commit it.
    pub fn save(&self, out: Staged, invocation: &str) -> Result<()> {
        let run = serde_json::json!({
            "invocation": invocation,
            "seconds": self.seconds,
            "response_device": self.events.first().map(|(_, r)| r.device.clone()),
            "job": self.stamp.as_ref().map(|s| serde_json::json!({"jobs": s.jobs, "index": s.index})),
        });
        write_dir(out, &self.energies_table(), &self.events_table(), run)
    }
}

/// The summary of an events table (and the run's settings): the same from a run and from the
/// merge of its jobs.
fn summary(settings: &serde_json::Value, events: &Table) -> serde_json::Value {
    let col = |n: &str| events.columns.iter().find(|(k, _)| k == n).map(|(_, c)| c);
    let converged = match col("converged") {
        Some(Column::I32(v)) => v.iter().filter(|&&c| c == 1).count(),
        _ => 0,
    };
    let total: f64 = match col("total_energy") {
        Some(Column::F64(v)) => v.iter().sum(),
        _ => f64::NAN,
    };
    let mut s = settings.clone();
    s["events"] = serde_json::json!(events.rows());
    s["converged"] = serde_json::json!(converged);
    s["sum_of_total_energies_gev"] = serde_json::json!(total);
    s
}

fn write_dir(out: Staged, energies: &Table, events: &Table, run: serde_json::Value) -> Result<()> {
    let dir = out.path().to_path_buf();
    let shown = out.dest().display().to_string();
    let fail = |e: String| Error::Failed(format!("{shown}: {e}"));
    energies
        .write_parquet(&dir.join("energies.parquet"))
        .map_err(|e| fail(e.to_string()))?;
    events.write_parquet(&dir.join("events.parquet")).map_err(|e| fail(e.to_string()))?;
    let settings = events
        .metadata
        .iter()
        .find(|(k, _)| k == SETTINGS)
        .and_then(|(_, v)| serde_json::from_str(v).ok())
        .unwrap_or(serde_json::Value::Null);
    let write = |name: &str, v: serde_json::Value| {
        std::fs::write(dir.join(name), format!("{v:#}\n")).map_err(|e| fail(format!("writing {name}: {e}")))
    };
    write("summary.json", summary(&settings, events))?;
    write("run.json", run)?;
    out.commit()?;
    Ok(())
}

/// Combine the output directories of a split list unfolding into `out`: the unsplit run's
/// `energies.parquet`, `events.parquet` and `summary.json` (each job once, all of one run).
pub fn merge(jobs: &[PathBuf], out: Staged, ctl: &Control) -> Result<usize> {
    let table = |name: &str| jobs::merge_tables(&jobs.iter().map(|d| d.join(name)).collect::<Vec<_>>(), JOB_KIND, ctl);
    let energies = table("energies.parquet")?;
    let events = table("events.parquet")?;
    let run = serde_json::json!({
        "version": env!("CARGO_PKG_VERSION"),
        "merged_from": jobs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
    });
    let n = events.rows();
    write_dir(out, &energies, &events, run)?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(text: &str) -> Result<Vec<Entry>, Error> {
        let d = std::env::temp_dir().join(format!("wd-event-list-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join(format!("l{}.csv", text.len()));
        std::fs::write(&p, text).unwrap();
        read_list(&p, 15.0)
    }

    #[test]
    fn lists_are_read_and_bad_lines_named() {
        let ok = list(&format!(
            "{HEADER}\n# a comment\na.parquet,cascade,0,0,-300,0,0,0,\n/x/b.parquet,track,1,2,3,90,0,0,500\n"
        ))
        .unwrap();
        assert_eq!(ok.len(), 2);
        assert!(ok[0].event.ends_with("a.parquet") && ok[0].line == 3);
        assert_eq!(ok[1].event, PathBuf::from("/x/b.parquet"));
        assert!(matches!(ok[1].hypothesis, Hypothesis::Track { .. }));
        let err = |t: &str| list(t).unwrap_err().to_string();
        assert!(err("event,kind\n").contains(":1: header 'event,kind'"), "{}", err("event,kind\n"));
        assert!(err(&format!("{HEADER}\n")).contains("lists no event"));
        let e = err(&format!("{HEADER}\na.parquet,cascade,0,0,zz,0,0,0,\n"));
        assert!(e.contains(":2: field 'z': 'zz' is not a number"), "{e}");
        let e = err(&format!("{HEADER}\na.parquet,muon,0,0,0,0,0,0,\n"));
        assert!(e.contains(":2: field 'kind': 'muon'"), "{e}");
        let e = err(&format!("{HEADER}\na.parquet,track,0,0,0,0,0,0,\n"));
        assert!(e.contains(":2: field 'length': a track needs its length"), "{e}");
        let e = err(&format!("{HEADER}\na.parquet,cascade,0,0,0,0,0,0,5\n"));
        assert!(e.contains("a cascade has no length"), "{e}");
        let e = err(&format!("{HEADER}\na.parquet,cascade,0,0,0\n"));
        assert!(e.contains(":2: 5 fields, expected 9"), "{e}");
    }
}
