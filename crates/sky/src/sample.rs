//! The prepared sample ("params", DESIGN.md §4): the selected events sorted by declination,
//! with everything that stays fixed across scrambled trials precomputed once — sin δ, cos δ,
//! energy level, the declination window of each event and the declination bands of the CPU
//! cell list. Only the right ascensions change from trial to trial.

use crate::bins::AngularBins;
use crate::cuts::ResolvedCuts;
use crate::events::Event;

/// Margin on every search window, relative to the largest angle, so that the windows never cut
/// off a pair the edge rule (tolerance 5·10⁻¹⁰ in angle) would count.
const WINDOW_MARGIN: f64 = 1e-6;

/// Half-height [deg] of every declination search window of a sample with these bins: the
/// largest angle with [`WINDOW_MARGIN`] (the GPU's `window_end` and the injected signal
/// events' windows, `crate::inject::SignalBatch`).
#[must_use]
pub fn window_deg(bins: &AngularBins) -> f64 {
    bins.max_deg() * (1.0 + WINDOW_MARGIN)
}

/// A declination band of the CPU cell list: sorted positions `start..end` and the half-width
/// [turns] of the right-ascension window a partner can lie in, within the band and towards
/// the next band.
#[derive(Clone, Debug, PartialEq)]
pub struct Band {
    pub start: usize,
    pub end: usize,
    pub window_same: f64,
    pub window_next: f64,
    /// Number of RA cells, ⌊1 / (largest window involving this band)⌋ ≥ 1.
    pub cells: usize,
}

#[derive(Clone, Debug)]
pub struct Sample {
    /// Declination [deg], ascending.
    pub dec: Vec<f64>,
    pub sin_dec: Vec<f64>,
    pub cos_dec: Vec<f64>,
    /// Observed right ascension as a fraction of a turn (RA/360°).
    pub ra_turn: Vec<f64>,
    pub level: Vec<u8>,
    /// Index of each sorted event in the selection's input order: the key of its random draws.
    pub order: Vec<u32>,
    /// Exclusive end of the declination window of each event: partners j > i with
    /// δ_j − δ_i ≤ θ_max (the GPU loop; the CPU uses `bands`).
    pub window_end: Vec<u32>,
    pub bands: Vec<Band>,
    pub bins: AngularBins,
    pub cuts: ResolvedCuts,
    /// Scrambled right ascensions are rounded to 1/ra_grid of a turn (0: continuous).
    pub ra_grid: u32,
}

/// Half-width [turns] of the RA window holding every partner within `theta` [deg] of an event,
/// when both lie at |δ| ≤ `dec_abs_max` [deg]: |sin Δα| ≤ sin Ψ / cos δ (sine rule in the
/// pole–event–event triangle), and |Δα| < 90° when |δ| + Ψ < 90°; otherwise the whole circle.
#[must_use]
pub fn ra_window(theta: f64, dec_abs_max: f64) -> f64 {
    if dec_abs_max + theta >= 89.999 {
        return 0.5;
    }
    let s = theta.to_radians().sin() / dec_abs_max.to_radians().cos();
    (s.min(1.0).asin() / std::f64::consts::TAU * (1.0 + WINDOW_MARGIN)).min(0.5)
}

impl Sample {
    /// Sort `events` by declination and precompute the fixed quantities.
    pub fn new(events: &[Event], bins: AngularBins, cuts: ResolvedCuts) -> Result<Sample, String> {
        if events.len() < 2 {
            return Err(format!("{} event(s) selected: pair counting needs at least two", events.len()));
        }
        if events.len() > u32::MAX as usize / 2 {
            return Err(format!("{} events: at most {} are supported", events.len(), u32::MAX / 2));
        }
        let mut idx: Vec<u32> = (0..events.len() as u32).collect();
        idx.sort_by(|&a, &b| events[a as usize].dec.total_cmp(&events[b as usize].dec).then(a.cmp(&b)));
        let ev = |i: u32| &events[i as usize];
        let dec: Vec<f64> = idx.iter().map(|&i| ev(i).dec).collect();
        let theta = window_deg(&bins);
        let mut window_end = Vec::with_capacity(dec.len());
        let mut j = 0usize;
        for i in 0..dec.len() {
            j = j.max(i + 1);
            while j < dec.len() && dec[j] - dec[i] <= theta {
                j += 1;
            }
            window_end.push(j as u32);
        }
        Ok(Sample {
            sin_dec: dec.iter().map(|d| d.to_radians().sin()).collect(),
            cos_dec: dec.iter().map(|d| d.to_radians().cos()).collect(),
            ra_turn: idx.iter().map(|&i| ev(i).ra / 360.0).collect(),
            level: idx.iter().map(|&i| cuts.level(ev(i).energy)).collect(),
            order: idx,
            window_end,
            bands: bands(&dec, theta),
            dec,
            bins,
            cuts,
            ra_grid: 0,
        })
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.dec.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.dec.is_empty()
    }

    /// Size of a differential histogram: levels × bins.
    #[must_use]
    pub fn hist_len(&self) -> usize {
        self.cuts.levels() * self.bins.len()
    }

    /// Candidate pairs the declination windows hold (the GPU's work per trial).
    #[must_use]
    pub fn window_pairs(&self) -> u64 {
        self.window_end.iter().enumerate().map(|(i, &e)| u64::from(e) - i as u64 - 1).sum()
    }
}

/// The coarsest of the usual rounding steps [deg] (1, 0.5, 0.25, 0.2, 0.1, 0.05, 0.01, 0.001)
/// that every right ascension is a multiple of (to 10⁻⁶ of the step), if any. Needs at least
/// 100 events, so that a few round numbers are not mistaken for a grid.
#[must_use]
pub fn detect_ra_grid(ra_deg: &[f64]) -> Option<f64> {
    if ra_deg.len() < 100 {
        return None;
    }
    [1.0, 0.5, 0.25, 0.2, 0.1, 0.05, 0.01, 0.001].into_iter().find(|&q| {
        ra_deg.iter().all(|&r| {
            let k = r / q;
            (k - k.round()).abs() < 1e-6
        })
    })
}

/// The most declination bands of the CPU cell list. Bands taller than θ only cost comparisons
/// (partners still lie in the same or the next band; the chord test decides), so this bounds
/// memory for tiny bins (`--bin-width 5e-324` asked for 1.8e8 bands, 10 GiB) without changing a
/// count.
pub const MAX_BANDS: usize = 1 << 16;

/// Declination bands of height θ (at least 180°/[`MAX_BANDS`]; partners lie in the same or the
/// next band), with their RA windows and cell counts (at most about two per event of the band).
fn bands(dec: &[f64], theta: f64) -> Vec<Band> {
    let height = theta.max(180.0 / MAX_BANDS as f64);
    let nb = ((180.0 / height).floor() as usize).max(1);
    let band_of = |d: f64| ((((d + 90.0) / height).floor()) as usize).min(nb - 1);
    let edge_abs = |b: usize| {
        let lo = -90.0 + b as f64 * height;
        let hi = if b + 1 == nb { 90.0 } else { lo + height };
        lo.abs().max(hi.abs())
    };
    let mut out: Vec<Band> = Vec::new();
    let mut start = 0;
    for b in 0..nb {
        let end = start + dec[start..].iter().take_while(|&&d| band_of(d) == b).count();
        let next = if b + 1 < nb { edge_abs(b + 1) } else { 0.0 };
        out.push(Band {
            start,
            end,
            window_same: ra_window(theta, edge_abs(b)),
            window_next: ra_window(theta, edge_abs(b).max(next)),
            cells: 1,
        });
        start = end;
    }
    for b in 0..nb {
        let prev = if b > 0 { out[b - 1].window_next } else { 0.0 };
        let w = out[b].window_same.max(out[b].window_next).max(prev);
        // Fewer cells than 1/w only widen them (still ≥ the window): at most 2·events + 1.
        let events = out[b].end - out[b].start;
        out[b].cells = ((1.0 / w).floor().min((2 * events + 1) as f64) as usize).max(1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuts;

    #[test]
    fn windows_cover_the_dec_range_and_bands_partition() {
        let ev = crate::events::synthetic(5000, 3);
        let bins = AngularBins::uniform(20, 0.25).unwrap();
        let c = cuts::resolve(&ev, &cuts::default_cuts()).unwrap();
        let s = Sample::new(&ev, bins, c).unwrap();
        assert!(s.dec.windows(2).all(|w| w[0] <= w[1]));
        for i in 0..s.len() {
            let e = s.window_end[i] as usize;
            assert!(e == s.len() || s.dec[e] - s.dec[i] > 5.0);
            assert!(s.dec[e - 1] - s.dec[i] <= 5.0 * (1.0 + 1e-6) || e == i + 1);
        }
        assert_eq!(s.bands.first().unwrap().start, 0);
        assert_eq!(s.bands.last().unwrap().end, s.len());
        assert!(s.bands.windows(2).all(|w| w[0].end == w[1].start));
        // Bands are 5°·(1 + 1e-6) high: 35 of them, the last one a little taller.
        assert_eq!(s.bands.len(), 35);
        // Near the equator a 5° window is ~5°/360° of a turn; at the poles the whole circle.
        assert!((s.bands[18].window_same - 5.0 / 360.0).abs() < 0.1 * 5.0 / 360.0);
        assert_eq!(s.bands[0].window_same, 0.5);
        assert_eq!(s.bands[0].cells, 2);
    }

    /// `--bin-width 5e-324` asked for 1.8e8 bands (10 GiB) before the band and cell caps; the
    /// capped cell list still counts exactly (here: against the brute force, with bins wide
    /// enough to hold pairs, and with the tiny bins that hold none).
    #[test]
    fn tiny_and_capped_bins_stay_bounded_and_exact() {
        let ev = crate::events::synthetic(3000, 5);
        for bins in [
            AngularBins::uniform(20, 5e-324).unwrap(),
            AngularBins::uniform(4, 1e-3).unwrap(),
            AngularBins::uniform(3, 2.0).unwrap(),
        ] {
            let c = cuts::resolve(&ev, &cuts::default_cuts()).unwrap();
            let s = Sample::new(&ev, bins.clone(), c).unwrap();
            assert!(s.bands.len() <= MAX_BANDS, "{} bands", s.bands.len());
            let cells: usize = s.bands.iter().map(|b| b.cells).sum();
            assert!(cells <= 2 * s.len() + s.bands.len(), "{cells} cells");
            let mut levels = vec![0u8; ev.len()];
            let thresholds = &s.cuts.thresholds;
            for (l, e) in levels.iter_mut().zip(&ev) {
                *l = thresholds.iter().filter(|&&t| e.energy >= t).count() as u8;
            }
            let brute = crate::count::brute_force(&ev, &levels, s.cuts.levels(), &bins);
            assert_eq!(crate::count::observed(&s), brute, "bins {:?}", &bins.edges_deg[..2]);
        }
    }

    #[test]
    fn ra_window_is_conservative() {
        // Brute force: the largest |Δα| at which two points at |δ| ≤ 60° are within 5°.
        let w = ra_window(5.0, 60.0) * 360.0;
        for d1 in [55.0f64, 57.5, 60.0] {
            for d2 in [55.0f64, 57.5, 60.0] {
                for k in 0..2000 {
                    let da = f64::from(k) * 0.01;
                    if crate::sphere::separation_deg(0.0, d1, da, d2) <= 5.0 {
                        assert!(da <= w, "Δα {da} at δ {d1},{d2} beyond window {w}");
                    }
                }
            }
        }
    }
}
