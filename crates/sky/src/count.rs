//! Exact pair counting on the CPU: a cell list of declination bands × right-ascension cells,
//! rebuilt per trial (only RA changes), with one pass filling all energy cuts.
//!
//! A pair (i, j) is tested once: partners of an event are searched in its own band (only at
//! later positions) and in the next band, inside the RA window of [`crate::sample::Band`].
//! A tested pair with squared chord c² is stored in the *differential* histogram at
//! [min(ℓ_i, ℓ_j)][first bin with c² ≤ limit]; [`cumulative`] turns that into N(≤θ_b) per cut.

use crate::bins::AngularBins;
use crate::events::Event;
use crate::sample::{Band, Sample};
use crate::sphere::{chord2, unit_vector_turn};

/// Scratch of one worker: the events of every band in RA-cell order, and the cell offsets.
#[derive(Default, Clone)]
pub struct Workspace {
    x: Vec<f64>,
    y: Vec<f64>,
    z: Vec<f64>,
    t: Vec<f64>,
    level: Vec<u8>,
    /// For band b: `cell_start[base_b + c]` = first position of cell c; `base_b + cells` = end.
    cell_start: Vec<usize>,
}

/// Differential histogram → cumulative counts N[c][b] = #{pairs: min level ≥ c, first bin ≤ b}.
#[must_use]
pub fn cumulative(diff: &[u64], levels: usize, bins: usize) -> Vec<u64> {
    let mut out = vec![0u64; levels * bins];
    for c in (0..levels).rev() {
        let mut run = 0;
        for b in 0..bins {
            run += diff[c * bins + b];
            out[c * bins + b] = run + if c + 1 < levels { out[(c + 1) * bins + b] } else { 0 };
        }
    }
    out
}

/// Position ranges of band `band` whose RA cells cover [t − w, t + w] (mod 1): one or two
/// ranges, or the whole band when the window spans every cell.
#[inline]
fn window_ranges(band: &Band, cell_start: &[usize], t: f64, w: f64) -> [(usize, usize); 2] {
    let n = band.cells;
    let lo = ((t - w) * n as f64).floor() as i64;
    let hi = ((t + w) * n as f64).floor() as i64;
    if hi - lo + 1 >= n as i64 {
        return [(band.start, band.end), (0, 0)];
    }
    let (lm, hm) = (lo.rem_euclid(n as i64) as usize, hi.rem_euclid(n as i64) as usize);
    if lm <= hm {
        [(cell_start[lm], cell_start[hm + 1]), (0, 0)]
    } else {
        [(cell_start[lm], band.end), (band.start, cell_start[hm + 1])]
    }
}

/// Count the pairs of `s` with right ascensions `turns` (per sorted position, RA/360° in
/// [0, 1)) into the differential histogram `hist` (levels × bins, added to).
pub fn count_pairs(s: &Sample, turns: &[f64], ws: &mut Workspace, hist: &mut [u64]) {
    let n = s.len();
    assert_eq!(turns.len(), n);
    for v in [&mut ws.x, &mut ws.y, &mut ws.z, &mut ws.t] {
        v.resize(n, 0.0);
    }
    ws.level.resize(n, 0);
    ws.cell_start.clear();
    let mut bases = Vec::with_capacity(s.bands.len());
    // Counting sort of each band by RA cell.
    for band in &s.bands {
        let base = ws.cell_start.len();
        bases.push(base);
        let cells = band.cells;
        let cell_of = |t: f64| ((t * cells as f64) as usize).min(cells - 1);
        let mut counts = vec![0usize; cells + 1];
        for &t in &turns[band.start..band.end] {
            counts[cell_of(t) + 1] += 1;
        }
        let mut acc = band.start;
        for c in counts.iter_mut() {
            acc += *c;
            *c = acc;
        }
        // counts[c] is now the end of cell c-1 = start of cell c (counts[0] = band.start).
        ws.cell_start.extend_from_slice(&counts);
        let mut fill = counts;
        for (p, &t) in turns.iter().enumerate().take(band.end).skip(band.start) {
            let c = cell_of(t);
            let q = fill[c];
            fill[c] += 1;
            let u = unit_vector_turn(t, s.sin_dec[p], s.cos_dec[p]);
            (ws.x[q], ws.y[q], ws.z[q]) = (u[0], u[1], u[2]);
            ws.t[q] = t;
            ws.level[q] = s.level[p];
        }
    }
    let nbins = s.bins.len();
    let limit = s.bins.chord2_limits[nbins - 1];
    let test = |p: usize, range: (usize, usize), hist: &mut [u64]| {
        let u = [ws.x[p], ws.y[p], ws.z[p]];
        let lp = ws.level[p];
        for q in range.0..range.1 {
            let c2 = chord2(u, [ws.x[q], ws.y[q], ws.z[q]]);
            if c2 <= limit {
                if let Some(b) = s.bins.first_bin(c2) {
                    hist[usize::from(lp.min(ws.level[q])) * nbins + b] += 1;
                }
            }
        }
    };
    for (bi, band) in s.bands.iter().enumerate() {
        let cs = &ws.cell_start[bases[bi]..bases[bi] + band.cells + 1];
        let next = s
            .bands
            .get(bi + 1)
            .map(|nb| (nb, &ws.cell_start[bases[bi + 1]..bases[bi + 1] + nb.cells + 1]));
        for p in band.start..band.end {
            let t = ws.t[p];
            for r in window_ranges(band, cs, t, band.window_same) {
                test(p, (r.0.max(p + 1), r.1), hist);
            }
            if let Some((nb, ncs)) = next {
                if nb.start < nb.end {
                    for r in window_ranges(nb, ncs, t, band.window_next) {
                        test(p, r, hist);
                    }
                }
            }
        }
    }
}

/// Cumulative counts N[cut][bin] of the sample at its observed right ascensions.
#[must_use]
pub fn observed(s: &Sample) -> Vec<u64> {
    let mut hist = vec![0u64; s.hist_len()];
    count_pairs(s, &s.ra_turn, &mut Workspace::default(), &mut hist);
    cumulative(&hist, s.cuts.levels(), s.bins.len())
}

/// Brute-force reference: every pair i < j, separation by the haversine formula in degrees,
/// counted when Ψ ≤ θ_b·(1 + 5·10⁻¹⁰) — the same edge rule as [`AngularBins`] (half the
/// squared-chord tolerance in angle), evaluated independently of the unit vectors. Returns
/// cumulative counts N[cut][bin]; `levels[i]` is the energy level of event i.
#[must_use]
pub fn brute_force(events: &[Event], levels: &[u8], n_levels: usize, bins: &AngularBins) -> Vec<u64> {
    let nb = bins.len();
    let tol = 1.0 + 0.5 * crate::bins::EDGE_TOLERANCE;
    let mut diff = vec![0u64; n_levels * nb];
    for i in 0..events.len() {
        for j in i + 1..events.len() {
            let psi = crate::sphere::separation_deg(events[i].ra, events[i].dec, events[j].ra, events[j].dec);
            if let Some(b) = bins.edges_deg.iter().position(|&e| psi <= e * tol) {
                diff[usize::from(levels[i].min(levels[j])) * nb + b] += 1;
            }
        }
    }
    cumulative(&diff, n_levels, nb)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cumulative_sums_over_bins_and_stricter_cuts() {
        // 2 levels × 3 bins.
        let diff = [1, 2, 3, 10, 20, 30];
        assert_eq!(cumulative(&diff, 2, 3), vec![11, 33, 66, 10, 30, 60]);
    }
}
