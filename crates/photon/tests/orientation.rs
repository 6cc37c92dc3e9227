//! `cx.dat` (module orientations, photon-ppc-phase2.md §4): an axis of (0, 0, 1) for every module
//! is PPC's default and must change nothing; flipped axes (0, 0, −1) must move the acceptance to
//! the other hemisphere.

use std::path::{Path, PathBuf};
use warpdrive_core::progress::Progress;
use warpdrive_photon::detector::{Detector, DetectorOptions};
use warpdrive_photon::f2k::parse_f2k;

fn ice_copy(data: &Path, name: &str, axis_z: Option<f64>) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wd-cx-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let src = data.join("ice/spice_3.2.1");
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() && p.file_name().is_some_and(|n| n != "rnd.txt") {
            std::fs::copy(&p, dir.join(p.file_name().unwrap())).unwrap();
        }
    }
    if let Some(z) = axis_z {
        let geo = warpdrive_photon::geometry::Geometry::read(&dir.join("geo-f2k")).unwrap();
        let text: String = geo.doms.iter().map(|d| format!("{} {} 0 0 {z} 0\n", d.string, d.om)).collect();
        std::fs::write(dir.join("cx.dat"), text).unwrap();
    }
    dir
}

fn hits(dir: &Path) -> Vec<(i32, i32, u32)> {
    let det = Detector::build(&DetectorOptions {
        ice_dir: Some(dir.to_path_buf()),
        ..Default::default()
    })
    .unwrap();
    let text = "TR 1 0 e 0 0 -400 180 0 0 1000 0\n";
    let f2k = parse_f2k(Path::new("<test>"), text, &det.yield_).unwrap();
    let sim = warpdrive_photon::simulate(&det, &f2k.specs, 7, &Progress::hidden());
    sim.hits.iter().map(|h| (h.string, h.om, h.time.to_bits())).collect()
}

#[test]
fn module_axes_from_cx_dat() {
    let Some(data) = warpdrive_core::data::test_data_dir(env!("CARGO_MANIFEST_DIR")) else {
        return;
    };
    let plain = hits(&ice_copy(&data, "plain", None));
    let up = hits(&ice_copy(&data, "up", Some(1.0)));
    let down = hits(&ice_copy(&data, "down", Some(-1.0)));
    assert_eq!(plain, up, "the default axis written out changes nothing");
    // The cascade is below the nearest DOMs: most light arrives going up, head-on for the default
    // axis. With the axes flipped those photons meet the back of the module.
    eprintln!("hits: default axes {}, flipped {}", plain.len(), down.len());
    assert!(
        !plain.is_empty() && (down.len() as f64) < 0.8 * plain.len() as f64,
        "{} vs {}",
        down.len(),
        plain.len()
    );
}
