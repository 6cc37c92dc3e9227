//! Showers in a GDML detector with a uniform magnetic field and sensitive volumes (issue #31):
//! the field in the stepping loop (curved charged steps, straight neutral ones), energy
//! conservation, a charged track in a vacuum world closing its circle, B = 0 bit-identical to
//! no field, and step-level hits that add up to the volumes' deposits.

use std::path::Path;
use warpdrive_core::progress::Progress;
use warpdrive_em::field::helix::C_LIGHT;
use warpdrive_em::gdml;
use warpdrive_em::shower::cuts::RangeCuts;
use warpdrive_em::shower::detector::{self, DetectorPhysics};
use warpdrive_em::shower::tables::TableOptions;
use warpdrive_em::shower::transport::{Primary, ShowerGeometry, StepEnd, FIXED_SCALE};
use warpdrive_em::shower::Particle;

fn data(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

/// testem3.gdml's physics, without a field: the tables are built once per test binary, and each
/// call gets its own copy (the tests set fields and sensitive volumes on theirs).
fn testem3() -> DetectorPhysics {
    static BUILT: std::sync::OnceLock<DetectorPhysics> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let g = gdml::read(&data("testem3.gdml")).unwrap();
            DetectorPhysics::build(g, RangeCuts::default(), TableOptions::default()).unwrap()
        })
        .clone()
}

/// TestEm3's primary: on the axis 1 cm in front of the calorimeter (its front face is at
/// z = 0), along +z [cm].
fn primary(particle: Particle, energy: f64) -> Primary {
    Primary {
        particle,
        energy,
        pos: [0.0, 0.0, -1.0],
        dir: [0.0, 0.0, 1.0],
    }
}

/// A field changes where a shower deposits its energy, never how much energy there is: every
/// event's balance E₀ = deposits + escaped + rest mass holds to the quantisation bound, with a
/// 4 T field across the beam (the primary bends on a radius of p/(0.3 B) = 0.83 m) and along it.
#[test]
fn energy_is_conserved_in_a_field() {
    let progress = Progress::hidden();
    let none = testem3();
    for b in [[0.0, 4.0, 0.0], [0.0, 0.0, 4.0]] {
        let mut d = testem3();
        d.set_field(b);
        assert!(d.field_on());
        for particle in Particle::ALL {
            let p = primary(particle, 1000.0);
            for ev in 0..5 {
                let t = detector::run_event(&d, &p, 7, ev);
                assert!(
                    t.balance().abs() <= t.quantisation_bound() + 1e-12 * p.energy,
                    "{b:?} {particle:?} event {ev}: balance {}",
                    t.balance()
                );
                assert_eq!(t.killed, 0);
            }
        }
        let p = primary(Particle::Electron, 1000.0);
        let with = detector::run_range(&d, &p, 0, 20, 7, &progress);
        let without = detector::run_range(&none, &p, 0, 20, 7, &progress);
        assert!(with.worst_balance < 1e-9);
        // Different deposits, volume by volume, from the first event on.
        assert_ne!(with.edep, without.edep, "{b:?}");
        let lead = |r: &detector::DetectorRun| r.material_edep[0] as f64 / FIXED_SCALE / 20.0;
        eprintln!(
            "B = {b:?} T: lead {:.2} MeV per event (without a field {:.2})",
            lead(&with),
            lead(&without)
        );
    }
}

/// A 4 T field across a 1 GeV e⁻ shower in TestEm3 bends the primary (radius 0.83 m) and curls
/// its low-energy e± up (a 10 MeV e⁻ on 8 mm): the path through the layers is longer per layer
/// and the shower starts and ends earlier, so the energy-weighted mean layer number of the
/// deposits moves forward.
#[test]
fn a_transverse_field_shortens_the_shower() {
    let progress = Progress::hidden();
    let none = testem3();
    let mut d = testem3();
    d.set_field([0.0, 4.0, 0.0]);
    let p = primary(Particle::Electron, 1000.0);
    let n = 200;
    let with = detector::run_range(&d, &p, 0, n, 11, &progress);
    let without = detector::run_range(&none, &p, 0, n, 11, &progress);
    let vols = d.volume_list();
    // Mean depth of the deposits: the volume's placement copy numbers order the layers.
    let depth = |r: &detector::DetectorRun| {
        let (mut w, mut s) = (0.0, 0.0);
        for (slot, v) in vols.iter().enumerate() {
            if let Some(layer) = v.path.split('/').find(|x| x.starts_with("Layer[")) {
                let k: f64 = layer["Layer[".len()..layer.len() - 1].parse().unwrap();
                let e = r.edep_mev(slot);
                w += e;
                s += e * k;
            }
        }
        s / w
    };
    let (a, b) = (depth(&with), depth(&without));
    eprintln!("mean layer of the deposits: {a:.3} with 4 T across, {b:.3} without");
    assert!(a < b - 0.1, "{a} vs {b}");
}

/// B = 0 is no field: the straight-line loop, bit for bit.
#[test]
fn zero_field_is_bit_identical_to_no_field() {
    let progress = Progress::hidden();
    let none = testem3();
    let mut zero = testem3();
    zero.set_field([0.0, 0.0, 0.0]);
    assert!(!zero.field_on());
    let p = primary(Particle::Electron, 500.0);
    assert_eq!(
        detector::run_range(&zero, &p, 0, 20, 3, &progress),
        detector::run_range(&none, &p, 0, 20, 3, &progress)
    );
}

const VACUUM: &str = r#"<?xml version="1.0"?>
<gdml>
  <solids><box name="W" x="10" y="10" z="10" lunit="m"/></solids>
  <structure><volume name="World"><materialref ref="G4_Galactic"/><solidref ref="W"/></volume></structure>
  <setup name="Default" version="1.0"><world ref="World"/></setup>
</gdml>
"#;

/// A single e⁻ in a vacuum world (no physics) in a uniform 3.8 T field, moved by the shower's
/// curved step in 1 000 steps per turn: after one turn it is back at its start to 1e-6 of the
/// radius, its direction too; through the stepping loop it is a looper (after
/// `LOOPER_TURNS` turns without a boundary), stopped with its energy deposited.
#[test]
fn an_electron_in_vacuum_closes_its_circle() {
    let g = gdml::parse(VACUUM, Path::new("vacuum.gdml")).unwrap();
    let mut d = DetectorPhysics::build(g, RangeCuts::default(), TableOptions::default()).unwrap();
    d.set_field([0.0, 0.0, 3.8]);
    let (energy, m): (f64, f64) = (500.0, 0.510_998_95);
    let mom = (energy * (energy + 2.0 * m)).sqrt();
    let radius_cm = mom / (C_LIGHT * 3.8) / 10.0;
    let turn = std::f64::consts::TAU * radius_cm;
    let start = [1.0, 2.0, 3.0];
    let dir0 = [0.6, 0.8, 0.0];
    let (mut pos, mut dir) = (start, dir0);
    let mut loc = d.locate(pos).unwrap();
    let mut travelled = 0.0;
    for _ in 0..1000 {
        let (s, end) = d.curved_step(&mut pos, &mut dir, &mut loc, -1.0, mom, turn / 1000.0, 0.0);
        assert_eq!(end, StepEnd::Limit);
        travelled += s;
    }
    let off = ((pos[0] - start[0]).powi(2) + (pos[1] - start[1]).powi(2) + (pos[2] - start[2]).powi(2)).sqrt();
    let turned = ((dir[0] - dir0[0]).powi(2) + (dir[1] - dir0[1]).powi(2)).sqrt();
    eprintln!(
        "R = {radius_cm} cm: after one turn {off:.2e} cm from the start ({:.2e} of R), direction off by {turned:.2e}",
        off / radius_cm
    );
    assert!(off < 1e-6 * radius_cm, "{off}");
    assert!(turned < 1e-6);
    assert!((travelled / turn - 1.0).abs() < 1e-12);
    // Half a turn later it is a diameter away.
    let (_, _) = d.curved_step(&mut pos, &mut dir, &mut loc, -1.0, mom, 0.5 * turn, 0.0);
    let across = ((pos[0] - start[0]).powi(2) + (pos[1] - start[1]).powi(2)).sqrt();
    assert!((across / (2.0 * radius_cm) - 1.0).abs() < 1e-6, "{across}");
    // Through the loop: a looper, stopped, the balance kept.
    let p = Primary {
        particle: Particle::Electron,
        energy,
        pos: start,
        dir: dir0,
    };
    let t = detector::run_event(&d, &p, 1, 0);
    assert_eq!(t.killed, 1);
    assert!(t.balance().abs() <= t.quantisation_bound());
    assert_eq!(t.escaped, 0);
    // Along the field it leaves the world at z = 5 m without turning.
    let p = Primary { dir: [0.0, 0.0, 1.0], ..p };
    let t = detector::run_event(&d, &p, 1, 0);
    assert_eq!((t.killed, t.escaped), (0, warpdrive_em::shower::transport::to_fixed(energy)));
}

/// Hits in sensitive volumes: for every volume instance the hits' deposits add up exactly
/// (fixed point) to the volume's deposit, volumes not marked sensitive have none, and the
/// hits lie inside their volume and after the primary started.
#[test]
fn hits_add_up_to_the_volumes_deposits() {
    let progress = Progress::hidden();
    let mut d = testem3();
    d.set_sensitive(&["ArgonV".to_string()]).unwrap();
    d.set_field([0.0, 2.0, 0.0]);
    let p = primary(Particle::Electron, 1000.0);
    let r = detector::run_range(&d, &p, 0, 10, 5, &progress);
    let vols = d.volume_list();
    let mut sums = vec![0u128; vols.len()];
    let mut events = std::collections::BTreeSet::new();
    for (ev, h) in &r.hits {
        sums[h.slot as usize] += u128::from(h.edep);
        events.insert(*ev);
        assert!(h.time_ns >= 0.0 && h.time_ns < 100.0, "{h:?}");
        // Inside the calorimeter (±20 cm across, z in [0, 40] cm), within rounding.
        assert!(h.pos[0].abs() <= 20.0 + 1e-9 && h.pos[1].abs() <= 20.0 + 1e-9, "{h:?}");
        assert!(h.pos[2] >= -1e-9 && h.pos[2] <= 40.0 + 1e-9, "{h:?}");
    }
    assert_eq!(events.len(), 10);
    let tree = &d.gdml.tree;
    let mut argon = 0;
    for (slot, v) in vols.iter().enumerate() {
        if tree.logical[v.logical as usize].name == "ArgonV" {
            argon += 1;
            assert_eq!(sums[slot], r.edep[slot], "{}", v.path);
        } else {
            assert_eq!(sums[slot], 0, "{}", v.path);
        }
    }
    assert_eq!(argon, 50);
    assert!(r.hits.len() > 1000, "{}", r.hits.len());
    assert!(d
        .set_sensitive(&["Nope".to_string()])
        .unwrap_err()
        .contains("'Nope' is not a logical volume"));
}

/// `em run` with a field map (the library request): a map of TestEm3's world runs with the
/// energy balance kept and the map in the summary; a map short of the world, or a map with a
/// uniform field too, is refused before anything runs.
#[test]
fn field_map_runs_and_bad_maps_are_refused() {
    use warpdrive_core::engine::{Control, Style};
    use warpdrive_em::engine::{DetectorOptions, DetectorShower};
    let dir = std::env::temp_dir().join(format!("wd-detector-map-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, r_max: f64| {
        let f = dir.join(name);
        let mut text = String::from("r_mm,z_mm,br_T,bz_T\n");
        for r in [0.0, r_max] {
            for z in [-500.0, 0.0, 500.0] {
                // A solenoid-like map: B_z falling off with |z|, a small B_r.
                text += &format!("{r},{z},{},{}\n", 0.001 * r * z / 500.0, 4.0 - 2.0 * f64::abs(z) / 500.0);
            }
        }
        std::fs::write(&f, text).unwrap();
        f
    };
    let good = write("good.csv", 400.0);
    let short = write("short.csv", 300.0);
    let o = DetectorOptions {
        energy: 200.0,
        events: 4,
        position_mm: [0.0, 0.0, -10.0],
        field_map: Some(good.clone()),
        ..DetectorOptions::default()
    };
    let req = DetectorShower::new(&data("testem3.gdml"), &o).unwrap();
    assert_eq!(req.inputs().len(), 2);
    let r = req.run(&Control::default()).unwrap();
    assert!(r.run.worst_balance < 1e-9, "{}", r.run.worst_balance);
    let s = r.summary();
    assert_eq!(s["field"]["kind"], "map");
    assert_eq!(s["field"]["nodes"], serde_json::json!([2, 3]));
    let e = DetectorShower::new(
        &data("testem3.gdml"),
        &DetectorOptions {
            field_map: Some(short),
            ..o.clone()
        },
    )
    .unwrap_err()
    .render(Style::Cli);
    assert!(
        e.contains("short.csv: the field map covers r ≤ 300 mm") && e.contains("the world 'World' reaches r = 339.411255 mm"),
        "{e}"
    );
    let e = DetectorShower::new(
        &data("testem3.gdml"),
        &DetectorOptions {
            field_t: [0.0, 0.0, 1.0],
            ..o
        },
    )
    .unwrap_err()
    .render(Style::Cli);
    assert!(e.contains("--field 0,0,1 T and a field map: give one of them"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
