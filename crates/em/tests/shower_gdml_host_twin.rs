//! The GDML build of the CUDA shower kernel (`kernels/shower.cu` with `WD_GEOMETRY_GDML`,
//! after the navigator's twins `kernels/geo/*.cuh`) compiled for the host
//! (`shower_gdml_host_twin.cpp`) and driven as `shower::gpu::run_detector_range` drives the GPU
//! (generation by generation, the one-launch queues, the phase launches), against the Rust CPU
//! detector loop (`shower::detector::run_event`): with the host's libm both sides call the same
//! transcendentals, so every event must be identical in every tallied integer — the deposit of
//! every volume slot, the escaped energy, the counts, the track lengths. This checks the
//! geometry hooks (next boundary, crossing and relocation, safety, a slot's material, vacuum),
//! the volume paths carried by the tracks and their secondaries, and the flattened tree, without
//! a GPU; the device's own arithmetic is `warpdrive gpu-check --domain em`'s. With sensitive
//! volumes (in every geometry: nested.gdml's `SensDet` ones, and more marked here) the twin's hits must be those of
//! `detector::run_event_with_hits`, hit for hit (slot, fixed-point deposit, the bits of time and
//! position, track id, ordinal) in the canonical order, in every schedule: this checks the time
//! the tracks carry (straight, curved and vacuum flights, secondaries), the pre-step points of
//! curved steps, the hit buffer and its overflow flag.
//!
//! Needs a C++ compiler (`c++`, or `$CXX`); skipped without one unless
//! `WARPDRIVE_REQUIRE_DATA=1`.

mod common;
use common::{bytes, compile};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use warpdrive_em::shower::cuts::RangeCuts;
use warpdrive_em::shower::detector::{run_event_with_hits, DetectorPhysics};
use warpdrive_em::shower::gpu::{
    detector_primaries, hits_from_words, tally_from_words, tally_stride, HostTables, FIELD_MAP, FIELD_UNIFORM, GDML_TRACK_WORDS,
};
use warpdrive_em::shower::run::event_words;
use warpdrive_em::shower::tables::TableOptions;
use warpdrive_em::shower::transport::{to_fixed, EventTally, Hit, Primary};
use warpdrive_em::shower::Particle;

/// The host twin's input files for `events` events of `primary` (the tables with a hit buffer
/// of `hit_capacity` hits, used when a volume is sensitive, and the first generation), written
/// once into `dir` and read by every schedule ([`host_twin`]).
struct TwinInputs {
    tables: PathBuf,
    prim: PathBuf,
    missed: Vec<bool>,
    stride: usize,
    slots: usize,
    n_mat: usize,
    energy: f64,
    events: u64,
}

/// The host twin's events (tally words), hits (`(event, hit)`) and output line.
type TwinRun = (Vec<Vec<u64>>, Vec<(u64, Hit)>, String);

fn host_twin_inputs(dir: &Path, det: &DetectorPhysics, primary: &Primary, events: u64, seed: u64, hit_capacity: u64) -> TwinInputs {
    let t = HostTables::build_detector(det).unwrap();
    let (slots, n_mat) = (det.volumes(), det.materials.len());
    let stride = tally_stride(slots, n_mat);
    let mut f = Vec::new();
    for n in [
        t.data.len(),
        t.materials.len(),
        t.elements.len(),
        t.photo.len(),
        t.rayleigh.len(),
        t.planes.len(),
        t.slab_material.len(),
    ] {
        f.extend_from_slice(&(n as u64).to_le_bytes());
    }
    f.extend_from_slice(&(n_mat as u32).to_le_bytes());
    f.extend_from_slice(&(stride as u32).to_le_bytes());
    for c in [0.0, t.constants[0], t.constants[1], t.constants[2]] {
        f.extend_from_slice(&c.to_le_bytes());
    }
    f.extend_from_slice(&seed.to_le_bytes());
    f.extend_from_slice(&events.to_le_bytes());
    f.extend_from_slice(bytes(&t.data));
    f.extend_from_slice(bytes(&t.materials));
    f.extend_from_slice(bytes(&t.elements));
    f.extend_from_slice(bytes(&t.photo));
    f.extend_from_slice(bytes(&t.rayleigh));
    f.extend_from_slice(bytes(&t.planes));
    f.extend_from_slice(bytes(&t.slab_material));
    let (g, offsets) = t.gdml.as_ref().expect("the GDML tables hold the tree");
    for n in [g.solids.len(), g.pool.len(), g.logical.len(), g.placements.len(), offsets.len()] {
        f.extend_from_slice(&(n as u64).to_le_bytes());
    }
    f.extend_from_slice(&u64::from(g.world).to_le_bytes());
    f.extend_from_slice(bytes(&g.solids));
    f.extend_from_slice(bytes(&g.pool));
    f.extend_from_slice(bytes(&g.logical));
    f.extend_from_slice(bytes(&g.placements));
    f.extend_from_slice(bytes(offsets));
    let field = t.field.unwrap_or_default();
    let map = t.field_map.clone().unwrap_or_default();
    let field_on = match (&t.field, &t.field_map) {
        (_, Some(_)) => FIELD_MAP,
        (Some(_), None) => FIELD_UNIFORM,
        (None, None) => 0,
    };
    f.extend_from_slice(&u64::from(field_on).to_le_bytes());
    let (dc, di) = if t.field_map.is_some() {
        (map.delta_chord, map.delta_intersection)
    } else {
        (field.delta_chord, field.delta_intersection)
    };
    for x in [field.b[0], field.b[1], field.b[2], dc, di] {
        f.extend_from_slice(&x.to_le_bytes());
    }
    for n in [g.bvh_nodes.len(), g.bvh_items.len(), g.bvh_root.len()] {
        f.extend_from_slice(&(n as u64).to_le_bytes());
    }
    f.extend_from_slice(bytes(&g.bvh_nodes));
    f.extend_from_slice(bytes(&g.bvh_items));
    f.extend_from_slice(bytes(&g.bvh_root));
    f.extend_from_slice(&(map.r.len() as u64).to_le_bytes());
    f.extend_from_slice(&(map.z.len() as u64).to_le_bytes());
    f.extend_from_slice(&map.b_max.to_le_bytes());
    f.extend_from_slice(&map.epsilon.to_le_bytes());
    f.extend_from_slice(bytes(&map.r));
    f.extend_from_slice(bytes(&map.z));
    f.extend_from_slice(bytes(&map.b));
    // The hits: capacity (0 without sensitive volumes) and per slot its flag.
    let sensitive = if t.sensitive.is_empty() {
        vec![0u8; slots]
    } else {
        t.sensitive.clone()
    };
    assert_eq!(sensitive.len(), t.slab_material.len());
    f.extend_from_slice(&(if t.sensitive.is_empty() { 0 } else { hit_capacity }).to_le_bytes());
    f.extend_from_slice(&sensitive);
    let tables = dir.join("tables.bin");
    std::fs::write(&tables, f).unwrap();
    let (first, missed) = detector_primaries(det, primary, 0, events);
    let words: Vec<u8> = first.iter().flatten().flat_map(|w| w.to_le_bytes()).collect();
    assert_eq!(words.len() % (8 * GDML_TRACK_WORDS), 0);
    let prim = dir.join("primaries.bin");
    std::fs::write(&prim, words).unwrap();
    TwinInputs {
        tables,
        prim,
        missed,
        stride,
        slots,
        n_mat,
        energy: primary.energy,
        events,
    }
}

/// Run the events of `inp` through the host twin with the schedule `mode`: the events' tally
/// words, the hits in the canonical order (`gpu::hits_from_words`, as the host reads the
/// device's) and the twin's output line; `None` when the twin reported a full list or hit
/// buffer (the host's re-run).
fn host_twin(exe: &Path, inp: &TwinInputs, mode: &str) -> Option<TwinRun> {
    let out = inp.tables.with_file_name(format!("tally-{mode}.bin"));
    let o = Command::new(exe)
        .arg(&inp.tables)
        .arg(&inp.prim)
        .arg(&out)
        .arg(mode)
        .output()
        .unwrap();
    if o.status.code() == Some(3) {
        return None;
    }
    assert!(o.status.success(), "host twin: {}", String::from_utf8_lossy(&o.stderr));
    let raw_hits = std::fs::read(out.with_file_name(format!("tally-{mode}.bin.hits"))).unwrap();
    let hit_words: Vec<u64> = raw_hits
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let hits = hits_from_words(&hit_words, 0);
    let raw = std::fs::read(&out).unwrap();
    let all: Vec<u64> = raw.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
    let (stride, energy) = (inp.stride, inp.energy);
    let words = (0..inp.events as usize)
        .map(|k| {
            let mut e = tally_from_words(&all[k * stride..(k + 1) * stride], inp.slots, inp.n_mat, energy);
            if inp.missed[k] {
                e.escaped = to_fixed(energy);
            }
            event_words(&e)
        })
        .collect();
    Some((words, hits, String::from_utf8_lossy(&o.stdout).into_owned()))
}

/// The three schedules of shower::gpu's detector build: a launch pair per generation, the
/// one-launch queues, and the phase launches.
const MODES: [&str; 3] = ["generations", "queue", "phases"];

fn data(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn unit(d: [f64; 3]) -> [f64; 3] {
    let n = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
    d.map(|x| x / n)
}

/// (geometry, file, primary particle, energy [MeV], position [cm], direction, events); a
/// geometry named `*-field` has the uniform field [`FIELD_T`], one named `*-map` the field map
/// [`solenoid_map`].
type Case = (&'static str, std::path::PathBuf, Particle, f64, [f64; 3], [f64; 3], u64);

/// The uniform field of the `*-field` cases [T]: CMS's 3.8 T along z.
const FIELD_T: [f64; 3] = [0.0, 0.0, 3.8];

/// A solenoid-like (r, z) map covering simple-cms' world on an uneven grid
/// (`gpu_check::solenoid_map_rows`, the map the GPU check uses): the bilinear interpolation, the
/// transverse part and the Dormand–Prince stepping all matter.
fn solenoid_map() -> warpdrive_em::field::FieldMap {
    warpdrive_em::field::FieldMap::from_rows(Path::new("solenoid-map.csv"), &warpdrive_em::gpu_check::solenoid_map_rows()).unwrap()
}

#[test]
fn host_build_of_the_gdml_kernel_equals_the_cpu_detector_loop() {
    let dir = std::env::temp_dir().join(format!("wd-shower-gdml-twin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The C++ build of the kernel (one core, most of a minute) runs while the detectors are
    // built and the CPU events run; the cases' CPU events, and then their host-twin runs (three
    // schedules of one set of input files per case), run in parallel. The work and the checks
    // are the ones done one after the other before; on CI's two cores this halves the test's time.
    std::thread::scope(|s| {
        let cc = s.spawn(|| compile(&dir, "shower_gdml_host_twin"));
        check_cases(&dir, || cc.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
    });
    std::fs::remove_dir_all(&dir).ok();
}

/// The cases of [`host_build_of_the_gdml_kernel_equals_the_cpu_detector_loop`]; `exe` waits for
/// the host build of the kernel (`None`: skipped, no C++ compiler).
fn check_cases(dir: &Path, exe: impl FnOnce() -> Option<PathBuf>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // nested.gdml: a G4_Galactic world (vacuum flights for γ and e±), every solid kind,
    // booleans, rotations, an assembly, a calorimeter of layers; simple-cms: a vacuum beam pipe,
    // tubes and the PbWO4 barrel; testem3.gdml: 50 layers of Pb/lAr placed in a calorimeter.
    // Directions from the origin of nested.gdml (all placements in mm): +z into the layered
    // calorimeter, −z through the hole of the subtraction, the orb and into the trd, and at the
    // rotated cone, the water ∩ orb cap, the polycone and the rotated polyhedra. In simple-cms
    // with 3.8 T along z (the curved-path twins, kernels/field/*.cuh): 1 GeV e⁻ showering in the
    // barrel (helices through the vacuum pipe, the tracker's air, the crystals), and a 1 MeV e⁻
    // nearly across the field that circles in the vacuum pipe until it is a looper (killed
    // after transport.rs LOOPER_TURNS turns). The same in the field map (`*-map`, the
    // Dormand–Prince twins kernels/field/{map,rk}.cuh and propagate_in_map).
    let nested = || data("nested.gdml");
    let cms = || root.join("examples/em/simple-cms.gdml");
    let cases: [Case; 13] = [
        ("nested", nested(), Particle::Electron, 1000.0, [0.0; 3], [0.0, 0.0, 1.0], 4),
        ("nested", nested(), Particle::Electron, 300.0, [0.0; 3], [0.0, 0.0, -1.0], 6),
        ("nested", nested(), Particle::Gamma, 300.0, [0.0; 3], unit([1.0, -1.0, 0.0]), 12),
        ("nested", nested(), Particle::Positron, 100.0, [0.0; 3], [0.0, -1.0, 0.0], 12),
        ("nested", nested(), Particle::Electron, 200.0, [0.0; 3], unit([-1.0, -1.0, 0.0]), 6),
        ("nested", nested(), Particle::Gamma, 100.0, [0.0; 3], unit([1.0, 1.0, -1.0]), 12),
        (
            "simple-cms",
            root.join("examples/em/simple-cms.gdml"),
            Particle::Electron,
            1000.0,
            [0.0; 3],
            unit([1.0, 0.0, 0.1]),
            2,
        ),
        (
            "testem3",
            data("testem3.gdml"),
            Particle::Electron,
            1000.0,
            [0.0, 0.0, -1.0],
            [0.0, 0.0, 1.0],
            2,
        ),
        (
            "testem3",
            data("testem3.gdml"),
            Particle::Gamma,
            0.05,
            [0.0, 0.0, -1.0],
            [0.0, 0.0, 1.0],
            50,
        ),
        (
            "simple-cms-field",
            cms(),
            Particle::Electron,
            1000.0,
            [0.0; 3],
            unit([1.0, 0.0, 0.1]),
            3,
        ),
        (
            "simple-cms-field",
            cms(),
            Particle::Electron,
            1.0,
            [0.0; 3],
            unit([1.0, 0.0, 0.001]),
            2,
        ),
        (
            "simple-cms-map",
            cms(),
            Particle::Electron,
            1000.0,
            [0.0; 3],
            unit([1.0, 0.2, 0.3]),
            2,
        ),
        (
            "simple-cms-map",
            cms(),
            Particle::Electron,
            1.0,
            [0.0; 3],
            unit([1.0, 0.0, 0.001]),
            1,
        ),
    ];
    let mut failures = Vec::new();
    let mut built: Vec<(String, DetectorPhysics)> = Vec::new();
    // The tables of each file are built once: simple-cms' three set-ups (no field, the uniform
    // field, the map) are clones of one build (the tables depend on neither field nor hits).
    let mut files: Vec<(&Path, DetectorPhysics)> = Vec::new();
    for &(name, ref path, ..) in &cases {
        if built.iter().any(|(b, _)| b == name) {
            continue;
        }
        let mut det = match files.iter().find(|(f, _)| *f == path.as_path()) {
            Some((_, det)) => det.clone(),
            None => {
                // nested.gdml's `Lead` and `Mix` have no mean excitation energy (the reader's
                // tests of a bare Z material and of a mixture by fraction): give them one (lead's
                // 823 eV; 300 eV for the water–lead mixture).
                let text = std::fs::read_to_string(path)
                    .unwrap()
                    .replace(
                        r#"<material name="Lead" Z="82">"#,
                        r#"<material name="Lead" Z="82"><MEE unit="eV" value="823"/>"#,
                    )
                    .replace(r#"<material name="Mix">"#, r#"<material name="Mix"><MEE unit="eV" value="300"/>"#);
                let copy = dir.join(format!("{name}.gdml"));
                std::fs::write(&copy, text).unwrap();
                let g = warpdrive_em::gdml::read(&copy).unwrap();
                let det = DetectorPhysics::build(g, RangeCuts::uniform(0.07), TableOptions::default()).unwrap();
                files.push((path, det.clone()));
                det
            }
        };
        if name.ends_with("-field") {
            det.set_field(FIELD_T);
        }
        if name.ends_with("-map") {
            det.set_field_map(std::sync::Arc::new(solenoid_map())).unwrap();
            assert!(matches!(det.field, Some(warpdrive_em::field::Field::Map(_))));
        }
        // Hits: TestEm3's lead and argon; simple-cms' ECAL crystals, a pixel and a strip
        // layer and the beam pipe's vacuum (where the loopers stop); nested.gdml its own
        // (GDML `SensDet` auxiliaries).
        let sensitive: &[&str] = match name {
            "testem3" => &["ArgonV", "LeadV"],
            "nested" => &[],
            _ => &["EcalBarrel", "PixelLayer1", "StripLayer2", "BeamVacuum"],
        };
        det.set_sensitive(&sensitive.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .unwrap();
        built.push((name.to_string(), det));
    }
    let det = |name: &str| &built.iter().find(|(b, _)| b == name).unwrap().1;
    let primary = |(_, _, p, e, pos, d, _): &Case| Primary {
        particle: *p,
        energy: *e,
        pos: *pos,
        dir: *d,
    };
    // The CPU detector loop with hits, event by event, and the twins' input files, case by case.
    type CpuRun = (Vec<EventTally>, Vec<(u64, Hit)>, TwinInputs);
    let cpu_runs: Vec<CpuRun> = cases
        .par_iter()
        .enumerate()
        .map(|(i, case)| {
            let (det, primary, n) = (det(case.0), primary(case), case.6);
            let mut tallies = Vec::new();
            let mut cpu_hits = Vec::new();
            for k in 0..n {
                let (t, h) = run_event_with_hits(det, &primary, 31, k, &|| false).unwrap();
                tallies.push(t);
                cpu_hits.extend(h.into_iter().map(|x| (k, x)));
            }
            let case_dir = dir.join(format!("case{i}"));
            std::fs::create_dir_all(&case_dir).unwrap();
            (tallies, cpu_hits, host_twin_inputs(&case_dir, det, &primary, n, 31, 1 << 22))
        })
        .collect();
    let Some(exe) = exe() else { return };
    // Every case's three schedules.
    let jobs: Vec<(usize, &str)> = (0..cases.len()).flat_map(|i| MODES.map(|m| (i, m))).collect();
    let twins: Vec<TwinRun> = jobs
        .par_iter()
        .map(|&(i, mode)| host_twin(&exe, &cpu_runs[i].2, mode).expect("no overflow"))
        .collect();
    for (i, case) in cases.iter().enumerate() {
        let (name, _, p, e, _, d, n) = case;
        let (name, p, e, d, n) = (*name, *p, *e, *d, *n);
        let det = det(name);
        let (tallies, cpu_hits) = (&cpu_runs[i].0, &cpu_runs[i].1);
        let cpu: Vec<Vec<u64>> = tallies.iter().map(event_words).collect();
        // Each case reaches matter: some volume other than the world gets a deposit (the looper:
        // is killed in every event, depositing in the pipe's vacuum slot).
        let hit = (1..det.volumes()).filter(|&v| cpu.iter().any(|w| w[v] != 0)).count();
        let killed: u64 = tallies.iter().map(|t| t.killed).sum();
        let late = cpu_hits.iter().map(|(_, h)| h.time_ns).fold(0.0, f64::max);
        eprintln!(
            "{name} {p:?} {e} MeV: deposits in {hit} volumes besides the world, {killed} tracks killed, {} hits (the latest at {late:.3} ns)",
            cpu_hits.len()
        );
        // Every case with volumes marked here records hits, at times > 0 (nested.gdml's own
        // sensitive calorimeter lies in one direction only); a looper's stop in the pipe's vacuum
        // is a hit after ≈ 1 000 turns of ≈ 0.03 ns (the time of its curved vacuum flight,
        // transport.rs fly_curved / the kernel's wd_fly_curved).
        if name != "nested" && (cpu_hits.is_empty() || late <= 0.0 || (killed > 0 && late < 5.0)) {
            failures.push(format!("{name} {p:?} {e} MeV: {} hits, the latest at {late} ns", cpu_hits.len()));
        }
        if (name.ends_with("-field") || name.ends_with("-map")) && e < 10.0 && killed != n {
            failures.push(format!(
                "{name} {p:?} {e} MeV: {killed} loopers killed in {n} events, expected one per event"
            ));
        }
        if hit == 0 {
            failures.push(format!(
                "{name} {p:?} {e} MeV along {d:?}: no deposit outside the world (the case tests nothing)"
            ));
        }
        for (k, mode) in MODES.iter().enumerate() {
            let (twin, hits, line) = &twins[i * MODES.len() + k];
            eprint!("host twin: {line}");
            if hits != cpu_hits {
                let k = hits
                    .iter()
                    .zip(cpu_hits)
                    .position(|(a, b)| a != b)
                    .unwrap_or(hits.len().min(cpu_hits.len()));
                failures.push(format!(
                    "{mode}: {name} {p:?} {e} MeV: {} hits, the CPU {}; first difference at {k}: {:?} vs {:?}",
                    hits.len(),
                    cpu_hits.len(),
                    hits.get(k),
                    cpu_hits.get(k)
                ));
            }
            let same = cpu.iter().zip(twin).filter(|(a, b)| a == b).count();
            eprintln!("{mode}: {name} {p:?} {e} MeV: {same} of {n} events identical");
            if let Some(k) = cpu.iter().zip(twin).position(|(a, b)| a != b) {
                let diff: Vec<usize> = (0..cpu[k].len()).filter(|&w| cpu[k][w] != twin[k][w]).take(8).collect();
                failures.push(format!(
                    "{mode}: {name} {p:?} {e} MeV: {same} of {n} identical; event {k} differs in words {diff:?} (of {})",
                    cpu[k].len()
                ));
            }
        }
        // A hit buffer one hit too small raises the overflow flag (the host re-runs the batch in
        // halves); one that just holds the hits does not.
        if name == "testem3" && p == Particle::Gamma {
            let m = cpu_hits.len() as u64;
            for (mode, cap, fits) in [
                ("phases", m - 1, false),
                ("queue", m - 1, false),
                ("generations", m - 1, false),
                ("phases", m, true),
            ] {
                let case_dir = dir.join(format!("case{i}-{mode}-{cap}"));
                std::fs::create_dir_all(&case_dir).unwrap();
                let inp = host_twin_inputs(&case_dir, det, &primary(case), n, 31, cap);
                if host_twin(&exe, &inp, mode).is_some() != fits {
                    failures.push(format!("{mode}: a buffer of {cap} hits for {m} hits: overflow {}", !fits));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
