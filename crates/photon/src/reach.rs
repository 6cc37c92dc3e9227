//! Out of reach: a photon whose remaining absorption depth cannot carry it to any module ends
//! at once, as if absorbed. It would have made no hit, so every output is the one of the full
//! propagation, photon by photon and bit for bit; only its last segments are not computed.
//!
//! The test at the start of a segment (`propagate::step_with`, the kernel's `out_of_reach`):
//!
//!   (τ · L_s)² < d²,
//!
//! * τ the photon's remaining absorption depth (TOT, spec §3.5);
//! * L_s ([`path_per_depth`]) a bound on the distance the photon can still get from where it is
//!   per unit of τ, in wavelength slice s: the path through layer j uses up τ at the rate
//!   a_j · nr(n) (spec §3.5 step 2: absorption coefficient times the direction's anisotropy
//!   factor), so the path is at most τ / min_j,n (a_j · nr(n)); inside a hole-ice column at the
//!   column's a_h. Birefringence moves the photon besides its path: each segment's shift is
//!   len/2 · (m − n) with m, n unit vectors (photon-ppc-phase2.md §1), at most len, so the
//!   distance is at most twice the path;
//! * d ([`DomIndex::distance2_lower_bound`]) a lower bound on the distance to every module a
//!   segment could hit: horizontally to the string cylinders (the clearance grid's bounds,
//!   which the collision search trusts already), vertically to the z range of all DOMs widened
//!   by the oversized half-height.
//!
//! On the 10 TeV reference cascade 7.8 % of the segments in spice_3.2.1 and 3.0 % in
//! spice_ftp-v3m come after the point where the test ends the photon (`no_hit_after_out_of_reach`).
//! The CPU paths run it (`WARPDRIVE_NO_REACH=1` turns it off); on the GPU it is the kernel switch
//! `WD_REACH`, off by default: on an H200 the test at every segment costs more than the segments
//! it saves (docs/performance/photon.md, "the out-of-reach test").

use crate::collision::DomIndex;
use crate::medium::{AnisotropyParams, Medium};

/// The bound's margin for float rounding: the walk's path lengths are τ/a in f32 (relative
/// error ≤ 10⁻⁶ per operation, and the GPU's fast division 2 ulp), the coefficients the
/// kernel's factored forms (≤ 10⁻⁶ from `abs`).
const MARGIN: f64 = 1.001;

/// Per wavelength slice, an upper bound on the distance [m] a photon can still travel per unit
/// of remaining absorption depth (module comment); infinity where a slice does not absorb.
#[must_use]
pub fn path_per_depth(m: &Medium) -> Vec<f32> {
    let nr = absorption_factor_bound(m.anisotropy.as_ref());
    let shift = if m.bfr.is_some() { 2.0 } else { 1.0 };
    let nl = m.n_layers;
    (0..m.slices.len())
        .map(|s| {
            let mut a = f64::INFINITY;
            for j in 0..nl {
                a = a.min(f64::from(m.abs[s * nl + j]));
                // The factored form the GPU's fast mode walks with (WD_FACTORED_ICE).
                if let (Some(l), Some(f)) = (m.layer_factors.get(j), m.slice_factors.get(s)) {
                    a = a.min(f64::from(f[1]) * f64::from(l[2]) + f64::from(f[2]) * f64::from(l[3]));
                }
            }
            a *= nr;
            if let Some(h) = &m.hole {
                a = a.min(f64::from(h.abs));
            }
            if a > 0.0 && a.is_finite() {
                (MARGIN * shift / a) as f32
            } else {
                f32::INFINITY
            }
        })
        .collect()
}

/// A lower bound on the absorption anisotropy's factor nr(n) over all directions
/// (`AnisotropyParams::absorption_factor`), from bounds on its parts over s_i = m_i² ≥ 0,
/// Σ s_i = 1: B2 − Σ s_i/l_i ≥ B2 − max 1/l_i and Σ s_i l_i ≥ min l_i (each ≤ its maximum the
/// other way), and |(k1 m1, k2 m2, kz m3)| ≤ max k_i. 1 without anisotropy.
#[must_use]
pub fn absorption_factor_bound(a: Option<&AnisotropyParams>) -> f64 {
    let Some(a) = a else { return 1.0 };
    let mut nr = 1.0f64;
    let fr = f64::from(a.old_abs_scale);
    if fr != 0.0 {
        let l = a.k.map(|k| f64::from(k) * f64::from(k));
        let il = l.map(|l| 1.0 / l);
        let b2: f64 = il.iter().sum();
        let (il_max, il_min) = (
            il.iter().copied().fold(0.0, f64::max),
            il.iter().copied().fold(f64::INFINITY, f64::min),
        );
        let (l_max, l_min) = (
            l.iter().copied().fold(0.0, f64::max),
            l.iter().copied().fold(f64::INFINITY, f64::min),
        );
        let x_lo = (b2 - il_max) * l_min / 2.0;
        let x_hi = (b2 - il_min) * l_max / 2.0;
        // x^fr grows with x for fr > 0 and falls for fr < 0.
        nr = if fr > 0.0 { x_lo.max(0.0).powf(fr) } else { x_hi.powf(fr) };
    }
    if let Some(k) = a.new_abs {
        nr /= k.iter().map(|&k| f64::from(k).abs()).fold(0.0, f64::max);
    }
    if nr.is_finite() {
        nr
    } else {
        0.0
    }
}

/// The table a run uses: [`path_per_depth`], or none (the test off: the same hits, every segment
/// computed) with `WARPDRIVE_NO_REACH=1`, for measuring what the test saves.
#[must_use]
pub fn table(m: &Medium) -> Vec<f32> {
    if std::env::var_os("WARPDRIVE_NO_REACH").is_some() {
        Vec::new()
    } else {
        path_per_depth(m)
    }
}

/// Whether a photon at `pos` with remaining absorption depth `tot` can reach no module:
/// `reach` is its slice's [`path_per_depth`] (infinity turns the test off).
#[inline(always)]
#[must_use]
pub fn out_of_reach(doms: &DomIndex, pos: [f32; 3], tot: f32, reach: f32) -> bool {
    let l = tot * reach;
    l * l < doms.distance2_lower_bound(pos)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detector::{Detector, DetectorOptions};
    use crate::propagate::{step, PhotonState, SegmentEnd, MAX_SEGMENTS};
    use crate::source::{emit, realise, tags, Source};
    use warpdrive_core::progress::Progress;
    use warpdrive_core::RandomStream;

    /// The 10 TeV reference cascade's first `n` photons in `model`.
    fn cascade(model: &str, n: u64) -> (Detector, Vec<Source>) {
        let data = crate::test_data::data_dir();
        let det = Detector::build(&DetectorOptions {
            ice_dir: Some(data.join("ice").join(model)),
            ..Default::default()
        })
        .unwrap();
        let input = data.join("reference/ppc_h100_2026/input_cascade_10TeV.f2k");
        let text = std::fs::read_to_string(&input).unwrap();
        let specs = crate::f2k::parse_f2k(&input, &text, &det.yield_).unwrap().specs;
        let mut sources = realise(&specs, 20261122);
        let mut left = n;
        for s in &mut sources {
            s.photons = s.photons.min(left);
            left -= s.photons;
        }
        (det, sources)
    }

    /// The distance bound is below the distance to every string's cylinder and DOM z range
    /// (where any hit lies), at random points in and around IceCube with DeepCore (its strings
    /// 40–70 m apart: cells that another cylinder reaches into) and above and below it.
    ///
    /// And in a dense synthetic array (25 strings 6 m apart, oversize 16: cylinders of 2.6 m
    /// reaching into the 5 m clearance cells of their neighbours, where the grid's bound on the
    /// other strings is negative).
    #[test]
    fn distance_bound_holds() {
        let (det, _) = cascade("spice_3.2.1", 1);
        let mut r = RandomStream::new(30, 0, 0);
        let mut doms = Vec::new();
        for k in 0..25 {
            let (x, y) = (6.0 * f64::from(k % 5) + r.uniform_f64(), 6.0 * f64::from(k / 5) + r.uniform_f64());
            for om in 0..10 {
                doms.push(crate::geometry::Dom {
                    string: k + 1,
                    om: om + 1,
                    pos: [x, y, 10.0 * f64::from(om) - 50.0],
                    rde: 1.0,
                    high_qe: false,
                    cable_deg: None,
                    axis: None,
                });
            }
        }
        let dense = DomIndex::new(
            &crate::geometry::Geometry {
                doms,
                source: "dense".into(),
            },
            16.0,
        );
        assert!(dense.clearance.iter().any(|c| c[0] < 0.0), "the dense case has negative bounds");
        check_distance_bound(&det.index, 800.0, 700.0, &mut r);
        check_distance_bound(&dense, 40.0, 80.0, &mut r);
    }

    /// [`distance_bound_holds`] for one index, 3·10⁵ points with |x|, |y| < `half` (about the
    /// array's middle) and |z| < `zhalf`.
    fn check_distance_bound(d: &DomIndex, half: f32, zhalf: f32, r: &mut RandomStream) {
        let (cx, cy) = (
            d.strings.iter().map(|s| s.x).sum::<f32>() / d.strings.len() as f32,
            d.strings.iter().map(|s| s.y).sum::<f32>() / d.strings.len() as f32,
        );
        let mut closest = f32::INFINITY;
        for _ in 0..300_000 {
            let p = [
                cx + half * (2.0 * r.uniform() - 1.0),
                cy + half * (2.0 * r.uniform() - 1.0),
                zhalf * (2.0 * r.uniform() - 1.0),
            ];
            let exact = d
                .strings
                .iter()
                .map(|s| {
                    let z = &d.pos[s.first as usize..(s.first + s.count) as usize];
                    let (lo, hi) = (z[0][2] - d.rz_eff, z[z.len() - 1][2] + d.rz_eff);
                    let h = (((p[0] - s.x).powi(2) + (p[1] - s.y).powi(2)).sqrt() - s.r).max(0.0);
                    let v = (lo - p[2]).max(p[2] - hi).max(0.0);
                    h * h + v * v
                })
                .fold(f32::INFINITY, f32::min);
            let bound = d.distance2_lower_bound(p);
            assert!(
                bound >= 0.0 && bound <= exact * (1.0 + 1e-5) + 1e-6,
                "at {p:?}: bound {bound}, exact {exact}"
            );
            closest = closest.min(exact);
        }
        assert!(closest == 0.0, "the points reach the cylinders");
    }

    /// The test is exact on real photons: stepping every photon to its end with the test off,
    /// no photon hits a module after the first segment start where the test says it cannot,
    /// and the test does fire (a bound that never fires would pass vacuously). With
    /// birefringence (spice_ftp-v3m) and the new absorption anisotropy, and in spice_3.2.1.
    #[test]
    fn no_hit_after_out_of_reach() {
        for (model, least) in [("spice_3.2.1", 0.05), ("spice_ftp-v3m", 0.015)] {
            let (det, sources) = cascade(model, 40_000);
            let (m, doms) = (&det.medium, &det.index);
            let table = path_per_depth(m);
            let seed = 29;
            let (mut segments, mut after, mut late_hits) = (0u64, 0u64, 0u64);
            let mut id = 0u64;
            for (s, src) in sources.iter().enumerate() {
                for k in 0..src.photons {
                    let mut rng = RandomStream::new(seed, tags::PHOTON, id + k);
                    let p = emit(src, m, &mut rng);
                    let reach = table[p.slice as usize];
                    let mut st = PhotonState::start(p, &mut rng);
                    let (mut out, mut gone) = (Vec::new(), false);
                    for _ in 0..MAX_SEGMENTS {
                        gone |= out_of_reach(doms, st.photon.pos, st.tot, reach);
                        segments += 1;
                        after += u64::from(gone);
                        let before = out.len();
                        let end = step(m, doms, src, id + k, s as u32, &mut st, &mut rng, &mut out);
                        if gone {
                            late_hits += (out.len() - before) as u64;
                        }
                        if matches!(end, SegmentEnd::Absorbed | SegmentEnd::Killed) {
                            break;
                        }
                    }
                }
                id += src.photons;
            }
            eprintln!("{model}: {after} of {segments} segments after the test fires");
            assert_eq!(late_hits, 0, "{model}: hits after the test said out of reach");
            let share = after as f64 / segments as f64;
            assert!(
                share > least,
                "{model}: the test fires on {share:.4} of the segments, expected > {least}"
            );
        }
    }

    /// Runs with the test and without give the same hits, in the precise and the fast path
    /// (the fast path's eight-photon lanes where the CPU has AVX2).
    #[test]
    fn runs_equal_with_and_without() {
        for model in ["spice_3.2.1", "spice_ftp-v3m"] {
            let (det, sources) = cascade(model, 30_000);
            let (m, doms) = (&det.medium, &det.index);
            let p = Progress::hidden();
            let on = crate::propagate::run_range_reach(m, doms, &sources, 7, 0..u64::MAX, &p, &path_per_depth(m));
            let off = crate::propagate::run_range_reach(m, doms, &sources, 7, 0..u64::MAX, &p, &[]);
            assert!(on.len() > 100, "{model}: {} hits", on.len());
            assert!(
                on == off,
                "{model}: precise hits differ with the test ({} vs {})",
                on.len(),
                off.len()
            );
            let on = crate::fast::run_range_reach(m, doms, &sources, 7, 0..u64::MAX, &p, true);
            let off = crate::fast::run_range_reach(m, doms, &sources, 7, 0..u64::MAX, &p, false);
            assert!(on == off, "{model}: fast hits differ with the test ({} vs {})", on.len(), off.len());
        }
    }

    fn random_direction(r: &mut RandomStream) -> [f32; 3] {
        let z = 2.0 * r.uniform() - 1.0;
        let p = std::f32::consts::TAU * r.uniform();
        let s = (1.0 - z * z).max(0.0).sqrt();
        [s * p.cos(), s * p.sin(), z]
    }

    /// The bound holds for every direction (10⁶ random ones and the frame's axes), and is not
    /// far below the smallest factor found (so the test stays useful).
    #[test]
    fn absorption_factor_bound_holds() {
        let cases = [
            // spice_3.2.1-like: old model only.
            AnisotropyParams {
                azx: 0.6,
                azy: 0.8,
                k: [1.04, 0.97, 1.0 / (1.04 * 0.97)],
                old_abs_scale: 1.0,
                new_abs: None,
            },
            // A larger exponent and stronger anisotropy.
            AnisotropyParams {
                azx: 1.0,
                azy: 0.0,
                k: [1.2, 0.9, 1.0 / 1.08],
                old_abs_scale: 3.0,
                new_abs: None,
            },
            // spice_ftp-v3m-like: the new model (k renormalised as PPC prints) without the old.
            AnisotropyParams {
                azx: 0.0,
                azy: 1.0,
                k: [1.0; 3],
                old_abs_scale: 0.0,
                new_abs: Some([1.69545, 0.689318, 0.689318]),
            },
            // Both, and a negative exponent.
            AnisotropyParams {
                azx: 0.8,
                azy: -0.6,
                k: [1.1, 0.95, 1.0 / 1.045],
                old_abs_scale: -0.5,
                new_abs: Some([1.3, 0.9, 0.85]),
            },
        ];
        let mut r = RandomStream::new(29, 0, 0);
        for a in &cases {
            let bound = absorption_factor_bound(Some(a));
            assert!(bound > 0.0, "{a:?}");
            let mut least = f64::INFINITY;
            let axes = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]].map(|m| a.from_frame(m));
            let random = std::iter::repeat_with(|| random_direction(&mut r)).take(1_000_000);
            for n in axes.into_iter().chain(random) {
                let f = f64::from(a.absorption_factor(n));
                assert!(f >= bound * (1.0 - 1e-6), "{a:?}: nr({n:?}) = {f} below the bound {bound}");
                least = least.min(f);
            }
            assert!(bound > 0.8 * least, "{a:?}: bound {bound} far below the least factor {least}");
        }
        assert_eq!(absorption_factor_bound(None), 1.0);
    }
}
