//! Validation against PPC (spec §6): the 10 TeV EM cascade at (0, 0, −400) in spice_3.2.1, for
//! which shared/data/reference holds four CPU runs and one GPU run of PPC.
//!
//! Criteria (issue #2, fixed before running): total hits within 3 standard deviations of PPC's
//! run-to-run spread plus 2 %; per-DOM counts of the 20 brightest DOMs consistent with the pooled
//! PPC runs (Poisson χ², p > 0.01); unbinned two-sample KS on the arrival times at the 5
//! brightest DOMs not rejecting at 1 %. Fixed seed.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use warpdrive_core::progress::Progress;
use warpdrive_core::stats::{ks_two_sample, mean_std, poisson_chi2};
use warpdrive_photon::detector::{Detector, DetectorOptions};
use warpdrive_photon::f2k::parse_f2k;

type Key = (i32, i32);

fn read_ppc_hits(path: &Path) -> Vec<(Key, f64)> {
    let mut s = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut s)
        .unwrap();
    s.lines()
        .filter(|l| l.starts_with("HIT "))
        .map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            ((t[1].parse().unwrap(), t[2].parse().unwrap()), t[3].parse().unwrap())
        })
        .collect()
}

fn data() -> Option<PathBuf> {
    warpdrive_core::data::test_data_dir(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn cascade_10tev_spice321_agrees_with_ppc() {
    let Some(data) = data() else { return };
    let refdir = data.join("reference");
    let mut runs: Vec<Vec<(Key, f64)>> = (1..=4)
        .map(|i| read_ppc_hits(&refdir.join(format!("ppc_cpu_cascade_10TeV_spice_3.2.1/run_{i}.hits.gz"))))
        .collect();
    runs.push(read_ppc_hits(&refdir.join("ppc_h100_2026/ppc_cascade_10TeV_spice_3.2.1.hits.gz")));

    let det = Detector::build(&DetectorOptions {
        ice_dir: Some(data.join("ice/spice_3.2.1")),
        ..Default::default()
    })
    .unwrap();
    let input = refdir.join("ppc_h100_2026/input_cascade_10TeV.f2k");
    let f2k = parse_f2k(&input, &std::fs::read_to_string(&input).unwrap(), &det.yield_).unwrap();
    let sim = warpdrive_photon::simulate(&det, &f2k.specs, 20261122, &Progress::hidden());
    let ours: Vec<(Key, f64)> = sim.hits.iter().map(|h| ((h.string, h.om), f64::from(h.time))).collect();

    // 1. Total hits.
    let totals: Vec<f64> = runs.iter().map(|r| r.len() as f64).collect();
    let (mean, sd) = mean_std(&totals);
    let n = ours.len() as f64;
    eprintln!(
        "photons {} raw hits {} hits {n}; PPC totals {totals:?} mean {mean:.0} sd {sd:.0}",
        sim.photons, sim.raw_hits
    );
    let tol = 3.0 * sd + 0.02 * mean;
    assert!((n - mean).abs() <= tol, "total hits {n} vs PPC {mean:.0} ± {tol:.0}");

    // 2. Per-DOM counts of the 20 brightest DOMs (by pooled PPC counts).
    let count = |hits: &[(Key, f64)]| {
        let mut c: HashMap<Key, f64> = HashMap::new();
        hits.iter().for_each(|(k, _)| *c.entry(*k).or_default() += 1.0);
        c
    };
    let pooled: Vec<(Key, f64)> = runs.concat();
    let pc = count(&pooled);
    let oc = count(&ours);
    let mut doms: Vec<(Key, f64)> = pc.iter().map(|(k, v)| (*k, *v)).collect();
    doms.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let top: Vec<Key> = doms.iter().take(20).map(|d| d.0).collect();
    let a: Vec<f64> = top.iter().map(|k| oc.get(k).copied().unwrap_or(0.0)).collect();
    let b: Vec<f64> = top.iter().map(|k| pc[k]).collect();
    let chi = poisson_chi2(&a, 1.0, &b, runs.len() as f64);
    for (k, (x, y)) in top.iter().zip(a.iter().zip(&b)) {
        eprintln!("DOM {:2}-{:2}: ours {x:6.0}  PPC/run {:8.1}", k.0, k.1, y / runs.len() as f64);
    }
    eprintln!("per-DOM chi2 {:.1} / {} dof, p = {:.3}", chi.statistic, chi.dof, chi.p_value);
    assert!(chi.p_value > 0.01, "per-DOM counts inconsistent: {chi:?}");

    // 3. Arrival times at the 5 brightest DOMs.
    for k in top.iter().take(5) {
        let t_ours: Vec<f64> = ours.iter().filter(|(d, _)| d == k).map(|(_, t)| *t).collect();
        let t_ppc: Vec<f64> = pooled.iter().filter(|(d, _)| d == k).map(|(_, t)| *t).collect();
        let ks = ks_two_sample(&t_ours, &t_ppc);
        eprintln!(
            "DOM {k:?}: KS D = {:.4}, p = {:.3} ({} vs {} hits)",
            ks.statistic,
            ks.p_value,
            t_ours.len(),
            t_ppc.len()
        );
        assert!(ks.p_value > 0.01, "arrival times at DOM {k:?} differ: {ks:?}");
    }
}
