//! Device checks of the EM domain (`warpdrive gpu-check --domain em`): the GPU follows the CPU's
//! random streams and arithmetic, so the same seed must give (nearly) the same tally; the GPU
//! profile must meet the Geant4 reference numbers of the CI test; small stacks (many retries)
//! must not change the GPU result.

use crate::material::Material;
use crate::physics::PhysicsList;
use crate::transport::{run as run_cpu, RunOptions, RunResult, TallyGrid};
use warpdrive_core::check::Check;
use warpdrive_core::progress::Progress;

fn integrals(r: &RunResult, g: &TallyGrid) -> String {
    format!(
        "steps/track {:.4}, mean depth {:.3} cm, beyond 100/200/500 cm {:.4}/{:.4}/{:.4} MeV",
        r.steps_per_track(),
        r.mean_depth(),
        r.energy_beyond(g, 100.0),
        r.energy_beyond(g, 200.0),
        r.energy_beyond(g, 500.0)
    )
}

pub fn run_all(device: usize, log: &mut dyn FnMut(&str)) -> Result<Vec<Check>, String> {
    let physics = PhysicsList::compton_only(&Material::aluminium());
    let grid = TallyGrid::new(0.0, 1.0, 2048)?;
    let mut checks = Vec::new();
    let hidden = Progress::hidden();

    log("em: 2^18 tracks on GPU and CPU, same seed");
    let opts = RunOptions::new(100.0, 1 << 18, 12_345, grid)?;
    let (g, stats) = crate::gpu::run(&physics, &opts, device, &hidden).map_err(|e| e.to_string())?;
    let t0 = std::time::Instant::now();
    let c = run_cpu(&physics, &opts, &hidden);
    let cpu_s = t0.elapsed().as_secs_f64();
    let same_bins = g.tally.iter().zip(&c.tally).filter(|(a, b)| a == b).count();
    let rel = |a: f64, b: f64| (a / b - 1.0).abs();
    let passed = rel(g.steps as f64, c.steps as f64) < 1e-4 && rel(g.mean_depth(), c.mean_depth()) < 1e-4 && same_bins * 10 > grid.size * 9;
    checks.push(Check {
        name: "em: GPU follows the CPU's random streams (same seed)".into(),
        passed,
        detail: format!(
            "GPU: {} steps, {}\nCPU: {} steps, {}\n{} of {} tally bins identical to the last bit; GPU {:.3} s ({} registers), CPU {:.3} s on {} threads",
            g.steps,
            integrals(&g, &grid),
            c.steps,
            integrals(&c, &grid),
            same_bins,
            grid.size,
            stats.seconds,
            stats.registers,
            cpu_s,
            rayon::current_num_threads()
        ),
    });

    log("em: 2^22 tracks on the GPU against Geant4");
    let opts = RunOptions::new(100.0, 1 << 22, 2026, grid)?;
    let (g, stats) = crate::gpu::run(&physics, &opts, device, &hidden).map_err(|e| e.to_string())?;
    let ok = rel(g.mean_depth(), 176.06) < 0.005
        && rel(g.energy_beyond(&grid, 100.0), 57.95) < 0.02
        && rel(g.energy_beyond(&grid, 200.0), 32.77) < 0.02
        && rel(g.energy_beyond(&grid, 500.0), 5.40) < 0.02
        && rel(g.steps_per_track(), 57.24) < 0.01;
    checks.push(Check {
        name: "em: GPU profile meets the Geant4 reference (CI thresholds)".into(),
        passed: ok,
        detail: format!(
            "{} tracks: {} (Geant4: 57.24 / 176.06 cm / 57.95/32.77/5.40 MeV); {:.3} s, {:.3e} track-steps/s",
            g.tracks,
            integrals(&g, &grid),
            stats.seconds,
            g.steps as f64 / stats.seconds
        ),
    });

    log("em: small stacks on the GPU");
    let mut opts = RunOptions::new(100.0, 1 << 16, 7, grid)?;
    let (a, _) = crate::gpu::run(&physics, &opts, device, &hidden).map_err(|e| e.to_string())?;
    opts.hit_capacity = 5000;
    opts.secondary_capacity = 5000;
    let (b, _) = crate::gpu::run(&physics, &opts, device, &hidden).map_err(|e| e.to_string())?;
    let same = a.tally == b.tally && a.steps == b.steps && a.edep_z == b.edep_z && a.secondaries == b.secondaries;
    checks.push(Check {
        name: "em: full stacks (retries) do not change GPU results".into(),
        passed: same && b.retries > 0,
        detail: format!(
            "65 536 tracks: default stacks {} iterations, 0 retries expected ({}); 5 000-slot stacks {} iterations, {} retries; results identical: {same}",
            a.iterations, a.retries, b.iterations, b.retries
        ),
    });
    Ok(checks)
}
