//! Explicit hole ice (photon-ppc-phase2.md §2, `hole.rs`): spice_3.2.1 copied to a temporary
//! directory with cfg.txt lines 8–12 added, photons followed segment by segment
//! (`propagate::step`) from a point on a string axis inside the column, and whole runs.
//! Fixed seeds; every threshold is stated with its statistics.

use std::path::{Path, PathBuf};
use warpdrive_core::progress::Progress;
use warpdrive_core::RandomStream;
use warpdrive_photon::detector::{Detector, DetectorOptions};
use warpdrive_photon::f2k::parse_f2k;
use warpdrive_photon::geometry::DOM_RADIUS;
use warpdrive_photon::propagate::{step, PhotonState, SegmentEnd};
use warpdrive_photon::source::{realise, Emission, Photon, Source, SourceSpec};

fn data() -> Option<PathBuf> {
    warpdrive_core::data::test_data_dir(env!("CARGO_MANIFEST_DIR"))
}

/// spice_3.2.1 in a fresh temporary directory; `hole` = cfg lines 8–12 to append (None: as is).
fn ice_copy(data: &Path, name: &str, hole: Option<[f64; 5]>) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wd-hole-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let src = data.join("ice/spice_3.2.1");
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() && p.file_name().is_some_and(|n| n != "rnd.txt") {
            std::fs::copy(&p, dir.join(p.file_name().unwrap())).unwrap();
        }
    }
    if let Some(h) = hole {
        let mut cfg = std::fs::read_to_string(dir.join("cfg.txt")).unwrap();
        let names = [
            "hole ice radius [DOM radii]",
            "effective scattering length [m]",
            "absorption length [m]",
            "f_SL",
            "g",
        ];
        for (v, n) in h.iter().zip(names) {
            cfg.push_str(&format!("{v} # {n}\n"));
        }
        std::fs::write(dir.join("cfg.txt"), cfg).unwrap();
    }
    dir
}

fn detector(dir: &Path) -> Detector {
    Detector::build(&DetectorOptions {
        ice_dir: Some(dir.to_path_buf()),
        ..Default::default()
    })
    .unwrap()
}

/// String 36's axis (mean DOM x, y, as the collision index builds it) and a height midway
/// between its DOMs 30 and 31.
fn axis_point(det: &Detector) -> [f32; 3] {
    let [x, y] = det.geometry.string_xy(36).unwrap();
    let z = |om: i32| det.geometry.doms.iter().find(|d| d.string == 36 && d.om == om).unwrap().pos[2];
    [x as f32, y as f32, (0.5 * (z(30) + z(31))) as f32]
}

fn a_source() -> Source {
    let spec = SourceSpec {
        event: 0,
        pos: [0.0; 3],
        dir: [0.0, 0.0, 1.0],
        time: 0.0,
        emission: Emission::Isotropic,
        mean_photons: 1.0,
        exact: true,
        yield_sigma: 0.0,
        yield_cap: f64::INFINITY,
        own_dom: None,
    };
    realise(&[spec], 1).remove(0)
}

/// Per photon: whether it left the column (first cut on its edge), the path length inside it up
/// to then, the number of scatterings inside, and the cosines of those scatterings.
struct Track {
    left: bool,
    path: f64,
    scatters: u32,
    cosines: Vec<f64>,
    exit_radius: f64,
}

/// One photon from `at` in an isotropic direction, followed until it is absorbed or first
/// reaches the column's edge (a segment that starts inside ends inside: absorbed or scattered
/// in the column, or cut at its wall).
fn follow(det: &Detector, src: &Source, at: [f32; 3], id: u64) -> Track {
    let mut rng = RandomStream::new(99, 5, id);
    let mu = 2.0 * rng.uniform() - 1.0;
    let phi = std::f32::consts::TAU * rng.uniform();
    let s = (1.0 - mu * mu).max(0.0).sqrt();
    let photon = Photon {
        pos: at,
        dir: [s * phi.cos(), s * phi.sin(), mu],
        time: 0.0,
        slice: 256,
        killed: false,
    };
    let mut st = PhotonState::start(photon, &mut rng);
    let radius = f64::from(det.index.hole_radius);
    let (ax, ay) = (f64::from(at[0]), f64::from(at[1]));
    let mut t = Track {
        left: false,
        path: 0.0,
        scatters: 0,
        cosines: Vec::new(),
        exit_radius: 0.0,
    };
    let mut out = Vec::new();
    for _ in 0..100_000 {
        let (p0, d0) = (st.photon.pos, st.photon.dir);
        // Within 0.3 % of the radius from the wall and heading out, a photon counts as outside
        // (`hole::MIN_EXIT_FRACTION`): it has left (after a scattering close to the wall).
        let r0 = (f64::from(p0[0]) - ax).hypot(f64::from(p0[1]) - ay);
        // (A span from here can only be another string's column, entered later.)
        if r0 > radius * (1.0 - 4e-3) && det.index.hole_span(p0, d0, 1e3).is_none_or(|(t_in, _)| t_in > 0.0) {
            t.left = true;
            t.exit_radius = r0;
            return t;
        }
        let end = step(&det.medium, &det.index, src, id, 0, &mut st, &mut rng, &mut out);
        if end == SegmentEnd::Absorbed {
            return t;
        }
        let p1 = st.photon.pos;
        t.path += (0..3).map(|k| f64::from(p1[k] - p0[k]).powi(2)).sum::<f64>().sqrt();
        let r1 = (f64::from(p1[0]) - ax).hypot(f64::from(p1[1]) - ay);
        match end {
            SegmentEnd::Scattered { in_hole } => {
                assert!(in_hole, "a segment from inside the column scattered in the bulk at r = {r1}");
                t.scatters += 1;
                let d1 = st.photon.dir;
                t.cosines.push((0..3).map(|k| f64::from(d0[k]) * f64::from(d1[k])).sum());
            }
            SegmentEnd::Cut if r1 > radius * (1.0 - 1e-3) => {
                t.left = true;
                t.exit_radius = r1;
                return t;
            }
            SegmentEnd::Cut => panic!("cut inside the column at r = {r1}"),
            SegmentEnd::Absorbed | SegmentEnd::Killed => unreachable!("oversize 5 and absorption handled"),
            SegmentEnd::AfterHit => unreachable!("no birefringence in this model"),
        }
    }
    panic!("photon {id} neither absorbed nor out after 100 000 segments");
}

/// (1) A non-scattering, absorbing column (radius 10 DOM radii = 1.651 m, absorption length
/// 1 m, effective scattering length 10⁶ m) and an isotropic point source on the string axis:
/// a photon at polar angle θ reaches the wall after R/sin θ, so the fraction leaving is
/// P = ½ ∫_{−1}^{1} exp(−R/(λ_a √(1 − μ²))) dμ (midpoint rule, 10⁶ points). 200 000 photons;
/// the count must be within 4 binomial standard deviations √(N P (1 − P)) of N·P. Every photon
/// that leaves does so on the wall (radius within 0.4 %).
#[test]
fn absorbing_column_transmits_exp_of_the_wall_distance() {
    let Some(data) = data() else { return };
    let (xh, la) = (10.0f64, 1.0f64);
    let det = detector(&ice_copy(&data, "absorbing", Some([xh, 1e6, la, 0.35, 0.9])));
    assert!(
        det.description
            .iter()
            .any(|l| l.starts_with("hole ice: columns of radius 1.6510 m")),
        "{:?}",
        det.description
    );
    assert!(det.unsupported.is_empty(), "{:?}", det.unsupported);
    let at = axis_point(&det);
    let src = a_source();
    let n = 200_000u64;
    let radius = xh * DOM_RADIUS;
    let mut left = 0u64;
    for id in 0..n {
        let t = follow(&det, &src, at, id);
        if t.left {
            left += 1;
            assert!((t.exit_radius / radius - 1.0).abs() < 4e-3, "left at r = {}", t.exit_radius);
        }
    }
    let k = 1_000_000;
    let p: f64 = (0..k)
        .map(|i| {
            let mu = -1.0 + 2.0 * (i as f64 + 0.5) / k as f64;
            (-radius / (la * (1.0 - mu * mu).sqrt())).exp()
        })
        .sum::<f64>()
        / k as f64;
    let (expected, sigma) = (n as f64 * p, (n as f64 * p * (1.0 - p)).sqrt());
    eprintln!("left the column: {left} of {n}, expected {expected:.1} ± {sigma:.1} (P = {p:.5})");
    assert!((left as f64 - expected).abs() < 4.0 * sigma, "{left} vs {expected:.1} ± {sigma:.1}");
}

/// (2) A scattering, non-absorbing column (radius 10 DOM radii, effective scattering length
/// 0.4 m with g_h = 0.5: geometric λ_s = 0.2 m; f_SL,h = 0.3; absorption length 10⁶ m): the
/// scatterings inside form a Poisson process in the path length inside, so for paths stopped
/// when the photon first reaches the wall E[N] = E[L]/λ_s (Wald). 20 000 photons; the mean of
/// N − L/λ_s per photon must be within 4 standard errors of 0 (standard error from the sample),
/// and the mean scattering cosine within 4 standard errors of g_h (the column's phase function,
/// not the bulk's 0.9 and no anisotropy).
#[test]
fn scattering_column_scatters_once_per_scattering_length() {
    let Some(data) = data() else { return };
    let (xh, le, g) = (10.0f64, 0.4f64, 0.5f64);
    let lambda = le * (1.0 - g);
    let det = detector(&ice_copy(&data, "scattering", Some([xh, le, 1e6, 0.3, g])));
    let at = axis_point(&det);
    let src = a_source();
    let n = 20_000u64;
    let (mut d, mut d2, mut nsum, mut lsum) = (0.0f64, 0.0f64, 0u64, 0.0f64);
    let (mut c, mut c2, mut nc) = (0.0f64, 0.0f64, 0u64);
    let mut left = 0;
    for id in 0..n {
        let t = follow(&det, &src, at, id);
        left += u64::from(t.left);
        let x = f64::from(t.scatters) - t.path / lambda;
        d += x;
        d2 += x * x;
        nsum += u64::from(t.scatters);
        lsum += t.path;
        for &cs in &t.cosines {
            c += cs;
            c2 += cs * cs;
            nc += 1;
        }
    }
    let nf = n as f64;
    let (mean, se) = (d / nf, ((d2 / nf - (d / nf).powi(2)) / nf).sqrt());
    eprintln!(
        "scatterings inside {nsum}, path/λ_s {:.1}; mean N − L/λ_s = {mean:.4} ± {se:.4}; {left} of {n} reached the wall",
        lsum / lambda
    );
    assert!(left == n, "no absorption in this column: every photon reaches the wall");
    assert!(mean.abs() < 4.0 * se, "mean N − L/λ_s = {mean} ± {se}");
    let ncf = nc as f64;
    let (cm, cse) = (c / ncf, ((c2 / ncf - (c / ncf).powi(2)) / ncf).sqrt());
    eprintln!("mean scattering cosine inside {cm:.4} ± {cse:.4} (g_h = {g})");
    assert!((cm - g).abs() < 4.0 * cse, "mean cosine {cm} ± {cse} vs {g}");
}

fn cascade_hits(dir: &Path) -> Vec<(i32, i32, u32, u32)> {
    let det = detector(dir);
    // 1 TeV cascade 10 m from string 36's axis at the height of DOM 30 (PPC coordinates).
    let at = axis_point(&det);
    let text = format!("TR 1 0 e {} {} {} 180 0 0 1000 0\n", at[0] + 10.0, at[1], at[2]);
    let f2k = parse_f2k(Path::new("<test>"), &text, &det.yield_).unwrap();
    let sim = warpdrive_photon::simulate(&det, &f2k.specs, 7, &Progress::hidden());
    sim.hits
        .iter()
        .map(|h| (h.string, h.om, h.time.to_bits(), h.wavelength.to_bits()))
        .collect()
}

/// (3) Radius 0 turns hole ice off: the model with lines 8–12 (radius 0, other values
/// arbitrary) gives bit-identical hits to the model without them (same seed). And a column
/// that absorbs (radius 10 DOM radii, absorption length 5 cm, wider than the xR = 5 pancakes)
/// removes all but a few per cent of the hits of the same cascade.
#[test]
fn radius_zero_changes_nothing_and_an_absorbing_column_blinds_the_doms() {
    let Some(data) = data() else { return };
    let none = cascade_hits(&ice_copy(&data, "none", None));
    let zero = cascade_hits(&ice_copy(&data, "zero", Some([0.0, 0.5, 0.05, 0.3, 0.8])));
    assert!(none.len() > 500, "{} hits", none.len());
    assert!(none == zero, "{} vs {} hits, not identical", none.len(), zero.len());
    let dark = cascade_hits(&ice_copy(&data, "dark", Some([10.0, 1e6, 0.05, 0.3, 0.8])));
    eprintln!("hits: {} without hole ice, {} with an absorbing column", none.len(), dark.len());
    assert!((dark.len() as f64) < 0.05 * none.len() as f64, "{} vs {}", dark.len(), none.len());
}
