//! Photon tables for Millipede (issue #32, `warpdrive photon tabulate`): photons from one source
//! at a given depth and orientation propagated through the real ice without modules, their
//! track length recorded per bin of the source frame (the photonics/CLSim tabulators' fluence
//! estimator, [`bins`]), written as histograms that `warpdrive spline fit` reads. Coordinates,
//! normalisation and what matches photonics are in docs/spline.md, "Making tables".
//!
//! * [`TabulateOptions`] → [`Tabulate::new`]: every check (edges, source, depth within the ice,
//!   photons, the grid's cells and the memory of the per-thread histograms) before anything
//!   large is allocated; the ice read as `warpdrive photon` reads it, then tilt, anisotropy
//!   and birefringence switched as asked (hole ice is a property of strings, not tabulated).
//! * [`Tabulate::run`]: photons in chunks of [`CHUNK`] on the control's threads, one histogram
//!   per worker; sums are integers (fixed point), so the tables are the same bytes for any
//!   thread count. Progress in photons; a raised token ends the run within a chunk.
//! * [`Tables::save`]: `amplitude.parquet`, `time.parquet` (with delay bins), `summary.json`
//!   (what the request determines) and `run.json` (threads, seconds), in an output directory
//!   staged before the work ([`prepare_output`]).
//!
//! The propagation is `propagate::step_with`'s for a segment without modules or hole ice, in the
//! precise arithmetic, drawing the same Philox blocks in the same order (emission, TOT, SCA;
//! per segment the birefringence block, then the scattering block): `propagate.rs` is not
//! changed, its functions are called.

pub mod agreement;
pub mod bins;
pub mod gpu;
pub mod sampled;

use crate::birefringence::Birefringence;
use crate::collision::DomIndex;
use crate::config::Config;
use crate::detector::{Detector, DetectorOptions};
use crate::ice::{Layers, ZOFF};
use crate::medium::{Medium, WNUM};
use crate::propagate::{layer_walk, Mode, PhotonState, Precise, MAX_SEGMENTS};
use crate::scatter::{scatter, scattering_cosine};
use crate::source::{self, emit, tags, Emission, Source};
use crate::spectrum::AngularSensitivity;
use crate::tilt::Tilt;
use bins::{Binning, Frame, Path as Piece, Shape};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use warpdrive_core::engine::{Control, Error, ParamError, Result};
use warpdrive_core::output::Staged;
use warpdrive_core::progress::Progress;
use warpdrive_core::rng::u32_to_unit_f32;
use warpdrive_core::table::{Column, Table};
use warpdrive_core::RandomStream;

/// Photons per work item (progress and cancellation granularity).
pub const CHUNK: u64 = 4096;
/// Most cells (spatial × time) of one table.
pub const MAX_CELLS: u64 = 50_000_000;
/// Most edges of one axis.
pub const MAX_EDGES: usize = 100_000;
/// Most photons of one run.
pub const MAX_PHOTONS: u64 = 1_000_000_000_000;
/// Fixed-point units of the sums: 2⁻¹⁶ m of weighted track length, 2⁻³² m² of its square.
pub const SUM_UNIT: f64 = 65_536.0;
pub const SQ_UNIT: f64 = 4_294_967_296.0;
/// Photonics' reference light yield (spec spline.md §1.4): 32 582 photons/m × 5.21 m/GeV. A
/// table value S = ln(mean PE / Y_REF) gives Millipede's Λ = Y_REF · ε · exp(S).
pub const PHOTONICS_PHOTONS_PER_M: f64 = 32_582.0;
pub const PHOTONICS_M_PER_GEV: f64 = 5.21;

/// The source of a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SourceKind {
    /// An EM cascade (e⁻): spherical coordinates r, φ, cos θ; amplitude per GeV.
    #[default]
    Cascade,
    /// A bare muon segment of `length` starting at the vertex: cylindrical ρ, φ, Δz;
    /// amplitude per metre of track.
    MuonSegment,
}

impl SourceKind {
    /// Parse the `source` option's text.
    pub fn parse(text: &str) -> Result<Self> {
        Ok(text.parse::<Self>()?)
    }
}

impl FromStr for SourceKind {
    type Err = ParamError;
    fn from_str(s: &str) -> std::result::Result<Self, ParamError> {
        match s {
            "cascade" => Ok(Self::Cascade),
            "muon-segment" => Ok(Self::MuonSegment),
            _ => Err(ParamError::new("source", format!("'{s}': expected cascade or muon-segment"))),
        }
    }
}

impl SourceKind {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Cascade => "cascade",
            Self::MuonSegment => "muon-segment",
        }
    }
}

/// How a photon's path is recorded in the cells (docs/spline.md "Estimators").
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Estimator {
    /// Every straight segment cut at every boundary it crosses, each piece's weighted length
    /// added to its cell ([`bins`]).
    Exact,
    /// Points at cumulative path length (u + k)·`step` [m], each adding weight × step to its
    /// cell; `step` = ∞: one uniformly placed point per segment adding weight × its length
    /// ([`sampled`]). `adaptive`: each segment's step grows from `step` with its distance from
    /// the source as the bins allow ([`sampled::AdaptiveStep`]; `--sample-step auto`).
    Sampled { step: f64, adaptive: bool },
}

/// The sampled estimator's default step [m] (docs/spline.md "Estimators": the points per
/// photon against the bins' size and the GPU's rate): the fixed comb's, and the adaptive comb's
/// smallest.
pub const DEFAULT_SAMPLE_STEP: f64 = 1.0;

impl Estimator {
    /// The sampled estimator with a fixed step [m] (∞: one point per segment).
    #[must_use]
    pub const fn sampled(step: f64) -> Self {
        Self::Sampled { step, adaptive: false }
    }

    /// The sampled estimator with the adaptive step from [`DEFAULT_SAMPLE_STEP`] (`--sample-step
    /// auto`, the default of `--estimator sampled`).
    #[must_use]
    pub const fn adaptive() -> Self {
        Self::Sampled {
            step: DEFAULT_SAMPLE_STEP,
            adaptive: true,
        }
    }

    /// The estimator a device uses when none is asked for: exact on the CPU (its tables carry no
    /// sampling noise; the sampled one would be cheaper per unit of variance there too, but the
    /// CPU is not where large tables are made: docs/spline.md "Estimators"), sampled with the
    /// adaptive step on GPUs (the exact one runs at 0.6 % of the propagation's rate there).
    #[must_use]
    pub fn default_for(gpu: bool) -> Self {
        if gpu {
            Self::adaptive()
        } else {
            Self::Exact
        }
    }

    /// Parse `--estimator exact|sampled` and `--sample-step auto|auto:MIN|M|segment`: neither is
    /// `None` (the device's default), a step alone means sampled, a step with exact is refused;
    /// sampled without a step is `auto` (the adaptive comb from [`DEFAULT_SAMPLE_STEP`];
    /// `auto:MIN` from MIN metres).
    pub fn parse(name: Option<&str>, step: Option<&str>) -> Result<Option<Self>> {
        // A number of metres in `m`, the option's whole text `t` named if it is none.
        let metres = |m: &str, t: &str| {
            m.trim().parse::<f64>().map_err(|_| {
                param(
                    "sample_step",
                    format!("'{t}': expected auto, auto:MIN (the adaptive step's smallest, in metres), a step in metres or 'segment'"),
                )
            })
        };
        let step = match step.map(str::trim) {
            None => None,
            Some("auto") => Some(Self::adaptive()),
            Some("segment" | "inf" | "infinity") => Some(Self::sampled(f64::INFINITY)),
            Some(t) => Some(match t.strip_prefix("auto:") {
                Some(m) => Self::Sampled {
                    step: metres(m, t)?,
                    adaptive: true,
                },
                None => Self::sampled(metres(t, t)?),
            }),
        };
        match (name, step) {
            (None, None) => Ok(None),
            (None | Some("sampled"), s) => Ok(Some(s.unwrap_or(Self::adaptive()))),
            (Some("exact"), None) => Ok(Some(Self::Exact)),
            (Some("exact"), Some(_)) => Err(param("sample_step", "a step is for the sampled estimator, not the exact one")),
            (Some(n), _) => Err(param("estimator", format!("'{n}': expected exact or sampled"))),
        }
    }

    /// The adaptive comb's rule for bins `b` and a source's frame `f`, if this is the adaptive
    /// sampled estimator and the bins leave room above its smallest step.
    #[must_use]
    pub fn adaptive_step(self, b: &Binning, f: &Frame) -> Option<sampled::AdaptiveStep> {
        match self {
            Self::Sampled { step, adaptive: true } => sampled::AdaptiveStep::for_bins(b, f, step),
            _ => None,
        }
    }

    /// Its name in files: `exact`, `sampled (adaptive step from 1 m)`, `sampled (step 1 m)`,
    /// `sampled (one point per segment)`.
    #[must_use]
    pub fn describe(self) -> String {
        match self {
            Self::Exact => "exact".into(),
            Self::Sampled { step, .. } if step.is_infinite() => "sampled (one point per segment)".into(),
            Self::Sampled { step, adaptive: true } => format!("sampled (adaptive step from {step} m)"),
            Self::Sampled { step, adaptive: false } => format!("sampled (step {step} m)"),
        }
    }

    fn check(self) -> Result<()> {
        if let Self::Sampled { step, adaptive } = self {
            if adaptive && !step.is_finite() {
                return Err(param("sample_step", "the adaptive step needs a finite smallest step"));
            }
            if !(step.is_infinite() && step > 0.0 || step.is_finite() && step >= sampled::MIN_STEP) {
                return Err(param(
                    "sample_step",
                    if adaptive {
                        format!("auto:{step}: the adaptive step's smallest must be at least {} m", sampled::MIN_STEP)
                    } else {
                        format!("{step} m: the step must be at least {} m (or 'segment')", sampled::MIN_STEP)
                    },
                ));
            }
        }
        Ok(())
    }
}

/// Bin edges as the user gives them: `LO:HI:N` (N equal bins) or the edges themselves.
#[derive(Clone, Debug, PartialEq)]
pub enum Edges {
    Linear { lo: f64, hi: f64, bins: u64 },
    List(Vec<f64>),
}

impl FromStr for Edges {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let num = |t: &str| t.trim().parse::<f64>().map_err(|_| format!("'{t}' is not a number"));
        let parts: Vec<&str> = s.split(':').collect();
        match parts.len() {
            3 => {
                let bins = parts[2]
                    .trim()
                    .parse::<u64>()
                    .map_err(|_| format!("'{}': the bin count of LO:HI:N is not a whole number", parts[2]))?;
                Ok(Self::Linear {
                    lo: num(parts[0])?,
                    hi: num(parts[1])?,
                    bins,
                })
            }
            1 => Ok(Self::List(s.split(',').map(num).collect::<std::result::Result<_, _>>()?)),
            _ => Err(format!("'{s}': expected LO:HI:N or a comma-separated list of edges")),
        }
    }
}

impl Edges {
    /// Parse the text of option `param` (`LO:HI:N` or a list), the error naming it.
    pub fn parse(param: &'static str, text: &str) -> Result<Self> {
        text.parse().map_err(|e: String| param_error(param, e))
    }

    /// The edges, checked: at least two, finite, strictly increasing, at most [`MAX_EDGES`]; an
    /// error names option `param`.
    pub fn resolve(&self, param: &'static str) -> Result<Vec<f64>> {
        let e = match self {
            Self::Linear { lo, hi, bins } => {
                if *bins == 0 || *bins >= MAX_EDGES as u64 {
                    return Err(ParamError::new(param, format!("{bins} bins: between 1 and {} bins per axis", MAX_EDGES - 1)).into());
                }
                if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
                    return Err(ParamError::new(param, format!("{lo}:{hi}:{bins}: LO and HI must be finite numbers with LO < HI")).into());
                }
                (0..=*bins).map(|i| lo + (hi - lo) * i as f64 / *bins as f64).collect()
            }
            Self::List(v) => v.clone(),
        };
        if e.len() < 2 || e.len() > MAX_EDGES {
            return Err(ParamError::new(param, format!("{} edges: between 2 and {MAX_EDGES} edges", e.len())).into());
        }
        if let Some(x) = e.iter().find(|x| !x.is_finite()) {
            return Err(ParamError::new(param, format!("edge {x} is not a finite number")).into());
        }
        if let Some(i) = (1..e.len()).find(|&i| e[i] <= e[i - 1]) {
            return Err(ParamError::new(
                param,
                format!(
                    "edges must increase strictly: edge {} ({}) is not above edge {} ({})",
                    i + 1,
                    e[i],
                    i,
                    e[i - 1]
                ),
            )
            .into());
        }
        Ok(e)
    }
}

/// What to tabulate. `Default` is a small cascade table in the built-in homogeneous ice.
#[derive(Clone, Debug, PartialEq)]
pub struct TabulateOptions {
    /// A PPC ice directory; `None`: the built-in homogeneous ice.
    pub ice: Option<PathBuf>,
    pub source: SourceKind,
    /// Depths of the source vertex below the surface [m] (IceCube z = 1948.07 m − depth), at
    /// x = y = 0: one table per depth and zenith, stacked along a `depth` axis when more than
    /// one (strictly increasing).
    pub depth: Vec<f64>,
    /// Source zeniths [deg] (strictly increasing; a `zenith` axis when more than one) and the
    /// azimuth, f2k/IceCube convention: where the particle comes from.
    pub zenith: Vec<f64>,
    pub azimuth: f64,
    /// Energy [GeV]: the cascade's longitudinal profile, the muon's light (yield per metre).
    pub energy: f64,
    /// Muon segment length [m].
    pub length: f64,
    /// Photons to propagate.
    pub photons: u64,
    /// Radial (r or ρ) [m], azimuth [deg, 0..180], polar (cos θ, or Δz [m]) and delay [ns] edges
    /// (`None`: no time table).
    pub radial: Edges,
    pub azimuth_bins: Edges,
    pub polar: Option<Edges>,
    pub delay: Option<Edges>,
    /// Photons are followed until absorbed or this far [m] outside the table's outer boundary.
    pub margin: f64,
    pub seed: u64,
    /// Switch the ice's tilt, anisotropy and birefringence off (each is on when the ice has it).
    pub tilt: bool,
    pub anisotropy: bool,
    pub birefringence: bool,
    /// The estimator; `None`: the device's default ([`Estimator::default_for`]).
    pub estimator: Option<Estimator>,
    /// The request as a command line (recorded in the files' metadata).
    pub command: String,
}

impl Default for TabulateOptions {
    fn default() -> Self {
        Self {
            ice: None,
            source: SourceKind::Cascade,
            depth: vec![2000.0],
            zenith: vec![0.0],
            azimuth: 0.0,
            energy: 1000.0,
            length: 1.0,
            photons: 100_000,
            radial: Edges::Linear {
                lo: 0.0,
                hi: 300.0,
                bins: 30,
            },
            azimuth_bins: Edges::Linear {
                lo: 0.0,
                hi: 180.0,
                bins: 9,
            },
            polar: None,
            delay: Some(Edges::Linear {
                lo: -10.0,
                hi: 2000.0,
                bins: 40,
            }),
            margin: 0.0,
            seed: 1,
            tilt: true,
            anisotropy: true,
            birefringence: true,
            estimator: None,
            command: String::new(),
        }
    }
}

/// The detection weight of a photon: the nominal DOM's share of the photon envelope at its
/// wavelength slice × the angular acceptance's rejection probability acc(n·axis)/mas (the DOM
/// axis (0, 0, 1), looking down), as `hits.rs` applies them to hits.
#[derive(Clone, Debug, PartialEq)]
pub struct Acceptance {
    pub share: Vec<f64>,
    pub angular: AngularSensitivity,
}

impl Acceptance {
    /// Every photon weight 1 (the tests' unweighted fluence).
    #[must_use]
    pub fn unit() -> Self {
        Self {
            share: vec![1.0; WNUM],
            angular: AngularSensitivity::flat(),
        }
    }

    #[inline]
    fn weight(&self, slice: u32, dir: [f32; 3]) -> f64 {
        let a = &self.angular;
        let ang = (a.acceptance(f64::from(dir[2])) / a.mas).clamp(0.0, 1.0);
        self.share[slice as usize] * ang
    }
}

/// A validated tabulation.
#[derive(Clone, Debug)]
pub struct Tabulate {
    medium: Medium,
    /// The detector's module index: uploaded with the medium for the GPU (whose photon kernel's
    /// parameters hold it), never searched (no modules are tabulated).
    index: DomIndex,

    sources: Vec<Placed>,
    /// Whether the tables have a zenith and a depth axis (more than one value).
    axes: [bool; 2],
    binning: Binning,
    acceptance: Acceptance,
    margin: f64,
    seed: u64,
    /// The estimator asked for (`None`: the device's default).
    estimator: Option<Estimator>,
    /// Propagated photons per unit of the source (per GeV, or per metre of muon track), and the
    /// group index of the delay.
    photons_per_unit: f64,
    ngroup: f64,
    settings: serde_json::Value,
    inputs: Vec<PathBuf>,
    /// What was read and what was switched off, in words.
    pub description: Vec<String>,
}

/// The direct light's group and phase indices: the means over the photons' wavelength slices
/// (each slice holds 1/512 of the photons).
fn indices(m: &Medium) -> (f64, f64) {
    let c = crate::optics::C_VACUUM;
    let ngroup = m.slices.iter().map(|s| f64::from(s.ocm) * c).sum::<f64>() / WNUM as f64;
    let nphase = m.slices.iter().map(|s| f64::from(s.n_phase)).sum::<f64>() / WNUM as f64;
    (ngroup, nphase)
}

/// One source of a run: where, which way, and its frame.
#[derive(Clone, Debug)]
struct Placed {
    src: Source,
    frame: Frame,
    zenith: f64,
    depth: f64,
}

/// A list of depths or zeniths (finite, checked before): 1 to 1000 values, strictly increasing
/// (each is an axis value).
fn check_list(name: &'static str, v: &[f64]) -> Result<()> {
    if v.is_empty() || v.len() > 1000 {
        return Err(param(name, format!("{} values: between 1 and 1000", v.len())));
    }
    if let Some(i) = (1..v.len()).find(|&i| v[i] <= v[i - 1]) {
        return Err(param(
            name,
            format!(
                "values must increase strictly: value {} ({}) is not above value {} ({})",
                i + 1,
                v[i],
                i,
                v[i - 1]
            ),
        ));
    }
    Ok(())
}

fn param(name: &'static str, text: impl Into<String>) -> Error {
    ParamError::new(name, text).into()
}

fn param_error(name: &'static str, text: String) -> Error {
    param(name, text)
}

impl Tabulate {
    /// Check everything and read the ice; nothing large is allocated before the grid's memory
    /// is budgeted.
    pub fn new(o: &TabulateOptions) -> Result<Self> {
        if o.photons == 0 || o.photons > MAX_PHOTONS {
            return Err(param(
                "photons",
                format!("{}: between 1 and {MAX_PHOTONS:e} photons per run", o.photons),
            ));
        }
        if let Some(d) = o.depth.iter().find(|d| !(d.is_finite() && **d >= 0.0)) {
            return Err(param("depth", format!("{d} m: must be a finite depth below the surface (≥ 0)")));
        }
        if let Some(z) = o.zenith.iter().find(|z| !(z.is_finite() && (0.0..=180.0).contains(*z))) {
            return Err(param("zenith", format!("{z}°: must be between 0 and 180")));
        }
        // After the values' checks: NaN is reported as such, not as out of order.
        check_list("depth", &o.depth)?;
        check_list("zenith", &o.zenith)?;
        let sources = o.depth.len() * o.zenith.len();
        if (sources as u64).saturating_mul(o.photons) > MAX_PHOTONS {
            return Err(param(
                "photons",
                format!(
                    "{} photons × {sources} sources: more than {MAX_PHOTONS:e} photons per run",
                    o.photons
                ),
            ));
        }
        if !(o.azimuth.is_finite() && (0.0..=360.0).contains(&o.azimuth)) {
            return Err(param("azimuth", format!("{}°: must be between 0 and 360", o.azimuth)));
        }
        if !(o.energy.is_finite() && o.energy > 0.0 && o.energy <= source::MAX_ENERGY_GEV) {
            return Err(param(
                "energy",
                format!("{} GeV: must be positive and at most {:e} GeV", o.energy, source::MAX_ENERGY_GEV),
            ));
        }
        if o.source == SourceKind::MuonSegment && !(o.length.is_finite() && o.length > 0.0 && o.length <= 1e4) {
            return Err(param(
                "length",
                format!("{} m: a muon segment needs a length in (0, 10000] m", o.length),
            ));
        }
        if let Some(e) = o.estimator {
            e.check()?;
        }
        if !(o.margin.is_finite() && o.margin >= 0.0 && o.margin <= 1e5) {
            return Err(param("margin", format!("{} m: must be between 0 and 100000 m", o.margin)));
        }
        let shape = match o.source {
            SourceKind::Cascade => Shape::Spherical,
            SourceKind::MuonSegment => Shape::Cylindrical,
        };
        let radial = o.radial.resolve("radial_bins")?;
        if radial[0] < 0.0 {
            return Err(param(
                "radial_bins",
                format!("the first edge is {} m: distances start at 0 or above", radial[0]),
            ));
        }
        let azimuth = o.azimuth_bins.resolve("azimuth_bins")?;
        if azimuth[0] != 0.0 || azimuth[azimuth.len() - 1] != 180.0 {
            return Err(param(
                "azimuth_bins",
                format!(
                    "edges from {} to {}: the azimuth is folded to [0°, 180°] and the edges must span it exactly",
                    azimuth[0],
                    azimuth[azimuth.len() - 1]
                ),
            ));
        }
        let polar = match (&o.polar, shape) {
            (Some(e), _) => e.resolve("polar_bins")?,
            (None, Shape::Spherical) => Edges::Linear {
                lo: -1.0,
                hi: 1.0,
                bins: 20,
            }
            .resolve("polar_bins")?,
            (None, Shape::Cylindrical) => Edges::Linear {
                lo: -200.0,
                hi: 200.0,
                bins: 40,
            }
            .resolve("polar_bins")?,
        };
        if shape == Shape::Spherical && (polar[0] != -1.0 || polar[polar.len() - 1] != 1.0) {
            return Err(param(
                "polar_bins",
                format!(
                    "cos θ edges from {} to {}: they must span [-1, 1] exactly",
                    polar[0],
                    polar[polar.len() - 1]
                ),
            ));
        }
        let delay = match &o.delay {
            Some(e) => e.resolve("delay_bins")?,
            None => Vec::new(),
        };
        let binning = Binning {
            shape,
            radial,
            azimuth,
            polar,
            delay,
        };
        let spatial = binning.spatial_cells();
        let cells = spatial.saturating_mul(binning.time_cells());
        if cells > MAX_CELLS {
            return Err(param(
                "radial_bins",
                format!(
                    "{} × {} × {} spatial bins × {} time cells (the delay bins, underflow and overflow) = {cells} cells: more than {MAX_CELLS}; use fewer bins",
                    binning.radial.len() - 1,
                    binning.azimuth.len() - 1,
                    binning.polar.len() - 1,
                    binning.time_cells()
                ),
            ));
        }
        // The histograms for this machine's cores (`run` checks again for its pool's size).
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        budget(cells, spatial, cores, o.depth.len() * o.zenith.len())?;

        // The ice, as `warpdrive photon` reads it (the DOM envelope, ppm, acceptance).
        let det = Detector::build(&DetectorOptions {
            ice_dir: o.ice.clone(),
            ..Default::default()
        })?;
        let mut description: Vec<String> = det
            .description
            .iter()
            .filter(|d| d.starts_with("ice") || d.starts_with("tilt") || d.starts_with("birefringence"))
            .cloned()
            .collect();
        if det.angular.surface_mode() {
            return Err(InputErrorAt::angular(o.ice.as_deref()));
        }
        let mut medium = rebuild_medium(&det, o)?;
        if det.medium.bfr.is_some() && medium.bfr.is_none() {
            description.retain(|d| !d.starts_with("birefringence"));
            description.push("birefringence: switched off (its s_eff is back in the ordinary scattering)".into());
        }
        if !o.tilt && !matches!(medium.tilt, Tilt::None) {
            description.push("tilt: switched off".into());
            medium.tilt = Tilt::None;
        }
        if !o.anisotropy && medium.anisotropy.is_some() {
            description.push("anisotropy: switched off".into());
            medium.anisotropy = None;
        }
        if medium.hole.is_some() {
            description.push("hole ice: not tabulated (columns about strings; the tables hold the bulk ice)".into());
            medium.hole = None;
        }
        // Depths within the ice's layers (one layer: homogeneous, any depth).
        for &depth in &o.depth {
            let z = ZOFF - depth;
            if medium.n_layers == 1 {
                continue;
            }
            let (lo, hi) = (
                f64::from(medium.hmin) - 0.5 * f64::from(medium.dh),
                f64::from(medium.hmin) + (medium.n_layers as f64 - 0.5) * f64::from(medium.dh),
            );
            if z < lo || z > hi {
                return Err(param(
                    "depth",
                    format!(
                        "{} m is outside the ice model's layers ({:.2} to {:.2} m deep, icemodel.dat)",
                        depth,
                        ZOFF - hi,
                        ZOFF - lo
                    ),
                ));
            }
        }
        let ppm = det.yield_.ppm;
        let (emission, photons_per_unit) = match o.source {
            SourceKind::Cascade => (
                Emission::Cascade {
                    profile_a: source::profile_a(source::Particle::Electron, o.energy),
                    profile_b: source::profile_b(source::Particle::Electron),
                },
                source::em_cascade_length(1.0) * ppm,
            ),
            SourceKind::MuonSegment => {
                let (l, f_direct) = source::muon_length(o.length, o.energy);
                (
                    Emission::Track {
                        length: o.length,
                        beta: 1.0,
                        f_direct,
                    },
                    l / o.length * ppm,
                )
            }
        };
        // The delay's group index: the mean over the photons' wavelength slices (each slice
        // holds 1/512 of them); the phase index likewise for the muon's Cherenkov cone.
        let (ngroup, nphase) = indices(&medium);
        // Sources in the tables' order: zenith, then depth (depth fastest).
        let mut sources = Vec::new();
        for &zenith in &o.zenith {
            for &depth in &o.depth {
                let dir = source::f2k_direction(zenith, o.azimuth);
                let src = Source {
                    event: 0,
                    index: sources.len() as u32,
                    pos: [0.0, 0.0, ZOFF - depth],
                    dir,
                    time: 0.0,
                    emission,
                    mean_photons: o.photons as f64,
                    photons: o.photons,
                    own_dom: None,
                };
                let frame = Frame::new(src.pos, dir, ngroup, nphase);
                sources.push(Placed { src, frame, zenith, depth });
            }
        }
        let acceptance = Acceptance {
            share: (0..WNUM).map(|s| det.dom_types.keep(false, 1.0, s)).collect(),
            angular: det.angular.clone(),
        };
        let settings = serde_json::json!({
            "ice": det.ice,
            "source": o.source.name(),
            "depth_m": o.depth,
            "zenith_deg": o.zenith,
            "azimuth_deg": o.azimuth,
            "energy_gev": o.energy,
            "length_m": if o.source == SourceKind::MuonSegment { Some(o.length) } else { None },
            "photons": o.photons,
            "seed": o.seed,
            "margin_m": o.margin,
            "tilt": !matches!(medium.tilt, Tilt::None),
            "anisotropy": medium.anisotropy.is_some(),
            "birefringence": medium.bfr.is_some(),
            "geometry": if shape == Shape::Spherical { "spherical (r, azimuth, cos_theta)" } else { "cylindrical (rho, azimuth, dz)" },
            "edges": {
                "radial": binning.radial,
                "azimuth": binning.azimuth,
                "polar": binning.polar,
                "delay": binning.delay,
            },
        });
        Ok(Self {
            medium,
            index: det.index.clone(),
            sources,
            axes: [o.zenith.len() > 1, o.depth.len() > 1],
            binning,
            acceptance,
            margin: o.margin,
            seed: o.seed,
            estimator: o.estimator,
            photons_per_unit,
            ngroup,
            settings,
            inputs: o.ice.iter().cloned().collect(),
            description,
        })
    }

    /// The files and directories read (no output may be or lie in them).
    #[must_use]
    pub fn inputs(&self) -> &[PathBuf] {
        &self.inputs
    }

    /// Replace the detection weights (tests: [`Acceptance::unit`]).
    #[must_use]
    pub fn with_acceptance(mut self, a: Acceptance) -> Self {
        self.acceptance = a;
        self
    }

    /// A tabulation in a given medium (tests: a homogeneous ice built in place), with the
    /// request's source, binning and weights otherwise.
    #[must_use]
    pub fn with_medium(mut self, m: Medium) -> Self {
        let (ngroup, nphase) = indices(&m);
        for p in &mut self.sources {
            p.frame = Frame::new(p.src.pos, p.src.dir, ngroup, nphase);
        }
        self.ngroup = ngroup;
        self.medium = m;
        self
    }

    /// Replace the estimator (checks compare both on one request).
    pub fn with_estimator(mut self, e: Estimator) -> Result<Self> {
        e.check()?;
        self.estimator = Some(e);
        Ok(self)
    }

    /// The estimator a run on the CPU (`gpu` false) or the GPUs uses.
    #[must_use]
    pub fn estimator(&self, gpu: bool) -> Estimator {
        self.estimator.unwrap_or(Estimator::default_for(gpu))
    }

    /// Replace every source's emission (tests: a bare Cherenkov line, `f_direct` = 1).
    #[must_use]
    pub fn with_emission(mut self, e: Emission) -> Self {
        for p in &mut self.sources {
            p.src.emission = e;
        }
        self
    }

    /// Propagate and tabulate on the control's device: its GPUs ([`gpu`], always the precise
    /// build) or its threads. Cancelled within one chunk of photons (CPU) or one launch (GPU).
    pub fn run(&self, ctl: &Control) -> Result<Tables> {
        match ctl.gpus()? {
            Some(devices) => self.run_gpu(
                &gpu::TabGpuOptions {
                    devices,
                    ..Default::default()
                },
                ctl,
            ),
            None => self.run_cpu(ctl),
        }
    }

    /// Tabulate on the CPU: the control's threads, one histogram per worker.
    pub fn run_cpu(&self, ctl: &Control) -> Result<Tables> {
        let t0 = Instant::now();
        let photons = self.photons();
        let (hists, threads) = ctl.install(|| {
            ctl.progress.begin("tabulating", photons * self.sources.len() as u64, "photons");
            let threads = rayon::current_num_threads();
            let b = &self.binning;
            budget(b.spatial_cells() * b.time_cells(), b.spatial_cells(), threads, self.sources.len())?;
            // Source k's photons have the global ids k·photons + i (their own Philox streams).
            let est = self.estimator(false);
            let hists: Vec<Histogram> = (0..self.sources.len()).map(|k| self.tabulate(k, est, &ctl.progress)).collect();
            Ok::<_, Error>((hists, threads))
        })??;
        ctl.check()?;
        if ctl.progress.should_stop() {
            return Err(warpdrive_core::engine::Cancelled.into());
        }
        Ok(self.tables(
            hists,
            Ran {
                estimator: self.estimator(false),
                device: format!("cpu ({threads} threads)"),
                threads,
                seconds: t0.elapsed().as_secs_f64(),
                kernel_seconds: 0.0,
                overflowed: 0,
            },
        ))
    }

    /// Tabulate on the GPUs of `opts` (the same tables as [`Tabulate::run_cpu`] for the photons
    /// whose paths are the CPU's; docs/spline.md "Making tables"). Progress and cancellation per
    /// launch.
    pub fn run_gpu(&self, opts: &gpu::TabGpuOptions, ctl: &Control) -> Result<Tables> {
        let t0 = Instant::now();
        let photons = self.photons();
        let b = &self.binning;
        // On the host: per device one histogram per source, the sources' and their sum.
        budget(
            b.spatial_cells() * b.time_cells(),
            b.spatial_cells(),
            opts.devices.len().max(1) * self.sources.len(),
            self.sources.len(),
        )?;
        ctl.progress.begin("tabulating", photons * self.sources.len() as u64, "photons");
        let (hists, stats) = match self.estimator(true) {
            Estimator::Exact => gpu::run(self, opts, &ctl.progress)?,
            e @ Estimator::Sampled { .. } => gpu::run_sampled(self, e, opts, &ctl.progress)?,
        };
        ctl.check()?;
        if ctl.progress.should_stop() {
            return Err(warpdrive_core::engine::Cancelled.into());
        }
        Ok(self.tables(
            hists,
            Ran {
                estimator: self.estimator(true),
                device: stats.devices.join(", "),
                threads: 1,
                seconds: t0.elapsed().as_secs_f64(),
                kernel_seconds: stats.kernel_seconds,
                overflowed: stats.overflowed,
            },
        ))
    }

    fn tables(&self, hists: Vec<Histogram>, ran: Ran) -> Tables {
        let mut hist = hists[0].clone();
        for h in &hists[1..] {
            hist.add(h);
        }
        let mut settings = self.settings.clone();
        settings["estimator"] = ran.estimator.describe().into();
        // The adaptive comb's rule (the frames differ only in place and direction: the first's).
        if let (Estimator::Sampled { step, adaptive: true }, Some(p)) = (ran.estimator, self.sources.first()) {
            // A half bin of an axis the bins lack (spheres: axial; no delays) is ∞: null.
            let finite = |v: f64| {
                if v.is_finite() {
                    serde_json::json!(v)
                } else {
                    serde_json::Value::Null
                }
            };
            settings["adaptive_step"] = match ran.estimator.adaptive_step(&self.binning, &p.frame) {
                Some(a) => serde_json::json!({
                    "rule": "directional: half a bin over the segment's fastest rate in each coordinate",
                    "smallest_m": a.min,
                    "largest_m": 2.0 * a.max,
                    "half_radial_bin_m": a.half_radial,
                    "half_axial_bin_m": finite(a.half_axial),
                    "half_delay_bin_ns": finite(a.half_delay),
                    "angular_bin_rad": a.slope,
                }),
                None => serde_json::json!({"smallest_m": step, "fixed": "the bins leave no room above the smallest step"}),
            };
        }
        Tables {
            hist,
            per_source: hists,
            estimator: ran.estimator,
            sources: self.sources.iter().map(|p| (p.zenith, p.depth)).collect(),
            axes: self.axes,
            binning: self.binning.clone(),
            photons: self.photons(),
            photons_per_unit: self.photons_per_unit,
            ngroup: self.ngroup,
            settings,
            source: if self.binning.shape == Shape::Spherical {
                SourceKind::Cascade
            } else {
                SourceKind::MuonSegment
            },
            threads: ran.threads,
            seconds: ran.seconds,
            device: ran.device,
            kernel_seconds: ran.kernel_seconds,
            overflowed: ran.overflowed,
        }
    }

    /// Source `k` as it is propagated (its emission, position and direction; `photons` per source).
    #[must_use]
    pub fn source(&self, k: usize) -> Source {
        self.sources[k].src.clone()
    }

    /// Photons per source.
    fn photons(&self) -> u64 {
        self.sources[0].src.photons
    }

    /// Source `k`'s worker loop: chunks taken in turn from a counter, one histogram per worker,
    /// summed.
    fn tabulate(&self, k: usize, est: Estimator, progress: &Progress) -> Histogram {
        let cells = (self.binning.spatial_cells() * self.binning.time_cells()) as usize;
        let spatial = self.binning.spatial_cells() as usize;
        let photons = self.photons();
        let chunks = photons.div_ceil(CHUNK);
        let next = AtomicU64::new(0);
        let adapt = est.adaptive_step(&self.binning, &self.sources[k].frame);
        let parts: Vec<Histogram> = rayon::broadcast(|_| {
            let mut h = Histogram::new(cells, spatial);
            let mut scratch = Scratch::default();
            let look = sampled::Lookup::new(&self.binning);
            loop {
                let c = next.fetch_add(1, Ordering::Relaxed);
                if c >= chunks || progress.should_stop() {
                    break;
                }
                let (lo, hi) = (c * CHUNK, ((c + 1) * CHUNK).min(photons));
                for i in lo..hi {
                    let id = k as u64 * photons + i;
                    match est {
                        Estimator::Exact => self.photon(&self.sources[k], id, &mut h, &mut scratch),
                        Estimator::Sampled { step, .. } => {
                            self.photon_sampled(&self.sources[k], id, step, adapt, &look, &mut h);
                        }
                    }
                }
                progress.add(hi - lo);
            }
            h
        });
        let mut total = Histogram::new(cells, spatial);
        for p in parts {
            total.add(&p);
        }
        total
    }

    /// One photon's path: emitted, propagated segment by segment (`propagate::step_with`
    /// without modules or hole ice), `each(piece)` for every straight segment. Returns the
    /// segments and whether it was absorbed or left the table (one of the two, or neither after
    /// `MAX_SEGMENTS`).
    fn walk(&self, placed: &Placed, id: u64, mut each: impl FnMut(&Piece)) -> (u64, bool, bool) {
        let (m, frame) = (&self.medium, &placed.frame);
        let mut rng = RandomStream::new(self.seed, tags::PHOTON, id);
        let p = emit(&placed.src, m, &mut rng);
        let mut st = PhotonState::start(p, &mut rng);
        let mode = Precise;
        let ocm = f64::from(m.slices[st.photon.slice as usize].ocm);
        let mut segments = 0;
        for _ in 0..MAX_SEGMENTS {
            let ph = &mut st.photon;
            let zp = ph.pos[2] - mode.zshift(m, ph.pos);
            let nr = mode.absorption_factor(m, ph.dir);
            let seg = layer_walk(m, ph.slice, zp, ph.dir[2], st.sca_depth, st.tot, nr);
            let piece = Piece {
                start: ph.pos.map(f64::from),
                dir: ph.dir.map(f64::from),
                len: f64::from(seg.length),
                time: f64::from(ph.time),
                ocm,
                weight: self.acceptance.weight(ph.slice, ph.dir),
            };
            segments += 1;
            each(&piece);
            st.tot = seg.tot;
            if seg.tot <= 0.0 {
                return (segments, true, false);
            }
            let len = seg.length;
            ph.pos = [
                ph.pos[0] + len * ph.dir[0],
                ph.pos[1] + len * ph.dir[1],
                ph.pos[2] + len * ph.dir[2],
            ];
            ph.time += len * m.slices[ph.slice as usize].ocm;
            if self.binning.escaped(frame, ph.pos.map(f64::from), self.margin) {
                return (segments, false, true);
            }
            if let Some(b) = &m.bfr {
                birefringent(b, m, &mode, ph, zp, len, &mut rng);
            }
            let w = rng.block4();
            let (u1, u2, u3) = (u32_to_unit_f32(w[0]), u32_to_unit_f32(w[1]), u32_to_unit_f32(w[2]));
            st.sca_depth = mode.depth(u32_to_unit_f32(w[3]));
            ph.dir = scatter(ph.dir, scattering_cosine(m.g, m.f_sl, u1, u2), u3, m.anisotropy.as_ref());
        }
        (segments, false, false)
    }

    /// One photon with the exact estimator: each segment deposited ([`Binning::deposit`]), then
    /// the photon's per-cell sums added.
    fn photon(&self, placed: &Placed, id: u64, h: &mut Histogram, s: &mut Scratch) {
        let frame = &placed.frame;
        s.touched.clear();
        let mut inside = 0.0f64;
        let (touched, cuts) = (&mut s.touched, &mut s.cuts);
        let (segments, absorbed, escaped) = self.walk(placed, id, |piece| {
            inside += self.binning.inside_length(frame, piece);
            self.binning.deposit(frame, piece, cuts, |cell, x| touched.push((cell as u32, x)));
        });
        h.segments += segments;
        h.absorbed += u64::from(absorbed);
        h.escaped += u64::from(escaped);
        h.inside += (inside * SUM_UNIT).round() as u64;
        let deposited: f64 = s.touched.iter().map(|t| t.1).sum();
        h.worst_photon = h.worst_photon.max((deposited - inside).abs());
        h.photon_done(&mut s.touched, self.binning.time_cells() as u32);
    }

    /// One photon with the sampled estimator ([`sampled`]): its points' runs added as they
    /// close (x to the cell's sum, x² to its squares; per spatial cell the spatial runs' x²).
    #[allow(clippy::too_many_arguments)]
    fn photon_sampled(
        &self,
        placed: &Placed,
        id: u64,
        step: f64,
        adaptive: Option<sampled::AdaptiveStep>,
        look: &sampled::Lookup,
        h: &mut Histogram,
    ) {
        let frame = &placed.frame;
        let mut sm = sampled::Sampler::new(step, adaptive, self.seed, id);
        let mut add = |r: sampled::Record| h.record(r);
        let (segments, absorbed, escaped) = self.walk(placed, id, |p| {
            sm.segment(look, frame, p.start, p.dir, p.len, p.time, p.ocm, p.weight, &mut add);
        });
        sm.finish(&mut add);
        h.segments += segments;
        h.absorbed += u64::from(absorbed);
        h.escaped += u64::from(escaped);
        h.entries += sm.runs;
        h.points += sm.points;
        h.tabulated += u64::from(sm.points > 0);
    }
}

/// One histogram per worker (8 + 16 bytes a cell, 16 a spatial cell), one kept per source and
/// their sum, and the output tables' rows (≤ 6 f64 columns a cell and source).
fn budget(cells: u64, spatial: u64, workers: usize, sources: usize) -> Result<()> {
    let per_hist = cells.saturating_mul(24).saturating_add(spatial.saturating_mul(16));
    let hists = (workers as u64).saturating_add(sources as u64).saturating_add(1);
    let rows = cells.saturating_mul(48).saturating_mul(sources as u64);
    warpdrive_core::limits::check_alloc(
        &format!(
            "the tabulator's histograms ({cells} cells; one per thread for {workers} threads and one per source for {sources} sources)"
        ),
        1,
        per_hist.saturating_mul(hists).saturating_add(rows),
        "use fewer bins, sources (or fewer --threads)",
    )?;
    Ok(())
}

/// The birefringent diffusion of one segment (as `step_with`: one block, the deflection and the
/// curved path's end-point shift).
fn birefringent(b: &Birefringence, m: &Medium, mode: &Precise, ph: &mut crate::source::Photon, zp: f32, len: f32, rng: &mut RandomStream) {
    let (ra, rb) = mode.bfr_integrals(b, m, zp, ph.dir[2], len);
    let u = rng.block4().map(u32_to_unit_f32);
    let (dir, shift) = mode.deflect(b, ph.dir, len, ra, rb, u);
    ph.pos = [ph.pos[0] + shift[0], ph.pos[1] + shift[1], ph.pos[2] + shift[2]];
    ph.dir = dir;
}

/// The detector's medium again, from the ice's files, with the birefringence switched off if
/// asked (its s_eff then stays in the ordinary scattering); slice wavelengths as the detector's.
fn rebuild_medium(det: &Detector, o: &TabulateOptions) -> Result<Medium> {
    if o.birefringence || det.medium.bfr.is_none() {
        return Ok(det.medium.clone());
    }
    let dir = o.ice.as_deref().unwrap_or(Path::new("."));
    let mut cfg = Config::read(&dir.join("cfg.txt"))?;
    cfg.birefringence = None;
    let layers = Layers::read_dir(dir, None, None)?;
    let slices = &det.medium.slices;
    let quantile = |p: f64| {
        // p = i/WNUM (lower edge), (i + ½)/WNUM (the slice's wavelength), (i + 1)/WNUM.
        let k = (p * 2.0 * WNUM as f64).round() as usize;
        let i = (k / 2).min(WNUM - 1);
        f64::from(match (k % 2, k / 2 >= WNUM) {
            (_, true) => slices[WNUM - 1].hi,
            (1, _) => slices[i].wavelength,
            _ => slices[i].lo,
        })
    };
    let tilt = det.medium.tilt.clone();
    let m = Medium::with_quantiles(&layers, &cfg, tilt, quantile);
    m.check_scattering().map_err(|e| warpdrive_core::InputError::file(dir, e))?;
    Ok(m)
}

struct InputErrorAt;
impl InputErrorAt {
    fn angular(ice: Option<&Path>) -> Error {
        let p = ice.unwrap_or(Path::new(".")).join("as.dat");
        warpdrive_core::InputError::file(
            p,
            "surface-sensitivity mode (first number 0) depends on where a photon meets the module, which a fluence table does not record: give a polynomial angular sensitivity",
        )
        .into()
    }
}

#[derive(Default)]
struct Scratch {
    cuts: Vec<f64>,
    touched: Vec<(u32, f64)>,
}

/// Integer sums per cell: weighted track length (2⁻¹⁶ m) and its square per photon (2⁻³² m²);
/// per spatial cell the square of a photon's sum over its time cells — the variance of the
/// cell's sum, which the GPU's sampled estimator forms by batch means instead (sampled.cu
/// `WD_SAMP_REP`; then no cells' squares, [`Histogram::cell_squares`]). Integers add in any
/// order to the same total: the tables do not depend on the thread count.
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    pub sum: Vec<u64>,
    pub sumsq: Vec<u128>,
    pub spatial_sumsq: Vec<u128>,
    /// The weighted length inside the grid from the shells' intersections (2⁻¹⁶ m): the sums
    /// must add up to it.
    pub inside: u64,
    pub segments: u64,
    /// The largest |Σ pieces − length inside| of one photon [m], in f64 before the fixed point.
    pub worst_photon: f64,
    /// Additions of a photon's sum to a cell: each rounds by at most half a unit (2⁻¹⁷ m).
    pub entries: u64,
    pub absorbed: u64,
    pub escaped: u64,
    /// Photons that left at least one piece in the grid.
    pub tabulated: u64,
    /// The sampled estimator's points in the grid (0 for the exact one).
    pub points: u64,
    /// `sumsq` holds the cells' squares. False where only the spatial cells' variance is formed
    /// (the GPU's batch means, sampled.cu `WD_SAMP_REP`): the tables do not use the cells'
    /// squares, and [`Histogram::cell_variances`] then estimates them from the spatial cell's.
    pub cell_squares: bool,
}

impl Histogram {
    fn new(cells: usize, spatial: usize) -> Self {
        Self {
            sum: vec![0; cells],
            sumsq: vec![0; cells],
            spatial_sumsq: vec![0; spatial],
            inside: 0,
            segments: 0,
            entries: 0,
            worst_photon: 0.0,
            absorbed: 0,
            escaped: 0,
            tabulated: 0,
            points: 0,
            cell_squares: true,
        }
    }

    /// A sampled photon's closed run ([`sampled::Record`]), in the fixed point.
    fn record(&mut self, r: sampled::Record) {
        match r {
            sampled::Record::Cell(c, x) => {
                self.sum[c as usize] += (x * SUM_UNIT).round() as u64;
                self.sumsq[c as usize] += (x * x * SQ_UNIT).round() as u128;
            }
            sampled::Record::Spatial(c, x) => self.spatial_sumsq[c as usize] += (x * x * SQ_UNIT).round() as u128,
        }
    }

    fn add(&mut self, o: &Histogram) {
        for (a, b) in self.sum.iter_mut().zip(&o.sum) {
            *a += b;
        }
        for (a, b) in self.sumsq.iter_mut().zip(&o.sumsq) {
            *a += b;
        }
        for (a, b) in self.spatial_sumsq.iter_mut().zip(&o.spatial_sumsq) {
            *a += b;
        }
        self.inside += o.inside;
        self.segments += o.segments;
        self.entries += o.entries;
        self.worst_photon = self.worst_photon.max(o.worst_photon);
        self.absorbed += o.absorbed;
        self.escaped += o.escaped;
        self.tabulated += o.tabulated;
        self.points += o.points;
        self.cell_squares &= o.cell_squares;
    }

    /// Each cell's variance [m²]: its squares, or without them ([`Histogram::cell_squares`])
    /// its share of its spatial cell's, x_c·V_sp/X_sp — as if each photon's light in the
    /// spatial cell fell in one of its cells, which overstates a cell's variance where a photon
    /// spreads over several (a χ² with it is smaller, never larger, than with the squares).
    #[must_use]
    pub fn cell_variances(&self, time_cells: usize) -> Vec<f64> {
        if self.cell_squares {
            return self.sumsq.iter().map(|&q| q as f64 / SQ_UNIT).collect();
        }
        let tc = time_cells.max(1);
        let mut out = vec![0.0; self.sum.len()];
        for (sp, chunk) in out.chunks_mut(tc).enumerate() {
            let sums = &self.sum[sp * tc..sp * tc + chunk.len()];
            let total: u64 = sums.iter().sum();
            let v = self.spatial_sumsq.get(sp).map_or(0.0, |&q| q as f64 / SQ_UNIT);
            if total > 0 {
                for (o, &x) in chunk.iter_mut().zip(sums) {
                    *o = v * x as f64 / total as f64;
                }
            }
        }
        out
    }

    /// A photon's pieces, merged per cell, added: x to the sum, x² to the squares.
    fn photon_done(&mut self, touched: &mut [(u32, f64)], time_cells: u32) {
        if touched.is_empty() {
            return;
        }
        self.tabulated += 1;
        touched.sort_by_key(|t| t.0);
        let mut i = 0;
        let (mut spatial, mut spatial_x) = (u32::MAX, 0.0f64);
        while i < touched.len() {
            let cell = touched[i].0;
            let mut x = 0.0;
            while i < touched.len() && touched[i].0 == cell {
                x += touched[i].1;
                i += 1;
            }
            self.entries += 1;
            self.sum[cell as usize] += (x * SUM_UNIT).round() as u64;
            self.sumsq[cell as usize] += (x * x * SQ_UNIT).round() as u128;
            let sp = cell / time_cells;
            if sp != spatial {
                if spatial != u32::MAX {
                    self.spatial_sumsq[spatial as usize] += (spatial_x * spatial_x * SQ_UNIT).round() as u128;
                }
                (spatial, spatial_x) = (sp, 0.0);
            }
            spatial_x += x;
        }
        self.spatial_sumsq[spatial as usize] += (spatial_x * spatial_x * SQ_UNIT).round() as u128;
    }

    /// The total weighted length in the cells [m].
    #[must_use]
    pub fn total_length(&self) -> f64 {
        self.sum.iter().map(|&s| s as f64).sum::<f64>() / SUM_UNIT
    }

    /// The most the cells' total can differ from [`Histogram::inside_length`] by the fixed
    /// point's rounding [m]: half a unit per addition and per photon.
    #[must_use]
    pub fn rounding_bound(&self, photons: u64) -> f64 {
        0.5 * (self.entries + photons) as f64 / SUM_UNIT
    }

    /// The weighted length inside the grid from the shells [m].
    #[must_use]
    pub fn inside_length(&self) -> f64 {
        self.inside as f64 / SUM_UNIT
    }
}

/// A finished tabulation.
#[derive(Clone, Debug)]
pub struct Tables {
    /// The sum over the sources (statistics), and each source's histogram.
    pub hist: Histogram,
    pub per_source: Vec<Histogram>,
    /// The estimator that made them.
    pub estimator: Estimator,
    /// (zenith, depth) of each source, zenith slowest; whether each is a table axis.
    pub sources: Vec<(f64, f64)>,
    pub axes: [bool; 2],
    pub binning: Binning,
    /// Photons per source.
    pub photons: u64,
    /// Propagated photons per GeV (cascade) or per metre (muon segment).
    pub photons_per_unit: f64,
    pub ngroup: f64,
    pub source: SourceKind,
    settings: serde_json::Value,
    /// Worker threads and seconds (run facts: `run.json`).
    pub threads: usize,
    pub seconds: f64,
    /// Where it ran, in words (`cpu (8 threads)`, `cuda:0 NVIDIA H100 …`), the seconds in GPU
    /// kernels (0 on the CPU) and the photons the host tabulated for the GPU because they
    /// overflowed the kernel's scratch (run facts).
    pub device: String,
    pub kernel_seconds: f64,
    pub overflowed: u64,
}

/// The run facts of a tabulation.
struct Ran {
    estimator: Estimator,
    device: String,
    threads: usize,
    seconds: f64,
    kernel_seconds: f64,
    overflowed: u64,
}

/// A spatial cell's numbers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cell {
    /// Centres: radial, azimuth, polar.
    pub center: [f64; 3],
    /// Fluence per propagated photon [m⁻²] (weighted track length / volume / photons).
    pub fluence: f64,
    /// Effective number of photons: (Σx)²/Σx² over photons.
    pub n_eff: f64,
    /// Mean PE on a nominal DOM (RDE 1, the ice's cfg efficiency) centred here, per GeV or per
    /// metre of muon track.
    pub pe: f64,
}

impl Tables {
    fn shape(&self) -> [usize; 3] {
        let b = &self.binning;
        [b.radial.len() - 1, b.azimuth.len() - 1, b.polar.len() - 1]
    }

    /// The first source's spatial cells in C order (radial slowest).
    #[must_use]
    pub fn cells(&self) -> Vec<Cell> {
        self.cells_of(0)
    }

    /// Source `src`'s spatial cells in C order (radial slowest).
    #[must_use]
    pub fn cells_of(&self, src: usize) -> Vec<Cell> {
        let h = &self.per_source[src];
        let b = &self.binning;
        let [nr, na, np] = self.shape();
        let tc = b.time_cells() as usize;
        let mid = |e: &[f64], i: usize| 0.5 * (e[i] + e[i + 1]);
        let area = std::f64::consts::PI * crate::geometry::DOM_RADIUS * crate::geometry::DOM_RADIUS;
        let mut out = Vec::with_capacity(nr * na * np);
        for i in 0..nr {
            for j in 0..na {
                for k in 0..np {
                    let sp = (i * na + j) * np + k;
                    let s: u64 = h.sum[sp * tc..(sp + 1) * tc].iter().sum();
                    let x = s as f64 / SUM_UNIT;
                    let sq = h.spatial_sumsq[sp] as f64 / SQ_UNIT;
                    let fluence = x / (b.volume(i, j, k) * self.photons as f64);
                    out.push(Cell {
                        center: [mid(&b.radial, i), mid(&b.azimuth, j), mid(&b.polar, k)],
                        fluence,
                        n_eff: if sq > 0.0 { x * x / sq } else { 0.0 },
                        pe: fluence * area * self.photons_per_unit,
                    });
                }
            }
        }
        out
    }

    /// The photonics reference yield the amplitude is divided by: photons per GeV (cascade) or
    /// per metre (muon segment).
    #[must_use]
    pub fn reference_yield(&self) -> f64 {
        match self.source {
            SourceKind::Cascade => PHOTONICS_PHOTONS_PER_M * PHOTONICS_M_PER_GEV,
            SourceKind::MuonSegment => PHOTONICS_PHOTONS_PER_M,
        }
    }

    fn axis_names(&self) -> [&'static str; 3] {
        match self.source {
            SourceKind::Cascade => ["r", "azimuth", "cos_theta"],
            SourceKind::MuonSegment => ["rho", "azimuth", "dz"],
        }
    }

    fn metadata(&self, t: &mut Table) {
        t.meta("warpdrive.version", env!("CARGO_PKG_VERSION"));
        t.meta("warpdrive.tabulate", self.settings.to_string());
        t.meta("NGROUP", format!("{}", self.ngroup));
        t.meta("GEOMETRY", if self.source == SourceKind::Cascade { "1" } else { "2" });
    }

    /// The source axes' columns of a table (photonics' order: after the frame's axes and the
    /// delay, the source zenith, then its depth), each row's source `k` repeated `n` times.
    fn source_columns(&self, t: &mut Table, per_source: usize) {
        for (axis, name) in [(0, "zenith"), (1, "depth")] {
            if self.axes[axis] {
                let v = self
                    .sources
                    .iter()
                    .flat_map(|s| std::iter::repeat_n(if axis == 0 { s.0 } else { s.1 }, per_source))
                    .collect();
                t.push(name, Column::F64(v));
            }
        }
    }

    /// `amplitude.parquet`: one row per spatial bin (and source), the centres (and the source's
    /// `zenith`, `depth` when there are several), `value` = ln(mean PE / reference yield) and
    /// `weight` = the effective photon count (1/Var(ln A)); empty bins value 0, weight 0.
    #[must_use]
    pub fn amplitude_table(&self) -> Table {
        let cells: Vec<Cell> = (0..self.sources.len()).flat_map(|k| self.cells_of(k)).collect();
        let y = self.reference_yield();
        let mut t = Table::default();
        let names = self.axis_names();
        for (d, name) in names.iter().enumerate() {
            t.push(name, Column::F64(cells.iter().map(|c| c.center[d]).collect()));
        }
        self.source_columns(&mut t, cells.len() / self.sources.len());
        t.push(
            "value",
            Column::F64(cells.iter().map(|c| if c.pe > 0.0 { (c.pe / y).ln() } else { 0.0 }).collect()),
        );
        t.push(
            "weight",
            Column::F64(cells.iter().map(|c| if c.pe > 0.0 { c.n_eff } else { 0.0 }).collect()),
        );
        self.metadata(&mut t);
        t
    }

    /// `time.parquet` (with delay bins): per spatial bin, delay bin (and source), `delay` = the
    /// bin's upper edge [ns], `value` = the fraction of the bin's light arrived by then (the CDF,
    /// light before the first edge included, after the last in the total), `weight` =
    /// N_eff / (F(1 − F) + 1/N_eff) (binomial), 0 in empty bins.
    #[must_use]
    pub fn time_table(&self) -> Option<Table> {
        let b = &self.binning;
        if b.delay.is_empty() {
            return None;
        }
        let tc = b.time_cells() as usize;
        let nd = b.delay.len() - 1;
        let mut cols: [Vec<f64>; 6] = Default::default();
        let mut per_source = 0;
        for (k, h) in self.per_source.iter().enumerate() {
            let cells = self.cells_of(k);
            per_source = cells.len() * nd;
            for (sp, cell) in cells.iter().enumerate() {
                let sums = &h.sum[sp * tc..(sp + 1) * tc];
                let total: u64 = sums.iter().sum();
                let mut acc = sums[0];
                for t in 0..nd {
                    acc += sums[t + 1];
                    let f = if total > 0 { acc as f64 / total as f64 } else { 0.0 };
                    let n = cell.n_eff;
                    cols[0].push(cell.center[0]);
                    cols[1].push(cell.center[1]);
                    cols[2].push(cell.center[2]);
                    cols[3].push(b.delay[t + 1]);
                    cols[4].push(f);
                    cols[5].push(if total > 0 && n > 0.0 { n / (f * (1.0 - f) + 1.0 / n) } else { 0.0 });
                }
            }
        }
        let mut t = Table::default();
        let [a, b2, c] = self.axis_names();
        let [c0, c1, c2, c3, c4, c5] = cols;
        for (name, col) in [(a, c0), (b2, c1), (c, c2), ("delay", c3)] {
            t.push(name, Column::F64(col));
        }
        self.source_columns(&mut t, per_source);
        t.push("value", Column::F64(c4));
        t.push("weight", Column::F64(c5));
        self.metadata(&mut t);
        Some(t)
    }

    /// `summary.json`: the request and what the photons did — only what the inputs and the
    /// seed determine (the same bytes for any thread count).
    #[must_use]
    pub fn summary_json(&self) -> String {
        let h = &self.hist;
        let exact = self.estimator == Estimator::Exact;
        let v = serde_json::json!({
            "settings": self.settings,
            "photons_propagated": self.photons * self.sources.len() as u64,
            "photons_per_source": self.photons,
            "sources": self.sources.iter().zip(&self.per_source).map(|(s, p)| serde_json::json!({
                "zenith_deg": s.0,
                "depth_m": s.1,
                "photons_tabulated": p.tabulated,
                "photons_absorbed": p.absorbed,
                "photons_escaped": p.escaped,
                "weighted_length_tabulated_m": p.total_length(),
            })).collect::<Vec<_>>(),
            "photons_tabulated": h.tabulated,
            "photons_absorbed": h.absorbed,
            "photons_escaped": h.escaped,
            "segments": h.segments,
            "weighted_length_tabulated_m": h.total_length(),
            // The sampled estimator's cells equal the length inside only in expectation: it
            // does not compute the latter.
            "weighted_length_inside_m": if exact { Some(h.inside_length()) } else { None },
            "largest_photon_length_mismatch_m": if exact { Some(h.worst_photon) } else { None },
            "estimator": self.estimator.describe(),
            "sample_points": h.points,
            // Additions to the cells' sums, each rounded once: a photon's pieces or runs, or
            // (the GPU's batch means) its points.
            "runs_added": h.entries,
            "spatial_variance": if h.cell_squares {
                "per-photon squares (sums over a photon's pieces or runs)"
            } else {
                "batch means over replicas by photon id (GPU sampled estimator; no per-cell squares)"
            },
            "photons_per_unit": self.photons_per_unit,
            "unit": if self.source == SourceKind::Cascade { "GeV" } else { "m of muon track" },
            "reference_yield": self.reference_yield(),
            "ngroup": self.ngroup,
            "amplitude": "value = ln(mean PE on a nominal DOM per unit / reference_yield); weight = effective photons",
            "time": "value = CDF of the delay at the bin's upper edge (column delay); weight = N_eff/(F(1-F)+1/N_eff)",
        });
        serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
    }

    /// Write the tables, summary.json and run.json into the staged directory and commit it.
    pub fn save(&self, out: Staged, command: &str) -> Result<()> {
        let dir = out.path().to_path_buf();
        let fail = |what: &str, e: &dyn std::fmt::Display| Error::Failed(format!("{}: {what}: {e}", out.dest().display()));
        self.amplitude_table()
            .write_parquet(&dir.join("amplitude.parquet"))
            .map_err(|e| fail("amplitude.parquet", &e))?;
        if let Some(t) = self.time_table() {
            t.write_parquet(&dir.join("time.parquet")).map_err(|e| fail("time.parquet", &e))?;
        }
        std::fs::write(dir.join("summary.json"), self.summary_json()).map_err(|e| fail("summary.json", &e))?;
        let run = serde_json::json!({
            "command": command,
            "device": self.device,
            "threads": self.threads,
            "seconds": self.seconds,
            "kernel_seconds": self.kernel_seconds,
            "photons_tabulated_by_the_host_for_the_gpu": self.overflowed,
            "photons_per_second": (self.photons * self.sources.len() as u64) as f64 / self.seconds.max(1e-9),
        });
        std::fs::write(dir.join("run.json"), serde_json::to_string_pretty(&run).unwrap_or_default() + "\n")
            .map_err(|e| fail("run.json", &e))?;
        out.commit()?;
        Ok(())
    }
}

/// Stage the output directory before the work (the output discipline).
pub fn prepare_output(path: &Path, force: bool, inputs: &[PathBuf]) -> Result<Staged> {
    warpdrive_core::engine::prepare_dir(path, force, inputs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--no-birefringence` rebuilds the medium without the diffusion, its s_eff left in the
    /// ordinary scattering, on the detector's own wavelength slices; with it the medium is the
    /// detector's. (spice_bfr-v2; skipped without the shared data.)
    #[test]
    fn birefringence_switch_rebuilds_the_medium_on_the_same_slices() {
        let Some(data) = warpdrive_core::data::test_data_dir(env!("CARGO_MANIFEST_DIR")) else {
            return;
        };
        let o = TabulateOptions {
            ice: Some(data.join("ice/spice_bfr-v2")),
            depth: vec![2000.0],
            ..Default::default()
        };
        let on = Tabulate::new(&o).unwrap();
        let off = Tabulate::new(&TabulateOptions {
            birefringence: false,
            ..o.clone()
        })
        .unwrap();
        assert!(on.medium.bfr.is_some() && off.medium.bfr.is_none());
        for (a, b) in on.medium.slices.iter().zip(&off.medium.slices) {
            assert_eq!((a.wavelength, a.lo, a.hi), (b.wavelength, b.lo, b.hi));
        }
        // The scattering the diffusion replaced is back: no less ordinary scattering anywhere,
        // more where the diffusion acts.
        let pairs = || on.medium.sca.iter().zip(&off.medium.sca);
        assert!(pairs().all(|(a, b)| b >= a) && pairs().filter(|(a, b)| b > a).count() > on.medium.sca.len() / 2);
        assert_eq!(on.medium.abs, off.medium.abs);
        assert!(off.description.iter().any(|d| d.starts_with("birefringence: switched off")));
        assert!(on.description.iter().any(|d| d.starts_with("birefringence: s_eff")));
        // Both run.
        let ctl = Control::new().device(warpdrive_core::engine::Device::Cpu).threads(Some(2));
        let r = Tabulate::new(&TabulateOptions {
            photons: 500,
            birefringence: false,
            ..o.clone()
        })
        .unwrap()
        .run(&ctl)
        .unwrap();
        assert_eq!(r.hist.tabulated, 500);
        let r = Tabulate::new(&TabulateOptions { photons: 500, ..o }).unwrap().run(&ctl).unwrap();
        assert!(r.hist.worst_photon < 1e-9);
    }
}
