//! Charged tracks on their helix through a volume tree (issue #31): the crossings the field
//! propagator finds against the closed form. Geometry: a tracker cylinder (ρ < 500 mm,
//! |z| < 1000 mm) holding a thin layer (300 < ρ < 302 mm), in a 4 m world; field 3.8 T along z.
//! A track from the axis has ρ(s) = 2R |sin(ωs/2)|, so it reaches radius r at
//! s = (2/|ω|)·asin(r/2R): the exact arc lengths of its three crossings.

use std::path::Path;
use warpdrive_core::RandomStream;
use warpdrive_em::field::helix::{Helix, UniformField, C_LIGHT};
use warpdrive_em::field::propagate::{propagate, ChargedTrack, FieldAccuracy, FieldStepEnd};
use warpdrive_em::gdml;
use warpdrive_em::geo::{Navigator, Vec3};

/// Philox tag of this test's random numbers (warpdrive_core::RandomStream).
const TAG_TEST: u32 = 0x4649_454c;

const GEOMETRY: &str = r#"<?xml version="1.0"?>
<gdml>
  <solids>
    <box name="W" x="4" y="4" z="4" lunit="m"/>
    <tube name="T" rmax="500" z="2000" deltaphi="2*pi"/>
    <tube name="L" rmin="300" rmax="302" z="2000" deltaphi="2*pi"/>
  </solids>
  <structure>
    <volume name="Layer"><materialref ref="G4_Si"/><solidref ref="L"/></volume>
    <volume name="Tracker"><materialref ref="G4_AIR"/><solidref ref="T"/>
      <physvol name="layer"><volumeref ref="Layer"/></physvol></volume>
    <volume name="World"><materialref ref="G4_Galactic"/><solidref ref="W"/>
      <physvol name="tracker"><volumeref ref="Tracker"/></physvol></volume>
  </structure>
  <setup name="Default" version="1.0"><world ref="World"/></setup>
</gdml>
"#;

#[test]
fn helix_crossings_match_the_closed_form() {
    let g = gdml::parse(GEOMETRY, Path::new("tracker.gdml")).unwrap_or_else(|e| panic!("{e}"));
    let nav = Navigator::new(&g.tree);
    let field = UniformField {
        b: Vec3::new(0.0, 0.0, 3.8),
    };
    let acc = FieldAccuracy::default();
    let mut rng = RandomStream::new(2026, TAG_TEST, 0);
    let (mut tracks, mut worst) = (0, 0.0f64);
    while tracks < 300 {
        let charge = if rng.uniform_f64() < 0.5 { -1.0 } else { 1.0 };
        let momentum = 300.0 + 1700.0 * rng.uniform_f64();
        let cz = 0.6 * (2.0 * rng.uniform_f64() - 1.0);
        let phi = std::f64::consts::TAU * rng.uniform_f64();
        let st = (1.0 - cz * cz).sqrt();
        let dir = Vec3::new(st * phi.cos(), st * phi.sin(), cz);
        let h = Helix::new(Vec3::ZERO, dir, charge, momentum, &field);
        let (r, w) = (h.radius(), h.omega.abs());
        assert!((r - momentum * st / (C_LIGHT * 3.8)).abs() < 1e-9 * r);
        let s_at = |rho: f64| 2.0 / w * (rho / (2.0 * r)).asin();
        // Only tracks that leave the tracker through its side (2R > 500 mm, before |z| = 1000).
        if 2.0 * r <= 500.0 || s_at(500.0) * cz.abs() >= 1000.0 {
            continue;
        }
        tracks += 1;
        let want = [("Tracker", s_at(300.0)), ("Layer", s_at(302.0)), ("Tracker", s_at(500.0))];
        let mut path = nav.locate(Vec3::ZERO).unwrap();
        let mut track = ChargedTrack {
            pos: Vec3::ZERO,
            dir,
            charge,
            momentum,
        };
        let mut travelled = 0.0;
        for (volume, s_cross) in want {
            assert_eq!(g.tree.logical[nav.logical(&path) as usize].name, volume);
            let (s, end) = propagate(&nav, &mut path, &mut track, &field, 1e5, 0.0, &acc);
            assert_eq!(end, FieldStepEnd::Crossed);
            travelled += s;
            // Just past the boundary: by at most delta_intersection (plus rounding).
            let err = travelled - s_cross;
            assert!(
                err >= -1e-9 && err <= acc.delta_intersection + 1e-9,
                "{volume}: crossed at {travelled}, exact {s_cross}"
            );
            worst = worst.max(err.abs());
            assert!((track.dir.norm() - 1.0).abs() < 1e-12, "|p| must be conserved");
            // The track is on the exact helix.
            assert!((track.pos - h.at(travelled).0).norm() < 1e-9);
        }
        assert_eq!(g.tree.logical[nav.logical(&path) as usize].name, "World");
    }
    eprintln!(
        "{tracks} tracks, 900 crossings: max |s − s_exact| = {worst:.2e} mm (delta_intersection {:e})",
        acc.delta_intersection
    );
}

/// A field map of a uniform 3.8 T field (a 2 × 2 grid: bilinear interpolation is exact) and the
/// Dormand–Prince integrator: a 1 GeV/c e⁻ nearly across the field (pitch 5.5 mm per turn)
/// in a vacuum world, followed for 100 turns one turn per call, stays on the circle of radius
/// p⊥/(0.3 B) to 1e-6 relative (measured every turn), |Ω| = 1.
#[test]
fn map_of_a_uniform_field_follows_the_helix_for_100_turns() {
    use warpdrive_em::field::propagate::propagate_in_map;
    use warpdrive_em::field::FieldMap;
    let g = gdml::parse(VACUUM, Path::new("vacuum.gdml")).unwrap_or_else(|e| panic!("{e}"));
    let nav = Navigator::new(&g.tree);
    let map = FieldMap::uniform_z(3.8, 3000.0, -2500.0, 2500.0);
    let world = g.tree.solids.bounding_box(g.tree.logical[g.tree.world as usize].solid);
    map.check_covers(&world, "World").unwrap();
    let acc = FieldAccuracy::default();
    let (q, p) = (-1.0, 1000.0);
    let tilt: f64 = 1e-3;
    let dir = Vec3::new((1.0 - tilt * tilt).sqrt(), 0.0, tilt);
    let start = Vec3::new(0.0, 0.0, -300.0);
    let h = Helix::new(
        start,
        dir,
        q,
        p,
        &UniformField {
            b: Vec3::new(0.0, 0.0, 3.8),
        },
    );
    let (r, centre) = (h.radius(), h.centre());
    assert!((r / (p * (1.0 - tilt * tilt).sqrt() / (C_LIGHT * 3.8)) - 1.0).abs() < 1e-12);
    let turn = std::f64::consts::TAU / h.omega.abs();
    let mut path = nav.locate(start).unwrap();
    let mut track = ChargedTrack {
        pos: start,
        dir,
        charge: q,
        momentum: p,
    };
    let (mut worst, mut travelled) = (0.0f64, 0.0);
    for k in 1..=100 {
        let (s, end) = propagate_in_map(&nav, &mut path, &mut track, &map, turn, &acc);
        assert_eq!(end, FieldStepEnd::Limit, "turn {k}");
        travelled += s;
        let rho = Vec3::new(track.pos.x - centre.x, track.pos.y - centre.y, 0.0).norm();
        worst = worst.max((rho / r - 1.0).abs());
        assert!((track.dir.norm() - 1.0).abs() < 1e-12);
    }
    let off = (track.pos - h.at(travelled).0).norm();
    eprintln!("map: R = {r:.3} mm, worst |ρ/R − 1| over 100 turns {worst:.2e}; {off:.2e} mm from the exact helix's point");
    assert!(worst < 1e-6, "{worst:e}");
    assert!((travelled / (100.0 * turn) - 1.0).abs() < 1e-12);
}

/// The tracker's crossings in a map of the uniform field equal the closed form within
/// delta_intersection and the integrator's accuracy (50 tracks, 150 crossings).
#[test]
fn map_crossings_match_the_closed_form() {
    use warpdrive_em::field::propagate::propagate_in_map;
    use warpdrive_em::field::FieldMap;
    let g = gdml::parse(GEOMETRY, Path::new("tracker.gdml")).unwrap_or_else(|e| panic!("{e}"));
    let nav = Navigator::new(&g.tree);
    let map = FieldMap::uniform_z(3.8, 3000.0, -2000.0, 2000.0);
    let acc = FieldAccuracy::default();
    let mut rng = RandomStream::new(2027, TAG_TEST, 0);
    let (mut tracks, mut worst) = (0, 0.0f64);
    while tracks < 50 {
        let charge = if rng.uniform_f64() < 0.5 { -1.0 } else { 1.0 };
        let momentum = 300.0 + 1700.0 * rng.uniform_f64();
        let cz = 0.6 * (2.0 * rng.uniform_f64() - 1.0);
        let phi = std::f64::consts::TAU * rng.uniform_f64();
        let st = (1.0 - cz * cz).sqrt();
        let dir = Vec3::new(st * phi.cos(), st * phi.sin(), cz);
        let h = Helix::new(
            Vec3::ZERO,
            dir,
            charge,
            momentum,
            &UniformField {
                b: Vec3::new(0.0, 0.0, 3.8),
            },
        );
        let (r, w) = (h.radius(), h.omega.abs());
        let s_at = |rho: f64| 2.0 / w * (rho / (2.0 * r)).asin();
        if 2.0 * r <= 500.0 || s_at(500.0) * cz.abs() >= 1000.0 {
            continue;
        }
        tracks += 1;
        let mut path = nav.locate(Vec3::ZERO).unwrap();
        let mut track = ChargedTrack {
            pos: Vec3::ZERO,
            dir,
            charge,
            momentum,
        };
        let mut travelled = 0.0;
        for s_cross in [s_at(300.0), s_at(302.0), s_at(500.0)] {
            let (s, end) = propagate_in_map(&nav, &mut path, &mut track, &map, 1e5, &acc);
            assert_eq!(end, FieldStepEnd::Crossed);
            travelled += s;
            let err = travelled - s_cross;
            assert!(
                err >= -1e-7 && err <= acc.delta_intersection + 1e-7,
                "crossed at {travelled}, exact {s_cross}"
            );
            worst = worst.max(err.abs());
        }
    }
    eprintln!("map: {tracks} tracks, 150 crossings: max |s − s_exact| = {worst:.2e} mm");
}

/// A map that does not cover the world is refused with the map's and the world's extents; a
/// CSV map is read (any column order, comments) and interpolated.
#[test]
fn map_files_and_coverage() {
    use warpdrive_em::field::FieldMap;
    let dir = std::env::temp_dir().join(format!("wd-fieldmap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("solenoid.csv");
    let mut text = String::from("# a 2 T solenoid, falling off past |z| = 1 m\nz_mm,r_mm,bz_T,br_T\n");
    for z in [-2000.0, -1000.0, 0.0, 1000.0, 2000.0] {
        for r in [0.0, 1500.0, 3000.0] {
            let bz: f64 = if z == 0.0 {
                2.0
            } else if f64::abs(z) == 1000.0 {
                1.0
            } else {
                0.0
            };
            text += &format!("{z},{r},{bz},0\n");
        }
    }
    std::fs::write(&f, text).unwrap();
    let m = FieldMap::read(&f).unwrap();
    assert_eq!((m.r.len(), m.z.len()), (3, 5));
    assert!((m.at(Vec3::new(100.0, 100.0, 500.0)).z - 1.5).abs() < 1e-12);
    let g = gdml::parse(GEOMETRY, Path::new("tracker.gdml")).unwrap();
    let world = g.tree.solids.bounding_box(g.tree.logical[g.tree.world as usize].solid);
    m.check_covers(&world, "World").unwrap();
    let small = FieldMap::uniform_z(1.0, 2000.0, -2000.0, 2000.0);
    let e = small.check_covers(&world, "World").unwrap_err().to_string();
    assert!(
        e.contains("the field map covers r ≤ 2000 mm, z ∈ [-2000, 2000] mm, but the world 'World' reaches r = 2828.427125 mm"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

const VACUUM: &str = r#"<?xml version="1.0"?>
<gdml>
  <solids><box name="W" x="4" y="4" z="4" lunit="m"/></solids>
  <structure><volume name="World"><materialref ref="G4_Galactic"/><solidref ref="W"/></volume></structure>
  <setup name="Default" version="1.0"><world ref="World"/></setup>
</gdml>
"#;

// ---------------------------------------------------------------------------------------------
// Mutated field maps never panic or hang (DESIGN.md §6).

mod mutations {
    use proptest::prelude::*;
    use std::time::Duration;
    use warpdrive_core::mutate::{apply, config, strategy, within};
    use warpdrive_em::field::map::FieldMap;
    use warpdrive_em::geo::Vec3;

    /// A 4 × 3 (r, z) map of a solenoid-like field, as a user writes it.
    fn map_csv() -> String {
        let mut s = String::from("r_mm,z_mm,br_T,bz_T\n");
        for r in [0.0, 100.0, 200.0, 300.0] {
            for z in [-500.0, 0.0, 500.0] {
                s += &format!("{r},{z},{},{}\n", 1e-4 * r * z / 500.0, 3.8 - 1e-3 * r);
            }
        }
        s
    }

    proptest! {
        #![proptest_config(config(200))]

        /// Random byte-level mutations of a CSV map: the reader either refuses it with an error
        /// or returns a map whose field can be evaluated anywhere (inside and outside the grid).
        #[test]
        fn mutated_field_maps_never_panic_or_hang(m in strategy(6)) {
            let bytes = apply(map_csv().as_bytes(), &m);
            let path = std::env::temp_dir().join(format!("wd-fieldmap-mut-{}-{:x}.csv", std::process::id(), {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                bytes.hash(&mut h);
                h.finish()
            }));
            std::fs::write(&path, &bytes).unwrap();
            let p = path.clone();
            let r = within(Duration::from_secs(60), move || match FieldMap::read(&p) {
                Ok(map) => {
                    for k in 0..50 {
                        let a = f64::from(k);
                        let _ = map.at(Vec3::new(7.0 * a - 150.0, 3.0 * a, 25.0 * a - 600.0));
                    }
                    Ok(())
                }
                Err(e) => Err(e.to_string()),
            });
            let _ = std::fs::remove_file(&path);
            prop_assert!(r.is_ok(), "{:?}: {}", m, r.unwrap_err());
        }
    }
}
