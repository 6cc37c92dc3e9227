//! Beam tracking as library calls (DESIGN.md §2, `warpdrive_core::engine`): a [`Line`] is a
//! lattice read and compiled once; a [`Bunch`] is a checked set of particles with its species
//! and reference momentum; [`Track`] is a validated, budgeted tracking run of a bunch through a
//! line, and [`Track::run`] computes it under a [`Control`] (device, threads, progress in passes,
//! cancellation) and writes its output directory with the output discipline.
//! `warpdrive beam track`, `warpdrive.beam.Lattice`, `Lattice.track` and `Particles` are thin
//! translations of their arguments into these calls.

use crate::beam::{gaussian, BeamSpec, Moments, Particles, Plane, Reference};
use crate::beam_file::{self, Coordinates};
use crate::lattice::{Lattice, LatticeError};
use crate::lsc::{Histogram, LscStats};
use crate::program::{Program, Step};
use crate::species::Species;
use crate::track::{track_controlled, Backend, CpuBackend, TrackError};
use crate::watch::{self, MomentsRow, PassSelection, Recorder, WatchMode, WatchOptions, WatchRecord};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use warpdrive_core::engine::{Cancelled, Control, Device, Error, ParamError, Result};
use warpdrive_core::error::InputError;
use warpdrive_core::jobs::{self, JobStamp, Share};
use warpdrive_core::limits::{self, LimitError};
use warpdrive_core::output::Staged;
use warpdrive_core::table::Table;

// ---------------------------------------------------------------------------------------------
// The lattice

/// A lattice read, expanded (within the memory budget) and compiled once; tracked any number
/// of times.
#[derive(Debug)]
pub struct Line {
    lattice: Lattice,
    program: Program,
    /// The file it was read from (an input the outputs must not replace).
    path: Option<PathBuf>,
    /// Its name for `%s` in WATCH file names and the data's metadata (file stem or given).
    name: String,
}

fn lattice_error(e: LatticeError) -> Error {
    match e.limit {
        Some(l) => Error::Limit(*l),
        None => Error::Input(InputError::new(&*e.origin.file, e.origin.line, e.message)),
    }
}

impl Line {
    /// Read a `.lte` file (through the bounded reader) and use `line` (default: its USE, else
    /// its last line).
    pub fn read(path: &Path, line: Option<&str>) -> Result<Self> {
        let lattice = Lattice::read(path, line).map_err(lattice_error)?;
        let name = path.file_stem().map_or("beam".into(), |s| s.to_string_lossy().into_owned());
        Ok(Self::compile(lattice, Some(path.to_path_buf()), name))
    }

    /// Parse lattice text; `name` stands for the file in messages and for `%s`.
    pub fn parse(text: &str, name: &str, line: Option<&str>) -> Result<Self> {
        let lattice = crate::lattice::parse(text, name, line).map_err(lattice_error)?;
        Ok(Self::compile(lattice, None, name.to_string()))
    }

    fn compile(lattice: Lattice, path: Option<PathBuf>, name: String) -> Self {
        let program = Program::compile(&lattice);
        Self {
            lattice,
            program,
            path,
            name,
        }
    }

    pub fn lattice(&self) -> &Lattice {
        &self.lattice
    }

    pub fn program(&self) -> &Program {
        &self.program
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The name of the line used.
    pub fn line_name(&self) -> &str {
        &self.lattice.line
    }

    /// The lattice's name (file stem, or the name given with the text).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Length of the line [m].
    pub fn length(&self) -> f64 {
        self.program.length
    }

    /// Elements of the expanded line.
    pub fn elements(&self) -> usize {
        self.lattice.elements.len()
    }
}

// ---------------------------------------------------------------------------------------------
// Species and reference momentum

/// β0γ0 when neither `p_central` nor `momentum` is given: a 1 GeV/c electron (ELEGANT's
/// examples).
pub const DEFAULT_P_CENTRAL: f64 = 1956.951;

/// The β0γ0 accepted: from a slow ion (β = 1e-6) to a 5·10¹⁷ eV electron. Beyond 1e12, γ² and
/// the space-charge impedance (∝ 1/γ²) leave double precision's useful range (at 1e200 γ²
/// overflows and the LSC current printed as 0).
pub const P_CENTRAL_RANGE: (f64, f64) = (1e-6, 1e12);

/// A number as the user would write it: `1e200`, not two hundred digits.
fn show(v: f64) -> String {
    let plain = v.to_string();
    if plain.len() > 12 {
        format!("{v:e}")
    } else {
        plain
    }
}

/// A species by name, for front ends (`--particle` / `particle=`).
pub fn species(name: &str) -> Result<Species, ParamError> {
    name.parse().map_err(|m| ParamError::new("particle", m))
}

/// The species and reference momentum of a run, as the user gives them: a named species or a
/// custom one (mass and charge), and β0γ0 or a momentum in MeV/c. `None` fields take the
/// defaults: an electron at β0γ0 = [`DEFAULT_P_CENTRAL`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReferenceOptions {
    pub particle: Option<Species>,
    /// Rest mass of a custom species [MeV/c²].
    pub mass: Option<f64>,
    /// Charge number of a custom species [e] (default 1).
    pub particle_charge: Option<f64>,
    /// β0γ0 (ELEGANT's p_central).
    pub p_central: Option<f64>,
    /// Reference momentum [MeV/c].
    pub momentum: Option<f64>,
}

impl ReferenceOptions {
    /// Nothing was given (the defaults apply, or a [`Bunch`]'s own reference).
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// The species and the reference particle, every value range-checked.
    pub fn resolve(&self) -> Result<(Species, Reference), ParamError> {
        let species = match (&self.particle, self.mass, self.particle_charge) {
            (Some(_), Some(_), _) => return Err(ParamError::new("mass", "cannot be given together with {particle}")),
            (Some(_), None, Some(_)) => {
                return Err(ParamError::new(
                    "particle_charge",
                    "cannot be given together with {particle} (it belongs to a custom species given by {mass})",
                ))
            }
            (Some(s), None, None) => s.clone(),
            (None, Some(m), q) => Species::custom(m * 1e6, q.unwrap_or(1.0)).map_err(|(p, t)| ParamError::new(p, t))?,
            (None, None, Some(_)) => return Err(ParamError::new("particle_charge", "needs {mass} (a custom species)")),
            (None, None, None) => Species::electron(),
        };
        let (lo, hi) = P_CENTRAL_RANGE;
        let p = match (self.p_central, self.momentum) {
            (Some(_), Some(_)) => return Err(ParamError::new("p_central", "cannot be given together with {momentum}")),
            (None, Some(mev)) => {
                let m = species.mass_ev / 1e6;
                let p = mev / m;
                if !(p.is_finite() && (lo..=hi).contains(&p)) {
                    return Err(ParamError::new(
                        "momentum",
                        format!(
                            "{} MeV/c: must be between {:e} and {:e} MeV/c for a {} (β0γ0 from {lo:e} to {hi:e})",
                            show(mev),
                            lo * m,
                            hi * m,
                            species.name
                        ),
                    ));
                }
                p
            }
            (p, None) => {
                let p = p.unwrap_or(DEFAULT_P_CENTRAL);
                if !(p.is_finite() && (lo..=hi).contains(&p)) {
                    return Err(ParamError::new(
                        "p_central",
                        format!("{}: must be between {lo:e} and {hi:e} (β0γ0 = p0/(m c))", show(p)),
                    ));
                }
                p
            }
        };
        let reference = Reference::new(&species, p);
        Ok((species, reference))
    }
}

// ---------------------------------------------------------------------------------------------
// The beam

/// A Gaussian bunch matched to Twiss parameters (the same particles on every device and thread
/// count for a seed: particle i draws from Philox stream (seed, i)). `Default` is the command
/// line's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct GaussianOptions {
    pub particles: u64,
    /// Twiss β [m] and α, and the geometric RMS emittance [m rad] (or the normalised one,
    /// β0γ0 times it) of each transverse plane; no emittance given: [`DEFAULT_EMITTANCE`].
    pub beta_x: f64,
    pub alpha_x: f64,
    pub emit_x: Option<f64>,
    pub nemit_x: Option<f64>,
    pub beta_y: f64,
    pub alpha_y: f64,
    pub emit_y: Option<f64>,
    pub nemit_y: Option<f64>,
    /// RMS bunch length in path length [m] (xtrack's σ_z).
    pub sigma_s: f64,
    /// RMS relative momentum spread.
    pub sigma_delta: f64,
    pub seed: u64,
}

/// Geometric emittance of a plane when none is given [m rad].
pub const DEFAULT_EMITTANCE: f64 = 1e-9;

impl Default for GaussianOptions {
    fn default() -> Self {
        Self {
            particles: 100_000,
            beta_x: 10.0,
            alpha_x: 0.0,
            emit_x: None,
            nemit_x: None,
            beta_y: 10.0,
            alpha_y: 0.0,
            emit_y: None,
            nemit_y: None,
            sigma_s: 1e-3,
            sigma_delta: 1e-3,
            seed: 1,
        }
    }
}

/// The most particles one run tracks (particle ids and GPU indices are 32-bit).
pub const MAX_PARTICLES: u64 = u32::MAX as u64;

/// Host memory per particle while a run lives [bytes]: the bunch, the back end's copy, a
/// watch snapshot with its moments index and record table, the LSC kick's times and bin keys,
/// the final copy and its table (6×8 + 2×4 bytes per copy of the particles, 10×8 per table),
/// the lost-particle table (12×8).
pub const RUN_BYTES_PER_PARTICLE: u64 = 448 + crate::losses::LOST_TABLE_BYTES;

/// Ranges of the Gaussian beam's options: finite, and far enough from overflow that
/// √(εβ) and the drawn δ stay meaningful (|δ| ≤ 1 is needed for p > 0).
const BETA_MAX: f64 = 1e6;
const EMITTANCE_MAX: f64 = 1.0;
const SIGMA_S_MAX: f64 = 1e6;
const SIGMA_DELTA_MAX: f64 = 0.1;

fn in_range(param: &'static str, v: f64, lo: f64, hi: f64, unit: &str) -> Result<(), ParamError> {
    if v.is_finite() && (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(ParamError::new(param, format!("{}: must be between {lo} and {hi}{unit}", show(v))))
    }
}

impl GaussianOptions {
    /// Check the options; the beam spec with geometric emittances for `reference`.
    fn spec(&self, reference: &Reference) -> Result<BeamSpec, ParamError> {
        if self.particles == 0 {
            return Err(ParamError::new("particles", "must be at least 1"));
        }
        if self.particles > MAX_PARTICLES {
            return Err(ParamError::new(
                "particles",
                format!(
                    "{}: at most {MAX_PARTICLES} per run (split the beam over runs with different {{seed}})",
                    self.particles
                ),
            ));
        }
        let plane = |beta: (&'static str, f64),
                     alpha: (&'static str, f64),
                     emit: (&'static str, Option<f64>),
                     nemit: (&'static str, Option<f64>)| {
            if !(beta.1.is_finite() && beta.1 > 0.0 && beta.1 <= BETA_MAX) {
                return Err(ParamError::new(
                    beta.0,
                    format!("{}: must be positive, at most {BETA_MAX} m", show(beta.1)),
                ));
            }
            in_range(alpha.0, alpha.1, -BETA_MAX, BETA_MAX, "")?;
            let emittance = match (emit.1, nemit.1) {
                (Some(_), Some(_)) => return Err(ParamError::new(nemit.0, format!("cannot be given together with {{{}}}", emit.0))),
                (Some(e), None) => {
                    in_range(emit.0, e, 0.0, EMITTANCE_MAX, " m rad")?;
                    e
                }
                (None, Some(n)) => {
                    in_range(nemit.0, n, 0.0, EMITTANCE_MAX, " m rad")?;
                    n / reference.p_central
                }
                (None, None) => DEFAULT_EMITTANCE,
            };
            Ok(Plane {
                beta: beta.1,
                alpha: alpha.1,
                emittance,
            })
        };
        let x = plane(
            ("beta_x", self.beta_x),
            ("alpha_x", self.alpha_x),
            ("emit_x", self.emit_x),
            ("nemit_x", self.nemit_x),
        )?;
        let y = plane(
            ("beta_y", self.beta_y),
            ("alpha_y", self.alpha_y),
            ("emit_y", self.emit_y),
            ("nemit_y", self.nemit_y),
        )?;
        in_range("sigma_s", self.sigma_s, 0.0, SIGMA_S_MAX, " m")?;
        in_range("sigma_delta", self.sigma_delta, 0.0, SIGMA_DELTA_MAX, "")?;
        Ok(BeamSpec {
            x,
            y,
            sigma_s: self.sigma_s,
            sigma_delta: self.sigma_delta,
            particles: self.particles as usize,
            seed: self.seed,
        })
    }
}

/// Where the particles of a run come from.
#[derive(Clone, Debug)]
pub enum BeamSource {
    /// A Gaussian bunch from Twiss parameters.
    Gaussian(GaussianOptions),
    /// A beam file: Parquet or CSV with columns x, xp, y, yp, s or t, delta or p.
    File(PathBuf),
    /// Coordinates from a caller (arrays), checked row by row.
    Coordinates(Coordinates),
    /// A bunch made before (Python's `Particles`), with its own species and reference.
    Bunch(Arc<Bunch>),
}

/// Checked particles with their species and reference momentum.
#[derive(Clone, Debug)]
pub struct Bunch {
    pub particles: Particles,
    pub species: Species,
    pub reference: Reference,
    /// The file they were read from, if any.
    pub path: Option<PathBuf>,
    /// How they were made (run.json).
    pub description: String,
}

impl Bunch {
    /// Make and check the particles of `source` (not [`BeamSource::Bunch`]) for the species
    /// and momentum of `reference`: every row finite with a positive momentum, the beam's
    /// memory budgeted before it is allocated.
    pub fn new(source: BeamSource, reference: &ReferenceOptions) -> Result<Self> {
        let (species, r) = reference.resolve()?;
        let (particles, path, description) = match source {
            BeamSource::Gaussian(g) => {
                let spec = g.spec(&r)?;
                limits::check_alloc(
                    "particles",
                    g.particles,
                    RUN_BYTES_PER_PARTICLE,
                    "track fewer particles per run and split the beam over runs with different seeds",
                )?;
                let p = gaussian(&spec);
                if let Some(i) = (0..p.len()).find(|&i| p.delta[i].is_nan() || p.delta[i] <= -1.0) {
                    return Err(ParamError::new(
                        "sigma_delta",
                        format!(
                            "{}: particle {i} drew δ = {}, a momentum ≤ 0; use a smaller spread",
                            g.sigma_delta, p.delta[i]
                        ),
                    )
                    .into());
                }
                (p, None, format!("Gaussian, {} particles, seed {}", g.particles, g.seed))
            }
            BeamSource::File(path) => {
                let c = beam_file::read(&path)?;
                let n = c.len();
                let p = c.into_particles(&r)?;
                (p, Some(path.clone()), format!("{} ({n} particles)", path.display()))
            }
            BeamSource::Coordinates(c) => {
                let n = c.len();
                (c.into_particles(&r)?, None, format!("arrays ({n} particles)"))
            }
            BeamSource::Bunch(b) => return Ok((*b).clone()),
        };
        if particles.len() as u64 > MAX_PARTICLES {
            return Err(Error::Failed(format!(
                "{description}: more than {MAX_PARTICLES} particles; split the beam over several runs"
            )));
        }
        Ok(Self {
            particles,
            species,
            reference: r,
            path,
            description,
        })
    }

    pub fn len(&self) -> usize {
        self.particles.len()
    }

    pub fn is_empty(&self) -> bool {
        self.particles.is_empty()
    }
}

// ---------------------------------------------------------------------------------------------
// The run

/// `--histogram` / `histogram=`.
pub fn histogram(s: &str) -> Result<Histogram, ParamError> {
    Histogram::parse(s).ok_or_else(|| ParamError::new("histogram", format!("{s}: expected sort, block-atomic or block-sort-scan")))
}

/// `--watch` / `watch=`.
pub fn watch_mode(s: &str) -> Result<WatchMode, ParamError> {
    s.parse().map_err(|m| ParamError::new("watch", m))
}

/// The options of one tracking run; `Default` is the command line's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct TrackOptions {
    pub passes: u64,
    /// Half-width of a square aperture checked after every element [m] (`None`: none).
    pub aperture: Option<f64>,
    /// Bunch charge [C] until a CHARGE element sets it (its magnitude is used).
    pub charge: f64,
    pub histogram: Histogram,
    /// GPU: one launch per element instead of one per run of map elements.
    pub launch_per_element: bool,
    /// GPU: 256-thread blocks per multiprocessor the map kernels are compiled for (0: the
    /// compiler's choice).
    pub min_blocks: u32,
    /// Where watch-point records go.
    pub watch: WatchMode,
    /// Watch points act every k-th pass …
    pub watch_every: u64,
    /// … or at these passes.
    pub watch_passes: Option<Vec<u64>>,
    /// Record only these particles (0-based rows of the beam).
    pub watch_particles: Option<Vec<u64>>,
    /// The run writes an output directory (the files and stream watch modes need one).
    pub output: bool,
    /// Draw `sizes.png` in the output directory.
    pub plot: bool,
    /// Also write `final.sdds` and `lost.sdds` (SDDS, as ELEGANT's outputs) in the output directory.
    pub sdds: bool,
    /// How the run was asked for (`run.json`).
    pub command: String,
    /// The batch job this run is (`--jobs N --job-index I`): its share of the bunch's blocks of
    /// particles ([`crate::moments`]); combine the jobs with [`merge_tracks`].
    pub split: Share,
}

impl Default for TrackOptions {
    fn default() -> Self {
        Self {
            passes: 1,
            aperture: None,
            charge: 1e-9,
            histogram: Histogram::BlockAtomic,
            launch_per_element: false,
            min_blocks: crate::gpu::DEFAULT_MIN_BLOCKS,
            watch: WatchMode::Files,
            watch_every: 1,
            watch_passes: None,
            watch_particles: None,
            output: true,
            plot: true,
            sdds: false,
            command: String::new(),
            split: Share::WHOLE,
        }
    }
}

/// The largest bunch charge accepted [C] (far beyond any bunch; larger values only overflow
/// the space-charge current).
pub const MAX_CHARGE: f64 = 1.0;
/// The most blocks per multiprocessor a map kernel can be compiled for (2048 threads / 256).
pub const MAX_MIN_BLOCKS: u32 = 8;
/// Lines longer than this are tracked but not plotted (the envelope computes a map per
/// element).
pub const MAX_PLOTTED_ELEMENTS: usize = 100_000;

/// Bytes of one row of `moments.parquet` while the run lives.
const MOMENTS_ROW_BYTES: u64 = std::mem::size_of::<MomentsRow>() as u64 + 32;
/// Bytes of one kept record besides its rows (its table's headers and name).
const RECORD_BYTES: u64 = std::mem::size_of::<WatchRecord>() as u64 + 512;
/// Bytes per LSC bin (counts, the zero-padded current, its spectrum, the voltage).
const LSC_BYTES_PER_BIN: u64 = 96;

/// What the watch points will cost, for the budget and for messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WatchCost {
    /// Watch events (moments rows).
    pub records: u64,
    /// Particles per record.
    pub rows: u64,
}

/// A validated tracking run.
#[derive(Debug)]
pub struct Track {
    /// The line compiled with the bunch's reference when it has RF cavities.
    rf_program: Option<Program>,
    line: Arc<Line>,
    bunch: Arc<Bunch>,
    passes: u32,
    aperture: f64,
    charge: f64,
    histogram: Histogram,
    launch_per_element: bool,
    min_blocks: u32,
    watch: WatchOptions,
    cost: WatchCost,
    plot: bool,
    sdds: bool,
    command: String,
    notes: Vec<String>,
    split: Share,
    /// The rows of the bunch this run tracks (all, or a batch job's share).
    rows: Range<u64>,
}

fn pass_number(param: &'static str, v: u64) -> Result<u32, ParamError> {
    u32::try_from(v).map_err(|_| ParamError::new(param, format!("{v}: at most {}", u32::MAX)))
}

impl Track {
    /// Check every option, make (or take) the bunch and budget everything the run will hold
    /// in memory; nothing is tracked yet.
    pub fn new(line: Arc<Line>, beam: BeamSource, reference: &ReferenceOptions, o: &TrackOptions) -> Result<Self> {
        if o.passes == 0 {
            return Err(ParamError::new("passes", "must be at least 1").into());
        }
        let passes = pass_number("passes", o.passes)?;
        if o.sdds && !o.split.is_whole() {
            return Err(ParamError::new(
                "sdds",
                "SDDS files are not written by batch jobs (warpdrive merge combines the Parquet files); run unsplit for SDDS",
            )
            .into());
        }
        if o.sdds && !o.output {
            return Err(ParamError::new("sdds", "needs an output directory ({output})").into());
        }
        let aperture = match o.aperture {
            None => f64::INFINITY,
            Some(a) if a.is_finite() && a > 0.0 => a,
            Some(a) => return Err(ParamError::new("aperture", format!("{}: must be a positive half-width in m", show(a))).into()),
        };
        if !(o.charge.is_finite() && o.charge.abs() <= MAX_CHARGE) {
            return Err(ParamError::new(
                "charge",
                format!("{} C: must be finite, at most {MAX_CHARGE} C in magnitude", show(o.charge)),
            )
            .into());
        }
        if o.min_blocks > MAX_MIN_BLOCKS {
            return Err(ParamError::new("min_blocks", format!("{}: at most {MAX_MIN_BLOCKS}", o.min_blocks)).into());
        }
        if o.watch.needs_directory() && !o.output {
            return Err(ParamError::new(
                "watch",
                format!(
                    "{}: writes watch files into the output directory; give {{output}}, or keep the records in memory ({{watch}}=memory)",
                    o.watch.name()
                ),
            )
            .into());
        }
        let pass_selection = match (&o.watch_passes, o.watch_every) {
            (_, 0) => return Err(ParamError::new("watch_every", "must be at least 1").into()),
            (Some(_), k) if k != 1 => return Err(ParamError::new("watch_passes", "cannot be given together with {watch_every}").into()),
            (Some(list), _) => {
                let mut l = Vec::with_capacity(list.len());
                for &p in list {
                    if p >= u64::from(passes) {
                        return Err(
                            ParamError::new("watch_passes", format!(": pass {p} is not tracked (passes 0 to {})", passes - 1)).into(),
                        );
                    }
                    l.push(p as u32);
                }
                l.sort_unstable();
                l.dedup();
                PassSelection::List(l)
            }
            (None, k) => PassSelection::Every(pass_number("watch_every", k)?),
        };
        let bunch = match beam {
            BeamSource::Bunch(b) => {
                if !reference.is_empty() {
                    return Err(ParamError::new(
                        "particle",
                        "and the reference momentum are those of the Particles given; set them when making the Particles",
                    )
                    .into());
                }
                b
            }
            other => Arc::new(Bunch::new(other, reference)?),
        };
        let n = bunch.len() as u64;
        let rows = job_rows(&line, &bunch, o)?;
        let ids = match &o.watch_particles {
            None => None,
            Some(list) => {
                let mut ids = Vec::with_capacity(list.len());
                for &i in list {
                    if i >= n {
                        return Err(ParamError::new(
                            "watch_particles",
                            format!(": particle {i} is not in the beam (rows 0 to {})", n - 1),
                        )
                        .into());
                    }
                    ids.push(i as u32);
                }
                ids.sort_unstable();
                ids.dedup();
                Some(ids)
            }
        };
        let watch = WatchOptions {
            mode: o.watch,
            passes: pass_selection,
            particles: ids,
        };
        let tracked = rows.end - rows.start;
        let cost = watch_cost(&line.program, passes, &watch, tracked);
        let mut notes = Vec::new();
        if o.plot && line.elements() > MAX_PLOTTED_ELEMENTS {
            notes.push(format!(
                "sizes.png: not drawn for a line of {} elements (more than {MAX_PLOTTED_ELEMENTS})",
                line.elements()
            ));
        }
        // RF cavities need the reference particle: the line is compiled again with it.
        let rf_program = if line.has_rf() {
            if passes > 1 {
                line.refuse_change_p0_in_rings()?;
            }
            Some(Program::compile_with(&line.lattice, Some(&bunch.reference)))
        } else {
            None
        };
        let me = Self {
            rf_program,
            line,
            bunch,
            passes,
            aperture,
            charge: o.charge,
            histogram: o.histogram,
            launch_per_element: o.launch_per_element,
            min_blocks: o.min_blocks,
            watch,
            cost,
            plot: o.plot,
            sdds: o.sdds,
            command: o.command.clone(),
            notes,
            split: o.split,
            rows,
        };
        me.budget()?;
        Ok(me)
    }

    /// Check that the run's memory fits: the particles' working set, the moments of every
    /// watch event, and the records kept in memory.
    fn budget(&self) -> Result<(), LimitError> {
        let n = self.rows.end - self.rows.start;
        let max_bins = self.line.program.steps.iter().fold(0u64, |m, s| match s {
            Step::Lsc { params, .. } => m.max(params.bins as u64),
            _ => m,
        });
        let record_buffer = self.cost.rows.saturating_mul(2 * (watch::RECORD_COLUMNS + 1) * 8);
        let working = n
            .saturating_mul(RUN_BYTES_PER_PARTICLE)
            .saturating_add(max_bins * LSC_BYTES_PER_BIN)
            .saturating_add(record_buffer);
        limits::check_alloc_beside(
            "the beam",
            n,
            RUN_BYTES_PER_PARTICLE,
            working - n * RUN_BYTES_PER_PARTICLE,
            "track fewer particles per run",
        )?;
        let advice = |what: &str| {
            format!(
                "{what}; keep fewer: watch points every k-th pass ({{watch_every}}) or at chosen passes ({{watch_passes}}), fewer {{passes}}, or none ({{watch}}=off)"
            )
        };
        let records = self.cost.records;
        limits::check_alloc_beside(
            "watch",
            records,
            MOMENTS_ROW_BYTES,
            working,
            &advice(&format!("these are the beam moments of {records} watch records")),
        )?;
        if self.watch.mode == WatchMode::Memory {
            let rows = records.saturating_mul(self.cost.rows);
            let already = working.saturating_add(records.saturating_mul(MOMENTS_ROW_BYTES + RECORD_BYTES));
            limits::check_alloc_beside(
                "watch",
                rows,
                watch::RECORD_COLUMNS * 8,
                already,
                &format!(
                    "these are {records} watch records of {} particles kept in memory; record fewer particles ({{watch_particles}}), watch points every k-th pass ({{watch_every}}) or at chosen passes ({{watch_passes}}), none ({{watch}}=off), or stream them to Parquet files in an output directory ({{watch}}=stream with {{output}})",
                    self.cost.rows
                ),
            )?;
        }
        Ok(())
    }

    /// The files the run reads (outputs must not replace or contain them).
    pub fn inputs(&self) -> Vec<PathBuf> {
        self.line.path.iter().chain(self.bunch.path.iter()).cloned().collect()
    }

    pub fn line(&self) -> &Line {
        &self.line
    }

    pub fn bunch(&self) -> &Bunch {
        &self.bunch
    }

    pub fn passes(&self) -> u32 {
        self.passes
    }

    /// Watch records and particles per record the run will produce.
    pub fn watch_cost(&self) -> WatchCost {
        self.cost
    }

    /// The one GPU of the device choice, or `None` for the CPU.
    fn device(&self, ctl: &Control) -> Result<Option<usize>> {
        match ctl.gpus()? {
            None => Ok(None),
            Some(g) if g.is_empty() => Err(ParamError::new("device", format!("{}: no GPU", ctl.device)).into()),
            Some(g) if g.len() == 1 => Ok(Some(g[0])),
            Some(g) => match ctl.device {
                Device::Auto => {
                    ctl.note(&format!("device: cuda:{} (beam tracking uses one GPU; cuda:N picks another)", g[0]));
                    Ok(Some(g[0]))
                }
                _ => Err(ParamError::new(
                    "device",
                    format!("{}: beam tracking runs on one GPU; choose one with cuda:N", ctl.device),
                )
                .into()),
            },
        }
    }

    fn backend(&self, gpu: Option<usize>, ctl: &Control) -> Result<(Box<dyn Backend>, String)> {
        let reference = self.bunch.reference;
        let particles = if self.split.is_whole() {
            self.bunch.particles.clone()
        } else {
            self.bunch.particles.slice(self.rows.start as usize..self.rows.end as usize)
        };
        match gpu {
            None => Ok((
                Box::new(CpuBackend {
                    particles,
                    reference,
                    aperture: self.aperture,
                    histogram: self.histogram,
                }),
                format!("cpu ({} threads)", rayon::current_num_threads()),
            )),
            Some(d) => {
                let g = crate::gpu::GpuBackend::new(
                    self.rf_program.as_ref().unwrap_or(&self.line.program),
                    &particles,
                    reference,
                    crate::gpu::GpuOptions {
                        device: d,
                        precise: ctl.precise,
                        per_element: self.launch_per_element,
                        histogram: self.histogram,
                        aperture: self.aperture,
                        min_blocks: self.min_blocks,
                        roll: crate::gpu::roll_from_env(),
                    },
                )?;
                let name = format!("cuda:{d} ({})", g.gpu().name);
                Ok((Box::new(g), name))
            }
        }
    }

    /// Track on the control's device and threads. Watch records go where the options say;
    /// with `out` (prepared by [`prepare_output`]) the output directory is filled and committed
    /// whole at the end. Returns [`Error::Cancelled`] (and leaves nothing) when the token is
    /// raised: it is polled before every step of every pass, and within long runs of elements
    /// on the CPU.
    pub fn run(&self, ctl: &Control, out: Option<Staged>) -> Result<Tracked> {
        if self.watch.mode.needs_directory() && out.is_none() {
            return Err(ParamError::new(
                "watch",
                format!("{}: needs an output directory ({{output}})", self.watch.mode.name()),
            )
            .into());
        }
        let gpu = self.device_with_notes(ctl)?;
        let dir = out.as_ref().map(|o| o.path().to_path_buf());
        let tracked = self.track_into(ctl, gpu, dir.as_deref())?;
        if let Some(out) = out {
            ctl.check()?;
            out.commit()?;
        }
        Ok(tracked)
    }

    /// [`Track::run`] writing its files into `dir`, a directory staged by the caller, which
    /// commits it (`beam run`: the run file's other outputs go into the same directory).
    pub fn run_in(&self, ctl: &Control, dir: &Path) -> Result<Tracked> {
        let gpu = self.device_with_notes(ctl)?;
        self.track_into(ctl, gpu, Some(dir))
    }

    /// The run's notes, then the device: the first GPU or the CPU.
    fn device_with_notes(&self, ctl: &Control) -> Result<Option<usize>> {
        for n in &self.notes {
            ctl.note(n);
        }
        self.device(ctl)
    }

    fn track_into(&self, ctl: &Control, gpu: Option<usize>, dir: Option<&Path>) -> Result<Tracked> {
        let stamp = self.job_stamp(gpu.is_some(), ctl.precise)?;
        let tracked = ctl.install(|| self.track(ctl, gpu, dir, stamp.as_ref()))??;
        if let Some(dir) = dir {
            self.save(&tracked, dir)?;
        }
        Ok(tracked)
    }

    fn track(&self, ctl: &Control, gpu: Option<usize>, dir: Option<&Path>, stamp: Option<&JobStamp>) -> Result<Tracked> {
        let program = self.rf_program.as_ref().unwrap_or(&self.line.program);
        let reference = self.bunch.reference;
        let initial = Moments::of(&self.bunch.particles);
        let (mut backend, device) = self.backend(gpu, ctl)?;
        ctl.check()?;
        ctl.progress.begin("passes", u64::from(self.passes), "passes");
        let mut recorder = Recorder::new(&self.watch, program, reference, self.passes, dir, &self.line.name).sdds(self.sdds);
        if let Some(stamp) = stamp {
            recorder = recorder.job(self.rows.start, self.bunch.len() as u64, stamp.metadata());
        }
        let watching = self.watch.mode != WatchMode::Off;
        let watch_at = |pass: u32| watching && self.watch.passes.contains(pass);
        let control = crate::track::Control {
            progress: &ctl.progress,
            watch_at: &watch_at,
            first_batch: 1,
        };
        let opts = crate::track::TrackOptions {
            passes: self.passes,
            aperture: self.aperture,
            histogram: self.histogram,
            charge: self.charge,
            reference,
        };
        let t0 = Instant::now();
        let lsc = track_controlled(
            program,
            backend.as_mut(),
            &opts,
            &control,
            &mut |ev| recorder.record(ev),
            &mut |_| {},
        )
        .map_err(|e| match e {
            TrackError::Cancelled => Error::Cancelled(Cancelled),
            TrackError::Failed(m) => Error::Failed(m),
        })?;
        recorder.finish().map_err(Error::Failed)?;
        let particles = backend.particles().map_err(Error::Failed)?;
        let tracking_seconds = t0.elapsed().as_secs_f64();
        ctl.check()?;
        let last = Moments::of(&particles);
        let mut lost: std::collections::BTreeMap<u32, usize> = Default::default();
        particles
            .lost_at
            .iter()
            .filter(|&&l| l > 0)
            .for_each(|&l| *lost.entry(l).or_default() += 1);
        Ok(Tracked {
            lost_by_element: lost.into_iter().map(|(e, c)| (program.names[e as usize - 1].clone(), c)).collect(),
            lost_by_pass: crate::losses::by_pass(&particles),
            particles,
            reference,
            species: self.bunch.species.clone(),
            initial,
            last,
            records: std::mem::take(&mut recorder.records),
            moments: std::mem::take(&mut recorder.moments),
            sizes: std::mem::take(&mut recorder.sizes),
            written: std::mem::take(&mut recorder.written),
            lsc,
            device,
            tracking_seconds,
            threads: rayon::current_num_threads(),
            blocks: std::mem::take(&mut recorder.blocks),
            metadata: [self.metadata(), stamp.map(JobStamp::metadata).unwrap_or_default()].concat(),
            job_metadata: stamp.map(JobStamp::metadata).unwrap_or_default(),
        })
    }

    /// Run metadata of the data files: only what the inputs determine (lattice, line, passes,
    /// species, reference momentum), so identical runs give identical bytes.
    fn metadata(&self) -> Vec<(String, String)> {
        let r = &self.bunch.reference;
        vec![
            ("warpdrive.version".into(), env!("CARGO_PKG_VERSION").into()),
            ("lattice".into(), self.line.name.clone()),
            ("line".into(), self.line.lattice.line.clone()),
            ("passes".into(), self.passes.to_string()),
            ("particle".into(), self.bunch.species.name.clone()),
            ("mass_ev".into(), r.mass_ev.to_string()),
            ("charge_number".into(), r.charge.to_string()),
            ("p_central".into(), r.p_central.to_string()),
        ]
    }

    /// Fill the output directory: `final.parquet`, `moments.parquet` (when watch points
    /// acted), `sizes.png` (when asked and drawable) and `run.json` (machine facts).
    fn save(&self, t: &Tracked, dir: &Path) -> Result<()> {
        let fail = |e: String| Error::Failed(format!("{}: {e}", warpdrive_core::output::shown(dir).display()));
        t.final_table()
            .write_parquet(&dir.join("final.parquet"))
            .map_err(|e| fail(e.to_string()))?;
        let program = self.rf_program.as_ref().unwrap_or(&self.line.program);
        let mut lost = crate::losses::lost_table(&t.particles, &t.reference, program, self.rows.start);
        lost.metadata.clone_from(&t.metadata);
        lost.write_parquet(&dir.join("lost.parquet")).map_err(|e| fail(e.to_string()))?;
        if self.sdds {
            // The bunch charge at the end: the last CHARGE element's, else the option's.
            let charge = program.steps.iter().fold(self.charge, |c, s| match s {
                Step::Charge { total } => *total,
                _ => c,
            });
            let fin = crate::sdds_out::final_file(&t.particles, &t.reference, self.rows.start, self.passes, charge);
            crate::sdds::write(&dir.join("final.sdds"), &fin).map_err(fail)?;
            let lost = crate::sdds_out::lost_file(&t.particles, &t.reference, program, self.rows.start);
            crate::sdds::write(&dir.join("lost.sdds"), &lost).map_err(fail)?;
        }
        if self.watch.mode != WatchMode::Off {
            let mut m = watch::moments_table(&t.moments);
            if !t.job_metadata.is_empty() {
                // A job's own moments (its particles only), and its blocks' partial moments
                // from which `warpdrive merge` folds the whole bunch's.
                m.metadata.extend(t.job_metadata.iter().cloned());
                let mut b = watch::blocks_table(&t.blocks, &t.moments);
                b.metadata.extend(t.job_metadata.iter().cloned());
                b.write_parquet(&dir.join(JOB_BLOCKS)).map_err(|e| fail(e.to_string()))?;
            }
            m.write_parquet(&dir.join("moments.parquet")).map_err(|e| fail(e.to_string()))?;
        }
        let mut plotted = false;
        if self.plot && self.line.elements() <= MAX_PLOTTED_ELEMENTS {
            let sigma = &t.initial.sigma;
            let finite = sigma.iter().flatten().all(|v| v.is_finite()) && t.sizes.iter().all(|w| w.1.is_finite() && w.2.is_finite());
            if finite {
                // At most about 20000 slices along the line (50 per metre on short lines).
                let per_metre = 50f64.min(20_000.0 / self.line.length().max(1e-9));
                let env = crate::optics::envelope(&self.line.lattice, sigma, per_metre);
                crate::optics::plot_sizes(
                    &dir.join("sizes.png"),
                    &format!("Beam sizes along {}", self.line.lattice.line),
                    &env,
                    &t.sizes,
                )
                .map_err(|e| fail(e.to_string()))?;
                plotted = true;
            }
        }
        let run = serde_json::json!({
            "command": self.command,
            "version": env!("CARGO_PKG_VERSION"),
            "job": { "jobs": self.split.jobs, "index": self.split.index, "particles": [self.rows.start, self.rows.end] },
            "lattice": self.line.path.as_ref().map_or_else(|| self.line.name.clone(), |p| p.display().to_string()),
            "beam": self.bunch.description,
            "device": t.device,
            "threads": t.threads,
            "tracking_seconds": t.tracking_seconds,
            "plot": plotted,
            "losses": {
                "lost": t.lost(),
                "by_pass": t.lost_by_pass.iter().map(|(p, c)| serde_json::json!({"pass": p, "lost": c})).collect::<Vec<_>>(),
                "by_element": t.lost_by_element.iter().map(|(e, c)| serde_json::json!({"element": e, "lost": c})).collect::<Vec<_>>(),
            },
        });
        let text = serde_json::to_string_pretty(&run).unwrap_or_default() + "\n";
        std::fs::write(dir.join("run.json"), text).map_err(|e| fail(format!("writing run.json: {e}")))?;
        Ok(())
    }
}

/// The rows of the bunch a run tracks: all of them, or a batch job's share of the bunch's
/// blocks ([`crate::moments`]). A split run must not couple particles (space charge) and must
/// write its records where `warpdrive merge` finds them.
fn job_rows(line: &Line, bunch: &Bunch, o: &TrackOptions) -> Result<Range<u64>> {
    let n = bunch.len() as u64;
    if o.split.is_whole() {
        return Ok(0..n);
    }
    if line.program.steps.iter().any(|s| matches!(s, Step::Lsc { .. })) {
        return Err(ParamError::new(
            "jobs",
            format!(
                "{}: space charge (LSCDRIFT) couples the particles, so a line with it cannot be split into batch jobs",
                o.split.jobs
            ),
        )
        .into());
    }
    if !o.output {
        return Err(ParamError::new(
            "jobs",
            "a batch job writes its share into an output directory ({output}) for `warpdrive merge`",
        )
        .into());
    }
    if o.watch == WatchMode::Stream {
        return Err(ParamError::new(
            "watch",
            "stream: batch jobs write watch records one file per record (files) or none (off), which `warpdrive merge` combines",
        )
        .into());
    }
    let blocks = crate::moments::blocks(n);
    if o.split.jobs > blocks {
        return Err(ParamError::new(
            "jobs",
            format!(
                "{}: a bunch of {n} particles is cut into {blocks} blocks, and a job tracks whole blocks: give at most {blocks} jobs",
                o.split.jobs
            ),
        )
        .into());
    }
    Ok(crate::moments::share_rows(n, o.split))
}

/// The job kind of a split tracking run (`warpdrive beam track --jobs N`).
pub const TRACK_JOB_KIND: &str = "beam track";
/// A tracking job's partial moments of its blocks at every watch event.
pub const JOB_BLOCKS: &str = "blocks.parquet";

impl Track {
    /// A batch job's stamp: the run's settings, its arithmetic (CPU or GPU, fast or precise:
    /// different bits) and the bunch's and lattice's contents fingerprinted; `None` for an
    /// unsplit run.
    fn job_stamp(&self, gpu: bool, precise: bool) -> Result<Option<JobStamp>> {
        if self.split.is_whole() {
            return Ok(None);
        }
        let mut h = warpdrive_core::hash::Fnv64::new();
        let p = &self.bunch.particles;
        for c in p.coords() {
            for v in c.iter() {
                h.write(&v.to_bits().to_le_bytes());
            }
        }
        for (l, q) in p.lost_at.iter().zip(&p.lost_pass) {
            h.write(&l.to_le_bytes()).write(&q.to_le_bytes());
        }
        let arithmetic = match (gpu, precise) {
            (false, _) => "cpu",
            (true, false) => "gpu",
            (true, true) => "gpu precise",
        };
        let mut fields = self.metadata();
        fields.extend([
            ("bunch".to_string(), h.hex()),
            ("aperture".to_string(), self.aperture.to_string()),
            ("charge".to_string(), self.charge.to_string()),
            ("watch".to_string(), format!("{:?}", self.watch)),
            ("arithmetic".to_string(), arithmetic.to_string()),
        ]);
        let run = jobs::fingerprint(&fields, self.line.path.as_slice())?;
        Ok(Some(JobStamp::new(
            TRACK_JOB_KIND,
            run,
            self.split,
            self.bunch.len() as u64,
            &self.command,
        )))
    }
}

/// What [`merge_tracks`] combined.
#[derive(Clone, Debug)]
pub struct MergedTrack {
    /// Particles in `final.parquet`.
    pub particles: u64,
    /// Rows of `moments.parquet` (watch events).
    pub watch_events: usize,
    /// Watch files combined.
    pub watch_files: Vec<String>,
}

/// Combine the output directories of a split tracking run's jobs into `out` (prepared by
/// [`prepare_output`]), as the unsplit run writes it: `final.parquet` (every particle, in bunch
/// order), `moments.parquet` (the blocks' partial moments folded in block order: the same bits)
/// and every watch file (rows of all jobs, in particle order); `run.json` names the jobs. Each
/// job must be present once, all made by the same run ([`jobs::check_jobs`]). No `sizes.png`:
/// its envelope needs the lattice (re-run one job unsplit for the plot).
pub fn merge_tracks(jobs: &[PathBuf], out: Staged, ctl: &Control) -> Result<MergedTrack> {
    let dir = out.path().to_path_buf();
    let shown = out.dest().display().to_string();
    let fail = |e: String| Error::Failed(format!("{shown}: {e}"));
    let finals: Vec<PathBuf> = jobs.iter().map(|d| d.join("final.parquet")).collect();
    let last = jobs::merge_tables(&finals, TRACK_JOB_KIND, ctl)?;
    last.write_parquet(&dir.join("final.parquet")).map_err(|e| fail(e.to_string()))?;
    // The watch files: the same names in every job.
    let names = |d: &Path| -> Result<std::collections::BTreeSet<String>> {
        let listing = std::fs::read_dir(d).map_err(|e| InputError::file(d, format!("cannot list it: {e}")))?;
        Ok(listing
            .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
            .filter(|n| n.ends_with(".parquet") && !["final.parquet", "moments.parquet", JOB_BLOCKS].contains(&n.as_str()))
            .collect())
    };
    let files = names(&jobs[0])?;
    for d in &jobs[1..] {
        let other = names(d)?;
        if let Some(f) = files.symmetric_difference(&other).next() {
            let (has, lacks) = if files.contains(f) { (&jobs[0], d) } else { (d, &jobs[0]) };
            return Err(InputError::file(lacks, format!("has no watch file {f}, which {} has", has.display())).into());
        }
    }
    for f in &files {
        let t = jobs::merge_tables(&jobs.iter().map(|d| d.join(f)).collect::<Vec<_>>(), TRACK_JOB_KIND, ctl)?;
        t.write_parquet(&dir.join(f)).map_err(|e| fail(e.to_string()))?;
    }
    let with_blocks = jobs.iter().filter(|d| d.join(JOB_BLOCKS).is_file()).count();
    let mut events = 0;
    if with_blocks == jobs.len() {
        let rows = watch::fold_blocks(&jobs.iter().map(|d| d.join(JOB_BLOCKS)).collect::<Vec<_>>(), ctl)?;
        events = rows.len();
        watch::write_moments(&dir.join("moments.parquet"), &rows).map_err(fail)?;
    } else if with_blocks > 0 {
        let d = jobs.iter().find(|d| !d.join(JOB_BLOCKS).is_file()).expect("one lacks it");
        return Err(InputError::file(d, format!("has no {JOB_BLOCKS}, which other jobs of the run have")).into());
    }
    let run = serde_json::json!({
        "version": env!("CARGO_PKG_VERSION"),
        "merged_from": jobs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
    });
    let text = serde_json::to_string_pretty(&run).unwrap_or_default() + "\n";
    std::fs::write(dir.join("run.json"), text).map_err(|e| fail(format!("writing run.json: {e}")))?;
    ctl.check()?;
    out.commit()?;
    Ok(MergedTrack {
        particles: last.rows() as u64,
        watch_events: events,
        // lost.parquet is merged like the watch files, but is none.
        watch_files: files.into_iter().filter(|f| f != "lost.parquet").collect(),
    })
}

/// Watch events and particles per record of a run.
fn watch_cost(program: &Program, passes: u32, watch: &WatchOptions, particles: u64) -> WatchCost {
    if watch.mode == WatchMode::Off {
        return WatchCost::default();
    }
    let records = program
        .steps
        .iter()
        .map(|s| match s {
            Step::Watch { interval, .. } => watch.passes.count(passes, *interval),
            _ => 0,
        })
        .sum();
    WatchCost {
        records,
        rows: watch.particles.as_ref().map_or(particles, |l| l.len() as u64),
    }
}

/// Prepare a run's output directory before it computes (the output discipline).
pub use warpdrive_core::engine::prepare_dir as prepare_output;

/// The result of a run.
#[derive(Clone, Debug)]
pub struct Tracked {
    /// Final coordinates and loss flags of every particle (lost ones included).
    pub particles: Particles,
    pub reference: Reference,
    pub species: Species,
    /// Moments of the surviving particles before and after.
    pub initial: Moments,
    pub last: Moments,
    /// Watch records kept in memory ([`WatchMode::Memory`]).
    pub records: Vec<WatchRecord>,
    /// Moments at every watch event.
    pub moments: Vec<MomentsRow>,
    /// Tracked sizes at the watch points of the first pass recorded (s, σx, σy, name).
    pub sizes: Vec<crate::optics::WatchSize>,
    /// Watch files written into the output directory.
    pub written: Vec<String>,
    /// LSC statistics of the last pass, per LSCDRIFT.
    pub lsc: Vec<LscStats>,
    /// (element name, particles lost there), in line order.
    pub lost_by_element: Vec<(String, usize)>,
    /// (pass, particles lost in it), in pass order; passes without losses left out.
    pub lost_by_pass: Vec<(u32, usize)>,
    /// Where it ran (`cpu (2 threads)`, `cuda:0 (NVIDIA H100 …)`).
    pub device: String,
    pub threads: usize,
    pub tracking_seconds: f64,
    /// A batch job's partial moments of its blocks at every watch event (empty otherwise).
    pub blocks: Vec<watch::BlockEvent>,
    metadata: Vec<(String, String)>,
    /// A batch job's stamp (`warpdrive.job.*`; empty for an unsplit run).
    job_metadata: Vec<(String, String)>,
}

impl Tracked {
    /// Particles lost.
    pub fn lost(&self) -> usize {
        self.particles.len() - self.last.alive
    }

    /// `final.parquet`: x, xp, y, yp, s, delta, t, p, lost_at, lost_pass, with the run's
    /// metadata.
    pub fn final_table(&self) -> Table {
        let mut t = crate::beam::to_table(&self.particles, &self.reference);
        t.metadata.clone_from(&self.metadata);
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpdrive_core::engine::Style;

    const FODO: &str = "Q1: QUAD, L=0.2, K1=1.5\nQ2: Q1, K1=-1.5\nD: DRIF, L=0.8\nW: WATCH, FILENAME=\"%s-w.sdds\"\n\
                        C: CHARGE, TOTAL=1e-10\nL1: LSCDRIFT, L=0.5, BINS=64\nA: LINE=(C, Q1, D, Q2, D, W, L1)\n";
    const MAPS: &str = "Q1: QUAD, L=0.2, K1=1.5\nQ2: Q1, K1=-1.5\nD: DRIF, L=0.8\nA: LINE=(Q1, D, Q2, D)\n";

    fn line(text: &str) -> Arc<Line> {
        Arc::new(Line::parse(text, "t", None).unwrap())
    }

    fn gauss(n: u64) -> BeamSource {
        BeamSource::Gaussian(GaussianOptions {
            particles: n,
            ..Default::default()
        })
    }

    fn memory(passes: u64) -> TrackOptions {
        TrackOptions {
            passes,
            watch: WatchMode::Memory,
            output: false,
            plot: false,
            ..Default::default()
        }
    }

    fn cpu() -> Control {
        Control::new().device(Device::Cpu).threads(Some(1))
    }

    #[test]
    fn reference_momentum_is_range_checked() {
        let r = |p: f64| ReferenceOptions {
            p_central: Some(p),
            ..Default::default()
        };
        let e = r(1e200).resolve().unwrap_err();
        assert_eq!(
            e.render(Style::Cli),
            "--p-central 1e200: must be between 1e-6 and 1e12 (β0γ0 = p0/(m c))"
        );
        assert!(r(f64::NAN).resolve().is_err() && r(0.0).resolve().is_err() && r(-5.0).resolve().is_err());
        let (s, refp) = ReferenceOptions {
            particle: Some(species("proton").unwrap()),
            momentum: Some(938.27208816),
            ..Default::default()
        }
        .resolve()
        .unwrap();
        assert_eq!(s.name, "proton");
        assert!((refp.p_central - 1.0).abs() < 1e-12);
        let e = ReferenceOptions {
            momentum: Some(1e30),
            ..Default::default()
        }
        .resolve()
        .unwrap_err();
        assert!(e.render(Style::Python).starts_with("momentum 1e30 MeV/c: must be between"), "{e}");
        let e = ReferenceOptions {
            particle: Some(Species::electron()),
            mass: Some(100.0),
            ..Default::default()
        }
        .resolve()
        .unwrap_err();
        assert_eq!(e.render(Style::Cli), "--mass cannot be given together with --particle");
        let (s, _) = ReferenceOptions {
            mass: Some(3727.379),
            particle_charge: Some(2.0),
            ..Default::default()
        }
        .resolve()
        .unwrap();
        assert_eq!((s.name.as_str(), s.charge), ("custom", 2.0));
    }

    #[test]
    fn gaussian_options_are_checked_with_their_names() {
        let bad = |g: GaussianOptions| {
            Bunch::new(BeamSource::Gaussian(g), &ReferenceOptions::default())
                .unwrap_err()
                .render(Style::Cli)
        };
        let d = GaussianOptions::default;
        assert_eq!(
            bad(GaussianOptions { beta_x: -1.0, ..d() }),
            "--beta-x -1: must be positive, at most 1000000 m"
        );
        assert_eq!(bad(GaussianOptions { particles: 0, ..d() }), "--particles must be at least 1");
        assert!(bad(GaussianOptions {
            emit_y: Some(f64::NAN),
            ..d()
        })
        .starts_with("--emit-y NaN: must be between 0 and 1 m rad"));
        assert_eq!(
            bad(GaussianOptions {
                emit_x: Some(1e-9),
                nemit_x: Some(1e-6),
                ..d()
            }),
            "--nemit-x cannot be given together with --emit-x"
        );
        assert!(bad(GaussianOptions { sigma_delta: 0.5, ..d() }).starts_with("--sigma-delta 0.5: must be between 0 and 0.1"));
        assert!(bad(GaussianOptions { particles: 1 << 40, ..d() }).starts_with("--particles 1099511627776: at most 4294967295 per run"));
        // The normalised emittance is β0γ0 times the geometric one.
        let b = Bunch::new(
            BeamSource::Gaussian(GaussianOptions {
                particles: 20_000,
                nemit_x: Some(2e-6),
                ..d()
            }),
            &ReferenceOptions {
                p_central: Some(1000.0),
                ..Default::default()
            },
        )
        .unwrap();
        let m = Moments::of(&b.particles);
        assert!((m.emittance(0) / 2e-9 - 1.0).abs() < 0.03, "{}", m.emittance(0));
    }

    #[test]
    fn options_are_checked_with_their_names() {
        let l = line(FODO);
        let bad = |o: TrackOptions| {
            Track::new(Arc::clone(&l), gauss(10), &ReferenceOptions::default(), &o)
                .unwrap_err()
                .render(Style::Cli)
        };
        assert_eq!(bad(TrackOptions { passes: 0, ..memory(1) }), "--passes must be at least 1");
        assert_eq!(
            bad(TrackOptions {
                aperture: Some(-1.0),
                ..memory(1)
            }),
            "--aperture -1: must be a positive half-width in m"
        );
        assert!(bad(TrackOptions {
            charge: 1e300,
            ..memory(1)
        })
        .starts_with("--charge 1e300 C: must be finite"));
        assert_eq!(
            bad(TrackOptions {
                watch_passes: Some(vec![0, 5]),
                ..memory(3)
            }),
            "--watch-passes: pass 5 is not tracked (passes 0 to 2)"
        );
        assert_eq!(
            bad(TrackOptions {
                watch_particles: Some(vec![10]),
                ..memory(3)
            }),
            "--watch-particles: particle 10 is not in the beam (rows 0 to 9)"
        );
        assert!(bad(TrackOptions {
            watch: WatchMode::Stream,
            ..memory(1)
        })
        .starts_with("--watch stream: writes watch files into the output directory; give --output"));
        assert!(histogram("fancy")
            .unwrap_err()
            .render(Style::Cli)
            .starts_with("--histogram fancy: expected sort"));
    }

    /// Issue #28: 2·10⁵ particles × 2000 passes of watch records in memory are refused before
    /// anything is allocated, with a message that says how to keep fewer; chosen particles or
    /// every 100th pass fit.
    #[test]
    fn watch_records_in_memory_are_budgeted() {
        let l = line(FODO);
        let r = ReferenceOptions::default();
        let budget = limits::memory_budget();
        // 2000 records of all particles: sized to exceed any machine's budget by far.
        let n = (budget / (2000 * 88)).max(1) * 2 + 1000;
        let bunch = Arc::new(Bunch::new(gauss(n.min(200_000)), &r).unwrap());
        let n = bunch.len() as u64;
        let passes = (budget / (n * 88)).max(1) * 4 + 10;
        let e = Track::new(
            Arc::clone(&l),
            BeamSource::Bunch(Arc::clone(&bunch)),
            &ReferenceOptions::default(),
            &memory(passes),
        )
        .unwrap_err();
        assert!(matches!(e, Error::Limit(_)), "{e}");
        let m = e.render(Style::Python);
        assert!(m.starts_with("watch: "), "{m}");
        assert!(
            m.contains("watch=off") && m.contains("watch=stream") && m.contains("watch_particles") && m.contains("watch_every"),
            "{m}"
        );
        let few = TrackOptions {
            watch_particles: Some((0..100).collect()),
            ..memory(passes)
        };
        let t = Track::new(
            Arc::clone(&l),
            BeamSource::Bunch(Arc::clone(&bunch)),
            &ReferenceOptions::default(),
            &few,
        )
        .unwrap();
        assert_eq!(
            t.watch_cost(),
            WatchCost {
                records: passes,
                rows: 100
            }
        );
        let off = TrackOptions {
            watch: WatchMode::Off,
            ..memory(passes)
        };
        let t = Track::new(l, BeamSource::Bunch(bunch), &ReferenceOptions::default(), &off).unwrap();
        assert_eq!(t.watch_cost(), WatchCost::default());
    }

    #[test]
    fn memory_records_follow_the_selection() {
        let l = line(FODO);
        let o = TrackOptions {
            watch_every: 2,
            watch_particles: Some(vec![3, 1, 3]),
            ..memory(5)
        };
        let t = Track::new(l, gauss(50), &ReferenceOptions::default(), &o).unwrap();
        let r = t.run(&cpu(), None).unwrap();
        let passes: Vec<u32> = r.records.iter().map(|w| w.pass).collect();
        assert_eq!(passes, vec![0, 2, 4]);
        assert_eq!(r.moments.len(), 3);
        for w in &r.records {
            assert_eq!(w.table.column("particle"), Some(&warpdrive_core::table::Column::I64(vec![1, 3])));
        }
    }

    /// Cancelling a long run returns Cancelled within a fraction of a second, for a line of
    /// map elements only (passes in batches) and for one with watch points and space charge.
    #[test]
    fn a_raised_token_cancels_the_run() {
        for text in [MAPS, FODO] {
            let o = TrackOptions {
                watch: WatchMode::Off,
                ..memory(u64::from(u32::MAX))
            };
            let t = Track::new(line(text), gauss(20_000), &ReferenceOptions::default(), &o).unwrap();
            let ctl = cpu();
            let stopper = ctl.cancel.after(std::time::Duration::from_millis(300));
            let t0 = Instant::now();
            let r = t.run(&ctl, None);
            stopper.join().unwrap();
            assert!(matches!(r, Err(Error::Cancelled(_))), "{r:?}");
            assert!(t0.elapsed().as_secs_f64() < 1.3, "took {:?}", t0.elapsed());
            assert!(ctl.progress.done() > 0, "progress counted passes");
        }
    }

    /// Batches of passes change nothing: the engine's run equals one call for all passes.
    #[test]
    fn batched_passes_equal_one_call() {
        let l = line(MAPS);
        let o = TrackOptions {
            watch: WatchMode::Off,
            aperture: Some(2e-4),
            ..memory(40)
        };
        let t = Track::new(Arc::clone(&l), gauss(3000), &ReferenceOptions::default(), &o).unwrap();
        let r = t.run(&cpu(), None).unwrap();
        let mut p = t.bunch().particles.clone();
        let [Step::Run(items)] = l.program().steps.as_slice() else {
            panic!()
        };
        crate::program::run_cpu(items, &mut p, 0..40, 2e-4);
        assert_eq!(r.particles, p);
        assert!(r.lost() > 0);
    }
}

// ---------------------------------------------------------------------------------------------
// Optics

impl Line {
    /// Does the line hold RF cavities?
    pub fn has_rf(&self) -> bool {
        self.lattice.elements.iter().any(|e| matches!(e.kind, crate::lattice::Kind::Rf(_)))
    }

    /// CHANGE_P0 moves the reference momentum once per pass; over several passes the cavities'
    /// reference would have to follow it pass by pass, which is not implemented: an error naming
    /// the first such cavity.
    pub fn refuse_change_p0_in_rings(&self) -> Result<()> {
        match self
            .lattice
            .elements
            .iter()
            .find(|e| matches!(e.kind, crate::lattice::Kind::Rf(c) if c.change_p0))
        {
            Some(e) => Err(Error::Input(InputError::new(
                &*e.origin.file,
                e.origin.line,
                format!(
                    "element {} (RFCA): CHANGE_P0=1 is supported for one pass only (a line), not over several passes",
                    e.name
                ),
            ))),
            None => Ok(()),
        }
    }
}

/// What `beam twiss` computes: the periodic solution (no `initial`), or the line's optics from
/// initial Twiss functions and dispersion.
#[derive(Clone, Debug, Default)]
pub struct TwissOptions {
    pub initial: Option<crate::twiss::Initial>,
    /// Draw `twiss.png` (β and η along s).
    pub plot: bool,
    /// Also write `twiss.sdds` (ELEGANT's twiss_output columns and parameters).
    pub sdds: bool,
    /// The command line, for `summary.json`.
    pub command: String,
}

/// The optics of a line.
#[derive(Clone, Debug)]
pub struct Optics {
    pub rows: Vec<crate::twiss::Row>,
    pub summary: crate::twiss::Summary,
    pub species: Species,
    pub reference: Reference,
}

impl Optics {
    /// `summary.json`'s content.
    pub fn summary_json(&self, line: &Line, command: &str) -> serde_json::Value {
        let s = &self.summary;
        serde_json::json!({
            "command": command,
            "version": env!("CARGO_PKG_VERSION"),
            "lattice": line.path.as_ref().map_or_else(|| line.name.clone(), |p| p.display().to_string()),
            "line": line.lattice.line,
            "periodic": s.periodic,
            "tunes": s.tunes,
            "chromaticity": s.chromaticity,
            "momentum_compaction": s.momentum_compaction,
            "circumference": s.circumference,
            "synchrotron_tune": s.synchrotron_tune,
            "coupled": s.coupled,
            "particle": self.species.name,
            "p_central": self.reference.p_central,
            "conventions": "delta = (p - p0)/p0; dispersion dx/d(delta); chromaticity dQ/d(delta); momentum_compaction (1/C) dL/d(delta), radiation-free; coupled: tunes of the modes, betx/alfx/mux of mode I in x, bety/alfy/muy of mode II in y (Mais-Ripken)",
        })
    }
}

impl Line {
    /// Twiss functions, tunes, chromaticity, momentum compaction and synchrotron tune
    /// (`beam twiss`, `Lattice.twiss()`); with `out` (from [`prepare_output`]) writes
    /// `twiss.parquet`, `summary.json` and `twiss.png` and commits the directory.
    pub fn twiss(&self, reference: &ReferenceOptions, o: &TwissOptions, out: Option<Staged>) -> Result<Optics> {
        if o.sdds && out.is_none() {
            return Err(ParamError::new("sdds", "needs an output directory ({output})").into());
        }
        let (species, reference) = reference.resolve()?;
        if let Some(i) = &o.initial {
            for (name, v, positive) in [
                ("betx", i.betx, true),
                ("bety", i.bety, true),
                ("alfx", i.alfx, false),
                ("alfy", i.alfy, false),
                ("dx", i.dx, false),
                ("dpx", i.dpx, false),
            ] {
                if !v.is_finite() || (positive && v <= 0.0) {
                    let want = if positive { "a positive β in m" } else { "finite" };
                    return Err(ParamError::new(name, format!("{}: must be {want}", show(v))).into());
                }
            }
        }
        let rf = crate::elements::rf::RfReference {
            mass_ev: reference.mass_ev,
            p0_ev: reference.p_central * reference.mass_ev,
            charge: reference.charge,
        };
        let (rows, summary) = crate::twiss::twiss(&self.lattice, o.initial.as_ref(), Some(&rf)).map_err(|e| {
            let file = self.path.as_ref().map_or_else(|| PathBuf::from(&self.name), |p| p.clone());
            Error::Input(InputError::new(file, 0, format!("line {}: {e}", self.lattice.line)))
        })?;
        let optics = Optics {
            rows,
            summary,
            species,
            reference,
        };
        if let Some(out) = out {
            let dir = out.path().to_path_buf();
            let fail = |e: String| Error::Failed(format!("{}: {e}", warpdrive_core::output::shown(&dir).display()));
            let metadata = vec![
                ("warpdrive.version".to_string(), env!("CARGO_PKG_VERSION").to_string()),
                ("lattice".into(), self.name.clone()),
                ("line".into(), self.lattice.line.clone()),
                ("p_central".into(), reference.p_central.to_string()),
            ];
            crate::twiss::write_table(&dir.join("twiss.parquet"), &optics.rows, &metadata).map_err(fail)?;
            if o.sdds {
                let f = crate::sdds_out::twiss_file(&optics.rows, &optics.summary, &reference);
                crate::sdds::write(&dir.join("twiss.sdds"), &f).map_err(fail)?;
            }
            if o.plot && optics.rows.len() <= MAX_PLOTTED_ELEMENTS {
                crate::twiss::plot(&dir.join("twiss.png"), &format!("Optics of {}", self.lattice.line), &optics.rows)
                    .map_err(|e| fail(e.to_string()))?;
            }
            let text = serde_json::to_string_pretty(&optics.summary_json(self, &o.command)).unwrap_or_default() + "\n";
            std::fs::write(dir.join("summary.json"), text).map_err(|e| fail(format!("writing summary.json: {e}")))?;
            out.commit()?;
        }
        Ok(optics)
    }
}
