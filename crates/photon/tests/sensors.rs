//! Multi-PMT modules (photon-ppc-phase2.md §7, `crates/photon/src/sensors.rs`): models without
//! `om.*` files run exactly as before, and the Upgrade example (examples/photon/upgrade-sensors with
//! shared/data/geometry/prometheus_upgrade.geo) records hits on several PMTs of mDOMs and D-Eggs.

use std::path::{Path, PathBuf};
use warpdrive_core::hash::Fnv64;
use warpdrive_core::progress::Progress;
use warpdrive_photon::detector::{Detector, DetectorOptions};
use warpdrive_photon::f2k::parse_f2k;

fn run(opts: &DetectorOptions, f2k: &str, seed: u64) -> (Detector, warpdrive_photon::Simulation) {
    let det = Detector::build(opts).unwrap();
    let f = parse_f2k(Path::new("<test>"), f2k, &det.yield_).unwrap();
    let sim = warpdrive_photon::simulate(&det, &f.specs, seed, &Progress::hidden());
    (det, sim)
}

/// FNV-1a over every field of every hit, in order.
fn fingerprint(sim: &warpdrive_photon::Simulation) -> (usize, String) {
    let mut h = Fnv64::new();
    for x in &sim.hits {
        h.write(&x.event.to_le_bytes())
            .write(&x.source.to_le_bytes())
            .write(&x.photon.to_le_bytes());
        h.write(&x.string.to_le_bytes()).write(&x.om.to_le_bytes());
        h.write(&x.time.to_bits().to_le_bytes())
            .write(&x.wavelength.to_bits().to_le_bytes());
        for v in x.dir.iter().chain(&x.impact) {
            h.write(&v.to_bits().to_le_bytes());
        }
    }
    (sim.hits.len(), h.hex())
}

fn data() -> Option<PathBuf> {
    warpdrive_core::data::test_data_dir(env!("CARGO_MANIFEST_DIR"))
}

/// Fixed seed, models without om.* files: the hits are bit for bit those of the code before
/// multi-PMT modules (fingerprints recorded at commit 923889e, before this feature; re-recorded
/// when PPC's continue-after-hit rule changed every model's hits: 1941 → 1968 and 2719 → 2748, the
/// photons that go on after a hit and hit again; and for issue #29: wavelengths drawn as PPC draws
/// them, 1968 → 1938 and 2748 → 2717, then in the birefringent ftp-v3m a hit ending the step and
/// the drift factor ra·rb, 2717 → 2736).
#[test]
fn models_without_om_files_are_unchanged() {
    let Some(data) = data() else { return };
    for (model, want) in [
        ("spice_3.2.1", (1938usize, "f9f9495b93bd5b00")),
        ("spice_ftp-v3m", (2736usize, "71a797589f56945b")),
    ] {
        let (_, sim) = run(
            &DetectorOptions {
                ice_dir: Some(data.join("ice").join(model)),
                ..Default::default()
            },
            "TR 1 0 e 0 0 -400 180 0 0 1000 0\n",
            11,
        );
        let got = fingerprint(&sim);
        eprintln!("{model}: {got:?}");
        assert_eq!((got.0, got.1.as_str()), want, "{model}");
    }
}

/// End to end: spice_3.2.1 with the Upgrade geometry (7 strings × 92 modules) and the example
/// sensor files (even modules mDOM, odd D-Egg). A 100 GeV cascade 9 m from string 1 gives hits
/// on many PMTs: at least 12 distinct PMT indices on mDOMs and both PMTs of D-Eggs, every index
/// below its module's PMT count; the HIT lines print `om_pmt`. Normalisation check: the same run
/// with the modules as nominal DOMs (no sensor files), summed over all modules, should see about
/// 1/2.2 of the mDOM hits plus 1/2.8 of the D-Egg hits (the om.wv ratios), within the 0.6–1.6
/// band that the modules' different angular response allows (the nominal DOM looks down).
#[test]
fn upgrade_modules_record_several_pmts() {
    let Some(data) = data() else { return };
    let sensors = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/photon/upgrade-sensors");
    let opts = DetectorOptions {
        ice_dir: Some(data.join("ice/spice_3.2.1")),
        geometry: Some(data.join("geometry/prometheus_upgrade.geo")),
        sensors: Some(sensors),
        ..Default::default()
    };
    let f2k = "TR 1 0 e 25 -35 -356 90 0 0 100 0\n";
    let (det, sim) = run(&opts, f2k, 5);
    let s = det.sensors.as_ref().expect("sensor files read");
    assert_eq!(s.module_type.iter().flatten().count(), 644);
    let mut mdom = std::collections::BTreeSet::new();
    let mut degg = std::collections::BTreeSet::new();
    let (mut n_mdom, mut n_degg) = (0usize, 0usize);
    for h in &sim.hits {
        let i = det.geometry.find(h.string, h.om).unwrap();
        let t = s.module_of(i).unwrap();
        assert!((h.pmt as usize) < t.pmts.len());
        if t.pmts.len() == 24 {
            mdom.insert(h.pmt);
            n_mdom += 1;
        } else {
            degg.insert(h.pmt);
            n_degg += 1;
        }
    }
    eprintln!(
        "{} hits: mDOM {n_mdom} on PMTs {mdom:?}, D-Egg {n_degg} on {degg:?}",
        sim.hits.len()
    );
    assert!(mdom.len() >= 12, "{mdom:?}");
    assert_eq!(degg.len(), 2, "{degg:?}");
    let mut line = String::new();
    warpdrive_photon::hits::push_hit_line_for(&mut line, &sim.hits[0], det.sensors.is_some());
    let om = line.split_whitespace().nth(2).unwrap().to_string();
    assert_eq!(om, format!("{}_{}", sim.hits[0].om, sim.hits[0].pmt), "{line}");

    // The same modules as nominal DOMs: no sensors directory (spice_3.2.1 has no om.conf; a named
    // directory without one is an error, tests/bad-input).
    let plain = DetectorOptions { sensors: None, ..opts };
    let (det0, sim0) = run(&plain, f2k, 5);
    assert!(det0.sensors.is_none(), "no om.conf in the ice directory");
    let expect = n_mdom as f64 / 2.2 + n_degg as f64 / 2.8;
    let ratio = sim0.hits.len() as f64 / expect;
    eprintln!(
        "nominal DOMs: {} hits, {ratio:.3} × the sensor run scaled by the om.wv ratios",
        sim0.hits.len()
    );
    assert!((0.6..1.6).contains(&ratio), "{ratio}");
}
