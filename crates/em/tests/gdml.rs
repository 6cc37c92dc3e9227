//! The GDML reader and the navigator (issue #31) on warpdrive's own small GDML files
//! (tests/data/nested.gdml and files written here): what is read, Geant4's rotation
//! convention, navigation through nested, touching and coincident volumes, and errors that
//! name the file, the line and the tag.

use std::path::{Path, PathBuf};
use warpdrive_core::RandomStream;
use warpdrive_em::gdml::{self, Gdml};
use warpdrive_em::geo::navigator::PUSH;
use warpdrive_em::geo::{Navigator, Vec3, VolumePath};

/// Philox tag of this test's random numbers (warpdrive_core::RandomStream).
const TAG_TEST: u32 = 0x4744_4d4c;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn nested() -> Gdml {
    gdml::read(&data("nested.gdml")).unwrap_or_else(|e| panic!("{e}"))
}

/// The names along a path, as "world/calo/layer#2".
fn describe(g: &Gdml, path: &VolumePath) -> String {
    let mut s = String::from("World");
    for &k in &path.placements {
        let p = &g.tree.placements[k as usize];
        s.push('/');
        s.push_str(&p.name);
        if p.copy != 0 {
            s.push_str(&format!("#{}", p.copy));
        }
    }
    s
}

fn at(g: &Gdml, x: f64, y: f64, z: f64) -> String {
    let nav = Navigator::new(&g.tree);
    nav.locate(Vec3::new(x, y, z)).map_or_else(|| "outside".into(), |p| describe(g, &p))
}

#[test]
fn reads_volumes_materials_and_placements() {
    let g = nested();
    let t = &g.tree;
    assert_eq!(t.logical[t.world as usize].name, "World");
    assert_eq!(t.logical.len(), 16);
    // 16 physvols in the world (the assembly's two shells placed directly) + 4 layers.
    assert_eq!(t.daughters(t.world).len(), 16);
    assert_eq!(t.placements.len(), 20);
    let layer = t.logical.iter().find(|l| l.name == "Layer").unwrap();
    assert_eq!(layer.auxiliary, vec![("SensDet".to_string(), "CaloSD".to_string())]);
    let m = |name: &str| g.materials.iter().find(|m| m.name == name).unwrap_or_else(|| panic!("{name}"));
    // Water by atom count: w_H = 2·1.008 / (2·1.008 + 16).
    let water = m("Water");
    assert!((water.elements[0].fraction - 2.016 / 18.016).abs() < 1e-12);
    assert_eq!(water.mean_excitation_ev, Some(78.0));
    // Mix: half water, half G4_Pb by mass, 1000 kg/m³ = 1 g/cm³.
    let mix = m("Mix");
    assert!((mix.density - 1.0).abs() < 1e-12);
    let pb = mix.elements.iter().find(|c| c.z == 82.0).unwrap();
    assert!((pb.fraction - 0.5).abs() < 1e-12);
    assert!((mix.elements.iter().map(|c| c.fraction).sum::<f64>() - 1.0).abs() < 1e-12);
    assert_eq!(m("Lead").elements[0].a, 207.2);
    assert!((m("Lead").density - 11.35).abs() < 1e-12);
    for name in [
        "G4_Galactic",
        "G4_lAr",
        "G4_PbWO4",
        "G4_CESIUM_IODIDE",
        "G4_BGO",
        "G4_PLASTIC_SC_VINYLTOLUENE",
        "G4_W",
    ] {
        assert_eq!(m(name).nist, Some(name));
    }
    // Units and expressions: the layer box 20 cm × 20 cm × 2 cm, the orb of radius 2·gap = 10 mm.
    assert_eq!(at(&g, 0.0, 0.0, 200.0 - 30.0 + 9.9), "World/calo/layer");
    assert_eq!(at(&g, 99.9, 99.9, 235.0), "World/calo/layer#3");
    assert_eq!(at(&g, 0.0, 0.0, -120.0 + 9.9), "World/ball");
    assert_eq!(at(&g, 0.0, 0.0, -120.0 - 10.1), "World");
}

/// Geant4's GDML convention: `rotation z = 90°` turns the daughter by −90° about z. The quadrant
/// tube (φ from 0 to 90° in its own frame) placed at x = −200 mm with it covers x > 0, y < 0
/// around its centre; placed with the active rotation it would cover x < 0, y > 0.
#[test]
fn rotations_are_inverted_as_in_geant4() {
    let g = nested();
    assert_eq!(at(&g, -200.0 + 20.0, -20.0, 0.0), "World/quad");
    assert_eq!(at(&g, -200.0 + 20.0, 20.0, 0.0), "World");
    assert_eq!(at(&g, -200.0 - 20.0, 20.0, 0.0), "World");
    assert_eq!(at(&g, -200.0 - 20.0, -20.0, 0.0), "World");
    // The union's rod, rotated by y = 90°, lies along x.
    assert_eq!(at(&g, 250.0 + 48.0, 0.0, 0.0), "World/cross");
    assert_eq!(at(&g, 250.0, 0.0, 48.0), "World");
    // The subtraction's hole.
    assert_eq!(at(&g, 0.0, 0.0, -100.0), "World");
    assert_eq!(at(&g, 15.0, 0.0, -100.0), "World/holed");
    // The assembly's shells keep their copy numbers.
    assert_eq!(at(&g, -130.0, 250.0, 0.0), "World/pair/left#7");
    assert_eq!(at(&g, 130.0, 250.0, 0.0), "World/pair/right#8");
    assert_eq!(at(&g, 100.0, 250.0, 0.0), "World");
    assert_eq!(at(&g, 0.0, 0.0, 600.0), "outside");
}

/// A ray along z through the calorimeter: world, four touching lead layers whose outer faces
/// coincide with the calorimeter's, then the world again — exact lengths, no zero-length or
/// stuck steps.
#[test]
fn crossing_touching_and_coincident_faces() {
    let g = nested();
    let nav = Navigator::new(&g.tree);
    let mut p = Vec3::new(1.0, 2.0, 100.0);
    let d = Vec3::new(0.0, 0.0, 1.0);
    let mut path = nav.locate(p).unwrap();
    let mut steps = Vec::new();
    loop {
        let here = describe(&g, &path);
        let (len, inside) = nav.step(&mut path, &mut p, d, 1e9);
        steps.push((here, len));
        if !inside {
            break;
        }
    }
    let names: Vec<&str> = steps.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "World",
            "World/calo/layer",
            "World/calo/layer#1",
            "World/calo/layer#2",
            "World/calo/layer#3",
            "World"
        ]
    );
    let lens: Vec<f64> = steps.iter().map(|s| s.1).collect();
    let want = [60.0, 20.0, 20.0, 20.0, 20.0, 260.0];
    for (l, w) in lens.iter().zip(want) {
        assert!((l - w).abs() < 3e-9, "{lens:?}");
    }
    // Along x at z = 300: through the slab that touches the world's +x face, out of the world.
    let mut p = Vec3::new(300.0, 20.0, 300.0);
    let d = Vec3::new(1.0, 0.0, 0.0);
    let mut path = nav.locate(p).unwrap();
    assert_eq!(describe(&g, &path), "World");
    let (l1, in1) = nav.step(&mut path, &mut p, d, 1e9);
    assert!(in1 && (l1 - 120.0).abs() < 2e-9);
    assert_eq!(describe(&g, &path), "World/edge");
    let (l2, in2) = nav.step(&mut path, &mut p, d, 1e9);
    assert!(!in2 && (l2 - 80.0).abs() < 2e-9, "left the world through the shared face: {l2}");
}

/// 100 000 random tracks from random points of the world, aimed at random points of the
/// daughters' bounding boxes (so that most cross volumes), each followed to the world's edge:
/// every step's midpoint must be located in the volume the navigator says the step is in, the
/// steps must add up to the distance to the world's boundary (within the pushes), and no track
/// may take more steps than boundaries it can cross. Also: no point of the world lies in two
/// daughters (the test geometry has no overlaps).
#[test]
fn random_tracks_are_never_stuck_or_lost() {
    let g = nested();
    let nav = Navigator::new(&g.tree);
    let mut rng = RandomStream::new(31, TAG_TEST, 0);
    let (mut total_steps, mut mismatches, mut short_mismatches) = (0u64, 0u64, 0u64);
    let mut max_len_err: f64 = 0.0;
    let boxes: Vec<_> = g.tree.daughters(g.tree.world).map(|k| g.tree.placements[k as usize].bbox).collect();
    let mut crossings = 0u64;
    for i in 0..100_000 {
        let p0 = Vec3::new(
            1000.0 * rng.uniform_f64() - 500.0,
            1000.0 * rng.uniform_f64() - 500.0,
            1000.0 * rng.uniform_f64() - 500.0,
        );
        let b = boxes[i % boxes.len()];
        let target = b.min
            + Vec3::new(
                (b.max.x - b.min.x) * rng.uniform_f64(),
                (b.max.y - b.min.y) * rng.uniform_f64(),
                (b.max.z - b.min.z) * rng.uniform_f64(),
            );
        let d = (target - p0).unit();
        // Distance to the world box's boundary (half 500 mm).
        let exit = [(p0.x, d.x), (p0.y, d.y), (p0.z, d.z)]
            .iter()
            .map(|&(q, v)| {
                if v > 0.0 {
                    (500.0 - q) / v
                } else if v < 0.0 {
                    (-500.0 - q) / v
                } else {
                    f64::INFINITY
                }
            })
            .fold(f64::INFINITY, f64::min);
        let mut path = nav.locate(p0).unwrap();
        let mut p = p0;
        let mut travelled = 0.0;
        let mut n = 0u64;
        loop {
            let before = path.clone();
            let start = p;
            let (len, inside) = nav.step(&mut path, &mut p, d, 1e9);
            n += 1;
            assert!(n < 200, "a track is stuck at {p:?}");
            let mid = start.along(d, 0.5 * len);
            if nav.locate(mid).as_ref() != Some(&before) {
                if len > 1e-6 {
                    mismatches += 1;
                } else {
                    short_mismatches += 1;
                }
            }
            travelled += len;
            if !inside {
                break;
            }
        }
        total_steps += n;
        crossings += n - 1;
        // The steps (each ending PUSH past a boundary, the next starting there) add up to the
        // distance to the world's edge plus the last push.
        max_len_err = max_len_err.max((travelled - exit - PUSH).abs());
    }
    assert!(crossings > 100_000, "{crossings}");
    eprintln!("{total_steps} steps ({crossings} boundary crossings inside the world), {mismatches} midpoints in another volume, {short_mismatches} of them in steps below 1e-6 mm, max |length − distance to the world's edge − push| {max_len_err:.2e} mm");
    assert_eq!(mismatches, 0);
    assert!(short_mismatches < 10);
    assert!(max_len_err <= 1e-10, "{max_len_err}");
    // No overlaps: 200 000 random points, at most one daughter of the world holds each.
    let t = &g.tree;
    for _ in 0..200_000 {
        let q = Vec3::new(
            1000.0 * rng.uniform_f64() - 500.0,
            1000.0 * rng.uniform_f64() - 500.0,
            1000.0 * rng.uniform_f64() - 500.0,
        );
        let holders = t
            .daughters(t.world)
            .filter(|&k| {
                let pl = &t.placements[k as usize];
                t.solids.contains(t.logical[pl.logical as usize].solid, pl.transform.to_local(q))
            })
            .count();
        assert!(holders <= 1, "{q:?} is in {holders} daughters");
    }
}

/// The navigator's safety never reaches a boundary: a sphere of that radius around random
/// points holds no point of another volume (checked on 64 points of its surface each).
#[test]
fn safety_is_safe() {
    let g = nested();
    let nav = Navigator::new(&g.tree);
    let mut rng = RandomStream::new(7, TAG_TEST, 0);
    let mut positive = 0;
    for _ in 0..20_000 {
        let p = Vec3::new(
            1000.0 * rng.uniform_f64() - 500.0,
            1000.0 * rng.uniform_f64() - 500.0,
            1000.0 * rng.uniform_f64() - 500.0,
        );
        let path = nav.locate(p).unwrap();
        let s = nav.safety(&path, p);
        if s > 0.0 {
            positive += 1;
        }
        for _ in 0..64 {
            let cz = 2.0 * rng.uniform_f64() - 1.0;
            let ph = 2.0 * std::f64::consts::PI * rng.uniform_f64();
            let r = (1.0 - cz * cz).sqrt();
            let q = p.along(Vec3::new(r * ph.cos(), r * ph.sin(), cz), s);
            assert_eq!(
                nav.locate(q).as_ref(),
                Some(&path),
                "safety {s} from {p:?} reaches another volume at {q:?}"
            );
        }
    }
    assert!(positive > 19_000, "{positive}");
}

// ---------------------------------------------------------------------------------------------
// Errors: file, line, tag and attribute.

const HEAD: &str = "<?xml version=\"1.0\"?>\n<gdml>\n";

/// A file of `body` lines after the header, with a world of one box.
fn doc(defines: &str, materials: &str, solids: &str, volumes: &str) -> String {
    format!(
        "{HEAD}<define>\n{defines}</define>\n<materials>\n{materials}</materials>\n<solids>\n<box name=\"W\" x=\"100\" y=\"100\" z=\"100\"/>\n{solids}</solids>\n<structure>\n{volumes}<volume name=\"World\"><materialref ref=\"G4_Galactic\"/><solidref ref=\"W\"/></volume>\n</structure>\n<setup name=\"Default\" version=\"1.0\"><world ref=\"World\"/></setup>\n</gdml>\n"
    )
}

/// Parse and expect an error at the line holding `marker`, with `needle` in the message.
fn expect_error(text: &str, marker: &str, needle: &str) {
    let line = text.lines().position(|l| l.contains(marker)).expect("marker") + 1;
    let e = gdml::parse(text, Path::new("det.gdml")).map(|_| ()).unwrap_err().to_string();
    let want = format!("det.gdml:{line}: ");
    assert!(e.starts_with(&want), "'{e}' should start with '{want}'");
    assert!(e.contains(needle), "'{e}' should contain '{needle}'");
}

#[test]
fn errors_name_file_line_and_tag() {
    expect_error(
        &doc("", "", "<tube name=\"t\" rmax=\"abc\" z=\"10\" deltaphi=\"1\"/>\n", ""),
        "rmax=\"abc\"",
        "<tube> 'rmax': expected a number, found \"abc\" (unknown name 'abc')",
    );
    expect_error(
        &doc("", "", "<box name=\"b\" x=\"1\" y=\"1\"/>\n", ""),
        "name=\"b\"",
        "<box> 'z': missing",
    );
    expect_error(
        &doc("", "", "<box name=\"b\" x=\"1\" y=\"-1\" z=\"1\"/>\n", ""),
        "name=\"b\"",
        "<box> 'y': must be positive",
    );
    expect_error(
        &doc("", "", "<torus name=\"t\" rmin=\"0\" rmax=\"1\" rtor=\"5\" deltaphi=\"1\"/>\n", ""),
        "torus",
        "<torus> is not a supported solid",
    );
    expect_error(
        &doc(
            "",
            "<isotope name=\"U235\" Z=\"92\" N=\"235\"><atom value=\"235.04\"/></isotope>\n<isotope name=\"Pu239\" Z=\"94\" N=\"239\"><atom value=\"239.05\"/></isotope>\n<element name=\"X\"><fraction n=\"0.5\" ref=\"U235\"/>\n<fraction n=\"0.5\" ref=\"Pu239\"/></element>\n",
            "",
            "",
        ),
        "ref=\"Pu239\"/></element>",
        "<fraction> 'ref': element 'X' mixes isotopes of different Z",
    );
    expect_error(
        &doc("", "<element name=\"X\"><fraction n=\"1\" ref=\"U238\"/></element>\n", "", ""),
        "U238",
        "no isotope named 'U238'",
    );
    expect_error(
        &doc("<matrix name=\"m\" coldim=\"1\" values=\"1\"/>\n", "", "", ""),
        "matrix",
        "<matrix> is not supported in <define>",
    );
    expect_error(
        &doc("<constant name=\"a\" value=\"1+\"/>\n", "", "", ""),
        "name=\"a\"",
        "<constant> 'value': expected a number",
    );
    expect_error(
        &doc(
            "<constant name=\"a\" value=\"1\"/>\n<constant name=\"a\" value=\"2\"/>\n",
            "",
            "",
            "",
        ),
        "value=\"2\"",
        "'a' is already defined",
    );
    expect_error(
        &doc(
            "",
            "<material name=\"M\"><D value=\"1\"/><fraction n=\"0.5\" ref=\"G4_Pb\"/><fraction n=\"0.4\" ref=\"G4_Fe\"/></material>\n",
            "",
            "",
        ),
        "name=\"M\"",
        "mass fractions add up to 0.9",
    );
    expect_error(
        &doc("", "<material name=\"M\"><fraction n=\"1\" ref=\"G4_Pb\"/></material>\n", "", ""),
        "name=\"M\"",
        "has no density",
    );
    expect_error(
        &doc(
            "",
            "<material name=\"M\"><D value=\"1\"/><fraction n=\"1\" ref=\"Nope\"/></material>\n",
            "",
            "",
        ),
        "Nope",
        "<fraction> 'ref': no element or material named 'Nope'",
    );
    expect_error(
        &doc(
            "",
            "",
            "",
            "<volume name=\"V\"><materialref ref=\"Unobtainium\"/><solidref ref=\"W\"/></volume>\n",
        ),
        "Unobtainium",
        "<materialref> 'ref': no material named 'Unobtainium'",
    );
    expect_error(
        &doc(
            "",
            "",
            "",
            "<volume name=\"V\"><materialref ref=\"G4_Pb\"/><solidref ref=\"W\"/>\n<replicavol number=\"2\"/></volume>\n",
        ),
        "replicavol",
        "<replicavol> is not supported",
    );
    expect_error(
        &doc(
            "",
            "",
            "",
            "<volume name=\"V\"><materialref ref=\"G4_Pb\"/><solidref ref=\"W\"/>\n<paramvol ncopies=\"2\"/></volume>\n",
        ),
        "paramvol",
        "<paramvol> is not supported",
    );
    expect_error(
        &doc("", "", "", "<volume name=\"V\"><materialref ref=\"G4_Pb\"/><solidref ref=\"W\"/>\n<physvol><volumeref ref=\"Later\"/></physvol></volume>\n"),
        "Later",
        "<volumeref> 'ref': no volume or assembly named 'Later' defined before this point",
    );
    expect_error(
        &doc(
            "",
            "",
            "",
            "<volume name=\"A\"><materialref ref=\"G4_Pb\"/><solidref ref=\"W\"/></volume>\n<volume name=\"V\"><materialref ref=\"G4_Pb\"/><solidref ref=\"W\"/>\n<physvol><volumeref ref=\"A\"/><scale name=\"s\" x=\"-1\" y=\"1\" z=\"1\"/></physvol></volume>\n",
        ),
        "scale",
        "<scale> reflections and scaling are not supported",
    );
    expect_error(
        &doc(
            "",
            "",
            "<trap name=\"tw\" z=\"10\" theta=\"0\" phi=\"0\" y1=\"10\" x1=\"10\" x2=\"10\" alpha1=\"0.3\" y2=\"10\" x3=\"10\" x4=\"10\" alpha2=\"-0.3\"/>\n",
            "",
        ),
        "name=\"tw\"",
        "not planar",
    );
    expect_error(
        &format!("{HEAD}<solids>\n<box name=\"b\" x=\"1\"\n</solids></gdml>\n"),
        "</solids>",
        "not well-formed XML",
    );
    let e = gdml::parse(&format!("{HEAD}</gdml>\n"), Path::new("det.gdml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("det.gdml") && e.contains("no <setup>"), "{e}");
    // The file itself: a missing file is named.
    let e = gdml::read(Path::new("/nonexistent/det.gdml")).unwrap_err().to_string();
    assert!(e.contains("/nonexistent/det.gdml"), "{e}");
}

// ---------------------------------------------------------------------------------------------
// Mutated files never panic or hang (DESIGN.md §6).

mod mutations {
    use proptest::prelude::*;
    use std::path::Path;
    use std::time::Duration;
    use warpdrive_core::mutate::{apply, config, strategy, within};
    use warpdrive_em::geo::{Navigator, Vec3};

    proptest! {
        #![proptest_config(config(200))]

        /// Random byte-level mutations of nested.gdml: the reader either refuses the file with an
        /// error or returns a geometry in which a few tracks run to the world's edge.
        #[test]
        fn mutated_gdml_never_panics_or_hangs(m in strategy(6)) {
            let text = std::fs::read(super::data("nested.gdml")).unwrap();
            let text = String::from_utf8_lossy(&apply(&text, &m)).into_owned();
            let r = within(Duration::from_secs(60), move || match warpdrive_em::gdml::parse(&text, Path::new("m.gdml")) {
                Ok(g) => {
                    let nav = Navigator::new(&g.tree);
                    for k in 0..20 {
                        let a = f64::from(k) * 0.7;
                        let d = Vec3::new(a.cos() * 0.6, a.sin() * 0.6, 0.8);
                        let mut p = Vec3::new(1.0, 2.0, -3.0);
                        if let Some(mut path) = nav.locate(p) {
                            for _ in 0..10_000 {
                                if !nav.step(&mut path, &mut p, d, 1e12).1 {
                                    break;
                                }
                            }
                        }
                    }
                    Ok(())
                }
                Err(e) => Err(e.to_string()),
            });
            prop_assert!(r.is_ok(), "{:?}: {}", m, r.unwrap_err());
        }
    }
}

/// Elements as Geant4 exports them, made of isotopes: Z in common, the molar mass weighted by
/// the atom abundances (here natural lead: 0.014·203.973 + 0.241·205.974 + 0.221·206.976 +
/// 0.524·207.977 = 207.217 g/mol).
#[test]
fn isotopes_make_an_element_of_their_mean_mass() {
    let iso = |n: u32, a: f64| format!("<isotope N=\"{n}\" Z=\"82\" name=\"Pb{n}\"><atom unit=\"g/mole\" value=\"{a}\"/></isotope>\n");
    let materials = format!(
        "{}{}{}{}<element name=\"Pb\"><fraction n=\"0.014\" ref=\"Pb204\"/><fraction n=\"0.241\" ref=\"Pb206\"/><fraction n=\"0.221\" ref=\"Pb207\"/><fraction n=\"0.524\" ref=\"Pb208\"/></element>\n\
         <material name=\"Pb\" state=\"solid\"><T unit=\"K\" value=\"293.15\"/><MEE unit=\"eV\" value=\"823\"/><D unit=\"g/cm3\" value=\"11.35\"/><fraction n=\"1\" ref=\"Pb\"/></material>\n",
        iso(204, 203.973),
        iso(206, 205.974),
        iso(207, 206.976),
        iso(208, 207.977)
    );
    let text = doc(
        "",
        &materials,
        "<box name=\"B\" x=\"10\" y=\"10\" z=\"10\"/>\n",
        "<volume name=\"V\"><materialref ref=\"Pb\"/><solidref ref=\"B\"/></volume>\n",
    );
    let g = gdml::parse(&text, Path::new("iso.gdml")).unwrap_or_else(|e| panic!("{e}"));
    let pb = g.materials.iter().find(|m| m.name == "Pb").unwrap();
    let a = 0.014 * 203.973 + 0.241 * 205.974 + 0.221 * 206.976 + 0.524 * 207.977;
    assert_eq!(pb.elements.len(), 1);
    assert_eq!(pb.elements[0].z, 82.0);
    assert!(
        (pb.elements[0].a - a).abs() < 1e-12 && (a - 207.217).abs() < 1e-3,
        "{}",
        pb.elements[0].a
    );
    let sm = pb.shower_material().unwrap();
    // Within 0.01 % of G4_Pb's radiation length (A = 207.2 there).
    let nist = warpdrive_em::nist::find("G4_Pb").unwrap().shower_material();
    assert!((sm.radiation_length / nist.radiation_length - 1.0).abs() < 1e-4);
}

/// The example of docs/em-geometry.md reads; its tile, given `rotation y = 10°`, is turned by
/// −10° about y: its mid-plane rises along +x (z = 100 mm + x·tan 10°).
#[test]
fn the_documented_example_reads() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/em-geometry.md")).unwrap();
    let start = doc.find("```xml\n").expect("an xml example") + 7;
    let end = start + doc[start..].find("```").unwrap();
    let g = gdml::parse(&doc[start..end], Path::new("em-geometry.md")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(at(&g, 0.0, 0.0, -100.0), "World/abs#1");
    assert_eq!(at(&g, 0.0, 0.0, -101.2), "World");
    let t = 10f64.to_radians().tan();
    assert_eq!(at(&g, 95.0, 0.0, 100.0 + 95.0 * t), "World/tile");
    assert_eq!(at(&g, 95.0, 0.0, 100.0 - 95.0 * t), "World");
    let scint = g.materials.iter().find(|m| m.name == "Scint").unwrap();
    assert!(scint.shower_material().is_ok());
}

/// Overlaps: none in nested.gdml (whose layers touch their mother's faces and each other), and
/// both kinds found — a daughter entering its sibling, one sticking out of its mother — with the
/// depth bounded by the true one.
#[test]
fn overlaps_are_found_and_touching_is_not_one() {
    use warpdrive_em::geo::overlaps::check_overlaps;
    let g = nested();
    let o = check_overlaps(&g.tree, 2000, 1e-9);
    assert!(
        o.is_empty(),
        "{}",
        o.iter().map(|x| x.describe(&g.tree)).collect::<Vec<_>>().join("\n")
    );
    let text = doc(
        "",
        "",
        "<box name=\"B\" x=\"20\" y=\"20\" z=\"20\"/>\n<box name=\"M\" x=\"60\" y=\"60\" z=\"60\"/>\n",
        "<volume name=\"Small\"><materialref ref=\"G4_Pb\"/><solidref ref=\"B\"/></volume>\n\
         <volume name=\"Mother\"><materialref ref=\"G4_Fe\"/><solidref ref=\"M\"/>\n\
         <physvol name=\"a\"><volumeref ref=\"Small\"/><position name=\"pa\" x=\"-5\"/></physvol>\n\
         <physvol name=\"b\" copynumber=\"1\"><volumeref ref=\"Small\"/><position name=\"pb\" x=\"12\"/></physvol>\n\
         <physvol name=\"c\"><volumeref ref=\"Small\"/><position name=\"pc\" y=\"23\"/></physvol>\n\
         </volume>\n",
    )
    .replace(
        "<solidref ref=\"W\"/></volume>",
        "<solidref ref=\"W\"/><physvol name=\"m\"><volumeref ref=\"Mother\"/></physvol></volume>",
    );
    let g = gdml::parse(&text, Path::new("ov.gdml")).unwrap_or_else(|e| panic!("{e}"));
    let o = check_overlaps(&g.tree, 2000, 1e-9);
    let msgs: Vec<String> = o.iter().map(|x| x.describe(&g.tree)).collect();
    // a (x ∈ [−15, 5]) and b (x ∈ [2, 22]) overlap by 3 mm; c (y ∈ [13, 33]) sticks out of the
    // mother (y ≤ 30) by 3 mm.
    let ab = o
        .iter()
        .find(|x| x.other.is_some() && x.depth > 0.0 && g.tree.placements[x.placement as usize].name == "a")
        .expect("a overlaps b");
    assert!(ab.depth <= 3.0 + 1e-9 && ab.depth > 1.0, "{msgs:?}");
    let c = o.iter().find(|x| x.other.is_none()).expect("c sticks out");
    assert_eq!(g.tree.placements[c.placement as usize].name, "c");
    assert!(c.depth <= 3.0 + 1e-9 && c.depth > 1.0, "{msgs:?}");
    assert!(
        msgs.iter()
            .any(|m| m.contains("placement 'c' (copy 0, volume 'Small') in 'Mother' sticks out of its mother")),
        "{msgs:?}"
    );
    assert!(msgs.iter().any(|m| m.contains("'b' (copy 1, volume 'Small')")), "{msgs:?}");
    assert!(o.iter().all(|x| x.other.is_none() || x.depth <= 3.0 + 1e-9));
    let e = g.check_overlaps(500).unwrap_err().to_string();
    assert!(
        e.starts_with("ov.gdml: ") && e.contains("overlapping placement(s)") && e.contains("sticks out"),
        "{e}"
    );
    assert!(nested().check_overlaps(500).is_ok());
}

/// The order of the angles: M = Rz(z)·Ry(y)·Rx(x) and the daughter placed with Mᵀ. For x = y =
/// 90°, Mᵀ = Rx(−90°)·Ry(−90°) takes the daughter's +x to the mother's +y and its +y to −z, so
/// the quadrant tube (φ from 0 to 90°) covers y > 0, z < 0; the other order (Rx·Ry) would put
/// it at x > 0, z > 0. A step limit shorter than the boundary ends the step on the limit.
#[test]
fn rotation_angles_compose_z_y_x() {
    let text = doc(
        "",
        "",
        "<tube name=\"Q\" rmax=\"40\" z=\"20\" deltaphi=\"90\" aunit=\"deg\"/>\n",
        "<volume name=\"QV\"><materialref ref=\"G4_Pb\"/><solidref ref=\"Q\"/></volume>\n",
    )
    .replace(
        "<solidref ref=\"W\"/></volume>",
        "<solidref ref=\"W\"/><physvol name=\"q\"><volumeref ref=\"QV\"/><rotation name=\"r\" x=\"90\" y=\"90\" unit=\"deg\"/></physvol></volume>",
    );
    let g = gdml::parse(&text, Path::new("rot.gdml")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(at(&g, 5.0, 20.0, -20.0), "World/q");
    assert_eq!(at(&g, -5.0, 20.0, -20.0), "World/q");
    assert_eq!(at(&g, 0.0, 20.0, 20.0), "World");
    assert_eq!(at(&g, 0.0, -20.0, -20.0), "World");
    assert_eq!(at(&g, 20.0, 0.0, 20.0), "World");
    assert_eq!(
        at(&g, 15.0, 20.0, -20.0),
        "World",
        "the tube's half-length 10 mm lies along the mother's x"
    );
    // From (0, 20, −45) up along z: 5 mm to the tube's outer surface (ρ = 40 in its frame).
    let nav = Navigator::new(&g.tree);
    let d = Vec3::new(0.0, 0.0, 1.0);
    let mut p = Vec3::new(0.0, 20.0, -45.0);
    let mut path = nav.locate(p).unwrap();
    let want = 45.0 - (40.0f64 * 40.0 - 20.0 * 20.0).sqrt();
    let (dist, what) = nav.find_next_step(&path, p, d, 1e9);
    assert!(
        (dist - want).abs() < 1e-12 && what == warpdrive_em::geo::Boundary::Enter(0),
        "{dist} {what:?}"
    );
    let (moved, inside) = nav.step(&mut path, &mut p, d, 1.0);
    assert!(inside && moved == 1.0 && path.placements.is_empty());
    let (moved, _) = nav.step(&mut path, &mut p, d, 1e9);
    assert!((moved - (want - 1.0 + PUSH)).abs() < 1e-12 && describe(&g, &path) == "World/q");
}

/// Coincident surfaces everywhere: a tube in a tube shell touching along a cylinder, both with
/// their end faces on their mother's, the shell's outer face on the mother's, and inside the
/// inner tube a daughter of the very same solid (every surface coincident) holding a sphere that
/// touches it from inside. 20 000 tracks through it: each step in the volume `locate` gives for
/// its midpoint, lengths adding up, nothing stuck.
#[test]
fn coincident_surfaces_are_crossed_cleanly() {
    let text = r#"<?xml version="1.0"?>
<gdml>
  <solids>
    <box name="W" x="400" y="400" z="400"/>
    <tube name="M" rmax="100" z="200" deltaphi="2*pi"/>
    <tube name="In" rmax="50" z="200" deltaphi="2*pi"/>
    <tube name="Shell" rmin="50" rmax="100" z="200" deltaphi="2*pi"/>
    <orb name="Ball" r="50"/>
  </solids>
  <structure>
    <volume name="BallV"><materialref ref="G4_WATER"/><solidref ref="Ball"/></volume>
    <volume name="Same"><materialref ref="G4_Si"/><solidref ref="In"/>
      <physvol name="ball"><volumeref ref="BallV"/></physvol></volume>
    <volume name="InV"><materialref ref="G4_Pb"/><solidref ref="In"/>
      <physvol name="same"><volumeref ref="Same"/></physvol></volume>
    <volume name="ShellV"><materialref ref="G4_Fe"/><solidref ref="Shell"/></volume>
    <volume name="MV"><materialref ref="G4_AIR"/><solidref ref="M"/>
      <physvol name="in"><volumeref ref="InV"/></physvol>
      <physvol name="shell"><volumeref ref="ShellV"/></physvol></volume>
    <volume name="World"><materialref ref="G4_Galactic"/><solidref ref="W"/>
      <physvol name="m"><volumeref ref="MV"/></physvol></volume>
  </structure>
  <setup name="Default" version="1.0"><world ref="World"/></setup>
</gdml>
"#;
    let g = gdml::parse(text, Path::new("coincident.gdml")).unwrap_or_else(|e| panic!("{e}"));
    let nav = Navigator::new(&g.tree);
    assert_eq!(at(&g, 0.0, 0.0, 0.0), "World/m/in/same/ball");
    assert_eq!(at(&g, 49.0, 0.0, 90.0), "World/m/in/same");
    assert_eq!(at(&g, 60.0, 0.0, 0.0), "World/m/shell");
    assert!(g.check_overlaps(2000).is_ok());
    let mut rng = RandomStream::new(99, TAG_TEST, 0);
    let mut crossings = 0u64;
    for _ in 0..20_000 {
        let p0 = Vec3::new(
            360.0 * rng.uniform_f64() - 180.0,
            360.0 * rng.uniform_f64() - 180.0,
            360.0 * rng.uniform_f64() - 180.0,
        );
        let target = Vec3::new(
            100.0 * rng.uniform_f64() - 50.0,
            100.0 * rng.uniform_f64() - 50.0,
            200.0 * rng.uniform_f64() - 100.0,
        );
        let d = (target - p0).unit();
        let exit = [(p0.x, d.x), (p0.y, d.y), (p0.z, d.z)]
            .iter()
            .map(|&(q, v)| {
                if v > 0.0 {
                    (200.0 - q) / v
                } else if v < 0.0 {
                    (-200.0 - q) / v
                } else {
                    f64::INFINITY
                }
            })
            .fold(f64::INFINITY, f64::min);
        let mut path = nav.locate(p0).unwrap();
        let (mut p, mut travelled, mut n) = (p0, 0.0, 0u32);
        loop {
            let before = path.clone();
            let start = p;
            let (len, inside) = nav.step(&mut path, &mut p, d, 1e9);
            n += 1;
            assert!(n < 50, "stuck at {p:?}");
            assert_eq!(
                nav.locate(start.along(d, 0.5 * len)).as_ref(),
                Some(&before),
                "step from {start:?} along {d:?}"
            );
            travelled += len;
            if !inside {
                break;
            }
        }
        crossings += u64::from(n - 1);
        assert!((travelled - exit - PUSH).abs() < 1e-10);
    }
    assert!(crossings > 40_000, "{crossings}");
}
