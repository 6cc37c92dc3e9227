//! `warpdrive em` and `warpdrive bench em`: argument parsing and output only; the run is
//! `warpdrive_em::engine::KleinNishina`.

use crate::{command_line, CommonArgs};
use anyhow::{bail, Result};
use clap::Args;
use std::path::PathBuf;
use std::time::Instant;
use warpdrive_core::progress::{Bar, Progress};
use warpdrive_em::engine::{self, KleinNishina, KleinNishinaOptions, MaterialChoice};
use warpdrive_em::material::Material;
use warpdrive_em::physics::PhysicsList;
use warpdrive_em::transport::{run, RunOptions, TallyGrid};

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
    /// Material: a built-in NIST name (G4_Al, G4_Pb, G4_lAr, G4_WATER, G4_AIR, … ; 'aluminium' is
    /// G4_Al; the list is in docs/em.md) or a TOML file.
    #[arg(long, default_value = "G4_Al")]
    material: String,
    /// Tally: lower edge of the first z bin [cm].
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    tally_front: f64,
    /// Tally: bin width [cm] (at least 1e-6).
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true)]
    tally_width: f64,
    /// Tally: number of bins.
    #[arg(long, default_value_t = 2048)]
    tally_bins: u64,
    /// Track slots in flight at once.
    #[arg(long)]
    slots: Option<u64>,
    /// Capacity of the hit and secondary stacks per iteration (default: one per slot).
    #[arg(long)]
    stack_capacity: Option<u64>,
    /// Overlay a reference profile on the plot (one MeV/cm value per 1-cm bin per line, e.g.
    /// $WARPDRIVE_DATA/em/g4-edep-100MeV-60k-1.0cm.txt).
    #[arg(long)]
    compare: Option<PathBuf>,
    /// Output directory (edep.parquet, edep.png, summary.json, run.json).
    #[arg(long, short, default_value = "em-out")]
    output: PathBuf,
    #[command(flatten)]
    pub common: CommonArgs,
}

pub fn em(a: &EmArgs, force: bool) -> Result<()> {
    let ctl = a.common.control()?;
    let opts = KleinNishinaOptions {
        energy: a.energy,
        tracks: a.tracks,
        seed: a.seed,
        material: MaterialChoice::parse(&a.material),
        tally_front: a.tally_front,
        tally_width: a.tally_width,
        tally_bins: a.tally_bins,
        slots: a.slots,
        stack_capacity: a.stack_capacity,
        compare: a.compare.clone(),
    };
    let req = KleinNishina::new(&opts)?;
    let out = engine::prepare_output(&a.output, force, req.inputs())?;
    let m = req.material();
    println!(
        "em: {} photons of {} MeV along +z in {} (ρ = {} g/cm³), Compton only, kill below 10 keV",
        a.tracks, a.energy, m.name, m.density
    );
    let bar = Bar::show(&ctl.progress);
    let r = req.run(&ctl)?;
    drop(bar);
    for note in r.save(out, true, &command_line())? {
        eprintln!("warning: {note}");
    }
    let res = &r.result;
    println!(
        "steps:           {} ({:.3} per track); result checksum {}",
        res.steps,
        res.steps_per_track(),
        res.checksum()
    );
    println!(
        "mean depth:      {:.2} cm (Geant4 reference for 100 MeV in Al: 176.06 cm)",
        res.mean_depth()
    );
    println!(
        "beyond 100/200/500 cm: {:.3} / {:.3} / {:.3} MeV per primary (Geant4: 57.95 / 32.77 / 5.40)",
        r.energy_beyond(100.0),
        r.energy_beyond(200.0),
        r.energy_beyond(500.0)
    );
    println!(
        "transport:       {:.2} s, {:.3e} track-steps/s on {}",
        r.seconds,
        r.track_steps_per_second(),
        r.device
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
