//! `warpdrive bench photon`: the spec's CPU benchmark (100 TeV EM cascade at (0,0,−400) in
//! spice_3.2.1, oversize 5), timed for 1..N threads; prints ns/photon and photons/s and writes JSON.

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use std::time::Instant;
use warpdrive_core::progress::Progress;
use warpdrive_photon::detector::{Detector, DetectorOptions};
use warpdrive_photon::source::{Particle, Primary, SourceSpec};

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Photon propagation on the CPU.
    Photon(BenchPhoton),
    /// Two-point autocorrelation: time per scrambled trial on all IC86-2011 events.
    Sky(crate::sky::BenchSky),
    /// EM Klein–Nishina mini-app on the CPU: track-steps per second.
    Em(crate::em::BenchEm),
    /// Spline evaluation rates (3-D amplitude, 4-D timing tables) and Millipede response-matrix build time.
    Spline(crate::spline::BenchSpline),
    /// Beam tracking: 20 M particles through 20 quadrupoles and 20 drifts (maps; and with LSCDRIFT).
    Beam(crate::beam::BenchBeam),
}

#[derive(Args)]
pub struct BenchPhoton {
    /// PPC ice directory (default: $WARPDRIVE_DATA/ice/spice_3.2.1).
    #[arg(long)]
    ice: Option<PathBuf>,
    /// Cascade energy [GeV].
    #[arg(long, default_value_t = 1e5, allow_hyphen_values = true)]
    energy: f64,
    /// Thread counts to time (default: 1 and all cores).
    #[arg(long, value_delimiter = ',')]
    threads: Vec<usize>,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// JSON result file.
    #[arg(long, default_value = "bench-photon.json")]
    pub(crate) json: PathBuf,
    /// auto (a GPU if CUDA works, else the CPU), cpu, or cuda / cuda:N (cuda:all where the benchmark supports it).
    #[arg(long, default_value = "auto")]
    pub(crate) device: String,
    /// GPU: the balanced benchmark's f2k input (default: PPC's 20 × 100 TeV cascades,
    /// $WARPDRIVE_DATA/reference/ppc_h100_2026/input_cascades_20x100TeV.f2k).
    #[arg(long)]
    input: Option<PathBuf>,
    /// GPU: number of cascades in the shuffled benchmark.
    #[arg(long, default_value_t = 400)]
    shuffled_sources: usize,
    /// GPU: time these configurations instead of the built-in table. Each is a comma-separated
    /// list of kernel switches (WD_…, see propagate.cu), `default` for the default switches,
    /// `-WD_…` to drop one given before, `block=N` and `per-sm=N` for the launch shape,
    /// `batch=K` for 2^K photons per launch, `precise` for the precise build; repeat the option
    /// for several configurations.
    #[arg(long = "config")]
    configs: Vec<String>,
    /// GPU: workloads to run (balanced, shuffled).
    #[arg(long, value_delimiter = ',', default_value = "balanced,shuffled")]
    workloads: Vec<String>,
}

/// A `--config` string as GPU options (see [`BenchPhoton::configs`]).
fn parse_config(text: &str, base: &warpdrive_photon::gpu::GpuOptions) -> Result<warpdrive_photon::gpu::GpuOptions> {
    let mut o = warpdrive_photon::gpu::GpuOptions {
        defines: Vec::new(),
        ..base.clone()
    };
    for item in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let number = |v: &str| -> Result<u32> {
            v.parse()
                .map_err(|_| anyhow::anyhow!("--config {text:?}: {item:?} needs a whole number"))
        };
        match item.split_once('=') {
            _ if item == "default" => o
                .defines
                .extend(warpdrive_photon::gpu::DEFAULT_SWITCHES.iter().map(|d| d.to_string())),
            _ if item == "precise" => o.precise = true,
            Some(("block", v)) => o.block = number(v)?,
            Some(("per-sm", v)) => o.blocks_per_sm = number(v)?,
            Some(("batch", v)) => o.batch = 1u64 << number(v)?.min(40),
            _ if item.starts_with("WD_") => o.defines.push(item.to_string()),
            _ if item.starts_with("-WD_") => {
                let name = &item[1..];
                o.defines.retain(|d| d.split('=').next() != Some(name));
            }
            _ => anyhow::bail!(
                "--config {text:?}: unknown item {item:?} (expected WD_… or -WD_… switches, default, precise, block=N, per-sm=N, batch=K)"
            ),
        }
    }
    Ok(o)
}

/// `--device auto` of a benchmark: the first GPU's benchmark when CUDA works, else the CPU's
/// (with one line on stderr saying why), as for the runs.
fn resolve_device(device: &mut String) {
    if device == "auto" {
        *device = match warpdrive_core::cuda::usable_devices() {
            Ok(_) => "cuda".to_string(),
            Err(why) => {
                eprintln!("device: cpu ({why})");
                "cpu".to_string()
            }
        };
    }
}

/// The JSON report of a benchmark follows the output discipline: not over an input, not over an
/// existing file without --force (it is written atomically at the end).
fn check_json(force: bool, json: &Path, inputs: &[Option<&Path>]) -> Result<()> {
    crate::outputs(force, inputs, &[Some(json)]).map(drop)
}

/// Every `--threads` value of a benchmark must be at least 1.
pub fn check_threads(threads: &[usize]) -> Result<()> {
    if threads.contains(&0) {
        anyhow::bail!("--threads: every thread count must be at least 1");
    }
    Ok(())
}

pub fn run(cmd: BenchCommand, force: bool) -> Result<()> {
    let mut b = match cmd {
        BenchCommand::Photon(b) => b,
        BenchCommand::Sky(mut b) => {
            resolve_device(&mut b.device);
            let files: Vec<Option<&Path>> = b.files.iter().map(|p| Some(p.as_path())).collect();
            check_json(force, &b.json, &files)?;
            return crate::sky::bench(&b);
        }
        BenchCommand::Em(mut b) => {
            resolve_device(&mut b.device);
            check_json(force, &b.json, &[])?;
            return crate::em::bench(&b);
        }
        BenchCommand::Spline(mut b) => {
            resolve_device(&mut b.device);
            check_json(force, &b.json, &[])?;
            return crate::spline::bench(&b);
        }
        BenchCommand::Beam(mut b) => {
            resolve_device(&mut b.device);
            check_json(force, &b.json, &[b.write_lattice.as_deref()])?;
            return crate::beam::bench(&b);
        }
    };
    resolve_device(&mut b.device);
    check_json(force, &b.json, &[b.ice.as_deref(), b.input.as_deref()])?;
    if b.device != "cpu" {
        return gpu(&b);
    }
    let ice = b
        .ice
        .clone()
        .unwrap_or_else(|| warpdrive_core::data::data_dir().join("ice/spice_3.2.1"));
    let det = Detector::build(&DetectorOptions {
        ice_dir: Some(ice.clone()),
        ..Default::default()
    })
    .with_context(|| "the benchmark needs the spice_3.2.1 ice directory (set WARPDRIVE_DATA or --ice)")?;
    let cascade = Primary::cascade(Particle::Electron, [0.0, 0.0, -400.0], [180.0, 0.0], b.energy, 0.0);
    let specs = vec![SourceSpec::new(&cascade, 0, &det.yield_).map_err(|e| anyhow::anyhow!("--energy: {}", e.message))?];
    check_threads(&b.threads)?;
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

/// The shuffled workload: cascades with log-uniform energies 10 GeV – 100 TeV at random places
/// and directions inside the detector, in random order (sources of very different photon counts).
fn shuffled(det: &Detector, n: usize, seed: u64) -> Result<Vec<SourceSpec>> {
    let mut r = warpdrive_core::RandomStream::new(seed, 99, 0);
    (0..n)
        .map(|_| {
            let e = 10f64 * 1e4f64.powf(r.uniform_f64());
            let (x, y, z) = (
                1000.0 * r.uniform_f64() - 500.0,
                1000.0 * r.uniform_f64() - 500.0,
                1000.0 * r.uniform_f64() - 500.0,
            );
            let (zen, azi) = ((2.0 * r.uniform_f64() - 1.0).acos().to_degrees(), 360.0 * r.uniform_f64());
            let cascade = Primary::cascade(Particle::Electron, [x, y, z], [zen, azi], e, 0.0);
            SourceSpec::new(&cascade, 0, &det.yield_).map_err(|e| anyhow::anyhow!("shuffled source: {}", e.message))
        })
        .collect()
}

/// GPU benchmarks: balanced (PPC's 20 × 100 TeV cascades) and shuffled workloads, for the fast
/// and precise builds and several launch configurations. Time = kernel time (launch to
/// synchronize, like PPC's "device time"); photons counted as PPC counts them.
fn gpu(b: &BenchPhoton) -> Result<()> {
    use warpdrive_photon::gpu::{run, GpuOptions, DEFAULT_SWITCHES};
    let data = warpdrive_core::data::data_dir();
    let ice = b.ice.clone().unwrap_or_else(|| data.join("ice/spice_3.2.1"));
    let det = Detector::build(&DetectorOptions {
        ice_dir: Some(ice.clone()),
        ..Default::default()
    })?;
    let input = b
        .input
        .clone()
        .unwrap_or_else(|| data.join("reference/ppc_h100_2026/input_cascades_20x100TeV.f2k"));
    let text = warpdrive_core::error::read_text(&input)?;
    let balanced = warpdrive_photon::f2k::parse_f2k(&input, &text, &det.yield_)?.specs;
    let devices = warpdrive_core::cuda::parse_devices(&b.device)?;
    let mut workloads = Vec::new();
    for w in &b.workloads {
        match w.as_str() {
            "balanced" => workloads.push(("balanced", warpdrive_photon::source::realise(&balanced, b.seed))),
            "shuffled" => workloads.push((
                "shuffled",
                warpdrive_photon::source::realise(&shuffled(&det, b.shuffled_sources, b.seed)?, b.seed),
            )),
            _ => anyhow::bail!("--workloads: unknown workload {w:?} (expected balanced, shuffled)"),
        }
    }
    let base = GpuOptions {
        devices: devices.clone(),
        ..Default::default()
    };
    let with = |d: &[&str], o: &GpuOptions| GpuOptions {
        defines: d.iter().map(|x| (*x).to_string()).collect(),
        ..o.clone()
    };
    // Each step of the optimisation history (docs/performance/photon.md), then the default and
    // its launch shapes, then the precise build.
    let q = ["WD_JOBQUEUE", "WD_TILT_LUT", "WD_MIN_BLOCKS=4", "WD_FACTORED_ICE"];
    let q_clear = [&q[..], &["WD_CLEARANCE"]].concat();
    let q_select = [&q_clear[..], &["WD_SELECT_SCATTER"]].concat();
    let q_dynamic = [&q_select[..], &["WD_DYNAMIC"]].concat();
    let q_walk = [&q_dynamic[..], &["WD_BRANCHLESS_WALK"]].concat();
    fn default_with(min_blocks: &'static str) -> Vec<&'static str> {
        DEFAULT_SWITCHES
            .iter()
            .map(|&d| if d.starts_with("WD_MIN_BLOCKS=") { min_blocks } else { d })
            .collect()
    }
    let mut configs: Vec<(String, GpuOptions)> = vec![
        ("fast, no switches".into(), with(&[], &base)),
        ("≤64 regs".into(), with(&["WD_MIN_BLOCKS=4"], &base)),
        ("≤64 regs + LUT".into(), with(&["WD_MIN_BLOCKS=4", "WD_TILT_LUT"], &base)),
        ("job queue".into(), with(&["WD_JOBQUEUE"], &base)),
        ("job queue + LUT".into(), with(&["WD_JOBQUEUE", "WD_TILT_LUT"], &base)),
        ("queue+LUT+≤64".into(), with(&q[..3], &base)),
        ("queue+LUT+≤64+factored".into(), with(&q, &base)),
        ("… + clearance".into(), with(&q_clear, &base)),
        ("… + select scatter".into(), with(&q_select, &base)),
        ("… + dynamic".into(), with(&q_dynamic, &base)),
        ("… + branchless walk".into(), with(&q_walk, &base)),
        ("default (… + fast arithmetic, ≤48 regs)".into(), base.clone()),
        (
            "default, Philox per segment".into(),
            with(
                &DEFAULT_SWITCHES.iter().copied().filter(|d| *d != "WD_FAST_RNG").collect::<Vec<_>>(),
                &base,
            ),
        ),
        (
            "default, 2^26 per launch".into(),
            GpuOptions {
                batch: 1 << 26,
                ..base.clone()
            },
        ),
        (
            "default + shared tables".into(),
            with(&[DEFAULT_SWITCHES, &["WD_SHARED_TABLES"]].concat(), &base),
        ),
        (
            "default + warp RNG (stats!)".into(),
            with(&[DEFAULT_SWITCHES, &["WD_RNG_WARP"]].concat(), &base),
        ),
        ("default, ≤64 regs".into(), with(&default_with("WD_MIN_BLOCKS=4"), &base)),
        ("default, ≤40 regs".into(), with(&default_with("WD_MIN_BLOCKS=6"), &base)),
        (
            "default, 128×16/SM".into(),
            GpuOptions {
                block: 128,
                ..with(&default_with("WD_MIN_BLOCKS=10"), &base)
            },
        ),
        (
            "precise (default switches)".into(),
            GpuOptions {
                precise: true,
                ..base.clone()
            },
        ),
    ];
    if !b.configs.is_empty() {
        configs = b
            .configs
            .iter()
            .map(|c| Ok((c.clone(), parse_config(c, &base)?)))
            .collect::<Result<_>>()?;
    }
    if let warpdrive_photon::tilt::Tilt::OneD(t) = &det.medium.tilt {
        if let Some(e) = warpdrive_photon::gpu::tilt_lut_error(t, 100_000) {
            println!(
                "tilt LUT ({} distances): largest |Δ zshift| over 1e5 random points = {e:.2e} m",
                warpdrive_photon::gpu::TILT_LUT_DIST
            );
        }
    }
    if let warpdrive_photon::tilt::Tilt::TwoD(t) = &det.medium.tilt {
        if let Some(e) = warpdrive_photon::gpu::tilt2_lut_error(t, 100_000) {
            println!(
                "2-D tilt LUT ({} m grid): largest |Δ zshift| over 1e5 random points = {e:.2e} m",
                warpdrive_photon::gpu::TILT2_LUT_STEP
            );
        }
    }
    if devices.len() > 1 {
        configs.push((
            "fast, first GPU only".into(),
            GpuOptions {
                devices: vec![devices[0]],
                ..base.clone()
            },
        ));
    }
    println!(
        "warpdrive bench photon --device {}: {}, oversize {}",
        b.device,
        ice.display(),
        det.cfg.oversize
    );
    println!(
        "{:<10} {:<22} {:>12} {:>10} {:>10} {:>11} {:>11} {:>5} {:>6}",
        "workload", "switches", "photons", "kernel s", "wall s", "ns/photon", "photons/s", "regs", "local"
    );
    let mut rows = Vec::new();
    for (name, sources) in &workloads {
        let photons: u64 = sources.iter().map(|s| s.photons).sum();
        for (label, opts) in &configs {
            // Warm-up (compilation, module load) outside the timing.
            let warm: Vec<_> = sources
                .iter()
                .take(1)
                .cloned()
                .map(|mut s| {
                    s.photons = s.photons.min(1 << 16);
                    s
                })
                .collect();
            run(&det.medium, &det.index, &warm, b.seed, opts)?;
            let (hits, st) = run(&det.medium, &det.index, sources, b.seed, opts)?;
            let ns = 1e9 * st.kernel_seconds / photons as f64;
            println!(
                "{name:<10} {label:<32} {photons:>12} {:>10.4} {:>10.3} {ns:>11.3} {:>11.3e} {:>5} {:>6}",
                st.kernel_seconds,
                st.wall_seconds,
                photons as f64 / st.kernel_seconds,
                st.registers,
                st.local_bytes
            );
            rows.push(format!(
                "{{\"workload\":\"{name}\",\"switches\":\"{label}\",\"photons\":{photons},\"raw_hits\":{},\"kernel_seconds\":{:.6},\"wall_seconds\":{:.6},\"ns_per_photon\":{ns:.4},\"registers\":{},\"local_bytes\":{},\"devices\":{:?}}}",
                hits.len(),
                st.kernel_seconds,
                st.wall_seconds,
                st.registers,
                st.local_bytes,
                st.devices
            ));
        }
    }
    println!("PPC on one H100 (spec §5.1): 0.97 ns/photon, 1.03e9 photons/s on the balanced workload; target 0.5 ns/photon.");
    warpdrive_core::table::write_atomic(&b.json, format!("[{}]\n", rows.join(",\n")).as_bytes())?;
    Ok(())
}
