//! A function tabulated on a uniform grid in ln E, evaluated by linear interpolation in E between
//! neighbouring points (Celeritas' `XsCalculator` convention, spec §2.3; the same as
//! [`crate::xs::XsGrid`] without the E·Σ part), clamped to the end values outside.

use rayon::prelude::*;
use warpdrive_core::pmath::Portable;

/// Values on energies E_i = E_0 · exp(i·Δ), i = 0..n.
#[derive(Clone, Debug, PartialEq)]
pub struct LogGrid {
    /// ln E_0 [ln MeV].
    pub log_front: f64,
    /// Δ = ln(E_{i+1}/E_i).
    pub log_delta: f64,
    /// E_i [MeV].
    pub energy: Vec<f64>,
    pub value: Vec<f64>,
}

impl LogGrid {
    /// Geant4's binning rule: ⌈bins_per_decade · log₁₀(e_max/e_min)⌉ equal bins in ln E from
    /// `e_min` to `e_max` (both included), f evaluated at every point (in parallel: the points
    /// are independent, so the values are those of a sequential loop).
    #[must_use]
    pub fn new(e_min: f64, e_max: f64, bins_per_decade: usize, f: impl Fn(f64) -> f64 + Sync) -> LogGrid {
        assert!(e_min > 0.0 && e_max > e_min && bins_per_decade > 0, "bad grid {e_min}..{e_max}");
        let decades = (e_max / e_min).log10();
        let bins = ((bins_per_decade as f64 * decades) - 1e-9).ceil().max(1.0) as usize;
        let log_front = e_min.pln();
        let log_delta = (e_max / e_min).pln() / bins as f64;
        let mut energy: Vec<f64> = (0..=bins).map(|i| (log_front + i as f64 * log_delta).pexp()).collect();
        // The ends exactly as asked.
        energy[0] = e_min;
        energy[bins] = e_max;
        let value = energy.par_iter().map(|&e| f(e)).collect();
        LogGrid {
            log_front,
            log_delta,
            energy,
            value,
        }
    }

    /// Number of points.
    #[must_use]
    pub fn len(&self) -> usize {
        self.energy.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.energy.is_empty()
    }

    #[must_use]
    pub fn front(&self) -> f64 {
        self.energy[0]
    }

    #[must_use]
    pub fn back(&self) -> f64 {
        self.energy[self.energy.len() - 1]
    }

    /// The bin i with E_i ≤ e < E_{i+1} (clamped to 0..n − 2). The logarithm only *estimates* i;
    /// the comparisons with the bin energies decide it, so any logarithm gives the same bin —
    /// this one is the fast host libm's, the CUDA twin uses the device's (no portable math
    /// needed: bit-identical bins on both sides by construction).
    #[inline]
    #[must_use]
    pub fn find(&self, e: f64) -> usize {
        let n = self.energy.len();
        let mut i = (((e.ln() - self.log_front) / self.log_delta).max(0.0) as usize).min(n - 2);
        while i > 0 && e < self.energy[i] {
            i -= 1;
        }
        while i + 2 < n && e >= self.energy[i + 1] {
            i += 1;
        }
        i
    }

    /// f(e): linear interpolation in E inside the grid, end values outside.
    #[inline]
    #[must_use]
    pub fn eval(&self, e: f64) -> f64 {
        let n = self.energy.len();
        if e <= self.energy[0] {
            return self.value[0];
        }
        if e >= self.energy[n - 1] {
            return self.value[n - 1];
        }
        let i = self.find(e);
        let (e0, e1) = (self.energy[i], self.energy[i + 1]);
        self.value[i] + (self.value[i + 1] - self.value[i]) * (e - e0) / (e1 - e0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_and_interpolation() {
        // Geant4's default: 7 bins per decade, 100 eV to 100 TeV → 84 bins, 85 points.
        let g = LogGrid::new(1e-4, 1e8, 7, |e| e);
        assert_eq!(g.len(), 85);
        assert_eq!((g.front(), g.back()), (1e-4, 1e8));
        assert!((g.energy[28] - 1.0).abs() < 1e-12);
        // A linear function is reproduced exactly; the ends are clamped.
        for &e in &[1.5e-4, 0.3, 1.0, 7.7e5] {
            assert!((g.eval(e) / e - 1.0).abs() < 1e-12, "{e}");
        }
        assert_eq!(g.eval(1e-6), 1e-4);
        assert_eq!(g.eval(1e9), 1e8);
        for i in 0..g.len() {
            for e in [g.energy[i], g.energy[i] * (1.0 + 1e-15), g.energy[i] * (1.0 - 1e-15)] {
                if e < g.front() || e > g.back() {
                    continue;
                }
                let j = g.find(e);
                assert!(g.energy[j] <= e && e <= g.energy[j + 1], "{i} {e} {j}");
            }
        }
        // Non-integer decade counts round the bins up.
        assert_eq!(LogGrid::new(2e-3, 1e8, 7, |_| 0.0).len(), 75 + 1); // ⌈7 × 10.7⌉ = 75 bins
    }
}
