//! Watch points: which records a run keeps, and where they go.
//!
//! A WATCH element records the particles each pass (every INTERVAL-th). Kept naively, that is
//! every particle at every pass: 2·10⁵ particles × 2000 passes is 35 GB. A run therefore says
//! what it wants ([`WatchOptions`]): no records at all ([`WatchMode::Off`]), records only at
//! chosen passes (every k-th, or a list) and of chosen particles, and where they go: kept in
//! memory for the caller ([`WatchMode::Memory`], budgeted before the run), one Parquet file per
//! record in the output directory ([`WatchMode::Files`], ELEGANT's habit), or one Parquet file
//! per watch point with a row group appended as each record comes ([`WatchMode::Stream`]): both
//! hold one record in memory at a time, and the directory appears whole only at the end.

use crate::beam::{Moments, Particles, Reference};
use crate::moments::Partial;
use crate::track::WatchEvent;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use warpdrive_core::engine::{Control, Error};
use warpdrive_core::error::InputError;
use warpdrive_core::output::shown;
use warpdrive_core::table::{Column, Table};

/// Where watch-point records go.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WatchMode {
    /// Watch points do nothing (no records, no moments, no copies of the particles).
    Off,
    /// Records are kept in memory and returned with the result.
    Memory,
    /// One Parquet file per record in the output directory (`NAME-passNNNNN.parquet`).
    #[default]
    Files,
    /// One Parquet file per watch point in the output directory, a row group per record.
    Stream,
}

impl FromStr for WatchMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "off" => Ok(Self::Off),
            "memory" => Ok(Self::Memory),
            "files" => Ok(Self::Files),
            "stream" => Ok(Self::Stream),
            _ => Err(format!("'{s}': expected files, stream, memory or off")),
        }
    }
}

impl WatchMode {
    pub fn name(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Memory => "memory",
            Self::Files => "files",
            Self::Stream => "stream",
        }
    }

    /// Whether records are written into an output directory.
    pub fn needs_directory(self) -> bool {
        matches!(self, Self::Files | Self::Stream)
    }
}

/// The passes at which watch points act (on top of each WATCH's INTERVAL).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PassSelection {
    /// Every k-th pass, from pass 0.
    Every(u32),
    /// These passes (sorted, no repeats).
    List(Vec<u32>),
}

impl Default for PassSelection {
    fn default() -> Self {
        Self::Every(1)
    }
}

impl PassSelection {
    pub fn contains(&self, pass: u32) -> bool {
        match self {
            Self::Every(k) => pass.is_multiple_of(*k),
            Self::List(l) => l.binary_search(&pass).is_ok(),
        }
    }

    /// Passes below `passes` at which a WATCH with `interval` records.
    pub fn count(&self, passes: u32, interval: u32) -> u64 {
        match self {
            Self::Every(k) => {
                let step = lcm(u64::from(*k), u64::from(interval));
                u64::from(passes).div_ceil(step)
            }
            Self::List(l) => l.iter().filter(|&&p| p < passes && p.is_multiple_of(interval)).count() as u64,
        }
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn lcm(a: u64, b: u64) -> u64 {
    a / gcd(a, b) * b
}

/// What the watch points of a run record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchOptions {
    pub mode: WatchMode,
    pub passes: PassSelection,
    /// The particles (0-based rows of the beam, sorted, no repeats) whose coordinates are
    /// recorded; `None`: all. Moments are always those of every surviving particle.
    pub particles: Option<Vec<u32>>,
}

/// One watch-point record kept in memory.
#[derive(Clone, Debug)]
pub struct WatchRecord {
    /// Index of the WATCH element in the line.
    pub element: usize,
    pub name: String,
    pub pass: u32,
    /// Position along the line [m].
    pub s: f64,
    /// Columns particle, x, xp, y, yp, s, delta, t, p, lost_at, lost_pass.
    pub table: Table,
}

/// Moments of one watch record (a row of `moments.parquet`).
#[derive(Clone, Debug)]
pub struct MomentsRow {
    pub name: String,
    pub pass: u32,
    pub s: f64,
    pub moments: Moments,
}

/// Columns of a watch record's table per particle: an id, ten coordinates and flags.
pub const RECORD_COLUMNS: u64 = 11;

/// The coordinates of the chosen particles as a table: particle (0-based row of the beam), x,
/// xp, y, yp, s, delta, t, p, lost_at, lost_pass.
pub fn record_table(p: &Particles, ids: Option<&[u32]>, reference: &Reference) -> Table {
    let full = crate::beam::to_table(p, reference);
    let Some(ids) = ids else {
        let mut t = Table::default();
        t.push("particle", Column::I64((0..p.len() as i64).collect()));
        t.columns.extend(full.columns);
        return t;
    };
    let mut t = Table::default();
    t.push("particle", Column::I64(ids.iter().map(|&i| i64::from(i)).collect()));
    for (name, c) in full.columns {
        let pick = match &c {
            Column::F64(v) => Column::F64(ids.iter().map(|&i| v[i as usize]).collect()),
            Column::I64(v) => Column::I64(ids.iter().map(|&i| v[i as usize]).collect()),
            Column::F32(v) => Column::F32(ids.iter().map(|&i| v[i as usize]).collect()),
            Column::I32(v) => Column::I32(ids.iter().map(|&i| v[i as usize]).collect()),
            Column::Str(v) => Column::Str(ids.iter().map(|&i| v[i as usize].clone()).collect()),
        };
        t.push(&name, pick);
    }
    t
}

/// ELEGANT-style file name of a watch point: `%s` → the lattice's stem, `.parquet` replacing
/// any extension, path separators replaced, `-atK` where one file name is used at several
/// places of the line, and (files mode, several passes) `-passNNNNN`.
pub fn watch_file(dir: &Path, filename: &str, root: &str, pass: Option<u32>, element: Option<usize>) -> PathBuf {
    let name = filename.replace("%s", root);
    let stem = Path::new(&name)
        .file_stem()
        .map_or(name.clone(), |s| s.to_string_lossy().into_owned());
    let mut stem: String = stem.chars().map(|c| if c == '/' || c == '\\' { '_' } else { c }).collect();
    if let Some(e) = element {
        stem = format!("{stem}-at{e}");
    }
    match pass {
        Some(p) => dir.join(format!("{stem}-pass{p:05}.parquet")),
        None => dir.join(format!("{stem}.parquet")),
    }
}

/// A Parquet file written a row group at a time (the streamed watch file of one watch point).
struct Stream {
    writer: parquet::file::writer::SerializedFileWriter<std::fs::File>,
    path: PathBuf,
}

impl Stream {
    fn create(path: &Path, first: &Table) -> Result<Self, String> {
        use parquet::basic::Compression;
        use parquet::file::properties::WriterProperties;
        use parquet::format::KeyValue;
        use std::sync::Arc;
        let fail = |e: &dyn std::fmt::Display| format!("{}: {e}", shown(path).display());
        let fields: String = first.columns.iter().map(|(n, c)| c.parquet_field(n)).collect();
        let schema = parquet::schema::parser::parse_message_type(&format!("message table {{ {fields} }}")).map_err(|e| fail(&e))?;
        let kv = first.metadata.iter().map(|(k, v)| KeyValue::new(k.clone(), v.clone())).collect();
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_key_value_metadata(Some(kv))
            .build();
        let file = std::fs::File::create(path).map_err(|e| fail(&e))?;
        let writer = parquet::file::writer::SerializedFileWriter::new(file, Arc::new(schema), Arc::new(props)).map_err(|e| fail(&e))?;
        Ok(Self {
            writer,
            path: path.to_path_buf(),
        })
    }

    /// Append `t` (same columns as the first table) as one row group.
    fn append(&mut self, t: &Table) -> Result<(), String> {
        let fail = |e: parquet::errors::ParquetError| format!("{}: {e}", shown(&self.path).display());
        let mut group = self.writer.next_row_group().map_err(fail)?;
        let mut i = 0;
        while let Some(mut col) = group.next_column().map_err(fail)? {
            let c = &t.columns[i].1;
            c.write_rows(&mut col, 0..c.len()).map_err(fail)?;
            col.close().map_err(fail)?;
            i += 1;
        }
        group.close().map_err(fail)?;
        Ok(())
    }

    fn finish(self) -> Result<(), String> {
        let path = self.path;
        self.writer
            .close()
            .map(|_| ())
            .map_err(|e| format!("{}: {e}", shown(&path).display()))
    }
}

/// Takes the watch events of a run and sends each record where the options say.
pub struct Recorder<'a> {
    opts: &'a WatchOptions,
    reference: Reference,
    passes: u32,
    /// The output directory being filled (files and stream modes).
    dir: Option<PathBuf>,
    /// `%s` of WATCH file names.
    root: String,
    /// WATCH file names used at more than one place of the line.
    shared: HashSet<String>,
    streams: HashMap<usize, Stream>,
    /// Records kept (memory mode).
    pub records: Vec<WatchRecord>,
    pub moments: Vec<MomentsRow>,
    /// (s, σx, σy, name) at the watch points in the first pass recorded (for the plot).
    pub sizes: Vec<crate::optics::WatchSize>,
    /// Files written, in order.
    pub written: Vec<String>,
    /// A batch job's partial moments of its blocks at every watch event.
    pub blocks: Vec<BlockEvent>,
    first_pass: Option<u32>,
    job: Option<JobRows>,
    /// Also write each watch point as SDDS (`--sdds`): one file, a page per record.
    sdds: bool,
    sdds_files: HashMap<usize, crate::sdds::Appender>,
}

/// The rows of the whole bunch a batch job tracks, and its stamp for the files it writes.
struct JobRows {
    first: u64,
    total: u64,
    metadata: Vec<(String, String)>,
}

/// One watch event of a batch job: the partial moments of each of its blocks of particles.
#[derive(Clone, Debug)]
pub struct BlockEvent {
    pub partials: Vec<(u64, Partial)>,
}

impl<'a> Recorder<'a> {
    /// A recorder for a run of `passes` over `program`; `dir` is the output directory being
    /// filled (needed by the files and stream modes), `root` the lattice's stem.
    pub fn new(
        opts: &'a WatchOptions,
        program: &crate::program::Program,
        reference: Reference,
        passes: u32,
        dir: Option<&Path>,
        root: &str,
    ) -> Self {
        let mut uses: HashMap<&str, usize> = HashMap::new();
        for s in &program.steps {
            if let crate::program::Step::Watch { filename, .. } = s {
                *uses.entry(filename.as_str()).or_default() += 1;
            }
        }
        Self {
            opts,
            reference,
            passes,
            dir: dir.map(Path::to_path_buf),
            root: root.to_string(),
            shared: uses.into_iter().filter(|(_, n)| *n > 1).map(|(f, _)| f.to_string()).collect(),
            streams: HashMap::new(),
            records: Vec::new(),
            moments: Vec::new(),
            sizes: Vec::new(),
            written: Vec::new(),
            blocks: Vec::new(),
            first_pass: None,
            job: None,
            sdds: false,
            sdds_files: HashMap::new(),
        }
    }

    /// Also write every watch point as an SDDS file in the output directory: `<name>.sdds`
    /// (`%s` and `-atK` as the Parquet files), one page per record with the surviving chosen
    /// particles (ELEGANT's watch layout: x, xp, y, yp, t, p, particleID; Step, Pass, pCentral,
    /// Particles).
    #[must_use]
    pub fn sdds(mut self, on: bool) -> Self {
        self.sdds = on;
        self
    }

    fn record_sdds(&mut self, ev: &WatchEvent, element: Option<usize>) -> Result<(), String> {
        let dir = self.dir.as_deref().ok_or("SDDS watch files need an output directory")?;
        let p = ev.particles;
        let rows: Vec<usize> = match &self.opts.particles {
            Some(ids) => ids
                .iter()
                .map(|&i| i as usize)
                .filter(|&i| i < p.len() && p.lost_at[i] == 0)
                .collect(),
            None => (0..p.len()).filter(|&i| p.lost_at[i] == 0).collect(),
        };
        let mut page = crate::sdds_out::particles_page(p, &self.reference, &rows, 0, ev.pass, 0.0);
        page.parameters.retain(|q| q.name != "Charge");
        match self.sdds_files.get_mut(&ev.element) {
            Some(f) => f.append(&page),
            None => {
                let file = watch_file(dir, ev.filename, &self.root, None, element).with_extension("sdds");
                let name = file_name(&file);
                if ["final.sdds", "lost.sdds"].contains(&name.as_str()) {
                    return Err(format!(
                        "watch point {}: its SDDS file {name} is a name the run writes itself; rename FILENAME",
                        ev.name
                    ));
                }
                let f = crate::sdds::Appender::create(
                    &file,
                    &format!("warpdrive beam track: watch point {}", ev.name),
                    "watch point",
                    &page,
                )?;
                self.written.push(name);
                self.sdds_files.insert(ev.element, f);
                Ok(())
            }
        }
    }

    /// The recorder of a batch job tracking rows `first ..` of a bunch of `total`: its records
    /// name particles by their row in the whole bunch, its files carry the job's `metadata`,
    /// and each watch event keeps its blocks' partial moments.
    #[must_use]
    pub fn job(mut self, first: u64, total: u64, metadata: Vec<(String, String)>) -> Self {
        self.job = Some(JobRows { first, total, metadata });
        self
    }

    /// Take one watch event.
    pub fn record(&mut self, ev: WatchEvent) -> Result<(), String> {
        if self.opts.mode == WatchMode::Off {
            return Ok(());
        }
        let first = *self.first_pass.get_or_insert(ev.pass);
        if ev.pass == first {
            self.sizes
                .push((ev.position, ev.moments.rms(0), ev.moments.rms(2), ev.name.to_string()));
        }
        self.moments.push(MomentsRow {
            name: ev.name.to_string(),
            pass: ev.pass,
            s: ev.position,
            moments: ev.moments,
        });
        let mut table = match &self.job {
            None => record_table(ev.particles, self.opts.particles.as_deref(), &self.reference),
            Some(j) => {
                self.blocks.push(BlockEvent {
                    partials: crate::moments::partials(ev.particles, j.first, j.total),
                });
                // The chosen particles of this job's rows, then named by their row in the bunch.
                let rows = j.first..j.first + ev.particles.len() as u64;
                let local: Option<Vec<u32>> = self.opts.particles.as_ref().map(|ids| {
                    ids.iter()
                        .filter(|&&i| rows.contains(&u64::from(i)))
                        .map(|&i| (u64::from(i) - j.first) as u32)
                        .collect()
                });
                let mut t = record_table(ev.particles, local.as_deref(), &self.reference);
                if let Some((_, Column::I64(id))) = t.columns.iter_mut().find(|(n, _)| n == "particle") {
                    id.iter_mut().for_each(|i| *i += j.first as i64);
                }
                t
            }
        };
        let element = self.shared.contains(ev.filename).then_some(ev.element);
        if self.sdds {
            self.record_sdds(&ev, element)?;
        }
        match self.opts.mode {
            WatchMode::Off => {}
            WatchMode::Memory => self.records.push(WatchRecord {
                element: ev.element,
                name: ev.name.to_string(),
                pass: ev.pass,
                s: ev.position,
                table,
            }),
            WatchMode::Files => {
                let dir = self.dir.as_deref().ok_or("watch files need an output directory")?;
                let file = watch_file(dir, ev.filename, &self.root, (self.passes > 1).then_some(ev.pass), element);
                table.meta("element", ev.name);
                table.meta("pass", ev.pass.to_string());
                table.meta("s", ev.position.to_string());
                if let Some(j) = &self.job {
                    table.metadata.extend(j.metadata.iter().cloned());
                }
                table.write_parquet(&file).map_err(|e| e.to_string())?;
                self.written.push(file_name(&file));
            }
            WatchMode::Stream => {
                let dir = self.dir.as_deref().ok_or("streamed watch files need an output directory")?;
                let n = table.rows();
                table
                    .columns
                    .insert(0, ("pass".to_string(), Column::I64(vec![i64::from(ev.pass); n])));
                if !self.streams.contains_key(&ev.element) {
                    let file = watch_file(dir, ev.filename, &self.root, None, element);
                    table.meta("element", ev.name);
                    table.meta("s", ev.position.to_string());
                    self.written.push(file_name(&file));
                    self.streams.insert(ev.element, Stream::create(&file, &table)?);
                }
                if let Some(s) = self.streams.get_mut(&ev.element) {
                    s.append(&table)?;
                }
            }
        }
        Ok(())
    }

    /// Close the streamed files (their footers are written now).
    pub fn finish(&mut self) -> Result<(), String> {
        self.sdds_files.clear();
        let mut streams: Vec<(usize, Stream)> = self.streams.drain().collect();
        streams.sort_by_key(|(e, _)| *e);
        for (_, s) in streams {
            s.finish()?;
        }
        Ok(())
    }
}

fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(String::new, |f| f.to_string_lossy().into_owned())
}

/// `moments.parquet`: one row per watch record (pass, s, alive, mean and RMS of the six
/// coordinates, emittances); the element names in the metadata.
pub fn write_moments(path: &Path, rows: &[MomentsRow]) -> Result<(), String> {
    moments_table(rows).write_parquet(path).map_err(|e| e.to_string())
}

/// The table of [`write_moments`].
pub fn moments_table(rows: &[MomentsRow]) -> Table {
    let mut t = Table::default();
    t.push("pass", Column::I64(rows.iter().map(|r| i64::from(r.pass)).collect()));
    t.push("s", Column::F64(rows.iter().map(|r| r.s).collect()));
    t.push("alive", Column::I64(rows.iter().map(|r| r.moments.alive as i64).collect()));
    let names = ["x", "xp", "y", "yp", "s", "delta"];
    for (k, n) in names.iter().enumerate() {
        t.push(&format!("mean_{n}"), Column::F64(rows.iter().map(|r| r.moments.mean[k]).collect()));
        t.push(&format!("sigma_{n}"), Column::F64(rows.iter().map(|r| r.moments.rms(k)).collect()));
    }
    t.push("emittance_x", Column::F64(rows.iter().map(|r| r.moments.emittance(0)).collect()));
    t.push("emittance_y", Column::F64(rows.iter().map(|r| r.moments.emittance(1)).collect()));
    t.meta("elements", rows.iter().map(|r| r.name.as_str()).collect::<Vec<_>>().join(","));
    t
}

/// The blocks file of a batch job ([`crate::engine::JOB_BLOCKS`]): one row per (watch event,
/// block) with event, pass, s, block, n, mean_0..5 and m2_0..20 (the upper triangle, row-major,
/// of Σ(z_a − z̄_a)(z_b − z̄_b)); the events' element names in the metadata, as in
/// `moments.parquet`.
pub fn blocks_table(events: &[BlockEvent], moments: &[MomentsRow]) -> Table {
    let rows = || {
        events
            .iter()
            .zip(moments)
            .enumerate()
            .flat_map(|(e, (b, m))| b.partials.iter().map(move |(k, q)| (e, m, *k, q)))
    };
    let mut t = Table::default();
    t.push("event", Column::I64(rows().map(|(e, ..)| e as i64).collect()));
    t.push("pass", Column::I64(rows().map(|(_, m, ..)| i64::from(m.pass)).collect()));
    t.push("s", Column::F64(rows().map(|(_, m, ..)| m.s).collect()));
    t.push("block", Column::I64(rows().map(|(_, _, k, _)| k as i64).collect()));
    t.push("n", Column::I64(rows().map(|(.., q)| q.n as i64).collect()));
    for k in 0..6 {
        t.push(&format!("mean_{k}"), Column::F64(rows().map(|(.., q)| q.mean[k]).collect()));
    }
    for k in 0..21 {
        t.push(&format!("m2_{k}"), Column::F64(rows().map(|(.., q)| q.m2[k]).collect()));
    }
    t.meta("elements", moments.iter().map(|r| r.name.as_str()).collect::<Vec<_>>().join(","));
    t
}

/// The moments rows of a split run from its jobs' blocks files (each job once, checked as
/// one run): every event's block partials, gathered in job order (so in block order), folded
/// as one run folds them.
pub fn fold_blocks(files: &[PathBuf], ctl: &Control) -> Result<Vec<MomentsRow>, Error> {
    let parts = warpdrive_core::jobs::read_jobs(files, crate::engine::TRACK_JOB_KIND)?;
    // Per event: pass, s and the (block, partial) pairs of every job.
    type Event = (u32, f64, Vec<(u64, Partial)>);
    let mut events: Vec<Event> = Vec::new();
    let mut names: Option<String> = None;
    for (p, f) in &parts {
        ctl.check()?;
        let bad = |what: String| Error::from(InputError::file(p, what));
        let meta = f.metadata();
        let elements = meta
            .iter()
            .find(|(k, _)| k == "elements")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        match &names {
            None => names = Some(elements),
            Some(n) if *n != elements => return Err(bad("has other watch points than the first job".into())),
            Some(_) => {}
        }
        let cols = f.columns(&(0..f.names().len()).collect::<Vec<_>>())?;
        let want: Vec<String> = ["event", "pass", "s", "block", "n"]
            .iter()
            .map(|s| (*s).to_string())
            .chain((0..6).map(|k| format!("mean_{k}")))
            .chain((0..21).map(|k| format!("m2_{k}")))
            .collect();
        if f.names() != want {
            return Err(bad(format!("columns {:?}, expected {want:?}", f.names())));
        }
        let i64s = |k: usize| match &cols[k] {
            Column::I64(v) => Ok(v.as_slice()),
            _ => Err(bad(format!("column {} must be INT64", want[k]))),
        };
        let f64s = |k: usize| match &cols[k] {
            Column::F64(v) => Ok(v.as_slice()),
            _ => Err(bad(format!("column {} must be DOUBLE", want[k]))),
        };
        let (event, pass, s, block, n) = (i64s(0)?, i64s(1)?, f64s(2)?, i64s(3)?, i64s(4)?);
        let mean: Vec<&[f64]> = (5..11).map(f64s).collect::<Result<_, _>>()?;
        let m2: Vec<&[f64]> = (11..32).map(f64s).collect::<Result<_, _>>()?;
        for r in 0..event.len() {
            let e = usize::try_from(event[r]).map_err(|_| bad(format!("row {}: event {}", r + 1, event[r])))?;
            if e > events.len() || n[r] < 0 || block[r] < 0 {
                return Err(bad(format!(
                    "row {}: event {e}, block {}, n {} out of order",
                    r + 1,
                    block[r],
                    n[r]
                )));
            }
            if e == events.len() {
                let pass = u32::try_from(pass[r]).map_err(|_| bad(format!("row {}: pass {}", r + 1, pass[r])))?;
                events.push((pass, s[r], Vec::new()));
            }
            if events[e].0 as i64 != pass[r] || events[e].1.to_bits() != s[r].to_bits() {
                return Err(bad(format!(
                    "row {}: event {e} at pass {} s {}, not the first job's",
                    r + 1,
                    pass[r],
                    s[r]
                )));
            }
            let q = Partial {
                n: n[r] as u64,
                mean: std::array::from_fn(|k| mean[k][r]),
                m2: std::array::from_fn(|k| m2[k][r]),
            };
            events[e].2.push((block[r] as u64, q));
        }
    }
    let names = names.unwrap_or_default();
    let names: Vec<&str> = if names.is_empty() { Vec::new() } else { names.split(',').collect() };
    if names.len() != events.len() {
        return Err(InputError::file(
            &parts[0].0,
            format!("{} watch events but {} element names", events.len(), names.len()),
        )
        .into());
    }
    events
        .into_iter()
        .zip(names)
        .enumerate()
        .map(|(e, ((pass, s, blocks), name))| {
            if blocks.iter().enumerate().any(|(k, (b, _))| *b != k as u64) {
                return Err(InputError::file(
                    &parts[0].0,
                    format!("watch event {e}: the jobs' blocks are not 0, 1, 2, … in job order"),
                )
                .into());
            }
            Ok(MomentsRow {
                name: name.to_string(),
                pass,
                s,
                moments: crate::moments::fold(blocks.iter().map(|(_, q)| q)),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pass_selections_count_what_they_keep() {
        // Every pass, every 3rd, with a WATCH INTERVAL of 2: passes 0, 6, 12, 18 of 20.
        assert_eq!(PassSelection::Every(1).count(2000, 1), 2000);
        assert_eq!(PassSelection::Every(3).count(20, 2), 4);
        assert_eq!(
            (0..20u32)
                .filter(|&p| p.is_multiple_of(2) && PassSelection::Every(3).contains(p))
                .count(),
            4
        );
        let l = PassSelection::List(vec![0, 5, 10, 30]);
        assert_eq!(l.count(20, 1), 3);
        assert_eq!(l.count(20, 5), 3);
        assert_eq!(l.count(20, 2), 2);
        assert!(l.contains(10) && !l.contains(11));
        assert!("stream".parse::<WatchMode>().is_ok() && "all".parse::<WatchMode>().is_err());
    }

    #[test]
    fn records_of_chosen_particles() {
        let mut p = Particles::with_len(5);
        p.x = vec![0.0, 1.0, 2.0, 3.0, 4.0];
        let r = Reference::electron(10.0);
        let t = record_table(&p, Some(&[1, 4]), &r);
        assert_eq!(t.column("particle"), Some(&Column::I64(vec![1, 4])));
        assert_eq!(t.column("x"), Some(&Column::F64(vec![1.0, 4.0])));
        assert_eq!(t.columns.len() as u64, RECORD_COLUMNS);
        assert_eq!(record_table(&p, None, &r).rows(), 5);
    }
}
