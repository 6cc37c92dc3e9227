//! `warpdrive beam track` and `warpdrive bench beam`: ELEGANT-style tracking of `.lte` lattices.
//! `beam track` translates its options into `warpdrive_beam::engine::Track` and prints the
//! result; validation, budgets, devices and outputs live in the library.

use anyhow::Result;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use warpdrive_beam::beam::{gaussian, BeamSpec, Plane, Reference};
use warpdrive_beam::engine::{self, BeamSource, GaussianOptions, Line, ReferenceOptions, Track, TrackOptions};
use warpdrive_beam::gpu::{GpuBackend, GpuOptions};
use warpdrive_beam::lsc::Histogram;
use warpdrive_beam::program::Program;
use warpdrive_beam::track::{track, Backend, CpuBackend, TrackOptions as DriverOptions};
use warpdrive_core::progress::Bar;

#[derive(Subcommand)]
pub enum BeamCommand {
    /// Track a beam through an ELEGANT .lte lattice (DRIF, EDRIFT, QUAD, SEXT, MARK, WATCH, LSCDRIFT, CHARGE).
    Track(TrackArgs),
}

#[derive(Args, Clone)]
pub struct BeamArgs {
    /// Reference momentum β0γ0 (ELEGANT's p_central, units of m c) [default: 1956.951].
    #[arg(long, conflicts_with = "momentum", allow_hyphen_values = true)]
    p_central: Option<f64>,
    /// Reference momentum [MeV/c] (instead of --p-central).
    #[arg(long, allow_hyphen_values = true)]
    momentum: Option<f64>,
    /// Particle species: electron, positron, proton, antiproton, muon, antimuon, pi+, pi-,
    /// deuteron [default: electron]; or give --mass (and --particle-charge) for another.
    #[arg(long)]
    particle: Option<String>,
    /// Rest mass of a custom species [MeV/c²].
    #[arg(long, allow_hyphen_values = true)]
    mass: Option<f64>,
    /// Charge number of a custom species [e] [default: 1].
    #[arg(long, allow_hyphen_values = true)]
    particle_charge: Option<f64>,
    /// Read particles from Parquet or CSV (columns x, xp, y, yp, s or t, delta or p) instead of a Gaussian beam.
    #[arg(long)]
    beam: Option<PathBuf>,
    /// Gaussian beam: number of particles.
    #[arg(long, default_value_t = 100_000)]
    particles: u64,
    /// Twiss β_x at the start [m].
    #[arg(long, default_value_t = 10.0, allow_hyphen_values = true)]
    beta_x: f64,
    /// Twiss α_x at the start.
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    alpha_x: f64,
    /// Geometric RMS emittance ε_x [m rad] [default: 1e-9].
    #[arg(long, allow_hyphen_values = true, conflicts_with = "nemit_x")]
    emit_x: Option<f64>,
    /// Normalised RMS emittance β0γ0 ε_x [m rad] (instead of --emit-x).
    #[arg(long, allow_hyphen_values = true)]
    nemit_x: Option<f64>,
    /// Twiss β_y at the start [m].
    #[arg(long, default_value_t = 10.0, allow_hyphen_values = true)]
    beta_y: f64,
    /// Twiss α_y at the start.
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    alpha_y: f64,
    /// Geometric RMS emittance ε_y [m rad] [default: 1e-9].
    #[arg(long, allow_hyphen_values = true, conflicts_with = "nemit_y")]
    emit_y: Option<f64>,
    /// Normalised RMS emittance β0γ0 ε_y [m rad] (instead of --emit-y).
    #[arg(long, allow_hyphen_values = true)]
    nemit_y: Option<f64>,
    /// RMS bunch length [m] (xtrack's σ_z).
    #[arg(long, default_value_t = 1e-3, allow_hyphen_values = true)]
    sigma_s: f64,
    /// RMS momentum spread.
    #[arg(long, default_value_t = 1e-3, allow_hyphen_values = true)]
    sigma_delta: f64,
    /// Random seed of the Gaussian beam (particle i uses Philox stream (seed, i)).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Bunch charge [C] (a CHARGE element overrides it).
    #[arg(long, default_value_t = 1e-9, allow_hyphen_values = true)]
    charge: f64,
}

impl BeamArgs {
    fn reference(&self) -> Result<ReferenceOptions> {
        Ok(ReferenceOptions {
            particle: self.particle.as_deref().map(engine::species).transpose()?,
            mass: self.mass,
            particle_charge: self.particle_charge,
            p_central: self.p_central,
            momentum: self.momentum,
        })
    }

    fn source(&self) -> BeamSource {
        match &self.beam {
            Some(path) => BeamSource::File(path.clone()),
            None => BeamSource::Gaussian(GaussianOptions {
                particles: self.particles,
                beta_x: self.beta_x,
                alpha_x: self.alpha_x,
                emit_x: self.emit_x,
                nemit_x: self.nemit_x,
                beta_y: self.beta_y,
                alpha_y: self.alpha_y,
                emit_y: self.emit_y,
                nemit_y: self.nemit_y,
                sigma_s: self.sigma_s,
                sigma_delta: self.sigma_delta,
                seed: self.seed,
            }),
        }
    }
}

#[derive(Args)]
pub struct TrackArgs {
    /// ELEGANT lattice file.
    lattice: PathBuf,
    /// Beamline to use (default: USE statement, else the last line defined).
    #[arg(long)]
    line: Option<String>,
    /// Number of passes (turns) through the line.
    #[arg(long, default_value_t = 1)]
    passes: u64,
    /// Half-width of a square aperture checked after every element [m] (default: none; NaN and ∞ are always lost).
    #[arg(long, allow_hyphen_values = true)]
    aperture: Option<f64>,
    /// LSC charge histogram: sort, block-atomic (default) or block-sort-scan.
    #[arg(long, default_value = "block-atomic")]
    histogram: String,
    /// GPU: one kernel launch per element instead of one per run of map elements.
    #[arg(long)]
    launch_per_element: bool,
    /// GPU: 256-thread blocks per multiprocessor the map kernels are compiled for (0: compiler's choice).
    #[arg(long, default_value_t = warpdrive_beam::gpu::DEFAULT_MIN_BLOCKS)]
    min_blocks: u32,
    /// Watch-point records: files (one Parquet file per record), stream (one Parquet file per
    /// watch point, a row group per record) or off (no records, no moments).
    #[arg(long, default_value = "files")]
    watch: String,
    /// Watch points act every k-th pass (on top of each WATCH's INTERVAL).
    #[arg(long, default_value_t = 1, conflicts_with = "watch_passes")]
    watch_every: u64,
    /// Watch points act at these passes only (0-based), e.g. 0,100,1999.
    #[arg(long, value_delimiter = ',')]
    watch_passes: Option<Vec<u64>>,
    /// Record only these particles (0-based rows of the beam), e.g. 0,1,2; moments use all.
    #[arg(long, value_delimiter = ',')]
    watch_particles: Option<Vec<u64>>,
    /// Output directory (final.parquet, watch files, moments.parquet, sizes.png, run.json).
    #[arg(long, short, default_value = "beam-out")]
    output: PathBuf,
    /// Do not draw sizes.png.
    #[arg(long)]
    no_plot: bool,
    #[command(flatten)]
    beam: BeamArgs,
    #[command(flatten)]
    common: crate::CommonArgs,
}

pub fn run(cmd: BeamCommand, force: bool) -> Result<()> {
    match cmd {
        BeamCommand::Track(a) => track_cmd(&a, force),
    }
}

fn track_cmd(a: &TrackArgs, force: bool) -> Result<()> {
    let start = Instant::now();
    let ctl = a.common.control()?;
    let inputs: Vec<PathBuf> = [Some(a.lattice.clone()), a.beam.beam.clone()].into_iter().flatten().collect();
    // The output directory is checked and staged first: an unwritable or existing output fails
    // before any work, and the staged directory vanishes if anything below fails.
    let out = engine::prepare_output(&a.output, force, &inputs)?;
    let line = Arc::new(Line::read(&a.lattice, a.line.as_deref())?);
    let opts = TrackOptions {
        passes: a.passes,
        aperture: a.aperture,
        charge: a.beam.charge,
        histogram: engine::histogram(&a.histogram)?,
        launch_per_element: a.launch_per_element,
        min_blocks: a.min_blocks,
        watch: engine::watch_mode(&a.watch)?,
        watch_every: a.watch_every,
        watch_passes: a.watch_passes.clone(),
        watch_particles: a.watch_particles.clone(),
        output: true,
        plot: !a.no_plot,
        command: crate::command_line(),
    };
    let req = Track::new(Arc::clone(&line), a.beam.source(), &a.beam.reference()?, &opts)?;
    let n = req.bunch().len();
    let program = line.program();
    let (flops, nmaps) = program.map_flops();
    eprintln!(
        "beam: {} elements ({nmaps} map elements, {flops} flops per particle and pass), {:.3} m, {n} particles ({}), {} passes",
        line.elements(),
        line.length(),
        req.bunch().species.name,
        req.passes()
    );
    let bar = Bar::show(&ctl.progress);
    let r = req.run(&ctl, Some(out))?;
    drop(bar);
    println!(
        "line {} ({} elements, {:.4} m), {n} particles, {} passes on {}",
        line.line_name(),
        line.elements(),
        line.length(),
        req.passes(),
        r.device
    );
    println!(
        "{:<12} {:>14} {:>14} {:>14} {:>14} {:>12}",
        "", "σx [m]", "σy [m]", "εx [m rad]", "εy [m rad]", "σδ"
    );
    for (label, m) in [("initial", &r.initial), ("final", &r.last)] {
        println!(
            "{label:<12} {:>14.6e} {:>14.6e} {:>14.6e} {:>14.6e} {:>12.4e}",
            m.rms(0),
            m.rms(2),
            m.emittance(0),
            m.emittance(1),
            m.rms(5)
        );
    }
    if r.lost() > 0 {
        let list: Vec<String> = r.lost_by_element.iter().take(8).map(|(e, c)| format!("{e} ×{c}")).collect();
        println!(
            "lost: {} particles (flagged in final.parquet: lost_at, lost_pass) — {}",
            r.lost(),
            list.join(", ")
        );
    } else {
        println!("lost: none");
    }
    for (k, s) in r.lsc.iter().enumerate().take(3) {
        println!(
            "LSC kick {k} (last pass): peak current {:.4e} A, r_b {:.3e} m, max |V| {:.4e} V",
            s.peak_current,
            s.radius,
            s.voltage.iter().fold(0.0f64, |m, v| m.max(v.abs()))
        );
    }
    let rate = n as f64 * f64::from(req.passes()) * nmaps as f64 / r.tracking_seconds;
    println!(
        "tracking: {:.3} s ({rate:.3e} particle-elements/s); total {:.2} s",
        r.tracking_seconds,
        start.elapsed().as_secs_f64()
    );
    let mut files = vec!["final.parquet".to_string()];
    if !r.moments.is_empty() {
        files.push("moments.parquet".into());
    }
    files.extend(r.written.iter().cloned());
    if a.output.join("sizes.png").exists() {
        files.push("sizes.png".into());
    }
    files.push("run.json".into());
    println!("wrote {} ({})", a.output.display(), files.join(", "));
    Ok(())
}

#[derive(Args)]
pub struct BenchBeam {
    /// Particles for the GPU timings.
    #[arg(long, default_value_t = 20_000_000)]
    particles: usize,
    /// Particles for the CPU timings.
    #[arg(long, default_value_t = 1_000_000)]
    cpu_particles: usize,
    /// Passes of the map-only benchmark (in one launch on the GPU).
    #[arg(long, value_delimiter = ',', default_value = "1,20")]
    passes: Vec<u32>,
    /// CPU thread counts (default: 1 and all cores).
    #[arg(long, value_delimiter = ',')]
    threads: Vec<usize>,
    /// auto (a GPU if CUDA works, else the CPU), cpu, or cuda / cuda:N (cuda:all where the benchmark supports it).
    #[arg(long, default_value = "auto")]
    pub(crate) device: String,
    /// Write the benchmark lattices here (to feed other codes the same line).
    #[arg(long)]
    pub(crate) write_lattice: Option<PathBuf>,
    /// JSON result file.
    #[arg(long, default_value = "bench-beam.json")]
    pub(crate) json: PathBuf,
}

/// The benchmark beam: 1 GeV/c electrons, β = 3 m, ε = 1e-8 m rad in both planes.
fn bench_spec(n: usize) -> BeamSpec {
    let plane = Plane {
        beta: 3.0,
        alpha: 0.0,
        emittance: 1e-8,
    };
    BeamSpec {
        x: plane,
        y: plane,
        sigma_s: 1e-3,
        sigma_delta: 1e-3,
        particles: n,
        seed: 1,
    }
}

pub fn bench(b: &BenchBeam) -> Result<()> {
    crate::bench::check_threads(&b.threads)?;
    use warpdrive_beam::lattice::{bench_lte, parse};
    if let Some(dir) = &b.write_lattice {
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join("bench-maps.lte"), bench_lte(false))?;
        std::fs::write(dir.join("bench-lsc.lte"), bench_lte(true))?;
    }
    let mut report = serde_json::Map::new();
    let mut rows = Vec::new();
    let maps = Program::compile(&parse(&bench_lte(false), "<bench-maps>", None)?);
    let lsc = Program::compile(&parse(&bench_lte(true), "<bench-lsc>", None)?);
    let (flops, nmaps) = maps.map_flops();
    println!("benchmark line: 10 FODO cells = 20 quadrupoles (L 0.2 m) + 20 drifts (0.8 m); {flops} flops per particle and pass in {nmaps} map elements ({:.1} per element)", flops as f64 / nmaps as f64);
    report.insert("flops_per_particle_pass".into(), serde_json::json!(flops));
    report.insert("map_elements".into(), serde_json::json!(nmaps));
    let reference = Reference::electron(engine::DEFAULT_P_CENTRAL);
    let time_run = |backend: &mut dyn Backend, program: &Program, passes: u32| -> Result<f64> {
        let t = Instant::now();
        track(
            program,
            backend,
            &DriverOptions {
                passes,
                aperture: f64::INFINITY,
                histogram: Histogram::BlockAtomic,
                charge: 1e-9,
                reference,
            },
            &mut |_| Ok(()),
            &mut |_| {},
        )
        .map_err(|e| anyhow::anyhow!(e))?;
        // Includes waiting for the device (particles() would copy; a tiny sync is enough).
        Ok(t.elapsed().as_secs_f64())
    };
    let mut row = |what: String, n: usize, passes: u32, elements: usize, secs: f64, extra: serde_json::Value| {
        let pe = n as f64 * f64::from(passes) * elements as f64;
        let ns = secs * 1e9 / pe;
        // FLOP rates for map-only lines (LSC work is not counted in FLOPs).
        let gflops = (!what.contains("LSC")).then(|| pe * flops as f64 / nmaps as f64 / secs / 1e9);
        let rate = gflops.map_or(String::new(), |g| format!("{g:>10.1} GFLOP/s"));
        println!("{what:<58} {n:>10} {passes:>6} {secs:>10.4} s {ns:>10.4} ns/particle-element {rate}");
        rows.push(serde_json::json!({"what": what, "particles": n, "passes": passes, "seconds": secs, "ns_per_particle_element": ns, "gflops": gflops, "extra": extra}));
    };
    if b.device == "cpu" {
        let threads = if b.threads.is_empty() {
            vec![1, std::thread::available_parallelism().map_or(1, |n| n.get())]
        } else {
            b.threads.clone()
        };
        let beam = gaussian(&bench_spec(b.cpu_particles));
        for &t in &threads {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(t).build()?;
            for &passes in &b.passes {
                let mut cpu = CpuBackend {
                    particles: beam.clone(),
                    reference,
                    aperture: f64::INFINITY,
                    histogram: Histogram::BlockAtomic,
                };
                let secs = pool.install(|| time_run(&mut cpu, &maps, passes))?;
                row(
                    format!("cpu {t} threads: maps"),
                    b.cpu_particles,
                    passes,
                    nmaps,
                    secs,
                    serde_json::json!({"threads": t}),
                );
            }
            let mut cpu = CpuBackend {
                particles: beam.clone(),
                reference,
                aperture: f64::INFINITY,
                histogram: Histogram::BlockAtomic,
            };
            let secs = pool.install(|| time_run(&mut cpu, &lsc, 1))?;
            row(
                format!("cpu {t} threads: quads + LSCDRIFT (256 bins)"),
                b.cpu_particles,
                1,
                40,
                secs,
                serde_json::json!({"threads": t}),
            );
        }
    } else {
        let d = warpdrive_core::cuda::parse_devices(&b.device)?;
        let beam = gaussian(&bench_spec(b.particles));
        // (precise, one launch per element, blocks per SM)
        let mut configs: Vec<(bool, bool, u32)> = vec![(false, false, 0), (false, true, 0), (true, false, 0), (true, true, 0)];
        configs.extend([2, 3, 4].map(|m| (false, false, m)));
        for (precise, per_element, min_blocks) in configs {
            {
                for &passes in &b.passes {
                    if precise && passes > 1 {
                        continue;
                    }
                    let mut g = GpuBackend::new(
                        &maps,
                        &beam,
                        reference,
                        GpuOptions {
                            device: d[0],
                            precise,
                            per_element,
                            histogram: Histogram::BlockAtomic,
                            aperture: f64::INFINITY,
                            min_blocks,
                        },
                    )
                    .map_err(|e| anyhow::anyhow!("{e}"))?;
                    time_run(&mut g, &maps, 1)?; // warm-up (module load, clocks)
                    g.timing = Default::default();
                    let secs = time_run(&mut g, &maps, passes)?;
                    let kernel_s = g.timing.maps_ms / 1e3;
                    let bounds = if min_blocks > 0 {
                        format!(", ≥{min_blocks} blocks/SM")
                    } else {
                        ", compiler's registers".to_string()
                    };
                    let label = format!(
                        "{} {}: maps, {}{bounds}",
                        g.gpu().name.replace("NVIDIA ", ""),
                        if precise { "precise" } else { "fast" },
                        if per_element { "one launch per element" } else { "fused run" }
                    );
                    row(
                        label.clone() + " (kernel time)",
                        b.particles,
                        passes,
                        nmaps,
                        kernel_s,
                        serde_json::json!({"launches": g.timing.launches, "wall_seconds": secs, "min_blocks": min_blocks}),
                    );
                }
            }
        }
        for h in Histogram::ALL {
            let mut g = GpuBackend::new(
                &lsc,
                &beam,
                reference,
                GpuOptions {
                    device: d[0],
                    precise: false,
                    per_element: false,
                    histogram: h,
                    aperture: f64::INFINITY,
                    min_blocks: warpdrive_beam::gpu::DEFAULT_MIN_BLOCKS,
                },
            )
            .map_err(|e| anyhow::anyhow!("{e}"))?;
            time_run(&mut g, &lsc, 1)?;
            g.timing = Default::default();
            let secs = time_run(&mut g, &lsc, 1)?;
            let fft = g.fft_fallback().map_or("cuFFT".to_string(), |w| format!("host FFT ({w})"));
            row(
                format!("GPU: quads + LSCDRIFT (256 bins), histogram {}", h.name()),
                b.particles,
                1,
                40,
                secs,
                serde_json::json!({"maps_ms": g.timing.maps_ms, "lsc_ms": g.timing.lsc_ms, "fft": fft}),
            );
        }
    }
    report.insert("rows".into(), serde_json::Value::Array(rows));
    warpdrive_core::table::write_atomic(
        &b.json,
        serde_json::to_string_pretty(&serde_json::Value::Object(report))?.as_bytes(),
    )?;
    println!("wrote {}", b.json.display());
    Ok(())
}
