//! The EM runs as library calls (DESIGN.md §2, `warpdrive_core::engine`): typed, validated
//! requests built from typed values, run under a [`Control`], whose results write their output
//! directories with the output discipline. `warpdrive em`, `warpdrive em testem3|calorimeter`
//! and `warpdrive.em.run/testem3/calorimeter` only translate their arguments into these calls.
//!
//! * [`KleinNishina`] — the mini-app: photons of one energy in one material, Compton only, the
//!   energy deposition tallied along z ([`KleinNishinaResult::save`]: `edep.parquet`,
//!   `edep.png`, `summary.json`, `run.json`).
//! * [`Shower`] — EM showers in TestEm3 or a calorimeter file ([`ShowerResult::save`]:
//!   `profile.parquet`, `events.parquet`, `profile.png`, `summary.json`, `run.json`). The
//!   shower tables (seconds to build) are kept per process, keyed by what determines them
//!   (calorimeter, cuts, table options), so a second run with the same set-up starts at once.
//!
//! Constructors check every option and budget every size derived from them (tally bins, event
//! tallies, material tables) before anything is allocated; `run` polls the cancellation token
//! (CPU: every group of 4 096 tracks, every event and every 1 024 tracks of an event; GPU:
//! between batches) and returns [`Error::Cancelled`], so a partial result never reaches an
//! output. Data files hold only what the request determines; the device, threads, timings and the
//! command line go to `run.json`.

use crate::material::Material;
use crate::physics::PhysicsList;
use crate::shower::cuts::RangeCuts;
use crate::shower::geometry::Calorimeter;
use crate::shower::gpu::GpuShowerOptions;
use crate::shower::reference::{Testem3Run, BIASED, UNBIASED};
use crate::shower::run::{MaterialSummary, ShowerRun};
use crate::shower::tables::TableOptions;
use crate::shower::transport::{Primary, ShowerPhysics, CREATORS};
use crate::shower::Particle;
use crate::transport::{RunOptions, RunResult, TallyGrid};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use warpdrive_core::engine::{Control, Error, ParamError, Result};
use warpdrive_core::jobs::{self, JobStamp, Share};
use warpdrive_core::limits::check_alloc;
use warpdrive_core::output::Staged;
use warpdrive_core::plot::PlotError;
use warpdrive_core::table::{Column, Table};

// ---------------------------------------------------------------------------------------------
// Shared by both runs
// ---------------------------------------------------------------------------------------------

/// Prepare a run's output directory before it computes (the output discipline).
pub use warpdrive_core::engine::prepare_dir as prepare_output;

/// A number as a person writes it: `5e-324`, `1e308`, `0.5`, `2048` (Rust's `{}` spells out
/// every digit of 5e-324).
fn num(x: f64) -> String {
    if x == 0.0 || !x.is_finite() || (1e-4..1e16).contains(&x.abs()) {
        x.to_string()
    } else {
        format!("{x:e}")
    }
}

/// The CPU threads of the current pool, as `run.json` reports them.
fn cpu_device() -> String {
    format!("cpu ({} threads)", rayon::current_num_threads())
}

fn write_json(dir: &Path, name: &str, value: &serde_json::Value, shown: &Path) -> Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(|e| Error::Failed(e.to_string()))? + "\n";
    std::fs::write(dir.join(name), text).map_err(|e| Error::Failed(format!("{}: writing {name}: {e}", shown.display())))
}

fn write_table(dir: &Path, name: &str, t: &Table, shown: &Path) -> Result<()> {
    t.write_parquet(&dir.join(name))
        .map_err(|e| Error::Failed(format!("{}: writing {name}: {e}", shown.display())))
}

/// A plot whose axis ranges are not finite is skipped with a note (the data files are complete
/// without it); any other plotting failure is an error.
fn plot_or_note(name: &str, drawn: std::result::Result<(), PlotError>, notes: &mut Vec<String>) -> Result<()> {
    match drawn {
        Ok(()) => Ok(()),
        Err(e) if e.skipped => {
            notes.push(format!("{name} not drawn: {} (the other outputs are complete)", e.message));
            Ok(())
        }
        Err(e) => Err(Error::Failed(format!("{name}: {}", e.message))),
    }
}

/// Run metadata of the Parquet files: only what the request determines, so that the same request
/// from the CLI and from Python gives the same bytes (how it was asked for goes to `run.json`).
fn metadata(pairs: &[(&str, String)]) -> Vec<(String, String)> {
    let mut m = vec![("warpdrive.version".to_string(), env!("CARGO_PKG_VERSION").to_string())];
    m.extend(pairs.iter().map(|(k, v)| ((*k).to_string(), v.clone())));
    m
}

// ---------------------------------------------------------------------------------------------
// The Klein–Nishina mini-app
// ---------------------------------------------------------------------------------------------

/// The highest photon energy of the Compton cross-section table [MeV] (100 TeV).
pub const MAX_PHOTON_ENERGY: f64 = 1e8;
/// The narrowest tally bin [cm]: deposits are interaction points, so finer bins resolve nothing,
/// and below ~1e-300 cm the per-cm column would overflow to infinity.
pub const MIN_TALLY_WIDTH: f64 = 1e-6;
/// Most slots and stack entries: the GPU counts them in 32 bits.
pub const MAX_SLOTS: u64 = u32::MAX as u64;
/// `--material` / `material=`: a built-in material (NIST name, [`crate::nist`]) or a TOML file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MaterialChoice {
    Named(String),
    File(PathBuf),
}

impl Default for MaterialChoice {
    fn default() -> Self {
        MaterialChoice::Named("G4_Al".into())
    }
}

impl MaterialChoice {
    /// What the user typed: a built-in name (`G4_Pb`, `aluminium`, …) if there is one of that
    /// name, else a file path, taken byte for byte (a TOML file whose name is not UTF-8 works).
    #[must_use]
    pub fn parse(text: impl AsRef<std::ffi::OsStr>) -> Self {
        let text = text.as_ref();
        match text.to_str().filter(|name| Material::builtin(name).is_some()) {
            Some(name) => MaterialChoice::Named(name.to_string()),
            None => MaterialChoice::File(PathBuf::from(text)),
        }
    }

    fn unknown(what: &str) -> ParamError {
        ParamError::new(
            "material",
            format!(
                "'{what}': neither a built-in material ({}; 'aluminium' is G4_Al) nor a TOML file (docs/em.md)",
                crate::nist::NAMES
            ),
        )
    }

    /// The material, and the file it was read from.
    fn load(&self) -> Result<(Material, Option<PathBuf>)> {
        match self {
            MaterialChoice::Named(n) => Material::builtin(n).map(|m| (m, None)).ok_or_else(|| Self::unknown(n).into()),
            MaterialChoice::File(p) => {
                let looks_like_file = p.extension().is_some_and(|e| e == "toml") || p.is_file();
                if !looks_like_file {
                    return Err(Self::unknown(&p.display().to_string()).into());
                }
                Ok((Material::from_toml(p)?, Some(p.clone())))
            }
        }
    }
}

/// The options of one mini-app run; `Default` is the command line's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct KleinNishinaOptions {
    /// Primary photon energy [MeV] (photons start at the origin along +z).
    pub energy: f64,
    pub tracks: u64,
    /// Track i draws from the Philox stream (seed, i).
    pub seed: u64,
    pub material: MaterialChoice,
    /// Lower edge of the first z bin [cm].
    pub tally_front: f64,
    /// Bin width [cm].
    pub tally_width: f64,
    pub tally_bins: u64,
    /// Track slots in flight at once (default: min(tracks, 2²³)).
    pub slots: Option<u64>,
    /// Capacity of the hit and secondary stacks per iteration (default: one per slot).
    pub stack_capacity: Option<u64>,
    /// A reference profile to overlay on the plot (one MeV/cm value per 1-cm bin per line).
    pub compare: Option<PathBuf>,
}

impl Default for KleinNishinaOptions {
    fn default() -> Self {
        Self {
            energy: 100.0,
            tracks: 1 << 20,
            seed: 12345,
            material: MaterialChoice::default(),
            tally_front: 0.0,
            tally_width: 1.0,
            tally_bins: 2048,
            slots: None,
            stack_capacity: None,
            compare: None,
        }
    }
}

/// A reference profile and the label it is plotted with.
#[derive(Clone, Debug, PartialEq)]
struct Reference {
    label: String,
    values: Vec<f64>,
}

/// A validated mini-app run.
#[derive(Clone, Debug)]
pub struct KleinNishina {
    material: Material,
    opts: RunOptions,
    inputs: Vec<PathBuf>,
    reference: Option<Reference>,
}

/// Host bytes per tally bin: one 64-bit tally per CPU worker, the profile's five columns and the
/// plot's points.
fn tally_bytes_per_bin(workers: u64) -> u64 {
    8 * workers + 5 * 8 + 2 * 8
}

fn check_tally(o: &KleinNishinaOptions) -> Result<TallyGrid> {
    if !o.tally_front.is_finite() {
        return Err(ParamError::new("tally_front", format!("{} cm: must be finite", num(o.tally_front))).into());
    }
    let w = o.tally_width;
    if !w.is_finite() {
        return Err(ParamError::new("tally_width", format!("{} cm: must be finite", num(w))).into());
    }
    if w < MIN_TALLY_WIDTH {
        return Err(ParamError::new("tally_width", format!("{} cm: must be at least {MIN_TALLY_WIDTH:e} cm", num(w))).into());
    }
    if o.tally_bins == 0 {
        return Err(ParamError::new("tally_bins", "must be at least 1").into());
    }
    if o.tally_bins > u64::from(u32::MAX) {
        return Err(ParamError::new("tally_bins", format!("{}: at most {}", o.tally_bins, u32::MAX)).into());
    }
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    check_alloc("tally_bins", o.tally_bins, tally_bytes_per_bin(workers), "use fewer, wider bins")?;
    TallyGrid::new(o.tally_front, w, o.tally_bins as usize).map_err(Error::Failed)
}

fn check_count(param: &'static str, v: Option<u64>) -> Result<Option<u32>> {
    match v {
        None => Ok(None),
        Some(0) => Err(ParamError::new(param, "must be at least 1").into()),
        Some(n) if n > MAX_SLOTS => Err(ParamError::new(param, format!("{n}: at most {MAX_SLOTS}")).into()),
        Some(n) => Ok(Some(n as u32)),
    }
}

impl KleinNishina {
    /// Check every option, read the material and the comparison file, and budget the tally;
    /// nothing runs yet.
    pub fn new(o: &KleinNishinaOptions) -> Result<Self> {
        let e = o.energy;
        if !(e.is_finite() && e > 0.0) {
            return Err(ParamError::new("energy", format!("{} MeV: must be positive", num(e))).into());
        }
        if e > MAX_PHOTON_ENERGY {
            return Err(ParamError::new(
                "energy",
                format!(
                    "{} MeV: above the cross-section table (at most {MAX_PHOTON_ENERGY:e} MeV = 100 TeV)",
                    num(e)
                ),
            )
            .into());
        }
        if o.tracks == 0 {
            return Err(ParamError::new("tracks", "must be at least 1").into());
        }
        // Every deposit is counted in 64-bit fixed point (2⁻³⁰ MeV, transport::EDEP_SCALE): one
        // bin, and the total, hold at most 2⁶⁴·2⁻³⁰ MeV. A run whose energy could exceed it would
        // wrap silently, so it is refused (tracks × energy is what all bins together can receive).
        let deposit = o.tracks as f64 * e;
        if deposit > crate::transport::MAX_DEPOSIT {
            return Err(ParamError::new(
                "tracks",
                format!(
                    "{} × {} MeV = {deposit:.3e} MeV: the fixed-point tallies hold at most {:.3e} MeV per run; \
                     use fewer tracks and add runs of different seeds",
                    o.tracks,
                    num(e),
                    crate::transport::MAX_DEPOSIT
                ),
            )
            .into());
        }
        let grid = check_tally(o)?;
        let slots = check_count("slots", o.slots)?;
        let capacity = check_count("stack_capacity", o.stack_capacity)?;
        let mut opts = RunOptions::new(e, o.tracks, o.seed, grid).map_err(Error::Failed)?;
        if let Some(s) = slots {
            opts.slots = s as usize;
            opts.hit_capacity = s;
            opts.secondary_capacity = s;
        }
        if let Some(c) = capacity {
            opts.hit_capacity = c;
            opts.secondary_capacity = c;
        }
        let (material, file) = o.material.load()?;
        let mut inputs: Vec<PathBuf> = file.into_iter().collect();
        let reference = match &o.compare {
            None => None,
            Some(p) => {
                let values = crate::output::read_profile(p)?;
                inputs.push(p.clone());
                let label = p
                    .file_name()
                    .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned());
                Some(Reference { label, values })
            }
        };
        Ok(Self {
            material,
            opts,
            inputs,
            reference,
        })
    }

    /// The files the run reads (outputs must not replace or contain them).
    pub fn inputs(&self) -> &[PathBuf] {
        &self.inputs
    }

    pub fn material(&self) -> &Material {
        &self.material
    }

    /// Energy, tracks, seed, tally, slots and stack capacities as the transport loop takes them.
    pub fn options(&self) -> &RunOptions {
        &self.opts
    }

    /// Transport the photons on the control's device (the CPU, or the GPUs: the track ids split
    /// across them, integer tallies added, so the result equals the CPU's) and threads. Returns
    /// [`Error::Cancelled`] when the token is raised (within a group of 4 096 tracks on the CPU,
    /// a batch on a GPU).
    pub fn run(&self, ctl: &Control) -> Result<KleinNishinaResult> {
        let gpus = ctl.gpus()?;
        let physics = PhysicsList::compton_only(&self.material);
        ctl.install(|| {
            ctl.progress.begin("tracks", self.opts.tracks, "tracks");
            let t0 = Instant::now();
            let (result, device) = match &gpus {
                None => (crate::transport::run(&physics, &self.opts, &ctl.progress), cpu_device()),
                Some(d) => {
                    let (r, st) = crate::gpu::run_devices(&physics, &self.opts, d, &ctl.progress)?;
                    (r, format!("{} ({} registers)", st.device, st.registers))
                }
            };
            ctl.check()?;
            Ok(KleinNishinaResult {
                result,
                grid: self.opts.tally,
                device,
                seconds: t0.elapsed().as_secs_f64(),
                material: self.material.name.clone(),
                density: self.material.density,
                energy: self.opts.energy,
                seed: self.opts.seed,
                reference: self.reference.clone(),
            })
        })?
    }
}

/// The integrals, the tally and how a mini-app run was computed.
#[derive(Clone, Debug)]
pub struct KleinNishinaResult {
    pub result: RunResult,
    pub grid: TallyGrid,
    /// Where it ran (`cpu (2 threads)`, `cuda:0 … (40 registers)`).
    pub device: String,
    /// Transport time [s].
    pub seconds: f64,
    pub material: String,
    /// Density of the material [g/cm³].
    pub density: f64,
    pub energy: f64,
    pub seed: u64,
    reference: Option<Reference>,
}

/// Geant4's numbers for the mini-app's reference case, 100 MeV photons in aluminium, Compton
/// only (spec em.md §4.1, 60 000 events).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Geant4MiniApp {
    /// Mean deposition depth [cm].
    pub mean_depth_cm: f64,
    /// Energy per primary deposited beyond 100, 200 and 500 cm [MeV].
    pub beyond_mev: [(f64, f64); 3],
    pub steps_per_track: f64,
}

pub const GEANT4_100MEV_AL: Geant4MiniApp = Geant4MiniApp {
    mean_depth_cm: 176.06,
    beyond_mev: [(100.0, 57.95), (200.0, 32.77), (500.0, 5.40)],
    steps_per_track: 57.24,
};

impl KleinNishinaResult {
    /// Geant4's numbers when this run is their case (100 MeV photons in G4_Al), else None.
    #[must_use]
    pub fn geant4_reference(&self) -> Option<Geant4MiniApp> {
        (self.energy == 100.0 && self.material == "G4_Al").then_some(GEANT4_100MEV_AL)
    }

    /// Energy per primary deposited in bins at or beyond `z` [MeV].
    #[must_use]
    pub fn energy_beyond(&self, z: f64) -> f64 {
        self.result.energy_beyond(&self.grid, z)
    }

    #[must_use]
    pub fn track_steps_per_second(&self) -> f64 {
        self.result.steps as f64 / self.seconds
    }

    /// `summary.json`: only what the request determines (equal for equal requests on any
    /// device or thread count).
    #[must_use]
    pub fn summary(&self) -> serde_json::Value {
        let r = &self.result;
        json!({
            "tracks": r.tracks,
            "steps": r.steps,
            "steps_per_track": r.steps_per_track(),
            "mean_deposition_depth_cm": r.mean_depth(),
            "energy_beyond_cm_mev": {
                "100": self.energy_beyond(100.0),
                "200": self.energy_beyond(200.0),
                "500": self.energy_beyond(500.0),
            },
            "energy_deposited_per_primary_mev": r.profile().iter().sum::<f64>(),
            "secondaries": r.secondaries,
            "result_checksum": r.checksum(),
            "run": {
                "energy_mev": self.energy, "material": self.material, "seed": self.seed,
                "tally": {"front_cm": self.grid.front, "width_cm": self.grid.delta, "bins": self.grid.size},
            },
        })
    }

    /// `run.json`: how this run was computed (device, timings, loop iterations and stack
    /// retries — which depend on the device's batching, not the result —, command, version).
    #[must_use]
    pub fn environment(&self, command: &str) -> serde_json::Value {
        json!({
            "device": self.device,
            "transport_seconds": self.seconds,
            "track_steps_per_second": self.track_steps_per_second(),
            "iterations": self.result.iterations,
            "retries_after_full_stacks": self.result.retries,
            "command": command,
            "version": env!("CARGO_PKG_VERSION"),
        })
    }

    /// `edep.parquet`'s table, with the run metadata.
    #[must_use]
    pub fn profile_table(&self) -> Table {
        let meta = metadata(&[
            ("warpdrive.seed", self.seed.to_string()),
            ("em.tracks", self.result.tracks.to_string()),
            ("em.energy_mev", self.energy.to_string()),
            ("em.material", self.material.clone()),
        ]);
        crate::output::profile_table(&self.grid, &self.result, &meta)
    }

    /// Write `edep.parquet`, `summary.json`, `run.json` and, if `plot`, `edep.png` into the
    /// prepared directory and commit it whole. Returns notes for the user (a plot skipped
    /// because its axes would not be finite).
    pub fn save(&self, out: Staged, plot: bool, command: &str) -> Result<Vec<String>> {
        let dir = out.path().to_path_buf();
        let shown = out.dest().to_path_buf();
        let mut notes = Vec::new();
        write_table(&dir, "edep.parquet", &self.profile_table(), &shown)?;
        if plot {
            let title = format!("{} MeV photons in {}: energy deposition", self.energy, self.material);
            let reference = self.reference.as_ref().map(|r| (r.label.as_str(), r.values.as_slice()));
            let drawn = crate::output::plot_profile(&dir.join("edep.png"), &self.grid, &self.result, &title, reference);
            plot_or_note("edep.png", drawn, &mut notes)?;
        }
        write_json(&dir, "summary.json", &self.summary(), &shown)?;
        write_json(&dir, "run.json", &self.environment(command), &shown)?;
        out.commit()?;
        Ok(notes)
    }
}

// ---------------------------------------------------------------------------------------------
// EM showers in a calorimeter
// ---------------------------------------------------------------------------------------------

/// The highest primary kinetic energy [MeV] (the fixed-point event tallies hold 1.6e7 MeV).
pub const MAX_SHOWER_ENERGY: f64 = 1e7;
/// The largest production cut [mm].
pub const MAX_CUT_MM: f64 = 1e4;

/// The checks every shower request makes of its primary and run size: the kinetic energy in
/// (0, [`MAX_SHOWER_ENERGY`]] MeV, the production cut in (0, [`MAX_CUT_MM`]] mm, at least one
/// event (shared by [`Shower::new`] and [`DetectorShower::new`]).
fn check_primary(energy: f64, cut_mm: f64, events: u64) -> Result<()> {
    if !(energy.is_finite() && energy > 0.0 && energy <= MAX_SHOWER_ENERGY) {
        return Err(ParamError::new("energy", format!("{} MeV: must be in (0, {MAX_SHOWER_ENERGY:e}] MeV", num(energy))).into());
    }
    if !(cut_mm.is_finite() && cut_mm > 0.0 && cut_mm <= MAX_CUT_MM) {
        return Err(ParamError::new("cut_mm", format!("{} mm: must be in (0, {MAX_CUT_MM:e}] mm", num(cut_mm))).into());
    }
    if events == 0 {
        return Err(ParamError::new("events", "must be at least 1").into());
    }
    Ok(())
}

/// `--primary` / `primary=`.
impl std::str::FromStr for Particle {
    type Err = ParamError;
    fn from_str(s: &str) -> Result<Self, ParamError> {
        match s {
            "e-" | "electron" => Ok(Particle::Electron),
            "e+" | "positron" => Ok(Particle::Positron),
            "gamma" | "photon" => Ok(Particle::Gamma),
            _ => Err(ParamError::new("primary", format!("'{s}': expected e-, e+ or gamma"))),
        }
    }
}

/// The calorimeter of a shower run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum CalorimeterChoice {
    /// Geant4's TestEm3: 50 × [2.3 mm lead + 5.7 mm liquid argon], 40 cm wide.
    #[default]
    Testem3,
    /// A calorimeter TOML file (docs/em.md).
    File(PathBuf),
}

/// The options of one shower run; `Default` is the command line's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct ShowerOptions {
    pub primary: Particle,
    /// Primary kinetic energy [MeV].
    pub energy: f64,
    pub events: u64,
    pub seed: u64,
    /// One production cut for γ, e⁻ and e⁺, as a range [mm].
    pub cut_mm: f64,
    /// The share of the events this job runs (`--jobs N --job-index I`).
    pub split: Share,
    /// How the run was asked for (provenance in a job's output).
    pub command: String,
}

impl Default for ShowerOptions {
    fn default() -> Self {
        Self {
            primary: Particle::Electron,
            energy: 1000.0,
            events: 1000,
            seed: 12345,
            cut_mm: 1.0,
            split: Share::WHOLE,
            command: String::new(),
        }
    }
}

/// The job kind of a split shower run (`warpdrive em testem3|shower --jobs N`).
pub const SHOWER_JOB_KIND: &str = "em shower";

/// The file of a shower job's output directory that holds every event's integer tally (what
/// the merge rebuilds the unsplit run from) and the request.
const TALLIES: &str = "tallies.parquet";

/// The request of a shower run as the merge rebuilds it (`em.request` in a job's files).
fn request_json(calorimeter: &CalorimeterChoice, o: &ShowerOptions) -> String {
    let cal = match calorimeter {
        CalorimeterChoice::Testem3 => json!("testem3"),
        CalorimeterChoice::File(f) => json!({ "file": f.display().to_string() }),
    };
    json!({
        "calorimeter": cal, "primary": o.primary.name(), "energy_mev": o.energy, "events": o.events,
        "seed": o.seed, "cut_mm": o.cut_mm,
    })
    .to_string()
}

/// [`request_json`] read back from `path`'s metadata.
fn request_from_json(path: &Path, text: &str) -> Result<(CalorimeterChoice, ShowerOptions)> {
    let bad = |what: &str| Error::from(warpdrive_core::InputError::file(path, format!("em.request: {what}")));
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| bad(&e.to_string()))?;
    let cal = match &v["calorimeter"] {
        serde_json::Value::String(s) if s == "testem3" => CalorimeterChoice::Testem3,
        c => CalorimeterChoice::File(c["file"].as_str().ok_or_else(|| bad("no calorimeter"))?.into()),
    };
    let num = |k: &str| v[k].as_f64().ok_or_else(|| bad(&format!("no {k}")));
    let count = |k: &str| v[k].as_u64().ok_or_else(|| bad(&format!("no {k}")));
    let opts = ShowerOptions {
        primary: v["primary"]
            .as_str()
            .ok_or_else(|| bad("no primary"))?
            .parse()
            .map_err(|e: ParamError| bad(&e.text))?,
        energy: num("energy_mev")?,
        events: count("events")?,
        seed: count("seed")?,
        cut_mm: num("cut_mm")?,
        ..ShowerOptions::default()
    };
    Ok((cal, opts))
}

/// Host bytes of one material's shower tables (about 16 log-E grids of energies and values;
/// twice for the copy the GPU's flat tables are made from).
fn table_bytes_per_material(t: &TableOptions) -> u64 {
    let points = (t.bins_per_decade as f64 * (t.e_max / t.e_min).log10()).ceil() as u64 + 1;
    2 * 16 * points * 16
}

/// A validated shower run.
#[derive(Clone, Debug)]
pub struct Shower {
    calorimeter: Calorimeter,
    testem3: bool,
    cuts: RangeCuts,
    tables: TableOptions,
    primary: Primary,
    opts: ShowerOptions,
    inputs: Vec<PathBuf>,
    /// [`request_json`] of this run.
    request: String,
}

impl Shower {
    /// Check every option, read the calorimeter (and its material files) and budget the event
    /// tallies and tables; nothing runs yet.
    pub fn new(calorimeter: CalorimeterChoice, o: &ShowerOptions) -> Result<Self> {
        check_primary(o.energy, o.cut_mm, o.events)?;
        let request = request_json(&calorimeter, o);
        let (cal, inputs, testem3) = match calorimeter {
            CalorimeterChoice::Testem3 => (Calorimeter::testem3(), Vec::new(), true),
            CalorimeterChoice::File(f) => (Calorimeter::from_toml(&f)?, vec![f], false),
        };
        crate::shower::run::check_event_count(&cal, o.events, "events")?;
        let tables = TableOptions::default();
        check_alloc(
            "the calorimeter's material tables",
            cal.materials.len() as u64,
            table_bytes_per_material(&tables),
            "use fewer distinct materials",
        )?;
        Ok(Self {
            calorimeter: cal,
            testem3,
            cuts: RangeCuts::uniform(o.cut_mm / 10.0),
            tables,
            primary: Primary::testem3(o.primary, o.energy),
            opts: o.clone(),
            inputs,
            request,
        })
    }

    /// The files the run reads (outputs must not replace or contain them).
    pub fn inputs(&self) -> &[PathBuf] {
        &self.inputs
    }

    pub fn calorimeter(&self) -> &Calorimeter {
        &self.calorimeter
    }

    pub fn options(&self) -> &ShowerOptions {
        &self.opts
    }

    /// Build (or find in this process's cache) the tables, then run the events on the
    /// control's device — the CPU, or the CUDA twin (`ctl.precise`: every event bit-identical to
    /// the CPU's) — and threads. Returns [`Error::Cancelled`] when the token is raised (while the
    /// tables are built, within an event on the CPU, between batches on a GPU).
    pub fn run(&self, ctl: &Control) -> Result<ShowerResult> {
        let gpus = ctl.gpus()?;
        ctl.install(|| {
            let t0 = Instant::now();
            ctl.progress.begin("tables", self.calorimeter.materials.len() as u64, "materials");
            let (phys, tables_cached) = cache::physics(&self.calorimeter, self.cuts, self.tables, ctl)?;
            ctl.progress.add(self.calorimeter.materials.len() as u64);
            let tables_seconds = t0.elapsed().as_secs_f64();
            let o = &self.opts;
            let events = o.split.items(o.events);
            ctl.progress.begin("events", events.end - events.start, "events");
            let t1 = Instant::now();
            let (run, device) = match &gpus {
                None => (
                    crate::shower::run::run_range(&phys, &self.primary, events.start, events.end - events.start, o.seed, &ctl.progress),
                    cpu_device(),
                ),
                Some(d) => {
                    let g = GpuShowerOptions {
                        precise: ctl.precise,
                        ..GpuShowerOptions::default()
                    };
                    let (r, st) = crate::shower::gpu::run_devices_range(&phys, &self.primary, events, o.seed, d, &ctl.progress, &g)?;
                    let device = format!(
                        "{} ({} mode, {:?} schedule, registers {}/{}, {} batches, {} re-runs after full lists, {} generations)",
                        st.device,
                        if st.precise { "precise" } else { "fast" },
                        st.schedule,
                        st.registers.0,
                        st.registers.1,
                        st.batches,
                        st.reruns,
                        st.generations
                    );
                    (r, device)
                }
            };
            ctl.check()?;
            let job = if o.split.is_whole() {
                None
            } else {
                let arithmetic = match (&gpus, ctl.precise) {
                    (None, _) | (Some(_), true) => "precise",
                    (Some(_), false) => "gpu fast",
                };
                let fields = [
                    ("em.request".to_string(), self.request.clone()),
                    ("arithmetic".into(), arithmetic.into()),
                ];
                let run = jobs::fingerprint(&fields, &self.inputs)?;
                Some(JobStamp::new(SHOWER_JOB_KIND, run, o.split, o.events, &o.command))
            };
            Ok(ShowerResult {
                run,
                physics: phys,
                device,
                tables_seconds,
                tables_cached,
                transport_seconds: t1.elapsed().as_secs_f64(),
                opts: o.clone(),
                testem3: self.testem3,
                job,
                request: self.request.clone(),
            })
        })?
    }
}

/// The output directories of a split shower run's jobs (each once) as the unsplit run's result:
/// the request rebuilt from the jobs' `em.request`, its tables built (or found in this
/// process's cache), every event's tally in event order. Its data files equal the unsplit
/// run's byte for byte; `run.json` says `merge` and lists the jobs.
pub fn merge_showers(jobs: &[PathBuf], ctl: &Control) -> Result<ShowerResult> {
    ctl.check()?;
    let files: Vec<PathBuf> = jobs.iter().map(|d| d.join(TALLIES)).collect();
    let parts = jobs::read_jobs(&files, SHOWER_JOB_KIND)?;
    let (first_path, first) = &parts[0];
    let meta = first.metadata();
    let request = meta
        .iter()
        .find(|(k, _)| k == "em.request")
        .map(|(_, v)| v.clone())
        .ok_or_else(|| warpdrive_core::InputError::file(first_path, "no em.request in its metadata"))?;
    let (cal, opts) = request_from_json(first_path, &request)?;
    let req = Shower::new(cal, &opts)?;
    let (phys, tables_cached) = cache::physics(&req.calorimeter, req.cuts, req.tables, ctl)?;
    let (slabs, materials) = (phys.calorimeter.slabs(), phys.calorimeter.materials.len());
    let mut events = Vec::with_capacity(opts.events as usize);
    for (p, f) in &parts {
        ctl.check()?;
        let cols = f.columns(&(0..f.names().len()).collect::<Vec<_>>())?;
        let words: Vec<&[i64]> = cols
            .iter()
            .skip(1)
            .map(|c| match c {
                Column::I64(v) => Ok(v.as_slice()),
                _ => Err(warpdrive_core::InputError::file(p, "tally columns must be INT64")),
            })
            .collect::<std::result::Result<_, _>>()?;
        for row in 0..f.rows() as usize {
            let w: Vec<u64> = words.iter().map(|c| c[row] as u64).collect();
            let e = crate::shower::run::event_from_words(&w, slabs, materials, opts.energy)
                .ok_or_else(|| warpdrive_core::InputError::file(p, format!("{} tally words per event, not this calorimeter's", w.len())))?;
            events.push(e);
        }
    }
    if events.len() as u64 != opts.events {
        return Err(
            warpdrive_core::InputError::file(first_path, format!("the jobs hold {} events of {}", events.len(), opts.events)).into(),
        );
    }
    Ok(ShowerResult {
        run: ShowerRun {
            primary: req.primary,
            seed: opts.seed,
            first: 0,
            events,
        },
        physics: phys,
        device: "merge".into(),
        tables_seconds: 0.0,
        tables_cached,
        transport_seconds: 0.0,
        opts: req.opts.clone(),
        testem3: req.testem3,
        job: None,
        request: req.request.clone(),
    })
}

/// Geant4 10.3 TestEm3's numbers for one material: (mean, RMS) of its analogue run, then of its
/// secondary-biased run.
fn g4_material(name: &str) -> Option<[(f64, f64); 2]> {
    let find = |run: &Testem3Run| run.edep.iter().find(|(n, _, _)| *n == name).map(|(_, m, r)| (*m, *r));
    Some([find(&UNBIASED)?, find(&BIASED)?])
}

/// The events of a shower run, the physics they ran with and how they were computed.
#[derive(Clone, Debug)]
pub struct ShowerResult {
    pub run: ShowerRun,
    pub physics: Arc<ShowerPhysics>,
    /// Where it ran (`cpu (2 threads)`, `cuda:0 … (precise mode, …)`).
    pub device: String,
    /// Time to build the tables (or find them in the cache) [s].
    pub tables_seconds: f64,
    /// The tables were built before in this process (or were being built by another run).
    pub tables_cached: bool,
    /// Time of the events [s].
    pub transport_seconds: f64,
    pub opts: ShowerOptions,
    testem3: bool,
    /// The job's stamp, when this is one job of a split run.
    job: Option<JobStamp>,
    request: String,
}

impl ShowerResult {
    /// 1 GeV e⁻ in TestEm3 with 1 mm cuts: the set-up Geant4 10.3's numbers are for.
    #[must_use]
    pub fn is_testem3_reference(&self) -> bool {
        self.testem3 && self.opts.primary == Particle::Electron && self.opts.energy == 1000.0 && self.opts.cut_mm == 1.0
    }

    /// Geant4 10.3's (mean, RMS) per event of material `name` in its analogue and its biased
    /// run, for the reference set-up only.
    #[must_use]
    pub fn geant4(&self, name: &str) -> Option<[(f64, f64); 2]> {
        if self.is_testem3_reference() {
            g4_material(name)
        } else {
            None
        }
    }

    /// Per material of the calorimeter: energy per event.
    #[must_use]
    pub fn per_material(&self) -> Vec<MaterialSummary> {
        self.run.per_material(&self.physics)
    }

    #[must_use]
    pub fn events_per_second(&self) -> f64 {
        self.opts.events as f64 / self.transport_seconds
    }

    #[must_use]
    pub fn track_steps_per_second(&self) -> f64 {
        self.run.total_steps() as f64 / self.transport_seconds
    }

    /// `summary.json`: only what the request determines (equal for equal requests on one
    /// device, any thread count).
    #[must_use]
    pub fn summary(&self) -> serde_json::Value {
        let (r, cal, o) = (&self.run, &self.physics.calorimeter, &self.opts);
        let reference = self.is_testem3_reference();
        let mut materials = serde_json::Map::new();
        for m in self.per_material() {
            let resolution = 100.0 * m.edep_rms_mev / m.edep_mean_mev.max(1e-300) * (o.energy / 1000.0).sqrt();
            let mut v = json!({
                "edep_mean_mev": m.edep_mean_mev, "edep_mean_error_mev": m.edep_mean_error_mev,
                "edep_rms_mev": m.edep_rms_mev, "resolution_percent_sqrt_gev": resolution,
            });
            if let Some([(mean, rms), (b_mean, b_rms)]) = self.geant4(&m.name) {
                v["geant4_10_3"] = json!({"edep_mean_mev": mean, "edep_rms_mev": rms,
                    "mean_ratio": m.edep_mean_mev / mean, "rms_ratio": m.edep_rms_mev / rms,
                    "secondary_biased_run": {"edep_mean_mev": b_mean, "edep_rms_mev": b_rms}});
            }
            materials.insert(m.name.clone(), v);
        }
        let created = r.created();
        let (charged, neutral) = r.steps();
        let mut s = json!({
            "calorimeter": cal.name, "layers": cal.repeat, "slabs": cal.slabs(), "transverse_cm": cal.transverse,
            "primary": {"particle": o.primary.name(), "energy_mev": o.energy},
            "events": o.events, "seed": o.seed, "cut_mm": o.cut_mm,
            "materials": materials,
            "created_per_event": {"gamma": created[0], "e-": created[1], "e+": created[2]},
            "charged_track_length_cm_per_event": cal.materials.iter().zip(r.track_length())
                .map(|(m, v)| (m.name.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
            "created_per_event_by_process": CREATORS.iter().zip(r.created_by())
                .map(|(k, v)| ((*k).to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
            "steps_per_event": {"charged": charged, "neutral": neutral},
            "escaped_mev_per_event": r.escaped(),
            "worst_energy_balance_relative": r.worst_balance(),
            "killed_tracks": r.killed(),
            "result_checksum": format!("{:016x}", r.checksum()),
            "thresholds_kev": self.physics.materials.iter().map(|m| json!({"material": m.material.name,
                "gamma": m.cuts.gamma * 1e3, "e-": m.cuts.electron * 1e3, "e+": m.cuts.positron * 1e3})).collect::<Vec<_>>(),
        });
        if reference {
            let [g, e, p] = UNBIASED.created;
            let [bg, be, bp] = BIASED.created;
            s["created_per_event"]["geant4_10_3"] = json!({"gamma": g, "e-": e, "e+": p,
                "secondary_biased_run": {"gamma": bg, "e-": be, "e+": bp}});
            s["steps_per_event"]["geant4_10_3"] = json!({"charged": UNBIASED.steps[0], "neutral": UNBIASED.steps[1]});
        }
        if let Some(j) = &self.job {
            // One job's events only: every per-event number above is over these.
            s["job"] = json!({"index": j.index, "jobs": j.jobs, "events": [j.items.start, j.items.end]});
        }
        s
    }

    /// `run.json`: how this run was computed (device, threads, timings, whether the tables came
    /// from the cache, command, version).
    #[must_use]
    pub fn environment(&self, command: &str) -> serde_json::Value {
        json!({
            "device": self.device,
            "tables_seconds": self.tables_seconds,
            "tables_cached": self.tables_cached,
            "transport_seconds": self.transport_seconds,
            "events_per_second": self.events_per_second(),
            "track_steps_per_second": self.track_steps_per_second(),
            "command": command,
            "version": env!("CARGO_PKG_VERSION"),
        })
    }

    fn metadata(&self) -> Vec<(String, String)> {
        let o = &self.opts;
        metadata(&[
            ("warpdrive.seed", o.seed.to_string()),
            ("em.events", o.events.to_string()),
            ("em.primary", format!("{} {} MeV", o.primary.name(), o.energy)),
            ("em.calorimeter", self.physics.calorimeter.name.clone()),
        ])
    }

    /// [`Self::metadata`] with the job's stamp, if any.
    fn file_metadata(&self) -> Vec<(String, String)> {
        let mut m = self.metadata();
        if let Some(j) = &self.job {
            m.extend(j.metadata());
        }
        m
    }

    /// A job's `tallies.parquet`: every event's integer record (`event_words`) and the request.
    fn tallies_table(&self) -> Table {
        let mut t = Table::default();
        let first = self.run.first as i64;
        t.push("event", Column::I64((first..first + self.run.events.len() as i64).collect()));
        let words: Vec<Vec<u64>> = self.run.events.iter().map(crate::shower::run::event_words).collect();
        let n = words.first().map_or(0, Vec::len);
        for k in 0..n {
            t.push(&format!("w{k}"), Column::I64(words.iter().map(|w| w[k] as i64).collect()));
        }
        t.metadata = self.file_metadata();
        t.meta("em.request", self.request.clone());
        t
    }

    /// `profile.parquet`'s table (one row per slab).
    #[must_use]
    pub fn profile_table(&self) -> Table {
        crate::shower::output::profile_table(&self.run, &self.physics, &self.file_metadata())
    }

    /// `events.parquet`'s table (one row per event).
    #[must_use]
    pub fn events_table(&self) -> Table {
        crate::shower::output::events_table(&self.run, &self.physics, &self.file_metadata())
    }

    /// Write `profile.parquet`, `events.parquet`, `summary.json`, `run.json` and, if `plot`,
    /// `profile.png` into the prepared directory and commit it whole. Returns notes for the user
    /// (a plot skipped because its axes would not be finite).
    pub fn save(&self, out: Staged, plot: bool, command: &str) -> Result<Vec<String>> {
        let dir = out.path().to_path_buf();
        let shown = out.dest().to_path_buf();
        let mut notes = Vec::new();
        write_table(&dir, "profile.parquet", &self.profile_table(), &shown)?;
        write_table(&dir, "events.parquet", &self.events_table(), &shown)?;
        if self.job.is_some() {
            write_table(&dir, TALLIES, &self.tallies_table(), &shown)?;
        }
        if plot {
            let o = &self.opts;
            let title = format!(
                "{} MeV {} in {}: energy per layer ({} events)",
                o.energy,
                o.primary.name(),
                self.physics.calorimeter.name,
                o.events
            );
            let drawn = crate::shower::output::plot_profile(&dir.join("profile.png"), &self.run, &self.physics, &title);
            plot_or_note("profile.png", drawn, &mut notes)?;
        }
        write_json(&dir, "summary.json", &self.summary(), &shown)?;
        write_json(&dir, "run.json", &self.environment(command), &shown)?;
        out.commit()?;
        Ok(notes)
    }
}

// ---------------------------------------------------------------------------------------------
// EM showers in a GDML detector
// ---------------------------------------------------------------------------------------------

/// The options of a shower run in a GDML detector; `Default` is the command line's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct DetectorOptions {
    pub primary: Particle,
    /// Primary kinetic energy [MeV].
    pub energy: f64,
    /// Start point in the world's frame [mm] (GDML's unit); it must lie inside the world.
    pub position_mm: [f64; 3],
    /// Direction (normalised by the request; must not be zero).
    pub direction: [f64; 3],
    pub events: u64,
    pub seed: u64,
    /// One production cut for γ, e⁻ and e⁺, as a range [mm].
    pub cut_mm: f64,
    /// A uniform magnetic field (Bx, By, Bz) [T] in the world's frame; zero: none.
    pub field_t: [f64; 3],
    /// A field map on an (r, z) grid (CSV or Parquet: r_mm, z_mm, br_T, bz_T), instead of
    /// `field_t`; it must cover the world.
    pub field_map: Option<PathBuf>,
    /// Logical volume names whose deposits are recorded as hits (besides GDML `SensDet`).
    pub sensitive: Vec<String>,
    /// Accuracy of the curved path in a field (delta chord, delta intersection [mm], the
    /// Dormand–Prince error per unit length in maps); checked by [`FieldAccuracy::check`].
    pub accuracy: crate::field::propagate::FieldAccuracy,
}

/// The strongest uniform field accepted [T] (the strongest magnets are ~45 T; a stronger field
/// only makes the helices of low-energy e± shorter than the navigation tolerances).
pub const MAX_FIELD_T: f64 = 100.0;

impl Default for DetectorOptions {
    fn default() -> Self {
        Self {
            primary: Particle::Electron,
            energy: 1000.0,
            position_mm: [0.0; 3],
            direction: [0.0, 0.0, 1.0],
            events: 1000,
            seed: 12345,
            cut_mm: 1.0,
            field_t: [0.0; 3],
            field_map: None,
            sensitive: Vec::new(),
            accuracy: crate::field::propagate::FieldAccuracy::default(),
        }
    }
}

/// Three values of a vector option (`position`, `direction`, `field`) as given, e.g. split at
/// commas by a command line: exactly three, else an error naming the option.
pub fn three(param: &'static str, v: &[f64]) -> Result<[f64; 3]> {
    <[f64; 3]>::try_from(v).map_err(|_| {
        let given: Vec<String> = v.iter().map(|&x| num(x)).collect();
        ParamError::new(param, format!("{}: expected three numbers x,y,z", given.join(","))).into()
    })
}

fn triple(v: [f64; 3]) -> String {
    format!("{},{},{}", num(v[0]), num(v[1]), num(v[2]))
}

/// A validated shower run in a GDML detector (CPU only).
#[derive(Clone, Debug)]
pub struct DetectorShower {
    gdml: crate::gdml::Gdml,
    material_of: Vec<Option<usize>>,
    materials: Vec<crate::shower::material::ShowerMaterial>,
    volumes: usize,
    cuts: RangeCuts,
    tables: TableOptions,
    primary: Primary,
    opts: DetectorOptions,
    inputs: Vec<PathBuf>,
    field_map: Option<std::sync::Arc<crate::field::FieldMap>>,
}

impl DetectorShower {
    /// Check every option, read the GDML file (errors name its line), derive the shower
    /// materials, count and budget the volume tallies and tables, and check that the source lies
    /// inside the world; nothing runs yet.
    pub fn new(gdml: &Path, o: &DetectorOptions) -> Result<Self> {
        check_primary(o.energy, o.cut_mm, o.events)?;
        if !o.position_mm.iter().all(|x| x.is_finite()) {
            return Err(ParamError::new("position", format!("{} mm: must be finite", triple(o.position_mm))).into());
        }
        let d = o.direction;
        let norm = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        if !(norm.is_finite() && norm > 0.0) {
            return Err(ParamError::new("direction", format!("{}: must be a finite, non-zero vector", triple(d))).into());
        }
        let dir = [d[0] / norm, d[1] / norm, d[2] / norm];
        let b = o.field_t;
        let bmag = (b[0] * b[0] + b[1] * b[1] + b[2] * b[2]).sqrt();
        if !(bmag.is_finite() && bmag <= MAX_FIELD_T) {
            return Err(ParamError::new("field", format!("{} T: |B| must be at most {MAX_FIELD_T} T", triple(b))).into());
        }
        o.accuracy.check()?;
        if o.field_map.is_some() && bmag > 0.0 {
            return Err(ParamError::new("field", format!("{} T and a field map: give one of them", triple(b))).into());
        }
        let g = crate::gdml::read(gdml)?;
        let field_map = match &o.field_map {
            Some(f) => {
                let m = crate::field::FieldMap::read(f)?;
                let world = &g.tree.logical[g.tree.world as usize];
                m.check_covers(&g.tree.solids.bounding_box(world.solid), &world.name)?;
                Some(std::sync::Arc::new(m))
            }
            None => None,
        };
        for n in &o.sensitive {
            if !g.tree.logical.iter().any(|l| l.name == *n) {
                let known: Vec<&str> = g.tree.logical.iter().map(|l| l.name.as_str()).take(20).collect();
                return Err(ParamError::new(
                    "sensitive",
                    format!(
                        "'{n}' is not a logical volume of {} (its volumes: {}{})",
                        gdml.display(),
                        known.join(", "),
                        if g.tree.logical.len() > 20 { ", …" } else { "" }
                    ),
                )
                .into());
            }
        }
        let (_, volumes) = crate::shower::detector::slot_offsets(&g)?;
        let (material_of, materials) = crate::shower::detector::shower_materials(&g)?;
        let tables = TableOptions::default();
        check_alloc(
            "the detector's material tables",
            materials.len() as u64,
            table_bytes_per_material(&tables),
            "use fewer distinct materials",
        )?;
        check_alloc(
            "a batch of event tallies (one word per volume instance)",
            crate::shower::detector::BATCH,
            crate::shower::detector::event_tally_bytes(volumes as usize, materials.len()),
            "use a geometry with fewer volume instances",
        )?;
        let p = o.position_mm;
        if crate::geo::Navigator::new(&g.tree)
            .locate(crate::geo::Vec3::new(p[0], p[1], p[2]))
            .is_none()
        {
            let world = &g.tree.logical[g.tree.world as usize].name;
            return Err(ParamError::new(
                "position",
                format!("{} mm is outside the world volume '{world}' of {}", triple(p), gdml.display()),
            )
            .into());
        }
        Ok(Self {
            gdml: g,
            material_of,
            materials,
            volumes: volumes as usize,
            cuts: RangeCuts::uniform(o.cut_mm / 10.0),
            tables,
            primary: Primary {
                particle: o.primary,
                energy: o.energy,
                pos: [p[0] / 10.0, p[1] / 10.0, p[2] / 10.0],
                dir,
            },
            opts: o.clone(),
            inputs: std::iter::once(gdml.to_path_buf()).chain(o.field_map.clone()).collect(),
            field_map,
        })
    }

    /// The files the run reads (outputs must not replace or contain them).
    pub fn inputs(&self) -> &[PathBuf] {
        &self.inputs
    }

    pub fn gdml(&self) -> &crate::gdml::Gdml {
        &self.gdml
    }

    /// Number of volume instances scored.
    pub fn volumes(&self) -> usize {
        self.volumes
    }

    pub fn options(&self) -> &DetectorOptions {
        &self.opts
    }

    /// Why this run cannot go to a GPU (`None`: it can): a volume tree deeper than the device
    /// navigator's paths. A uniform field runs on the GPU along the helix, a field map along the
    /// Dormand–Prince path (`kernels/field/{map,rk,propagate}.cuh`); hits in sensitive volumes
    /// are recorded by the kernel too (the same hits as the CPU's in precise mode).
    #[must_use]
    pub fn cpu_only_reason(&self) -> Option<String> {
        crate::geo::device::DeviceGeometry::new(&self.gdml.tree)
            .err()
            .map(|e| e.to_string())
    }

    /// Refuse a CUDA device choice this run cannot use ([`Self::cpu_only_reason`]), naming the
    /// reason; `cpu` and `auto` are fine (`auto` runs such a run on the CPU with a note).
    /// [`Self::run`] checks it too; a front end may call it before it prepares the output.
    pub fn check_device(&self, ctl: &Control) -> Result<()> {
        match (&ctl.device, self.cpu_only_reason()) {
            (warpdrive_core::engine::Device::Cuda(_) | warpdrive_core::engine::Device::CudaAll, Some(why)) => Err(ParamError::new(
                "device",
                format!("{}: this detector run needs the CPU ({why}); use cpu or auto", ctl.device),
            )
            .into()),
            _ => Ok(()),
        }
    }

    /// The tables of the detector's materials, built on a thread of their own (a pool of the
    /// control's threads) while this one polls the cancellation token: a cancelled run returns
    /// at once (the build, which cannot stop half-way, finishes in the background and is dropped).
    fn build_physics(&self, ctl: &Control) -> Result<crate::shower::detector::DetectorPhysics> {
        let (tx, rx) = std::sync::mpsc::channel();
        let (gdml, of, list, cuts, tables) = (
            self.gdml.clone(),
            self.material_of.clone(),
            self.materials.clone(),
            self.cuts,
            self.tables,
        );
        let threads = ctl.threads;
        std::thread::Builder::new()
            .name("warpdrive-em-detector-tables".into())
            .spawn(move || {
                let build = move || crate::shower::detector::DetectorPhysics::build_from(gdml, of, &list, cuts, tables);
                let pool = threads.and_then(|n| rayon::ThreadPoolBuilder::new().num_threads(n).build().ok());
                let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match pool {
                    Some(p) => p.install(build),
                    None => build(),
                }));
                let _ = tx.send(built);
            })
            .map_err(|e| Error::Failed(format!("cannot start the table build: {e}")))?;
        loop {
            match rx.recv_timeout(std::time::Duration::from_millis(20)) {
                Ok(Ok(built)) => return Ok(built?),
                Ok(Err(_)) => return Err(Error::Failed("building the shower tables panicked".into())),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => ctl.check()?,
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(Error::Failed("the table build ended without a result".into()))
                }
            }
        }
    }

    /// Build the tables and run the events on the control's device: the CPU threads, or the
    /// GPUs (the GDML build of the shower kernel, `ctl.precise`: every event's deposits per
    /// volume bit-identical to the CPU's). A run the GPU cannot do yet
    /// ([`Self::cpu_only_reason`]) is refused on `cuda` and runs on the CPU with a note on
    /// `auto`. Returns [`Error::Cancelled`] when the token is raised (while the tables are
    /// built, within an event on the CPU, between batches on a GPU).
    pub fn run(&self, ctl: &Control) -> Result<DetectorResult> {
        self.check_device(ctl)?;
        let gpus = match (&ctl.device, self.cpu_only_reason()) {
            (warpdrive_core::engine::Device::Auto, Some(why)) => {
                ctl.note(&format!("device: cpu ({why})"));
                None
            }
            _ => ctl.gpus()?,
        };
        if gpus.is_some() {
            // The GPU path keeps every event's tally until the run ends (the CPU path sums them
            // batch by batch): its words as read back and the tally made from them.
            let stride = crate::shower::gpu::tally_stride(self.volumes, self.materials.len()) as u64;
            warpdrive_core::limits::check_alloc(
                "events",
                self.opts.events,
                2 * 8 * stride + 256,
                "on a GPU every event's tally is held until the run ends: run fewer events per run and split the rest into runs with different seeds",
            )?;
        }
        ctl.install(|| {
            let t0 = Instant::now();
            ctl.progress.begin("tables", self.materials.len() as u64, "materials");
            let mut phys = self.build_physics(ctl)?;
            phys.set_field(self.opts.field_t);
            phys.accuracy = self.opts.accuracy;
            if let Some(m) = &self.field_map {
                phys.set_field_map(m.clone())?;
            }
            phys.set_sensitive(&self.opts.sensitive)
                .map_err(|e| ParamError::new("sensitive", e))?;
            ctl.progress.add(self.materials.len() as u64);
            ctl.check()?;
            let tables_seconds = t0.elapsed().as_secs_f64();
            let o = &self.opts;
            ctl.progress.begin("events", o.events, "events");
            let t1 = Instant::now();
            let (run, device) = match &gpus {
                None => (
                    crate::shower::detector::run_range(&phys, &self.primary, 0, o.events, o.seed, &ctl.progress),
                    cpu_device(),
                ),
                Some(d) => {
                    let g = GpuShowerOptions {
                        precise: ctl.precise,
                        ..GpuShowerOptions::default()
                    };
                    let (events, hits, st) =
                        crate::shower::gpu::run_detector_range(&phys, &self.primary, 0..o.events, o.seed, d, &ctl.progress, &g)?;
                    ctl.check()?;
                    let run = crate::shower::detector::run_from_events(&phys, &self.primary, 0, o.seed, &events, &hits);
                    let device = format!(
                        "{} ({} mode, {:?} schedule, registers {}/{}, {} batches, {} re-runs after full lists)",
                        st.device,
                        if st.precise { "precise" } else { "fast" },
                        st.schedule,
                        st.registers.0,
                        st.registers.1,
                        st.batches,
                        st.reruns
                    );
                    (run, device)
                }
            };
            ctl.check()?;
            if run.too_many_hits {
                return Err(ParamError::new(
                    "sensitive",
                    format!(
                        "the run made more than {} hits after {} events: run fewer events or mark fewer volumes sensitive",
                        crate::shower::detector::MAX_HITS,
                        run.events
                    ),
                )
                .into());
            }
            let volumes = phys.volume_list();
            Ok(DetectorResult {
                run,
                volumes,
                device,
                tables_seconds,
                transport_seconds: t1.elapsed().as_secs_f64(),
                opts: o.clone(),
                physics: phys,
            })
        })?
    }
}

/// The result of a [`DetectorShower`] run: sums over the events per volume instance and material.
#[derive(Clone, Debug)]
pub struct DetectorResult {
    pub run: crate::shower::detector::DetectorRun,
    pub physics: crate::shower::detector::DetectorPhysics,
    pub volumes: Vec<crate::shower::detector::VolumeInfo>,
    pub device: String,
    pub tables_seconds: f64,
    pub transport_seconds: f64,
    pub opts: DetectorOptions,
}

impl DetectorResult {
    fn metadata(&self) -> Vec<(String, String)> {
        let o = &self.opts;
        let mut m = metadata(&[
            ("warpdrive.seed", o.seed.to_string()),
            ("em.events", o.events.to_string()),
            ("em.primary", format!("{} {} MeV", o.primary.name(), o.energy)),
            ("em.position_mm", triple(o.position_mm)),
            ("em.direction", triple(o.direction)),
            ("em.cut_mm", num(o.cut_mm)),
            ("em.gdml", self.physics.gdml.path.display().to_string()),
        ]);
        match (&self.physics.field, &o.field_map) {
            (Some(_), Some(f)) => m.push(("em.field_map".into(), f.display().to_string())),
            (Some(_), None) => m.push(("em.field_t".into(), triple(o.field_t))),
            _ => {}
        }
        if self.physics.field.is_some() {
            let a = &self.physics.accuracy;
            m.push((
                "em.field_accuracy".into(),
                format!(
                    "delta_chord {} mm, delta_intersection {} mm, epsilon {}",
                    num(a.delta_chord),
                    num(a.delta_intersection),
                    num(a.epsilon)
                ),
            ));
        }
        m
    }

    /// The logical volumes that record hits, by name.
    #[must_use]
    pub fn sensitive_volumes(&self) -> Vec<String> {
        let tree = &self.physics.gdml.tree;
        (0..tree.logical.len())
            .filter(|&i| self.physics.sensitive[i])
            .map(|i| tree.logical[i].name.clone())
            .collect()
    }

    /// `hits.parquet`: one row per deposit in a sensitive volume, in event order and within an
    /// event in the canonical order of `shower::transport::Hit` (by the id of the track that
    /// made it, then along the track), the same on the CPU and the GPU — `event`,
    /// `volume` (the slot of volumes.parquet; its path in the metadata `em.volume_paths`),
    /// `copy` (the copy number of its deepest placement), `edep_mev`, `time_ns` (since the
    /// primary started), `x_mm`, `y_mm`, `z_mm` (the step's pre-step point, or where the energy
    /// was deposited locally).
    #[must_use]
    pub fn hits_table(&self) -> Table {
        let h = &self.run.hits;
        let scale = crate::shower::transport::FIXED_SCALE;
        let mut t = Table::default();
        t.push("event", Column::I64(h.iter().map(|(e, _)| *e as i64).collect()));
        t.push("volume", Column::I32(h.iter().map(|(_, x)| x.slot as i32).collect()));
        t.push(
            "copy",
            Column::I32(h.iter().map(|(_, x)| self.volumes[x.slot as usize].copy).collect()),
        );
        t.push("edep_mev", Column::F64(h.iter().map(|(_, x)| x.edep as f64 / scale).collect()));
        t.push("time_ns", Column::F64(h.iter().map(|(_, x)| x.time_ns).collect()));
        for (k, name) in ["x_mm", "y_mm", "z_mm"].iter().enumerate() {
            t.push(name, Column::F64(h.iter().map(|(_, x)| x.pos[k] * 10.0).collect()));
        }
        t.metadata = self.metadata();
        let paths: Vec<&str> = self.volumes.iter().map(|x| x.path.as_str()).collect();
        t.meta("em.volume_paths", json!(paths).to_string());
        t
    }

    /// Per sensitive logical volume: its name, the number of hits and their Σ deposit [MeV]
    /// (exact fixed-point sums, equal to the volumes' deposits).
    #[must_use]
    pub fn hits_per_volume(&self) -> Vec<(String, u64, f64)> {
        let tree = &self.physics.gdml.tree;
        let mut n = vec![0u64; tree.logical.len()];
        let mut q = vec![0u128; tree.logical.len()];
        for (_, h) in &self.run.hits {
            let l = self.volumes[h.slot as usize].logical as usize;
            n[l] += 1;
            q[l] += u128::from(h.edep);
        }
        let scale = crate::shower::transport::FIXED_SCALE;
        (0..tree.logical.len())
            .filter(|&i| self.physics.sensitive[i])
            .map(|i| (tree.logical[i].name.clone(), n[i], q[i] as f64 / scale))
            .collect()
    }

    /// Per GDML material: name, whether it is vacuum, Σ deposit over the events [MeV], mean per
    /// event and its statistical error [MeV].
    #[must_use]
    pub fn per_material(&self) -> Vec<(String, bool, f64, f64, f64)> {
        let phys = &self.physics;
        (0..phys.gdml.materials.len())
            .map(|m| {
                let (mean, err) = self.run.material_mean(m);
                let sum = self.run.material_edep[m] as f64 / crate::shower::transport::FIXED_SCALE;
                (phys.gdml.materials[m].name.clone(), phys.material_of[m].is_none(), sum, mean, err)
            })
            .collect()
    }

    /// Mean track steps per second of the transport.
    #[must_use]
    pub fn track_steps_per_second(&self) -> f64 {
        (self.run.steps[0] + self.run.steps[1]) as f64 / self.transport_seconds.max(1e-9)
    }

    /// `volumes.parquet`: one row per volume instance (depth-first order from the world) —
    /// `volume` (the slot), `placement` (−1 for the world), `logical`, `copy`, `material`
    /// (indices; names in the metadata `em.volume_paths`, `em.logical_volumes`, `em.materials`,
    /// JSON arrays), `edep_mev` (Σ over the events), `edep2` (Σ of the per-event deposit squared
    /// [MeV²]) and `edep_error_mev` = √(edep2 − edep_mev²/N), the statistical error of the sum.
    #[must_use]
    pub fn volumes_table(&self) -> Table {
        let v = &self.volumes;
        let n = self.run.events.max(1) as f64;
        let sums: Vec<f64> = (0..v.len()).map(|s| self.run.edep_mev(s)).collect();
        let mut t = Table::default();
        t.push("volume", Column::I32((0..v.len() as i32).collect()));
        t.push(
            "placement",
            Column::I64(v.iter().map(|x| x.placement.map_or(-1, i64::from)).collect()),
        );
        t.push("logical", Column::I32(v.iter().map(|x| x.logical as i32).collect()));
        t.push("copy", Column::I32(v.iter().map(|x| x.copy).collect()));
        t.push("material", Column::I32(v.iter().map(|x| x.material as i32).collect()));
        t.push("edep_mev", Column::F64(sums.clone()));
        t.push("edep2", Column::F64(self.run.edep2.clone()));
        t.push(
            "edep_error_mev",
            Column::F64(
                sums.iter()
                    .zip(&self.run.edep2)
                    .map(|(s, s2)| (s2 - s * s / n).max(0.0).sqrt())
                    .collect(),
            ),
        );
        t.metadata = self.metadata();
        let paths: Vec<&str> = v.iter().map(|x| x.path.as_str()).collect();
        let logical: Vec<&str> = self.physics.gdml.tree.logical.iter().map(|l| l.name.as_str()).collect();
        let mats: Vec<&str> = self.physics.gdml.materials.iter().map(|m| m.name.as_str()).collect();
        t.meta("em.volume_paths", json!(paths).to_string());
        t.meta("em.logical_volumes", json!(logical).to_string());
        t.meta("em.materials", json!(mats).to_string());
        t
    }

    /// `summary.json`: the request; `materials.{NAME}` (per GDML material: `vacuum`, Σ deposit
    /// `edep_mev`, per event `edep_mean_mev`, `edep_mean_error_mev`, `edep_rms_mev`, as `em
    /// testem3`) and `volumes.{KEY}` (per volume instance, keyed as
    /// [`crate::shower::detector::DetectorPhysics::volume_keys`]: the same numbers with its `path`,
    /// `copy`, `logical` and `material`); `volume_count`; the energy balance.
    #[must_use]
    pub fn summary(&self) -> serde_json::Value {
        let o = &self.opts;
        let r = &self.run;
        let n = r.events.max(1) as f64;
        let scale = crate::shower::transport::FIXED_SCALE;
        let total_edep: f64 = r.edep.iter().sum::<u128>() as f64 / scale;
        let n_events = n;
        let gdml = &self.physics.gdml;
        let materials: serde_json::Map<String, serde_json::Value> = self
            .per_material()
            .into_iter()
            .enumerate()
            .map(|(m, (name, vacuum, sum, mean, err))| {
                let rms = r.material_stats(m).2;
                (
                    name,
                    json!({"vacuum": vacuum, "edep_mev": sum, "edep_mean_mev": mean,
                    "edep_mean_error_mev": err, "edep_rms_mev": rms}),
                )
            })
            .collect();
        let volumes: serde_json::Map<String, serde_json::Value> = self
            .physics
            .volume_keys()
            .into_iter()
            .zip(&self.volumes)
            .enumerate()
            .map(|(slot, (key, v))| {
                let (mean, err, rms) = r.volume_stats(slot);
                (
                    key,
                    json!({"path": v.path, "copy": v.copy, "logical": gdml.tree.logical[v.logical as usize].name,
                    "material": gdml.materials[v.material].name, "edep_mev": r.edep_mev(slot),
                    "edep_mean_mev": mean, "edep_mean_error_mev": err, "edep_rms_mev": rms}),
                )
            })
            .collect();
        let mut s = json!({
            "gdml": self.physics.gdml.path.display().to_string(),
            "primary": o.primary.name(),
            "energy_mev": o.energy,
            "position_mm": o.position_mm,
            "direction": o.direction,
            "events": r.events,
            "seed": o.seed,
            "cut_mm": o.cut_mm,
            "volume_count": self.volumes.len(),
            "volumes": volumes,
            "materials": materials,
            "edep_sum_mev": total_edep,
            "escaped_sum_mev": r.escaped as f64 / scale,
            "escaped_mean_mev": r.escaped_mean(),
            "rest_mass_sum_mev": r.rest_mass as f64 / scale,
            "primary_energy_sum_mev": n * o.energy,
            "energy_balance_worst": r.worst_balance,
            "created_per_event": {"gamma": r.created[0] as f64 / n, "e-": r.created[1] as f64 / n, "e+": r.created[2] as f64 / n},
            "steps_per_event": {"charged": r.steps[0] as f64 / n, "neutral": r.steps[1] as f64 / n},
            "killed_tracks": r.killed,
        });
        if let Some(f) = &self.physics.field {
            let a = &self.physics.accuracy;
            s["field"] = match f {
                crate::field::Field::Uniform(u) => json!({"kind": "uniform", "b_t": [u.b.x, u.b.y, u.b.z],
                    "delta_chord_mm": a.delta_chord, "delta_intersection_mm": a.delta_intersection}),
                crate::field::Field::Map(m) => json!({"kind": "map", "file": m.path.display().to_string(),
                    "nodes": [m.r.len(), m.z.len()], "b_max_t": m.b_max,
                    "delta_chord_mm": a.delta_chord, "delta_intersection_mm": a.delta_intersection, "epsilon": a.epsilon}),
            };
        }
        if self.physics.any_sensitive() {
            let per: serde_json::Map<String, serde_json::Value> = self
                .hits_per_volume()
                .into_iter()
                .map(|(name, n, e)| (name, json!({"hits": n, "edep_sum_mev": e, "hits_per_event": n as f64 / n_events})))
                .collect();
            s["hits"] = json!({"count": r.hits.len(), "sensitive": self.sensitive_volumes(), "volumes": per});
        }
        s
    }

    /// `run.json`: how this run was computed.
    #[must_use]
    pub fn environment(&self, command: &str) -> serde_json::Value {
        json!({
            "device": self.device,
            "tables_seconds": self.tables_seconds,
            "transport_seconds": self.transport_seconds,
            "track_steps_per_second": self.track_steps_per_second(),
            "command": command,
            "version": env!("CARGO_PKG_VERSION"),
        })
    }

    /// The bars of `volumes.png`: per volume instance its summary key, material and mean
    /// deposit per event.
    #[must_use]
    pub fn volume_bars(&self) -> Vec<crate::shower::volume_plot::Bar> {
        let mats = &self.physics.gdml.materials;
        self.physics
            .volume_keys()
            .into_iter()
            .zip(&self.volumes)
            .enumerate()
            .map(|(slot, (key, v))| crate::shower::volume_plot::Bar {
                key,
                material: mats[v.material].name.clone(),
                mean_mev: self.run.volume_mean(slot).0,
            })
            .collect()
    }

    /// Write `volumes.parquet`, `summary.json`, `run.json` and, if `plot`, `volumes.png` (the
    /// mean deposit per event per volume, [`crate::shower::volume_plot`]) into the prepared
    /// directory and commit it whole. Returns notes (a plot that could not be drawn).
    pub fn save(&self, out: Staged, plot: bool, command: &str) -> Result<Vec<String>> {
        let dir = out.path().to_path_buf();
        let shown = out.dest().to_path_buf();
        let mut notes = Vec::new();
        write_table(&dir, "volumes.parquet", &self.volumes_table(), &shown)?;
        if self.physics.any_sensitive() {
            write_table(&dir, "hits.parquet", &self.hits_table(), &shown)?;
        }
        write_json(&dir, "summary.json", &self.summary(), &shown)?;
        write_json(&dir, "run.json", &self.environment(command), &shown)?;
        if plot {
            let o = &self.opts;
            let file = self
                .physics
                .gdml
                .path
                .file_name()
                .map_or_else(String::new, |f| f.to_string_lossy().into_owned());
            let field = match (&self.physics.field, &o.field_map) {
                (None, _) => String::new(),
                (Some(_), Some(_)) => ", field map".to_string(),
                (Some(_), None) => format!(", B = ({}) T", triple(o.field_t)),
            };
            let title = format!(
                "{file}: {} {} MeV{field}, {} events: mean deposit per event",
                o.primary.name(),
                num(o.energy),
                self.run.events
            );
            let drawn = crate::shower::volume_plot::plot_volumes(&dir.join("volumes.png"), &title, &self.volume_bars());
            plot_or_note("volumes.png", drawn, &mut notes)?;
        }
        out.commit()?;
        Ok(notes)
    }
}

/// The shower tables of this process, kept for the next run with the same set-up.
mod cache {
    use super::{Calorimeter, Control, Error, RangeCuts, Result, ShowerPhysics, TableOptions};
    use std::sync::{Arc, Condvar, Mutex, MutexGuard};
    use std::time::Duration;

    /// Set-ups kept (the least recently used is dropped): TestEm3's tables take ~0.3 MB.
    pub const CAPACITY: usize = 4;

    /// What determines the tables.
    type Key = (Calorimeter, RangeCuts, TableOptions);

    enum Slot {
        Building,
        Ready(Arc<ShowerPhysics>),
        Failed(String),
    }

    type Shared = Arc<(Mutex<Slot>, Condvar)>;

    struct Entry {
        key: Key,
        slot: Shared,
    }

    static CACHE: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

    fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
        m.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The entry for `key` (moved to the most recent place) and whether it is new.
    fn entry(key: &Key) -> (Shared, bool) {
        let mut c = lock(&CACHE);
        if let Some(i) = c.iter().position(|e| e.key == *key) {
            let e = c.remove(i);
            let slot = Arc::clone(&e.slot);
            c.push(e);
            return (slot, false);
        }
        let slot: Shared = Arc::new((Mutex::new(Slot::Building), Condvar::new()));
        c.push(Entry {
            key: key.clone(),
            slot: Arc::clone(&slot),
        });
        if c.len() > CAPACITY {
            c.remove(0);
        }
        (slot, true)
    }

    fn forget(slot: &Shared) {
        lock(&CACHE).retain(|e| !Arc::ptr_eq(&e.slot, slot));
    }

    fn finish(slot: &Shared, state: Slot) {
        *lock(&slot.0) = state;
        slot.1.notify_all();
    }

    /// Build the tables on a thread of their own, on a pool of `threads` workers. A run that is
    /// cancelled meanwhile returns at once; the build goes on and fills the cache for the next
    /// run (it cannot be stopped half-way, and its result is valid).
    fn spawn_build(key: Key, slot: Shared, threads: Option<usize>) -> Result<()> {
        let s = Arc::clone(&slot);
        let spawned = std::thread::Builder::new().name("warpdrive-em-tables".into()).spawn(move || {
            let (cal, cuts, tables) = key;
            let build = move || ShowerPhysics::build(cal, cuts, tables);
            let pool = threads.and_then(|n| rayon::ThreadPoolBuilder::new().num_threads(n).build().ok());
            let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match pool {
                Some(p) => p.install(build),
                None => build(),
            }));
            match built {
                Ok(p) => finish(&s, Slot::Ready(Arc::new(p))),
                Err(_) => {
                    forget(&s);
                    finish(&s, Slot::Failed("building the shower tables panicked".into()));
                }
            }
        });
        spawned.map(|_| ()).map_err(|e| {
            forget(&slot);
            finish(&slot, Slot::Failed(format!("cannot start the table build: {e}")));
            Error::Failed(format!("cannot start the table build: {e}"))
        })
    }

    /// The tables of this set-up, and whether they were built (or being built) before this call.
    /// Waits for a build in progress, polling the cancellation token.
    pub fn physics(cal: &Calorimeter, cuts: RangeCuts, tables: TableOptions, ctl: &Control) -> Result<(Arc<ShowerPhysics>, bool)> {
        let key: Key = (cal.clone(), cuts, tables);
        let (slot, fresh) = entry(&key);
        if fresh {
            spawn_build(key, Arc::clone(&slot), ctl.threads)?;
        }
        let mut state = lock(&slot.0);
        loop {
            match &*state {
                Slot::Ready(p) => return Ok((Arc::clone(p), !fresh)),
                Slot::Failed(m) => return Err(Error::Failed(m.clone())),
                Slot::Building => {}
            }
            ctl.check()?;
            state = slot
                .1
                .wait_timeout(state, Duration::from_millis(20))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpdrive_core::engine::{Device, Style};

    fn cpu() -> Control {
        Control::new().device(Device::Cpu)
    }

    fn kn(f: impl FnOnce(&mut KleinNishinaOptions)) -> Result<KleinNishina> {
        let mut o = KleinNishinaOptions {
            tracks: 2000,
            ..Default::default()
        };
        f(&mut o);
        KleinNishina::new(&o)
    }

    fn cli(e: Error) -> String {
        e.render(Style::Cli)
    }

    #[test]
    fn mini_app_options_are_checked_with_their_names() {
        assert_eq!(cli(kn(|o| o.energy = -1.0).unwrap_err()), "--energy -1 MeV: must be positive");
        assert_eq!(cli(kn(|o| o.energy = f64::NAN).unwrap_err()), "--energy NaN MeV: must be positive");
        assert_eq!(
            cli(kn(|o| o.energy = 1e20).unwrap_err()),
            "--energy 1e20 MeV: above the cross-section table (at most 1e8 MeV = 100 TeV)"
        );
        assert_eq!(cli(kn(|o| o.tracks = 0).unwrap_err()), "--tracks must be at least 1");
        // 2⁶⁴·2⁻³⁰ MeV = 1.718e10 MeV fit the tallies: 171 photons of 100 TeV do, 172 do not.
        assert!(kn(|o| {
            o.energy = 1e8;
            o.tracks = 171
        })
        .is_ok());
        let e = cli(kn(|o| {
            o.energy = 1e8;
            o.tracks = 172
        })
        .unwrap_err());
        assert!(
            e.starts_with("--tracks 172 × 100000000 MeV = 1.720e10 MeV: the fixed-point tallies hold at most 1.718e10 MeV"),
            "{e}"
        );
        assert_eq!(cli(kn(|o| o.tally_bins = 0).unwrap_err()), "--tally-bins must be at least 1");
        assert_eq!(
            cli(kn(|o| o.tally_width = 0.0).unwrap_err()),
            "--tally-width 0 cm: must be at least 1e-6 cm"
        );
        assert_eq!(
            cli(kn(|o| o.tally_width = 5e-324).unwrap_err()),
            "--tally-width 5e-324 cm: must be at least 1e-6 cm"
        );
        assert_eq!(
            cli(kn(|o| o.tally_front = f64::NAN).unwrap_err()),
            "--tally-front NaN cm: must be finite"
        );
        assert_eq!(cli(kn(|o| o.slots = Some(0)).unwrap_err()), "--slots must be at least 1");
        assert_eq!(
            cli(kn(|o| o.stack_capacity = Some(1 << 33)).unwrap_err()),
            "--stack-capacity 8589934592: at most 4294967295"
        );
        assert_eq!(
            cli(kn(|o| o.tally_bins = 1 << 40).unwrap_err()),
            "--tally-bins 1099511627776: at most 4294967295"
        );
        let e = kn(|o| o.tally_bins = 4_000_000_000).unwrap_err();
        assert!(matches!(e, Error::Limit(_)), "{e}");
        assert!(cli(e).starts_with("--tally-bins: 4000000000 × "));
        let e = kn(|o| o.material = MaterialChoice::parse("unobtainium")).unwrap_err();
        assert!(cli(e).starts_with("--material 'unobtainium': neither a built-in material (G4_Be, G4_C, G4_Al"));
        let e = kn(|o| o.material = MaterialChoice::parse("missing.toml")).unwrap_err();
        assert!(matches!(e, Error::Input(_)), "{e}");
    }

    #[test]
    fn nist_materials_reach_the_mini_app() {
        for (name, density) in [("G4_Pb", 11.35), ("G4_WATER", 1.0), ("G4_lAr", 1.396), ("aluminium", 2.699)] {
            let r = kn(|o| o.material = MaterialChoice::parse(name)).unwrap();
            assert_eq!(r.material().density, density, "{name}");
        }
        // G4_Al by name is the material the mini-app always had.
        let a = kn(|o| o.tracks = 300).unwrap().run(&cpu()).unwrap();
        let b = kn(|o| {
            o.tracks = 300;
            o.material = MaterialChoice::parse("aluminium")
        })
        .unwrap()
        .run(&cpu())
        .unwrap();
        assert_eq!(a.result.checksum(), b.result.checksum());
        // Lead stops photons sooner than aluminium.
        let pb = kn(|o| {
            o.tracks = 300;
            o.material = MaterialChoice::parse("G4_Pb")
        })
        .unwrap()
        .run(&cpu())
        .unwrap();
        assert!(
            pb.result.mean_depth() < 0.5 * a.result.mean_depth(),
            "{} {}",
            pb.result.mean_depth(),
            a.result.mean_depth()
        );
    }

    #[test]
    fn a_raised_token_cancels_the_mini_app() {
        let req = kn(|o| o.tracks = 1 << 26).unwrap();
        let ctl = cpu().threads(Some(1));
        let t = ctl.cancel.after(std::time::Duration::from_millis(200));
        let t0 = Instant::now();
        let r = req.run(&ctl);
        t.join().unwrap();
        assert!(matches!(r, Err(Error::Cancelled(_))), "{r:?}");
        assert!(t0.elapsed().as_secs_f64() < 1.5, "took {:?}", t0.elapsed());
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("wd-em-engine-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Issue #36 item 8: a 1e308 cm bin makes the z axis infinite; plotters then spun forever.
    /// The run completes, the plot is skipped with a note, the data files are written.
    #[test]
    fn an_infinite_plot_axis_skips_the_plot_with_a_note() {
        let d = scratch("inf-axis");
        let req = kn(|o| {
            o.tracks = 200;
            o.tally_width = 1e308
        })
        .unwrap();
        let r = req.run(&cpu()).unwrap();
        let out = d.join("out");
        let notes = r.save(prepare_output(&out, false, req.inputs()).unwrap(), true, "test").unwrap();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].starts_with("edep.png not drawn: the z axis would run from 0 to inf"),
            "{notes:?}"
        );
        assert!(out.join("edep.parquet").is_file() && out.join("summary.json").is_file());
        assert!(!out.join("edep.png").exists());
        let left: Vec<_> = std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, vec![std::ffi::OsString::from("out")]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A shower run split into jobs merges into the unsplit run's data files byte for byte
    /// (the events' integer tallies travel in tallies.parquet); a missing job is named.
    #[test]
    fn split_showers_merge_into_the_whole_run() {
        let dir = std::env::temp_dir().join(format!("wd-em-split-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let save = |split: Share, name: &str| {
            let req = shower(|o| {
                o.events = 7;
                o.split = split;
            })
            .unwrap();
            let out = prepare_output(&dir.join(name), false, &[]).unwrap();
            req.run(&cpu()).unwrap().save(out, false, "test").unwrap();
            dir.join(name)
        };
        let whole = save(Share::WHOLE, "whole");
        assert!(!whole.join(TALLIES).exists(), "only jobs write tallies.parquet");
        let jobs: Vec<PathBuf> = (0..3).map(|i| save(Share::new(3, i).unwrap(), &format!("job{i}"))).collect();
        let merged = merge_showers(&[jobs[2].clone(), jobs[0].clone(), jobs[1].clone()], &cpu()).unwrap();
        assert_eq!(merged.run.events.len(), 7);
        let out = prepare_output(&dir.join("merged"), false, &[]).unwrap();
        merged.save(out, false, "merge").unwrap();
        for f in ["profile.parquet", "events.parquet", "summary.json"] {
            assert_eq!(
                std::fs::read(dir.join("merged").join(f)).unwrap(),
                std::fs::read(whole.join(f)).unwrap(),
                "{f}"
            );
        }
        let e = merge_showers(&jobs[..2], &cpu()).unwrap_err().to_string();
        assert!(e.contains("lack job 2 of 3"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn shower(f: impl FnOnce(&mut ShowerOptions)) -> Result<Shower> {
        let mut o = ShowerOptions {
            events: 2,
            energy: 50.0,
            ..Default::default()
        };
        f(&mut o);
        Shower::new(CalorimeterChoice::Testem3, &o)
    }

    #[test]
    fn shower_options_are_checked_with_their_names() {
        assert_eq!(
            cli(shower(|o| o.energy = 0.0).unwrap_err()),
            "--energy 0 MeV: must be in (0, 1e7] MeV"
        );
        assert_eq!(
            cli(shower(|o| o.cut_mm = f64::INFINITY).unwrap_err()),
            "--cut-mm inf mm: must be in (0, 1e4] mm"
        );
        assert_eq!(
            shower(|o| o.events = 0).unwrap_err().render(Style::Python),
            "events must be at least 1"
        );
        let e = shower(|o| o.events = 1 << 50).unwrap_err();
        assert!(cli(e).starts_with("--events: 1125899906842624 × 992 bytes"));
        assert_eq!(
            "muon".parse::<Particle>().unwrap_err().render(Style::Python),
            "primary 'muon': expected e-, e+ or gamma"
        );
        assert_eq!("gamma".parse::<Particle>().unwrap(), Particle::Gamma);
        let e = Shower::new(CalorimeterChoice::File("missing.toml".into()), &ShowerOptions::default()).unwrap_err();
        assert!(matches!(e, Error::Input(_)), "{e}");
    }

    /// The tables are built once per set-up and process: the second run finds them; another cut
    /// is another set-up.
    #[test]
    fn shower_tables_are_cached_per_set_up() {
        let thin = |cut_mm: f64| {
            let cal = Calorimeter::new("thin", vec![(crate::shower::material::ShowerMaterial::lead(), 0.5)], 2, 10.0).unwrap();
            let o = ShowerOptions {
                events: 2,
                energy: 20.0,
                cut_mm,
                ..Default::default()
            };
            let mut s = shower(|_| {}).unwrap();
            s.calorimeter = cal;
            s.testem3 = false;
            s.cuts = RangeCuts::uniform(o.cut_mm / 10.0);
            s.primary = Primary::testem3(o.primary, o.energy);
            s.opts = o;
            s
        };
        let a = thin(0.9).run(&cpu()).unwrap();
        let b = thin(0.9).run(&cpu()).unwrap();
        let c = thin(0.8).run(&cpu()).unwrap();
        assert!(!a.tables_cached && b.tables_cached && !c.tables_cached);
        assert!(Arc::ptr_eq(&a.physics, &b.physics));
        assert_eq!(a.run.checksum(), b.run.checksum());
        assert!(b.tables_seconds < 0.05, "{}", b.tables_seconds);
    }

    #[test]
    fn a_raised_token_cancels_a_shower_run_in_its_table_build_and_its_events() {
        // A cut no other test uses: the first run finds no tables and is cancelled while they
        // are built; the second finds them and is cancelled in its events.
        for warm in [false, true] {
            let req = shower(|o| {
                o.events = 100_000;
                o.energy = 1000.0;
                o.cut_mm = 0.77
            })
            .unwrap();
            if warm {
                shower(|o| {
                    o.events = 1;
                    o.cut_mm = 0.77
                })
                .unwrap()
                .run(&cpu())
                .unwrap();
            }
            let ctl = cpu().threads(Some(1));
            let t = ctl.cancel.after(std::time::Duration::from_millis(300));
            let t0 = Instant::now();
            let r = req.run(&ctl);
            t.join().unwrap();
            assert!(matches!(r, Err(Error::Cancelled(_))), "warm {warm}: {r:?}");
            assert!(t0.elapsed().as_secs_f64() < 1.3, "warm {warm}: took {:?}", t0.elapsed());
        }
    }

    /// Issue #36 item 12: summary.json and the Parquet files hold only what the request
    /// determines; two thread counts give the same bytes, and the timings are in run.json.
    #[test]
    fn shower_data_files_do_not_depend_on_threads() {
        let d = scratch("threads");
        let req = shower(|o| o.events = 3).unwrap();
        let mut files = Vec::new();
        for threads in [1, 2] {
            let r = req.run(&cpu().threads(Some(threads))).unwrap();
            let out = d.join(format!("t{threads}"));
            r.save(prepare_output(&out, false, req.inputs()).unwrap(), false, "same command")
                .unwrap();
            let read = |n: &str| std::fs::read(out.join(n)).unwrap();
            files.push([read("summary.json"), read("profile.parquet"), read("events.parquet")]);
            let env: serde_json::Value = serde_json::from_slice(&read("run.json")).unwrap();
            assert!(env["device"].as_str().unwrap().contains(&format!("{threads} threads")));
            assert!(env["transport_seconds"].as_f64().is_some());
        }
        assert!(files[0] == files[1], "data files differ between 1 and 2 threads");
        let s: serde_json::Value = serde_json::from_slice(&files[0][0]).unwrap();
        assert!(s.get("timings").is_none() && s.get("command").is_none());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn nist_materials_build_shower_tables() {
        let lead = crate::nist::find("G4_Pb").unwrap().shower_material();
        assert_eq!(crate::shower::material::ShowerMaterial::from_name_or_file("G4_Pb").unwrap(), lead);
        // Same element, density and I as TestEm3's Lead up to the molar mass (207.2 vs 207.19).
        let t3 = crate::shower::material::ShowerMaterial::lead();
        assert!((lead.radiation_length / t3.radiation_length - 1.0).abs() < 1e-4);
    }
}
