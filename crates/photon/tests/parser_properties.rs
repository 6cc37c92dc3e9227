//! Property tests of the photon parsers (DESIGN.md §6): random mutations of valid f2k files,
//! step files and PPC ice directories (cfg.txt, icemodel.dat/.par, tilt, wv.dat, as.dat,
//! geo-f2k) never panic or hang; they parse or fail with an `InputError`. Fixed seed, a fixed
//! number of cases, each under a time limit.

use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::time::Duration;
use warpdrive_core::mutate::{apply, config, strategy, within};
use warpdrive_photon::detector::{Detector, DetectorOptions};

const LIMIT: Duration = Duration::from_secs(20);

const F2K: &str = "V 2000.1.2\nTBEGIN ? ? ?\nEM 1 1 1970 0 0 0\nTR 1 0 e 0 0 -400 180 0 0 100 0\n\
TR 2 0 amu 10 -20 -300 120 40 5 30 200\nTR 3 0 hadr -50 50 -350 60 200 12 50 0\nEE\n\
EM 1 2 1970 0 0 0\nTR 1 0 brems 0 0 -410 90 0 1.5 20 0\nEE\nTEND ? ? ?\nEND\n";

const STEPS: &str = "0 0 -400 0 180 0 0 1 1000\n10 5 -390 3.5 90 45 2 0.9 250\n-20 0 -380 7 30 300 0 1 12\n";

fn yield_() -> warpdrive_photon::source::Yield {
    static Y: std::sync::OnceLock<warpdrive_photon::source::Yield> = std::sync::OnceLock::new();
    *Y.get_or_init(|| Detector::build(&DetectorOptions::default()).expect("built-in detector").yield_)
}

proptest! {
    #![proptest_config(config(200))]

    #[test]
    fn f2k_mutations_never_panic_or_hang(m in strategy(6)) {
        let text = String::from_utf8_lossy(&apply(F2K.as_bytes(), &m)).into_owned();
        let y = yield_();
        let r = within(LIMIT, move || warpdrive_photon::f2k::parse_f2k(Path::new("m.f2k"), &text, &y).map(drop).map_err(|e| e.to_string()));
        prop_assert!(r.is_ok(), "{:?}: {}", m, r.unwrap_err());
    }

    #[test]
    fn step_file_mutations_never_panic_or_hang(m in strategy(6)) {
        let text = String::from_utf8_lossy(&apply(STEPS.as_bytes(), &m)).into_owned();
        let r = within(LIMIT, move || warpdrive_photon::f2k::parse_steps(Path::new("m.steps"), &text).map(drop).map_err(|e| e.to_string()));
        prop_assert!(r.is_ok(), "{:?}: {}", m, r.unwrap_err());
    }
}

/// A copy of spice_3.2.1 (without the large rnd.txt) in a scratch directory.
fn ice_copy(data: &Path) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wd-ice-props-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for e in std::fs::read_dir(data.join("ice/spice_3.2.1")).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() && p.file_name().is_some_and(|n| n != "rnd.txt") {
            std::fs::copy(&p, dir.join(p.file_name().unwrap())).unwrap();
        }
    }
    dir
}

const ICE_FILES: [&str; 7] = [
    "cfg.txt",
    "icemodel.dat",
    "icemodel.par",
    "tilt.par",
    "tilt.dat",
    "wv.dat",
    "as.dat",
];

#[test]
fn ice_directory_mutations_never_panic_or_hang() {
    let Some(data) = warpdrive_core::data::test_data_dir(env!("CARGO_MANIFEST_DIR")) else {
        return;
    };
    let dir = ice_copy(&data);
    let originals: Vec<Vec<u8>> = ICE_FILES.iter().map(|f| std::fs::read(dir.join(f)).unwrap()).collect();
    let mut runner = proptest::test_runner::TestRunner::new(config(70));
    let cases = (0..ICE_FILES.len() + 1, strategy(4));
    runner
        .run(&cases, |(which, m)| {
            // which == ICE_FILES.len(): the geometry (geo-f2k, 5160 lines: one mutation set).
            let (name, original) = if which < ICE_FILES.len() {
                (ICE_FILES[which].to_string(), originals[which].clone())
            } else {
                ("geo-f2k".to_string(), std::fs::read(data.join("ice/spice_3.2.1/geo-f2k")).unwrap())
            };
            std::fs::write(dir.join(&name), apply(&original, &m)).unwrap();
            let d = dir.clone();
            let r = within(LIMIT, move || {
                Detector::build(&DetectorOptions {
                    ice_dir: Some(d),
                    ..Default::default()
                })
                .map(drop)
                .map_err(|e| e.to_string())
            });
            std::fs::write(dir.join(&name), &original).unwrap();
            prop_assert!(r.is_ok(), "{name} {:?}: {}", m, r.unwrap_err());
            Ok(())
        })
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}
