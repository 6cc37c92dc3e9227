//! `warpdrive beam track` and `warpdrive bench beam`: ELEGANT-style tracking of `.lte` lattices.

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use std::time::Instant;
use warpdrive_beam::beam::{gaussian, read_parquet, to_table, BeamSpec, Moments, Particles, Plane, Reference};
use warpdrive_beam::gpu::{GpuBackend, GpuOptions};
use warpdrive_beam::lattice::Lattice;
use warpdrive_beam::lsc::Histogram;
use warpdrive_beam::program::{Program, Step};
use warpdrive_beam::track::{track, Backend, CpuBackend, TrackOptions, WatchEvent};
use warpdrive_core::table::{Column, Table};

#[derive(Subcommand)]
pub enum BeamCommand {
    /// Track a beam through an ELEGANT .lte lattice (DRIF, EDRIFT, QUAD, SEXT, MARK, WATCH, LSCDRIFT, CHARGE).
    Track(TrackArgs),
}

#[derive(Args, Clone)]
pub struct BeamArgs {
    /// Reference momentum β0γ0 (ELEGANT's p_central, units of m c).
    #[arg(long, default_value_t = 1956.951, conflicts_with = "momentum", allow_hyphen_values = true)]
    p_central: f64,
    /// Reference momentum [MeV/c] (instead of --p-central).
    #[arg(long, allow_hyphen_values = true)]
    momentum: Option<f64>,
    /// Particle species: electron or proton.
    #[arg(long, default_value = "electron")]
    particle: String,
    /// Read particles from Parquet (columns x, xp, y, yp, s or t, delta or p) instead of a Gaussian beam.
    #[arg(long)]
    beam: Option<PathBuf>,
    /// Gaussian beam: number of particles.
    #[arg(long, default_value_t = 100_000)]
    particles: usize,
    /// Twiss β_x at the start [m].
    #[arg(long, default_value_t = 10.0, allow_hyphen_values = true)]
    beta_x: f64,
    /// Twiss α_x at the start.
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    alpha_x: f64,
    /// Geometric RMS emittance [m rad].
    #[arg(long, default_value_t = 1e-9, allow_hyphen_values = true)]
    emit_x: f64,
    /// Twiss β_y at the start [m].
    #[arg(long, default_value_t = 10.0, allow_hyphen_values = true)]
    beta_y: f64,
    /// Twiss α_y at the start.
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    alpha_y: f64,
    /// Geometric RMS emittance ε_y [m rad].
    #[arg(long, default_value_t = 1e-9, allow_hyphen_values = true)]
    emit_y: f64,
    /// RMS bunch length [m].
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
    fn reference(&self) -> Result<Reference> {
        warpdrive_beam::setup::reference(&self.particle, self.p_central, self.momentum).map_err(anyhow::Error::msg)
    }

    fn particles(&self, reference: &Reference) -> Result<Particles> {
        if let Some(path) = &self.beam {
            return Ok(read_parquet(path, reference)?);
        }
        for (name, v) in [("beta-x", self.beta_x), ("beta-y", self.beta_y)] {
            if !positive(v) {
                bail!("--{name} must be positive (got {v})");
            }
        }
        for (name, v) in [
            ("emit-x", self.emit_x),
            ("emit-y", self.emit_y),
            ("sigma-s", self.sigma_s),
            ("sigma-delta", self.sigma_delta),
        ] {
            if !(v == 0.0 || positive(v)) {
                bail!("--{name} must be ≥ 0 (got {v})");
            }
        }
        if self.particles == 0 {
            bail!("--particles must be at least 1");
        }
        // Six f64 coordinates and two u32 loss flags per particle, on the host twice (the beam
        // and the final copy written out).
        warpdrive_core::limits::check_alloc(
            "--particles",
            self.particles as u64,
            2 * (6 * 8 + 2 * 4),
            "track fewer particles per run and split the beam into several runs with different --seed",
        )?;
        Ok(gaussian(&self.spec()))
    }

    fn spec(&self) -> BeamSpec {
        BeamSpec {
            x: Plane {
                beta: self.beta_x,
                alpha: self.alpha_x,
                emittance: self.emit_x,
            },
            y: Plane {
                beta: self.beta_y,
                alpha: self.alpha_y,
                emittance: self.emit_y,
            },
            sigma_s: self.sigma_s,
            sigma_delta: self.sigma_delta,
            particles: self.particles,
            seed: self.seed,
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
    passes: u32,
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
    /// Output directory (final.parquet, watch files, moments.parquet, sizes.png).
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
        BeamCommand::Track(a) => {
            let pool = crate::thread_pool(&a.common)?;
            pool.install(|| track_cmd(&a, force))
        }
    }
}

fn histogram_arg(s: &str) -> Result<Histogram> {
    warpdrive_beam::setup::histogram(s).map_err(anyhow::Error::msg)
}

/// A back end for `--device`: the CPU, or one GPU (beam tracking uses one device).
#[allow(clippy::too_many_arguments)]
fn make_backend(
    common: &crate::CommonArgs,
    program: &Program,
    particles: Particles,
    reference: Reference,
    aperture: f64,
    histogram: Histogram,
    per_element: bool,
    min_blocks: u32,
) -> Result<(Box<dyn Backend>, String)> {
    let o = warpdrive_beam::setup::BackendOptions {
        devices: crate::devices(common)?,
        precise: common.precise,
        aperture,
        histogram,
        per_element,
        min_blocks,
    };
    warpdrive_beam::setup::make_backend(program, particles, reference, &o).map_err(anyhow::Error::msg)
}

/// Watch-point output above which `beam track` warns before running [bytes].
const WATCH_WARN_BYTES: f64 = 1e9;

fn track_cmd(a: &TrackArgs, force: bool) -> Result<()> {
    let start = Instant::now();
    let mut outs = crate::outputs(
        force,
        &[Some(a.lattice.as_path()), a.beam.beam.as_deref()],
        &[Some(a.output.as_path())],
    )?;
    let lattice = Lattice::read(&a.lattice, a.line.as_deref())?;
    let program = Program::compile(&lattice);
    let reference = a.beam.reference()?;
    let histogram = histogram_arg(&a.histogram)?;
    let aperture = a.aperture.unwrap_or(f64::INFINITY);
    if !(aperture == f64::INFINITY || positive(aperture)) {
        bail!("--aperture must be positive");
    }
    if a.passes == 0 {
        bail!("--passes must be at least 1");
    }
    let particles = a.beam.particles(&reference)?;
    let n = particles.len();
    let initial = Moments::of(&particles);
    // Watch points write every particle at every `interval`-th pass: say before the run when that
    // adds up to a lot (about 7 Parquet columns of 8 bytes per particle, before compression).
    let watch_bytes: f64 = program
        .steps
        .iter()
        .map(|s| match s {
            Step::Watch { interval, .. } => f64::from(a.passes.div_ceil((*interval).max(1))) * n as f64 * 56.0,
            _ => 0.0,
        })
        .sum();
    if watch_bytes > WATCH_WARN_BYTES {
        eprintln!(
            "warning: the watch points will write about {} ({} particles × passes × watch points); use WATCH's INTERVAL or fewer --passes to write less",
            warpdrive_core::limits::human(watch_bytes),
            n
        );
    }
    // Everything is written into a staged directory that replaces the output only when the run
    // succeeded (no partial watch files, no stale files of an earlier run).
    let dir = outs.dir(&a.output)?;
    let (mut backend, device) = make_backend(
        &a.common,
        &program,
        particles,
        reference,
        aperture,
        histogram,
        a.launch_per_element,
        a.min_blocks,
    )?;
    let (flops, nmaps) = program.map_flops();
    eprintln!(
        "beam: {} elements ({} map elements, {} flops per particle and pass), {:.3} m, {} particles, {} passes on {device}",
        lattice.elements.len(),
        nmaps,
        flops,
        program.length,
        n,
        a.passes
    );
    let (progress, _bar) = crate::progress_bar("passes", u64::from(a.passes), "passes");
    let root = a.lattice.file_stem().map_or("beam".into(), |s| s.to_string_lossy().into_owned());
    let mut moments_rows: Vec<(String, u32, f64, Moments)> = Vec::new();
    // WATCH file names used at more than one place of the line (their files get `-atK`).
    let mut uses: std::collections::HashMap<&str, usize> = Default::default();
    for s in &program.steps {
        if let Step::Watch { filename, .. } = s {
            *uses.entry(filename.as_str()).or_default() += 1;
        }
    }
    let shared_names: std::collections::HashSet<&str> = uses.into_iter().filter(|(_, n)| *n > 1).map(|(f, _)| f).collect();
    let mut watch_sizes = Vec::new();
    let mut written = Vec::new();
    let out = dir.clone();
    let t0 = Instant::now();
    let lsc_stats = track(
        &program,
        backend.as_mut(),
        &TrackOptions {
            passes: a.passes,
            aperture,
            histogram,
            charge: a.beam.charge,
            reference,
        },
        &mut |ev: WatchEvent| {
            let shared = shared_names.contains(ev.filename);
            let file = watch_file(&out, ev.filename, &root, ev.pass, a.passes, shared.then_some(ev.element));
            let mut t = to_table(ev.particles, &reference);
            t.meta("element", ev.name);
            t.meta("pass", ev.pass.to_string());
            t.meta("s", ev.position.to_string());
            t.write_parquet(&file).map_err(|e| e.to_string())?;
            written.push(file);
            if warpdrive_core::output::interrupted() {
                return Err("interrupted".to_string());
            }
            if ev.pass == 0 {
                watch_sizes.push((ev.position, ev.moments.rms(0), ev.moments.rms(2), ev.name.to_string()));
            }
            moments_rows.push((ev.name.to_string(), ev.pass, ev.position, ev.moments));
            Ok(())
        },
        &mut |p| progress.add(u64::from(p) - progress.done()),
    )
    .map_err(|e| anyhow::anyhow!(e))?;
    let tracking = t0.elapsed().as_secs_f64();
    let fin = backend.particles().map_err(|e| anyhow::anyhow!(e))?;
    let mut t = to_table(&fin, &reference);
    t.meta("command", crate::command_line());
    t.meta("lattice", a.lattice.display().to_string());
    t.meta("line", &lattice.line);
    t.meta("passes", a.passes.to_string());
    t.meta("p_central", reference.p_central.to_string());
    t.write_parquet(&dir.join("final.parquet"))?;
    write_moments(&dir.join("moments.parquet"), &moments_rows)?;
    let last = Moments::of(&fin);
    let lost = n - last.alive;
    println!(
        "line {} ({} elements, {:.4} m), {n} particles, {} passes on {device}",
        lattice.line,
        lattice.elements.len(),
        program.length,
        a.passes
    );
    println!(
        "{:<12} {:>14} {:>14} {:>14} {:>14} {:>12}",
        "", "σx [m]", "σy [m]", "εx [m rad]", "εy [m rad]", "σδ"
    );
    for (label, m) in [("initial", &initial), ("final", &last)] {
        println!(
            "{label:<12} {:>14.6e} {:>14.6e} {:>14.6e} {:>14.6e} {:>12.4e}",
            m.rms(0),
            m.rms(2),
            m.emittance(0),
            m.emittance(1),
            m.rms(5)
        );
    }
    if lost > 0 {
        let mut by: std::collections::BTreeMap<u32, usize> = Default::default();
        fin.lost_at.iter().filter(|&&l| l > 0).for_each(|&l| *by.entry(l).or_default() += 1);
        let list: Vec<String> = by
            .iter()
            .take(8)
            .map(|(e, c)| format!("{} ×{c}", program.names[*e as usize - 1]))
            .collect();
        println!(
            "lost: {lost} particles (flagged in final.parquet: lost_at, lost_pass) — {}",
            list.join(", ")
        );
    } else {
        println!("lost: none");
    }
    for (k, s) in lsc_stats.iter().enumerate().take(3) {
        println!(
            "LSC kick {k} (last pass): peak current {:.4e} A, r_b {:.3e} m, max |V| {:.4e} V",
            s.peak_current,
            s.radius,
            s.voltage.iter().fold(0.0f64, |m, v| m.max(v.abs()))
        );
    }
    let rate = n as f64 * f64::from(a.passes) * nmaps as f64 / tracking;
    println!(
        "tracking: {tracking:.3} s ({rate:.3e} particle-elements/s); total {:.2} s",
        start.elapsed().as_secs_f64()
    );
    if !a.no_plot {
        let env = warpdrive_beam::optics::envelope(&lattice, &initial.sigma, 50.0);
        let png = dir.join("sizes.png");
        warpdrive_beam::optics::plot_sizes(&png, &format!("Beam sizes along {}", lattice.line), &env, &watch_sizes)?;
        written.push(png);
    }
    outs.commit()?;
    println!(
        "wrote {} (final.parquet, moments.parquet{}{})",
        a.output.display(),
        if written.is_empty() { "" } else { ", " },
        written
            .iter()
            .filter_map(|p| p.file_name())
            .map(|f| f.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

/// ELEGANT-style file name: `%s` → the lattice's stem; `.parquet` replaces any extension;
/// with several passes the pass number is appended, and the element index where one file name
/// is used at several places of the line.
fn watch_file(dir: &Path, filename: &str, root: &str, pass: u32, passes: u32, element: Option<usize>) -> PathBuf {
    let name = filename.replace("%s", root);
    let stem = Path::new(&name)
        .file_stem()
        .map_or(name.clone(), |s| s.to_string_lossy().into_owned());
    let mut stem: String = stem.chars().map(|c| if c == '/' || c == '\\' { '_' } else { c }).collect();
    if let Some(e) = element {
        stem = format!("{stem}-at{e}");
    }
    if passes > 1 {
        dir.join(format!("{stem}-pass{pass:05}.parquet"))
    } else {
        dir.join(format!("{stem}.parquet"))
    }
}

fn write_moments(path: &Path, rows: &[(String, u32, f64, Moments)]) -> Result<()> {
    let mut t = Table::default();
    t.push("pass", Column::I64(rows.iter().map(|r| i64::from(r.1)).collect()));
    t.push("s", Column::F64(rows.iter().map(|r| r.2).collect()));
    t.push("alive", Column::I64(rows.iter().map(|r| r.3.alive as i64).collect()));
    let names = ["x", "xp", "y", "yp", "s", "delta"];
    for (k, n) in names.iter().enumerate() {
        t.push(&format!("mean_{n}"), Column::F64(rows.iter().map(|r| r.3.mean[k]).collect()));
        t.push(&format!("sigma_{n}"), Column::F64(rows.iter().map(|r| r.3.rms(k)).collect()));
    }
    t.push("emittance_x", Column::F64(rows.iter().map(|r| r.3.emittance(0)).collect()));
    t.push("emittance_y", Column::F64(rows.iter().map(|r| r.3.emittance(1)).collect()));
    t.meta("elements", rows.iter().map(|r| r.0.as_str()).collect::<Vec<_>>().join(","));
    t.write_parquet(path)?;
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

fn bench_beam_args(n: usize) -> BeamArgs {
    BeamArgs {
        p_central: 1956.951,
        momentum: None,
        particle: "electron".into(),
        beam: None,
        particles: n,
        beta_x: 3.0,
        alpha_x: 0.0,
        emit_x: 1e-8,
        beta_y: 3.0,
        alpha_y: 0.0,
        emit_y: 1e-8,
        sigma_s: 1e-3,
        sigma_delta: 1e-3,
        seed: 1,
        charge: 1e-9,
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
    let reference = bench_beam_args(1).reference()?;
    let time_run = |backend: &mut dyn Backend, program: &Program, passes: u32| -> Result<f64> {
        let t = Instant::now();
        track(
            program,
            backend,
            &TrackOptions {
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
        let beam = gaussian(&bench_beam_args(b.cpu_particles).spec());
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
        let beam = gaussian(&bench_beam_args(b.particles).spec());
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

/// A positive, finite number (NaN is not).
fn positive(v: f64) -> bool {
    v > 0.0 && v.is_finite()
}
