//! Property tests of the photon parsers (DESIGN.md §6): random mutations of valid f2k files,
//! step files and PPC ice directories (cfg.txt, icemodel.dat/.par, tilt, wv.dat, as.dat,
//! geo-f2k) never panic or hang; they parse or fail with an `InputError`. The files of issue
//! #14's features too — spice_ftp-v3m's (birefringence and hole-ice cfg lines, 7-column
//! icemodel.dat, 2-D tilt map, cables dx.dat, DOM types eff-f2k/wv.rde, icemodel.bbl), module
//! orientations cx.dat, and the multi-PMT module files (om.conf, om.map, om.dirs, om.wv_*) with
//! a Prometheus .geo geometry — where an accepted directory must also propagate a small cascade
//! (an accepted extreme value must not hang or crash the transport). Fixed seed, a fixed number
//! of cases, each under a time limit.

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

/// A copy of ice model `model` (without rnd.txt) in a scratch directory named after `tag`.
fn model_copy(data: &Path, model: &str, tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wd-props-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for e in std::fs::read_dir(data.join("ice").join(model)).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() && p.file_name().is_some_and(|n| n != "rnd.txt") {
            std::fs::copy(&p, dir.join(p.file_name().unwrap())).unwrap();
        }
    }
    dir
}

/// Build the detector of `o`; when it builds, propagate a 1 GeV cascade near string 80 on the
/// CPU. An `Err` is a clean refusal of the input.
fn build_and_propagate(o: &DetectorOptions) -> Result<(), String> {
    let det = Detector::build(o).map_err(|e| e.to_string())?;
    let text = "TR 1 0 e 30 -40 -350 90 0 0 1 0\n";
    let f2k = warpdrive_photon::f2k::parse_f2k(Path::new("<props>"), text, &det.yield_).map_err(|e| e.to_string())?;
    let sim = warpdrive_photon::simulate(&det, &f2k.specs, 3, &warpdrive_core::progress::Progress::hidden());
    drop(sim);
    Ok(())
}

/// Mutate each of `files` (in `dir`) in turn, `cases` times in all; every mutated set must
/// build a detector with `opts` or fail cleanly, and a built detector must propagate a 1 GeV
/// cascade near string 80 on the CPU.
fn mutate_files(files: &[PathBuf], opts: impl Fn() -> DetectorOptions, cases: u32) {
    let originals: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    let mut runner = proptest::test_runner::TestRunner::new(config(cases));
    runner
        .run(&(0..files.len(), strategy(4)), |(which, m)| {
            let f = &files[which];
            std::fs::write(f, apply(&originals[which], &m)).unwrap();
            let o = opts();
            let r = within(LIMIT, move || build_and_propagate(&o));
            std::fs::write(f, &originals[which]).unwrap();
            prop_assert!(r.is_ok(), "{} {:?}: {}", f.display(), m, r.unwrap_err());
            Ok(())
        })
        .unwrap();
}

/// Options for the ice directory `dir` alone.
fn ice_only(dir: &Path) -> impl Fn() -> DetectorOptions {
    let d = dir.to_path_buf();
    move || DetectorOptions {
        ice_dir: Some(d.clone()),
        ..Default::default()
    }
}

/// The Upgrade example's module files copied into `dir`/sensors; their names and the folder.
fn upgrade_sensors(dir: &Path) -> ([&'static str; 5], PathBuf) {
    let sensors = dir.join("sensors");
    std::fs::create_dir_all(&sensors).unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/photon/upgrade-sensors");
    let names = ["om.conf", "om.map", "om.dirs", "om.wv_1.0", "om.wv_2.0"];
    for n in names {
        std::fs::copy(example.join(n), sensors.join(n)).unwrap();
    }
    (names, sensors)
}

#[test]
fn ftp_ice_directory_mutations_never_panic_or_hang() {
    let Some(data) = warpdrive_core::data::test_data_dir(env!("CARGO_MANIFEST_DIR")) else {
        return;
    };
    let dir = model_copy(&data, "spice_ftp-v3m", "ftp");
    let names = [
        "cfg.txt",
        "icemodel.dat",
        "icemodel.par",
        "icemodel.bbl",
        "dx.dat",
        "eff-f2k",
        "wv.rde",
        "tilt.map",
        "tilt.set",
        "wv.dat",
        "as.dat",
    ];
    let files: Vec<PathBuf> = names.iter().map(|n| dir.join(n)).collect();
    mutate_files(&files, ice_only(&dir), 90);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn orientation_and_hole_ice_mutations_never_panic_or_hang() {
    let Some(data) = warpdrive_core::data::test_data_dir(env!("CARGO_MANIFEST_DIR")) else {
        return;
    };
    let dir = model_copy(&data, "spice_3.2.1", "cx");
    // cx.dat: every module's axis tilted a little; cfg.txt with hole-ice columns.
    let geo = warpdrive_photon::geometry::Geometry::read(&dir.join("geo-f2k")).unwrap();
    let cx: String = geo.doms.iter().map(|d| format!("{} {} 0.1 0 0.995 0\n", d.string, d.om)).collect();
    std::fs::write(dir.join("cx.dat"), cx).unwrap();
    let mut cfg = std::fs::read_to_string(dir.join("cfg.txt")).unwrap();
    cfg.push_str("\n2\n0.5\n20\n0.3\n0.5\n");
    std::fs::write(dir.join("cfg.txt"), cfg).unwrap();
    let files = vec![dir.join("cx.dat"), dir.join("cfg.txt")];
    mutate_files(&files, ice_only(&dir), 50);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sensor_file_mutations_never_panic_or_hang() {
    let Some(data) = warpdrive_core::data::test_data_dir(env!("CARGO_MANIFEST_DIR")) else {
        return;
    };
    let dir = model_copy(&data, "spice_3.2.1", "om");
    let (names, sensors) = upgrade_sensors(&dir);
    std::fs::copy(data.join("geometry/prometheus_upgrade.geo"), dir.join("upgrade.geo")).unwrap();
    let mut files: Vec<PathBuf> = names.iter().map(|n| sensors.join(n)).collect();
    files.push(dir.join("upgrade.geo"));
    let (d, s, g) = (dir.clone(), sensors.clone(), dir.join("upgrade.geo"));
    mutate_files(
        &files,
        move || DetectorOptions {
            ice_dir: Some(d.clone()),
            geometry: Some(g.clone()),
            sensors: Some(s.clone()),
            ..Default::default()
        },
        70,
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every number of spice_ftp-v3m's cfg.txt (28: oversize … birefringence) and of the hole-ice
/// block turned on, replaced in turn by each extreme value: what random mutations rarely hit.
#[test]
fn every_cfg_value_at_its_extremes() {
    let Some(data) = warpdrive_core::data::test_data_dir(env!("CARGO_MANIFEST_DIR")) else {
        return;
    };
    let dir = model_copy(&data, "spice_ftp-v3m", "cfg-extremes");
    let original = std::fs::read_to_string(dir.join("cfg.txt")).unwrap();
    // The numbers, one per line (comments after them); the hole-ice radius (9th) set to 2.
    let mut values: Vec<String> = original
        .lines()
        .filter_map(|l| l.split('#').next().map(str::trim).filter(|t| !t.is_empty()).map(str::to_string))
        .collect();
    assert_eq!(values.len(), 28, "spice_ftp-v3m's cfg.txt has 28 numbers");
    values[7] = "2".into();
    let extremes = ["0", "-1", "1e-30", "1e30", "-1e30", "1e308", "1e-320", "1000000", "-1000000"];
    for i in 0..values.len() {
        for x in extremes {
            let mut v = values.clone();
            v[i] = x.to_string();
            std::fs::write(dir.join("cfg.txt"), v.join("\n") + "\n").unwrap();
            let o = DetectorOptions {
                ice_dir: Some(dir.clone()),
                ..Default::default()
            };
            let r = within(LIMIT, move || build_and_propagate(&o));
            assert!(r.is_ok(), "cfg.txt value {} = {x}: {}", i + 1, r.unwrap_err());
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every number of the mDOM's line of om.conf (type, area, β, Rr, Rz, PMT count, first PMT's
/// direction, cable azimuth) and of om.wv_1.0's first row, replaced in turn by each extreme
/// value, on the Upgrade geometry.
#[test]
fn every_module_value_at_its_extremes() {
    let Some(data) = warpdrive_core::data::test_data_dir(env!("CARGO_MANIFEST_DIR")) else {
        return;
    };
    let dir = model_copy(&data, "spice_3.2.1", "om-extremes");
    let (_, sensors) = upgrade_sensors(&dir);
    let geo = data.join("geometry/prometheus_upgrade.geo");
    let extremes = ["0", "-1", "1e-30", "1e30", "-1e30", "1e308", "1000000", "-1000000", "4294967297"];
    // (file, line index among the non-comment lines, number of its fields)
    for (file, line, fields) in [("om.conf", 0, 10), ("om.conf", 1, 2), ("om.wv_1.0", 0, 2)] {
        let original = std::fs::read_to_string(sensors.join(file)).unwrap();
        let lines: Vec<&str> = original.lines().collect();
        let k = lines.iter().enumerate().filter(|(_, l)| !l.starts_with('#')).nth(line).unwrap().0;
        for f in 0..fields {
            for x in extremes {
                let mut t: Vec<String> = lines[k].split_whitespace().map(str::to_string).collect();
                if f >= t.len() {
                    continue;
                }
                t[f] = x.to_string();
                let mut changed: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
                changed[k] = t.join(" ");
                std::fs::write(sensors.join(file), changed.join("\n") + "\n").unwrap();
                let o = DetectorOptions {
                    ice_dir: Some(dir.clone()),
                    geometry: Some(geo.clone()),
                    sensors: Some(sensors.clone()),
                    ..Default::default()
                };
                let r = within(LIMIT, move || build_and_propagate(&o));
                assert!(r.is_ok(), "{file} line {} field {} = {x}: {}", k + 1, f + 1, r.unwrap_err());
            }
        }
        std::fs::write(sensors.join(file), original).unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
