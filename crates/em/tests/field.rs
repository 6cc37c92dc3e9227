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
            let (s, end) = propagate(&nav, &mut path, &mut track, &field, 1e5, &acc);
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
