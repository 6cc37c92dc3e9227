//! Scrambled trials: every event gets a new uniform right ascension (declination and energy
//! kept) from the Philox stream of the trial, so trial k is the same on any device, in any job
//! and for any thread count.
//!
//! Stream of trial k: counter (block, TAG_TRIAL, k lo, k hi) under the run's seed. Event e (its
//! index in the selection, in input order) takes the 64 bits of words 2(e mod 2), 2(e mod 2)+1
//! of block ⌊e/2⌋ — the e-th `uniform_f64` of `RandomStream::new(seed, TAG_TRIAL, k)` — and its
//! RA is 2π·(1 − u), u ∈ (0, 1]. The CUDA kernel computes the same draw (`trial_turn`).
//!
//! When the events' right ascensions are rounded to a grid (the public IceCube releases give
//! 0.1°), the scrambled ones are rounded to the same grid ([`quantize_turn`]); otherwise the
//! data have lattice structure the background lacks and the observed sky shows a spurious
//! excess at small angles (docs/sky.md, "RA grid").

use crate::count::{count_pairs, cumulative, Workspace};
use crate::sample::Sample;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::ops::Range;
use warpdrive_core::progress::Progress;
use warpdrive_core::rng::{u64_to_unit_f64, Philox4x32};

/// Stream tag of RA scrambling ("SK" + 1).
pub const TAG_TRIAL: u32 = 0x534b_0001;

/// RA of event `e` in trial `trial`, as a fraction of a turn in [0, 1).
#[inline]
#[must_use]
pub fn trial_turn(gen: &Philox4x32, trial: u64, e: u32) -> f64 {
    let w = gen.block([e / 2, TAG_TRIAL, trial as u32, (trial >> 32) as u32]);
    let k = 2 * (e % 2) as usize;
    1.0 - u64_to_unit_f64((u64::from(w[k]) << 32) | u64::from(w[k + 1]))
}

/// Round a turn t ∈ [0, 1) to the nearest of `grid` equally spaced values (0 = no rounding),
/// wrapping 1 to 0.
#[inline]
#[must_use]
pub fn quantize_turn(t: f64, grid: u32) -> f64 {
    if grid == 0 {
        return t;
    }
    let g = f64::from(grid);
    let q = (t * g + 0.5).floor() / g;
    if q >= 1.0 {
        q - 1.0
    } else {
        q
    }
}

/// The scrambled RA [turns] of every sorted position of `s` in trial `trial`.
pub fn trial_turns(s: &Sample, seed: u64, trial: u64, out: &mut Vec<f64>) {
    let gen = Philox4x32::new(seed);
    out.clear();
    out.extend(s.order.iter().map(|&e| quantize_turn(trial_turn(&gen, trial, e), s.ra_grid)));
}

/// Cumulative counts N[cut][bin] of one trial.
#[must_use]
pub fn trial_counts(s: &Sample, seed: u64, trial: u64, ws: &mut Workspace, turns: &mut Vec<f64>) -> Vec<u64> {
    trial_turns(s, seed, trial, turns);
    let mut hist = vec![0u64; s.hist_len()];
    count_pairs(s, turns, ws, &mut hist);
    cumulative(&hist, s.cuts.levels(), s.bins.len())
}

/// The background distributions: for every (cut, bin), how many trials gave each count.
/// Exact, order-independent and additive, so jobs merge into the result of one run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Background {
    pub trials: u64,
    /// One map per (cut, bin), cut-major: count → number of trials.
    pub freq: Vec<BTreeMap<u64, u64>>,
    /// Each trial's counts, kept when a run is small enough ([`KEEP_CELLS`]), for the
    /// post-trial p-value; empty otherwise and after merging job outputs.
    pub kept: Vec<Vec<u64>>,
    keep: bool,
}

/// Keep per-trial counts while trials × cells stays below this (128 MB).
pub const KEEP_CELLS: u64 = 16_000_000;

impl Background {
    #[must_use]
    pub fn new(cells: usize) -> Self {
        Self {
            trials: 0,
            freq: vec![BTreeMap::new(); cells],
            kept: Vec::new(),
            keep: false,
        }
    }

    /// For a run of `trials` trials: keeps each trial's counts when that fits [`KEEP_CELLS`].
    #[must_use]
    pub fn for_trials(cells: usize, trials: u64) -> Self {
        Self {
            keep: trials.saturating_mul(cells as u64) <= KEEP_CELLS,
            ..Self::new(cells)
        }
    }

    /// Whether every trial's counts are held (for the post-trial p-value).
    #[must_use]
    pub fn holds_trials(&self) -> bool {
        self.keep && self.kept.len() as u64 == self.trials
    }

    /// Drop the per-trial counts: the whole analysis (all jobs) has more trials × cells than
    /// [`KEEP_CELLS`], so a job keeps none, as one run would.
    pub fn forget_trials(&mut self) {
        self.keep = false;
        self.kept = Vec::new();
    }

    /// The per-trial counts of a merge: every trial's, in trial order, as one run keeps them.
    pub fn restore_trials(&mut self, kept: Vec<Vec<u64>>) {
        assert_eq!(kept.len() as u64, self.trials, "one count vector per trial");
        assert!(kept.iter().all(|c| c.len() == self.freq.len()));
        self.keep = true;
        self.kept = kept;
    }

    /// Add one trial's cumulative counts.
    pub fn add(&mut self, counts: &[u64]) {
        assert_eq!(counts.len(), self.freq.len());
        for (m, &c) in self.freq.iter_mut().zip(counts) {
            *m.entry(c).or_insert(0) += 1;
        }
        self.trials += 1;
        if self.keep {
            self.kept.push(counts.to_vec());
        }
    }

    /// Add another run's distributions (same cuts and bins). Per-trial counts are dropped.
    pub fn merge(&mut self, other: &Background) {
        let kept = std::mem::take(&mut self.kept);
        self.keep = false;
        drop(kept);
        assert_eq!(self.freq.len(), other.freq.len());
        for (m, o) in self.freq.iter_mut().zip(&other.freq) {
            for (&c, &n) in o {
                *m.entry(c).or_insert(0) += n;
            }
        }
        self.trials += other.trials;
    }

    /// Append the trials that follow this run's (the next GPU's share): per-trial counts stay
    /// when both kept them, so the result equals one run over both ranges.
    pub fn append(&mut self, other: Background) {
        if self.keep && other.keep {
            let kept = other.kept.clone();
            self.merge(&other);
            self.keep = true;
            self.kept.extend(kept);
        } else {
            self.merge(&other);
        }
    }

    /// Mean and standard deviation (n − 1 normalisation) of cell `k`.
    #[must_use]
    pub fn mean_std(&self, k: usize) -> (f64, f64) {
        let n = self.trials as f64;
        if self.trials == 0 {
            return (f64::NAN, f64::NAN);
        }
        let mean = self.freq[k].iter().map(|(&c, &m)| c as f64 * m as f64).sum::<f64>() / n;
        let var = if self.trials > 1 {
            self.freq[k]
                .iter()
                .map(|(&c, &m)| (c as f64 - mean).powi(2) * m as f64)
                .sum::<f64>()
                / (n - 1.0)
        } else {
            0.0
        };
        (mean, var.sqrt())
    }

    /// Trials of cell `k` with a count ≥ `value`.
    #[must_use]
    pub fn at_least(&self, k: usize, value: u64) -> u64 {
        self.freq[k].range(value..).map(|(_, &m)| m).sum()
    }
}

/// Run trials `range` on the CPU (rayon over trials, one worker scratch per thread). Stops
/// early, with a partial background, when `progress` says so.
#[must_use]
pub fn run_cpu(s: &Sample, seed: u64, range: Range<u64>, progress: &Progress) -> Background {
    let mut bg = Background::for_trials(s.hist_len(), range.end - range.start);
    let batch = 256u64;
    let mut start = range.start;
    while start < range.end {
        let end = (start + batch * rayon::current_num_threads() as u64).min(range.end);
        let counts: Vec<Vec<u64>> = (start..end)
            .into_par_iter()
            .map_init(
                || (Workspace::default(), Vec::new()),
                |(ws, turns), k| {
                    if progress.should_stop() {
                        return Vec::new();
                    }
                    let c = trial_counts(s, seed, k, ws, turns);
                    progress.add(1);
                    c
                },
            )
            .collect();
        if progress.should_stop() {
            // Stopped: the caller discards this partial background (engine: `Cancelled`).
            return bg;
        }
        for c in &counts {
            bg.add(c);
        }
        start = end;
    }
    bg
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpdrive_core::RandomStream;

    #[test]
    fn trial_turn_is_the_streams_sequence() {
        let gen = Philox4x32::new(99);
        let mut r = RandomStream::new(99, TAG_TRIAL, 12345);
        for e in 0..11 {
            assert_eq!(trial_turn(&gen, 12345, e), 1.0 - r.uniform_f64());
        }
    }

    #[test]
    fn quantized_turns_lie_on_the_grid() {
        assert_eq!(quantize_turn(0.123_456, 0), 0.123_456);
        assert_eq!(quantize_turn(0.999_99, 3600), 0.0);
        let q = quantize_turn(275.12 / 360.0, 3600) * 360.0;
        assert!((q - 275.1).abs() < 1e-12, "{q}");
    }

    #[test]
    fn background_statistics_and_merge() {
        let mut a = Background::new(1);
        for c in [10, 12, 12, 14] {
            a.add(&[c]);
        }
        assert_eq!(a.mean_std(0), (12.0, (8.0f64 / 3.0).sqrt()));
        assert_eq!(a.at_least(0, 12), 3);
        let mut b = Background::new(1);
        b.add(&[20]);
        a.merge(&b);
        assert_eq!((a.trials, a.at_least(0, 13)), (5, 2));
    }
}
