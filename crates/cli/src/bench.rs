//! `warpdrive bench photon`: the spec's CPU benchmark (100 TeV EM cascade at (0,0,−400) in
//! spice_3.2.1, oversize 5), timed for 1..N threads; prints ns/photon and photons/s and writes JSON.

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::time::Instant;
use warpdrive_core::progress::Progress;
use warpdrive_photon::detector::{Detector, DetectorOptions};
use warpdrive_photon::source::track_to_spec;

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Photon propagation on the CPU.
    Photon(BenchPhoton),
}

#[derive(Args)]
pub struct BenchPhoton {
    /// PPC ice directory (default: $WARPDRIVE_DATA/ice/spice_3.2.1).
    #[arg(long)]
    ice: Option<PathBuf>,
    /// Cascade energy [GeV].
    #[arg(long, default_value_t = 1e5)]
    energy: f64,
    /// Thread counts to time (default: 1 and all cores).
    #[arg(long, value_delimiter = ',')]
    threads: Vec<usize>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// JSON result file.
    #[arg(long, default_value = "bench-photon.json")]
    json: PathBuf,
}

pub fn run(cmd: BenchCommand) -> Result<()> {
    let BenchCommand::Photon(b) = cmd;
    let ice = b
        .ice
        .clone()
        .unwrap_or_else(|| warpdrive_core::data::data_dir().join("ice/spice_3.2.1"));
    let det = Detector::build(&DetectorOptions {
        ice_dir: Some(ice.clone()),
        ..Default::default()
    })
    .with_context(|| "the benchmark needs the spice_3.2.1 ice directory (set WARPDRIVE_DATA or --ice)")?;
    let line = format!("TR 1 0 e 0 0 -400 180 0 0 {} 0", b.energy);
    let t: Vec<&str> = line.split_whitespace().collect();
    let specs = vec![track_to_spec(std::path::Path::new("<bench>"), 1, 0, &t, &det.yield_)?];
    let mut threads = b.threads.clone();
    if threads.is_empty() {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        threads = if n > 1 { vec![1, n] } else { vec![1] };
    }
    println!(
        "warpdrive bench photon: {} GeV EM cascade at (0,0,-400), {}, oversize {}",
        b.energy,
        ice.display(),
        det.cfg.oversize
    );
    println!(
        "{:>8} {:>12} {:>12} {:>14} {:>16} {:>10}",
        "threads", "photons", "seconds", "ns/photon", "ns/photon/core", "photons/s"
    );
    let mut rows = Vec::new();
    for &n in &threads {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(n).build()?;
        let t0 = Instant::now();
        let sim = pool.install(|| warpdrive_photon::simulate(&det, &specs, b.seed, &Progress::hidden()));
        let s = t0.elapsed().as_secs_f64();
        let ns = 1e9 * s / sim.photons as f64;
        println!(
            "{n:>8} {:>12} {s:>12.2} {ns:>14.1} {:>16.1} {:>10.3e}",
            sim.photons,
            ns * n as f64,
            sim.photons as f64 / s
        );
        rows.push(format!(
            "{{\"threads\":{n},\"photons\":{},\"hits\":{},\"seconds\":{s:.4},\"ns_per_photon\":{ns:.2},\"ns_per_photon_core\":{:.2},\"photons_per_s\":{:.4e}}}",
            sim.photons,
            sim.hits.len(),
            ns * n as f64,
            sim.photons as f64 / s
        ));
    }
    let json = format!(
        "{{\"benchmark\":\"photon-cpu\",\"energy_gev\":{},\"ice\":\"{}\",\"version\":\"{}\",\"ppc_cpu_ns_per_photon_one_xeon_core\":7460,\"runs\":[{}]}}\n",
        b.energy,
        ice.display(),
        env!("CARGO_PKG_VERSION"),
        rows.join(",")
    );
    warpdrive_core::table::write_atomic(&b.json, json.as_bytes())?;
    println!(
        "PPC CPU build reference: 7460 ns/photon on one Xeon core (spec §5.1). JSON: {}",
        b.json.display()
    );
    Ok(())
}
