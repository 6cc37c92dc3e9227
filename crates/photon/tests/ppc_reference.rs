//! Validation against PPC (spec §6): the 10 TeV EM cascade at (0, 0, −400) in spice_3.2.1, for
//! which shared/data/reference holds four CPU runs and one GPU run of PPC.
//!
//! Criteria (issue #2, fixed before running): total hits within 3 standard deviations of PPC's
//! run-to-run spread plus 2 %; per-DOM counts of the 20 brightest DOMs consistent with the pooled
//! PPC runs (Poisson χ², p > 0.01); unbinned two-sample KS on the arrival times at the 5
//! brightest DOMs not rejecting at 1 %. Fixed seed.

use std::path::PathBuf;
use warpdrive_core::progress::Progress;
use warpdrive_photon::detector::{Detector, DetectorOptions};
use warpdrive_photon::f2k::parse_f2k;
use warpdrive_photon::validate::{compare, ppc_reference_runs, timed_hits};

fn data() -> Option<PathBuf> {
    warpdrive_core::data::test_data_dir(env!("CARGO_MANIFEST_DIR"))
}

/// A CPU run: precise ([`warpdrive_photon::simulate`]) or the fast mode.
type Sim = fn(&Detector, &[warpdrive_photon::source::SourceSpec], u64, &Progress) -> warpdrive_photon::Simulation;

#[test]
fn cascade_10tev_spice321_agrees_with_ppc() {
    cascade_spice321_agrees_with_ppc(warpdrive_photon::simulate);
}

/// The same criteria for the CPU fast mode (issue #34; docs/validation/photon.md).
#[test]
fn cascade_10tev_spice321_agrees_with_ppc_fast() {
    cascade_spice321_agrees_with_ppc(warpdrive_photon::simulate_fast);
}

fn cascade_spice321_agrees_with_ppc(simulate: Sim) {
    let Some(data) = data() else { return };
    let runs = ppc_reference_runs(&data).unwrap();
    let det = Detector::build(&DetectorOptions {
        ice_dir: Some(data.join("ice/spice_3.2.1")),
        ..Default::default()
    })
    .unwrap();
    let input = data.join("reference/ppc_h100_2026/input_cascade_10TeV.f2k");
    let f2k = parse_f2k(&input, &std::fs::read_to_string(&input).unwrap(), &det.yield_).unwrap();
    let sim = simulate(&det, &f2k.specs, 20261122, &Progress::hidden());
    let ours = timed_hits(&sim.hits);
    let c = compare(&ours, &runs, 3.0, 0.02, 20, 5);
    eprintln!("photons {} raw hits {}\n{}", sim.photons, sim.raw_hits, c.report());
    for (k, x, y) in &c.brightest {
        eprintln!("DOM {:2}-{:2}: ours {x:6.0}  PPC/run {y:8.1}", k.0, k.1);
    }
    assert!(
        (c.hits as f64 - c.reference_mean).abs() <= c.total_tolerance,
        "total hits: {}",
        c.report()
    );
    assert!(c.per_dom.p_value > 0.01, "per-DOM counts: {}", c.report());
    assert!(c.times.iter().all(|(_, t)| t.p_value > 0.01), "arrival times: {}", c.report());
    assert!(c.passes(0.01));
}

/// The same criteria for the birefringent models IceCube simulates with today (issue #14), against
/// PPC's eight H100 runs each (data/reference/ppc_bfr_h100_2026): birefringence, the renormalised
/// absorption anisotropy, and for spice_ftp-v3m the 2-D tilt map, DOM types (wv.rde) and cables
/// (dx.dat). Before those were simulated, spice_ftp-v3m gave 29 779 hits against PPC's 28 196 ± 260.
fn bfr_model_agrees_with_ppc(model: &str, simulate: Sim) {
    let Some(data) = data() else { return };
    let runs = warpdrive_photon::validate::ppc_bfr_reference_runs(&data, model, "e10").unwrap();
    let det = Detector::build(&DetectorOptions {
        ice_dir: Some(data.join("ice").join(model)),
        ..Default::default()
    })
    .unwrap();
    assert!(det.medium.bfr.is_some(), "{model} runs with birefringence");
    let input = data.join("reference/ppc_bfr_h100_2026/input_cascade_10TeV.f2k");
    let f2k = parse_f2k(&input, &std::fs::read_to_string(&input).unwrap(), &det.yield_).unwrap();
    let sim = simulate(&det, &f2k.specs, 20261124, &Progress::hidden());
    let ours = timed_hits(&sim.hits);
    let c = compare(&ours, &runs, 3.0, 0.02, 20, 5);
    eprintln!("{model}: photons {} raw hits {}\n{}", sim.photons, sim.raw_hits, c.report());
    for (k, x, y) in &c.brightest {
        eprintln!("DOM {:2}-{:2}: ours {x:6.0}  PPC/run {y:8.1}", k.0, k.1);
    }
    assert!(
        (c.hits as f64 - c.reference_mean).abs() <= c.total_tolerance,
        "{model} total hits: {}",
        c.report()
    );
    assert!(c.per_dom.p_value > 0.01, "{model} per-DOM counts: {}", c.report());
    assert!(
        c.times.iter().all(|(_, t)| t.p_value > 0.01),
        "{model} arrival times: {}",
        c.report()
    );
}

#[test]
fn cascade_10tev_spice_bfr_v2_agrees_with_ppc() {
    bfr_model_agrees_with_ppc("spice_bfr-v2", warpdrive_photon::simulate);
}

#[test]
fn cascade_10tev_spice_ftp_v3m_agrees_with_ppc() {
    bfr_model_agrees_with_ppc("spice_ftp-v3m", warpdrive_photon::simulate);
}

#[test]
fn cascade_10tev_spice_bfr_v2_agrees_with_ppc_fast() {
    bfr_model_agrees_with_ppc("spice_bfr-v2", warpdrive_photon::simulate_fast);
}

#[test]
fn cascade_10tev_spice_ftp_v3m_agrees_with_ppc_fast() {
    bfr_model_agrees_with_ppc("spice_ftp-v3m", warpdrive_photon::simulate_fast);
}

/// PPC's flasher `ppc 63 20 1e8 0` (default FWID 9.7°, and WFLA = 405 nm) in both birefringent
/// models: total HIT lines within 3σ + 3 % of the mean of PPC's four H100 runs each (issue #14).
///
/// Design: we run 4e8 LED photons (four PPC runs' worth) and compare a quarter of our hits with
/// PPC's mean, so σ of the difference = σ_run·√(1/4 + 1/4), σ_run the run-to-run σ of one 1e8
/// run: PPC's sample σ, but at least the Poisson √mean. Flasher hits are over-dispersed (one photon
/// hits the oversized neighbours 17 m away several times): our own 1e8 runs in spice_ftp-v3m
/// spread by σ ≈ 40–60 over 4–7 seeds, against √680 = 26 and PPC's four runs' 12.2 (a small-sample
/// estimate). Comparing one 1e8 run with PPC's σ alone (this test's first form) ignored our own
/// run's fluctuation; 4e8 photons: 2774, 2675, 2713 hits for three seeds (1.8 % spread = Poisson).
#[test]
fn flashers_in_bfr_models_agree_with_ppc() {
    let Some(data) = data() else { return };
    for model in ["spice_bfr-v2", "spice_ftp-v3m"] {
        for (kind, wfla) in [("fla", None), ("fla405", Some("405"))] {
            let (ok, report) =
                warpdrive_photon::validate::ppc_flasher_vs_reference(&data, model, kind, wfla, Some("cpu"), "0", 20261124).unwrap();
            eprintln!("{model} {kind}: {report}");
            assert!(ok, "{model} {kind}: {report}");
        }
    }
}

/// A birefringence-specific observable (issue #14: the 20 brightest DOMs barely see it): the
/// ratio of light on strings along the ice-flow axis to light on strings across it, around the
/// 10 TeV cascade at (0, 0, −400) in spice_bfr-v2. Birefringence diffuses light along the flow,
/// so the ratio rises with it on. Rule fixed from the geometry (in-ice DOMs): strings 50–115 m
/// from the cascade horizontally; "along" within 35° of the flow azimuth (cfg line 6, 130°,
/// either sense), "across" more than 55° away — strings 36, 45, 79, 80 and 35, 81, 82.
///
/// Criterion: |R_ours − R_PPC| < 3 σ, σ² = Poisson variance of our R (four seeds) + the variance
/// of PPC's mean over its eight runs. Measured (CPU, these seeds): PPC 1.2103 ± 0.0136; warpdrive
/// with birefringence 1.1919 (−0.9 σ); with it switched off (BFRA = BFRB = 0) 1.1324 (−3.8 σ:
/// the test fails without birefringence).
#[test]
fn birefringence_shows_in_the_light_along_and_across_the_flow() {
    let Some(data) = data() else { return };
    let model = "spice_bfr-v2";
    let det = Detector::build(&DetectorOptions {
        ice_dir: Some(data.join("ice").join(model)),
        ..Default::default()
    })
    .unwrap();
    let flow = det.cfg.anisotropy.expect("cfg line 6").azimuth_deg.to_radians();
    let src = [0.0f64, 0.0];
    let mut side: std::collections::HashMap<i32, bool> = Default::default();
    for d in det.geometry.doms.iter().filter(|d| d.om <= 60) {
        // In-ice DOMs only (OMs 61–64 are IceTop tanks, elsewhere on the surface).
        let (dx, dy) = (d.pos[0] - src[0], d.pos[1] - src[1]);
        let h = dx.hypot(dy);
        if !(50.0..115.0).contains(&h) {
            continue;
        }
        let off = (dy.atan2(dx) - flow).cos().abs().acos().to_degrees(); // 0–90° from the axis
        if off < 35.0 {
            side.insert(d.string, true);
        } else if off > 55.0 {
            side.insert(d.string, false);
        }
    }
    let mut along: Vec<i32> = side.iter().filter(|(_, &a)| a).map(|(s, _)| *s).collect();
    let mut across: Vec<i32> = side.iter().filter(|(_, &a)| !a).map(|(s, _)| *s).collect();
    along.sort_unstable();
    across.sort_unstable();
    eprintln!("along the flow: strings {along:?}; across: {across:?}");
    let count = |hits: &mut dyn Iterator<Item = i32>| {
        let (mut a, mut c) = (0.0, 0.0);
        for s in hits {
            match side.get(&s) {
                Some(true) => a += 1.0,
                Some(false) => c += 1.0,
                None => {}
            }
        }
        (a, c)
    };
    let runs = warpdrive_photon::validate::ppc_bfr_reference_runs(&data, model, "e10").unwrap();
    let ratios: Vec<f64> = runs
        .iter()
        .map(|r| {
            let (a, c) = count(&mut r.iter().map(|h| h.0 .0));
            a / c
        })
        .collect();
    let n = ratios.len() as f64;
    let r_ppc = ratios.iter().sum::<f64>() / n;
    let var_ppc = ratios.iter().map(|r| (r - r_ppc).powi(2)).sum::<f64>() / (n - 1.0) / n;
    let input = data.join("reference/ppc_bfr_h100_2026/input_cascade_10TeV.f2k");
    let f2k = parse_f2k(&input, &std::fs::read_to_string(&input).unwrap(), &det.yield_).unwrap();
    let (mut a, mut c) = (0.0, 0.0);
    for seed in [20261125, 20261126, 20261127, 20261128] {
        let sim = warpdrive_photon::simulate(&det, &f2k.specs, seed, &Progress::hidden());
        let (x, y) = count(&mut sim.hits.iter().map(|h| h.string));
        a += x;
        c += y;
    }
    let r = a / c;
    let sigma = (r * r * (1.0 / a + 1.0 / c) + var_ppc).sqrt();
    eprintln!(
        "along/across the flow: ours {r:.4} ({a} / {c}) vs PPC {r_ppc:.4} ± {:.4}; σ {sigma:.4}",
        var_ppc.sqrt()
    );
    assert!(
        (r - r_ppc).abs() < 3.0 * sigma,
        "along/across {r:.4} vs PPC {r_ppc:.4} (σ {sigma:.4})"
    );
}
