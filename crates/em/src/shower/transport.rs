//! The shower stepping loop on the CPU: one event at a time, its tracks from a LIFO stack, each
//! track stepped until it stops, is absorbed or leaves the calorimeter (Geant4's tracking order:
//! a track runs to its end before its secondaries).
//!
//! A charged step (Geant4 PRM "Step limitation" and "Integral approach"; spec §2.6):
//! 1. limits: the range (StepFunction α = 0.2, ρ = 1 mm: s ≤ αR + ρ(1 − α)(2 − ρ/R) for R > ρ,
//!    else R), multiple scattering ([`super::msc::limit_step`], UseSafety), and the discrete
//!    processes sampled with the majorant Σ_max of their total cross section over the energies
//!    the step can reach (integral approach, so Σ(E) may change along the step);
//! 2. the true path is converted to a geometric one; a boundary nearer than that cuts the step
//!    (and the true path is converted back);
//! 3. the mean continuous loss (linear below 1 % of E, else by the inverse range) with
//!    fluctuations ([`super::fluctuations`]) is deposited in the slab;
//! 4. the direction is deflected and the end point displaced by MSC (no displacement on a
//!    boundary);
//! 5. at a discrete point the interaction happens with probability Σ(E₁)/Σ_max.
//!
//! A photon flies to its interaction point or the next boundary, its number of mean free paths
//! carried across boundaries.
//!
//! Randomness: every track has its own Philox stream keyed by (seed, track id); a secondary's id
//! is a hash of its parent's id and its ordinal among the parent's secondaries, so ids do not
//! depend on the order tracks are processed in (the GPU twin can reproduce them).
//!
//! Bookkeeping per event: energy deposited per slab, kinetic energy that left the calorimeter,
//! and the net energy turned into rest mass (+2mc² per pair, −2mc² per annihilation), so that
//! E₀ = deposits + escaped + rest mass holds to rounding ([`EventTally::balance`]). Energies and
//! lengths are summed in fixed point ([`FIXED_SCALE`], 2⁻⁴⁰ MeV or cm, every addition rounded):
//! integer sums do not depend on the order of the additions, so the GPU, which runs an event's
//! tracks generation by generation in any order, gives the same bits as this LIFO loop.

use super::cuts::{EnergyCuts, RangeCuts};
use super::fluctuations::{bohr_variance, sample_loss};
use super::geometry::{Boundary, Calorimeter, Next};
use super::interaction::Secondary;
use super::ionisation::{max_secondary_energy, threshold_energy};
use super::physics::{ChargedProcess, GammaProcess, MaterialPhysics};
use super::tables::TableOptions;
use super::{annihilation, brems, delta_ray, msc, pair, photoelectric, rayleigh, Particle, ELECTRON_MASS};
use crate::klein_nishina;
use warpdrive_core::pmath::Portable;
use warpdrive_core::RandomStream;

/// Philox tag of shower tracks.
pub const TAG_SHOWER: u32 = 0x454d_0002;
/// e± below this kinetic energy stop and deposit it (Geant4 `lowestElectronEnergy`, 1 keV) [MeV].
pub const LOWEST_ELECTRON_ENERGY: f64 = 1e-3;
/// Photons below this energy are absorbed where they are (the photoelectric data start at 1 keV) [MeV].
pub const LOWEST_PHOTON_ENERGY: f64 = 1e-3;
/// Geant4 StepFunction of e± in 10.3: dRoverRange α and finalRange ρ [cm].
pub const DR_OVER_RANGE: f64 = 0.2;
pub const FINAL_RANGE: f64 = 0.1;
/// Below this fraction of E the loss along a step is s·dE/dx, else it comes from the range.
pub const LINEAR_LOSS_LIMIT: f64 = 0.01;
/// A track with more steps than this is stopped and counted (a bug guard, not physics).
pub const MAX_STEPS_PER_TRACK: u64 = 1_000_000;

/// What the stepping loop needs of a geometry (lengths in cm): the slab calorimeter
/// ([`Calorimeter`], the validated TestEm3 path) and a GDML detector
/// ([`super::detector::DetectorPhysics`]) implement it, and the loop is compiled once per
/// geometry, so the slab path does the same floating-point operations as before the trait.
pub trait ShowerGeometry {
    /// Where a track is (a slab index, a volume path).
    type Loc: Clone;
    /// The nearest boundary found by [`Self::next_boundary`].
    type Step;
    /// Index into the physics' materials of the material at `loc`; `None` for vacuum (no
    /// interactions, no loss: the track flies straight to the next boundary).
    fn material(&self, loc: &Self::Loc) -> Option<usize>;
    /// The tally slot of the volume at `loc` (`EventTally::edep` index).
    fn volume(&self, loc: &Self::Loc) -> usize;
    /// The distance [cm] along the unit direction to the nearest boundary of the volume at `loc`.
    fn next_boundary(&self, pos: [f64; 3], dir: [f64; 3], loc: &Self::Loc) -> (f64, Self::Step);
    /// Move onto (and past) that boundary and into the next volume; `false` when the track
    /// left the geometry (it escapes).
    fn cross(&self, pos: &mut [f64; 3], dir: [f64; 3], loc: &mut Self::Loc, step: &Self::Step) -> bool;
    /// An isotropic safe distance [cm] from `pos` in the volume at `loc`.
    fn safety(&self, pos: [f64; 3], loc: &Self::Loc) -> f64;
    /// Whether charged tracks move on curved paths ([`Self::curved_step`]); `false` keeps the
    /// straight-line loop, operation for operation (the slab calorimeter, a detector without a
    /// field or with B = 0).
    #[inline]
    fn field_on(&self) -> bool {
        false
    }
    /// Move a charged track (charge in units of e, momentum [MeV/c]) along its path in the
    /// field by at most `s_max` [cm] of path, stopping just past the first boundary found along
    /// the curved path; `pos`, `dir` and `loc` become the end's. Returns the path length [cm]
    /// and why the step ended. `safety` [cm]: a distance from `pos` within which no boundary
    /// lies (the step's [`Self::safety`]; 0 when not known), which spares the boundary search
    /// of stretches inside it. Without a field: the straight step of [`Self::next_boundary`]
    /// and [`Self::cross`].
    #[allow(clippy::too_many_arguments)]
    fn curved_step(
        &self,
        pos: &mut [f64; 3],
        dir: &mut [f64; 3],
        loc: &mut Self::Loc,
        charge: f64,
        momentum: f64,
        s_max: f64,
        safety: f64,
    ) -> (f64, StepEnd) {
        let _ = (charge, momentum, safety);
        let (d, b) = self.next_boundary(*pos, *dir, loc);
        if d > s_max {
            for k in 0..3 {
                pos[k] += s_max * dir[k];
            }
            return (s_max, StepEnd::Limit);
        }
        if self.cross(pos, *dir, loc, &b) {
            (d, StepEnd::Crossed)
        } else {
            (d, StepEnd::LeftWorld)
        }
    }
    /// |B| [T] of a uniform field (for the looper limit; 0 without a field).
    #[inline]
    fn field_strength(&self) -> f64 {
        0.0
    }
    /// Whether the volume at `loc` records step-level hits ([`Hit`]).
    #[inline]
    fn sensitive(&self, loc: &Self::Loc) -> bool {
        let _ = loc;
        false
    }
}

pub use crate::field::propagate::FieldStepEnd as StepEnd;

/// A charged track in a field that has travelled this many turns of its helix through vacuum
/// without reaching a boundary is a looper (Geant4 kills such tracks too: G4Transportation's
/// looping threshold): it is stopped, its energy deposited where it is and counted in
/// [`EventTally::killed`], so that the energy balance holds.
pub const LOOPER_TURNS: f64 = 1000.0;
/// c [cm/ns], for the time of flight.
pub const C_CM_PER_NS: f64 = 29.979_245_8;

/// One deposit in a sensitive volume: a step's continuous loss (at its pre-step point and
/// time, Geant4's `G4Step::GetPreStepPoint`), or energy deposited locally at a point (a stopped
/// track, an absorbed photon, a Compton or photoelectric local deposit).
///
/// An event's hits are in a canonical order that does not depend on the order its tracks are
/// processed in (the CPU's LIFO stack, the GPU's queues and slots): by track id
/// ([`child_id`], unique within an event), then by `ordinal` along the track ([`sort_hits`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit {
    /// The id of the track that made it.
    pub track: u64,
    /// Its place among that track's hits, from 0.
    pub ordinal: u32,
    /// The tally slot (volume instance) of the deposit.
    pub slot: u32,
    /// The deposit [2⁻⁴⁰ MeV], exactly what was added to the slot's tally.
    pub edep: u64,
    /// Global time since the primary started [ns].
    pub time_ns: f64,
    /// Position [cm].
    pub pos: [f64; 3],
}

/// Put one event's hits in the canonical order ([`Hit`]): by (track id, ordinal). On the CPU
/// a track's hits are made in ordinal order and together, so this only orders the tracks.
pub fn sort_hits(hits: &mut [Hit]) {
    hits.sort_unstable_by_key(|h| (h.track, h.ordinal));
}

impl ShowerGeometry for Calorimeter {
    type Loc = usize;
    type Step = Boundary;
    #[inline]
    fn material(&self, slab: &usize) -> Option<usize> {
        Some(self.material_index(*slab))
    }
    #[inline]
    fn volume(&self, slab: &usize) -> usize {
        *slab
    }
    #[inline]
    fn next_boundary(&self, pos: [f64; 3], dir: [f64; 3], slab: &usize) -> (f64, Boundary) {
        let b = self.distance_to_boundary(pos, dir, *slab);
        (b.distance, b)
    }
    #[inline]
    fn cross(&self, pos: &mut [f64; 3], dir: [f64; 3], slab: &mut usize, b: &Boundary) -> bool {
        let (p, next) = Calorimeter::cross(self, *pos, dir, b);
        *pos = p;
        match next {
            Next::Slab(s) => {
                *slab = s;
                true
            }
            Next::Outside => false,
        }
    }
    #[inline]
    fn safety(&self, pos: [f64; 3], slab: &usize) -> f64 {
        Calorimeter::safety(self, pos, *slab)
    }
}

/// The calorimeter with the physics of each of its materials.
#[derive(Clone, Debug)]
pub struct ShowerPhysics {
    pub calorimeter: Calorimeter,
    pub range_cuts: RangeCuts,
    pub table_options: TableOptions,
    /// Same order as `calorimeter.materials`.
    pub materials: Vec<MaterialPhysics>,
}

impl ShowerPhysics {
    #[must_use]
    pub fn build(calorimeter: Calorimeter, range_cuts: RangeCuts, table_options: TableOptions) -> Self {
        use rayon::prelude::*;
        // Materials in parallel (order kept by collect); the tables do not depend on the pool.
        let materials = calorimeter
            .materials
            .par_iter()
            .map(|m| MaterialPhysics::build(m, EnergyCuts::new(m, &range_cuts), &table_options))
            .collect();
        ShowerPhysics {
            calorimeter,
            range_cuts,
            table_options,
            materials,
        }
    }

    /// TestEm3 as Geant4 10.3 runs it: its calorimeter, 1 mm cuts.
    #[must_use]
    pub fn testem3() -> Self {
        Self::build(Calorimeter::testem3(), RangeCuts::default(), TableOptions::default())
    }

    /// The physics of a slab's material.
    #[must_use]
    pub fn physics(&self, slab: usize) -> &MaterialPhysics {
        &self.materials[self.calorimeter.material_index(slab)]
    }
}

/// The primary particle of every event.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Primary {
    pub particle: Particle,
    /// Kinetic energy [MeV].
    pub energy: f64,
    /// Start point [cm]; outside the calorimeter it flies (in vacuum) to its front.
    pub pos: [f64; 3],
    pub dir: [f64; 3],
}

impl Primary {
    /// TestEm3's gun: on the axis in front of the calorimeter, along +z.
    #[must_use]
    pub fn testem3(particle: Particle, energy: f64) -> Self {
        Primary {
            particle,
            energy,
            pos: [0.0, 0.0, -1.0],
            dir: [0.0, 0.0, 1.0],
        }
    }
}

/// Scale of the fixed-point tallies: energies are counted in units of 2⁻⁴⁰ MeV and lengths in
/// units of 2⁻⁴⁰ cm (≈ 9.1e-13), each addition rounded to the nearest unit (ties to even), so
/// that sums are exact integers whatever the order the tracks of an event are processed in
/// (the CPU's LIFO stack, the GPU's generations). One event and slab holds up to 2⁶⁴ units,
/// 1.68e7 MeV (the CLI allows primaries up to 1e7 MeV; [`run_event`] asserts the bound).
pub const FIXED_SCALE: f64 = 1_099_511_627_776.0; // 2^40
/// Largest primary energy the fixed-point tallies hold without overflow [MeV].
pub const MAX_PRIMARY_ENERGY: f64 = 1.6e7;

/// `x` (≥ 0, MeV or cm) in fixed point: round(x·2⁴⁰), ties to even (the CUDA twin is
/// `__double2ull_rn(x * WD_FIXED_SCALE)`; both saturate, negative values and NaN give 0).
#[inline]
#[must_use]
pub fn to_fixed(x: f64) -> u64 {
    (x * FIXED_SCALE).round_ties_even() as u64
}

/// A fixed-point value back in MeV or cm.
#[inline]
#[must_use]
pub fn from_fixed(q: u64) -> f64 {
    q as f64 / FIXED_SCALE
}

/// What one event did. Energies and lengths are fixed point ([`FIXED_SCALE`]); the `_mev` and
/// `_cm` accessors convert.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EventTally {
    /// Energy deposited per slab [2⁻⁴⁰ MeV].
    pub edep: Vec<u64>,
    /// Kinetic energy carried out of the calorimeter [2⁻⁴⁰ MeV].
    pub escaped: u64,
    /// Net energy turned into rest mass [2⁻⁴⁰ MeV] (+2mc² per pair, −2mc² per annihilation).
    pub rest_mass: i64,
    /// Secondaries created: γ, e⁻, e⁺.
    pub created: [u64; 3],
    pub charged_steps: u64,
    pub neutral_steps: u64,
    /// True path length of charged particles per material [2⁻⁴⁰ cm].
    pub track_length: Vec<u64>,
    /// Secondaries created per process, in the order of [`CREATORS`].
    pub created_by: [u64; 7],
    /// Tracks stopped by [`MAX_STEPS_PER_TRACK`] (their energy is deposited; should be 0).
    pub killed: u64,
    /// The primary's energy [MeV].
    pub primary_energy: f64,
}

impl EventTally {
    /// An empty tally for `slabs` slabs and `materials` materials.
    #[must_use]
    pub fn new(slabs: usize, materials: usize, primary_energy: f64) -> Self {
        EventTally {
            edep: vec![0; slabs],
            track_length: vec![0; materials],
            primary_energy,
            ..EventTally::default()
        }
    }

    /// Energy deposited in a slab [MeV].
    #[must_use]
    pub fn edep_mev(&self, slab: usize) -> f64 {
        from_fixed(self.edep[slab])
    }

    /// Total energy deposited [MeV] (the exact integer sum, converted once).
    #[must_use]
    pub fn edep_total_mev(&self) -> f64 {
        self.edep.iter().map(|&q| u128::from(q)).sum::<u128>() as f64 / FIXED_SCALE
    }

    /// Kinetic energy that left the calorimeter [MeV].
    #[must_use]
    pub fn escaped_mev(&self) -> f64 {
        from_fixed(self.escaped)
    }

    /// Net energy turned into rest mass [MeV].
    #[must_use]
    pub fn rest_mass_mev(&self) -> f64 {
        self.rest_mass as f64 / FIXED_SCALE
    }

    /// Charged track length in material `m` [cm].
    #[must_use]
    pub fn track_length_cm(&self, m: usize) -> f64 {
        from_fixed(self.track_length[m])
    }

    /// E₀ − (deposits + escaped + rest mass) [MeV], summed exactly in fixed point and converted
    /// once. Zero up to (a) the rounding of the floating-point physics (e.g. E − k then k for a
    /// bremsstrahlung photon), ≲ 1e-12 E₀ per interaction, and (b) the quantisation: every
    /// fixed-point addition rounds by at most half a unit, 2⁻⁴¹ MeV, and an event makes at most
    /// one deposit per step plus two per track and one per created pair or annihilation, so
    /// |(b)| ≤ [`Self::quantisation_bound`] (≈ 6e-9 MeV for a 1 GeV shower in TestEm3, 6e-12
    /// of E₀). The tests require |balance| < 1e-9 E₀.
    #[must_use]
    pub fn balance(&self) -> f64 {
        let deposits = self.edep.iter().map(|&q| i128::from(q)).sum::<i128>();
        let out = deposits + i128::from(self.escaped) + i128::from(self.rest_mass);
        self.primary_energy - out as f64 / FIXED_SCALE
    }

    /// The largest quantisation part of [`Self::balance`] [MeV] (see there).
    #[must_use]
    pub fn quantisation_bound(&self) -> f64 {
        let tracks = 1 + self.created.iter().sum::<u64>();
        let additions = self.charged_steps + self.neutral_steps + 2 * tracks + self.created_by[3] + self.created_by[6];
        additions as f64 * 0.5 / FIXED_SCALE
    }
}

/// The processes that create secondaries, as counted in [`EventTally::created_by`].
pub const CREATORS: [&str; 7] = [
    "compton",
    "photoelectric",
    "fluorescence",
    "conversion",
    "delta_ray",
    "brems",
    "annihilation",
];

#[derive(Clone, Copy)]
enum Creator {
    Compton = 0,
    Photoelectric,
    Fluorescence,
    Conversion,
    DeltaRay,
    Brems,
    Annihilation,
}

struct Track<L> {
    particle: Particle,
    energy: f64,
    pos: [f64; 3],
    dir: [f64; 3],
    slab: L,
    /// Global time since the primary started [ns].
    time: f64,
    id: u64,
    children: u64,
    rng: RandomStream,
}

/// SplitMix64 finaliser (Steele, Lea, Flood 2014): decorrelates ids.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A number of mean free paths: −ln u, u ∈ (0, 1].
fn exp1(rng: &mut RandomStream) -> f64 {
    -rng.uniform_f64().pln()
}

/// Charge [e] and momentum [MeV/c] of an e± of kinetic energy `e` [MeV]: p = √(E(E + 2m)).
fn charge_momentum(p: Particle, e: f64) -> (f64, f64) {
    let q = if p == Particle::Positron { 1.0 } else { -1.0 };
    (q, (e * (e + 2.0 * ELECTRON_MASS)).sqrt())
}

/// Speed [cm/ns]: c for a photon, βc = c·p/(E + m) for an e± of kinetic energy `e` [MeV].
fn speed(p: Particle, e: f64) -> f64 {
    if p == Particle::Gamma {
        C_CM_PER_NS
    } else {
        C_CM_PER_NS * (e * (e + 2.0 * ELECTRON_MASS)).sqrt() / (e + ELECTRON_MASS)
    }
}

fn particle_index(p: Particle) -> usize {
    match p {
        Particle::Gamma => 0,
        Particle::Electron => 1,
        Particle::Positron => 2,
    }
}

struct Event<'a, G: ShowerGeometry> {
    geo: &'a G,
    materials: &'a [MaterialPhysics],
    seed: u64,
    stack: Vec<Track<G::Loc>>,
    tally: EventTally,
    /// Deposits in sensitive volumes ([`ShowerGeometry::sensitive`]), in the order they were
    /// made (the CPU's LIFO order; [`sort_hits`] at the end); empty without sensitive volumes.
    hits: Vec<Hit>,
    /// The id of the track being transported and the hits it made so far (a track runs to its
    /// end before the next is popped, and only it deposits).
    track: u64,
    track_hits: u32,
}

impl<G: ShowerGeometry> Event<'_, G> {
    fn push(&mut self, parent: &mut Track<G::Loc>, s: Secondary, by: Creator) {
        self.tally.created_by[by as usize] += 1;
        parent.children += 1;
        let id = child_id(parent.id, parent.children);
        self.tally.created[particle_index(s.particle)] += 1;
        self.stack.push(Track {
            particle: s.particle,
            energy: s.energy,
            pos: parent.pos,
            dir: s.dir,
            slab: parent.slab.clone(),
            time: parent.time,
            id,
            children: 0,
            rng: RandomStream::new(self.seed, TAG_SHOWER, id),
        });
    }

    /// Deposit `e` [MeV] in the volume at `loc`, at `pos` and `time` (for a hit).
    fn deposit(&mut self, loc: &G::Loc, pos: [f64; 3], time: f64, e: f64) {
        let slot = self.geo.volume(loc);
        let sensitive = self.geo.sensitive(loc);
        self.deposit_in(slot, sensitive, pos, time, e);
    }

    fn deposit_in(&mut self, slot: usize, sensitive: bool, pos: [f64; 3], time: f64, e: f64) {
        let q = to_fixed(e);
        self.tally.edep[slot] += q;
        if sensitive && q > 0 {
            self.hits.push(Hit {
                track: self.track,
                ordinal: self.track_hits,
                slot: slot as u32,
                edep: q,
                time_ns: time,
                pos,
            });
            self.track_hits += 1;
        }
    }

    /// Through vacuum: straight to the next boundary (`false`: the track escaped).
    fn fly(&mut self, t: &mut Track<G::Loc>) -> bool {
        let (d, b) = self.geo.next_boundary(t.pos, t.dir, &t.slab);
        t.time += d / speed(t.particle, t.energy);
        if self.geo.cross(&mut t.pos, t.dir, &mut t.slab, &b) {
            return true;
        }
        self.tally.escaped += to_fixed(t.energy);
        false
    }

    /// A charged track through vacuum in the field: along its curved path to the next
    /// boundary, at most one turn of its helix per call (`true`: it crossed, or it is still
    /// flying; `false`: it escaped, or it was a looper, [`LOOPER_TURNS`], and stopped).
    /// `vacuum_path` [cm] is what it has travelled in vacuum since it last was in matter.
    ///
    /// One turn per step, not the whole flight: a low-energy electron spiralling along the
    /// field in a vacuum gap may take hundreds of turns to reach matter, and on the GPU every
    /// track of a phase waits for the longest step of the phase (issue #31: such flights made
    /// the GPU 49× slower in a 3.8 T field than without it).
    fn fly_curved(&mut self, t: &mut Track<G::Loc>, vacuum_path: &mut f64) -> bool {
        let (q, p) = charge_momentum(t.particle, t.energy);
        let turn = std::f64::consts::TAU * p / (crate::field::helix::C_LIGHT * self.geo.field_strength() * 10.0);
        let budget = LOOPER_TURNS * turn - *vacuum_path;
        let last = budget <= turn;
        let s_max = if last { budget.max(0.0) } else { turn };
        let (s, end) = self.geo.curved_step(&mut t.pos, &mut t.dir, &mut t.slab, q, p, s_max, 0.0);
        *vacuum_path += s;
        t.time += s / speed(t.particle, t.energy);
        match end {
            StepEnd::Crossed => true,
            StepEnd::LeftWorld => {
                self.tally.escaped += to_fixed(t.energy);
                false
            }
            StepEnd::Limit if !last => true,
            StepEnd::Limit => {
                self.tally.killed += 1;
                self.stop(t);
                false
            }
        }
    }

    fn photon(&mut self, mut t: Track<G::Loc>) {
        let cal = self.geo;
        let mut n_left = exp1(&mut t.rng);
        let mut steps = 0u64;
        loop {
            if t.energy < LOWEST_PHOTON_ENERGY {
                self.deposit(&t.slab, t.pos, t.time, t.energy);
                return;
            }
            steps += 1;
            if steps > MAX_STEPS_PER_TRACK {
                self.tally.killed += 1;
                self.deposit(&t.slab, t.pos, t.time, t.energy);
                return;
            }
            self.tally.neutral_steps += 1;
            let Some(mi) = cal.material(&t.slab) else {
                if self.fly(&mut t) {
                    continue;
                }
                return;
            };
            let m = &self.materials[mi];
            let procs = [
                GammaProcess::Compton,
                GammaProcess::Photoelectric,
                GammaProcess::Conversion,
                GammaProcess::Rayleigh,
            ];
            let xs = procs.map(|p| m.gamma_xs(p, t.energy));
            let total: f64 = xs.iter().sum();
            let (b_distance, b) = cal.next_boundary(t.pos, t.dir, &t.slab);
            let d_int = if total > 0.0 { n_left / total } else { f64::INFINITY };
            if d_int >= b_distance {
                n_left -= b_distance * total;
                t.time += b_distance / C_CM_PER_NS;
                if !cal.cross(&mut t.pos, t.dir, &mut t.slab, &b) {
                    self.tally.escaped += to_fixed(t.energy);
                    return;
                }
                continue;
            }
            for k in 0..3 {
                t.pos[k] += d_int * t.dir[k];
            }
            t.time += d_int / C_CM_PER_NS;
            n_left = exp1(&mut t.rng);
            let mut u = t.rng.uniform_f64() * total;
            let mut chosen = GammaProcess::Rayleigh;
            for (p, x) in procs.iter().zip(xs) {
                if u < x {
                    chosen = *p;
                    break;
                }
                u -= x;
            }
            match chosen {
                GammaProcess::Compton => {
                    let i = klein_nishina::interact(t.energy, t.dir, &mut t.rng);
                    self.deposit(&t.slab, t.pos, t.time, i.energy_deposition);
                    if let Some(e) = i.secondary {
                        let s = Secondary {
                            particle: Particle::Electron,
                            energy: e.energy,
                            dir: e.direction,
                        };
                        self.push(&mut t, s, Creator::Compton);
                    }
                    t.energy = i.energy;
                    t.dir = i.direction;
                }
                GammaProcess::Photoelectric => {
                    let cut = m.cuts.gamma;
                    let out = photoelectric::sample(&m.material, t.energy, t.dir, cut, &mut t.rng);
                    self.deposit(&t.slab, t.pos, t.time, out.local);
                    if let Some(s) = out.electron {
                        self.push(&mut t, s, Creator::Photoelectric);
                    }
                    if let Some(s) = out.fluorescence {
                        self.push(&mut t, s, Creator::Fluorescence);
                    }
                    return;
                }
                GammaProcess::Conversion => {
                    let pair = pair::sample(&m.material, t.energy, t.dir, &mut t.rng);
                    self.tally.rest_mass += to_fixed(2.0 * ELECTRON_MASS) as i64;
                    for s in pair {
                        self.push(&mut t, s, Creator::Conversion);
                    }
                    return;
                }
                GammaProcess::Rayleigh => {
                    t.dir = rayleigh::sample(&m.material, t.energy, t.dir, &mut t.rng);
                }
            }
        }
    }

    fn annihilate_at_rest(&mut self, t: &mut Track<G::Loc>) {
        self.tally.rest_mass -= to_fixed(2.0 * ELECTRON_MASS) as i64;
        for s in annihilation::sample_at_rest(&mut t.rng) {
            self.push(t, s, Creator::Annihilation);
        }
    }

    /// Stop a charged track: deposit what is left; a positron annihilates at rest.
    fn stop(&mut self, t: &mut Track<G::Loc>) {
        self.deposit(&t.slab, t.pos, t.time, t.energy);
        t.energy = 0.0;
        if t.particle == Particle::Positron {
            self.annihilate_at_rest(t);
        }
    }

    fn charged(&mut self, mut t: Track<G::Loc>) {
        let cal = self.geo;
        let p = t.particle;
        let mut n_left = exp1(&mut t.rng);
        let mut msc_state = msc::MscStepState::default();
        let mut entered = true;
        let mut steps = 0u64;
        let field = cal.field_on();
        let mut vacuum_path = 0.0;
        loop {
            if t.energy < LOWEST_ELECTRON_ENERGY {
                self.stop(&mut t);
                return;
            }
            steps += 1;
            if steps > MAX_STEPS_PER_TRACK {
                self.tally.killed += 1;
                self.stop(&mut t);
                return;
            }
            self.tally.charged_steps += 1;
            let Some(mi) = cal.material(&t.slab) else {
                let flew = if field {
                    self.fly_curved(&mut t, &mut vacuum_path)
                } else {
                    self.fly(&mut t)
                };
                if flew {
                    entered = true;
                    continue;
                }
                return;
            };
            vacuum_path = 0.0;
            let m = &self.materials[mi];
            let c = m.charged(p);
            let e0 = t.energy;
            let range = c.eloss.range(e0);
            // 1. Limits.
            let s_range = if range > FINAL_RANGE {
                DR_OVER_RANGE * range + FINAL_RANGE * (1.0 - DR_OVER_RANGE) * (2.0 - FINAL_RANGE / range)
            } else {
                range
            };
            let safety = cal.safety(t.pos, &t.slab);
            let t_msc = msc::limit_step(&m.msc, &mut msc_state, p, e0, range, safety, entered);
            entered = false;
            let mut t_step = s_range.min(t_msc);
            let e_lo = c.eloss.energy_from_range((range - t_step).max(0.0));
            let sig_max = m.charged_max_xs(p, e_lo, e0);
            let t_disc = if sig_max > 0.0 { n_left / sig_max } else { f64::INFINITY };
            let discrete = t_disc < t_step;
            if discrete {
                t_step = t_disc;
            }
            // 2. Geometry.
            let z = msc::true_to_geom(&m.msc, p, e0, t_step, range);
            let pre_pos = t.pos;
            let pre_time = t.time;
            // In a field the track moves now, along its curved path by the geometric length
            // (Geant4's transportation after the MSC's true → geometric conversion); the
            // deposit goes to the volume it started in.
            let mut curved = None;
            let (b_distance, b) = if field {
                let slot = cal.volume(&t.slab);
                let sensitive = cal.sensitive(&t.slab);
                let (q, mom) = charge_momentum(p, e0);
                let (moved, end) = cal.curved_step(&mut t.pos, &mut t.dir, &mut t.slab, q, mom, z, safety);
                curved = Some((slot, sensitive, end));
                // A step that ended on its length limit did not cross: its "boundary" lies
                // beyond (the comparison below must say so even when moved rounds to z).
                (if end == StepEnd::Limit { f64::INFINITY } else { moved }, None)
            } else {
                let (d, b) = cal.next_boundary(t.pos, t.dir, &t.slab);
                (d, Some(b))
            };
            let crossing = z >= b_distance;
            let t_true = if crossing {
                msc::geom_to_true(&m.msc, p, e0, b_distance, range).min(t_step)
            } else {
                t_step
            };
            // 3. Continuous loss.
            let loss = if t_true >= range {
                e0
            } else {
                let linear = t_true * c.eloss.dedx(e0);
                let mean = if linear < LINEAR_LOSS_LIMIT * e0 {
                    linear
                } else {
                    e0 - c.eloss.energy_from_range(range - t_true)
                };
                let t_cut = m.cuts.electron.min(max_secondary_energy(p, e0));
                sample_loss(mean, bohr_variance(&m.material, e0, t_cut, t_true), &mut t.rng).min(e0)
            };
            let e1 = e0 - loss;
            match curved {
                Some((slot, sensitive, _)) => self.deposit_in(slot, sensitive, pre_pos, pre_time, loss),
                None => self.deposit(&t.slab, pre_pos, pre_time, loss),
            }
            self.tally.track_length[mi] += to_fixed(t_true);
            t.time += t_true / speed(p, e0);
            // 4. Move (already done in a field) and scatter.
            let mut inside = true;
            if let Some((_, _, end)) = curved {
                inside = end != StepEnd::LeftWorld;
            } else if crossing {
                inside = cal.cross(&mut t.pos, t.dir, &mut t.slab, b.as_ref().expect("straight step"));
            } else {
                for k in 0..3 {
                    t.pos[k] += z * t.dir[k];
                }
            }
            t.energy = e1;
            n_left -= t_true * sig_max;
            if e1 > 0.0 && t_true > 0.0 {
                let safety_end = if crossing { 0.0 } else { cal.safety(t.pos, &t.slab) };
                let r = msc::sample(&m.msc, p, e0, e1, t_true, t.dir, safety_end, &mut t.rng);
                t.dir = r.dir;
                if !crossing {
                    for k in 0..3 {
                        t.pos[k] += r.displacement[k];
                    }
                }
            }
            if crossing {
                if inside {
                    entered = true;
                    continue;
                }
                self.tally.escaped += to_fixed(t.energy);
                return;
            }
            if !discrete || t.energy < LOWEST_ELECTRON_ENERGY {
                continue;
            }
            // 5. Discrete interaction (integral approach).
            n_left = exp1(&mut t.rng);
            let e = t.energy;
            let procs = [ChargedProcess::DeltaRay, ChargedProcess::Brems, ChargedProcess::Annihilation];
            let xs = procs.map(|q| m.charged_xs(p, q, e));
            let total: f64 = xs.iter().sum();
            let mut u = t.rng.uniform_f64() * sig_max;
            if u >= total {
                continue; // a fictitious interaction
            }
            let mut chosen = ChargedProcess::DeltaRay;
            for (q, x) in procs.iter().zip(xs) {
                if u < x {
                    chosen = *q;
                    break;
                }
                u -= x;
            }
            match chosen {
                ChargedProcess::DeltaRay => {
                    let cut = m.cuts.electron;
                    if e > threshold_energy(p, cut) {
                        let d = delta_ray::sample(p, e, t.dir, cut, &mut t.rng);
                        t.energy = d.energy;
                        t.dir = d.dir;
                        self.push(&mut t, d.delta, Creator::DeltaRay);
                    }
                }
                ChargedProcess::Brems => {
                    let k_cut = m.cuts.gamma;
                    if e > k_cut {
                        let g = brems::sample(&m.material, e, t.dir, k_cut, &mut t.rng);
                        t.energy = e - g.energy;
                        self.push(&mut t, g, Creator::Brems);
                    }
                }
                ChargedProcess::Annihilation => {
                    self.tally.rest_mass -= to_fixed(2.0 * ELECTRON_MASS) as i64;
                    for s in annihilation::sample_in_flight(e, t.dir, &mut t.rng) {
                        self.push(&mut t, s, Creator::Annihilation);
                    }
                    return;
                }
            }
        }
    }
}

/// The id of the primary of event `event` (shared by every geometry and the GPU host code).
#[inline]
#[must_use]
pub fn primary_id(event: u64) -> u64 {
    mix(event.wrapping_add(0x5eed))
}

/// Where the primary of event `event` starts tracking: its id, and its position and slab on
/// entering the calorimeter (`None` when it misses it: its energy escapes). Shared with the
/// GPU host code, so both start from the same numbers.
#[must_use]
pub fn primary_start(phys: &ShowerPhysics, primary: &Primary, event: u64) -> (u64, Option<([f64; 3], usize)>) {
    let cal = &phys.calorimeter;
    let id = primary_id(event);
    let start = match cal.locate_along(primary.pos, primary.dir) {
        Some(s) => Some((primary.pos, s)),
        None => cal
            .distance_to_in(primary.pos, primary.dir)
            .map(|(d, s)| ([0, 1, 2].map(|k| primary.pos[k] + d * primary.dir[k]), s)),
    };
    (id, start)
}

/// The id of the `ordinal`-th (from 1) secondary of the track with id `parent` (the GPU twin
/// is `wd_child_id` in kernels/shower.cu).
#[inline]
#[must_use]
pub fn child_id(parent: u64, ordinal: u64) -> u64 {
    mix(parent ^ mix(ordinal))
}

/// Simulate event number `event` (its tracks draw from streams keyed by `seed` and ids derived
/// from `event`).
///
/// # Panics
/// If the primary energy exceeds [`MAX_PRIMARY_ENERGY`] (the fixed-point tallies would overflow).
#[must_use]
pub fn run_event(phys: &ShowerPhysics, primary: &Primary, seed: u64, event: u64) -> EventTally {
    run_event_or_stop(phys, primary, seed, event, &|| false).expect("never asked to stop")
}

/// Tracks popped between two polls of the stop request in [`run_event_or_stop`]: a 10 TeV event
/// has ~10⁷ tracks and takes minutes, so a run must be able to stop inside an event; 1 024
/// tracks are a few milliseconds of work.
pub const STOP_POLL_TRACKS: u64 = 1024;

/// [`run_event`] that polls `stop` every [`STOP_POLL_TRACKS`] tracks and gives up (`None`) once it
/// returns true; otherwise the same tally as [`run_event`].
///
/// # Panics
/// If the primary energy exceeds [`MAX_PRIMARY_ENERGY`] (the fixed-point tallies would overflow).
#[must_use]
pub fn run_event_or_stop(phys: &ShowerPhysics, primary: &Primary, seed: u64, event: u64, stop: &dyn Fn() -> bool) -> Option<EventTally> {
    assert!(
        primary.energy <= MAX_PRIMARY_ENERGY,
        "primary energy {} MeV above the tallies' limit {MAX_PRIMARY_ENERGY} MeV",
        primary.energy
    );
    let cal = &phys.calorimeter;
    let tally = EventTally::new(cal.slabs(), cal.materials.len(), primary.energy);
    let (id, start) = primary_start(phys, primary, event);
    track_event(cal, &phys.materials, primary, seed, id, start, tally, stop).map(|(t, _)| t)
}

/// Track one event from its primary's id and start (`None`: it missed the geometry and its
/// energy escapes) in geometry `geo` with `materials` (indexed by `geo.material`), into `tally`
/// (sized for the geometry's volumes and materials), with the hits in sensitive volumes.
/// `None` when `stop` asked to stop.
#[allow(clippy::too_many_arguments)]
pub(crate) fn track_event<G: ShowerGeometry>(
    geo: &G,
    materials: &[MaterialPhysics],
    primary: &Primary,
    seed: u64,
    id: u64,
    start: Option<([f64; 3], G::Loc)>,
    tally: EventTally,
    stop: &dyn Fn() -> bool,
) -> Option<(EventTally, Vec<Hit>)> {
    let mut ev = Event {
        geo,
        materials,
        seed,
        stack: Vec::new(),
        tally,
        hits: Vec::new(),
        track: 0,
        track_hits: 0,
    };
    let Some((pos, slab)) = start else {
        ev.tally.escaped = to_fixed(primary.energy);
        return Some((ev.tally, ev.hits));
    };
    ev.stack.push(Track {
        particle: primary.particle,
        energy: primary.energy,
        pos,
        dir: primary.dir,
        slab,
        time: 0.0,
        id,
        children: 0,
        rng: RandomStream::new(seed, TAG_SHOWER, id),
    });
    let mut popped = 0u64;
    while let Some(t) = ev.stack.pop() {
        popped += 1;
        if popped.is_multiple_of(STOP_POLL_TRACKS) && stop() {
            return None;
        }
        ev.track = t.id;
        ev.track_hits = 0;
        match t.particle {
            Particle::Gamma => ev.photon(t),
            _ => ev.charged(t),
        }
    }
    sort_hits(&mut ev.hits);
    Some((ev.tally, ev.hits))
}
