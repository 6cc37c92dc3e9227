//! `warpdrive bench em` as a library call: the Klein–Nishina mini-app (track-steps per second
//! per CPU thread count, or on a GPU per slot count and without the default switches) and
//! Geant4's TestEm3 (events and track-steps per second of 1 and 10 GeV e⁻ per thread count, and
//! on a GPU in fast and precise mode against one CPU core). docs/performance/em.md cites both
//! reports.

use crate::material::Material;
use crate::physics::PhysicsList;
use crate::shower::geometry::Calorimeter;
use crate::shower::gpu::GpuShowerOptions;
use crate::shower::run::check_event_count;
use crate::shower::transport::{Primary, ShowerPhysics};
use crate::shower::Particle;
use crate::transport::{RunOptions, TallyGrid};
use std::time::Instant;
use warpdrive_core::bench::{self, BenchReport, Lines};
use warpdrive_core::engine::{Control, Error, ParamError, Result};
use warpdrive_core::progress::Progress;

/// Which benchmark.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Problem {
    /// The Klein–Nishina mini-app: photons of 100 MeV in aluminium.
    #[default]
    Kn,
    /// EM showers of 1 and 10 GeV e⁻ in Geant4's TestEm3.
    Testem3,
    /// 10 GeV e⁻ in the CMS-like barrel of `examples/em/simple-cms.gdml`, without a field, in a
    /// uniform 3.8 T field (helix) and in a field map of the same field (Dormand–Prince), per CPU
    /// thread count; on a GPU without a field (fast and precise mode) against one CPU core.
    SimpleCms,
    /// Navigation alone in generated detectors with 1 000, 4 096 and 10 000 daughters in one
    /// level (`geo::crowd`, jittered and rotated): locate, next step and safety per second on one
    /// core, with the per-level trees and with the linear loop (issue #31).
    Crowd,
}

impl std::str::FromStr for Problem {
    type Err = ParamError;
    fn from_str(s: &str) -> Result<Self, ParamError> {
        match s {
            "kn" => Ok(Problem::Kn),
            "testem3" => Ok(Problem::Testem3),
            "simple-cms" => Ok(Problem::SimpleCms),
            "crowd" => Ok(Problem::Crowd),
            p => Err(ParamError::new(
                "problem",
                format!("{p}: expected kn, testem3, simple-cms or crowd"),
            )),
        }
    }
}

/// What to time; `Default` is the command line's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BenchOptions {
    pub problem: Problem,
    /// testem3: events per energy on the CPU; simple-cms: events per field set-up.
    pub events: u64,
    /// testem3: GPU events at 1 GeV (3/10 of them at 10 GeV).
    pub gpu_events: u64,
    /// kn: photons (the spec's benchmark: 8 388 608 on a GPU); crowd: points per geometry.
    pub tracks: u64,
    /// CPU thread counts (empty: 1 and all cores).
    pub threads: Vec<usize>,
}

impl Default for BenchOptions {
    fn default() -> Self {
        Self {
            problem: Problem::Kn,
            events: 200,
            gpu_events: 10_000,
            tracks: 1 << 18,
            threads: Vec::new(),
        }
    }
}

fn json_text(v: &serde_json::Value) -> Result<BenchReport> {
    Ok(BenchReport {
        json: serde_json::to_string_pretty(v).map_err(|e| Error::Failed(e.to_string()))? + "\n",
    })
}

/// Time the benchmark on the control's device (`auto`: the first GPU if CUDA works, else the
/// CPU), printing each row to `lines` as it is measured.
pub fn run(o: &BenchOptions, ctl: &Control, lines: Lines) -> Result<BenchReport> {
    let threads = bench::thread_counts(&o.threads)?;
    match o.problem {
        Problem::Kn => kn(o, &threads, ctl, lines),
        Problem::Testem3 => testem3(o, &threads, ctl, lines),
        Problem::SimpleCms => simple_cms(o, &threads, ctl, lines),
        Problem::Crowd => crowd(o, ctl, lines),
    }
}

/// crowd: the daughters of the three geometries.
pub const CROWD_SIZES: [usize; 3] = [1000, 4096, 10_000];
/// crowd: most points per geometry.
pub const MAX_CROWD_POINTS: u64 = 1 << 22;

/// Navigation rates on one core in [`CROWD_SIZES`] (see [`Problem::Crowd`]): `tracks` random
/// points in the hall with isotropic directions; per navigator (trees, linear loop) the rate of
/// locate, of next step (unbounded, from the located volume) and of safety. Both navigators'
/// answers are compared while timed (a difference fails the benchmark).
fn crowd(o: &BenchOptions, ctl: &Control, lines: Lines) -> Result<BenchReport> {
    use crate::geo::crowd::{build, Crowd, Layout};
    use crate::geo::{zoo, Aabb, Navigator};
    if o.tracks == 0 || o.tracks > MAX_CROWD_POINTS {
        return Err(ParamError::new("tracks", format!("{}: from 1 to {MAX_CROWD_POINTS} points", o.tracks)).into());
    }
    let n = o.tracks as usize;
    lines(&format!(
        "warpdrive bench em --problem crowd: {n} points per geometry, one core; daughters in one level, jittered and rotated (geo::crowd)"
    ));
    lines(&format!(
        "{:>9} {:>10} {:>12} {:>12} {:>12} {:>10}",
        "daughters", "navigator", "locate/s", "next-step/s", "safety/s", "tree-nodes"
    ));
    let mut rows = Vec::new();
    for &daughters in &CROWD_SIZES {
        let g = build(&Crowd {
            daughters,
            layout: Layout::Jittered,
            nested: 0,
            seed: 2026,
        })
        .map_err(Error::Failed)?;
        let tree = &g.tree;
        let hall = tree.placements[tree.daughters(tree.world).start as usize].bbox;
        let (pts, dirs) = zoo::rays_in_box(
            &Aabb {
                min: hall.min,
                max: hall.max,
            },
            n,
            7,
        );
        let mut answers: Vec<Vec<(u64, u64)>> = Vec::new();
        for (label, nav) in [("bvh", Navigator::new(tree)), ("linear", Navigator::linear(tree))] {
            ctl.check()?;
            let t0 = Instant::now();
            let paths: Vec<_> = pts.iter().map(|&p| nav.locate(p)).collect();
            let t_locate = t0.elapsed().as_secs_f64();
            let t1 = Instant::now();
            let mut out = Vec::with_capacity(n);
            for i in 0..n {
                let Some(path) = &paths[i] else { continue };
                let (d, what) = nav.find_next_step(path, pts[i], dirs[i], f64::INFINITY);
                let code = match what {
                    crate::geo::Boundary::Enter(k) => u64::from(k),
                    crate::geo::Boundary::Exit => u64::MAX,
                    crate::geo::Boundary::None => u64::MAX - 1,
                };
                out.push((d.to_bits(), code));
            }
            let t_next = t1.elapsed().as_secs_f64();
            let t2 = Instant::now();
            for i in 0..n {
                let Some(path) = &paths[i] else { continue };
                out.push((nav.safety(path, pts[i]).to_bits(), path.top().map_or(u64::MAX, u64::from)));
            }
            let t_safety = t2.elapsed().as_secs_f64();
            answers.push(out);
            let located = paths.iter().filter(|p| p.is_some()).count() as f64;
            let (lr, nr, sr) = (n as f64 / t_locate, located / t_next, located / t_safety);
            lines(&format!(
                "{daughters:>9} {label:>10} {lr:>12.3e} {nr:>12.3e} {sr:>12.3e} {:>10}",
                if label == "bvh" { tree.bvh.nodes.len() } else { 0 }
            ));
            rows.push(serde_json::json!({"daughters": daughters, "navigator": label, "points": n, "locate_per_s": lr, "next_step_per_s": nr, "safety_per_s": sr, "tree_nodes": tree.bvh.nodes.len(), "tree_depth": tree.bvh.depth}));
        }
        if answers[0] != answers[1] {
            let bad = answers[0].iter().zip(&answers[1]).filter(|(a, b)| a != b).count();
            return Err(Error::Failed(format!(
                "crowd of {daughters}: {bad} answers differ between the trees and the linear loop"
            )));
        }
    }
    json_text(&serde_json::json!({"benchmark": "em-crowd-navigation-cpu", "points": n, "runs": rows, "version": env!("CARGO_PKG_VERSION")}))
}

/// The example detector of docs/em.md, built into the binary (the benchmark needs no file).
pub const SIMPLE_CMS_GDML: &str = include_str!("../../../examples/em/simple-cms.gdml");
/// simple-cms: the primary's direction (from the origin; the ECAL barrel at r = 1.29 m).
pub const SIMPLE_CMS_DIRECTION: [f64; 3] = [1.0, 0.0, 0.1];
/// simple-cms: the solenoid's field along z [T].
pub const SIMPLE_CMS_FIELD_T: f64 = 3.8;

/// 10 GeV e⁻ from the origin along [`SIMPLE_CMS_DIRECTION`] into simple-cms (1 mm cuts), per
/// thread count and field set-up: none, uniform 3.8 T along z (helix), and a map of the same
/// field on an (r, z) grid covering the world (Dormand–Prince): events/s, track-steps/s, and
/// charged and neutral steps per event. On a GPU (`--device cuda`, or `auto` with one): the
/// same showers without a field and in the uniform 3.8 T (the benchmark: the helix's
/// twins, `kernels/field/*.cuh`), `gpu_events` × 3/10 events each in fast and precise mode,
/// with the ratio to the one-thread CPU row of the same field (the map is not on the GPU yet:
/// no twin of its Runge–Kutta stepping).
fn simple_cms(o: &BenchOptions, threads: &[usize], ctl: &Control, lines: Lines) -> Result<BenchReport> {
    use crate::shower::cuts::RangeCuts;
    use crate::shower::detector::{run_range, DetectorPhysics};
    use crate::shower::tables::TableOptions;
    if o.events == 0 {
        return Err(ParamError::new("events", "must be at least 1").into());
    }
    if o.gpu_events == 0 {
        return Err(ParamError::new("gpu_events", "must be at least 1").into());
    }
    let gpu = bench::gpus(ctl)?.map(|d| d[0]);
    let path = std::path::Path::new("examples/em/simple-cms.gdml");
    let gdml = crate::gdml::parse(SIMPLE_CMS_GDML, path)?;
    let world = gdml.tree.solids.bounding_box(gdml.tree.logical[gdml.tree.world as usize].solid);
    let t0 = Instant::now();
    let mut phys = DetectorPhysics::build(gdml, RangeCuts::uniform(0.1), TableOptions::default())?;
    let tables = t0.elapsed().as_secs_f64();
    let d = SIMPLE_CMS_DIRECTION;
    let norm = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
    let primary = Primary {
        particle: Particle::Electron,
        energy: 10_000.0,
        pos: [0.0; 3],
        dir: d.map(|x| x / norm),
    };
    let r_max = world
        .min
        .x
        .abs()
        .max(world.max.x.abs())
        .hypot(world.min.y.abs().max(world.max.y.abs()));
    let map = std::sync::Arc::new(crate::field::FieldMap::uniform_z(
        SIMPLE_CMS_FIELD_T,
        r_max * 1.001,
        world.min.z * 1.001,
        world.max.z * 1.001,
    ));
    lines(&format!(
        "warpdrive bench em --problem simple-cms: {} events of 10 GeV e⁻ from the origin along {:?} into {} ({} volumes; tables built in {tables:.2} s; CPU rows first)",
        o.events,
        d,
        path.display(),
        phys.volumes()
    ));
    lines(&format!(
        "{:>16} {:>8} {:>10} {:>10} {:>16} {:>14} {:>20} {:>14} {:>14}",
        "field", "threads", "seconds", "events/s", "events/s/core", "track-steps/s", "track-steps/s/core", "charged/event", "neutral/event"
    ));
    let mut rows = Vec::new();
    for field in ["none", "uniform 3.8 T", "map of 3.8 T"] {
        match field {
            "none" => phys.set_field([0.0; 3]),
            "uniform 3.8 T" => phys.set_field([0.0, 0.0, SIMPLE_CMS_FIELD_T]),
            _ => phys.set_field_map(map.clone())?,
        }
        for &n in threads {
            let (r, s) = bench::timed(ctl, n, || run_range(&phys, &primary, 0, o.events, 12345, &ctl.progress))?;
            ctl.check()?;
            let steps = r.steps[0] + r.steps[1];
            let (ev, st) = (r.events as f64 / s, steps as f64 / s);
            let per = |k: usize| r.steps[k] as f64 / r.events.max(1) as f64;
            lines(&format!(
                "{field:>16} {n:>8} {s:>10.2} {ev:>10.3} {:>16.3} {st:>14.3e} {:>20.3e} {:>14.0} {:>14.0}",
                ev / n as f64,
                st / n as f64,
                per(0),
                per(1)
            ));
            rows.push(serde_json::json!({"field": field, "threads": n, "events": r.events, "seconds": s,
                "events_per_s": ev, "events_per_s_per_core": ev / n as f64, "track_steps": steps,
                "track_steps_per_s": st, "track_steps_per_s_per_core": st / n as f64,
                "charged_steps_per_event": per(0), "neutral_steps_per_event": per(1),
                "worst_energy_balance": r.worst_balance}));
        }
    }
    let mut gpu_rows = Vec::new();
    if let Some(ordinal) = gpu {
        for (field, b) in [("none", 0.0), ("uniform 3.8 T", SIMPLE_CMS_FIELD_T)] {
            phys.set_field([0.0, 0.0, b]);
            gpu_rows.extend(simple_cms_gpu(
                field,
                o.gpu_events * 3 / 10,
                &phys,
                &primary,
                ordinal,
                &rows,
                ctl,
                lines,
            )?);
        }
        lines("GPU: no field and the uniform 3.8 T (field maps run on the GPU too; not timed here); issue target: GPU ≥ 100 × one CPU core with 10 GeV e⁻ in 3.8 T");
    }
    json_text(
        &serde_json::json!({"benchmark": "em-simple-cms", "gdml": path.display().to_string(), "primary": "e-",
        "energy_mev": 10_000.0, "direction": d, "cut_mm": 1.0, "tables_seconds": tables, "runs": rows,
        "gpu_runs": gpu_rows, "version": env!("CARGO_PKG_VERSION")}),
    )
}

/// simple-cms on GPU `ordinal` with `phys`'s field (none or uniform, labelled `field` as the
/// CPU rows are), fast and precise mode, `n` events (at least 1) after a warm-up that compiles
/// the kernel; the ratio to the one-thread CPU row of that field.
#[allow(clippy::too_many_arguments)]
fn simple_cms_gpu(
    field: &str,
    n: u64,
    phys: &crate::shower::detector::DetectorPhysics,
    primary: &Primary,
    ordinal: usize,
    cpu_rows: &[serde_json::Value],
    ctl: &Control,
    lines: Lines,
) -> Result<Vec<serde_json::Value>> {
    let n = n.max(1);
    let modes = [false, true].map(|precise| GpuShowerOptions {
        precise,
        ..GpuShowerOptions::default()
    });
    for opts in &modes {
        let warm = Primary { energy: 100.0, ..*primary };
        let _ = crate::shower::gpu::run_detector_range(phys, &warm, 0..8, 1, &[ordinal], &Progress::hidden(), opts)?;
    }
    let one_core = cpu_rows
        .iter()
        .find(|x| x["field"] == field && x["threads"] == 1)
        .map_or(f64::NAN, |x| x["events_per_s"].as_f64().unwrap_or(f64::NAN));
    lines(&format!(
        "{:>16} {:>8} {:>28} {:>8} {:>10} {:>12} {:>14} {:>16}",
        "field", "mode", "device", "events", "seconds", "events/s", "track-steps/s", "× one CPU core"
    ));
    let mut rows = Vec::new();
    for opts in &modes {
        ctl.check()?;
        let mode = if opts.precise { "precise" } else { "fast" };
        let (events, hits, st) = crate::shower::gpu::run_detector_range(phys, primary, 0..n, 12345, &[ordinal], &ctl.progress, opts)?;
        ctl.check()?;
        let r = crate::shower::detector::run_from_events(phys, primary, 0, 12345, &events, &hits);
        let steps = r.steps[0] + r.steps[1];
        let (ev, stp) = (n as f64 / st.seconds, steps as f64 / st.seconds);
        lines(&format!(
            "{field:>16} {mode:>8} {:>28} {n:>8} {:>10.3} {ev:>12.1} {stp:>14.3e} {:>16.1}",
            st.device.chars().take(28).collect::<String>(),
            st.seconds,
            ev / one_core
        ));
        rows.push(
            serde_json::json!({"field": field, "mode": mode, "device": st.device, "events": n, "seconds": st.seconds,
            "events_per_s": ev, "track_steps_per_s": stp, "registers": [st.registers.0, st.registers.1], "batches": st.batches,
            "ratio_to_one_cpu_core_here": ev / one_core, "worst_energy_balance": r.worst_balance}),
        );
    }
    Ok(rows)
}

/// The mini-app's run: 100 MeV photons in aluminium, 1-cm bins, seed 12345.
fn kn_options(tracks: u64) -> Result<RunOptions> {
    if tracks == 0 {
        return Err(ParamError::new("tracks", "must be at least 1").into());
    }
    let grid = TallyGrid::new(0.0, 1.0, 2048).map_err(Error::Failed)?;
    RunOptions::new(100.0, tracks, 12345, grid).map_err(Error::Failed)
}

fn kn(o: &BenchOptions, threads: &[usize], ctl: &Control, lines: Lines) -> Result<BenchReport> {
    let opts = kn_options(o.tracks)?;
    let physics = PhysicsList::compton_only(&Material::aluminium());
    if let Some(d) = bench::gpus(ctl)? {
        return kn_gpu(o, &physics, &opts, d[0], ctl, lines);
    }
    lines(&format!(
        "warpdrive bench em: {} photons of 100 MeV in aluminium (Klein–Nishina mini-app)",
        o.tracks
    ));
    lines(&format!(
        "{:>8} {:>12} {:>10} {:>16} {:>22}",
        "threads", "steps", "seconds", "track-steps/s", "track-steps/s/core"
    ));
    let mut rows = Vec::new();
    for &n in threads {
        let (r, s) = bench::timed(ctl, n, || crate::transport::run(&physics, &opts, &ctl.progress))?;
        ctl.check()?;
        let rate = r.steps as f64 / s;
        lines(&format!(
            "{n:>8} {:>12} {s:>10.2} {rate:>16.3e} {:>22.3e}",
            r.steps,
            rate / n as f64
        ));
        rows.push(
            serde_json::json!({"threads": n, "steps": r.steps, "seconds": s, "steps_per_s": rate, "steps_per_s_per_core": rate / n as f64}),
        );
    }
    lines("reference: Celeritas host-demo-interactor 3.67e6 track-steps/s on one core of this VM kind (spec §3.1)");
    json_text(
        &serde_json::json!({"benchmark": "em-kn-cpu", "tracks": o.tracks, "runs": rows, "celeritas_host_steps_per_s_per_core": 3.67e6, "version": env!("CARGO_PKG_VERSION")}),
    )
}

/// The mini-app on one GPU: slot counts from 2^18 to all tracks (at most 2^24), then the
/// default build against the build without its switches at the default slots.
fn kn_gpu(o: &BenchOptions, physics: &PhysicsList, opts: &RunOptions, ordinal: usize, ctl: &Control, lines: Lines) -> Result<BenchReport> {
    // Warm-up (compile/load, first touch), then the timed runs.
    let warm = RunOptions::new(100.0, 4096, 1, opts.tally).map_err(Error::Failed)?;
    let _ = crate::gpu::run(physics, &warm, ordinal, &Progress::hidden())?;
    let mut rows = Vec::new();
    let mut name = String::new();
    lines(&format!(
        "{:>10} {:>12} {:>11} {:>10} {:>16}",
        "slots", "steps", "iterations", "seconds", "track-steps/s"
    ));
    for slots in [1u64 << 18, 1 << 19, 1 << 20, 1 << 21, 1 << 22, o.tracks.min(1 << 24)] {
        if slots > o.tracks || rows.iter().any(|r: &serde_json::Value| r["slots"] == slots) {
            continue;
        }
        ctl.check()?;
        let mut opts = opts.clone();
        opts.slots = slots as usize;
        opts.hit_capacity = slots as u32;
        opts.secondary_capacity = slots as u32;
        let (r, st) = crate::gpu::run(physics, &opts, ordinal, &ctl.progress)?;
        ctl.check()?;
        let rate = r.steps as f64 / st.seconds;
        lines(&format!(
            "{slots:>10} {:>12} {:>11} {:>10.4} {rate:>16.3e}",
            r.steps, r.iterations, st.seconds
        ));
        name = format!(
            "{}, default build {:?}: step kernel {} registers",
            st.device,
            crate::gpu::DEFAULT_SWITCHES,
            st.registers
        );
        rows.push(serde_json::json!({"slots": slots, "steps": r.steps, "iterations": r.iterations, "seconds": st.seconds, "steps_per_s": rate, "registers": st.registers}));
    }
    ctl.check()?;
    let (r, st) = crate::gpu::run_with(physics, opts, ordinal, &ctl.progress, &[])?;
    ctl.check()?;
    let rate = r.steps as f64 / st.seconds;
    lines(&format!(
        "{:>10} {:>12} {:>11} {:>10.4} {rate:>16.3e}  without {:?} ({} registers)",
        opts.slots,
        r.steps,
        r.iterations,
        st.seconds,
        crate::gpu::DEFAULT_SWITCHES,
        st.registers
    ));
    rows.push(
        serde_json::json!({"slots": opts.slots, "switches": "none", "steps": r.steps, "iterations": r.iterations,
        "seconds": st.seconds, "steps_per_s": rate, "registers": st.registers}),
    );
    lines(&format!(
        "{name}; {} tracks of 100 MeV in aluminium; time = host wall clock of the whole loop",
        o.tracks
    ));
    lines("references: Celeritas mini-app on a V100 5.70e8 track-steps/s; issue target on one H100 2.5e9");
    json_text(
        &serde_json::json!({"benchmark": "em-kn-gpu", "device": name, "tracks": o.tracks, "runs": rows,
        "celeritas_v100_steps_per_s": 5.70e8, "version": env!("CARGO_PKG_VERSION")}),
    )
}

/// Events per energy: at least 1 each, and their tallies within the memory budget.
fn check_events(o: &BenchOptions, cal: &Calorimeter) -> Result<()> {
    for (param, n) in [("events", o.events), ("gpu_events", o.gpu_events)] {
        if n == 0 {
            return Err(ParamError::new(param, "must be at least 1").into());
        }
        check_event_count(cal, n, param)?;
    }
    Ok(())
}

/// TestEm3 per CPU thread count, and on the GPU (`gpu_events` events at 1 GeV and 3/10 of them
/// at 10 GeV, after a warm-up that compiles the kernel), with the GPU / one-core ratio.
fn testem3(o: &BenchOptions, threads: &[usize], ctl: &Control, lines: Lines) -> Result<BenchReport> {
    check_events(o, &Calorimeter::testem3())?;
    let gpu = bench::gpus(ctl)?.map(|d| d[0]);
    let events = o.events;
    let t0 = Instant::now();
    let phys = ShowerPhysics::testem3();
    lines(&format!(
        "warpdrive bench em --problem testem3: {events} events per energy, e⁻ into TestEm3 (tables built in {:.2} s)",
        t0.elapsed().as_secs_f64()
    ));
    lines(&format!(
        "{:>10} {:>8} {:>10} {:>12} {:>16} {:>14} {:>20}",
        "energy", "threads", "seconds", "events/s", "events/s/core", "track-steps/s", "track-steps/s/core"
    ));
    let mut rows = Vec::new();
    for energy in [1000.0, 10000.0] {
        let primary = Primary::testem3(Particle::Electron, energy);
        for &n in threads {
            let (r, s) = bench::timed(ctl, n, || crate::shower::run::run(&phys, &primary, events, 1, &ctl.progress))?;
            ctl.check()?;
            let (ev, st) = (events as f64 / s, r.total_steps() as f64 / s);
            lines(&format!(
                "{:>7} MeV {n:>8} {s:>10.2} {ev:>12.2} {:>16.2} {st:>14.3e} {:>20.3e}",
                energy,
                ev / n as f64,
                st / n as f64
            ));
            rows.push(
                serde_json::json!({"energy_mev": energy, "threads": n, "events": events, "seconds": s,
                "events_per_s": ev, "events_per_s_per_core": ev / n as f64, "track_steps": r.total_steps(),
                "track_steps_per_s": st, "track_steps_per_s_per_core": st / n as f64}),
            );
        }
    }
    let gpu_rows = match gpu {
        Some(ordinal) => testem3_gpu(o.gpu_events, &phys, ordinal, &rows, ctl, lines)?,
        None => Vec::new(),
    };
    lines(
        "reference: Geant4 10.3 TestEm3.out, 100 events of 1 GeV e⁻ on one core (2017): 2.68 s user time = 37.3 events/s \
         (analogue run; 2.35 s = 42.5 events/s with secondary biasing); issue target: GPU ≥ 200 × one CPU core of the same host",
    );
    json_text(
        &serde_json::json!({"benchmark": "em-testem3", "cpu_runs": rows, "gpu_runs": gpu_rows, "geant4_10_3_events_per_s_1gev_one_core": 42.5,
        "geant4_10_3_events_per_s_1gev_one_core_analogue_run": 37.3,
        "version": env!("CARGO_PKG_VERSION")}),
    )
}

/// Both GPU modes — fast (the default; CUDA's libm) and precise (bit-identical to the CPU) — at
/// 1 and 10 GeV, with the ratio to the one-thread CPU rows.
fn testem3_gpu(
    gpu_events: u64,
    phys: &ShowerPhysics,
    ordinal: usize,
    cpu_rows: &[serde_json::Value],
    ctl: &Control,
    lines: Lines,
) -> Result<Vec<serde_json::Value>> {
    let modes = [false, true].map(|precise| GpuShowerOptions {
        precise,
        ..GpuShowerOptions::default()
    });
    for opts in &modes {
        // Warm-up: kernel compile/load and first touch.
        let warm = Primary::testem3(Particle::Electron, 100.0);
        let _ = crate::shower::gpu::run_devices(phys, &warm, 8, 1, &[ordinal], &Progress::hidden(), opts)?;
    }
    lines(&format!(
        "{:>10} {:>8} {:>28} {:>8} {:>10} {:>12} {:>14} {:>22}",
        "energy", "mode", "device", "events", "seconds", "events/s", "track-steps/s", "× one CPU core"
    ));
    let mut rows = Vec::new();
    for (energy, opts) in [1000.0, 10000.0].into_iter().flat_map(|e| modes.iter().map(move |o| (e, o))) {
        ctl.check()?;
        let mode = if opts.precise { "precise" } else { "fast" };
        let primary = Primary::testem3(Particle::Electron, energy);
        // gpu_events at 1 GeV, 3/10 of them at 10 GeV: as many events as fill the GPU in one
        // batch (an 80 GB H100's lists hold about 3 100 events of 10 GeV; each batch runs its
        // own 20-odd generations, whose last tracks set much of the time).
        let n = if energy > 1000.0 {
            (gpu_events * 3 / 10).max(1)
        } else {
            gpu_events
        };
        let (r, st) = crate::shower::gpu::run_devices(phys, &primary, n, 1, &[ordinal], &ctl.progress, opts)?;
        ctl.check()?;
        let (ev, stp) = (n as f64 / st.seconds, r.total_steps() as f64 / st.seconds);
        let one_core = cpu_rows
            .iter()
            .filter(|x| x["energy_mev"] == energy && x["threads"] == 1)
            .map(|x| x["events_per_s"].as_f64().unwrap_or(f64::NAN))
            .next()
            .unwrap_or(f64::NAN);
        lines(&format!(
            "{:>7} MeV {mode:>8} {:>28} {n:>8} {:>10.3} {ev:>12.1} {stp:>14.3e} {:>22.1}",
            energy,
            st.device.chars().take(28).collect::<String>(),
            st.seconds,
            ev / one_core
        ));
        rows.push(
            serde_json::json!({"energy_mev": energy, "mode": mode, "device": st.device, "events": n, "seconds": st.seconds,
            "events_per_s": ev, "track_steps_per_s": stp, "registers": [st.registers.0, st.registers.1],
            "generations": st.generations, "batches": st.batches, "ratio_to_one_cpu_core_here": ev / one_core}),
        );
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpdrive_core::engine::{Device, Style};

    fn refused(o: BenchOptions) -> String {
        run(&o, &Control::new().device(Device::Cpu), &mut |_| {})
            .unwrap_err()
            .render(Style::Cli)
    }

    #[test]
    fn options_are_checked_with_their_names() {
        assert_eq!(
            "lead".parse::<Problem>().unwrap_err().render(Style::Cli),
            "--problem lead: expected kn, testem3, simple-cms or crowd"
        );
        let testem3 = |events, gpu_events| BenchOptions {
            problem: Problem::Testem3,
            events,
            gpu_events,
            ..Default::default()
        };
        assert_eq!(refused(testem3(0, 10)), "--events must be at least 1");
        assert_eq!(refused(testem3(2, 0)), "--gpu-events must be at least 1");
        assert!(
            refused(testem3(2, 1 << 50)).starts_with("--gpu-events: "),
            "{}",
            refused(testem3(2, 1 << 50))
        );
        let kn = BenchOptions {
            tracks: 0,
            ..Default::default()
        };
        assert_eq!(refused(kn), "--tracks must be at least 1");
    }

    /// simple-cms times the three field set-ups per thread count; the field changes the
    /// showers (more charged steps: curved paths are cut into chords), the thread count never.
    #[test]
    fn simple_cms_is_timed_per_field_and_thread_count() {
        let o = BenchOptions {
            problem: Problem::SimpleCms,
            events: 2,
            threads: vec![1, 2],
            ..Default::default()
        };
        let mut printed = Vec::new();
        let r = run(&o, &Control::new().device(Device::Cpu), &mut |l| printed.push(l.to_string())).unwrap();
        let v: serde_json::Value = serde_json::from_str(&r.json).unwrap();
        assert_eq!(v["benchmark"], "em-simple-cms");
        let runs = v["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 6);
        for pair in runs.chunks(2) {
            assert_eq!(
                pair[0]["track_steps"], pair[1]["track_steps"],
                "the thread count changed the physics"
            );
            assert!(pair[0]["worst_energy_balance"].as_f64().unwrap() < 1e-9);
        }
        let charged = |k: usize| runs[k]["charged_steps_per_event"].as_f64().unwrap();
        assert!(charged(2) != charged(0), "the field made no difference");
        assert!(
            printed[0].starts_with("warpdrive bench em --problem simple-cms: 2 events"),
            "{printed:?}"
        );
        assert_eq!(
            refused(BenchOptions {
                problem: Problem::SimpleCms,
                events: 0,
                ..Default::default()
            }),
            "--events must be at least 1"
        );
    }

    #[test]
    fn the_mini_app_is_timed_per_thread_count() {
        let o = BenchOptions {
            tracks: 2000,
            threads: vec![1, 2],
            ..Default::default()
        };
        let mut printed = Vec::new();
        let r = run(&o, &Control::new().device(Device::Cpu), &mut |l| printed.push(l.to_string())).unwrap();
        let v: serde_json::Value = serde_json::from_str(&r.json).unwrap();
        assert_eq!((v["benchmark"].as_str(), v["tracks"].as_u64()), (Some("em-kn-cpu"), Some(2000)));
        assert_eq!(v["runs"][1]["threads"], 2);
        assert_eq!(v["runs"][0]["steps"], v["runs"][1]["steps"], "the thread count changed the physics");
        assert!(printed[0].starts_with("warpdrive bench em: 2000 photons"), "{printed:?}");
    }
}
