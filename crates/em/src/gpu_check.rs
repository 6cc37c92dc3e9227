//! Device checks of the EM domain (`warpdrive gpu-check --domain em`): the GPU follows the CPU's
//! random streams and arithmetic, so the same seed must give (nearly) the same tally; the GPU
//! profile must meet the Geant4 reference numbers of the CI test; small stacks (many retries)
//! must not change the GPU result. Showers ([`shower_checks`]): the GPU twin of the shower loop
//! against the CPU event by event, overflow re-runs, and the TestEm3 means against Geant4.

use crate::material::Material;
use crate::physics::PhysicsList;
use crate::transport::{run as run_cpu, RunOptions, RunResult, TallyGrid};
use std::path::Path;
use warpdrive_core::check::{Check, Suite};
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

fn rel(a: f64, b: f64) -> f64 {
    (a / b - 1.0).abs()
}

/// The EM checks of a `gpu-check` suite ([`run_all`] when the suite holds them).
pub fn run_suite(
    suite: Suite,
    _data: &Path,
    device: usize,
    log: &mut dyn FnMut(&str),
) -> Result<Vec<Check>, warpdrive_core::engine::Error> {
    warpdrive_core::check::part(suite, Suite::Em, || run_all(device, log))
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
    let g4 = crate::engine::GEANT4_100MEV_AL;
    let ok = rel(g.mean_depth(), g4.mean_depth_cm) < 0.005
        && g4.beyond_mev.iter().all(|&(z, e)| rel(g.energy_beyond(&grid, z), e) < 0.02)
        && rel(g.steps_per_track(), g4.steps_per_track) < 0.01;
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
    log("em: 2^18 tracks on every GPU (cuda:all) against one GPU");
    let all = warpdrive_core::cuda::device_count().map_err(|e| e.to_string())?;
    checks.push(if all > 1 {
        let opts = RunOptions::new(100.0, 1 << 18, 12_345, grid)?;
        let (one, _) = crate::gpu::run(&physics, &opts, device, &hidden).map_err(|e| e.to_string())?;
        let devices: Vec<usize> = (0..all).collect();
        let (m, st) = crate::gpu::run_devices(&physics, &opts, &devices, &hidden).map_err(|e| e.to_string())?;
        let same = m.tally == one.tally && m.steps == one.steps && m.edep_z == one.edep_z && m.secondaries == one.secondaries;
        Check {
            name: format!("em: cuda:all ({all} GPUs) = one GPU"),
            passed: same,
            detail: format!(
                "{}: tally, steps, depth and secondaries identical: {same} ({} vs {} steps)",
                st.device, m.steps, one.steps
            ),
        }
    } else {
        Check {
            name: "em: cuda:all = one GPU".into(),
            passed: true,
            detail: "skipped: one GPU visible".into(),
        }
    });
    checks.extend(shower_checks(device, log)?);
    checks.extend(geo_checks(device, log)?);
    checks.extend(detector_checks(device, log)?);
    Ok(checks)
}

/// The shower checks: GPU = CPU event by event (every tallied integer), re-runs after full
/// lists change nothing, and the GPU's TestEm3 means meet the CPU test's Geant4 bounds.
/// warpdrive_core::pmath on the device against the host, bit for bit, on
/// `pmath::check_arguments(200 000)` (the functions the shower kernel uses).
pub fn pmath_check(device: usize) -> Result<Check, String> {
    use cudarc::driver::{LaunchConfig, PushKernelArg};
    use warpdrive_core::{cuda, pmath};
    let go = || -> Result<Check, cuda::CudaError> {
        let gpu = cuda::open(device)?;
        let (_m, f) = cuda::load(
            &gpu,
            crate::shower::gpu::KERNEL_NAME,
            crate::shower::gpu::KERNEL_SRC,
            "twin_pmath",
            true,
            &[],
        )?;
        let s = &gpu.stream;
        let args = pmath::check_arguments(200_000);
        let din = s.clone_htod(&args)?;
        let mut dout = s.alloc_zeros::<f64>(8 * args.len())?;
        let n = args.len() as i32;
        let mut l = s.launch_builder(&f);
        l.arg(&n).arg(&din).arg(&mut dout);
        // SAFETY: n inputs and 8·n outputs; the kernel guards i < n.
        unsafe { l.launch(LaunchConfig::for_num_elems(args.len() as u32)) }?;
        let out = s.clone_dtoh(&dout)?;
        let names = ["ln", "exp", "exp_m1", "ln_1p", "pow", "sin", "cos", "cbrt"];
        let mut bad = [0usize; 8];
        for (i, &x) in args.iter().enumerate() {
            for (k, want) in pmath::evaluate_all(x).iter().enumerate() {
                if want.to_bits() != out[8 * i + k].to_bits() {
                    bad[k] += 1;
                }
            }
        }
        let detail = names
            .iter()
            .zip(bad)
            .map(|(n, b)| format!("{n} {b}"))
            .collect::<Vec<_>>()
            .join(", ");
        Ok(Check {
            name: "portable math (pmath): GPU = CPU bit for bit".into(),
            passed: bad.iter().all(|&b| b == 0),
            detail: format!("{} arguments; mismatches per function: {detail}", args.len()),
        })
    };
    go().map_err(|e| e.to_string())
}

pub fn shower_checks(device: usize, log: &mut dyn FnMut(&str)) -> Result<Vec<Check>, String> {
    use crate::shower::gpu::{run_devices, GpuShowerOptions, Schedule};
    use crate::shower::run::{event_words, run as run_cpu_showers};
    use crate::shower::transport::{Primary, ShowerPhysics};
    use crate::shower::Particle;
    let hidden = Progress::hidden();
    let phys = ShowerPhysics::testem3();
    let primary = Primary::testem3(Particle::Electron, 1000.0);
    let mut checks = vec![pmath_check(device)?];
    let means = |r: &crate::shower::run::ShowerRun| -> String {
        let per = r.per_material(&phys);
        let c = r.created();
        let (ch, ne) = r.steps();
        format!(
            "{} {:.3} MeV, {} {:.3} MeV, created {:.2} γ / {:.2} e- / {:.3} e+, steps {:.1} charged / {:.1} neutral, checksum {:016x}",
            per[0].name,
            per[0].edep_mean_mev,
            per[1].name,
            per[1].edep_mean_mev,
            c[0],
            c[1],
            c[2],
            ch,
            ne,
            r.checksum()
        )
    };

    log("em-shower: 200 events of 1 GeV e- in TestEm3 on GPU and CPU, same seed");
    let n = 200;
    let t0 = std::time::Instant::now();
    let c = run_cpu_showers(&phys, &primary, n, 2024, &hidden);
    let cpu_s = t0.elapsed().as_secs_f64();
    let mut default_run = None;
    for schedule in [Schedule::Phases, Schedule::Queue, Schedule::Generations] {
        let opts = GpuShowerOptions {
            schedule: Some(schedule),
            precise: true,
            ..GpuShowerOptions::default()
        };
        let (g, stats) = run_devices(&phys, &primary, n, 2024, &[device], &hidden, &opts).map_err(|e| e.to_string())?;
        let same_slabs = g.events.iter().zip(&c.events).filter(|(a, b)| a.edep == b.edep).count();
        let same_all = g
            .events
            .iter()
            .zip(&c.events)
            .filter(|(a, b)| event_words(a) == event_words(b))
            .count();
        let first_diff = g
            .events
            .iter()
            .zip(&c.events)
            .position(|(a, b)| event_words(a) != event_words(b))
            .map_or(String::new(), |k| format!("; first differing event {k}"));
        checks.push(Check {
            name: format!("em-shower: precise GPU ({schedule:?}) = CPU event by event, bit for bit (200 × 1 GeV e- in TestEm3)"),
            passed: same_slabs == n as usize && same_all == n as usize && g.checksum() == c.checksum(),
            detail: format!(
                "{same_slabs} of {n} events with identical per-slab deposits, {same_all} identical in every tallied integer{first_diff}\n\
                 GPU: {}\nCPU: {}\nGPU {:.3} s ({}; registers {}/{}, {} batches, {} re-runs, {} generations), CPU {cpu_s:.3} s on {} threads",
                means(&g),
                means(&c),
                stats.seconds,
                stats.device,
                stats.registers.0,
                stats.registers.1,
                stats.batches,
                stats.reruns,
                stats.generations,
                rayon::current_num_threads()
            ),
        });
        if schedule == Schedule::default() {
            default_run = Some(g);
        }
    }
    let g = default_run.expect("the default schedule ran");
    let precise = GpuShowerOptions {
        precise: true,
        ..GpuShowerOptions::default()
    };

    // Fast mode is not the CPU's, but it is deterministic: the same events on any number of
    // GPUs and whatever the batches.
    let (fast_run, _) =
        run_devices(&phys, &primary, n, 2024, &[device], &hidden, &GpuShowerOptions::default()).map_err(|e| e.to_string())?;
    log("em-shower: the same 200 events on every GPU (cuda:all), both modes");
    let all = warpdrive_core::cuda::device_count().map_err(|e| e.to_string())?;
    for (mode, opts, reference) in [("precise", precise, &g), ("fast", GpuShowerOptions::default(), &fast_run)] {
        checks.push(if all > 1 {
            let devices: Vec<usize> = (0..all).collect();
            let (m, st) = run_devices(&phys, &primary, n, 2024, &devices, &hidden, &opts).map_err(|e| e.to_string())?;
            let same = m.events.len() == reference.events.len()
                && m.events
                    .iter()
                    .zip(&reference.events)
                    .all(|(a, b)| event_words(a) == event_words(b))
                && m.checksum() == reference.checksum();
            Check {
                name: format!("em-shower: cuda:all ({all} GPUs) = one GPU, event by event ({mode} mode)"),
                passed: same,
                detail: format!(
                    "{} events on {}: every tallied integer identical: {same}; checksums {:016x} / {:016x}; {:.3} s",
                    m.events.len(),
                    st.device,
                    m.checksum(),
                    reference.checksum(),
                    st.seconds
                ),
            }
        } else {
            Check {
                name: format!("em-shower: cuda:all = one GPU ({mode} mode)"),
                passed: true,
                detail: "skipped: one GPU visible".into(),
            }
        });
    }

    log("em-shower: small lists on the GPU (forced re-runs), both modes");
    for (mode, precise, reference) in [("precise", true, &g.events[..40]), ("fast", false, &fast_run.events[..40])] {
        let small = GpuShowerOptions {
            stack_capacity: Some(3000),
            batch_events: Some(40),
            schedule: None,
            precise,
            hit_capacity: None,
        };
        let (s, sst) = run_devices(&phys, &primary, 40, 2024, &[device], &hidden, &small).map_err(|e| e.to_string())?;
        let same = s.events[..] == *reference;
        checks.push(Check {
            name: format!("em-shower: re-runs after full lists do not change GPU results ({mode} mode)"),
            passed: same && sst.reruns > 0,
            detail: format!(
                "40 events, lists of 3 000 tracks: {} re-runs, {} batches; identical to the default lists' run: {same}",
                sst.reruns, sst.batches
            ),
        });
    }

    // Both modes against Geant4: precise (= the CPU, above) and fast (the default: CUDA's libm,
    // histories that part from the CPU's; 10 000 events so that its means are known to 0.02 %).
    for (mode, opts, events) in [("precise", precise, 2000u64), ("fast", GpuShowerOptions::default(), 10_000)] {
        log(&format!("em-shower: {events} events on the GPU ({mode} mode) against Geant4 10.3"));
        let (r, rst) = run_devices(&phys, &primary, events, 7, &[device], &hidden, &opts).map_err(|e| e.to_string())?;
        let per: Vec<_> = r
            .per_material(&phys)
            .into_iter()
            .map(|m| (m.name, m.edep_mean_mev, m.edep_rms_mev))
            .collect();
        let (within, lines) = crate::shower::reference::compare(&per, r.created());
        checks.push(Check {
            name: format!("em-shower: {mode} GPU TestEm3 meets the Geant4 bounds of the CPU test (means, RMS, created counts)"),
            passed: within && r.worst_balance() < 1e-9 && r.killed() == 0,
            detail: format!(
                "{events} events: {}\nworst energy balance {:.1e}, killed {}; {:.3} s, {:.1} events/s, {:.3e} track-steps/s",
                lines.join("; "),
                r.worst_balance(),
                r.killed(),
                rst.seconds,
                events as f64 / rst.seconds,
                r.total_steps() as f64 / rst.seconds
            ),
        });
    }
    Ok(checks)
}

/// The navigator on the GPU against the CPU (issue #31): every solid specimen of `geo::zoo`
/// with 10⁶ rays (the CPU side is tested against brute force by `tests/geo_solids.rs`), and
/// 2¹⁸ whole rays walked through `tests/data/nested.gdml` (every supported solid, nested,
/// touching and rotated volumes, an assembly), and 2¹⁸ through a generated detector of 4096
/// daughters in one level (`geo::crowd`: the per-level trees of `geo::bvh`, nested ones in its
/// containers).
pub fn geo_checks(device: usize, log: &mut dyn FnMut(&str)) -> Result<Vec<Check>, String> {
    use crate::geo::{gpu, zoo, Aabb};
    const TOL: f64 = 1e-9;
    let mut checks = Vec::new();
    let n = 1_000_000usize;
    let (mut worst, mut total_bits, mut total_points, mut details) = (0.0f64, 0usize, 0usize, String::new());
    let mut failed = Vec::new();
    let t0 = std::time::Instant::now();
    for (k, s) in zoo::specimens().iter().enumerate() {
        log(&format!("em-geo: {} ({n} rays, GPU and CPU)", s.name));
        let b = s.solids.bounding_box(s.id);
        let grow = (b.max - b.min) * 0.2;
        let e = Aabb {
            min: b.min - grow,
            max: b.max + grow,
        };
        let (pts, dirs) = zoo::rays_in_box(&e, n, 2026 + k as u64);
        let (gd, gs, gi) = gpu::solid_distances(&s.solids, s.id, &pts, &dirs, device).map_err(|e| e.to_string())?;
        let (cd, cs, ci) = gpu::solid_distances_cpu(&s.solids, s.id, &pts, &dirs);
        let mut bits = 0usize;
        let mut bad = 0usize;
        let mut max_d = 0.0f64;
        for i in 0..n {
            let same = gd[i].to_bits() == cd[i].to_bits() && gs[i].to_bits() == cs[i].to_bits() && gi[i] == ci[i];
            if same {
                bits += 1;
                continue;
            }
            let dd = if gd[i] == cd[i] { 0.0 } else { (gd[i] - cd[i]).abs() };
            let ds = (gs[i] - cs[i]).abs();
            max_d = max_d.max(if dd.is_nan() { f64::INFINITY } else { dd }).max(ds);
            let off = |x: f64| x.is_nan() || x > TOL;
            if gi[i] != ci[i] || off(dd) || off(ds) {
                bad += 1;
            }
        }
        worst = worst.max(max_d);
        total_bits += bits;
        total_points += n;
        details.push_str(&format!(
            "\n  {}: {bits} of {n} bit for bit, {bad} beyond {TOL:e} mm or other side, max |Δ| {max_d:.2e} mm",
            s.name
        ));
        if bad > 0 {
            failed.push(s.name);
        }
    }
    checks.push(Check {
        name: format!(
            "em-geo: GPU solid distances and safeties = CPU ({} specimens × 10⁶ rays, ≤ {TOL:e} mm)",
            zoo::specimens().len()
        ),
        passed: failed.is_empty(),
        detail: format!(
            "{total_bits} of {total_points} points bit for bit; worst |Δ| {worst:.2e} mm; {:.1} s{details}{}",
            t0.elapsed().as_secs_f64(),
            if failed.is_empty() {
                String::new()
            } else {
                format!("\nFAILED: {}", failed.join(", "))
            }
        ),
    });

    log("em-geo: 2^18 rays walked through nested.gdml on GPU and CPU");
    let g =
        crate::gdml::parse(include_str!("../tests/data/nested.gdml"), std::path::Path::new("nested.gdml")).map_err(|e| e.to_string())?;
    checks.push(walk_check(
        "em-geo: GPU navigator = CPU, 2^18 rays walked through nested.gdml (same volumes, ≤ 1e-9 mm)".into(),
        &g.tree,
        1 << 18,
        31,
        64,
        device,
    )?);

    log("em-geo: 2^18 rays walked through a generated detector of 4096 daughters in one level (per-level trees) on GPU and CPU");
    let crowd = crate::geo::crowd::Crowd {
        daughters: 4096,
        layout: crate::geo::crowd::Layout::Jittered,
        nested: 27,
        seed: 31,
    };
    let g = crate::geo::crowd::build(&crowd)?;
    checks.push(walk_check(
        "em-geo: GPU navigator with per-level trees = CPU, 2^18 rays through 4096 jittered daughters with containers of 27 (same volumes, ≤ 1e-9 mm)".into(),
        &g.tree,
        1 << 18,
        32,
        256,
        device,
    )?);
    Ok(checks)
}

/// `rays` rays aimed at placed volumes walked through `tree` on the GPU and the CPU: passed when
/// every ray starts in the world and goes through the same volumes with distances within 1e-9 mm.
fn walk_check(
    name: String,
    tree: &crate::geo::VolumeTree,
    rays: usize,
    seed: u64,
    max_steps: usize,
    device: usize,
) -> Result<Check, String> {
    use crate::geo::{gpu, zoo};
    const TOL: f64 = 1e-9;
    let (pts, dirs) = zoo::rays_at_placements(tree, rays, seed);
    let t1 = std::time::Instant::now();
    let gt = gpu::trace_rays(tree, &pts, &dirs, max_steps, device).map_err(|e| e.to_string())?;
    let gpu_s = t1.elapsed().as_secs_f64();
    let ct = gpu::trace_rays_cpu(tree, &pts, &dirs, max_steps);
    let (mut identical, mut same_volumes, mut worst, mut crossings) = (0usize, 0usize, 0.0f64, 0usize);
    let mut first_bad = None;
    for (i, (a, b)) in gt.iter().zip(&ct).enumerate() {
        crossings += b.steps.len();
        if a == b {
            identical += 1;
            same_volumes += 1;
            continue;
        }
        let codes_equal = a.start == b.start && a.steps.len() == b.steps.len() && a.steps.iter().zip(&b.steps).all(|(x, y)| x.1 == y.1);
        let d = a
            .steps
            .iter()
            .zip(&b.steps)
            .map(|(x, y)| (x.0 - y.0).abs())
            .fold((a.safety - b.safety).abs(), f64::max)
            .max((a.end - b.end).norm());
        if codes_equal && d <= TOL {
            same_volumes += 1;
            worst = worst.max(d);
        } else if first_bad.is_none() {
            first_bad = Some(format!(
                "\nfirst differing ray {i}: start ({:.17e}, {:.17e}, {:.17e}) dir ({:.17e}, {:.17e}, {:.17e})\n  GPU {:?}\n  CPU {:?}",
                pts[i].x, pts[i].y, pts[i].z, dirs[i].x, dirs[i].y, dirs[i].z, a, b
            ));
        }
    }
    let in_world = ct.iter().filter(|t| t.start != crate::geo::trace::OUTSIDE).count();
    Ok(Check {
        name,
        passed: same_volumes == rays && in_world == rays,
        detail: format!(
            "{identical} of {rays} rays bit for bit, {same_volumes} with the same volumes within {TOL:e} mm (worst {worst:.2e} mm); {crossings} boundary crossings; {} tree nodes; GPU {gpu_s:.2} s incl. compile/load{}",
            tree.bvh.nodes.len(),
            first_bad.unwrap_or_default()
        ),
    })
}

/// A GDML detector's physics with every material given a mean excitation energy where the file
/// lacks one (nested.gdml's bare-Z `Lead` and its `Mix`, tests of the reader): lead's 823 eV, and
/// 300 eV for the water–lead mixture; `builtin` replaces TestEm3's `Lead` and `liquidArgon` by
/// the slab calorimeter's materials (the same physics as `em testem3`).
fn detector_physics(text: &str, name: &str, builtin: bool) -> Result<crate::shower::detector::DetectorPhysics, String> {
    use crate::shower::cuts::RangeCuts;
    use crate::shower::detector::{shower_materials, DetectorPhysics};
    use crate::shower::material::ShowerMaterial;
    use crate::shower::tables::TableOptions;
    let text = text
        .replace(
            r#"<material name="Lead" Z="82">"#,
            r#"<material name="Lead" Z="82"><MEE unit="eV" value="823"/>"#,
        )
        .replace(r#"<material name="Mix">"#, r#"<material name="Mix"><MEE unit="eV" value="300"/>"#);
    let g = crate::gdml::parse(&text, Path::new(name)).map_err(|e| e.to_string())?;
    let (of, mut list) = shower_materials(&g).map_err(|e| e.to_string())?;
    if builtin {
        for m in &mut list {
            *m = match m.name.as_str() {
                "Lead" => ShowerMaterial::lead(),
                "liquidArgon" => ShowerMaterial::liquid_argon(),
                _ => m.clone(),
            };
        }
    }
    let mut d = DetectorPhysics::build_from(g, of, &list, RangeCuts::default(), TableOptions::default()).map_err(|e| e.to_string())?;
    // Hits are the CPU's only: the GPU tallies deposits per volume (the comparison is of those).
    d.sensitive.fill(false);
    Ok(d)
}

/// The nodes (r, z, B_r, B_z) of a solenoid-like field map covering simple-cms' world
/// (r ≤ 8√2 m, |z| ≤ 13 m) on an uneven grid: B_z = 3.8 T (1 − r/15 m)(1 − |z|/20 m),
/// B_r = 0.3 T (r/12 m)(z/13 m), so that the interpolation, the transverse part and the
/// Dormand–Prince stepping all matter (the host twin test uses the same map).
#[must_use]
pub fn solenoid_map_rows() -> Vec<[f64; 4]> {
    let mut rows = Vec::new();
    for r in [0.0, 150.0, 600.0, 1300.0, 2000.0, 5000.0, 12000.0] {
        for z in [-13000.0f64, -3000.0, -800.0, 0.0, 450.0, 3000.0, 13000.0] {
            rows.push([
                r,
                z,
                0.3 * (r / 12000.0) * (z / 13000.0),
                3.8 * (1.0 - r / 15000.0) * (1.0 - z.abs() / 20000.0),
            ]);
        }
    }
    rows
}

/// Showers in GDML detectors on the GPU (issue #31, `em run DET.gdml --device cuda`): the GDML
/// build of the shower kernel in precise mode against the CPU detector loop event by event
/// (every volume slot's deposit and every other tallied integer), in TestEm3 as GDML (boxes),
/// simple-cms (tubes, polycones, a vacuum beam pipe) and nested.gdml (every solid kind,
/// booleans, rotations, a vacuum world); then TestEm3 as GDML against the slab calorimeter on
/// the GPU (fast mode, the default), per material within 3σ. In a uniform field (the helix's
/// twins, `kernels/field/*.cuh`): simple-cms in CMS's 3.8 T along z and TestEm3 as GDML in 1 T
/// across the beam, and the library request of `em run simple-cms.gdml --field 0,0,3.8
/// --device cuda --precise` against the CPU's. In a field map (the Dormand–Prince twins,
/// `kernels/field/{map,rk,propagate}.cuh`): simple-cms in a solenoid-like (r, z) map
/// ([`solenoid_map_rows`]), event by event and as the library request with `field_map`.
///
/// Thresholds: TestEm3 and simple-cms bit for bit, every event, with or without the field
/// (their solids need no transcendental on either side; the helix's sin and cos and the
/// Runge–Kutta step-size factor's pow are the portable ones, `warpdrive_core::pmath`, the same
/// bits on both). nested.gdml: at most 1 event in 20 may differ — its
/// polyhedra and sphere ask `atan2`/`sin` (CUDA's, not
/// glibc's: `em-geo` checks distances to ≤ 1e-9 mm rather than bit for bit for that reason), so
/// a track within an ulp of a polyhedra side or a θ cone can take another branch.
pub fn detector_checks(device: usize, log: &mut dyn FnMut(&str)) -> Result<Vec<Check>, String> {
    use crate::shower::detector::{run_event, run_from_events};
    use crate::shower::gpu::{run_detector_range, run_devices, GpuShowerOptions};
    use crate::shower::run::event_words;
    use crate::shower::transport::{Primary, ShowerPhysics};
    use crate::shower::Particle;
    let hidden = Progress::hidden();
    let precise = GpuShowerOptions {
        precise: true,
        ..GpuShowerOptions::default()
    };
    let unit = |d: [f64; 3]| {
        let n = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        d.map(|x| x / n)
    };
    let testem3 = detector_physics(include_str!("../tests/data/testem3.gdml"), "testem3.gdml", true)?;
    let cms = detector_physics(include_str!("../../../examples/em/simple-cms.gdml"), "simple-cms.gdml", false)?;
    let mut cms_field = cms.clone();
    cms_field.set_field([0.0, 0.0, 3.8]);
    let mut testem3_field = testem3.clone();
    testem3_field.set_field([0.0, 1.0, 0.0]);
    let mut cms_map = cms.clone();
    let map = crate::field::FieldMap::from_rows(Path::new("solenoid-map.csv"), &solenoid_map_rows()).map_err(|e| e.to_string())?;
    cms_map.set_field_map(std::sync::Arc::new(map)).map_err(|e| e.to_string())?;
    let nested = detector_physics(include_str!("../tests/data/nested.gdml"), "nested.gdml", false)?;
    let e1gev = |pos: [f64; 3], dir: [f64; 3]| Primary {
        particle: Particle::Electron,
        energy: 1000.0,
        pos,
        dir,
    };
    // (name, detector, primary, events, events that may differ)
    let cases = [
        ("TestEm3 as GDML", &testem3, e1gev([0.0, 0.0, -1.0], [0.0, 0.0, 1.0]), 50u64, 0u64),
        ("simple-cms.gdml", &cms, e1gev([0.0; 3], unit([1.0, 0.0, 0.1])), 20, 0),
        ("nested.gdml", &nested, e1gev([0.0; 3], [0.0, 0.0, 1.0]), 20, 1),
        ("nested.gdml", &nested, e1gev([0.0; 3], unit([1.0, 1.0, -1.0])), 20, 1),
        (
            "simple-cms.gdml in 3.8 T along z",
            &cms_field,
            e1gev([0.0; 3], unit([1.0, 0.0, 0.1])),
            20,
            0,
        ),
        (
            "TestEm3 as GDML in 1 T along y",
            &testem3_field,
            e1gev([0.0, 0.0, -1.0], [0.0, 0.0, 1.0]),
            10,
            0,
        ),
        (
            "simple-cms.gdml in a solenoid field map",
            &cms_map,
            e1gev([0.0; 3], unit([1.0, 0.2, 0.3])),
            10,
            0,
        ),
    ];
    let mut checks = Vec::new();
    for (name, det, primary, n, may_differ) in cases {
        log(&format!("em-detector: {n} events of 1 GeV e- in {name} on GPU (precise) and CPU"));
        let t0 = std::time::Instant::now();
        let cpu: Vec<_> = (0..n).map(|k| run_event(det, &primary, 2024, k)).collect();
        let cpu_s = t0.elapsed().as_secs_f64();
        let (gpu, _, st) = run_detector_range(det, &primary, 0..n, 2024, &[device], &hidden, &precise).map_err(|e| e.to_string())?;
        let same_slots = gpu.iter().zip(&cpu).filter(|(a, b)| a.edep == b.edep).count() as u64;
        let same_all = gpu.iter().zip(&cpu).filter(|(a, b)| event_words(a) == event_words(b)).count() as u64;
        let first_diff = gpu
            .iter()
            .zip(&cpu)
            .position(|(a, b)| event_words(a) != event_words(b))
            .map_or(String::new(), |k| format!("; first differing event {k}"));
        let (a, b) = (
            run_from_events(det, &primary, 0, 2024, &gpu, &[]),
            run_from_events(det, &primary, 0, 2024, &cpu, &[]),
        );
        let slots_hit = (0..det.volumes()).filter(|&v| b.edep[v] != 0).count();
        checks.push(Check {
            name: format!(
                "em-detector: precise GPU = CPU event by event per volume slot ({n} × 1 GeV e- in {name} along {:?}{})",
                primary.dir.map(|x| (x * 1000.0).round() / 1000.0),
                if may_differ == 0 {
                    ", bit for bit".to_string()
                } else {
                    format!(", ≤ {may_differ} events may part at an atan2/sin ulp")
                }
            ),
            passed: gpu.len() as u64 == n && same_all + may_differ >= n && same_slots == same_all && slots_hit > 1,
            detail: format!(
                "{same_slots} of {n} events with identical deposits in all {} volume slots ({slots_hit} hit), {same_all} identical in every tallied integer{first_diff}\n\
                 total deposit per event: GPU {:.4} MeV, CPU {:.4} MeV; GPU {:.3} s ({}, registers {}/{}, {} batches), CPU {cpu_s:.3} s on one thread",
                det.volumes(),
                a.edep.iter().map(|&q| q as f64).sum::<f64>() / crate::shower::transport::FIXED_SCALE / n as f64,
                b.edep.iter().map(|&q| q as f64).sum::<f64>() / crate::shower::transport::FIXED_SCALE / n as f64,
                st.seconds,
                st.device,
                st.registers.0,
                st.registers.1,
                st.batches
            ),
        });
    }

    // The library request of `em run DET.gdml --device cuda --precise` (engine::DetectorShower on
    // a GPU control) against the same request on the CPU: the sums over the events; without a
    // field, with a uniform field and with a field map.
    let requests = [
        (
            "testem3.gdml",
            include_str!("../tests/data/testem3.gdml"),
            [0.0, 0.0, -10.0],
            [0.0, 0.0, 1.0],
            [0.0; 3],
            "em run testem3.gdml --device cuda --precise = --device cpu (sums per volume, 20 × 1 GeV e-)",
        ),
        (
            "simple-cms.gdml",
            include_str!("../../../examples/em/simple-cms.gdml"),
            [0.0; 3],
            unit([1.0, 0.0, 0.1]),
            [0.0, 0.0, 3.8],
            "em run simple-cms.gdml --field 0,0,3.8 --device cuda --precise = --device cpu (sums per volume, 20 × 1 GeV e-)",
        ),
        (
            "simple-cms.gdml",
            include_str!("../../../examples/em/simple-cms.gdml"),
            [0.0; 3],
            unit([1.0, 0.2, 0.3]),
            [f64::NAN; 3],
            "em run simple-cms.gdml --field-map solenoid.csv --device cuda --precise = --device cpu (sums per volume, 20 × 1 GeV e-)",
        ),
    ];
    for (file_name, text, position_mm, direction, field_t, check_name) in requests {
        use crate::engine::{DetectorOptions, DetectorShower};
        use warpdrive_core::engine::{Control, Device};
        log(&format!("em-detector: {check_name}"));
        let dir = std::env::temp_dir().join(format!("wd-gpu-check-detector-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let file = dir.join(file_name);
        std::fs::write(&file, text).map_err(|e| e.to_string())?;
        // A NaN field: the solenoid map, as a CSV file.
        let field_map = if field_t[0].is_nan() {
            let csv = dir.join("solenoid.csv");
            let mut t = String::from("r_mm,z_mm,br_T,bz_T\n");
            for r in solenoid_map_rows() {
                t.push_str(&format!("{:e},{:e},{:e},{:e}\n", r[0], r[1], r[2], r[3]));
            }
            std::fs::write(&csv, t).map_err(|e| e.to_string())?;
            Some(csv)
        } else {
            None
        };
        let o = DetectorOptions {
            energy: 1000.0,
            events: 20,
            position_mm,
            direction,
            field_t: if field_map.is_some() { [0.0; 3] } else { field_t },
            field_map,
            ..DetectorOptions::default()
        };
        let req = DetectorShower::new(&file, &o).map_err(|e| e.to_string())?;
        let g = req
            .run(&Control::new().device(Device::Cuda(vec![device])).precise(true))
            .map_err(|e| e.to_string())?;
        let c = req.run(&Control::new().device(Device::Cpu)).map_err(|e| e.to_string())?;
        std::fs::remove_dir_all(&dir).ok();
        let same = g.run.edep == c.run.edep
            && g.run.escaped == c.run.escaped
            && g.run.steps == c.run.steps
            && g.run.created == c.run.created
            && g.run.events == 20;
        checks.push(Check {
            name: format!("em-detector: {check_name}"),
            passed: same && g.device.starts_with("cuda"),
            detail: format!(
                "deposits per volume, escaped energy, step and creation counts identical: {same}; GPU: {} ({} events, {:.3} s); CPU: {} ({:.3} s)",
                g.device, g.run.events, g.transport_seconds, c.device, c.transport_seconds
            ),
        });
    }

    checks.extend(hit_checks(device, log)?);

    log("em-detector: 2000 events of 1 GeV e- in TestEm3 as GDML and in the slab TestEm3, GPU (fast mode)");
    let n = 2000u64;
    let primary = Primary::testem3(Particle::Electron, 1000.0);
    let slabs = ShowerPhysics::testem3();
    let fast = GpuShowerOptions::default();
    let (s, sst) = run_devices(&slabs, &primary, n, 7, &[device], &hidden, &fast).map_err(|e| e.to_string())?;
    let (g, _, gst) = run_detector_range(&testem3, &primary, 0..n, 7, &[device], &hidden, &fast).map_err(|e| e.to_string())?;
    let g = run_from_events(&testem3, &primary, 0, 7, &g, &[]);
    let per = s.per_material(&slabs);
    let mut ok = g.events == n && g.worst_balance < 1e-9;
    let mut lines = Vec::new();
    for (k, name) in [(0usize, "Lead"), (1, "liquidArgon")] {
        let m = (0..testem3.gdml.materials.len())
            .find(|&m| testem3.gdml.materials[m].name == name)
            .ok_or_else(|| format!("testem3.gdml has no material {name}"))?;
        let (mg, eg) = g.material_mean(m);
        let (ms, es) = (per[k].edep_mean_mev, per[k].edep_mean_error_mev);
        let sigma = (eg * eg + es * es).sqrt();
        ok &= (mg - ms).abs() < 3.0 * sigma && ms > 10.0;
        lines.push(format!(
            "{name}: GDML {mg:.4} ± {eg:.4} MeV, slabs {ms:.4} ± {es:.4} MeV ({:+.2}σ)",
            (mg - ms) / sigma
        ));
    }
    checks.push(Check {
        name: "em-detector: TestEm3 as GDML on the GPU = em testem3 on the GPU within 3σ (2000 × 1 GeV e-, fast mode)".into(),
        passed: ok,
        detail: format!(
            "{}; worst energy balance {:.1e}; GDML {:.3} s ({:.1} events/s), slabs {:.3} s ({:.1} events/s): navigation costs {:.2}× the slab geometry",
            lines.join("; "),
            g.worst_balance,
            gst.seconds,
            n as f64 / gst.seconds,
            sst.seconds,
            n as f64 / sst.seconds,
            gst.seconds / sst.seconds
        ),
    });
    Ok(checks)
}

/// Hits in sensitive volumes on the GPU (issue #31): `em run DET.gdml --sensitive … --device cuda
/// --precise` against `--device cpu` — every hit (event, slot, deposit, time, position) in the
/// canonical order, the bytes of hits.parquet and summary.json's `hits` section — without a field
/// (TestEm3's argon gaps) and in CMS's 3.8 T (simple-cms' ECAL crystals and tracker layers); then
/// a hit buffer that holds the largest event's hits but not a batch's, in each schedule (re-runs
/// in halves), against detector.rs `run_event_with_hits`.
fn hit_checks(device: usize, log: &mut dyn FnMut(&str)) -> Result<Vec<Check>, String> {
    use crate::engine::{DetectorOptions, DetectorShower};
    use crate::shower::detector::run_event_with_hits;
    use crate::shower::gpu::{run_detector_range, GpuShowerOptions, Schedule};
    use crate::shower::transport::Primary;
    use crate::shower::Particle;
    use warpdrive_core::engine::{Control, Device};
    let n = 20u64;
    let unit = |d: [f64; 3]| {
        let m = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        d.map(|x| x / m)
    };
    let cms_text = include_str!("../../../examples/em/simple-cms.gdml");
    let requests = [
        (
            "testem3.gdml",
            include_str!("../tests/data/testem3.gdml"),
            vec!["ArgonV".to_string()],
            [0.0, 0.0, -10.0],
            [0.0, 0.0, 1.0],
            [0.0; 3],
            "no field, ArgonV sensitive",
        ),
        (
            "simple-cms.gdml",
            cms_text,
            vec!["EcalBarrel".to_string(), "PixelLayer1".to_string(), "StripLayer2".to_string()],
            [0.0; 3],
            unit([1.0, 0.0, 0.1]),
            [0.0, 0.0, 3.8],
            "3.8 T along z, EcalBarrel, PixelLayer1 and StripLayer2 sensitive",
        ),
    ];
    let mut checks = Vec::new();
    let dir = std::env::temp_dir().join(format!("wd-gpu-check-hits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    for (file_name, text, sensitive, position_mm, direction, field_t, label) in requests {
        log(&format!(
            "em-detector: hits, {n} × 1 GeV e- in {file_name} ({label}) on GPU (precise) and CPU"
        ));
        let file = dir.join(file_name);
        std::fs::write(&file, text).map_err(|e| e.to_string())?;
        let o = DetectorOptions {
            energy: 1000.0,
            events: n,
            position_mm,
            direction,
            field_t,
            sensitive,
            ..DetectorOptions::default()
        };
        let req = DetectorShower::new(&file, &o).map_err(|e| e.to_string())?;
        let g = req
            .run(&Control::new().device(Device::Cuda(vec![device])).precise(true))
            .map_err(|e| e.to_string())?;
        let c = req.run(&Control::new().device(Device::Cpu)).map_err(|e| e.to_string())?;
        let (pg, pc) = (dir.join("gpu-hits.parquet"), dir.join("cpu-hits.parquet"));
        g.hits_table().write_parquet(&pg).map_err(|e| e.to_string())?;
        c.hits_table().write_parquet(&pc).map_err(|e| e.to_string())?;
        let same_file = std::fs::read(&pg).map_err(|e| e.to_string())? == std::fs::read(&pc).map_err(|e| e.to_string())?;
        let same_hits = g.run.hits == c.run.hits;
        let first_diff = g
            .run
            .hits
            .iter()
            .zip(&c.run.hits)
            .position(|(a, b)| a != b)
            .map_or(String::new(), |k| {
                format!("; first differing hit {k}: GPU {:?}, CPU {:?}", g.run.hits[k], c.run.hits[k])
            });
        let same_summary = g.summary()["hits"] == c.summary()["hits"];
        let same_volumes = g.run.edep == c.run.edep;
        let times = c.run.hits.iter().filter(|(_, h)| h.time_ns > 0.0).count();
        checks.push(Check {
            name: format!("em-detector: em run with sensitive volumes: precise GPU = CPU hit for hit ({file_name}, {label}, {n} × 1 GeV e-)"),
            passed: same_hits && same_file && same_summary && same_volumes && c.run.hits.len() > 100 && times > 0 && g.device.starts_with("cuda"),
            detail: format!(
                "GPU {} hits, CPU {} hits ({times} with time > 0): identical {same_hits}{first_diff}; hits.parquet bytes identical {same_file}; \
                 summary.json hits identical {same_summary}; deposits per volume identical {same_volumes}; GPU: {} ({:.3} s); CPU {:.3} s",
                g.run.hits.len(),
                c.run.hits.len(),
                g.device,
                g.transport_seconds,
                c.transport_seconds
            ),
        });
    }
    // A small hit buffer: batches re-run in halves, in every schedule.
    let mut det = detector_physics(cms_text, "simple-cms.gdml", false)?;
    det.set_field([0.0, 0.0, 3.8]);
    det.set_sensitive(&["EcalBarrel".to_string(), "PixelLayer1".to_string()])?;
    let primary = Primary {
        particle: Particle::Electron,
        energy: 1000.0,
        pos: [0.0; 3],
        dir: unit([1.0, 0.0, 0.1]),
    };
    let m = 8u64;
    log(&format!(
        "em-detector: hits, {m} × 1 GeV e- in simple-cms.gdml in 3.8 T with a small hit buffer, each schedule"
    ));
    let mut cpu = Vec::new();
    let mut largest = 1usize;
    for k in 0..m {
        let (_, h) = run_event_with_hits(&det, &primary, 99, k, &|| false).ok_or("stopped")?;
        largest = largest.max(h.len());
        cpu.extend(h.into_iter().map(|x| (k, x)));
    }
    for schedule in [Schedule::Phases, Schedule::Queue, Schedule::Generations] {
        let opts = GpuShowerOptions {
            precise: true,
            schedule: Some(schedule),
            hit_capacity: Some(largest),
            ..GpuShowerOptions::default()
        };
        let (_, hits, st) =
            run_detector_range(&det, &primary, 0..m, 99, &[device], &Progress::hidden(), &opts).map_err(|e| e.to_string())?;
        let same = hits == cpu;
        checks.push(Check {
            name: format!("em-detector: full hit buffers (re-runs in halves) give the CPU's hits ({schedule:?} schedule, {m} × 1 GeV e- in simple-cms.gdml in 3.8 T, precise)"),
            passed: same && st.reruns > 0 && cpu.len() > largest,
            detail: format!(
                "GPU {} hits, CPU {}: identical {same}; a buffer of {largest} hits (the largest event's): {} re-runs, {} batches",
                hits.len(),
                cpu.len(),
                st.reruns,
                st.batches
            ),
        });
    }
    std::fs::remove_dir_all(&dir).ok();
    Ok(checks)
}
