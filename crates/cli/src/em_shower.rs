//! `warpdrive em testem3` and `warpdrive em calorimeter FILE`: EM showers in a layered
//! calorimeter (argument parsing and output only; the run is `warpdrive_em::engine::Shower`).

use crate::{command_line, CommonArgs};
use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::time::Instant;
use warpdrive_core::progress::{Bar, Progress};
use warpdrive_em::engine::{self, CalorimeterChoice, Shower, ShowerOptions};
use warpdrive_em::shower::geometry::Calorimeter;
use warpdrive_em::shower::gpu::GpuShowerOptions;
use warpdrive_em::shower::reference::UNBIASED;
use warpdrive_em::shower::run::run;
use warpdrive_em::shower::transport::{Primary, ShowerPhysics, CREATORS};
use warpdrive_em::shower::Particle;

#[derive(Subcommand)]
pub enum ShowerCommand {
    /// Geant4's TestEm3: 50 × [2.3 mm lead + 5.7 mm liquid argon], 40 cm wide (docs/em.md).
    Testem3(ShowerArgs),
    /// Any layered calorimeter described in a TOML file (docs/em.md).
    Calorimeter {
        /// Calorimeter TOML: name, repeat, transverse [cm], [[layers]] material + thickness [cm].
        file: PathBuf,
        #[command(flatten)]
        args: ShowerArgs,
    },
}

#[derive(Args)]
pub struct ShowerArgs {
    /// Primary particle: e-, e+ or gamma (starts on the axis in front of the calorimeter, along +z).
    #[arg(long, default_value = "e-")]
    primary: String,
    /// Primary kinetic energy [MeV].
    #[arg(long, default_value_t = 1000.0, allow_hyphen_values = true)]
    energy: f64,
    /// Number of events.
    #[arg(long, default_value_t = 1000)]
    events: u64,
    /// Random seed (every track draws from its own Philox stream keyed by the seed and its id).
    #[arg(long, default_value_t = 12345)]
    seed: u64,
    /// Production cut for γ, e⁻ and e⁺, as a range [mm] (Geant4's default 1 mm; converted to an
    /// energy threshold per material and particle).
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true)]
    cut_mm: f64,
    /// Output directory (summary.json, run.json, profile.parquet, events.parquet, profile.png).
    #[arg(long, short, default_value = "em-shower")]
    output: PathBuf,
    #[command(flatten)]
    common: CommonArgs,
}

pub fn run_command(cmd: &ShowerCommand, force: bool) -> Result<()> {
    match cmd {
        ShowerCommand::Testem3(a) => shower(a, CalorimeterChoice::Testem3, force),
        ShowerCommand::Calorimeter { file, args } => shower(args, CalorimeterChoice::File(file.clone()), force),
    }
}

fn shower(a: &ShowerArgs, calorimeter: CalorimeterChoice, force: bool) -> Result<()> {
    let ctl = a.common.control()?;
    let opts = ShowerOptions {
        primary: a.primary.parse()?,
        energy: a.energy,
        events: a.events,
        seed: a.seed,
        cut_mm: a.cut_mm,
    };
    let kind = match calorimeter {
        CalorimeterChoice::Testem3 => "testem3",
        CalorimeterChoice::File(_) => "calorimeter",
    };
    let req = Shower::new(calorimeter, &opts)?;
    let out = engine::prepare_output(&a.output, force, req.inputs())?;
    let cal = req.calorimeter();
    println!(
        "em {kind}: {} events of {} MeV {} into {} ({} × {} layers, {} cm wide), cuts {} mm",
        a.events,
        a.energy,
        opts.primary.name(),
        cal.name,
        cal.repeat,
        cal.layers.len(),
        cal.transverse,
        a.cut_mm
    );
    let bar = Bar::show(&ctl.progress);
    let r = req.run(&ctl)?;
    drop(bar);
    for m in &r.physics.materials {
        println!(
            "  {:<14} thresholds γ {:.5} keV, e- {:.5} keV, e+ {:.5} keV",
            m.material.name,
            m.cuts.gamma * 1e3,
            m.cuts.electron * 1e3,
            m.cuts.positron * 1e3
        );
    }
    for note in r.save(out, true, &command_line())? {
        eprintln!("warning: {note}");
    }
    print_result(&r, &a.output);
    Ok(())
}

/// The result lines (Geant4 10.3's numbers beside ours for its set-up).
fn print_result(r: &warpdrive_em::engine::ShowerResult, output: &std::path::Path) {
    let reference = r.is_testem3_reference();
    for m in r.per_material() {
        let g4 = r
            .geant4(&m.name)
            .map(|[(mean, rms), (b_mean, _)]| format!("   (Geant4 10.3: {mean} MeV, RMS {rms} MeV; biased run {b_mean})"))
            .unwrap_or_default();
        println!(
            "  {:<14} {:>9.3} ± {:.3} MeV per event, RMS {:.3} MeV{g4}",
            m.name, m.edep_mean_mev, m.edep_mean_error_mev, m.edep_rms_mev
        );
    }
    let created = r.run.created();
    println!(
        "  created per event: {:.1} γ, {:.1} e-, {:.2} e+{}",
        created[0],
        created[1],
        created[2],
        if reference {
            let [g, e, p] = UNBIASED.created;
            format!("   (Geant4 10.3: {g} γ, {e} e-, {p} e+)")
        } else {
            String::new()
        }
    );
    let by: Vec<String> = CREATORS
        .iter()
        .zip(r.run.created_by())
        .map(|(k, v)| format!("{k} {v:.1}"))
        .collect();
    println!("  created by: {}", by.join(", "));
    let tl: Vec<String> = r
        .physics
        .calorimeter
        .materials
        .iter()
        .zip(r.run.track_length())
        .map(|(m, v)| format!("{} {v:.2} cm", m.name))
        .collect();
    println!(
        "  charged track length per event: {}{}",
        tl.join(", "),
        if reference {
            "   (Geant4 10.3: Lead 52.2 cm, liquidArgon 100 cm)"
        } else {
            ""
        }
    );
    let (charged, neutral) = r.run.steps();
    println!(
        "  steps per event: {charged:.1} charged, {neutral:.1} neutral; escaped {:.3} MeV per event",
        r.run.escaped()
    );
    println!(
        "  tables {:.2} s{}; transport {:.2} s on {}: {:.1} events/s, {:.3e} track-steps/s; energy balance worst {:.1e}",
        r.tables_seconds,
        if r.tables_cached { " (cached)" } else { "" },
        r.transport_seconds,
        r.device,
        r.events_per_second(),
        r.track_steps_per_second(),
        r.run.worst_balance()
    );
    println!(
        "  output: {}/{{summary.json, run.json, profile.parquet, events.parquet, profile.png}}",
        output.display()
    );
}

/// `warpdrive bench em --problem testem3`: events/s and track-steps/s of 1 GeV and 10 GeV e⁻ in
/// TestEm3 per CPU thread count, and with `--device cuda[:N]` on the GPU (`gpu_events` events at
/// 1 GeV and 3/10 of them at 10 GeV, after a warm-up that compiles the kernel), with the GPU /
/// one-core ratio.
pub fn bench_testem3(events: u64, gpu_events: u64, threads: &[usize], device: &str, json: &std::path::Path) -> Result<()> {
    if events == 0 || gpu_events == 0 {
        bail!("--events and --gpu-events must be at least 1");
    }
    let gpu = match device {
        "cpu" => None,
        d => Some(warpdrive_core::cuda::parse_devices(d)?.first().copied().unwrap_or(0)),
    };
    let cal = Calorimeter::testem3();
    warpdrive_em::shower::run::check_event_count(&cal, events, "--events")?;
    warpdrive_em::shower::run::check_event_count(&cal, gpu_events, "--gpu-events")?;
    let mut threads = threads.to_vec();
    if threads.is_empty() {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        threads = if n > 1 { vec![1, n] } else { vec![1] };
    }
    let t0 = Instant::now();
    let phys = ShowerPhysics::testem3();
    println!(
        "warpdrive bench em --problem testem3: {events} events per energy, e⁻ into TestEm3 (tables built in {:.2} s)",
        t0.elapsed().as_secs_f64()
    );
    println!(
        "{:>10} {:>8} {:>10} {:>12} {:>16} {:>14} {:>20}",
        "energy", "threads", "seconds", "events/s", "events/s/core", "track-steps/s", "track-steps/s/core"
    );
    let mut rows = Vec::new();
    for energy in [1000.0, 10000.0] {
        let primary = Primary::testem3(Particle::Electron, energy);
        for &n in &threads {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(n).build()?;
            let t = Instant::now();
            let r = pool.install(|| run(&phys, &primary, events, 1, &Progress::hidden()));
            let s = t.elapsed().as_secs_f64();
            let (ev, st) = (events as f64 / s, r.total_steps() as f64 / s);
            println!(
                "{:>7} MeV {n:>8} {s:>10.2} {ev:>12.2} {:>16.2} {st:>14.3e} {:>20.3e}",
                energy,
                ev / n as f64,
                st / n as f64
            );
            rows.push(
                serde_json::json!({"energy_mev": energy, "threads": n, "events": events, "seconds": s,
                "events_per_s": ev, "events_per_s_per_core": ev / n as f64, "track_steps": r.total_steps(),
                "track_steps_per_s": st, "track_steps_per_s_per_core": st / n as f64}),
            );
        }
    }
    let mut gpu_rows = Vec::new();
    if let Some(ordinal) = gpu {
        // Both GPU modes: fast (the default; CUDA's libm) and precise (bit-identical to the CPU).
        let modes = [false, true].map(|precise| GpuShowerOptions {
            precise,
            ..GpuShowerOptions::default()
        });
        for opts in &modes {
            // Warm-up: kernel compile/load and first touch.
            let _ = warpdrive_em::shower::gpu::run_devices(
                &phys,
                &Primary::testem3(Particle::Electron, 100.0),
                8,
                1,
                &[ordinal],
                &Progress::hidden(),
                opts,
            )?;
        }
        println!(
            "{:>10} {:>8} {:>28} {:>8} {:>10} {:>12} {:>14} {:>22}",
            "energy", "mode", "device", "events", "seconds", "events/s", "track-steps/s", "× one CPU core"
        );
        for (energy, opts) in [1000.0, 10000.0].into_iter().flat_map(|e| modes.iter().map(move |o| (e, o))) {
            let mode = if opts.precise { "precise" } else { "fast" };
            let primary = Primary::testem3(Particle::Electron, energy);
            // gpu_events at 1 GeV, 3/10 of them at 10 GeV: as many events as fill the GPU in one
            // batch (an 80 GB H100's lists hold about 3 100 events of 10 GeV; each batch runs its
            // own 20-odd generations, whose last tracks set much of the time).
            let gpu_events = if energy > 1000.0 {
                (gpu_events * 3 / 10).max(1)
            } else {
                gpu_events
            };
            let (r, st) = warpdrive_em::shower::gpu::run_devices(&phys, &primary, gpu_events, 1, &[ordinal], &Progress::hidden(), opts)?;
            let (ev, stp) = (gpu_events as f64 / st.seconds, r.total_steps() as f64 / st.seconds);
            let one_core = rows
                .iter()
                .filter(|x: &&serde_json::Value| x["energy_mev"] == energy && x["threads"] == 1)
                .map(|x| x["events_per_s"].as_f64().unwrap_or(f64::NAN))
                .next()
                .unwrap_or(f64::NAN);
            println!(
                "{:>7} MeV {mode:>8} {:>28} {gpu_events:>8} {:>10.3} {ev:>12.1} {stp:>14.3e} {:>22.1}",
                energy,
                st.device.chars().take(28).collect::<String>(),
                st.seconds,
                ev / one_core
            );
            gpu_rows.push(
                serde_json::json!({"energy_mev": energy, "mode": mode, "device": st.device, "events": gpu_events, "seconds": st.seconds,
                "events_per_s": ev, "track_steps_per_s": stp, "registers": [st.registers.0, st.registers.1],
                "generations": st.generations, "batches": st.batches, "ratio_to_one_cpu_core_here": ev / one_core}),
            );
        }
    }
    println!(
        "reference: Geant4 10.3 TestEm3.out, 100 events of 1 GeV e⁻ on one core (2017): 2.68 s user time = 37.3 events/s \
         (analogue run; 2.35 s = 42.5 events/s with secondary biasing); issue target: GPU ≥ 200 × one CPU core of the same host"
    );
    let out = serde_json::json!({"benchmark": "em-testem3", "cpu_runs": rows, "gpu_runs": gpu_rows, "geant4_10_3_events_per_s_1gev_one_core": 42.5,
        "geant4_10_3_events_per_s_1gev_one_core_analogue_run": 37.3,
        "version": env!("CARGO_PKG_VERSION")});
    warpdrive_core::table::write_atomic(json, (serde_json::to_string_pretty(&out)? + "\n").as_bytes())?;
    Ok(())
}
