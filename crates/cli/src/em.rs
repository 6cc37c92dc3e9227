//! `warpdrive em` and `warpdrive bench em`: argument parsing and output only; the physics lives
//! in warpdrive-em.

use crate::{command_line, devices, CommonArgs};
use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Instant;
use warpdrive_core::progress::Progress;
use warpdrive_em::material::Material;
use warpdrive_em::physics::PhysicsList;
use warpdrive_em::transport::{run, RunOptions, RunResult, TallyGrid};

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct EmArgs {
    /// EM showers in a calorimeter (without a subcommand: the Klein–Nishina mini-app).
    #[command(subcommand)]
    pub shower: Option<crate::em_shower::ShowerCommand>,
    /// Primary photon energy [MeV] (photons start at the origin along +z).
    #[arg(long, default_value_t = 100.0, allow_hyphen_values = true)]
    energy: f64,
    /// Number of primary photons.
    #[arg(long, default_value_t = 1 << 20)]
    tracks: u64,
    /// Random seed (track i draws from the Philox stream (seed, i)).
    #[arg(long, default_value_t = 12345)]
    seed: u64,
    /// Material: 'aluminium' (built in, G4_Al) or a TOML file (docs/em.md).
    #[arg(long, default_value = "aluminium")]
    material: String,
    /// Tally: lower edge of the first z bin [cm].
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    tally_front: f64,
    /// Tally: bin width [cm].
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true)]
    tally_width: f64,
    /// Tally: number of bins.
    #[arg(long, default_value_t = 2048)]
    tally_bins: usize,
    /// Track slots in flight at once.
    #[arg(long)]
    slots: Option<usize>,
    /// Capacity of the hit and secondary stacks per iteration (default: one per slot).
    #[arg(long)]
    stack_capacity: Option<u32>,
    /// Overlay a reference profile on the plot (one MeV/cm value per 1-cm bin per line, e.g.
    /// $WARPDRIVE_DATA/em/g4-edep-100MeV-60k-1.0cm.txt).
    #[arg(long)]
    compare: Option<PathBuf>,
    /// Output directory (edep.parquet, edep.png, summary.json).
    #[arg(long, short, default_value = "em-out")]
    output: PathBuf,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// The summary numbers printed and written to summary.json.
fn summary(r: &RunResult, grid: &TallyGrid) -> serde_json::Value {
    serde_json::json!({
        "tracks": r.tracks,
        "steps": r.steps,
        "steps_per_track": r.steps_per_track(),
        "mean_deposition_depth_cm": r.mean_depth(),
        "energy_beyond_cm_mev": {
            "100": r.energy_beyond(grid, 100.0),
            "200": r.energy_beyond(grid, 200.0),
            "500": r.energy_beyond(grid, 500.0),
        },
        "energy_deposited_per_primary_mev": r.profile().iter().sum::<f64>(),
        "secondaries": r.secondaries,
        "iterations": r.iterations,
        "retries_after_full_stacks": r.retries,
        "result_checksum": r.checksum(),
    })
}

pub fn em(a: &EmArgs, force: bool) -> Result<()> {
    let start = Instant::now();
    let material_file = Path::new(&a.material);
    let mut outs = crate::outputs(
        force,
        &[a.compare.as_deref(), material_file.exists().then_some(material_file)],
        &[Some(a.output.as_path())],
    )?;
    let material = Material::from_name_or_file(&a.material)?;
    let grid = TallyGrid::new(a.tally_front, a.tally_width, a.tally_bins).map_err(anyhow::Error::msg)?;
    let mut opts = RunOptions::new(a.energy, a.tracks, a.seed, grid).map_err(anyhow::Error::msg)?;
    if let Some(s) = a.slots {
        if s == 0 {
            bail!("--slots must be at least 1");
        }
        opts.slots = s;
        opts.hit_capacity = s as u32;
        opts.secondary_capacity = s as u32;
    }
    if let Some(c) = a.stack_capacity {
        if c == 0 {
            bail!("--stack-capacity must be at least 1");
        }
        opts.hit_capacity = c;
        opts.secondary_capacity = c;
    }
    let gpus = devices(&a.common)?;
    let reference = match &a.compare {
        Some(p) => Some(warpdrive_em::output::read_profile(p)?),
        None => None,
    };
    let physics = PhysicsList::compton_only(&material);
    println!(
        "em: {} photons of {} MeV along +z in {} (ρ = {} g/cm³), Compton only, kill below 10 keV",
        a.tracks, a.energy, material.name, material.density
    );
    let (progress, _bar) = crate::progress_bar("tracks", a.tracks, "tracks");
    let t0 = Instant::now();
    let (r, device) = match &gpus {
        None => (
            run(&physics, &opts, &progress),
            format!("cpu ({} threads)", rayon::current_num_threads()),
        ),
        Some(d) => {
            let (r, st) = warpdrive_em::gpu::run_devices(&physics, &opts, d, &progress)?;
            (r, format!("{} ({} registers)", st.device, st.registers))
        }
    };
    drop(progress);
    let secs = t0.elapsed().as_secs_f64();
    let mut s = summary(&r, &grid);
    s["run"] = serde_json::json!({
        "energy_mev": a.energy, "material": material.name, "seed": a.seed,
        "command": command_line(), "version": env!("CARGO_PKG_VERSION"),
        "tally": {"front_cm": grid.front, "width_cm": grid.delta, "bins": grid.size},
    });
    // Machine-dependent facts go to run.json, so identical results give identical data files.
    let environment = serde_json::json!({
        "device": device, "transport_seconds": secs, "track_steps_per_second": r.steps as f64 / secs,
        "total_seconds": start.elapsed().as_secs_f64(),
    });
    let dir = outs.dir(&a.output)?;
    let meta = vec![
        ("warpdrive.version".to_string(), env!("CARGO_PKG_VERSION").to_string()),
        ("warpdrive.command".to_string(), command_line()),
        ("warpdrive.seed".to_string(), a.seed.to_string()),
        ("em.tracks".to_string(), a.tracks.to_string()),
        ("em.energy_mev".to_string(), a.energy.to_string()),
        ("em.material".to_string(), material.name.clone()),
    ];
    warpdrive_em::output::write_profile(&dir.join("edep.parquet"), &grid, &r, &meta).map_err(anyhow::Error::msg)?;
    let title = format!("{} MeV photons in {}: energy deposition", a.energy, material.name);
    let label = a.compare.as_ref().map(|p| {
        p.file_name()
            .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned())
    });
    warpdrive_em::output::plot_profile(
        &dir.join("edep.png"),
        &grid,
        &r,
        &title,
        reference.as_ref().map(|v| (label.as_deref().unwrap_or("reference"), v.as_slice())),
    )?;
    std::fs::write(dir.join("summary.json"), serde_json::to_string_pretty(&s)? + "\n")
        .with_context(|| format!("writing {}", a.output.display()))?;
    std::fs::write(dir.join("run.json"), serde_json::to_string_pretty(&environment)? + "\n")
        .with_context(|| format!("writing {}", a.output.display()))?;
    outs.commit()?;
    println!(
        "steps:           {} ({:.3} per track); result checksum {}",
        r.steps,
        r.steps_per_track(),
        r.checksum()
    );
    println!(
        "mean depth:      {:.2} cm (Geant4 reference for 100 MeV in Al: 176.06 cm)",
        r.mean_depth()
    );
    println!(
        "beyond 100/200/500 cm: {:.3} / {:.3} / {:.3} MeV per primary (Geant4: 57.95 / 32.77 / 5.40)",
        r.energy_beyond(&grid, 100.0),
        r.energy_beyond(&grid, 200.0),
        r.energy_beyond(&grid, 500.0)
    );
    println!(
        "transport:       {secs:.2} s, {:.3e} track-steps/s on {device}",
        r.steps as f64 / secs
    );
    println!(
        "output:          {}/{{edep.parquet, edep.png, summary.json, run.json}}",
        a.output.display()
    );
    Ok(())
}

#[derive(Args)]
pub struct BenchEm {
    /// Problem: kn (the Klein–Nishina mini-app) or testem3 (EM showers in Geant4's TestEm3, 1 and 10 GeV e⁻).
    #[arg(long, default_value = "kn")]
    problem: String,
    /// testem3: events per energy on the CPU.
    #[arg(long, default_value_t = 200)]
    events: u64,
    /// testem3: GPU events at 1 GeV, and 3/10 of them at 10 GeV: enough to fill the GPU (a
    /// 1 GeV event's first generations hold one track; 2 000 events run at 2/3 of the rate of
    /// 10 000 on an H100) in one batch at both energies.
    #[arg(long, default_value_t = 10_000)]
    gpu_events: u64,
    /// Tracks (the spec's benchmark: 8 388 608 on a GPU).
    #[arg(long, default_value_t = 1 << 18)]
    tracks: u64,
    /// CPU thread counts to time (default: 1 and all cores).
    #[arg(long, value_delimiter = ',')]
    threads: Vec<usize>,
    /// auto (a GPU if CUDA works, else the CPU), cpu, or cuda / cuda:N (cuda:all where the benchmark supports it).
    #[arg(long, default_value = "auto")]
    pub(crate) device: String,
    /// JSON result file.
    #[arg(long, default_value = "bench-em.json")]
    pub(crate) json: PathBuf,
}

pub fn bench(b: &BenchEm) -> Result<()> {
    crate::bench::check_threads(&b.threads)?;
    match b.problem.as_str() {
        "kn" => {}
        "testem3" => return crate::em_shower::bench_testem3(b.events, b.gpu_events, &b.threads, &b.device, &b.json),
        p => bail!("--problem {p}: expected kn or testem3"),
    }
    let physics = PhysicsList::compton_only(&Material::aluminium());
    let grid = TallyGrid::new(0.0, 1.0, 2048).map_err(anyhow::Error::msg)?;
    let opts = RunOptions::new(100.0, b.tracks, 12345, grid).map_err(anyhow::Error::msg)?;
    if b.device != "cpu" {
        let ordinal = warpdrive_core::cuda::parse_devices(&b.device)?.first().copied().unwrap_or(0);
        // Warm-up (compile/load, first touch), then the timed run.
        let warm = RunOptions::new(100.0, 4096, 1, grid).map_err(anyhow::Error::msg)?;
        let _ = warpdrive_em::gpu::run(&physics, &warm, ordinal, &Progress::hidden())?;
        let mut rows = Vec::new();
        let mut name = String::new();
        println!(
            "{:>10} {:>12} {:>11} {:>10} {:>16}",
            "slots", "steps", "iterations", "seconds", "track-steps/s"
        );
        for slots in [1u64 << 18, 1 << 19, 1 << 20, 1 << 21, 1 << 22, b.tracks.min(1 << 24)] {
            if slots > b.tracks || rows.iter().any(|r: &serde_json::Value| r["slots"] == slots) {
                continue;
            }
            let mut opts = opts.clone();
            opts.slots = slots as usize;
            opts.hit_capacity = slots as u32;
            opts.secondary_capacity = slots as u32;
            let (r, st) = warpdrive_em::gpu::run(&physics, &opts, ordinal, &Progress::hidden())?;
            let rate = r.steps as f64 / st.seconds;
            println!(
                "{slots:>10} {:>12} {:>11} {:>10.4} {rate:>16.3e}",
                r.steps, r.iterations, st.seconds
            );
            name = format!(
                "{}, default build {:?}: step kernel {} registers",
                st.device,
                warpdrive_em::gpu::DEFAULT_SWITCHES,
                st.registers
            );
            rows.push(serde_json::json!({"slots": slots, "steps": r.steps, "iterations": r.iterations, "seconds": st.seconds, "steps_per_s": rate, "registers": st.registers}));
        }
        // The default build against the build without its switches, at the default slots.
        {
            let (r, st) = warpdrive_em::gpu::run_with(&physics, &opts, ordinal, &Progress::hidden(), &[])?;
            let rate = r.steps as f64 / st.seconds;
            println!(
                "{:>10} {:>12} {:>11} {:>10.4} {rate:>16.3e}  without {:?} ({} registers)",
                opts.slots,
                r.steps,
                r.iterations,
                st.seconds,
                warpdrive_em::gpu::DEFAULT_SWITCHES,
                st.registers
            );
            rows.push(
                serde_json::json!({"slots": opts.slots, "switches": "none", "steps": r.steps, "iterations": r.iterations,
                "seconds": st.seconds, "steps_per_s": rate, "registers": st.registers}),
            );
        }
        println!(
            "{name}; {} tracks of 100 MeV in aluminium; time = host wall clock of the whole loop",
            b.tracks
        );
        println!("references: Celeritas mini-app on a V100 5.70e8 track-steps/s; issue target on one H100 2.5e9");
        let json = serde_json::json!({"benchmark": "em-kn-gpu", "device": name, "tracks": b.tracks, "runs": rows,
            "celeritas_v100_steps_per_s": 5.70e8, "version": env!("CARGO_PKG_VERSION")});
        warpdrive_core::table::write_atomic(&b.json, (serde_json::to_string_pretty(&json)? + "\n").as_bytes())?;
        return Ok(());
    }
    let mut threads = b.threads.clone();
    if threads.is_empty() {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        threads = if n > 1 { vec![1, n] } else { vec![1] };
    }
    println!(
        "warpdrive bench em: {} photons of 100 MeV in aluminium (Klein–Nishina mini-app)",
        b.tracks
    );
    println!(
        "{:>8} {:>12} {:>10} {:>16} {:>22}",
        "threads", "steps", "seconds", "track-steps/s", "track-steps/s/core"
    );
    let mut rows = Vec::new();
    for &n in &threads {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(n).build()?;
        let t0 = Instant::now();
        let r = pool.install(|| run(&physics, &opts, &Progress::hidden()));
        let s = t0.elapsed().as_secs_f64();
        let rate = r.steps as f64 / s;
        println!("{n:>8} {:>12} {s:>10.2} {rate:>16.3e} {:>22.3e}", r.steps, rate / n as f64);
        rows.push(
            serde_json::json!({"threads": n, "steps": r.steps, "seconds": s, "steps_per_s": rate, "steps_per_s_per_core": rate / n as f64}),
        );
    }
    println!("reference: Celeritas host-demo-interactor 3.67e6 track-steps/s on one core of this VM kind (spec §3.1)");
    let json = serde_json::json!({"benchmark": "em-kn-cpu", "tracks": b.tracks, "runs": rows, "celeritas_host_steps_per_s_per_core": 3.67e6, "version": env!("CARGO_PKG_VERSION")});
    warpdrive_core::table::write_atomic(&b.json, (serde_json::to_string_pretty(&json)? + "\n").as_bytes())?;
    Ok(())
}
