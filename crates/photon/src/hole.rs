//! Explicit hole ice (photon-ppc-phase2.md §2): a vertical column of refrozen drill-hole ice
//! around every string axis, turned on by cfg.txt lines 8–12 with a radius above zero.
//!
//! The column of string s is the infinite vertical cylinder of radius R = xH · 0.1651 m (xH in DOM
//! radii, cfg line 8) about the string's axis (the mean x, y of its DOMs, `collision::StringCol`).
//! Inside it the bulk ice is replaced by a homogeneous, wavelength-independent medium:
//! geometric scattering coefficient 1/(λ_e (1 − g_h)) from the effective scattering length λ_e
//! (line 9) and the column's own mean cosine g_h (line 12), absorption 1/λ_a (line 10, without
//! the absorption anisotropy), and the phase function mixing simplified Liu (fraction f_SL,h,
//! line 11) and Henyey–Greenstein with g_h, without the SPICE scattering anisotropy.
//!
//! Propagation (propagate.rs `propagate_photon`): the bulk layer walk gives the segment a photon
//! would travel in bulk ice. If that segment enters a column (the earliest entry among the
//! strings in reach, [`cylinder_span`]), the bulk optical depths up to the entry are consumed
//! (`propagate::layer_depths`) and what is left is spent at the column's coefficients: the photon
//! is absorbed or scatters inside, or the segment is cut where it leaves the column and the next
//! segment continues with the depths left — no new random numbers, as the exponential is
//! memoryless. The DOM search covers the segment as finally cut. (PPC also cuts the column part
//! where the bulk segment would have ended; with a column far more transparent than the bulk
//! that makes photons crawl, and it changes no distribution, so we do not.)

use crate::config::HoleIce;
use crate::geometry::DOM_RADIUS;

/// A span shorter than this fraction of the radius inside the column counts as outside: a
/// photon left on the boundary by rounding (f32 coordinates of ~500 m carry ~3e-5 m) does not
/// re-enter with a sliver of a segment. PPC's threshold is √1e-5 ≈ 0.3 % as well.
pub const MIN_EXIT_FRACTION: f32 = 3.0e-3;

/// The column's parameters as the propagation reads them (f32, as the kernel gets them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HoleParams {
    /// Column radius [m].
    pub radius: f32,
    /// Geometric scattering coefficient 1/(λ_e (1 − g_h)) [1/m].
    pub sca: f32,
    /// Absorption coefficient 1/λ_a [1/m].
    pub abs: f32,
    /// Mean scattering cosine and simplified-Liu fraction of the column's phase function.
    pub g: f32,
    pub f_sl: f32,
}

impl HoleParams {
    /// The column of cfg lines 8–12, or `None` when its radius is 0 (the model runs as without it).
    #[must_use]
    pub fn from_config(h: Option<HoleIce>) -> Option<Self> {
        let h = h?;
        if h.radius_in_dom_radii <= 0.0 {
            return None;
        }
        Some(Self {
            radius: (h.radius_in_dom_radii * DOM_RADIUS) as f32,
            sca: (1.0 / (h.eff_scattering_length * (1.0 - h.g))) as f32,
            abs: (1.0 / h.absorption_length) as f32,
            g: h.g as f32,
            f_sl: h.f_sl as f32,
        })
    }
}

/// Where the line r + t·n runs inside the vertical cylinder of `radius` about the axis (x, y),
/// for a segment t ∈ [0, len]: `Some((t_in, t_out))` when it starts inside or enters the column
/// before its end, with t_in = max(0, entry) < len (or 0) and t_out the exit from the column (not cut at `len`: inside
/// the column the photon's depths are spent at the column's coefficients, which may carry it past
/// the bulk segment's end), t_out > `MIN_EXIT_FRACTION`·radius; else `None`.
///
/// With d = (x − r_x, y − r_y), ν² = n_x² + n_y², b = d·n_xy and c = |d|², the horizontal
/// distance to the axis is R at t = (b ± √(b² − ν²(c − R²)))/ν². A vertical photon (ν² = 0)
/// inside the column never leaves it (t_out = ∞).
#[inline]
#[must_use]
pub fn cylinder_span(x: f32, y: f32, radius: f32, r: [f32; 3], n: [f32; 3], len: f32) -> Option<(f32, f32)> {
    let (dx, dy) = (x - r[0], y - r[1]);
    let c = dx * dx + dy * dy;
    let rr = radius * radius;
    let nn = n[0] * n[0] + n[1] * n[1];
    if nn == 0.0 {
        return if c < rr { Some((0.0, f32::INFINITY)) } else { None };
    }
    let b = dx * n[0] + dy * n[1];
    let disc = b * b - nn * (c - rr);
    if disc <= 0.0 {
        return None;
    }
    let sq = disc.sqrt();
    let t_in = ((b - sq) / nn).max(0.0);
    let t_out = (b + sq) / nn;
    // Starting inside counts even for a segment of length 0 (a scattering depth of 0: the photon
    // scatters in place, with the column's phase function).
    if (t_in < len || t_in == 0.0) && t_out > MIN_EXIT_FRACTION * radius {
        Some((t_in, t_out))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_config_converts_lengths() {
        let h = HoleIce {
            radius_in_dom_radii: 2.0,
            eff_scattering_length: 0.5,
            absorption_length: 100.0,
            f_sl: 0.3,
            g: 0.8,
        };
        let p = HoleParams::from_config(Some(h)).unwrap();
        assert!((p.radius - 0.3302).abs() < 1e-6);
        // Geometric scattering length λ_e (1 − g) = 0.1 m.
        assert!((p.sca - 10.0).abs() < 1e-5 && (p.abs - 0.01).abs() < 1e-9);
        let off = HoleIce {
            radius_in_dom_radii: 0.0,
            ..h
        };
        assert_eq!(HoleParams::from_config(Some(off)), None);
        assert_eq!(HoleParams::from_config(None), None);
    }

    /// Exact cases: through the axis, a chord, inside, behind, vertical, short segments.
    #[test]
    fn cylinder_span_exact_cases() {
        let close = |a: Option<(f32, f32)>, b: (f32, f32)| {
            let a = a.expect("a span");
            // f32: 1e-5 m, or 1e-6 relative for the long exits.
            let tol = |v: f32| 1e-5f32.max(1e-6 * v.abs());
            assert!((a.0 - b.0).abs() < tol(b.0) && (a.1 - b.1).abs() < tol(b.1), "{a:?} vs {b:?}");
        };
        // Along x through the axis at (5, 0), R = 1: inside for t ∈ [4, 6].
        close(cylinder_span(5.0, 0.0, 1.0, [0.0; 3], [1.0, 0.0, 0.0], 10.0), (4.0, 6.0));
        // Entered before the segment's end: the exit is the column's, not the segment's.
        close(cylinder_span(5.0, 0.0, 1.0, [0.0; 3], [1.0, 0.0, 0.0], 4.5), (4.0, 6.0));
        assert_eq!(cylinder_span(5.0, 0.0, 1.0, [0.0; 3], [1.0, 0.0, 0.0], 4.0), None);
        // Impact parameter 0.6: half chord 0.8.
        close(cylinder_span(5.0, 0.6, 1.0, [0.0; 3], [1.0, 0.0, 0.0], 10.0), (4.2, 5.8));
        // Missing (impact parameter 1.2) and moving away.
        assert_eq!(cylinder_span(5.0, 1.2, 1.0, [0.0; 3], [1.0, 0.0, 0.0], 10.0), None);
        assert_eq!(cylinder_span(5.0, 0.0, 1.0, [0.0; 3], [-1.0, 0.0, 0.0], 10.0), None);
        // Slanted (horizontal part 0.6): path lengths scale by 1/0.6.
        close(
            cylinder_span(5.0, 0.0, 1.0, [0.0; 3], [0.6, 0.0, 0.8], 20.0),
            (4.0 / 0.6, 6.0 / 0.6),
        );
        // Starting inside, on the axis, any horizontal direction: exit at R/ν.
        close(
            cylinder_span(5.0, 0.0, 1.0, [5.0, 0.0, 3.0], [0.0, 0.6, -0.8], 20.0),
            (0.0, 1.0 / 0.6),
        );
        // Vertical: inside for the whole segment, or never.
        assert_eq!(
            cylinder_span(5.0, 0.0, 1.0, [5.5, 0.0, 0.0], [0.0, 0.0, 1.0], 7.0),
            Some((0.0, f32::INFINITY))
        );
        // Nearly vertical, inside: the exit far up the column (horizontal part 1e-3: R/1e-3).
        let n = [1e-3, 0.0, (1.0f32 - 1e-6).sqrt()];
        close(cylinder_span(5.0, 0.0, 1.0, [5.0, 0.0, 0.0], n, 7.0), (0.0, 1000.0));
        assert_eq!(cylinder_span(5.0, 0.0, 1.0, [6.5, 0.0, 0.0], [0.0, 0.0, -1.0], 7.0), None);
        // On the boundary moving out: no sliver of a span.
        assert_eq!(cylinder_span(5.0, 0.0, 1.0, [6.0, 0.0, 0.0], [1.0, 0.0, 0.0], 7.0), None);
    }

    /// Against brute force: 20 000 random segments near a column, the inside of each sampled at
    /// 4 000 points; the span (its exit cut at the segment's end) must contain every inside
    /// sample and no outside one, up to the sampling step (plus 1e-4 m of f32 rounding).
    #[test]
    fn cylinder_span_matches_sampling() {
        let mut rng = warpdrive_core::RandomStream::new(11, 0, 0);
        let (x, y, radius) = (3.0f32, -2.0f32, 0.7f32);
        let mut spans = 0;
        for _ in 0..20_000 {
            let r = [
                x + 4.0 * (rng.uniform() - 0.5),
                y + 4.0 * (rng.uniform() - 0.5),
                100.0 * (rng.uniform() - 0.5),
            ];
            let ct = 2.0 * rng.uniform() - 1.0;
            let phi = std::f32::consts::TAU * rng.uniform();
            let st = (1.0 - ct * ct).sqrt();
            let n = [st * phi.cos(), st * phi.sin(), ct];
            let len = 6.0 * rng.uniform();
            let span = cylinder_span(x, y, radius, r, n, len).map(|(a, b)| (a, b.min(len)));
            let k = 4000;
            let step = len / k as f32;
            let tol = step + 1e-4;
            let mut inside = Vec::new();
            for i in 0..=k {
                let t = i as f32 * step;
                let (px, py) = (r[0] + t * n[0] - x, r[1] + t * n[1] - y);
                if px * px + py * py < radius * radius {
                    inside.push(t);
                }
            }
            match span {
                Some((a, b)) => {
                    spans += 1;
                    assert!(a >= 0.0 && a < len && b > a && b <= len, "{span:?} {len}");
                    assert!(!inside.is_empty(), "span {span:?} but no inside sample");
                    assert!((inside[0] - a).abs() <= tol, "entry {a} vs {}", inside[0]);
                    assert!(
                        (inside[inside.len() - 1] - b).abs() <= tol,
                        "exit {b} vs {}",
                        inside[inside.len() - 1]
                    );
                }
                None => {
                    // Only a sliver (≤ the exit threshold or grazing within the sampling step)
                    // may be inside.
                    let n_xy = (n[0] * n[0] + n[1] * n[1]).sqrt().max(1e-3);
                    let extent = inside.last().map_or(0.0, |l| l - inside[0]) * n_xy;
                    assert!(
                        inside.is_empty() || extent <= MIN_EXIT_FRACTION * radius + tol || inside[0] >= len - tol,
                        "no span but {} inside samples from {} (len {len})",
                        inside.len(),
                        inside[0]
                    );
                }
            }
        }
        assert!(spans > 2000, "{spans} segments entered the column");
    }
}
