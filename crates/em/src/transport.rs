//! The stepping loop of the Klein–Nishina mini-app (spec §1.1), on the CPU: track slots as
//! state, iterations of move → interact → process hits, as Celeritas' demo-interactor does it.
//!
//! Per iteration, for every live track (rayon over slots):
//! 1. move: d = −ln ξ / Σ(E), r += d·Ω (a fresh exponential each step: one process, infinite
//!    medium);
//! 2. if E < 10 keV (tested after the move, as the reference does) deposit E there and kill;
//!    else interact (physics list) and deposit the electron's energy there;
//! 3. every deposit is a *hit* claimed from a stack allocator, and every Compton electron above
//!    100 eV a *secondary*; a full stack makes the track retry the same interaction in the next
//!    iteration (its random stream is rewound), so buffer sizes never change results.
//!
//! After the iteration the hits are binned into the z tally in fixed point (2⁻³⁰ MeV units), so
//! sums are exact integers independent of order, thread count and device.

use crate::physics::PhysicsList;
use crate::stack::StackAllocator;
use rayon::prelude::*;
use warpdrive_core::pmath::Portable;
use warpdrive_core::progress::Progress;
use warpdrive_core::RandomStream;

/// Photons below this energy are killed after their move and deposit their energy [MeV].
pub const KILL_ENERGY: f64 = 0.01;
/// Stream tag of EM tracks.
pub const TAG_TRACK: u32 = 0x454d_0001;
/// Fixed-point unit of deposited energy: 2⁻³⁰ MeV.
pub const EDEP_SCALE: f64 = (1u64 << 30) as f64;
/// The most energy one run may deposit [MeV]: a tally bin and the total are 64-bit counts of
/// EDEP_SCALE units.
pub const MAX_DEPOSIT: f64 = u64::MAX as f64 / EDEP_SCALE;
/// Fixed-point unit of Σ E·z: 2⁻²⁰ MeV·cm (summed as 128-bit integers: in the unbounded medium a
/// 100 TeV photon's deposits alone can exceed 2⁶³ units).
pub const MOMENT_SCALE: f64 = (1u64 << 20) as f64;

/// Uniform z bins of the energy-deposition tally; deposits outside go to the first/last bin.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TallyGrid {
    /// Lower edge of the first bin [cm].
    pub front: f64,
    /// Bin width [cm].
    pub delta: f64,
    pub size: usize,
}

impl TallyGrid {
    pub fn new(front: f64, delta: f64, size: usize) -> Result<Self, String> {
        if size == 0 {
            return Err("the tally grid is empty (size 0)".into());
        }
        if !(delta.is_finite() && delta > 0.0 && front.is_finite()) {
            return Err(format!(
                "tally grid: bin width {delta} cm must be positive and the front {front} cm finite"
            ));
        }
        // One 64-bit fixed-point tally per bin per task in flight, and the profile: check the
        // bin count against the memory available before any array is made.
        warpdrive_core::limits::check_alloc("tally_bins", size as u64, 4 * 8, "use fewer, wider bins").map_err(|e| e.to_string())?;
        Ok(Self { front, delta, size })
    }

    #[inline]
    #[must_use]
    pub fn bin(&self, z: f64) -> usize {
        let b = ((z - self.front) / self.delta).floor();
        if b < 0.0 {
            0
        } else {
            (b as usize).min(self.size - 1)
        }
    }
}

/// What to simulate.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Primary photon energy [MeV], from the origin along +z.
    pub energy: f64,
    pub tracks: u64,
    pub seed: u64,
    pub tally: TallyGrid,
    /// Track slots in flight at once (the rest wait for the next batch).
    pub slots: usize,
    /// Capacity of the hit stack per iteration (default: one per slot).
    pub hit_capacity: u32,
    /// Capacity of the secondary stack per iteration (default: one per slot).
    pub secondary_capacity: u32,
}

impl RunOptions {
    pub fn new(energy: f64, tracks: u64, seed: u64, tally: TallyGrid) -> Result<Self, String> {
        if !(energy.is_finite() && energy > 0.0) {
            return Err(format!("photon energy {energy} MeV must be positive"));
        }
        if energy > 1e8 {
            return Err(format!("photon energy {energy} MeV is above the cross-section table (100 TeV)"));
        }
        if tracks == 0 {
            return Err("zero tracks requested".into());
        }
        // Up to 2^23 slots in flight (~140 B of GPU state and stack each): on an H100 more slots
        // are faster up to all 8.4 M tracks of the benchmark (docs/performance/em.md). The CPU
        // runs groups of at most 4 096 of them per task.
        let slots = tracks.min(1 << 23) as usize;
        Ok(Self {
            energy,
            tracks,
            seed,
            tally,
            slots,
            hit_capacity: slots as u32,
            secondary_capacity: slots as u32,
        })
    }
}

/// Totals of a run (exact integers where order could matter).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunResult {
    pub tracks: u64,
    /// Track-steps (moves).
    pub steps: u64,
    /// Loop iterations over all batches.
    pub iterations: u64,
    /// Interactions retried because a stack was full.
    pub retries: u64,
    /// Compton electrons stored as secondaries.
    pub secondaries: u64,
    /// Deposited energy per bin, fixed point (2⁻³⁰ MeV).
    pub tally: Vec<u64>,
    /// Σ E over all deposits, fixed point (2⁻³⁰ MeV).
    pub edep_total: u128,
    /// Σ E·z, fixed point (2⁻²⁰ MeV·cm).
    pub edep_z: i128,
}

impl RunResult {
    /// Add another run's totals (same tally grid): exact, since every sum is an integer.
    pub fn add(&mut self, o: &RunResult) {
        self.tracks += o.tracks;
        self.steps += o.steps;
        self.iterations += o.iterations;
        self.retries += o.retries;
        self.secondaries += o.secondaries;
        self.tally.iter_mut().zip(&o.tally).for_each(|(a, b)| *a += b);
        self.edep_total += o.edep_total;
        self.edep_z += o.edep_z;
    }

    /// Energy per primary in each bin [MeV].
    #[must_use]
    pub fn profile(&self) -> Vec<f64> {
        self.tally.iter().map(|&q| q as f64 / EDEP_SCALE / self.tracks as f64).collect()
    }

    /// Mean depth of the deposited energy [cm] (from exact deposit positions).
    #[must_use]
    pub fn mean_depth(&self) -> f64 {
        (self.edep_z as f64 / MOMENT_SCALE) / (self.edep_total as f64 / EDEP_SCALE)
    }

    /// Energy per primary deposited in bins whose lower edge is at or beyond `z` [MeV].
    #[must_use]
    pub fn energy_beyond(&self, grid: &TallyGrid, z: f64) -> f64 {
        let first = ((z - grid.front) / grid.delta).ceil().max(0.0) as usize;
        self.tally.iter().skip(first).map(|&q| q as f64).sum::<f64>() / EDEP_SCALE / self.tracks as f64
    }

    /// FNV-1a 64 of the fixed-point tally and totals: equal checksums ⇔ identical results (for
    /// comparing runs across devices, thread counts and jobs).
    #[must_use]
    pub fn checksum(&self) -> String {
        let mut h = warpdrive_core::hash::Fnv64::new();
        for &q in &self.tally {
            h.write(&u128::from(q).to_le_bytes());
        }
        for x in [
            self.edep_total,
            self.edep_z as u128,
            u128::from(self.steps),
            u128::from(self.secondaries),
        ] {
            h.write(&x.to_le_bytes());
        }
        h.hex()
    }

    #[must_use]
    pub fn steps_per_track(&self) -> f64 {
        self.steps as f64 / self.tracks as f64
    }
}

/// One track slot.
#[derive(Clone, Debug)]
struct Track {
    pos: [f64; 3],
    dir: [f64; 3],
    energy: f64,
    alive: bool,
    /// Moved, interaction still to do (a stack was full last iteration).
    pending: bool,
    steps: u32,
    /// Compton electrons stored as secondaries.
    electrons: u32,
    rng: RandomStream,
}

#[derive(Clone, Copy, Debug, Default)]
struct Hit {
    z: f64,
    edep: f64,
}

/// Run `opts.tracks` primaries through the physics list on the CPU. Groups of at most 4 096
/// tracks (a few hundredths of a second each) poll `progress.should_stop()`: once it is true the
/// remaining groups are skipped and the result is partial (callers that can be stopped must
/// check their token afterwards, as `engine::KleinNishina::run` does).
pub fn run(physics: &PhysicsList, opts: &RunOptions, progress: &Progress) -> RunResult {
    // Work is cut into groups of track ids; each rayon task runs its group to the end with its
    // own slots, stacks and tally (no shared counters between threads), and the integer results
    // add up exactly in any order.
    let group = (opts.slots as u64).clamp(1, CPU_GROUP);
    let groups = opts.tracks.div_ceil(group);
    let mut res = (0..groups)
        .into_par_iter()
        .filter_map(|g| {
            // Asked to stop (Ctrl-C, a signal, a callback): the remaining groups are skipped and
            // the caller discards the partial result (the engine returns `Cancelled`).
            if progress.should_stop() {
                return None;
            }
            let ids = g * group..((g + 1) * group).min(opts.tracks);
            let r = run_group(physics, opts, ids);
            progress.add(r.tracks);
            Some(r)
        })
        .reduce(
            || RunResult {
                tally: vec![0; opts.tally.size],
                ..Default::default()
            },
            |mut a, b| {
                a.add(&b);
                a
            },
        );
    res.tracks = opts.tracks;
    res
}

/// Track ids per CPU task (at most `slots`).
const CPU_GROUP: u64 = 4096;

/// The tracks `ids` on one thread: iterations of step → drain the stacks → bin the hits.
fn run_group(physics: &PhysicsList, opts: &RunOptions, ids: std::ops::Range<u64>) -> RunResult {
    let mut res = RunResult {
        tally: vec![0; opts.tally.size],
        tracks: ids.end - ids.start,
        ..Default::default()
    };
    let cap = |c: u32| c.min((ids.end - ids.start) as u32).max(1);
    let mut hits: StackAllocator<Hit> = StackAllocator::new(cap(opts.hit_capacity));
    let mut secondaries: StackAllocator<crate::physics::Secondary> = StackAllocator::new(cap(opts.secondary_capacity));
    let mut tracks: Vec<Track> = ids
        .map(|id| Track {
            pos: [0.0; 3],
            dir: [0.0, 0.0, 1.0],
            energy: opts.energy,
            alive: true,
            pending: false,
            steps: 0,
            electrons: 0,
            rng: RandomStream::new(opts.seed, TAG_TRACK, id),
        })
        .collect();
    let mut alive = tracks.len();
    while alive > 0 {
        for t in tracks.iter_mut().filter(|t| t.alive) {
            res.retries += u64::from(!step(t, physics, &hits, &secondaries));
        }
        res.iterations += 1;
        let _ = secondaries.drain();
        for h in hits.drain() {
            let q = (h.edep * EDEP_SCALE).round() as u64;
            res.tally[opts.tally.bin(h.z)] += q;
            res.edep_total += u128::from(q);
            res.edep_z += (h.edep * h.z * MOMENT_SCALE).round() as i128;
        }
        alive = tracks.iter().filter(|t| t.alive).count();
    }
    res.steps = tracks.iter().map(|t| u64::from(t.steps)).sum();
    res.secondaries = tracks.iter().map(|t| u64::from(t.electrons)).sum();
    res
}

/// One iteration of one live track; `false` when it must retry (a stack was full).
#[inline]
fn step(t: &mut Track, physics: &PhysicsList, hits: &StackAllocator<Hit>, secondaries: &StackAllocator<crate::physics::Secondary>) -> bool {
    if !t.pending {
        let sigma = physics.total_xs(t.energy);
        let d = -t.rng.uniform_f64().pln() / sigma;
        for k in 0..3 {
            t.pos[k] += d * t.dir[k];
        }
        t.steps += 1;
    }
    if t.energy < KILL_ENERGY {
        if hits
            .push(Hit {
                z: t.pos[2],
                edep: t.energy,
            })
            .is_none()
        {
            t.pending = true;
            return false;
        }
        t.alive = false;
        t.pending = false;
        return true;
    }
    let saved = t.rng.clone();
    let i = physics.interact(t.energy, t.dir, &mut t.rng);
    let edep = i.energy_deposition + i.secondary.map_or(0.0, |s| s.energy);
    let stored = i.secondary.is_none_or(|s| secondaries.push(s).is_some()) && hits.push(Hit { z: t.pos[2], edep }).is_some();
    if !stored {
        t.rng = saved;
        t.pending = true;
        return false;
    }
    t.energy = i.energy;
    t.dir = i.direction;
    t.pending = false;
    t.electrons += u32::from(i.secondary.is_some());
    true
}
