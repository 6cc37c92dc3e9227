//! Apertures and losses (issue #30): MAXAMP (rectangular and elliptical), RCOL and ECOL as the
//! tracker applies them — a particle just inside and just outside each opening, the element and
//! pass of each loss, MAXAMP in force until the next one — and losses counted per turn in a
//! ring with a collimator, against an independent particle-by-particle tracking.

use std::sync::Arc;
use warpdrive_beam::beam::{Particles, Reference};
use warpdrive_beam::beam_file::Coordinates;
use warpdrive_beam::beam_file::{Longitudinal, Momentum, Origin};
use warpdrive_beam::engine::{BeamSource, Line, ReferenceOptions, Track, TrackOptions};
use warpdrive_beam::lattice::{parse, Kind};
use warpdrive_beam::program::{exact_drift, run_cpu, Compact, Program, Step};
use warpdrive_beam::watch::WatchMode;
use warpdrive_core::engine::{Control, Device};
use warpdrive_core::table::Column;

/// Track particles (x, y; zero slopes) once through `lte` on the CPU; (lost_at, lost_pass).
fn track(lte: &str, xy: &[(f64, f64)], passes: u32) -> Particles {
    let lattice = parse(lte, "t.lte", None).unwrap();
    let program = Program::compile(&lattice);
    let mut p = Particles::with_len(xy.len());
    for (i, &(x, y)) in xy.iter().enumerate() {
        p.set(i, [x, 0.0, y, 0.0, 0.0, 0.0]);
    }
    for pass in 0..passes {
        for step in &program.steps {
            if let Step::Run(items) = step {
                run_cpu(items, &mut p, pass..pass + 1, f64::INFINITY);
            }
        }
    }
    p
}

fn up(v: f64) -> f64 {
    f64::from_bits(v.to_bits() + 1)
}

#[test]
fn each_opening_keeps_the_particle_just_inside_and_loses_the_one_just_outside() {
    // Zero slopes through drifts: x and y stay put, so the openings see the initial values.
    let cases = [
        ("A: MAXAMP, X_MAX=1e-3, Y_MAX=2e-3", (1e-3, 2e-3), (up(1e-3), 0.0), (0.0, up(2e-3))),
        (
            "A: MAXAMP, X_MAX=2e-3, Y_MAX=1e-3, ELLIPTICAL=1",
            (2e-3, 0.0),
            (up(2e-3), 0.0),
            (1.5e-3, 0.7e-3),
        ),
        // Offset by DX: x − DX is rounded, so "just outside" is 1e-13 m beyond −X_MAX + DX.
        (
            "A: RCOL, L=0.1, X_MAX=1e-3, Y_MAX=1e-3, DX=5e-4",
            (1.5e-3, 1e-3),
            (-5e-4 - 1e-13, 0.0),
            (0.0, up(1e-3)),
        ),
        (
            "A: ECOL, L=0.1, X_MAX=2e-3, Y_MAX=1e-3",
            (0.0, -1e-3),
            (0.0, -up(1e-3)),
            (1.5e-3, 0.7e-3),
        ),
        (
            "A: ECOL, X_MAX=2e-3, Y_MAX=1e-3, EXPONENT=4",
            (1.5e-3, 0.8e-3),
            (1.8e-3, 0.9e-3),
            (up(2e-3), 0.0),
        ),
    ];
    for (def, inside, out1, out2) in cases {
        let lte = format!("D: DRIF, L=1\n{def}\nL: LINE=(D, A, D)\n");
        let p = track(&lte, &[inside, out1, out2, (0.0, 0.0)], 1);
        assert_eq!(p.lost_at, [0, 2, 2, 0], "{def}: lost_at (2 = 1 + index of A)");
        assert_eq!(
            p.get(1)[0],
            out1.0,
            "{def}: a lost particle keeps its coordinates where it was lost"
        );
    }
}

#[test]
fn maxamp_applies_to_every_following_element_until_the_next() {
    // A particle with slope 1 mrad grows 1 mm per metre of drift: MAXAMP 2.5 mm loses it in the
    // third drift (x = 3 mm); after a wider MAXAMP (10 mm) a particle survives that the first
    // would have lost; X_MAX = 0 lifts the limit in x.
    let lte = "D: DRIF, L=1\nM1: MAXAMP, X_MAX=2.5e-3, Y_MAX=1\nM2: MAXAMP, X_MAX=1e-2, Y_MAX=1\nM0: MAXAMP, X_MAX=0, Y_MAX=1\n\
               L1: LINE=(M1, D, D, D, D)\nL2: LINE=(M1, D, D, M2, D, D)\nL3: LINE=(M1, D, D, M0, D, D, D, D)\n";
    let run = |line: &str| {
        let lattice = parse(lte, "t.lte", Some(line)).unwrap();
        let program = Program::compile(&lattice);
        let mut p = Particles::with_len(1);
        p.set(0, [0.0, 1e-3, 0.0, 0.0, 0.0, 0.0]);
        for step in &program.steps {
            if let Step::Run(items) = step {
                run_cpu(items, &mut p, 0..1, f64::INFINITY);
            }
        }
        (p.lost_at[0], p.x[0])
    };
    let (at, x) = run("L1");
    assert_eq!(at, 4, "lost at the third drift (index 3)");
    assert!((x - 3e-3).abs() < 1e-15, "x where lost: {x}");
    assert_eq!(run("L2").0, 0, "the wider MAXAMP replaced the first");
    assert_eq!(run("L3").0, 0, "X_MAX=0 lifts the x limit");
}

#[test]
fn a_thick_collimator_checks_entrance_and_exit() {
    // Slope 2 mrad over 1 m: x = 0.5 mm at the entrance, 2.5 mm at the exit of a 1 mm RCOL.
    let lte = "C: RCOL, L=1, X_MAX=1e-3, Y_MAX=1e-3\nL: LINE=(C)\n";
    let lattice = parse(lte, "t.lte", None).unwrap();
    let program = Program::compile(&lattice);
    let mut p = Particles::with_len(2);
    p.set(0, [0.5e-3, 2e-3, 0.0, 0.0, 0.0, 0.0]);
    p.set(1, [1.5e-3, 0.0, 0.0, 0.0, 0.0, 0.0]);
    let Step::Run(items) = &program.steps[0] else { panic!() };
    run_cpu(items, &mut p, 0..1, f64::INFINITY);
    assert_eq!(p.lost_at, [1, 1]);
    assert!((p.x[0] - 2.5e-3).abs() < 1e-15, "lost at the exit, coordinates there: {}", p.x[0]);
    assert_eq!(p.x[1], 1.5e-3, "lost at the entrance, not drifted");
    assert_eq!(p.s[1], 0.0);
    // Optics: a collimator is a drift.
    assert_eq!(program.length, 1.0);
    assert!(matches!(lattice.elements[0].kind, Kind::Collimator { l, .. } if l == 1.0));
}

#[test]
fn bad_aperture_parameters_are_named() {
    for (def, msg) in [
        ("A: MAXAMP, X_MAX=-1", "parameter X_MAX = -1: a half-aperture must not be negative"),
        (
            "A: ECOL, X_MAX=1, Y_MAX=1, EXPONENT=3",
            "parameter EXPONENT = 3: must be an even integer",
        ),
        ("A: MAXAMP, X_MAX=1, EXPONENT=4", "parameter EXPONENT: only with ELLIPTICAL=1"),
        ("A: MAXAMP, X_MAX=1, ELLIPTICAL=2", "parameter ELLIPTICAL = 2: must be 0 or 1"),
        (
            "A: RCOL, X_MAX=1, OPEN_SIDE=\"+z\"",
            "parameter OPEN_SIDE = \"+z\": one of +x, -x, +y, -y",
        ),
        (
            "A: RCOL, X_MAX=1, OPEN_SIDE=\"+y\"",
            "parameter OPEN_SIDE: the Y_MAX plane is unlimited",
        ),
        ("A: ECOL, X_MAX=1, Y_MAX=1, INVERT=2", "parameter INVERT = 2: must be 0 or 1"),
        ("A: RCOL, INVERT=1", "parameter INVERT: X_MAX and Y_MAX are 0"),
        ("A: MAXAMP, X_MAX=1, INVERT=1", "parameter INVERT is not supported"),
        ("A: RCOL, L=-1, X_MAX=1", "parameter L = -1: negative length"),
    ] {
        let e = parse(&format!("{def}\nL: LINE=(A)\n"), "ap.lte", None).unwrap_err().to_string();
        assert!(e.starts_with("ap.lte:1: element A"), "{e}");
        assert!(e.contains(msg), "{e}\nshould contain: {msg}");
    }
}

/// The element maps of [`loss_pass_by_hand`] (per element: its map, `None` for the others),
/// built once for all particles.
fn maps_by_hand(lattice: &warpdrive_beam::lattice::Lattice) -> Vec<Option<Compact>> {
    lattice
        .elements
        .iter()
        .map(|e| match &e.kind {
            Kind::Map { element, tilt, order, .. } => Some(Compact::from_map(&element.map2_with(*tilt, *order))),
            _ => None,
        })
        .collect()
}

/// An independent tracking of one particle through the ring element by element (scalar maps
/// `maps` from [`maps_by_hand`], the collimator's opening tested by hand): the pass in which it
/// is lost, if any.
fn loss_pass_by_hand(
    lattice: &warpdrive_beam::lattice::Lattice,
    maps: &[Option<Compact>],
    z0: [f64; 6],
    passes: u32,
) -> Option<(u32, usize)> {
    let mut z = z0;
    for pass in 0..passes {
        for (k, e) in lattice.elements.iter().enumerate() {
            match &e.kind {
                Kind::Map { .. } => maps[k].as_ref().unwrap().apply(&mut z),
                Kind::Collimator { l, aperture } => {
                    // Half-width 1.2 mm in x, 4 mm in y, centred: written out, not through Aperture.
                    let open = |z: &[f64; 6]| z[0].abs() <= aperture.x_max && z[2].abs() <= aperture.y_max;
                    if !open(&z) {
                        return Some((pass, k));
                    }
                    exact_drift(&mut z, *l);
                    if !open(&z) {
                        return Some((pass, k));
                    }
                }
                Kind::Marker => {}
                other => panic!("unexpected {other:?}"),
            }
        }
    }
    None
}

#[test]
fn losses_are_counted_per_turn_in_a_ring_with_a_collimator() {
    // The FODO validation ring without its cavity, a 1.2 mm collimator in the first cell.
    let ring = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/lattices/fodo_ring.lte")).unwrap();
    let lte = ring.replace(
        "RING: LINE=(M, 15*CELL, CELLRF)",
        "COL: RCOL, L=0.2, X_MAX=1.2e-3, Y_MAX=4e-3\nRING: LINE=(M, COL, 16*CELL)",
    );
    assert_ne!(lte, ring);
    let line = Arc::new(Line::parse(&lte, "ring.lte", None).unwrap());
    // 400 particles with x' spread so that their betatron phase takes them to the collimator
    // on different turns.
    let n = 400;
    let coords = Coordinates {
        x: (0..n).map(|i| 1.0e-3 * ((i as f64) * 0.37).sin()).collect(),
        xp: (0..n).map(|i| 1.6e-4 * ((i as f64) * 0.11).cos()).collect(),
        y: vec![0.0; n],
        yp: vec![0.0; n],
        longitudinal: Longitudinal::S(vec![0.0; n]),
        momentum: Momentum::Delta(vec![0.0; n]),
        origin: Origin::Arrays("particles".into()),
    };
    let passes = 30;
    let o = TrackOptions {
        passes: passes as u64,
        watch: WatchMode::Off,
        output: false,
        plot: false,
        ..Default::default()
    };
    let reference = ReferenceOptions {
        momentum: Some(3000.0),
        ..Default::default()
    };
    let t = Track::new(Arc::clone(&line), BeamSource::Coordinates(coords), &reference, &o).unwrap();
    let r = t.run(&Control::new().device(Device::Cpu).threads(Some(2)), None).unwrap();
    let col = line.lattice().elements.iter().position(|e| e.name == "COL").unwrap();
    let mut expected: std::collections::BTreeMap<u32, usize> = Default::default();
    let maps = maps_by_hand(line.lattice());
    for i in 0..n {
        let z0 = t.bunch().particles.get(i);
        let by_hand = loss_pass_by_hand(line.lattice(), &maps, z0, passes);
        let got = (r.particles.lost_at[i] > 0).then(|| (r.particles.lost_pass[i], r.particles.lost_at[i] as usize - 1));
        assert_eq!(got, by_hand, "particle {i}");
        if let Some((pass, k)) = by_hand {
            assert_eq!(k, col, "only the collimator limits");
            *expected.entry(pass).or_default() += 1;
        }
    }
    let expected: Vec<(u32, usize)> = expected.into_iter().collect();
    assert_eq!(r.lost_by_pass, expected);
    assert!(r.lost_by_pass.len() >= 3, "losses spread over turns: {:?}", r.lost_by_pass);
    assert!(r.lost() > 20 && r.lost() < n, "lost {}", r.lost());
    // lost.parquet's table: one row per lost particle, element and pass as flagged.
    let table = warpdrive_beam::losses::lost_table(&r.particles, &Reference::electron(1.0), line.program(), 0);
    assert_eq!(table.rows(), r.lost());
    // Every row names the collimator, by the index recorded and by its lattice name.
    let Some(Column::Str(names)) = table.column("element_name") else {
        panic!(
            "no element_name column: {:?}",
            table.columns.iter().map(|c| &c.0).collect::<Vec<_>>()
        )
    };
    let Some(Column::I64(elements)) = table.column("element") else {
        panic!("no element column")
    };
    assert_eq!(names.len(), r.lost());
    assert!(names.iter().all(|n| n == "COL"), "{names:?}");
    assert!(elements.iter().all(|&e| e as usize == col));
    let Some(Column::I64(passes_col)) = table.column("pass") else {
        panic!("no pass column")
    };
    let mut per_pass: std::collections::BTreeMap<u32, usize> = Default::default();
    for &q in passes_col {
        *per_pass.entry(q as u32).or_default() += 1;
    }
    assert_eq!(per_pass.into_iter().collect::<Vec<_>>(), expected);
    let s_end = warpdrive_beam::losses::element_end(line.program(), col);
    assert!((s_end - 0.2).abs() < 1e-12, "the collimator ends at 0.2 m: {s_end}");
}

/// The device check's aperture lines (`gpu-check --domain beam`) lose particles at each of
/// their openings on the CPU, so their GPU = CPU comparisons cover every shape, open side and
/// inversion.
#[test]
fn the_gpu_check_lines_lose_at_every_opening() {
    loses_at_every_opening(warpdrive_beam::gpu_check::APERTURE_LINE, &["MA", "ME", "RC", "EC"]);
    loses_at_every_opening(warpdrive_beam::gpu_check::OPEN_APERTURE_LINE, &["MO", "RO", "RI", "EO", "EI"]);
}

fn loses_at_every_opening(line: &str, openings: &[&str]) {
    let lattice = parse(line, "apertures.lte", None).unwrap();
    let program = Program::compile(&lattice);
    let mut p = warpdrive_beam::beam::gaussian(&warpdrive_beam::gpu_check::check_beam_spec(20_000));
    for pass in 0..20 {
        for step in &program.steps {
            if let Step::Run(items) = step {
                run_cpu(items, &mut p, pass..pass + 1, f64::INFINITY);
            }
        }
    }
    let mut by: std::collections::BTreeMap<&str, usize> = Default::default();
    for &l in p.lost_at.iter().filter(|&&l| l > 0) {
        *by.entry(program.names[l as usize - 1].as_str()).or_default() += 1;
    }
    for k in openings {
        assert!(by.get(k).copied().unwrap_or(0) > 0, "{k} lost nothing: {by:?}");
    }
    eprintln!("{line:.30}…: lost by element {by:?}");
    assert!(p.alive() > 0, "{by:?}");
}
