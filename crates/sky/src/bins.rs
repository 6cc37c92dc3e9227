//! Angular bins and the edge rule.
//!
//! N(≤θ_b) counts pairs with separation Ψ ≤ θ_b. The public event positions are rounded to
//! 0.1°, so many separations lie exactly on a 0.25° multiple (spec §3.2, pitfall i) and the
//! count depends on how a tie is decided. The rule here: **a pair counts in bin b when
//! |u_i − u_j|² ≤ 4 sin²(θ_b/2)·(1 + 10⁻⁹)**, i.e. a separation within a relative 5·10⁻¹⁰ of
//! an edge counts as on the edge and is included (≤). The tolerance is far above float64
//! rounding of the squared chord (≲10⁻¹⁴ relative at 0.25°) and far below the data's 0.01°
//! precision, so ties of the quantized data are decided the same way by any correct
//! implementation (the brute-force reference uses the haversine formula instead, see tests).

use crate::sphere::chord2_of_angle;

/// Relative tolerance of the edge rule, in squared-chord space.
pub const EDGE_TOLERANCE: f64 = 1e-9;

/// Cumulative angular bins θ_1 < θ_2 < … ≤ 180° with their squared-chord limits.
#[derive(Clone, Debug, PartialEq)]
pub struct AngularBins {
    /// Upper edges θ_b [deg].
    pub edges_deg: Vec<f64>,
    /// 4 sin²(θ_b/2)·(1 + EDGE_TOLERANCE).
    pub chord2_limits: Vec<f64>,
    /// Direct bin index: LUT_CELLS cells uniform in squared chord over [0, largest limit]; cell
    /// k holds the first bin whose limit reaches (k − 1) cell widths (one cell low, so rounding
    /// can only make the forward scan of [`AngularBins::first_bin`] longer, never wrong). The
    /// CUDA kernel builds the same table.
    lut: Vec<u16>,
    inv_cell: f64,
}

/// Cells of the bin lookup table (the kernel's WD_LUT).
pub const LUT_CELLS: usize = 1024;

impl AngularBins {
    /// Bins with the given upper edges (strictly increasing, in (0, 180]).
    pub fn new(edges_deg: Vec<f64>) -> Result<Self, String> {
        if edges_deg.is_empty() {
            return Err("no angular bins given".into());
        }
        if edges_deg.len() > 1024 {
            return Err(format!("{} angular bins: at most 1024 are supported", edges_deg.len()));
        }
        for (i, &e) in edges_deg.iter().enumerate() {
            if !(e > 0.0 && e <= 180.0) {
                return Err(format!("bin edge {e}° (number {}) is outside (0, 180]", i + 1));
            }
            if i > 0 && e <= edges_deg[i - 1] {
                return Err(format!("bin edges must increase: {}° follows {}°", e, edges_deg[i - 1]));
            }
        }
        let chord2_limits = edges_deg
            .iter()
            .map(|&e| chord2_of_angle(e.to_radians()) * (1.0 + EDGE_TOLERANCE))
            .collect();
        let limits: &Vec<f64> = &chord2_limits;
        let max = limits[limits.len() - 1];
        let width = max / LUT_CELLS as f64;
        let lut = (0..=LUT_CELLS)
            .map(|k| {
                let lower = if k > 0 { (k - 1) as f64 * width } else { 0.0 };
                limits.iter().position(|&l| l >= lower).unwrap_or(limits.len() - 1) as u16
            })
            .collect();
        Ok(Self {
            edges_deg,
            inv_cell: LUT_CELLS as f64 / max,
            chord2_limits,
            lut,
        })
    }

    /// `n` bins of `width` degrees: edges width, 2·width, …, n·width (spec: 20 × 0.25°).
    pub fn uniform(n: usize, width: f64) -> Result<Self, String> {
        Self::new((1..=n).map(|b| width * b as f64).collect())
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.edges_deg.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.edges_deg.is_empty()
    }

    /// The bin lookup table (LUT_CELLS + 1 entries), for the CUDA kernel.
    #[must_use]
    pub fn lookup_table(&self) -> &[u16] {
        &self.lut
    }

    /// The largest edge [deg].
    #[must_use]
    pub fn max_deg(&self) -> f64 {
        self.edges_deg[self.len() - 1]
    }

    /// The first bin whose limit the squared chord does not exceed, if any. (Counts are
    /// cumulated over bins afterwards, so a pair is stored once, in its first bin.)
    #[inline]
    #[must_use]
    pub fn first_bin(&self, c2: f64) -> Option<usize> {
        let n = self.chord2_limits.len();
        if c2.is_nan() || c2 > self.chord2_limits[n - 1] {
            return None;
        }
        // Direct index, then forward to the first limit ≥ c2 (same answer as a search).
        let mut b = usize::from(self.lut[((c2 * self.inv_cell) as usize).min(LUT_CELLS)]);
        while self.chord2_limits[b] < c2 {
            b += 1;
        }
        Some(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_are_validated() {
        assert!(AngularBins::new(vec![]).is_err());
        assert!(AngularBins::new(vec![1.0, 1.0]).unwrap_err().contains("increase"));
        assert!(AngularBins::new(vec![0.0]).is_err());
        assert!(AngularBins::new(vec![f64::NAN]).is_err());
        assert!(AngularBins::new(vec![190.0]).is_err());
        let b = AngularBins::uniform(20, 0.25).unwrap();
        assert_eq!(b.len(), 20);
        assert_eq!(b.max_deg(), 5.0);
    }

    #[test]
    fn kernel_reads_a_table_of_the_same_size() {
        let src = include_str!("../kernels/autocorr.cu");
        assert!(src.contains(&format!("#define WD_LUT {LUT_CELLS}\n")));
        assert_eq!(AngularBins::uniform(20, 0.25).unwrap().lookup_table().len(), LUT_CELLS + 1);
    }

    #[test]
    fn lookup_equals_search() {
        let b = AngularBins::new(vec![0.1, 0.25, 0.3, 1.0, 2.0, 5.0, 5.01, 30.0]).unwrap();
        let mut r = warpdrive_core::RandomStream::new(4, 4, 0);
        for _ in 0..200_000 {
            let c2 = r.uniform_f64() * 1.1 * b.chord2_limits[7];
            let search = b.chord2_limits.partition_point(|&l| l < c2);
            assert_eq!(b.first_bin(c2), (search < 8).then_some(search), "{c2}");
        }
        for &l in &b.chord2_limits {
            for c2 in [l, l * (1.0 - 1e-16), l * (1.0 + 1e-16)] {
                let search = b.chord2_limits.partition_point(|&x| x < c2);
                assert_eq!(b.first_bin(c2), (search < 8).then_some(search));
            }
        }
    }

    #[test]
    fn first_bin_includes_the_edge() {
        let b = AngularBins::uniform(4, 1.0).unwrap();
        let c = |deg: f64| chord2_of_angle(deg.to_radians());
        assert_eq!(b.first_bin(0.0), Some(0));
        assert_eq!(b.first_bin(c(1.0)), Some(0), "exactly on the edge counts as inside");
        assert_eq!(
            b.first_bin(c(1.0) * (1.0 + 1e-12)),
            Some(0),
            "float noise on the edge counts as inside"
        );
        assert_eq!(b.first_bin(c(1.0) * (1.0 + 1e-7)), Some(1));
        assert_eq!(b.first_bin(c(4.0)), Some(3));
        assert_eq!(b.first_bin(c(4.001)), None);
    }
}
