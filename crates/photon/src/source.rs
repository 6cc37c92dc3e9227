//! Light sources (spec §2.3, §3.4, §3.6): f2k `TR` lines (EM and hadronic cascades, muon
//! segments, raw photons), CLSim-style steps, flashers and isotropic point sources; their photon
//! yields, and the emission of one photon (position, direction, time, wavelength slice).

use std::path::Path;
use warpdrive_core::error::parse_f64;
use warpdrive_core::{InputError, RandomStream};

use crate::medium::{Medium, WNUM};
use crate::optics::C_VACUUM;
use crate::scatter::rotate;

/// Photons per metre for the nominal IceCube DOM (Cherenkov × acceptance folded), PPC `dppm`.
pub const DPPM: f64 = 2450.08;
/// Ice density ratio in the yield parameterisations, 0.910/0.9216 (spec §3.4).
const DENSITY: f64 = 0.910 / 0.9216;
/// Radiation length of ice [m] (spec §3.4).
const L_RAD: f64 = 0.39652 * DENSITY;
/// Cascade angular distribution of charged tracks: ξ = 1 − cos, pdf ∝ ξ^(a−1) e^(−b ξ^a) (spec §3.4).
pub(crate) const ANG_A: f64 = 0.39;
pub(crate) const ANG_B: f64 = 2.61;

/// The particle species PPC distinguishes (spec §2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Particle {
    /// amu, amu+, amu- (bare muon segment, pre-sliced).
    Muon,
    /// e, delta, brems, epair (type 11) and e- (12): electron-like cascade profile.
    Electron,
    /// e+ (13).
    Positron,
    /// hadr, munu (101): hadronic cascade, π⁺ parameters.
    Hadron,
    /// ph: `energy` photons inserted verbatim.
    Photons,
}

impl Particle {
    /// The particle names of f2k `TR` lines (spec §2.3).
    pub const F2K_NAMES: [&'static str; 12] = [
        "amu", "amu+", "amu-", "e", "e-", "e+", "delta", "brems", "epair", "hadr", "munu", "ph",
    ];

    /// An f2k particle name (spec §2.3).
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "amu" | "amu+" | "amu-" => Particle::Muon,
            "e" | "delta" | "brems" | "epair" | "e-" => Particle::Electron,
            "e+" => Particle::Positron,
            "hadr" | "munu" => Particle::Hadron,
            "ph" => Particle::Photons,
            _ => return None,
        })
    }

    /// PDG-style names accepted for typed sources besides the f2k names, and what they are
    /// simulated as (docs/photon.md has the table): PPC's f2k reader knows only the kinds of
    /// [`Particle`], so γ takes the e⁻ cascade profile and π⁻ the π⁺ hadron parameters (PPC's
    /// library has rows of their own for them, photon-ppc-phase2.md §8, not used here).
    pub const PDG_NAMES: [(&'static str, i64, Particle); 7] = [
        ("e-", 11, Particle::Electron),
        ("e+", -11, Particle::Positron),
        ("gamma", 22, Particle::Electron),
        ("mu-", 13, Particle::Muon),
        ("mu+", -13, Particle::Muon),
        ("pi+", 211, Particle::Hadron),
        ("pi-", -211, Particle::Hadron),
    ];

    /// An f2k name or a PDG-style name of [`Particle::PDG_NAMES`].
    pub fn from_alias(name: &str) -> Option<Self> {
        Self::from_name(name).or_else(|| Self::PDG_NAMES.iter().find(|(n, _, _)| *n == name).map(|(_, _, p)| *p))
    }

    /// A PDG Monte Carlo particle code of [`Particle::PDG_NAMES`] (11 = e⁻, −11 = e⁺, 22 = γ,
    /// ±13 = μ∓, ±211 = π±).
    pub fn from_pdg(code: i64) -> Option<Self> {
        Self::PDG_NAMES.iter().find(|(_, c, _)| *c == code).map(|(_, _, p)| *p)
    }

    /// The f2k name PPC writes for this kind.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Particle::Muon => "amu",
            Particle::Electron => "e",
            Particle::Positron => "e+",
            Particle::Hadron => "hadr",
            Particle::Photons => "ph",
        }
    }
}

/// How photons of a source are emitted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Emission {
    /// Cascade: position along the axis from a Γ(a)·b profile, direction from the charged-track
    /// angular distribution, then the Cherenkov cone.
    Cascade { profile_a: f64, profile_b: f64 },
    /// Track of `length` with speed β; with probability `f_direct` the photon comes from the
    /// track itself (Cherenkov cone about the axis), else from secondaries (cascade angles).
    Track { length: f64, beta: f64, f_direct: f64 },
    /// Isotropic point source.
    Isotropic,
    /// A flasher's LEDs on the flasher DOM, whose centre is the source position
    /// (photon-ppc-phase2.md §6, photon.md §3.6).
    Flasher(Led),
}

/// A flasher DOM's LEDs as PPC's `flset` configures them (photon-ppc-phase2.md §6).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Led {
    /// PPC's `ka` (from FWID): > 999 the lab-measured beam profile with the DOM's own geometry
    /// (and above 1050 a cable at azimuth ka − 1080°); > 0 a 2-D Gaussian of width² `ka`
    /// [rad²]; −1 isotropic; other negative values a linear cone; 0 the bare LED axis.
    pub ka: f64,
    /// FLDR: below 0 any azimuth (a cylindrically symmetric ring); else n = ⌊fldr/360⌋ + 1 LEDs
    /// at fldr + k·360/n degrees (PPC's integer division), one chosen per photon.
    pub fldr: f64,
    /// LED elevation [rad] (−0.2° horizontal, 48.1° tilted, + FZCR; or ELEV).
    pub up: f64,
    /// Tilted LEDs (`str` < 0): the lab profile's tilted-LED constants.
    pub tilted: bool,
    /// One LED of a tilted DOM (FTLT or cx.dat, lab profile only): its position relative to the
    /// DOM centre after the tilt; its axis is the source direction.
    pub fixed: Option<[f64; 3]>,
}

/// LED height above and distance from the DOM axis [m], the equatorial band |z| < FLB [m]
/// through which no light leaves (PPC `flset`/`propagate`, photon-ppc-phase2.md §6).
pub const FLZ: f32 = 0.077_35;
pub const FLR: f32 = 0.119 - 0.008;
pub const FLB: f32 = 0.033_96;
/// The DOM radius PPC's flasher geometry uses [m].
const OMR: f32 = crate::geometry::DOM_RADIUS as f32;
/// Cable radius [m], its axis at OMR + this from the DOM centre (FWID > 1050).
const CABLE_R: f32 = 0.023;

impl Led {
    /// Lab-measured profile (FWID > 999).
    #[must_use]
    pub fn lab(&self) -> bool {
        self.ka > 999.0
    }

    /// Azimuth [rad] of the LED of photon with uniform `u` (PPC: ⌊u·n⌋-th LED, integer degrees
    /// step 360/n; a uniform azimuth when FLDR < 0).
    #[must_use]
    pub fn azimuth(fldr: f32, u: f32) -> f32 {
        if fldr < 0.0 {
            return u * std::f32::consts::TAU;
        }
        let n = (fldr / 360.0).floor() as i32 + 1;
        let k = (u * n as f32).floor() as i32;
        (fldr + (k * 360 / n) as f32) * (std::f32::consts::PI / 180.0)
    }

    /// ξ = 1 − cos of the photon's angle to the LED axis (PPC `propagate`, flasher branch).
    /// Lab profile: a mixture of a half-Gaussian of width s1 (fraction C1), an exponential of
    /// scale s2 (C2 − C1) and a linear cone (the rest), constants per LED type.
    pub fn beam_xi<R: EmitDraws>(ka: f32, tilted: bool, rng: &mut R) -> f32 {
        if ka > 999.0 {
            let (s1, s2, c1, c2) = if tilted {
                (0.018_560_3, 0.062_448_1, 0.553_192, 0.974_129)
            } else {
                (0.019_624_2, 0.075_027_8, 0.606_833, 0.960_863)
            };
            let u = rng.uniform();
            let mut xi = if u < c1 {
                // Box–Muller's first normal (birefringence::box_muller).
                let (u1, u2) = (rng.uniform(), rng.uniform());
                let g = (-2.0 * rng.ln(u1)).sqrt() * rng.sincos_turn(u2).1;
                s1 * g.abs()
            } else if u < c2 {
                let u = rng.uniform();
                -s2 * rng.ln(u)
            } else {
                2.0
            };
            if xi >= 2.0 {
                xi = 2.0 * (1.0 - rng.uniform().sqrt());
            }
            xi
        } else if ka > 0.0 {
            // ξ = min(−ka·ln(1 − (1 − u)(1 − e^(−2/ka))), 2): 2-D Gaussian beam (photon.md §3.6).
            let u = rng.uniform();
            (-ka * rng.ln(1.0 - (1.0 - u) * (1.0 - rng.exp(-2.0 / ka)))).min(2.0)
        } else if ka == -1.0 {
            2.0 * (1.0 - rng.uniform())
        } else {
            2.0 * (1.0 - rng.uniform().sqrt())
        }
    }
}

/// One light source with a definite photon count (after the Poisson draw).
#[derive(Clone, Debug, PartialEq)]
pub struct Source {
    /// Event number (f2k `EM` line) and index of the source within the event.
    pub event: i32,
    pub index: u32,
    pub pos: [f64; 3],
    pub dir: [f64; 3],
    pub time: f64,
    pub emission: Emission,
    /// Mean photon count before the draw (for reporting) and the count itself.
    pub mean_photons: f64,
    pub photons: u64,
    /// A flasher's own DOM (index into the geometry; PPC's `ofla`, cleared by OFLA=0): not
    /// oversized, it absorbs the photons that come back to it without a hit, and a photon's first
    /// segment, which starts on its surface, does not meet it.
    pub own_dom: Option<u32>,
}

/// Mean propagated photons per GeV-equivalent metre: ppm/ovr, with
/// ppm = efficiency × dppm × mas × RDE_max (spec §3.4) and ovr = xR².
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Yield {
    pub ppm: f64,
    pub oversize: f64,
}

impl Yield {
    #[must_use]
    pub fn per_metre(&self) -> f64 {
        self.ppm / (self.oversize * self.oversize)
    }
}

/// EM cascade light in metres of bare-track equivalent: 5.321·0.910/0.9216·E (E in GeV).
#[must_use]
pub fn em_cascade_length(energy: f64) -> f64 {
    5.321 * DENSITY * energy
}

/// Longitudinal Γ-profile shape a(E) (spec §3.4).
#[must_use]
pub fn profile_a(p: Particle, energy: f64) -> f64 {
    let (p1, p2, _) = profile_params(p);
    p1 + p2 * energy.max(MUON_MASS_GEV).ln()
}

/// Profile length scale b = L_rad/p3 [m] (photon-ppc-phase2.md §8).
#[must_use]
pub fn profile_b(p: Particle) -> f64 {
    L_RAD / profile_params(p).2
}

/// m_μ [GeV]: PPC takes ln E of max(m_μ, E) in the profile (photon-ppc-phase2.md §8).
pub const MUON_MASS_GEV: f64 = 0.105_658_389;

/// (p1, p2, p3) of the longitudinal profile a = p1 + p2·ln E, b = L_rad/p3, per species
/// (photon-ppc-phase2.md §8 table: e⁻ for types 11/12, e⁺ for 13, π⁺ for hadr/munu = 101).
/// Hadronic cascades are shorter-shaped and longer-scaled than EM ones: using the EM values for
/// them put DOM 79-6 of the 20 TeV `hadr` check 25 % below PPC (issue #14).
#[must_use]
pub fn profile_params(p: Particle) -> (f64, f64, f64) {
    match p {
        Particle::Positron => (2.00035, 0.63190, 0.63008),
        Particle::Hadron => (1.583_572_92, 0.418_868_07, 0.338_331_16),
        _ => (2.01849, 0.63176, 0.63207),
    }
}

/// Hadronic light fraction F = 1 − (E/E0)^(−m)(1 − f0) and its spread σ_F = F·rms0·(ln E)^(−γ)
/// (π⁺ parameters of spec §3.4).
#[must_use]
pub fn hadron_fraction(energy: f64) -> (f64, f64) {
    let (e0, m, f0, rms0, gamma) = (0.187_916_78, 0.162_675_29, 0.309_741_23, 0.958_995_51, 1.355_895_41);
    // e = max(2.71828183, E) (photon-ppc-phase2.md §8), so ln e ≥ 1.
    let e = energy.max(std::f64::consts::E); // PPC: max(2.71828183, E), so ln e ≥ 1
    let f = 1.0 - (e / e0).powf(-m) * (1.0 - f0);
    (f, f * rms0 * e.ln().powf(-gamma))
}

/// PPC redraws the hadronic light fraction f until 0 ≤ f ≤ this (photon-ppc-phase2.md §8).
pub const HADRON_FRACTION_MAX: f64 = 1.1;

/// Muon segment light: L·(1 + max(0, 0.1880 + 0.0206 ln E)·0.910/0.9216), and the fraction of it
/// from the bare muon, 1/(1 + extra) (spec §3.4).
#[must_use]
pub fn muon_length(length: f64, energy: f64) -> (f64, f64) {
    let extra = (0.1880 + 0.0206 * energy.max(1e-3).ln()).max(0.0) * DENSITY;
    (length * (1.0 + extra), 1.0 / (1.0 + extra))
}

/// Unit direction from f2k zenith and azimuth [deg]: θ = 180° − zenith, φ = azimuth + 180°.
#[must_use]
pub fn f2k_direction(zenith_deg: f64, azimuth_deg: f64) -> [f64; 3] {
    let (t, p) = ((180.0 - zenith_deg).to_radians(), (azimuth_deg + 180.0).to_radians());
    [t.sin() * p.cos(), t.sin() * p.sin(), t.cos()]
}

/// Largest |coordinate| accepted for a source position [m].
pub const MAX_COORD: f64 = 1.0e5;

/// A source request before the Poisson draw.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceSpec {
    pub event: i32,
    pub pos: [f64; 3],
    pub dir: [f64; 3],
    pub time: f64,
    pub emission: Emission,
    /// Mean photon count; exact (no Poisson draw) when `exact`.
    pub mean_photons: f64,
    pub exact: bool,
    /// Hadronic cascades: relative spread of the light yield (σ_F / F).
    pub yield_sigma: f64,
    /// Hadronic cascades: the largest drawn f/F (PPC's f ≤ 1.1, i.e. 1.1/F); ∞ otherwise.
    pub yield_cap: f64,
    pub own_dom: Option<u32>,
}

/// A light source as typed values: the fields of an f2k `TR` line (spec §2.3) without the text.
/// The f2k reader, the default cascade and Python's arrays all build these, and
/// [`SourceSpec::new`] checks and turns them into source requests, so every front end applies
/// the same rules.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Primary {
    pub particle: Particle,
    /// Position [m], IceCube coordinates (z = 0 at the detector centre).
    pub position: [f64; 3],
    /// f2k zenith and azimuth [deg]: where the particle comes from (zenith 180° moves up).
    pub zenith: f64,
    pub azimuth: f64,
    /// Segment length [m]: muon segments need one; 0 elsewhere.
    pub length: f64,
    /// Energy [GeV]; for [`Particle::Photons`] the photon count.
    pub energy: f64,
    /// Time [ns].
    pub time: f64,
}

impl Primary {
    /// A cascade (`Electron`, `Positron` or `Hadron`) of `energy` GeV at `position`, coming
    /// from f2k `direction` = [zenith, azimuth] in degrees, at `time` ns.
    #[must_use]
    pub fn cascade(particle: Particle, position: [f64; 3], direction: [f64; 2], energy: f64, time: f64) -> Self {
        Self {
            particle,
            position,
            zenith: direction[0],
            azimuth: direction[1],
            length: 0.0,
            energy,
            time,
        }
    }

    /// A bare muon segment of `length` m starting at `position` (pre-sliced, as PPC's `amu`).
    #[must_use]
    pub fn track(position: [f64; 3], direction: [f64; 2], length: f64, energy: f64, time: f64) -> Self {
        Self {
            particle: Particle::Muon,
            position,
            zenith: direction[0],
            azimuth: direction[1],
            length,
            energy,
            time,
        }
    }

    /// The default source of `warpdrive photon`: an EM cascade of `energy` GeV at the detector
    /// centre, moving up (f2k zenith 180°).
    #[must_use]
    pub fn default_cascade(energy: f64) -> Self {
        Self::cascade(Particle::Electron, [0.0; 3], [180.0, 0.0], energy, 0.0)
    }
}

impl std::fmt::Display for Primary {
    /// One line for run descriptions: `e 1000 GeV at (0, 0, -400) m, zenith 180°, azimuth 0°, t 0 ns`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [x, y, z] = self.position;
        match self.particle {
            Particle::Photons => write!(f, "{} photons", self.energy)?,
            p => write!(f, "{} {} GeV", p.name(), self.energy)?,
        }
        write!(f, " at ({x}, {y}, {z}) m, zenith {}°, azimuth {}°", self.zenith, self.azimuth)?;
        if self.particle == Particle::Muon {
            write!(f, ", length {} m", self.length)?;
        }
        write!(f, ", t {} ns", self.time)
    }
}

/// A source value that cannot be used: which field and why. The f2k reader adds the file and
/// line, the engine the parameter's name as the front end spells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// The f2k field name (`x`, `zenith`, `energy`, …).
    pub field: &'static str,
    pub message: String,
}

impl FieldError {
    fn new(field: &'static str, message: impl Into<String>) -> Self {
        Self {
            field,
            message: message.into(),
        }
    }
}

impl SourceSpec {
    /// Check a typed source and compute its photon budget (spec §3.4) for a detector of yield
    /// `y`; `event` keys its hits. All numbers must be finite, the position within
    /// ±[`MAX_COORD`], the energy in (0, [`MAX_ENERGY_GEV`]], a muon segment's length positive,
    /// and the photon count within [`MAX_PHOTONS_PER_SOURCE`].
    pub fn new(p: &Primary, event: i32, y: &Yield) -> Result<Self, FieldError> {
        let fields = [
            ("x", p.position[0]),
            ("y", p.position[1]),
            ("z", p.position[2]),
            ("zenith", p.zenith),
            ("azimuth", p.azimuth),
            ("length", p.length),
            ("energy", p.energy),
            ("time", p.time),
        ];
        for (field, v) in fields {
            if !v.is_finite() {
                return Err(FieldError::new(field, format!("{v}: must be a finite number")));
            }
        }
        for (field, v) in &fields[..3] {
            if v.abs() > MAX_COORD {
                return Err(FieldError::new(field, format!("{v} m is out of range (|{field}| ≤ {MAX_COORD} m)")));
            }
        }
        let energy = p.energy;
        if energy <= 0.0 {
            return Err(FieldError::new("energy", format!("{energy}: must be positive (zero photons)")));
        }
        if energy > MAX_ENERGY_GEV {
            return Err(FieldError::new(
                "energy",
                format!("{energy:e} GeV: above {MAX_ENERGY_GEV:e} GeV (10²² eV, beyond any observed particle); check the unit (GeV)"),
            ));
        }
        let mut spec = SourceSpec {
            event,
            pos: p.position,
            dir: f2k_direction(p.zenith, p.azimuth),
            time: p.time,
            emission: Emission::Isotropic,
            mean_photons: 0.0,
            exact: false,
            yield_sigma: 0.0,
            yield_cap: f64::INFINITY,
            own_dom: None,
        };
        match p.particle {
            Particle::Muon => {
                if p.length <= 0.0 {
                    return Err(FieldError::new(
                        "length",
                        "muon segments need a positive length (pre-sliced tracks)",
                    ));
                }
                let (l, f_direct) = muon_length(p.length, energy);
                spec.emission = Emission::Track {
                    length: p.length,
                    beta: 1.0,
                    f_direct,
                };
                spec.mean_photons = l * y.per_metre();
            }
            particle @ (Particle::Electron | Particle::Positron | Particle::Hadron) => {
                spec.emission = Emission::Cascade {
                    profile_a: profile_a(particle, energy),
                    profile_b: profile_b(particle),
                };
                spec.mean_photons = em_cascade_length(energy) * y.per_metre();
                if particle == Particle::Hadron {
                    let (fr, sigma) = hadron_fraction(energy);
                    spec.mean_photons *= fr;
                    spec.yield_sigma = sigma / fr;
                    spec.yield_cap = HADRON_FRACTION_MAX / fr;
                }
            }
            Particle::Photons => {
                spec.mean_photons = energy.round();
                spec.exact = true;
            }
        }
        check_photons(spec.mean_photons).map_err(|m| FieldError::new("energy", m))?;
        Ok(spec)
    }
}

/// One f2k `TR` line turned into a source request. `line` and `path` are for error messages.
pub fn track_to_spec(path: &Path, line: usize, event: i32, tokens: &[&str], y: &Yield) -> Result<SourceSpec, InputError> {
    if tokens.len() != 12 {
        return Err(InputError::new(
            path,
            line,
            format!(
                "TR line has {} fields; expected 12 (TR gens igen name x y z zenith azimuth length energy time)",
                tokens.len()
            ),
        ));
    }
    let name = tokens[3];
    let particle = Particle::from_name(name).ok_or_else(|| {
        InputError::new(
            path,
            line,
            format!("unknown particle '{name}' (known: {})", Particle::F2K_NAMES.join(" ")),
        )
        .field("name")
    })?;
    let f = |i: usize, field: &str| parse_f64(path, line, field, Some(tokens[i]));
    let primary = Primary {
        particle,
        position: [f(4, "x")?, f(5, "y")?, f(6, "z")?],
        zenith: f(7, "zenith")?,
        azimuth: f(8, "azimuth")?,
        length: if tokens[9] == "?" { 0.0 } else { f(9, "length")? },
        energy: f(10, "energy")?,
        time: f(11, "time")?,
    };
    SourceSpec::new(&primary, event, y).map_err(|e| InputError::new(path, line, e.message).field(e.field))
}

/// The highest source energy accepted [GeV]: 10²² eV, above every particle ever observed.
pub const MAX_ENERGY_GEV: f64 = 1e13;

/// The most photons one source may ask for: 10¹⁸ (a 10¹³ GeV cascade gives about 10¹⁷ in ice,
/// and 10¹⁸ photons take decades of GPU time; u64 sums of such counts cannot wrap).
pub const MAX_PHOTONS_PER_SOURCE: f64 = 1e18;

/// A source's photon count must be finite and within [`MAX_PHOTONS_PER_SOURCE`].
pub fn check_photons(mean: f64) -> Result<(), String> {
    if mean.is_finite() && mean <= MAX_PHOTONS_PER_SOURCE {
        Ok(())
    } else {
        Err(format!(
            "{mean:.3e} photons from one source, more than the limit of {MAX_PHOTONS_PER_SOURCE:e}; split the source or lower its energy or count"
        ))
    }
}

/// The most photons one run may ask for in total (expected counts; the u64 count of the drawn
/// photons cannot wrap below this).
pub const MAX_PHOTONS_PER_RUN: f64 = 1e19;

/// Check the expected total of a run's sources against [`MAX_PHOTONS_PER_RUN`] before any work.
pub fn check_total(specs: &[SourceSpec]) -> Result<f64, String> {
    let total: f64 = specs.iter().map(|s| s.mean_photons).sum();
    if total.is_finite() && total <= MAX_PHOTONS_PER_RUN {
        Ok(total)
    } else {
        Err(format!(
            "the sources need about {total:.3e} photons, more than the limit of {MAX_PHOTONS_PER_RUN:e} per run; split the sources into several runs"
        ))
    }
}

/// The total photon count of a run, summed without wrapping: an error past `u64::MAX`.
pub fn total_photons(sources: &[Source]) -> Result<u64, String> {
    sources.iter().try_fold(0u64, |t, s| {
        t.checked_add(s.photons).ok_or_else(|| {
            format!(
                "the sources hold more than {} photons in total; split the input into several runs",
                u64::MAX
            )
        })
    })
}

/// Stream tags (the second Philox counter word) of the different random streams of a run.
pub mod tags {
    /// Per source: the Poisson draw of its photon count (entity = source ordinal).
    pub const SOURCE: u32 = 1;
    /// Per photon: emission and propagation (entity = global photon id).
    pub const PHOTON: u32 = 2;
    /// Per hit: the CPU-side acceptance (entity = photon id; tag | hit ordinal << 4).
    pub const ACCEPT: u32 = 3;
}

/// Draw the photon counts: Poisson(mean) (or the exact count), hadronic yields smeared by a
/// Gaussian of relative width `yield_sigma` (redrawn outside [0, yield_cap]). Deterministic in `seed`.
pub fn realise(specs: &[SourceSpec], seed: u64) -> Vec<Source> {
    let mut per_event: std::collections::HashMap<i32, u32> = Default::default();
    specs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut rng = RandomStream::new(seed, tags::SOURCE, i as u64);
            let mut mean = s.mean_photons;
            if s.yield_sigma > 0.0 {
                // f ~ N(F, σ_F), redrawn until 0 ≤ f ≤ 1.1 (PPC): here as the ratio f/F.
                let ratio = loop {
                    let r = 1.0 + s.yield_sigma * rng.normal();
                    if (0.0..=s.yield_cap).contains(&r) {
                        break r;
                    }
                };
                mean *= ratio;
            }
            let photons = if s.exact { mean as u64 } else { rng.poisson(mean) };
            let idx = per_event.entry(s.event).or_insert(0);
            let src = Source {
                event: s.event,
                index: *idx,
                pos: s.pos,
                dir: s.dir,
                time: s.time,
                emission: s.emission,
                mean_photons: s.mean_photons,
                photons,
                own_dom: s.own_dom,
            };
            *idx += 1;
            src
        })
        .collect()
}

/// A photon at emission, in the kernel's single precision.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Photon {
    pub pos: [f32; 3],
    pub dir: [f32; 3],
    pub time: f32,
    pub slice: u32,
    /// Absorbed where it was made: a lab-profile flasher photon that leaves its DOM through the
    /// equatorial band, the lower hemisphere's harness or the cable (PPC's `ofla` < −1).
    pub killed: bool,
}

/// Sample ξ = 1 − cos of a charged track in a cascade: F(ξ) = (1 − e^(−b ξ^a))/I on [0, 2],
/// I = 1 − e^(−b 2^a), inverted: ξ = min((−ln(1 − u·I)/b)^(1/a), 2) (spec §3.4).
#[inline]
#[must_use]
pub fn cascade_xi(u: f32) -> f32 {
    let (a, b) = (ANG_A as f32, ANG_B as f32);
    let i = 1.0 - (-b * 2f32.powf(a)).exp();
    ((-(1.0 - u * i).ln() / b).powf(1.0 / a)).min(2.0)
}

/// Rotate `n` by 1 − cos = ξ at a random azimuth.
#[inline]
fn deflect<R: EmitDraws>(rng: &R, n: [f32; 3], xi: f32, u_phi: f32) -> [f32; 3] {
    rng.rotate(n, 1.0 - xi, (xi * (2.0 - xi)).max(0.0).sqrt(), u_phi)
}

/// The Cherenkov direction around the track `n`: cos θ_c = 1/(β·n_phase), at azimuth 2π·`u`.
#[inline]
fn cherenkov<R: EmitDraws>(rng: &R, n: [f32; 3], beta: f32, n_phase: f32, u: f32) -> [f32; 3] {
    let c = (1.0 / (beta * n_phase)).min(1.0);
    rng.rotate(n, c, (1.0 - c * c).max(0.0).sqrt(), u)
}

/// Where an emission draws its random numbers from: the photon's own Philox stream (the precise
/// path and the CPU fast mode), or in the twin of the GPU's precise build its MWC64X stream with
/// the cascade's gamma draw in float (`fast::twin`, the kernel's `WD_FAST_GAMMA`).
///
/// It also names the arithmetic of the emission's angles: the defaults are the precise path's
/// (libm); the precise twin computes them as the kernel's precise build does (the fast mode's
/// polynomials and rotation, `WD_TWIN_MATH`).
pub trait EmitDraws {
    /// Uniform in (0, 1].
    fn uniform(&mut self) -> f32;
    /// A cascade photon's distance along the axis: Gamma(`a`)·`b` [m] (the longitudinal profile,
    /// spec §3.4).
    fn cascade_distance(&mut self, a: f64, b: f64) -> f32;
    /// `scatter::rotate`: `n` turned by (cos θ, sin θ) at azimuth 2π·`u_phi`.
    #[inline]
    fn rotate(&self, n: [f32; 3], cos_t: f32, sin_t: f32, u_phi: f32) -> [f32; 3] {
        rotate(n, cos_t, sin_t, u_phi)
    }
    /// [`cascade_xi`].
    #[inline]
    fn cascade_xi(&self, u: f32) -> f32 {
        cascade_xi(u)
    }
    /// (sin x, cos x) of an angle in radians.
    #[inline]
    fn sin_cos(&self, x: f32) -> (f32, f32) {
        x.sin_cos()
    }
    /// (sin 2πu, cos 2πu).
    #[inline]
    fn sincos_turn(&self, u: f32) -> (f32, f32) {
        (std::f32::consts::TAU * u).sin_cos()
    }
    /// ln x.
    #[inline]
    fn ln(&self, x: f32) -> f32 {
        x.ln()
    }
    /// e^x.
    #[inline]
    fn exp(&self, x: f32) -> f32 {
        x.exp()
    }
}

impl EmitDraws for RandomStream {
    #[inline]
    fn uniform(&mut self) -> f32 {
        RandomStream::uniform(self)
    }

    #[inline]
    fn cascade_distance(&mut self, a: f64, b: f64) -> f32 {
        (self.gamma(a) * b) as f32
    }
}

/// Emit photon number `k` of `src`: wavelength slice, position, time and direction (spec §3.5
/// step 1). The draws come from the photon's own stream `rng`.
pub fn emit<R: EmitDraws>(src: &Source, medium: &Medium, rng: &mut R) -> Photon {
    let slice = ((rng.uniform() * WNUM as f32) as u32).min(WNUM as u32 - 1);
    let s = medium.slices[slice as usize];
    let axis = [src.dir[0] as f32, src.dir[1] as f32, src.dir[2] as f32];
    let p0 = [src.pos[0] as f32, src.pos[1] as f32, src.pos[2] as f32];
    let t0 = src.time as f32;
    match src.emission {
        Emission::Cascade { profile_a, profile_b } => {
            let l = rng.cascade_distance(profile_a, profile_b);
            let (u1, u2, u3) = (rng.uniform(), rng.uniform(), rng.uniform());
            let track = deflect(rng, axis, rng.cascade_xi(u1), u2);
            Photon {
                pos: [p0[0] + l * axis[0], p0[1] + l * axis[1], p0[2] + l * axis[2]],
                dir: cherenkov(rng, track, 1.0, s.n_phase, u3),
                time: t0 + l / C_VACUUM as f32,
                slice,
                killed: false,
            }
        }
        Emission::Track { length, beta, f_direct } => {
            let l = rng.uniform() * length as f32;
            let (u0, u1, u2, u3) = (rng.uniform(), rng.uniform(), rng.uniform(), rng.uniform());
            let track = if u0 <= f_direct as f32 {
                axis
            } else {
                deflect(rng, axis, rng.cascade_xi(u1), u2)
            };
            Photon {
                pos: [p0[0] + l * axis[0], p0[1] + l * axis[1], p0[2] + l * axis[2]],
                dir: cherenkov(rng, track, beta as f32, s.n_phase, u3),
                time: t0 + l / (beta as f32 * C_VACUUM as f32),
                slice,
                killed: false,
            }
        }
        Emission::Isotropic => {
            let (u1, u2) = (rng.uniform(), rng.uniform());
            let c = 2.0 * u1 - 1.0;
            let sn = (1.0 - c * c).max(0.0).sqrt();
            let (sp, cp) = rng.sincos_turn(u2);
            Photon {
                pos: p0,
                dir: [sn * cp, sn * sp, c],
                time: t0,
                slice,
                killed: false,
            }
        }
        Emission::Flasher(led) => emit_flasher(&led, p0, axis, t0, slice, rng),
    }
}

/// A flasher photon (PPC `propagate`, flasher branch; photon-ppc-phase2.md §6): the LED (one of
/// the pattern, or the tilted DOM's one), the beam's spread, and where it leaves the DOM. With
/// the lab profile the photon starts on the LED, travels to the DOM's sphere and is lost if it
/// leaves through the equatorial band |z| < FLB, with probability 0.9 through the lower
/// hemisphere (the harness; untilted DOMs only) and with FWID > 1050 if its horizontal path
/// meets the cable; otherwise it starts on the sphere along its direction.
fn emit_flasher<R: EmitDraws>(led: &Led, centre: [f32; 3], fixed_axis: [f32; 3], t0: f32, slice: u32, rng: &mut R) -> Photon {
    let (mut r, axis) = match led.fixed {
        Some(r) => ([r[0] as f32, r[1] as f32, r[2] as f32], fixed_axis),
        None => {
            let u = rng.uniform();
            let (sa, ca) = rng.sin_cos(Led::azimuth(led.fldr as f32, u));
            let (su, cu) = rng.sin_cos(led.up as f32);
            ([FLR * ca, FLR * sa, FLZ], [cu * ca, cu * sa, su])
        }
    };
    let ka = led.ka as f32;
    let n = if ka == 0.0 {
        axis
    } else {
        let xi = Led::beam_xi(ka, led.tilted, rng);
        let u = rng.uniform();
        deflect(rng, axis, xi, u)
    };
    let mut killed = false;
    let t = if led.lab() {
        // From the LED to the sphere of radius OMR: |r + t·n| = OMR.
        let b = r[0] * n[0] + r[1] * n[1] + r[2] * n[2];
        let c = FLZ * FLZ + FLR * FLR - OMR * OMR;
        let t = (b * b - c).sqrt() - b;
        r = [r[0] + t * n[0], r[1] + t * n[1], r[2] + t * n[2]];
        if r[2].abs() < FLB || (led.fixed.is_none() && r[2] < 0.0 && rng.uniform() < 0.9) {
            killed = true;
        }
        if ka > 1050.0 && meets_cable(r, n, rng.sin_cos((ka - 1080.0) * (std::f32::consts::PI / 180.0))) {
            killed = true;
        }
        t
    } else {
        r = [OMR * n[0], OMR * n[1], OMR * n[2]];
        OMR
    };
    Photon {
        pos: [centre[0] + r[0], centre[1] + r[1], centre[2] + r[2]],
        dir: n,
        time: t0 + t / C_VACUUM as f32,
        slice,
        killed,
    }
}

/// Whether the horizontal path from `r` along `n` (relative to the DOM centre) meets the cable,
/// a vertical cylinder of radius 0.023 m at OMR + 0.023 m from the centre at azimuth φ
/// (`(sp, cp)` = (sin φ, cos φ)).
fn meets_cable(r: [f32; 3], n: [f32; 3], (sp, cp): (f32, f32)) -> bool {
    let dc = OMR + CABLE_R;
    let (dx, dy) = (r[0] - dc * cp, r[1] - dc * sp);
    let a = n[0] * n[0] + n[1] * n[1];
    if a <= 0.0 {
        return false;
    }
    let b = n[0] * dx + n[1] * dy;
    let c = dx * dx + dy * dy - CABLE_R * CABLE_R;
    let d = b * b - a * c;
    d >= 0.0 && (-b + d.sqrt()) / a > 0.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// spec §3.4: EM yield 5.321·0.910/0.9216 = 5.254 m/GeV; 10 TeV at ppm = 0.94·2450.08·0.67,
    /// oversize 5 → 3.243e6 photons (PPC's run log: 3 243 441 and 3 244 251).
    #[test]
    fn cascade_yield_matches_ppc_photon_count() {
        assert!((em_cascade_length(1.0) - 5.254).abs() < 1e-3);
        let y = Yield {
            ppm: 0.94 * DPPM * 0.67,
            oversize: 5.0,
        };
        let mean = em_cascade_length(1e4) * y.per_metre();
        assert!((mean / 3.2438e6 - 1.0).abs() < 5e-4, "{mean}");
        assert!((profile_a(Particle::Electron, 1e4) - (2.01849 + 0.63176 * 1e4f64.ln())).abs() < 1e-12);
        assert!((profile_b(Particle::Electron) - 0.39652 * DENSITY / 0.63207).abs() < 1e-12);
    }

    /// Regression (issue #14): hadronic cascades have their own profile (π⁺ row of the table in
    /// photon-ppc-phase2.md §8), not the EM one. Mean depth of the Γ profile = a·b: for 20 TeV
    /// a_h = 1.58357292 + 0.41886807·ln 2e4 = 5.7319, b_h = L_rad/0.33833116 = 1.1574 m → 6.634 m;
    /// EM: a = 8.2750, b = 0.6195 m → 5.127 m.
    #[test]
    fn hadronic_profile_is_not_the_em_one() {
        let e = 2e4;
        let (a_h, b_h) = (profile_a(Particle::Hadron, e), profile_b(Particle::Hadron));
        assert!((a_h - (1.583_572_92 + 0.418_868_07 * e.ln())).abs() < 1e-12);
        assert!((b_h - 0.39652 * DENSITY / 0.338_331_16).abs() < 1e-12);
        assert!((a_h * b_h - 6.634).abs() < 2e-3, "{}", a_h * b_h);
        let em = profile_a(Particle::Electron, e) * profile_b(Particle::Electron);
        assert!((em - 5.127).abs() < 2e-3, "{em}");
        assert!((profile_b(Particle::Positron) - 0.39652 * DENSITY / 0.63008).abs() < 1e-12);
        // ln E uses max(m_μ, E): below 1 GeV a still grows with ln E (was clamped at 1 GeV).
        assert!(profile_a(Particle::Electron, 0.5) < profile_a(Particle::Electron, 1.0));
        // The parsed f2k line carries it.
        let y = Yield {
            ppm: 1000.0,
            oversize: 1.0,
        };
        let t: Vec<&str> = "TR 1 0 hadr 40 -60 150 60 30 0 20000 0".split_whitespace().collect();
        let s = track_to_spec(Path::new("h.f2k"), 1, 0, &t, &y).unwrap();
        assert_eq!(
            s.emission,
            Emission::Cascade {
                profile_a: a_h,
                profile_b: b_h
            }
        );
        assert!((s.yield_cap - HADRON_FRACTION_MAX / hadron_fraction(e).0).abs() < 1e-12);
    }

    /// The light fraction is redrawn until 0 ≤ f ≤ 1.1 (PPC), not clamped: at 3 GeV σ_F/F ≈ 0.9,
    /// so many first draws fall outside; every realised count stays within 1.1·(E-scaled yield).
    #[test]
    fn hadronic_fraction_is_redrawn_inside_its_range() {
        let y = Yield {
            ppm: 1000.0,
            oversize: 1.0,
        };
        let t: Vec<&str> = "TR 1 0 hadr 0 0 0 0 0 0 3 0".split_whitespace().collect();
        let spec = track_to_spec(Path::new("h.f2k"), 1, 0, &t, &y).unwrap();
        let (f, _) = hadron_fraction(3.0);
        let full = spec.mean_photons / f;
        let specs = vec![spec; 2000];
        let sources = realise(&specs, 5);
        let zero = sources.iter().filter(|s| s.photons == 0).count();
        assert!(
            zero < 200,
            "{zero} of 2000 sources without light: clamping at 0 instead of redrawing"
        );
        for s in &sources {
            assert!(
                (s.photons as f64) < 1.1 * full + 6.0 * (1.1 * full).sqrt(),
                "{} vs cap {}",
                s.photons,
                1.1 * full
            );
        }
    }

    #[test]
    fn muon_and_hadron_yields() {
        let (l, f) = muon_length(10.0, 1000.0);
        let extra = (0.1880 + 0.0206 * 1000f64.ln()) * DENSITY;
        assert!((l - 10.0 * (1.0 + extra)).abs() < 1e-12 && (f * (1.0 + extra) - 1.0).abs() < 1e-12);
        let (fr, s) = hadron_fraction(1e4);
        assert!(fr > 0.8 && fr < 1.0 && s > 0.0 && s < 0.1, "{fr} {s}");
    }

    #[test]
    fn f2k_direction_convention() {
        // zenith 180° (as in the PPC reference event) moves up; zenith 0 moves down.
        let up = f2k_direction(180.0, 0.0);
        assert!((up[2] - 1.0).abs() < 1e-12);
        let down = f2k_direction(0.0, 0.0);
        assert!((down[2] + 1.0).abs() < 1e-12);
        // zenith 90°, azimuth 0: the particle comes from +x, so it moves towards −x.
        let h = f2k_direction(90.0, 0.0);
        assert!((h[0] + 1.0).abs() < 1e-12);
    }

    #[test]
    fn cascade_angles_follow_their_cdf() {
        let mut r = RandomStream::new(11, 0, 0);
        let xs: Vec<f64> = (0..50_000).map(|_| f64::from(cascade_xi(r.uniform()))).collect();
        let i = 1.0 - (-ANG_B * 2f64.powf(ANG_A)).exp();
        let t = warpdrive_core::stats::ks_one_sample(&xs, |x| (1.0 - (-ANG_B * x.max(0.0).powf(ANG_A)).exp()) / i);
        assert!(t.p_value > 0.01, "{t:?}");
    }

    /// A typed source is the f2k line with the same numbers: the same request, field by field
    /// (the CLI's default cascade and Python's arrays no longer go through text).
    #[test]
    fn typed_sources_equal_their_f2k_lines() {
        let y = Yield {
            ppm: 1000.0,
            oversize: 5.0,
        };
        let line = |s: &str| track_to_spec(Path::new("t.f2k"), 1, 0, &s.split_whitespace().collect::<Vec<_>>(), &y).unwrap();
        let typed = |p: Primary| SourceSpec::new(&p, 0, &y).unwrap();
        assert_eq!(typed(Primary::default_cascade(1e5)), line("TR 1 0 e 0 0 0 180 0 0 100000 0"));
        assert_eq!(
            typed(Primary::cascade(Particle::Hadron, [20.0, -30.0, 50.0], [90.0, 45.0], 500.0, 10.0)),
            line("TR 1 0 hadr 20 -30 50 90 45 0 500 10")
        );
        assert_eq!(
            typed(Primary::track([1.5, 2.0, -400.0], [30.0, 200.0], 12.5, 1e4, 3.0)),
            line("TR 1 0 amu 1.5 2 -400 30 200 12.5 10000 3")
        );
        let ph = Primary {
            particle: Particle::Photons,
            ..Primary::cascade(Particle::Photons, [0.0; 3], [0.0, 0.0], 2000.0, 0.0)
        };
        assert_eq!(typed(ph), line("TR 1 0 ph 0 0 0 0 0 0 2000 0"));
    }

    /// Typed values are checked as the f2k reader checks text, and non-finite numbers (which
    /// text parsing refuses earlier) are refused by field.
    #[test]
    fn typed_sources_are_checked_by_field() {
        let y = Yield {
            ppm: 1000.0,
            oversize: 5.0,
        };
        let err = |p: Primary| SourceSpec::new(&p, 0, &y).unwrap_err();
        let e = err(Primary::default_cascade(f64::NAN));
        assert_eq!((e.field, e.message.as_str()), ("energy", "NaN: must be a finite number"));
        let e = err(Primary::default_cascade(-5.0));
        assert_eq!((e.field, e.message.as_str()), ("energy", "-5: must be positive (zero photons)"));
        let e = err(Primary::cascade(Particle::Electron, [0.0, 2e5, 0.0], [0.0, 0.0], 1.0, 0.0));
        assert_eq!((e.field, e.message.as_str()), ("y", "200000 m is out of range (|y| ≤ 100000 m)"));
        let e = err(Primary::cascade(Particle::Electron, [0.0; 3], [f64::INFINITY, 0.0], 1.0, 0.0));
        assert_eq!(e.field, "zenith");
        let e = err(Primary::track([0.0; 3], [0.0, 0.0], 0.0, 1.0, 0.0));
        assert_eq!(e.field, "length");
        assert_eq!(err(Primary::default_cascade(1e14)).field, "energy");
    }

    /// PDG-style aliases map to the kinds the f2k reader knows; f2k names stay PPC's.
    #[test]
    fn pdg_aliases() {
        assert_eq!(Particle::from_alias("e-"), Some(Particle::Electron));
        assert_eq!(Particle::from_alias("gamma"), Some(Particle::Electron));
        assert_eq!(Particle::from_alias("mu+"), Some(Particle::Muon));
        assert_eq!(Particle::from_alias("pi-"), Some(Particle::Hadron));
        assert_eq!(Particle::from_alias("hadr"), Some(Particle::Hadron));
        assert_eq!(Particle::from_alias("tau"), None);
        assert_eq!(Particle::from_name("gamma"), None, "f2k files keep PPC's names");
        assert_eq!(Particle::from_pdg(-11), Some(Particle::Positron));
        assert_eq!(Particle::from_pdg(211), Some(Particle::Hadron));
        assert_eq!(Particle::from_pdg(13), Some(Particle::Muon));
        assert_eq!(Particle::from_pdg(2212), None);
        for n in Particle::F2K_NAMES {
            assert_eq!(Particle::from_name(Particle::from_name(n).unwrap().name()), Particle::from_name(n));
        }
    }

    #[test]
    fn bad_track_lines() {
        let p = PathBuf::from("in.f2k");
        let y = Yield {
            ppm: 1000.0,
            oversize: 5.0,
        };
        let tr = |s: &str| track_to_spec(&p, 3, 1, &s.split_whitespace().collect::<Vec<_>>(), &y);
        assert!(tr("TR 1 0 e 0 0 -400 180 0 0 10000 0").is_ok());
        let e = tr("TR 1 0 tau 0 0 -400 180 0 0 10000 0").unwrap_err().to_string();
        assert!(e.contains("in.f2k:3: field 'name': unknown particle 'tau'"), "{e}");
        assert!(tr("TR 1 0 e nan 0 -400 180 0 0 10000 0")
            .unwrap_err()
            .to_string()
            .contains("field 'x'"));
        assert!(tr("TR 1 0 e 0 0 -4e6 180 0 0 10000 0")
            .unwrap_err()
            .to_string()
            .contains("out of range"));
        assert!(tr("TR 1 0 e 0 0 -400 180 0 0 0 0")
            .unwrap_err()
            .to_string()
            .contains("zero photons"));
        assert!(tr("TR 1 0 e 0 0 -400 180 0 0 10000").unwrap_err().to_string().contains("11 fields"));
        assert!(tr("TR 1 0 amu 0 0 -400 180 0 0 10000 0")
            .unwrap_err()
            .to_string()
            .contains("positive length"));
    }
}
