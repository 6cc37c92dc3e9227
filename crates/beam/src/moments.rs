//! Beam moments that do not depend on how the particles are split between batch jobs.
//!
//! The bunch's rows are cut into at most [`BLOCKS`] contiguous blocks, block k holding rows
//! ⌊N·k/B⌋ .. ⌊N·(k+1)/B⌋ of the whole bunch (N rows, B = min(N, BLOCKS)). Each block's
//! surviving particles give a [`Partial`] — count, mean and the sums of central products
//! M2_ab = Σ (z_a − z̄_a)(z_b − z̄_b), two passes over the block in row order — and the blocks
//! are folded in block order with the pairwise update of Chan, Golub & LeVeque (1979), "Updating
//! formulae and a pairwise algorithm for computing sample variances" (eq. 2.1, extended to
//! co-moments):
//!
//!   n = n_A + n_B,  δ = z̄_B − z̄_A,  z̄ = z̄_A + δ·n_B/n,  M2_ab = M2_A,ab + M2_B,ab + δ_a δ_b n_A n_B / n.
//!
//! A batch job tracks whole blocks (its share of the B blocks) and writes each block's
//! partial at every watch event; `warpdrive merge` folds them in the same order as one run
//! does, so the merged moments are the unsplit run's, bit for bit.

use crate::beam::{Moments, Particles};
use std::ops::Range;

/// The most blocks a bunch is cut into (and so the most batch jobs it can be split into).
pub const BLOCKS: u64 = 256;

/// Blocks of a bunch of `total` rows.
#[must_use]
pub fn blocks(total: u64) -> u64 {
    total.min(BLOCKS)
}

/// Rows of block `k` of a bunch of `total` rows.
#[must_use]
pub fn block_rows(total: u64, k: u64) -> Range<u64> {
    let b = u128::from(blocks(total).max(1));
    let at = |k: u64| (u128::from(total) * u128::from(k) / b) as u64;
    at(k)..at(k + 1)
}

/// Index of the 21 upper-triangle entries (a ≤ b) of a 6 × 6 symmetric matrix, row-major.
#[must_use]
pub fn pair(a: usize, b: usize) -> usize {
    let (a, b) = if a <= b { (a, b) } else { (b, a) };
    a * 6 - a * (a + 1) / 2 + b
}

/// Count, mean and sums of central products of the surviving particles of one block.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Partial {
    pub n: u64,
    pub mean: [f64; 6],
    /// M2_ab for a ≤ b, indexed by [`pair`].
    pub m2: [f64; 21],
}

impl Partial {
    /// The partial of `p`'s rows `rows` (alive particles only): mean first, then the central
    /// products, each summed in row order.
    #[must_use]
    pub fn of(p: &Particles, rows: Range<usize>) -> Self {
        let alive: Vec<usize> = rows.filter(|&i| p.lost_at[i] == 0).collect();
        let mut out = Self {
            n: alive.len() as u64,
            ..Self::default()
        };
        if alive.is_empty() {
            return out;
        }
        let c = p.coords();
        let n = alive.len() as f64;
        for k in 0..6 {
            out.mean[k] = alive.iter().map(|&i| c[k][i]).sum::<f64>() / n;
        }
        for a in 0..6 {
            for b in a..6 {
                out.m2[pair(a, b)] = alive.iter().map(|&i| (c[a][i] - out.mean[a]) * (c[b][i] - out.mean[b])).sum();
            }
        }
        out
    }

    /// This partial followed by `o` (Chan, Golub & LeVeque's pairwise update); an empty side
    /// leaves the other unchanged.
    #[must_use]
    pub fn then(&self, o: &Partial) -> Partial {
        if o.n == 0 {
            return *self;
        }
        if self.n == 0 {
            return *o;
        }
        let n = self.n + o.n;
        let (na, nb, nf) = (self.n as f64, o.n as f64, n as f64);
        let delta: [f64; 6] = std::array::from_fn(|k| o.mean[k] - self.mean[k]);
        let mut out = Partial {
            n,
            mean: std::array::from_fn(|k| self.mean[k] + delta[k] * nb / nf),
            m2: [0.0; 21],
        };
        for a in 0..6 {
            for b in a..6 {
                let i = pair(a, b);
                out.m2[i] = self.m2[i] + o.m2[i] + delta[a] * delta[b] * (na * nb / nf);
            }
        }
        out
    }

    /// The moments of the particles folded into this partial.
    #[must_use]
    pub fn moments(&self) -> Moments {
        let mut m = Moments {
            alive: self.n as usize,
            ..Moments::default()
        };
        if self.n == 0 {
            return m;
        }
        m.mean = self.mean;
        let n = self.n as f64;
        for a in 0..6 {
            for b in a..6 {
                let v = self.m2[pair(a, b)] / n;
                m.sigma[a][b] = v;
                m.sigma[b][a] = v;
            }
        }
        m
    }
}

/// The partials of the blocks held by `p`, whose row 0 is row `first` of a bunch of `total`
/// rows: (block index, partial) for every block inside `first .. first + p.len()`, which must
/// start and end on block boundaries.
#[must_use]
pub fn partials(p: &Particles, first: u64, total: u64) -> Vec<(u64, Partial)> {
    let end = first + p.len() as u64;
    (0..blocks(total))
        .filter_map(|k| {
            let r = block_rows(total, k);
            (r.start >= first && r.end <= end).then(|| (k, Partial::of(p, (r.start - first) as usize..(r.end - first) as usize)))
        })
        .collect()
}

/// Fold partials in block order into the moments of all their particles.
#[must_use]
pub fn fold<'a>(parts: impl IntoIterator<Item = &'a Partial>) -> Moments {
    parts.into_iter().fold(Partial::default(), |acc, p| acc.then(p)).moments()
}

/// The blocks of a job's share (`--jobs J --job-index I` over the bunch's blocks), as rows of
/// the whole bunch of `total` rows.
#[must_use]
pub fn share_rows(total: u64, share: warpdrive_core::jobs::Share) -> Range<u64> {
    let b = share.items(blocks(total));
    // Block B's first row is `total`.
    block_rows(total, b.start).start..block_rows(total, b.end).start
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpdrive_core::jobs::Share;

    fn bunch(n: usize) -> Particles {
        let mut p = Particles::with_len(n);
        for i in 0..n {
            let x = i as f64;
            p.x[i] = 1e-3 * (x * 0.37).sin();
            p.xp[i] = 1e-4 * (x * 0.11).cos();
            p.y[i] = 2e-3 * (x * 0.05).sin();
            p.yp[i] = -1e-4 * (x * 0.29).sin();
            p.s[i] = 10.0 + 1e-3 * (x * 0.7).cos();
            p.delta[i] = 1e-3 * (x * 0.013).sin();
        }
        p.lost_at[3] = 7;
        p
    }

    #[test]
    fn pair_indexes_the_upper_triangle() {
        let mut seen = [false; 21];
        for a in 0..6 {
            for b in a..6 {
                assert!(!seen[pair(a, b)]);
                seen[pair(a, b)] = true;
                assert_eq!(pair(a, b), pair(b, a));
            }
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn blocks_partition_the_rows() {
        for total in [0u64, 1, 5, 255, 256, 257, 10_000] {
            let mut next = 0;
            for k in 0..blocks(total) {
                let r = block_rows(total, k);
                assert_eq!(r.start, next);
                assert!(r.end > r.start, "block {k} of {total} is empty");
                next = r.end;
            }
            assert_eq!(next, total);
        }
    }

    #[test]
    fn folded_blocks_equal_the_two_pass_moments() {
        let p = bunch(5000);
        let m = Moments::of(&p);
        // Direct two-pass over all alive particles.
        let alive: Vec<usize> = (0..p.len()).filter(|&i| p.lost_at[i] == 0).collect();
        let c = p.coords();
        let n = alive.len() as f64;
        for a in 0..6 {
            let mean = alive.iter().map(|&i| c[a][i]).sum::<f64>() / n;
            let var = alive.iter().map(|&i| (c[a][i] - mean).powi(2)).sum::<f64>() / n;
            // Rounding only: far below the spread.
            assert!(
                (m.mean[a] - mean).abs() <= 1e-9 * var.sqrt() + 1e-15 * mean.abs(),
                "mean {a}: {} vs {mean}",
                m.mean[a]
            );
            assert!((m.sigma[a][a] / var - 1.0).abs() < 1e-9, "var {a}: {} vs {var}", m.sigma[a][a]);
        }
        assert_eq!(m.alive, 4999);
    }

    #[test]
    fn shares_are_whole_blocks_and_fold_to_the_whole_bunch() {
        let total = 1003u64;
        let p = bunch(total as usize);
        let whole = Moments::of(&p);
        for jobs in [1u64, 2, 3, 7, 256] {
            let mut parts = Vec::new();
            let mut next = 0;
            for i in 0..jobs {
                let r = share_rows(total, Share::new(jobs, i).unwrap());
                assert_eq!(r.start, next, "{jobs} jobs: job {i}");
                next = r.end;
                let sub = p.slice(r.start as usize..r.end as usize);
                parts.extend(partials(&sub, r.start, total));
            }
            assert_eq!(next, total);
            assert_eq!(parts.len() as u64, blocks(total));
            assert!(parts.iter().enumerate().all(|(k, (b, _))| *b == k as u64));
            let m = fold(parts.iter().map(|(_, q)| q));
            assert_eq!(m, whole, "{jobs} jobs");
        }
    }
}
