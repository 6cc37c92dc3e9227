//! Photon propagation as library calls (DESIGN.md §2, `warpdrive_core::engine`).
//!
//! * [`detector`] builds and checks the detector of a [`DetectorSpec`] (`--ice`, `--geometry`,
//!   `--sensors`, `--oversize`; Python's `Detector(...)`).
//! * [`Propagate`] is a validated request: its constructor reads the sources through the bounded
//!   reader (an f2k file, f2k text, a step file, or typed sources — the default cascade among
//!   them), checks every value, the photons per run ([`source::check_total`]) and
//!   `max_photons`, and budgets the memory the sources take; [`Propagate::run`] propagates
//!   them under a [`Control`] on the CPU or the GPUs, with progress and cancellation.
//! * [`prepare_outputs`] stages the Parquet file and the optional `HIT` lines before the work;
//!   [`PropagateResult::save`] writes and commits them (the output discipline).
//!
//! `warpdrive photon`, `warpdrive ppc` (through [`simulate`]) and `warpdrive.photon` are thin
//! translations of their arguments into these calls, so a check made for one front end is made
//! for all.

use crate::detector::{Detector, DetectorOptions};
use crate::source::{self, FieldError, Particle, Primary, SourceSpec};
use crate::{gpu, hits, Backend, Simulation};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use warpdrive_core::engine::{Control, Error, ParamError, Result};
use warpdrive_core::jobs::{self, JobStamp, Share};
use warpdrive_core::output::{OutputError, Outputs};
use warpdrive_core::table::Table;

/// The detector options of every front end: `--ice`, `--geometry`, `--sensors`, `--oversize`
/// (Python's `Detector(ice=, geometry=, sensors=, oversize=)`).
#[derive(Clone, Debug, Default)]
pub struct DetectorSpec {
    /// A PPC ice directory; `None`: the built-in homogeneous ice.
    pub ice: Option<PathBuf>,
    /// geo-f2k or Prometheus `.geo`; `None`: `<ice>/geo-f2k`, else the generated detector.
    pub geometry: Option<PathBuf>,
    /// Multi-PMT module files; `None`: the ice directory's, if any.
    pub sensors: Option<PathBuf>,
    /// DOM oversize factor, overriding cfg.txt.
    pub oversize: Option<u64>,
}

impl DetectorSpec {
    /// The files and directories these options name (outputs must not replace them).
    #[must_use]
    pub fn inputs(&self) -> Vec<PathBuf> {
        [&self.ice, &self.geometry, &self.sensors].into_iter().flatten().cloned().collect()
    }
}

/// Build and check the detector of `spec`. Its `description` says what was read (ice, tilt
/// model, geometry, …) and `unsupported` what is read but not simulated; front ends show both.
pub fn detector(spec: &DetectorSpec) -> Result<Detector> {
    let max = crate::config::MAX_OVERSIZE;
    let oversize = match spec.oversize {
        None => None,
        Some(o) if (1..=u64::from(max)).contains(&o) => Some(o as u32),
        Some(o) => return Err(ParamError::new("oversize", format!("{o}: must be between 1 and {max}")).into()),
    };
    Ok(Detector::build(&DetectorOptions {
        ice_dir: spec.ice.clone(),
        geometry: spec.geometry.clone(),
        sensors: spec.sensors.clone(),
        oversize,
        ..Default::default()
    })?)
}

/// A particle as a user names it: an f2k name or a PDG-style name (`"e-"`, `"gamma"`,
/// `"pi+"`, …), or a PDG code (11, −11, 22, ±13, ±211); the table is [`Particle::PDG_NAMES`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParticleName {
    Name(String),
    Pdg(i64),
}

impl ParticleName {
    fn resolve(&self) -> Option<Particle> {
        match self {
            ParticleName::Name(n) => Particle::from_alias(n),
            ParticleName::Pdg(c) => Particle::from_pdg(*c),
        }
    }
}

impl From<&str> for ParticleName {
    /// User text: an integer is a PDG code, anything else a name.
    fn from(s: &str) -> Self {
        match s.trim().parse::<i64>() {
            Ok(code) => ParticleName::Pdg(code),
            Err(_) => ParticleName::Name(s.to_string()),
        }
    }
}

impl std::fmt::Display for ParticleName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParticleName::Name(n) => write!(f, "'{n}'"),
            ParticleName::Pdg(c) => write!(f, "{c}"),
        }
    }
}

/// Sources given as numbers (`--particle`, `--position`, `--direction`, `--energy`, `--time`,
/// `--length`; Python's arrays). Each option holds one value for every source or one value for
/// all of them (positions as x, y, z triples [m], directions as f2k zenith, azimuth pairs
/// [deg]); an option not given takes the default cascade's value: an EM cascade (`e`) of
/// 10⁵ GeV at (0, 0, 0) moving up (zenith 180°, azimuth 0°) at t = 0, length 0.
#[derive(Clone, Debug, Default)]
pub struct TypedSources {
    pub particle: Option<Vec<ParticleName>>,
    pub position: Option<Vec<f64>>,
    pub direction: Option<Vec<f64>>,
    pub energy: Option<Vec<f64>>,
    pub time: Option<Vec<f64>>,
    pub length: Option<Vec<f64>>,
}

/// The default cascade's energy [GeV] (`warpdrive photon` without sources).
pub const DEFAULT_ENERGY_GEV: f64 = 1e5;

/// Bytes a source takes while a run holds it: the request, the drawn source and its GPU record.
const BYTES_PER_SOURCE: u64 = (std::mem::size_of::<SourceSpec>() + std::mem::size_of::<source::Source>() + 64) as u64;

/// "of source 3: " before a message when there are several sources, else nothing (sources are
/// counted from 0, as Python indexes them).
fn which(i: usize, n: usize) -> String {
    if n > 1 {
        format!("of source {i}: ")
    } else {
        String::new()
    }
}

/// The numbers of source `i` in an option holding `width` numbers per source, or one set for all.
fn nth(v: &[f64], width: usize, i: usize) -> &[f64] {
    if v.len() == width {
        v
    } else {
        &v[i * width..(i + 1) * width]
    }
}

impl TypedSources {
    /// The first option that was given (for "cannot be given together" messages).
    fn first_given(&self) -> Option<&'static str> {
        [
            ("particle", self.particle.is_some()),
            ("position", self.position.is_some()),
            ("direction", self.direction.is_some()),
            ("energy", self.energy.is_some()),
            ("time", self.time.is_some()),
            ("length", self.length.is_some()),
        ]
        .into_iter()
        .find_map(|(name, given)| given.then_some(name))
    }

    /// The sources these options describe, with the default cascade's values where an option
    /// is not given and one value broadcast to every source.
    pub fn primaries(&self) -> Result<Vec<Primary>> {
        // (param, values given, numbers per source)
        let counts = [
            ("particle", self.particle.as_ref().map(Vec::len), 1),
            ("position", self.position.as_ref().map(Vec::len), 3),
            ("direction", self.direction.as_ref().map(Vec::len), 2),
            ("energy", self.energy.as_ref().map(Vec::len), 1),
            ("time", self.time.as_ref().map(Vec::len), 1),
            ("length", self.length.as_ref().map(Vec::len), 1),
        ];
        let mut n = 1;
        let mut longest = "particle";
        for (param, len, width) in counts {
            let Some(len) = len else { continue };
            if len == 0 {
                return Err(ParamError::new(param, "is empty: give one value for all sources or one per source").into());
            }
            if len % width != 0 {
                let what = if width == 3 { "x, y, z [m]" } else { "zenith, azimuth [deg]" };
                return Err(ParamError::new(param, format!("has {len} numbers: expected {what} per source")).into());
            }
            let k = len / width;
            if k > 1 && n > 1 && k != n {
                return Err(ParamError::new(
                    param,
                    format!("has {k} sources but {{{longest}}} has {n}: give one value for all sources or one per source"),
                )
                .into());
            }
            if k > n {
                n = k;
                longest = param;
            }
        }
        warpdrive_core::limits::check_alloc("the typed sources", n as u64, BYTES_PER_SOURCE, "propagate fewer sources per run")?;
        // One number of source `i` of a one-number option, or the default cascade's.
        let one = |v: &Option<Vec<f64>>, i: usize, default: f64| v.as_deref().map_or(default, |v| nth(v, 1, i)[0]);
        (0..n)
            .map(|i| {
                let particle = match &self.particle {
                    None => Particle::Electron,
                    Some(p) => {
                        let name = if p.len() == 1 { &p[0] } else { &p[i] };
                        name.resolve().ok_or_else(|| unknown_particle(name, i, n))?
                    }
                };
                let position = self.position.as_deref().map_or([0.0; 3], |v| {
                    let p = nth(v, 3, i);
                    [p[0], p[1], p[2]]
                });
                let [zenith, azimuth] = self.direction.as_deref().map_or([180.0, 0.0], |v| {
                    let d = nth(v, 2, i);
                    [d[0], d[1]]
                });
                Ok(Primary {
                    particle,
                    position,
                    zenith,
                    azimuth,
                    length: one(&self.length, i, 0.0),
                    energy: one(&self.energy, i, DEFAULT_ENERGY_GEV),
                    time: one(&self.time, i, 0.0),
                })
            })
            .collect()
    }
}

fn unknown_particle(name: &ParticleName, i: usize, n: usize) -> Error {
    let pdg: Vec<String> = Particle::PDG_NAMES.iter().map(|(n, c, _)| format!("{n} ({c})")).collect();
    let text = format!(
        "{}{name}: unknown (f2k names: {}; PDG names and codes: {})",
        which(i, n),
        Particle::F2K_NAMES.join(" "),
        pdg.join(", ")
    );
    ParamError::new("particle", text).into()
}

/// The parameter that holds an f2k field of a typed source.
fn param_of(field: &str) -> &'static str {
    match field {
        "x" | "y" | "z" => "position",
        "zenith" | "azimuth" => "direction",
        "length" => "length",
        "time" => "time",
        _ => "energy",
    }
}

fn typed_error(e: FieldError, i: usize, n: usize) -> Error {
    ParamError::new(param_of(e.field), format!("{}{}", which(i, n), e.message)).into()
}

/// Where the photons come from, as a front end received it: at most one of an f2k file
/// (`input`), f2k text (`f2k`, Python only), a step file (`steps`) or typed sources; none
/// means the default cascade.
#[derive(Clone, Debug, Default)]
pub struct SourceOptions {
    pub input: Option<PathBuf>,
    pub f2k: Option<String>,
    pub steps: Option<PathBuf>,
    pub typed: TypedSources,
}

impl SourceOptions {
    /// The files these options name (outputs must not replace them).
    #[must_use]
    pub fn inputs(&self) -> Vec<PathBuf> {
        [&self.input, &self.steps].into_iter().flatten().cloned().collect()
    }

    /// The one kind of source given: two kinds together is an error naming both.
    fn check_one_kind(&self) -> Result<(), ParamError> {
        let given: Vec<&'static str> = [
            self.input.as_ref().map(|_| "input"),
            self.f2k.as_ref().map(|_| "f2k"),
            self.steps.as_ref().map(|_| "steps"),
            self.typed.first_given(),
        ]
        .into_iter()
        .flatten()
        .collect();
        match given[..] {
            [a, b, ..] => Err(ParamError::new(
                a,
                format!("cannot be given together with {{{b}}}: give one kind of source"),
            )),
            _ => Ok(()),
        }
    }
}

/// The run options besides the sources.
#[derive(Clone, Debug)]
pub struct PropagateOptions {
    pub seed: u64,
    /// Refuse to run when the sources need more photons than this (mean count).
    pub max_photons: Option<u64>,
    /// The share of the photons this job propagates (`--jobs N --job-index I`).
    pub split: Share,
    /// How the run was asked for (the command line, the Python call): recorded in a job's
    /// output as provenance.
    pub command: String,
}

impl Default for PropagateOptions {
    fn default() -> Self {
        Self {
            seed: 1,
            max_photons: None,
            split: Share::WHOLE,
            command: String::new(),
        }
    }
}

/// A validated photon propagation: the detector, the source requests and the seed.
#[derive(Clone, Debug)]
pub struct Propagate {
    det: Arc<Detector>,
    specs: Vec<SourceSpec>,
    expected: f64,
    seed: u64,
    /// The sources in words (`warpdrive.input` in the metadata).
    input: String,
    /// The `EM` number of each f2k block, in block order.
    f2k_events: Option<Vec<i32>>,
    inputs: Vec<PathBuf>,
    split: Share,
    command: String,
}

/// Lines of `text`: a bound on the `TR` lines, hence on the sources, of an f2k or step file.
fn line_count(text: &str) -> u64 {
    text.lines().count() as u64
}

impl Propagate {
    /// Read and check the sources on `det`, and every option; nothing runs yet.
    pub fn new(det: Arc<Detector>, sources: SourceOptions, o: &PropagateOptions) -> Result<Self> {
        sources.check_one_kind()?;
        let mut inputs = det.inputs.clone();
        inputs.extend(sources.inputs());
        let budget = |what: &Path, text: &str| {
            warpdrive_core::limits::check_alloc(
                &format!("the sources of {}", what.display()),
                line_count(text),
                BYTES_PER_SOURCE,
                "split the file into several runs",
            )
        };
        let (specs, input, f2k_events) = if let Some(p) = &sources.input {
            let text = warpdrive_core::input::read_text(p)?;
            budget(p, &text)?;
            let f = crate::f2k::parse_f2k(p, &text, &det.yield_)?;
            (f.specs, p.display().to_string(), Some(f.event_numbers))
        } else if let Some(text) = &sources.f2k {
            let label = Path::new("<f2k text>");
            budget(label, text)?;
            let f = crate::f2k::parse_f2k(label, text, &det.yield_)?;
            (f.specs, label.display().to_string(), Some(f.event_numbers))
        } else if let Some(p) = &sources.steps {
            let text = warpdrive_core::input::read_text(p)?;
            budget(p, &text)?;
            (crate::f2k::parse_steps(p, &text)?, p.display().to_string(), None)
        } else {
            let primaries = sources.typed.primaries()?;
            let n = primaries.len();
            let specs = primaries
                .iter()
                .enumerate()
                .map(|(i, p)| SourceSpec::new(p, 0, &det.yield_).map_err(|e| typed_error(e, i, n)))
                .collect::<Result<Vec<_>>>()?;
            (specs, describe(&primaries), None)
        };
        let expected = source::check_total(&specs).map_err(Error::Failed)?;
        if let Some(max) = o.max_photons {
            if expected > max as f64 {
                return Err(ParamError::new(
                    "max_photons",
                    format!("{max}: the sources need about {expected:.3e} photons; raise it or propagate fewer or weaker sources"),
                )
                .into());
            }
        }
        Ok(Self {
            det,
            specs,
            expected,
            seed: o.seed,
            input,
            f2k_events,
            inputs,
            split: o.split,
            command: o.command.clone(),
        })
    }

    /// The files the run reads (outputs must not replace or contain them).
    pub fn inputs(&self) -> &[PathBuf] {
        &self.inputs
    }

    /// Sources and their expected photon count (before the Poisson draws).
    pub fn sources(&self) -> usize {
        self.specs.len()
    }

    pub fn expected_photons(&self) -> f64 {
        self.expected
    }

    /// The sources in words, as in the metadata (`warpdrive.input`).
    pub fn input(&self) -> &str {
        &self.input
    }

    pub fn detector(&self) -> &Detector {
        &self.det
    }

    /// Propagate on the control's device and threads. Zero photons drawn is an error; a raised
    /// cancellation token returns [`Error::Cancelled`] within one chunk of photons on the CPU
    /// or one batch on a GPU.
    pub fn run(&self, ctl: &Control) -> Result<PropagateResult> {
        let backend = backend(ctl)?;
        ctl.install(|| {
            let t0 = Instant::now();
            let (sim, stats) = simulate(&self.det, &self.specs, self.seed, self.split, &backend, ctl)?;
            if sim.photons == 0 {
                return Err(Error::Failed(format!(
                    "the sources produced zero photons (about {:.3} expected; raise the energy or photon count)",
                    self.expected
                )));
            }
            let device = match (&backend, &stats) {
                (Backend::Cuda(o), Some(s)) => format!("{}{}", s.devices.join(", "), if o.precise { " (precise)" } else { "" }),
                (Backend::Cpu { precise }, _) => format!(
                    "cpu ({} threads{})",
                    rayon::current_num_threads(),
                    if *precise { ", precise" } else { "" }
                ),
                _ => format!("cpu ({} threads)", rayon::current_num_threads()),
            };
            let mut metadata = self.metadata(sim.photons);
            if !self.split.is_whole() {
                metadata.extend(self.job_stamp(&metadata, &backend, sim.photons)?.metadata());
            }
            Ok(PropagateResult {
                metadata,
                with_pmt: self.det.sensors.is_some(),
                sim,
                device,
                gpu: stats,
                seconds: t0.elapsed().as_secs_f64(),
            })
        })?
    }

    /// Parquet key/value metadata: only what the inputs and the seed determine, so that the same
    /// request gives the same file from every front end, device and thread count (the device and
    /// timings are in [`PropagateResult`]).
    fn metadata(&self, photons: u64) -> Vec<(String, String)> {
        let mut m: Vec<(String, String)> = [
            ("warpdrive.version", env!("CARGO_PKG_VERSION").to_string()),
            ("warpdrive.seed", self.seed.to_string()),
            ("warpdrive.ice", self.det.ice.clone()),
            ("warpdrive.geometry", self.det.geometry.source.clone()),
            ("warpdrive.input", self.input.clone()),
            ("warpdrive.photons", photons.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        if let Some(ev) = &self.f2k_events {
            // The `event` column is the block ordinal; these are the blocks' `EM` numbers in order.
            let ev: Vec<String> = ev.iter().map(i32::to_string).collect();
            m.push(("warpdrive.f2k_events".to_string(), ev.join(",")));
        }
        m
    }
}

impl Propagate {
    /// What a job of this run records: the run's metadata, its arithmetic (CPU fast, GPU fast,
    /// precise: different hits for one seed) and its inputs' contents fingerprinted.
    fn job_stamp(&self, metadata: &[(String, String)], backend: &Backend, photons: u64) -> Result<JobStamp> {
        let arithmetic = match backend {
            Backend::Cpu { precise: true } => "precise",
            Backend::Cuda(o) if o.precise => "precise",
            Backend::Cpu { precise: false } => "cpu fast",
            Backend::Cuda(_) => "gpu fast",
        };
        let mut fields = metadata.to_vec();
        fields.push(("arithmetic".into(), arithmetic.into()));
        let run = jobs::fingerprint(&fields, &self.inputs)?;
        Ok(JobStamp::new(JOB_KIND, run, self.split, photons, &self.command))
    }
}

/// The job kind of a split photon run (`warpdrive photon --jobs N`).
pub const JOB_KIND: &str = "photon";

/// The hits of a split run's jobs (their Parquet files, each job once) as one run's table,
/// identical to the unsplit run's: rows in job order (photon ids ascend), the job keys dropped;
/// written to `output` when given (the unsplit run's file, byte for byte).
pub fn merge(jobs: &[PathBuf], output: Option<&Path>, force: bool, ctl: &Control) -> Result<Table> {
    jobs::merge_tables_into(jobs, JOB_KIND, output, force, ctl)
}

/// Typed sources in words: each one when there are few, else their number.
fn describe(p: &[Primary]) -> String {
    if p.len() <= 3 {
        p.iter().map(Primary::to_string).collect::<Vec<_>>().join("; ")
    } else {
        format!("{} typed sources", p.len())
    }
}

/// The photon back end of a control: its GPUs (fast or precise) or the CPU.
pub fn backend(ctl: &Control) -> Result<Backend> {
    Ok(match ctl.gpus()? {
        None => Backend::Cpu { precise: ctl.precise },
        // Precise: the build that twins the CPU's precise mode (`fast::twin`) photon by photon.
        Some(devices) if ctl.precise => Backend::Cuda(gpu::precise_options(devices)),
        Some(devices) => Backend::Cuda(gpu::GpuOptions {
            devices,
            ..Default::default()
        }),
    })
}

/// Draw the photon counts of `specs`, propagate them on `backend` and apply the acceptance, on
/// the current thread pool. `ctl.progress` counts the photons; a raised token returns
/// [`Error::Cancelled`] and nothing partial. Shared by [`Propagate::run`] and the PPC mode.
///
/// With a `split` other than [`Share::WHOLE`] only the job's share of the photon ids is
/// propagated (every photon's hits are those of the whole run); `photons` stays the run's total.
pub fn simulate(
    det: &Detector,
    specs: &[SourceSpec],
    seed: u64,
    split: Share,
    backend: &Backend,
    ctl: &Control,
) -> Result<(Simulation, Option<gpu::GpuStats>)> {
    let sources = source::realise(specs, seed);
    let photons = source::total_photons(&sources).map_err(Error::Failed)?;
    let ids = split.items(photons);
    ctl.progress.begin("propagating", ids.end - ids.start, "photons");
    ctl.check()?;
    let (m, idx) = (&det.medium, &det.index);
    let (raw, mut stats) = match backend {
        Backend::Cpu { precise: true } => (
            crate::fast::twin::run_range::<crate::fast::math::FusedGeom>(m, idx, &sources, seed, ids, &ctl.progress),
            None,
        ),
        Backend::Cpu { precise: false } => (crate::fast::run_range(m, idx, &sources, seed, ids, &ctl.progress), None),
        Backend::Cuda(o) => {
            let (raw, stats) = gpu::run_with(m, idx, &sources, seed, ids, o, &ctl.progress)?;
            (raw, Some(stats))
        }
    };
    ctl.check()?;
    let t_accept = std::time::Instant::now();
    let hits = hits::accept(det, &raw, &sources, seed);
    if let Some(s) = &mut stats {
        s.accept_seconds = t_accept.elapsed().as_secs_f64();
    }
    ctl.check()?;
    Ok((
        Simulation {
            sources,
            photons,
            raw_hits: raw.len(),
            hits,
        },
        stats,
    ))
}

/// The hits of a run and how they were computed.
#[derive(Clone, Debug)]
pub struct PropagateResult {
    pub sim: Simulation,
    /// Where it ran (`cpu (8 threads)`, `cuda:0 NVIDIA H100 (precise)`).
    pub device: String,
    pub gpu: Option<gpu::GpuStats>,
    /// Seconds of propagation and acceptance.
    pub seconds: f64,
    metadata: Vec<(String, String)>,
    with_pmt: bool,
}

impl PropagateResult {
    /// The Parquet file's key/value metadata.
    pub fn metadata(&self) -> &[(String, String)] {
        &self.metadata
    }

    /// The hits as the Parquet file's table (schema in docs/photon.md).
    #[must_use]
    pub fn table(&self) -> Table {
        hits::hits_table(&self.sim.hits, &self.metadata)
    }

    /// PPC's `HIT` lines (`HIT str om_pmt …` with multi-PMT modules), one per hit.
    #[must_use]
    pub fn hit_lines(&self) -> String {
        let mut text = String::with_capacity(self.sim.hits.len() * 96);
        hits::push_hit_lines(&mut text, &self.sim.hits, self.with_pmt);
        text
    }

    /// Write the staged outputs and make them visible together.
    pub fn save(&self, out: PhotonOutputs) -> Result<()> {
        if let Some((dest, tmp)) = &out.parquet {
            self.table()
                .write_parquet(tmp)
                .map_err(|e| Error::Failed(format!("writing {}: {e}", dest.display())))?;
        }
        if let Some((dest, tmp)) = &out.hit_lines {
            std::fs::write(tmp, self.hit_lines().as_bytes()).map_err(|source| OutputError::Io {
                path: dest.clone(),
                source,
            })?;
        }
        Ok(out.outs.commit()?)
    }
}

/// The outputs of a run, staged before the work: the Parquet file and/or the `HIT` lines.
pub struct PhotonOutputs {
    outs: Outputs,
    /// (destination, temporary) of each.
    parquet: Option<(PathBuf, PathBuf)>,
    hit_lines: Option<(PathBuf, PathBuf)>,
}

/// Check and stage the outputs before any work: none may be, lie in or contain an input, an
/// existing one is refused without `force`, an unusable location fails now.
pub fn prepare_outputs(output: Option<&Path>, hit_lines: Option<&Path>, force: bool, inputs: &[PathBuf]) -> Result<PhotonOutputs> {
    let ins: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let dests: Vec<&Path> = [output, hit_lines].into_iter().flatten().collect();
    let mut outs = Outputs::new(force);
    outs.check(&ins, &dests)?;
    let mut stage = |dest: Option<&Path>| -> Result<Option<(PathBuf, PathBuf)>> {
        Ok(match dest {
            Some(d) => Some((d.to_path_buf(), outs.file(d)?)),
            None => None,
        })
    };
    let parquet = stage(output)?;
    let hit_lines = stage(hit_lines)?;
    Ok(PhotonOutputs { outs, parquet, hit_lines })
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpdrive_core::engine::{Device, Style};

    fn builtin() -> Arc<Detector> {
        Arc::new(detector(&DetectorSpec::default()).unwrap())
    }

    fn cpu() -> Control {
        Control::new().device(Device::Cpu).threads(Some(2))
    }

    fn typed(t: TypedSources) -> SourceOptions {
        SourceOptions {
            typed: t,
            ..Default::default()
        }
    }

    fn err(det: &Arc<Detector>, s: SourceOptions, o: &PropagateOptions) -> (String, String) {
        let e = Propagate::new(Arc::clone(det), s, o).unwrap_err();
        (e.render(Style::Cli), e.render(Style::Python))
    }

    /// Two kinds of source together name both, as each front end spells them.
    #[test]
    fn one_kind_of_source() {
        let det = builtin();
        let s = SourceOptions {
            input: Some("a.f2k".into()),
            steps: Some("s.txt".into()),
            ..Default::default()
        };
        let (cli, py) = err(&det, s, &PropagateOptions::default());
        assert_eq!(cli, "--input cannot be given together with --steps: give one kind of source");
        assert_eq!(py, "input cannot be given together with steps: give one kind of source");
        let s = SourceOptions {
            f2k: Some("TR 1 0 e 0 0 0 180 0 0 1 0\n".into()),
            typed: TypedSources {
                energy: Some(vec![10.0]),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(
            err(&det, s, &PropagateOptions::default()).1,
            "f2k cannot be given together with energy: give one kind of source"
        );
    }

    /// Typed options broadcast one value to every source; lengths that disagree, empty
    /// options and unknown particles name the parameter (and the source when there are several).
    #[test]
    fn typed_sources_broadcast_and_name_their_parameter() {
        let t = TypedSources {
            particle: Some(vec![ParticleName::Name("e-".into()), ParticleName::Pdg(211)]),
            position: Some(vec![0.0, 0.0, -400.0]),
            energy: Some(vec![100.0, 200.0]),
            ..Default::default()
        };
        let p = t.primaries().unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!((p[0].particle, p[1].particle), (Particle::Electron, Particle::Hadron));
        assert_eq!(p[1].position, [0.0, 0.0, -400.0]);
        assert_eq!((p[1].energy, p[1].zenith, p[1].time), (200.0, 180.0, 0.0));
        let det = builtin();
        let o = PropagateOptions::default();
        let bad = |t: TypedSources| err(&det, typed(t), &o);
        let (cli, py) = bad(TypedSources {
            energy: Some(vec![1.0, 2.0, 3.0]),
            time: Some(vec![0.0, 1.0]),
            ..Default::default()
        });
        assert_eq!(
            cli,
            "--time has 2 sources but --energy has 3: give one value for all sources or one per source"
        );
        assert_eq!(
            py,
            "time has 2 sources but energy has 3: give one value for all sources or one per source"
        );
        let (cli, _) = bad(TypedSources {
            position: Some(vec![1.0, 2.0]),
            ..Default::default()
        });
        assert_eq!(cli, "--position has 2 numbers: expected x, y, z [m] per source");
        let (_, py) = bad(TypedSources {
            particle: Some(vec![ParticleName::Name("e".into()), ParticleName::Name("tau".into())]),
            ..Default::default()
        });
        assert!(py.starts_with("particle of source 1: 'tau': unknown (f2k names: amu amu+"), "{py}");
        let (cli, _) = bad(TypedSources {
            particle: Some(vec![ParticleName::Pdg(2212)]),
            ..Default::default()
        });
        assert!(cli.starts_with("--particle 2212: unknown"), "{cli}");
        assert!(cli.contains("gamma (22)"), "{cli}");
        let (cli, py) = bad(TypedSources {
            energy: Some(vec![-5.0]),
            ..Default::default()
        });
        assert_eq!(cli, "--energy -5: must be positive (zero photons)");
        assert_eq!(py, "energy -5: must be positive (zero photons)");
        let (_, py) = bad(TypedSources {
            position: Some(vec![0.0, 0.0, 0.0, 0.0, f64::NAN, 0.0]),
            ..Default::default()
        });
        assert_eq!(py, "position of source 1: NaN: must be a finite number");
        let (cli, _) = bad(TypedSources {
            time: Some(vec![]),
            ..Default::default()
        });
        assert_eq!(cli, "--time is empty: give one value for all sources or one per source");
    }

    /// The photons-per-run limit and `max_photons` hold for every front end (the Python path
    /// skipped them before).
    #[test]
    fn photon_limits_are_checked_in_the_request() {
        let det = builtin();
        let one = |e: f64| {
            typed(TypedSources {
                energy: Some(vec![e]),
                ..Default::default()
            })
        };
        let o = PropagateOptions {
            seed: 1,
            max_photons: Some(10),
            ..Default::default()
        };
        let (cli, py) = err(&det, one(1000.0), &o);
        assert!(cli.starts_with("--max-photons 10: the sources need about 5.149e5 photons"), "{cli}");
        assert!(py.starts_with("max_photons 10: the sources need"), "{py}");
        let many = typed(TypedSources {
            energy: Some(vec![9e12; 3000]),
            ..Default::default()
        });
        let e = Propagate::new(Arc::clone(&det), many, &PropagateOptions::default()).unwrap_err();
        assert!(matches!(e, Error::Failed(_)), "{e:?}");
        assert!(e.to_string().contains("more than the limit of 1e19 per run"), "{e}");
    }

    /// A run split into jobs, in both CPU modes: the merged Parquet file is the unsplit run's,
    /// byte for byte, for several job counts; a job with no photons is a valid (empty) job.
    #[test]
    fn split_runs_merge_into_the_whole_run() {
        let det = builtin();
        let dir = std::env::temp_dir().join(format!("wd-photon-split-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let sources = || {
            typed(TypedSources {
                energy: Some(vec![300.0, 200.0]),
                position: Some(vec![0.0, 0.0, 0.0, 20.0, 0.0, -30.0]),
                ..Default::default()
            })
        };
        for precise in [false, true] {
            let ctl = cpu().precise(precise);
            let run = |split: Share, path: &Path| {
                let o = PropagateOptions {
                    seed: 5,
                    split,
                    command: "test".into(),
                    ..Default::default()
                };
                let r = Propagate::new(Arc::clone(&det), sources(), &o).unwrap().run(&ctl).unwrap();
                r.table().write_parquet(path).unwrap();
                r
            };
            let whole = dir.join("whole.parquet");
            let w = run(Share::WHOLE, &whole);
            assert!(w.sim.hits.len() > 20, "{} hits", w.sim.hits.len());
            for jobs in [2u64, 7] {
                let paths: Vec<PathBuf> = (0..jobs).map(|i| dir.join(format!("job{i}.parquet"))).collect();
                for (i, p) in paths.iter().enumerate().rev() {
                    run(Share::new(jobs, i as u64).unwrap(), p);
                }
                let out = dir.join("merged.parquet");
                merge(&paths, Some(&out), true, &ctl).unwrap();
                assert_eq!(
                    std::fs::read(&out).unwrap(),
                    std::fs::read(&whole).unwrap(),
                    "{jobs} jobs, precise {precise}"
                );
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A raised token stops the run: `Error::Cancelled`, no result.
    #[test]
    fn a_raised_token_cancels_the_run() {
        let det = builtin();
        let req = Propagate::new(det, SourceOptions::default(), &PropagateOptions::default()).unwrap();
        let ctl = cpu();
        ctl.cancel.cancel();
        let t0 = Instant::now();
        assert!(matches!(req.run(&ctl), Err(Error::Cancelled(_))));
        assert!(t0.elapsed().as_secs_f64() < 1.0);
    }

    /// A token raised in the middle of a long CPU run (a 10⁷ GeV cascade: 5·10⁹ photons, hours on
    /// two threads) stops it within a second: the photon chunks poll it.
    #[test]
    fn a_long_cpu_run_stops_within_a_second() {
        let det = builtin();
        let big = typed(TypedSources {
            energy: Some(vec![1e7]),
            ..Default::default()
        });
        let req = Propagate::new(det, big, &PropagateOptions::default()).unwrap();
        let ctl = cpu();
        let (tx, rx) = std::sync::mpsc::channel();
        let worker = ctl.clone();
        // Not scoped: without the polling the run would go on for hours, and the test must fail,
        // not wait for it.
        std::thread::spawn(move || {
            let _ = tx.send(req.run(&worker).map(|r| r.sim.photons));
        });
        while ctl.progress.done() == 0 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let t0 = Instant::now();
        ctl.cancel.cancel();
        let r = rx
            .recv_timeout(std::time::Duration::from_secs(5))
            .expect("the run did not stop within 5 s of the token");
        assert!(matches!(r, Err(Error::Cancelled(_))), "{r:?}");
        let stopped = t0.elapsed().as_secs_f64();
        assert!(stopped < 1.0, "{stopped} s from the token to the return");
    }

    /// The default cascade, typed sources and their f2k text are the same request: the same
    /// hits and metadata except for the description of the input.
    #[test]
    fn default_cascade_typed_sources_and_f2k_text_agree() {
        let det = builtin();
        let o = PropagateOptions {
            seed: 3,
            ..Default::default()
        };
        let run = |s: SourceOptions| Propagate::new(Arc::clone(&det), s, &o).unwrap().run(&cpu()).unwrap();
        let small = TypedSources {
            energy: Some(vec![300.0]),
            ..Default::default()
        };
        let a = run(typed(small.clone()));
        let b = run(SourceOptions {
            f2k: Some("TR 1 0 e 0 0 0 180 0 0 300 0\n".into()),
            ..Default::default()
        });
        assert!(!a.sim.hits.is_empty());
        assert_eq!(a.sim.hits, b.sim.hits);
        let input = |r: &PropagateResult| r.metadata().iter().find(|(k, _)| k == "warpdrive.input").unwrap().1.clone();
        assert_eq!(input(&a), "e 300 GeV at (0, 0, 0) m, zenith 180°, azimuth 0°, t 0 ns");
        assert_eq!(input(&b), "<f2k text>");
        assert!(a
            .metadata()
            .iter()
            .all(|(k, _)| k != "warpdrive.device" && k != "warpdrive.command"));
        // The same typed request again: identical (the seed fixes everything).
        assert_eq!(run(typed(small)).sim.hits, a.sim.hits);
    }

    #[test]
    fn oversize_is_checked() {
        let e = detector(&DetectorSpec {
            oversize: Some(0),
            ..Default::default()
        })
        .unwrap_err();
        assert_eq!(e.render(Style::Cli), "--oversize 0: must be between 1 and 1000");
        assert!(detector(&DetectorSpec {
            oversize: Some(1 << 40),
            ..Default::default()
        })
        .is_err());
    }
}
