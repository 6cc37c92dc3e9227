//! Issue #29: the wavelengths of photons and hits, as PPC draws and prints them.
//!
//! PPC (icecube/ppc `gpu/ini.cxx`) tabulates wv.dat's spectrum on 450 bins of 1 nm over
//! 250–700 nm: each wv.dat step's density ΔF/Δλ is placed at the step's centre, interpolated
//! linearly between centres (down to 0 one step beyond the first and last centre) and evaluated
//! at the bin centres (`irde::read`). A photon's wavelength slice n (of 512) covers the quantiles
//! n/512 … (n+1)/512 through `irde::binf`, which returns a position one 1-nm bin below the
//! quantile of that tabulation; the photon's ice, refractive index and group velocity are
//! evaluated at the slice's middle (`wvs[n].w`, 512 values, as ours), the printed wavelength of a
//! hit is uniform between the slice's edges (`wvs[n].x()`, continuous). The DOM acceptance keeps
//! a hit of slice n with the type's mass over the slice's (shifted) edges divided by the mass per
//! slice (`rat[n]`), so the *kept* hits' wavelengths follow the tabulated spectrum itself.
//! (photon-ppc-phase2.md §4–5; docs/validation/photon.md, issue #29.)
//!
//! The expected distributions are computed here from wv.dat directly, independently of
//! `crate::envelope`. Before issue #29's fix the printed wavelength was the slice's centre (at
//! most 512 distinct values; the distinct-count checks fail on that) and the slices were the plain
//! quantiles of the spectrum (1 nm redder than PPC's; each KS test below also shows it rejects that
//! alternative, so it has the power to see the shift).

use std::collections::HashSet;
use std::path::PathBuf;
use warpdrive_core::progress::Progress;
use warpdrive_core::stats::ks_one_sample;
use warpdrive_core::RandomStream;
use warpdrive_photon::detector::{Detector, DetectorOptions};
use warpdrive_photon::f2k::parse_f2k;
use warpdrive_photon::hits::{self, Hit};
use warpdrive_photon::propagate::RawHit;
use warpdrive_photon::source::{emit, realise, tags, Source};

fn data() -> Option<PathBuf> {
    warpdrive_core::data::test_data_dir(env!("CARGO_MANIFEST_DIR"))
}

const SEED: u64 = 29;

/// PPC's tabulation of a wv.dat file: the masses of the 450 bins of 1 nm from 250 nm
/// (normalised to sum 1), as the module docs describe, computed from the file's text.
fn ppc_bins(wv_dat: &str) -> Vec<f64> {
    let (mut f, mut w) = (Vec::new(), Vec::new());
    for l in wv_dat.lines() {
        let t: Vec<f64> = l.split_whitespace().filter_map(|x| x.parse().ok()).collect();
        if t.len() >= 2 {
            f.push(t[0]);
            w.push(t[1]);
        }
    }
    let n = w.len();
    // Nodes (centre, density): 0 one step before the first centre and after the last one.
    let mut nodes = vec![(0.5 * (w[0] + w[1]) - (w[1] - w[0]), 0.0)];
    for i in 0..n - 1 {
        nodes.push((0.5 * (w[i] + w[i + 1]), (f[i + 1] - f[i]) / (w[i + 1] - w[i])));
    }
    nodes.push((nodes[n - 1].0 + (w[n - 1] - w[n - 2]), 0.0));
    let bins: Vec<f64> = (0..450)
        .map(|k| {
            let c = 250.5 + k as f64;
            match nodes.windows(2).find(|p| p[0].0 < c && c <= p[1].0) {
                Some(p) => p[0].1 + (p[1].1 - p[0].1) * (c - p[0].0) / (p[1].0 - p[0].0),
                None => 0.0,
            }
        })
        .collect();
    let total: f64 = bins.iter().sum();
    bins.into_iter().map(|b| b / total).collect()
}

/// PPC's slice n of `slices` (`irde::binf` on the cumulative sums of `bins`; ini.cxx): its edges
/// [nm], one bin below the tabulated quantiles n/slices and (n+1)/slices, and its share r(n) of
/// the spectrum — the mass of `bins` between those edges over the mass per slice — which the
/// acceptance compares its uniform number with (`xrnd() < rat[n]`: every hit kept where r > 1).
fn ppc_slices(bins: &[f64], slices: usize) -> Vec<(f64, f64, f64)> {
    let mut sum = vec![0.0; bins.len()];
    let mut acc = 0.0;
    for (k, b) in bins.iter().enumerate() {
        acc += b;
        sum[k] = acc;
    }
    // Normalised by the total itself, so that the sums reach exactly 1 at the last non-empty bin.
    sum.iter_mut().for_each(|x| *x /= acc);
    let binf = |p: f64| {
        let first = (1..bins.len()).find(|&j| sum[j] > 0.0).unwrap();
        let j = (first..bins.len() - 1).find(|&j| sum[j] >= p).unwrap_or(bins.len() - 1);
        let i = j - 1;
        i as f64 + if sum[j] > sum[i] { (p - sum[i]) / (sum[j] - sum[i]) } else { 0.0 }
    };
    let mass = |a: f64, b: f64| -> f64 {
        (0..bins.len())
            .map(|k| bins[k] * ((b.min(k as f64 + 1.0) - a.max(k as f64)).max(0.0)))
            .sum()
    };
    (0..slices)
        .map(|n| {
            let (a, b) = (binf(n as f64 / slices as f64), binf((n + 1) as f64 / slices as f64));
            (250.0 + a, 250.0 + b, mass(a, b) * slices as f64)
        })
        .collect()
}

/// The cumulative distribution of the tabulated spectrum at `l` nm (constant density in a bin).
fn tabulated_cdf(bins: &[f64], l: f64) -> f64 {
    let x = (l - 250.0).clamp(0.0, 450.0);
    let k = (x.floor() as usize).min(449);
    bins[..k].iter().sum::<f64>() + bins[k] * (x - k as f64)
}

fn spice() -> Option<(PathBuf, Detector)> {
    let data = data()?;
    let det = Detector::build(&DetectorOptions {
        ice_dir: Some(data.join("ice/spice_3.2.1")),
        ..Default::default()
    })
    .unwrap();
    Some((data, det))
}

/// The 10 TeV reference cascade's source, its photons drawn with a fixed seed.
fn cascade(data: &std::path::Path, det: &Detector) -> Source {
    let input = data.join("reference/ppc_h100_2026/input_cascade_10TeV.f2k");
    let f2k = parse_f2k(&input, &std::fs::read_to_string(&input).unwrap(), &det.yield_).unwrap();
    realise(&f2k.specs, SEED).remove(0)
}

/// Photon k's wavelength slice as the propagation draws it (its own stream, `emit`).
fn slice_of(src: &Source, det: &Detector, k: u64) -> u32 {
    emit(src, &det.medium, &mut RandomStream::new(SEED, tags::PHOTON, k)).slice
}

fn distinct(v: impl Iterator<Item = f32>) -> usize {
    v.map(f32::to_bits).collect::<HashSet<u32>>().len()
}

/// Photons' printed wavelengths: continuous (≥ 99.5 % of 10⁴ distinct; the slice centres gave at
/// most 512), PPC's spectrum (one 1-nm bin below the tabulated one; KS p > 0.01 with 2·10⁵
/// photons), and not the plain quantile (p < 10⁻⁶: the test sees a 1-nm shift).
#[test]
fn photon_wavelengths_are_continuous_and_ppcs() {
    let Some((data, det)) = spice() else { return };
    let src = cascade(&data, &det);
    let bins = ppc_bins(&std::fs::read_to_string(data.join("ice/spice_3.2.1/wv.dat")).unwrap());
    let n = 200_000u64;
    let printed: Vec<f32> = (0..n)
        .map(|k| {
            let s = det.medium.slices[slice_of(&src, &det, k) as usize];
            s.hit_wavelength(RandomStream::new(SEED, tags::ACCEPT, k).uniform())
        })
        .collect();
    let d = distinct(printed[..10_000].iter().copied());
    eprintln!("distinct printed wavelengths among 10^4 photons: {d}");
    assert!(d >= 9_950, "{d} distinct wavelengths among 10^4 photons");
    // The photon's physics wavelength is its slice's, 512 values, in PPC as here.
    assert!(distinct((0..10_000).map(|k| det.medium.slices[slice_of(&src, &det, k) as usize].wavelength)) <= 512);

    let sample: Vec<f64> = printed.iter().map(|&l| f64::from(l)).collect();
    let ppc = ks_one_sample(&sample, |l| tabulated_cdf(&bins, l + 1.0));
    let plain = ks_one_sample(&sample, |l| tabulated_cdf(&bins, l));
    eprintln!(
        "KS against PPC's spectrum: D {:.5} p {:.3}; against the plain quantile: D {:.5} p {:.2e}",
        ppc.statistic, ppc.p_value, plain.statistic, plain.p_value
    );
    assert!(ppc.p_value > 0.01, "PPC's spectrum rejected: D {} p {}", ppc.statistic, ppc.p_value);
    assert!(plain.p_value < 1e-6, "the plain quantile not rejected: p {}", plain.p_value);
    let (lo, hi) = sample.iter().fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    assert!((259.0..262.0).contains(&lo) && (670.0..=679.0).contains(&hi), "range {lo}–{hi}");
}

/// Hits through the acceptance (`hits::accept`) at one nominal DOM, photons arriving head-on with
/// the cascade's slices (uniform over the 512): the kept fraction is PPC's, the mean over slices of
/// min(r(n), 1) times the angular acceptance's ratio at x = 1 (within 5 s.d.; r from
/// [`ppc_slices`]); the kept wavelengths are continuous and follow PPC's kept spectrum, slice n
/// weighted by min(r(n), 1) and uniform between its edges (KS p > 0.01 with ~3.3·10⁵ hits) — not the
/// same spectrum 1 nm redder (p < 10⁻⁶), which shares over unshifted slices would give.
#[test]
fn kept_hit_wavelengths_follow_ppcs_acceptance() {
    let Some((data, det)) = spice() else { return };
    let src = cascade(&data, &det);
    let bins = ppc_bins(&std::fs::read_to_string(data.join("ice/spice_3.2.1/wv.dat")).unwrap());
    let slices = ppc_slices(&bins, 512);
    let dom = det.geometry.doms.iter().position(|d| d.string == 36 && d.om == 30).unwrap();
    let n = 400_000u64;
    let raw: Vec<RawHit> = (0..n)
        .map(|k| RawHit {
            photon: k,
            source: 0,
            seq: 0,
            dom: dom as u32,
            time: 100.0,
            slice: slice_of(&src, &det, k),
            dir: [0.0, 0.0, 1.0],
            impact: [0.0, 0.0, -1.0],
        })
        .collect();
    let kept: Vec<Hit> = hits::accept(&det, &raw, std::slice::from_ref(&src), SEED);
    let keep: Vec<f64> = slices.iter().map(|s| s.2.min(1.0)).collect();
    let mean_keep = keep.iter().sum::<f64>() / 512.0;
    let p = mean_keep * det.angular.acceptance(1.0) / det.angular.mas;
    let sd = (n as f64 * p * (1.0 - p)).sqrt();
    eprintln!(
        "kept {} of {n}, expected {:.0} ± {sd:.0} (mean min(r, 1) over slices {mean_keep:.5}; r of slice 0: {:.4})",
        kept.len(),
        n as f64 * p,
        slices[0].2
    );
    assert!((kept.len() as f64 - n as f64 * p).abs() < 5.0 * sd);

    let d = distinct(kept[..10_000].iter().map(|h| h.wavelength));
    assert!(d >= 9_950, "{d} distinct wavelengths among 10^4 hits");
    let sample: Vec<f64> = kept.iter().map(|h| f64::from(h.wavelength)).collect();
    let total: f64 = keep.iter().sum();
    let cdf = |l: f64| {
        slices
            .iter()
            .zip(&keep)
            .map(|(&(a, b, _), w)| w * ((l.min(b) - a) / (b - a)).clamp(0.0, 1.0))
            .sum::<f64>()
            / total
    };
    let ours = ks_one_sample(&sample, cdf);
    let shifted = ks_one_sample(&sample, |l| cdf(l - 1.0));
    eprintln!(
        "KS of kept hits against PPC's: D {:.5} p {:.3}; 1 nm redder: D {:.5} p {:.2e}",
        ours.statistic, ours.p_value, shifted.statistic, shifted.p_value
    );
    assert!(ours.p_value > 0.01, "D {} p {}", ours.statistic, ours.p_value);
    assert!(shifted.p_value < 1e-6, "p {}", shifted.p_value);
}

/// The printed wavelength depends only on the photon, the hit's ordinal among the photon's hits and
/// its slice, which the emission draws from the photon's Philox stream in every mode: the CPU's
/// precise and fast modes (and the GPU, whose raw hits go through the same `hits::accept`; its
/// slices are compared with the CPU's in `gpu-check`) print the same value for the same hit. A
/// 1 TeV cascade in both modes: every hit's wavelength is, bit for bit, the value drawn in its
/// photon's emitted slice with the acceptance stream of one of its ordinals (the third uniform of
/// `tags::ACCEPT | seq << 4`, after the RDE and angular draws).
#[test]
fn fast_and_precise_print_the_same_wavelengths() {
    let Some((data, det)) = spice() else { return };
    let input = data.join("reference/ppc_h100_2026/input_cascade_10TeV.f2k");
    let text = "EM 1 1 1970 0 0 0\nTR 1 0 e 0 0 -400 180 0 0 1000 0\nEE\n";
    let f2k = parse_f2k(&input, text, &det.yield_).unwrap();
    let src = realise(&f2k.specs, SEED).remove(0);
    for (mode, sim) in [
        ("precise", warpdrive_photon::simulate(&det, &f2k.specs, SEED, &Progress::hidden())),
        ("fast", warpdrive_photon::simulate_fast(&det, &f2k.specs, SEED, &Progress::hidden())),
    ] {
        let expected = |h: &Hit, seq: u64| {
            let mut r = RandomStream::new(SEED, tags::ACCEPT | (seq << 4) as u32, h.photon);
            let _ = (r.uniform(), r.uniform());
            det.medium.slices[slice_of(&src, &det, h.photon) as usize].hit_wavelength(r.uniform())
        };
        let matched = sim
            .hits
            .iter()
            .filter(|h| (0..64).any(|seq| expected(h, seq).to_bits() == h.wavelength.to_bits()))
            .count();
        let d = distinct(sim.hits.iter().map(|h| h.wavelength));
        eprintln!(
            "{mode}: {} hits, {matched} with the expected wavelength, {d} distinct",
            sim.hits.len()
        );
        assert!(sim.hits.len() > 1000);
        assert_eq!(matched, sim.hits.len(), "{mode}");
        assert!(d as f64 >= 0.99 * sim.hits.len() as f64, "{mode}: {d} distinct");
    }
}
