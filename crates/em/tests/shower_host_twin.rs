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
use std::path::Path;
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

/// Run `events` events of `primary` through the host twin; the events' tallies.
fn host_twin(exe: &Path, dir: &Path, phys: &ShowerPhysics, primary: &Primary, events: u64, seed: u64, mode: &str) -> Vec<Vec<u64>> {
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
    let out = dir.join("tally.bin");
    let o = Command::new(exe).arg(&tables).arg(&prim).arg(&out).arg(mode).output().unwrap();
    assert!(o.status.success(), "host twin: {}", String::from_utf8_lossy(&o.stderr));
    eprint!("host twin: {}", String::from_utf8_lossy(&o.stdout));
    let raw = std::fs::read(&out).unwrap();
    let all: Vec<u64> = raw.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
    (0..events as usize)
        .map(|k| {
            let mut e = tally_from_words(&all[k * stride..(k + 1) * stride], cal.slabs(), cal.materials.len(), primary.energy);
            if missed[k] {
                e.escaped = to_fixed(primary.energy);
            }
            event_words(&e)
        })
        .collect()
}

/// The three schedules of shower::gpu: a launch pair per generation, the one-launch queues, and
/// the phase launches over slots.
const MODES: [&str; 3] = ["generations", "queue", "phases"];

#[test]
fn host_build_of_the_kernel_equals_the_cpu_loop() {
    let dir = std::env::temp_dir().join(format!("wd-shower-twin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let Some(exe) = compile(&dir, "shower_host_twin") else { return };
    let phys = ShowerPhysics::testem3();
    let mut failures = Vec::new();
    for (p, e, n) in [
        (Particle::Electron, 1000.0, 24),
        (Particle::Positron, 100.0, 20),
        (Particle::Gamma, 300.0, 20),
        (Particle::Gamma, 0.05, 200),
    ] {
        let primary = Primary::testem3(p, e);
        let cpu = run(&phys, &primary, n, 2024, &Progress::hidden());
        for mode in MODES {
            let twin = host_twin(&exe, &dir, &phys, &primary, n, 2024, mode);
            let same = cpu.events.iter().zip(&twin).filter(|(a, b)| event_words(a) == **b).count();
            eprintln!("{mode}: {p:?} {e} MeV: {same} of {n} events identical");
            if let Some(k) = cpu.events.iter().zip(&twin).position(|(a, b)| event_words(a) != *b) {
                failures.push(format!(
                    "{mode}: {p:?} {e} MeV: {same} of {n} identical; event {k} differs:\nCPU  {:?}\ntwin {:?}",
                    event_words(&cpu.events[k]),
                    twin[k]
                ));
            }
        }
    }
    // Compounds: the element choice of pair production, photo-absorption, Rayleigh scattering and
    // (by integrating the spectrum per element) bremsstrahlung; lead tungstate and water.
    let pwo = "name = \"PbWO4\"\ndensity = 8.28\nI_eV = 600.7\n[[elements]]\nZ = 82\nA = 207.2\nfraction = 0.455\n\
               [[elements]]\nZ = 74\nA = 183.84\nfraction = 0.404\n[[elements]]\nZ = 8\nA = 15.999\nfraction = 0.141\n";
    let water = "name = \"water\"\ndensity = 1.0\nI_eV = 78\n[[elements]]\nZ = 1\nA = 1.008\nfraction = 0.111894\n\
                 [[elements]]\nZ = 8\nA = 15.999\nfraction = 0.888106\n";
    let m = |t: &str| ShowerMaterial::from_toml_str(t, Path::new("m.toml")).unwrap();
    let cal = Calorimeter::new("compounds", vec![(m(pwo), 0.5), (m(water), 1.0)], 10, 20.0).unwrap();
    let phys = ShowerPhysics::build(cal, RangeCuts::default(), TableOptions::default());
    for (p, e, n) in [(Particle::Electron, 100.0, 6), (Particle::Gamma, 30.0, 10)] {
        let primary = Primary::testem3(p, e);
        let cpu = run(&phys, &primary, n, 77, &Progress::hidden());
        for mode in MODES {
            let twin = host_twin(&exe, &dir, &phys, &primary, n, 77, mode);
            let same = cpu.events.iter().zip(&twin).filter(|(a, b)| event_words(a) == **b).count();
            eprintln!("{mode}: compounds, {p:?} {e} MeV: {same} of {n} events identical");
            if same != n as usize {
                failures.push(format!("{mode}: compounds, {p:?} {e} MeV: {same} of {n} identical"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    std::fs::remove_dir_all(&dir).ok();
}
