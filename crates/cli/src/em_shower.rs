//! `warpdrive em testem3` and `warpdrive em calorimeter FILE`: EM showers in a layered
//! calorimeter (argument parsing and output only; the physics lives in warpdrive-em's `shower`).

use crate::{command_line, CommonArgs};
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::time::Instant;
use warpdrive_core::progress::Progress;
use warpdrive_em::shower::cuts::RangeCuts;
use warpdrive_em::shower::geometry::Calorimeter;
use warpdrive_em::shower::gpu::GpuShowerOptions;
use warpdrive_em::shower::run::run;
use warpdrive_em::shower::tables::TableOptions;
use warpdrive_em::shower::transport::{Primary, ShowerPhysics};
use warpdrive_em::shower::Particle;

use warpdrive_em::shower::reference::{Testem3Run, BIASED, UNBIASED};

/// Geant4 10.3 TestEm3's numbers for one material, from its analogue and its biased run.
fn g4_material(name: &str) -> Option<[(f64, f64); 2]> {
    let find = |run: &Testem3Run| run.edep.iter().find(|(n, _, _)| *n == name).map(|(_, m, r)| (*m, *r));
    Some([find(&UNBIASED)?, find(&BIASED)?])
}

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
    /// Output directory (summary.json, profile.parquet, events.parquet, profile.png).
    #[arg(long, short, default_value = "em-shower")]
    output: PathBuf,
    #[command(flatten)]
    common: CommonArgs,
}

impl ShowerCommand {
    /// The device and thread options of the command.
    #[must_use]
    pub fn common(&self) -> &CommonArgs {
        match self {
            ShowerCommand::Testem3(a) | ShowerCommand::Calorimeter { args: a, .. } => &a.common,
        }
    }
}

pub fn run_command(cmd: &ShowerCommand, force: bool) -> Result<()> {
    match cmd {
        ShowerCommand::Testem3(a) => shower(a, None, force),
        ShowerCommand::Calorimeter { file, args } => shower(args, Some(file), force),
    }
}

fn parse_particle(s: &str) -> Result<Particle> {
    Ok(match s {
        "e-" | "electron" => Particle::Electron,
        "e+" | "positron" => Particle::Positron,
        "gamma" | "photon" => Particle::Gamma,
        _ => bail!("--primary '{s}': use e-, e+ or gamma"),
    })
}

fn shower(a: &ShowerArgs, file: Option<&PathBuf>, force: bool) -> Result<()> {
    let start = Instant::now();
    let particle = parse_particle(&a.primary)?;
    if !(a.energy.is_finite() && a.energy > 0.0 && a.energy <= 1e7) {
        bail!("--energy {} MeV: must be in (0, 1e7] MeV", a.energy);
    }
    if !(a.cut_mm.is_finite() && a.cut_mm > 0.0 && a.cut_mm <= 1e4) {
        bail!("--cut-mm {}: must be in (0, 1e4] mm", a.cut_mm);
    }
    if a.events == 0 {
        bail!("--events must be at least 1");
    }
    let mut outs = crate::outputs(force, &[file.map(PathBuf::as_path)], &[Some(a.output.as_path())])?;
    // `auto` takes the GPUs when there are any (the CUDA twin of the loop, precise mode).
    let gpus = crate::devices(&a.common)?;
    let calorimeter = match file {
        Some(f) => Calorimeter::from_toml(f)?,
        None => Calorimeter::testem3(),
    };
    warpdrive_em::shower::run::check_event_count(&calorimeter, a.events, "--events")?;
    let cuts = RangeCuts::uniform(a.cut_mm / 10.0);
    let t_build = Instant::now();
    let phys = ShowerPhysics::build(calorimeter, cuts, TableOptions::default());
    let build_s = t_build.elapsed().as_secs_f64();
    let cal = &phys.calorimeter;
    println!(
        "em {}: {} events of {} MeV {} into {} ({} × {} layers, {} cm wide), cuts {} mm",
        if file.is_some() { "calorimeter" } else { "testem3" },
        a.events,
        a.energy,
        particle.name(),
        cal.name,
        cal.repeat,
        cal.layers.len(),
        cal.transverse,
        a.cut_mm
    );
    for m in &phys.materials {
        println!(
            "  {:<14} thresholds γ {:.5} keV, e- {:.5} keV, e+ {:.5} keV",
            m.material.name,
            m.cuts.gamma * 1e3,
            m.cuts.electron * 1e3,
            m.cuts.positron * 1e3
        );
    }
    let primary = Primary::testem3(particle, a.energy);
    let (progress, _bar) = crate::progress_bar("events", a.events, "events");
    let t0 = Instant::now();
    let (r, device) = match &gpus {
        None => (
            run(&phys, &primary, a.events, a.seed, &progress),
            format!("cpu ({} threads)", rayon::current_num_threads()),
        ),
        Some(d) => {
            let opts = GpuShowerOptions {
                precise: a.common.precise,
                ..GpuShowerOptions::default()
            };
            let (r, st) = warpdrive_em::shower::gpu::run_devices(&phys, &primary, a.events, a.seed, d, &progress, &opts)?;
            (
                r,
                format!(
                    "{} ({} mode, {:?} schedule, registers {}/{}, {} batches, {} re-runs after full lists, {} generations)",
                    st.device,
                    if st.precise { "precise" } else { "fast" },
                    st.schedule,
                    st.registers.0,
                    st.registers.1,
                    st.batches,
                    st.reruns,
                    st.generations
                ),
            )
        }
    };
    drop(progress);
    let secs = t0.elapsed().as_secs_f64();
    let per = r.per_material(&phys);
    let created = r.created();
    let (charged, neutral) = r.steps();
    let is_testem3_reference = file.is_none() && particle == Particle::Electron && a.energy == 1000.0 && a.cut_mm == 1.0;
    let mut materials = serde_json::Map::new();
    for m in &per {
        let resolution = 100.0 * m.edep_rms_mev / m.edep_mean_mev.max(1e-300) * (a.energy / 1000.0).sqrt();
        let mut v = serde_json::json!({
            "edep_mean_mev": m.edep_mean_mev, "edep_mean_error_mev": m.edep_mean_error_mev,
            "edep_rms_mev": m.edep_rms_mev, "resolution_percent_sqrt_gev": resolution,
        });
        if is_testem3_reference {
            if let Some([(mean, rms), (b_mean, b_rms)]) = g4_material(&m.name) {
                v["geant4_10_3"] = serde_json::json!({"edep_mean_mev": mean, "edep_rms_mev": rms,
                    "mean_ratio": m.edep_mean_mev / mean, "rms_ratio": m.edep_rms_mev / rms,
                    "secondary_biased_run": {"edep_mean_mev": b_mean, "edep_rms_mev": b_rms}});
            }
        }
        materials.insert(m.name.clone(), v);
    }
    let mut summary = serde_json::json!({
        "calorimeter": cal.name, "layers": cal.repeat, "slabs": cal.slabs(), "transverse_cm": cal.transverse,
        "primary": {"particle": particle.name(), "energy_mev": a.energy},
        "events": a.events, "seed": a.seed, "cut_mm": a.cut_mm,
        "materials": materials,
        "created_per_event": {"gamma": created[0], "e-": created[1], "e+": created[2]},
        "charged_track_length_cm_per_event": cal.materials.iter().zip(r.track_length())
            .map(|(m, v)| (m.name.clone(), serde_json::json!(v))).collect::<serde_json::Map<_, _>>(),
        "created_per_event_by_process": warpdrive_em::shower::transport::CREATORS.iter().zip(r.created_by())
            .map(|(k, v)| ((*k).to_string(), serde_json::json!(v))).collect::<serde_json::Map<_, _>>(),
        "steps_per_event": {"charged": charged, "neutral": neutral},
        "escaped_mev_per_event": r.escaped(),
        "worst_energy_balance_relative": r.worst_balance(),
        "killed_tracks": r.killed(),
        "result_checksum": format!("{:016x}", r.checksum()),
        "thresholds_kev": phys.materials.iter().map(|m| serde_json::json!({"material": m.material.name,
            "gamma": m.cuts.gamma * 1e3, "e-": m.cuts.electron * 1e3, "e+": m.cuts.positron * 1e3})).collect::<Vec<_>>(),
        "timings": {"device": device, "tables_seconds": build_s, "transport_seconds": secs,
            "events_per_second": a.events as f64 / secs, "track_steps_per_second": r.total_steps() as f64 / secs,
            "total_seconds": start.elapsed().as_secs_f64()},
        "command": command_line(), "version": env!("CARGO_PKG_VERSION"),
    });
    if is_testem3_reference {
        let [g, e, p] = UNBIASED.created;
        let [bg, be, bp] = BIASED.created;
        summary["created_per_event"]["geant4_10_3"] = serde_json::json!({"gamma": g, "e-": e, "e+": p,
            "secondary_biased_run": {"gamma": bg, "e-": be, "e+": bp}});
        summary["steps_per_event"]["geant4_10_3"] = serde_json::json!({"charged": UNBIASED.steps[0], "neutral": UNBIASED.steps[1]});
    }
    let dir = outs.dir(&a.output)?;
    let meta = vec![
        ("warpdrive.version".to_string(), env!("CARGO_PKG_VERSION").to_string()),
        ("warpdrive.command".to_string(), command_line()),
        ("warpdrive.seed".to_string(), a.seed.to_string()),
        ("em.events".to_string(), a.events.to_string()),
        ("em.primary".to_string(), format!("{} {} MeV", particle.name(), a.energy)),
        ("em.calorimeter".to_string(), cal.name.clone()),
    ];
    warpdrive_em::shower::output::profile_table(&r, &phys, &meta)
        .write_parquet(&dir.join("profile.parquet"))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    warpdrive_em::shower::output::events_table(&r, &phys, &meta)
        .write_parquet(&dir.join("events.parquet"))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let title = format!(
        "{} MeV {} in {}: energy per layer ({} events)",
        a.energy,
        particle.name(),
        cal.name,
        a.events
    );
    warpdrive_em::shower::output::plot_profile(&dir.join("profile.png"), &r, &phys, &title)?;
    std::fs::write(dir.join("summary.json"), serde_json::to_string_pretty(&summary)? + "\n")
        .with_context(|| format!("writing {}", a.output.display()))?;
    outs.commit()?;
    for m in &per {
        let reference = if is_testem3_reference {
            g4_material(&m.name)
                .map(|[(mean, rms), (b_mean, _)]| format!("   (Geant4 10.3: {mean} MeV, RMS {rms} MeV; biased run {b_mean})"))
                .unwrap_or_default()
        } else {
            String::new()
        };
        println!(
            "  {:<14} {:>9.3} ± {:.3} MeV per event, RMS {:.3} MeV{reference}",
            m.name, m.edep_mean_mev, m.edep_mean_error_mev, m.edep_rms_mev
        );
    }
    println!(
        "  created per event: {:.1} γ, {:.1} e-, {:.2} e+{}",
        created[0],
        created[1],
        created[2],
        if is_testem3_reference {
            let [g, e, p] = UNBIASED.created;
            format!("   (Geant4 10.3: {g} γ, {e} e-, {p} e+)")
        } else {
            String::new()
        }
    );
    let by: Vec<String> = warpdrive_em::shower::transport::CREATORS
        .iter()
        .zip(r.created_by())
        .map(|(k, v)| format!("{k} {v:.1}"))
        .collect();
    println!("  created by: {}", by.join(", "));
    let tl: Vec<String> = cal
        .materials
        .iter()
        .zip(r.track_length())
        .map(|(m, v)| format!("{} {v:.2} cm", m.name))
        .collect();
    println!(
        "  charged track length per event: {}{}",
        tl.join(", "),
        if is_testem3_reference {
            "   (Geant4 10.3: Lead 52.2 cm, liquidArgon 100 cm)"
        } else {
            ""
        }
    );
    println!(
        "  steps per event: {charged:.1} charged, {neutral:.1} neutral; escaped {:.3} MeV per event",
        r.escaped()
    );
    println!(
        "  transport {secs:.2} s on {device}: {:.1} events/s, {:.3e} track-steps/s; energy balance worst {:.1e}",
        a.events as f64 / secs,
        r.total_steps() as f64 / secs,
        r.worst_balance()
    );
    println!(
        "  output: {}/{{summary.json, profile.parquet, events.parquet, profile.png}}",
        a.output.display()
    );
    Ok(())
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
