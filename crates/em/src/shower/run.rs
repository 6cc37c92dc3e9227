//! Many events on the CPU (in parallel over events, each event's result independent of the
//! thread count) and what a run reports: per material the energy deposited per event (mean,
//! RMS), the longitudinal profile per slab, created secondaries and steps per event.

use super::geometry::Calorimeter;
use super::transport::{run_event_or_stop, EventTally, Primary, ShowerPhysics, FIXED_SCALE};
use rayon::prelude::*;
use warpdrive_core::progress::Progress;

/// The events of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct ShowerRun {
    pub primary: Primary,
    pub seed: u64,
    /// The number of the first event (a job of a split run starts at its share).
    pub first: u64,
    pub events: Vec<EventTally>,
}

/// Energy deposited in one material per event.
#[derive(Clone, Debug, PartialEq)]
pub struct MaterialSummary {
    pub name: String,
    /// Mean [MeV] and its statistical error (RMS/√N).
    pub edep_mean_mev: f64,
    pub edep_mean_error_mev: f64,
    /// RMS of the per-event energy [MeV].
    pub edep_rms_mev: f64,
}

/// Bytes one event's tally takes in calorimeter `cal` (every event keeps its own, for the RMS per
/// material and events.parquet).
#[must_use]
pub fn event_tally_bytes(cal: &Calorimeter) -> u64 {
    (std::mem::size_of::<EventTally>() + 8 * (cal.slabs() + cal.materials.len())) as u64
}

/// Whether the tallies of `events` events of `cal` fit the memory this process may use
/// (`warpdrive_core::limits`), checked before anything is allocated; `what` names the option.
pub fn check_event_count(cal: &Calorimeter, events: u64, what: &str) -> Result<(), warpdrive_core::limits::LimitError> {
    warpdrive_core::limits::check_alloc(
        what,
        events,
        event_tally_bytes(cal),
        "run fewer events per run and split the rest into runs with different seeds",
    )
}

/// Run `events` events, event i with index `first + i`.
#[must_use]
pub fn run(phys: &ShowerPhysics, primary: &Primary, events: u64, seed: u64, progress: &Progress) -> ShowerRun {
    run_range(phys, primary, 0, events, seed, progress)
}

/// Events `first .. first + n` (so a run can be split into pieces with the same result).
///
/// Every event polls `progress.should_stop()` (before it starts and every
/// [`super::transport::STOP_POLL_TRACKS`] tracks); once it is true the remaining events are
/// skipped and the run holds fewer than `n` events (callers that can be stopped check their
/// token afterwards and discard it, as `engine::Shower::run` does).
#[must_use]
pub fn run_range(phys: &ShowerPhysics, primary: &Primary, first: u64, n: u64, seed: u64, progress: &Progress) -> ShowerRun {
    let stop = || progress.should_stop();
    let events = (first..first + n)
        .into_par_iter()
        .filter_map(|i| {
            if stop() {
                return None;
            }
            let t = run_event_or_stop(phys, primary, seed, i, &stop)?;
            progress.add(1);
            Some(t)
        })
        .collect();
    ShowerRun {
        primary: *primary,
        seed,
        first,
        events,
    }
}

/// Energy deposited in material `m` in one event [MeV] (exact fixed-point sum, converted once).
#[must_use]
pub fn edep_in_material(e: &EventTally, cal: &Calorimeter, m: usize) -> f64 {
    e.edep
        .iter()
        .enumerate()
        .filter(|(s, _)| cal.material_index(*s) == m)
        .map(|(_, &q)| u128::from(q))
        .sum::<u128>() as f64
        / FIXED_SCALE
}

/// Every integer an event tallied, in a fixed order: deposits per slab, escaped, rest mass
/// (two's complement), created γ/e⁻/e⁺, by process, charged and neutral steps, track length
/// per material, killed (the record the checksum hashes and the GPU tally holds).
#[must_use]
pub fn event_words(e: &EventTally) -> Vec<u64> {
    let mut w = e.edep.clone();
    w.push(e.escaped);
    w.push(e.rest_mass as u64);
    w.extend_from_slice(&e.created);
    w.extend_from_slice(&e.created_by);
    w.push(e.charged_steps);
    w.push(e.neutral_steps);
    w.extend_from_slice(&e.track_length);
    w.push(e.killed);
    w
}

/// The tally of [`event_words`] `w` of an event of `slabs` slabs and `materials` materials
/// (the inverse; `None` when `w` has another length).
#[must_use]
pub fn event_from_words(w: &[u64], slabs: usize, materials: usize, primary_energy: f64) -> Option<EventTally> {
    let n_created_by = super::transport::CREATORS.len();
    if w.len() != slabs + 2 + 3 + n_created_by + 2 + materials + 1 {
        return None;
    }
    let mut it = w.iter().copied();
    let mut take = |n: usize| it.by_ref().take(n).collect::<Vec<u64>>();
    let mut e = EventTally::new(slabs, materials, primary_energy);
    e.edep = take(slabs);
    let [escaped, rest_mass] = take(2).try_into().ok()?;
    e.escaped = escaped;
    e.rest_mass = rest_mass as i64;
    e.created = take(3).try_into().ok()?;
    e.created_by = take(n_created_by).try_into().ok()?;
    let [charged, neutral] = take(2).try_into().ok()?;
    e.charged_steps = charged;
    e.neutral_steps = neutral;
    e.track_length = take(materials);
    e.killed = take(1)[0];
    Some(e)
}

/// Mean per event and its statistical error √((⟨x²⟩ − ⟨x⟩²)/N) from Σx and Σx² over `n` events.
#[must_use]
pub fn mean_rms_from_sums(sum: f64, sum2: f64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 0.0);
    }
    let nf = n as f64;
    let mean = sum / nf;
    let var = (sum2 / nf - mean * mean).max(0.0);
    (mean, (var / nf).sqrt())
}

fn mean_rms(x: impl Iterator<Item = f64> + Clone) -> (f64, f64, usize) {
    let n = x.clone().count();
    if n == 0 {
        return (0.0, 0.0, 0);
    }
    let mean = x.clone().sum::<f64>() / n as f64;
    let var = x.map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
    (mean, var.sqrt(), n)
}

impl ShowerRun {
    /// Per material of the calorimeter (in its order): energy per event.
    #[must_use]
    pub fn per_material(&self, phys: &ShowerPhysics) -> Vec<MaterialSummary> {
        let cal = &phys.calorimeter;
        (0..cal.materials.len())
            .map(|m| {
                let per_event = self.events.iter().map(move |e| edep_in_material(e, cal, m));
                let (mean, rms, n) = mean_rms(per_event);
                MaterialSummary {
                    name: cal.materials[m].name.clone(),
                    edep_mean_mev: mean,
                    edep_mean_error_mev: rms / (n.max(1) as f64).sqrt(),
                    edep_rms_mev: rms,
                }
            })
            .collect()
    }

    /// Mean energy per event deposited in each slab [MeV].
    #[must_use]
    pub fn profile(&self) -> Vec<f64> {
        let slabs = self.events.first().map_or(0, |e| e.edep.len());
        let n = self.events.len().max(1) as f64;
        (0..slabs)
            .map(|s| self.events.iter().map(|e| u128::from(e.edep[s])).sum::<u128>() as f64 / FIXED_SCALE / n)
            .collect()
    }

    /// Mean number of created γ, e⁻, e⁺ per event.
    #[must_use]
    pub fn created(&self) -> [f64; 3] {
        let n = self.events.len().max(1) as f64;
        [0, 1, 2].map(|k| self.events.iter().map(|e| e.created[k] as f64).sum::<f64>() / n)
    }

    /// Mean number of secondaries per event by creating process ([`super::transport::CREATORS`]).
    #[must_use]
    pub fn created_by(&self) -> Vec<f64> {
        let n = self.events.len().max(1) as f64;
        (0..super::transport::CREATORS.len())
            .map(|k| self.events.iter().map(|e| e.created_by[k] as f64).sum::<f64>() / n)
            .collect()
    }

    /// Mean charged track length per event in each material [cm].
    #[must_use]
    pub fn track_length(&self) -> Vec<f64> {
        let n = self.events.len().max(1) as f64;
        let m = self.events.first().map_or(0, |e| e.track_length.len());
        (0..m)
            .map(|k| self.events.iter().map(|e| u128::from(e.track_length[k])).sum::<u128>() as f64 / FIXED_SCALE / n)
            .collect()
    }

    /// Mean charged and neutral steps per event.
    #[must_use]
    pub fn steps(&self) -> (f64, f64) {
        let n = self.events.len().max(1) as f64;
        (
            self.events.iter().map(|e| e.charged_steps as f64).sum::<f64>() / n,
            self.events.iter().map(|e| e.neutral_steps as f64).sum::<f64>() / n,
        )
    }

    /// Total track steps of the run.
    #[must_use]
    pub fn total_steps(&self) -> u64 {
        self.events.iter().map(|e| e.charged_steps + e.neutral_steps).sum()
    }

    /// Mean energy leaving the calorimeter per event [MeV].
    #[must_use]
    pub fn escaped(&self) -> f64 {
        self.events.iter().map(|e| u128::from(e.escaped)).sum::<u128>() as f64 / FIXED_SCALE / self.events.len().max(1) as f64
    }

    /// Largest |E₀ − deposits − escaped − rest mass| / E₀ over the events.
    #[must_use]
    pub fn worst_balance(&self) -> f64 {
        self.events
            .iter()
            .map(|e| (e.balance() / e.primary_energy).abs())
            .fold(0.0, f64::max)
    }

    /// Tracks stopped by the step guard (should be 0).
    #[must_use]
    pub fn killed(&self) -> u64 {
        self.events.iter().map(|e| e.killed).sum()
    }

    /// A checksum of everything the events tallied (fixed-point deposits per slab, escaped
    /// energy, rest mass, created counts, steps, track lengths, killed tracks; FNV-1a over the
    /// events in order), so two runs (threads, devices) can be compared in one number.
    #[must_use]
    pub fn checksum(&self) -> u64 {
        let mut h = warpdrive_core::hash::Fnv64::new();
        for e in &self.events {
            for w in event_words(e) {
                h.write(&w.to_le_bytes());
            }
        }
        h.finish()
    }
}
