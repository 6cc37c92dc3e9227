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
        h.write(&x.event.to_le_bytes()).write(&x.source.to_le_bytes()).write(&x.photon.to_le_bytes());
        h.write(&x.string.to_le_bytes()).write(&x.om.to_le_bytes());
        h.write(&x.time.to_bits().to_le_bytes()).write(&x.wavelength.to_bits().to_le_bytes());
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
/// multi-PMT modules (fingerprints recorded at commit 923889e, before this feature).
#[test]
fn models_without_om_files_are_unchanged() {
    let Some(data) = data() else { return };
    for (model, want) in [("spice_3.2.1", (1941usize, "8da3e737f782afb7")), ("spice_ftp-v3m", (2719usize, "5d6d7687a72a3df1"))] {
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
