//! The CUDA shower kernel compiled for the host (`shower_host_twin.cpp` includes
//! `kernels/shower.cu` with the few CUDA intrinsics it uses replaced by sequential host code)
//! and driven as `shower::gpu` drives the GPU (generation by generation, and through the
//! one-launch queues of the `showers` kernel with one thread), against the Rust CPU
//! loop: with the host's libm both sides call the same transcendentals, so every event must be
//! identical in every tallied integer. This checks the translation of the loop and of every
//! interactor (and the generation order, the ids, the list words, the tables' layout) without a
//! GPU; what it cannot check is the device's own arithmetic (CUDA's libm, `__double2ull_rn`,
//! atomics), which `warpdrive gpu-check --domain em` does.
//!
//! Needs a C++ compiler (`c++`, or `$CXX`); skipped without one unless
//! `WARPDRIVE_REQUIRE_DATA=1`.

mod common;
use common::{bytes, compile};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use warpdrive_core::progress::Progress;
use warpdrive_em::shower::cuts::RangeCuts;
use warpdrive_em::shower::geometry::Calorimeter;
use warpdrive_em::shower::gpu::{batch_primaries, tally_from_words, tally_stride, HostTables, TRACK_WORDS};
use warpdrive_em::shower::material::ShowerMaterial;
use warpdrive_em::shower::run::{event_words, run};
use warpdrive_em::shower::tables::TableOptions;
use warpdrive_em::shower::transport::{to_fixed, Primary, ShowerPhysics};
use warpdrive_em::shower::Particle;

/// The host twin's input files for `events` events of `primary` (the tables and the first
/// generation), written once into `dir` and read by every schedule ([`host_twin`]).
struct TwinInputs {
    tables: PathBuf,
    prim: PathBuf,
    missed: Vec<bool>,
    stride: usize,
    slabs: usize,
    n_mat: usize,
    energy: f64,
    events: u64,
}

fn host_twin_inputs(dir: &Path, phys: &ShowerPhysics, primary: &Primary, events: u64, seed: u64) -> TwinInputs {
    let t = HostTables::build(phys).unwrap();
    let cal = &phys.calorimeter;
    let stride = tally_stride(cal.slabs(), cal.materials.len());
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
    f.extend_from_slice(&(cal.materials.len() as u32).to_le_bytes());
    f.extend_from_slice(&(stride as u32).to_le_bytes());
    for c in [cal.transverse, t.constants[0], t.constants[1], t.constants[2]] {
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
    let tables = dir.join("tables.bin");
    std::fs::write(&tables, f).unwrap();
    let (first, missed) = batch_primaries(phys, primary, 0, events);
    let words: Vec<u8> = first.iter().flatten().flat_map(|w| w.to_le_bytes()).collect();
    assert_eq!(words.len() % (8 * TRACK_WORDS), 0);
    let prim = dir.join("primaries.bin");
    std::fs::write(&prim, words).unwrap();
    TwinInputs {
        tables,
        prim,
        missed,
        stride,
        slabs: cal.slabs(),
        n_mat: cal.materials.len(),
        energy: primary.energy,
        events,
    }
}

/// Run the events of `inp` through the host twin with the schedule `mode`; the events' tallies
/// and the twin's output line.
fn host_twin(exe: &Path, inp: &TwinInputs, mode: &str) -> (Vec<Vec<u64>>, String) {
    let out = inp.tables.with_file_name(format!("tally-{mode}.bin"));
    let o = Command::new(exe)
        .arg(&inp.tables)
        .arg(&inp.prim)
        .arg(&out)
        .arg(mode)
        .output()
        .unwrap();
    assert!(o.status.success(), "host twin: {}", String::from_utf8_lossy(&o.stderr));
    let raw = std::fs::read(&out).unwrap();
    let all: Vec<u64> = raw.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
    let (stride, energy) = (inp.stride, inp.energy);
    let words = (0..inp.events as usize)
        .map(|k| {
            let mut e = tally_from_words(&all[k * stride..(k + 1) * stride], inp.slabs, inp.n_mat, energy);
            if inp.missed[k] {
                e.escaped = to_fixed(energy);
            }
            event_words(&e)
        })
        .collect();
    (words, String::from_utf8_lossy(&o.stdout).into_owned())
}

/// The three schedules of shower::gpu: a launch pair per generation, the one-launch queues, and
/// the phase launches over slots.
const MODES: [&str; 3] = ["generations", "queue", "phases"];

#[test]
fn host_build_of_the_kernel_equals_the_cpu_loop() {
    let dir = std::env::temp_dir().join(format!("wd-shower-twin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The C++ build of the kernel (one core) runs while the CPU showers run; the host-twin runs
    // (three schedules of one set of input files per case) then run in parallel. The work and
    // the checks are the ones done one after the other before.
    std::thread::scope(|s| {
        let cc = s.spawn(|| compile(&dir, "shower_host_twin"));
        check_cases(&dir, || cc.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
    });
    std::fs::remove_dir_all(&dir).ok();
}

/// The cases of [`host_build_of_the_kernel_equals_the_cpu_loop`]; `exe` waits for the host build
/// of the kernel (`None`: skipped, no C++ compiler).
fn check_cases(dir: &Path, exe: impl FnOnce() -> Option<PathBuf>) {
    let testem3 = ShowerPhysics::testem3();
    // Compounds: the element choice of pair production, photo-absorption, Rayleigh scattering and
    // (by integrating the spectrum per element) bremsstrahlung; lead tungstate and water.
    let pwo = "name = \"PbWO4\"\ndensity = 8.28\nI_eV = 600.7\n[[elements]]\nZ = 82\nA = 207.2\nfraction = 0.455\n\
               [[elements]]\nZ = 74\nA = 183.84\nfraction = 0.404\n[[elements]]\nZ = 8\nA = 15.999\nfraction = 0.141\n";
    let water = "name = \"water\"\ndensity = 1.0\nI_eV = 78\n[[elements]]\nZ = 1\nA = 1.008\nfraction = 0.111894\n\
                 [[elements]]\nZ = 8\nA = 15.999\nfraction = 0.888106\n";
    let m = |t: &str| ShowerMaterial::from_toml_str(t, Path::new("m.toml")).unwrap();
    let cal = Calorimeter::new("compounds", vec![(m(pwo), 0.5), (m(water), 1.0)], 10, 20.0).unwrap();
    let compounds = ShowerPhysics::build(cal, RangeCuts::default(), TableOptions::default());
    // (label, physics, particle, energy [MeV], events, seed)
    let cases: [(&str, &ShowerPhysics, Particle, f64, u64, u64); 6] = [
        ("", &testem3, Particle::Electron, 1000.0, 24, 2024),
        ("", &testem3, Particle::Positron, 100.0, 20, 2024),
        ("", &testem3, Particle::Gamma, 300.0, 20, 2024),
        ("", &testem3, Particle::Gamma, 0.05, 200, 2024),
        ("compounds, ", &compounds, Particle::Electron, 100.0, 6, 77),
        ("compounds, ", &compounds, Particle::Gamma, 30.0, 10, 77),
    ];
    // The CPU loop (parallel over events) and the twins' input files, case by case.
    let cpu_runs: Vec<_> = cases
        .iter()
        .enumerate()
        .map(|(i, &(_, phys, p, e, n, seed))| {
            let primary = Primary::testem3(p, e);
            let cpu = run(phys, &primary, n, seed, &Progress::hidden());
            let case_dir = dir.join(format!("case{i}"));
            std::fs::create_dir_all(&case_dir).unwrap();
            (cpu, host_twin_inputs(&case_dir, phys, &primary, n, seed))
        })
        .collect();
    let Some(exe) = exe() else { return };
    let jobs: Vec<(usize, &str)> = (0..cases.len()).flat_map(|i| MODES.map(|m| (i, m))).collect();
    let twins: Vec<(Vec<Vec<u64>>, String)> = jobs.par_iter().map(|&(i, mode)| host_twin(&exe, &cpu_runs[i].1, mode)).collect();
    let mut failures = Vec::new();
    for (i, &(label, _, p, e, n, _)) in cases.iter().enumerate() {
        let cpu = &cpu_runs[i].0;
        for (k, mode) in MODES.iter().enumerate() {
            let (twin, line) = &twins[i * MODES.len() + k];
            eprint!("host twin: {line}");
            let same = cpu.events.iter().zip(twin).filter(|(a, b)| event_words(a) == **b).count();
            eprintln!("{mode}: {label}{p:?} {e} MeV: {same} of {n} events identical");
            if label.is_empty() {
                if let Some(k) = cpu.events.iter().zip(twin).position(|(a, b)| event_words(a) != *b) {
                    failures.push(format!(
                        "{mode}: {p:?} {e} MeV: {same} of {n} identical; event {k} differs:\nCPU  {:?}\ntwin {:?}",
                        event_words(&cpu.events[k]),
                        twin[k]
                    ));
                }
            } else if same != n as usize {
                failures.push(format!("{mode}: {label}{p:?} {e} MeV: {same} of {n} identical"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
