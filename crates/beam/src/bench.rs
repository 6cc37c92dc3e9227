//! `warpdrive bench beam` as a library call: a Gaussian beam of 1 GeV/c electrons through 10
//! FODO cells (20 quadrupoles, 20 drifts) as maps only and with LSCDRIFT, per CPU thread count,
//! or on a GPU for the precise/fast builds, fused or one launch per element, register bounds
//! and LSC histogram strategies (docs/performance/beam.md cites the report). The benchmark
//! lines can be written as ELEGANT lattices ([`Lattices`]) to feed other codes the same line.

use crate::beam::{gaussian, BeamSpec, Particles, Plane, Reference};
use crate::gpu::{GpuBackend, GpuOptions};
use crate::lattice::{bench_lte, parse};
use crate::lsc::Histogram;
use crate::program::Program;
use crate::track::{track, Backend, CpuBackend, TrackOptions};
use std::path::Path;
use std::time::Instant;
use warpdrive_core::bench::{self, BenchReport, Lines};
use warpdrive_core::engine::{Control, Error, ParamError, Result};
use warpdrive_core::output::Staged;

/// What to time; `Default` is the command line's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BenchOptions {
    /// Particles of the GPU timings.
    pub particles: usize,
    /// Particles of the CPU timings.
    pub cpu_particles: usize,
    /// Passes of the map-only benchmark (in one launch on the GPU).
    pub passes: Vec<u32>,
    /// CPU thread counts (empty: 1 and all cores).
    pub threads: Vec<usize>,
}

impl Default for BenchOptions {
    fn default() -> Self {
        Self {
            particles: 20_000_000,
            cpu_particles: 1_000_000,
            passes: vec![1, 20],
            threads: Vec::new(),
        }
    }
}

/// Host bytes a benchmark particle costs: its coordinates and loss flags (64 bytes) in the
/// generated beam, the copy a run tracks and the copy a GPU back end stages.
const BYTES_PER_PARTICLE: u64 = 3 * 64;

fn check_particles(param: &'static str, n: usize) -> Result<()> {
    if n == 0 {
        return Err(ParamError::new(param, "must be at least 1").into());
    }
    warpdrive_core::limits::check_alloc(param, n as u64, BYTES_PER_PARTICLE, "time fewer particles")?;
    Ok(())
}

/// The benchmark beam: 1 GeV/c electrons, β = 3 m, ε = 1e-8 m rad in both planes.
fn bench_beam(n: usize) -> Particles {
    let plane = Plane {
        beta: 3.0,
        alpha: 0.0,
        emittance: 1e-8,
    };
    gaussian(&BeamSpec {
        x: plane,
        y: plane,
        sigma_s: 1e-3,
        sigma_delta: 1e-3,
        particles: n,
        seed: 1,
    })
}

/// The benchmark lines as ELEGANT lattices, `bench-maps.lte` and `bench-lsc.lte` in a
/// directory, staged before the work (existing files refused without `force`) and written by
/// [`Lattices::save`].
pub struct Lattices(Vec<(Staged, String)>);

impl Lattices {
    pub fn prepare(dir: &Path, force: bool) -> Result<Self> {
        let mut files = Vec::new();
        for (name, lsc) in [("bench-maps.lte", false), ("bench-lsc.lte", true)] {
            let out = Staged::file(&dir.join(name), force, &[])?;
            files.push((out, bench_lte(lsc)));
        }
        Ok(Self(files))
    }

    pub fn save(self) -> Result<()> {
        for (out, text) in self.0 {
            out.write(text.as_bytes())?;
        }
        Ok(())
    }
}

/// The rows of the report, printed as they are measured.
struct Rows<'a> {
    lines: Lines<'a>,
    json: Vec<serde_json::Value>,
    /// FLOPs per particle and pass (the CPU's and precise GPU's order; the fast GPU form's), and
    /// the map elements that do them.
    flops: usize,
    fast_flops: usize,
    maps: usize,
}

impl Rows<'_> {
    /// One measurement; `flops` per particle and pass for map-only lines (LSC work is not counted
    /// in FLOPs: None).
    #[allow(clippy::too_many_arguments)]
    fn row(&mut self, what: String, n: usize, passes: u32, elements: usize, secs: f64, flops: Option<usize>, extra: serde_json::Value) {
        let pe = n as f64 * f64::from(passes) * elements as f64;
        let ns = secs * 1e9 / pe;
        let gflops = flops.map(|f| pe * f as f64 / self.maps as f64 / secs / 1e9);
        let rate = gflops.map_or(String::new(), |g| format!("{g:>10.1} GFLOP/s"));
        (self.lines)(&format!(
            "{what:<58} {n:>10} {passes:>6} {secs:>10.4} s {ns:>10.4} ns/particle-element {rate}"
        ));
        self.json.push(serde_json::json!({"what": what, "particles": n, "passes": passes, "seconds": secs, "ns_per_particle_element": ns, "gflops": gflops, "extra": extra}));
    }
}

/// Track `passes` passes of `program` on `backend`; wall-clock seconds (waiting for the device).
fn time_run(backend: &mut dyn Backend, program: &Program, passes: u32, reference: Reference) -> Result<f64> {
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
    .map_err(Error::Failed)?;
    Ok(t.elapsed().as_secs_f64())
}

/// Time the benchmark on the control's device (`auto`: the first GPU if CUDA works, else the
/// CPU), printing each row to `lines` as it is measured.
pub fn run(o: &BenchOptions, ctl: &Control, lines: Lines) -> Result<BenchReport> {
    let threads = bench::thread_counts(&o.threads)?;
    if o.passes.contains(&0) {
        return Err(ParamError::new("passes", ": every pass count must be at least 1").into());
    }
    let gpu = bench::gpus(ctl)?.map(|d| d[0]);
    match gpu {
        None => check_particles("cpu_particles", o.cpu_particles)?,
        Some(_) => check_particles("particles", o.particles)?,
    }
    let program = |lsc: bool, name: &str| -> Result<Program> {
        let lattice = parse(&bench_lte(lsc), name, None).map_err(|e| Error::Failed(e.to_string()))?;
        Ok(Program::compile(&lattice))
    };
    let maps = program(false, "<bench-maps>")?;
    let lsc = program(true, "<bench-lsc>")?;
    let (flops, nmaps) = maps.map_flops();
    let fast_flops = maps.map_fast_flops();
    lines(&format!("benchmark line: 10 FODO cells = 20 quadrupoles (L 0.2 m) + 20 drifts (0.8 m); {flops} flops per particle and pass in {nmaps} map elements ({:.1} per element; the GPU's fast form {fast_flops})", flops as f64 / nmaps as f64));
    let mut rows = Rows {
        lines,
        json: Vec::new(),
        flops,
        fast_flops,
        maps: nmaps,
    };
    match gpu {
        None => cpu(o, &threads, &maps, &lsc, ctl, &mut rows)?,
        Some(d) => gpu_runs(o, d, &maps, &lsc, ctl, &mut rows)?,
    }
    let mut report = serde_json::Map::new();
    report.insert("flops_per_particle_pass".into(), serde_json::json!(flops));
    report.insert("fast_flops_per_particle_pass".into(), serde_json::json!(fast_flops));
    report.insert("map_elements".into(), serde_json::json!(nmaps));
    report.insert("rows".into(), serde_json::Value::Array(rows.json));
    Ok(BenchReport {
        json: serde_json::to_string_pretty(&serde_json::Value::Object(report)).map_err(|e| Error::Failed(e.to_string()))?,
    })
}

/// Maps for each pass count, then quadrupoles + LSCDRIFT, on each thread count.
fn cpu(o: &BenchOptions, threads: &[usize], maps: &Program, lsc: &Program, ctl: &Control, rows: &mut Rows) -> Result<()> {
    let reference = Reference::electron(crate::engine::DEFAULT_P_CENTRAL);
    let beam = bench_beam(o.cpu_particles);
    let backend = || CpuBackend {
        particles: beam.clone(),
        reference,
        aperture: f64::INFINITY,
        histogram: Histogram::BlockAtomic,
    };
    for &t in threads {
        for &passes in &o.passes {
            let mut cpu = backend();
            let secs = bench::timed(ctl, t, || time_run(&mut cpu, maps, passes, reference))?.0?;
            rows.row(
                format!("cpu {t} threads: maps"),
                o.cpu_particles,
                passes,
                rows.maps,
                secs,
                Some(rows.flops),
                serde_json::json!({"threads": t}),
            );
        }
        let mut cpu = backend();
        let secs = bench::timed(ctl, t, || time_run(&mut cpu, lsc, 1, reference))?.0?;
        rows.row(
            format!("cpu {t} threads: quads + LSCDRIFT (256 bins)"),
            o.cpu_particles,
            1,
            40,
            secs,
            None,
            serde_json::json!({"threads": t}),
        );
    }
    Ok(())
}

/// Kernel time of the maps for (precise, one launch per element, blocks per SM) and each pass
/// count (precise: one pass), then quadrupoles + LSCDRIFT for each histogram strategy.
fn gpu_runs(o: &BenchOptions, device: usize, maps: &Program, lsc: &Program, ctl: &Control, rows: &mut Rows) -> Result<()> {
    let reference = Reference::electron(crate::engine::DEFAULT_P_CENTRAL);
    let beam = bench_beam(o.particles);
    let mut configs: Vec<(bool, bool, u32)> = vec![(false, false, 0), (false, true, 0), (true, false, 0), (true, true, 0)];
    configs.extend([2, 3, 4].map(|m| (false, false, m)));
    for (precise, per_element, min_blocks) in configs {
        for &passes in &o.passes {
            if precise && passes > 1 {
                continue;
            }
            ctl.check()?;
            let opts = GpuOptions {
                device,
                precise,
                per_element,
                histogram: Histogram::BlockAtomic,
                aperture: f64::INFINITY,
                min_blocks,
                roll: crate::gpu::roll_from_env(),
            };
            let mut g = GpuBackend::new(maps, &beam, reference, opts)?;
            time_run(&mut g, maps, 1, reference)?; // warm-up (module load, clocks)
            g.timing = Default::default();
            let secs = time_run(&mut g, maps, passes, reference)?;
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
            rows.row(
                label + " (kernel time)",
                o.particles,
                passes,
                rows.maps,
                kernel_s,
                Some(if precise { rows.flops } else { rows.fast_flops }),
                serde_json::json!({"launches": g.timing.launches, "wall_seconds": secs, "min_blocks": min_blocks}),
            );
        }
    }
    for h in Histogram::ALL {
        ctl.check()?;
        let opts = GpuOptions {
            device,
            precise: false,
            per_element: false,
            histogram: h,
            aperture: f64::INFINITY,
            min_blocks: crate::gpu::DEFAULT_MIN_BLOCKS,
            roll: crate::gpu::roll_from_env(),
        };
        let mut g = GpuBackend::new(lsc, &beam, reference, opts)?;
        time_run(&mut g, lsc, 1, reference)?;
        g.timing = Default::default();
        let secs = time_run(&mut g, lsc, 1, reference)?;
        let fft = g.fft_fallback().map_or("cuFFT".to_string(), |w| format!("host FFT ({w})"));
        rows.row(
            format!("GPU: quads + LSCDRIFT (256 bins), histogram {}", h.name()),
            o.particles,
            1,
            40,
            secs,
            None,
            serde_json::json!({"maps_ms": g.timing.maps_ms, "lsc_ms": g.timing.lsc_ms, "fft": fft}),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpdrive_core::engine::{Device, Style};

    fn cpu() -> Control {
        Control::new().device(Device::Cpu)
    }

    #[test]
    fn options_are_checked_with_their_names() {
        let refused = |o: BenchOptions| run(&o, &cpu(), &mut |_| {}).unwrap_err().render(Style::Cli);
        let o = BenchOptions {
            threads: vec![0],
            ..Default::default()
        };
        assert_eq!(refused(o), "--threads: every thread count must be at least 1");
        let o = BenchOptions {
            passes: vec![1, 0],
            ..Default::default()
        };
        assert_eq!(refused(o), "--passes: every pass count must be at least 1");
        let o = BenchOptions {
            cpu_particles: usize::MAX / 2,
            ..Default::default()
        };
        assert!(refused(o).starts_with("--cpu-particles: "));
    }

    #[test]
    fn a_small_beam_is_timed_per_thread_count() {
        let o = BenchOptions {
            cpu_particles: 1000,
            passes: vec![2],
            threads: vec![1, 2],
            ..Default::default()
        };
        let mut printed = Vec::new();
        let r = run(&o, &cpu(), &mut |l| printed.push(l.to_string())).unwrap();
        let v: serde_json::Value = serde_json::from_str(&r.json).unwrap();
        let rows = v["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 4, "{rows:?}");
        assert_eq!(rows[2]["what"], "cpu 2 threads: maps");
        assert_eq!((rows[0]["particles"].as_u64(), rows[0]["passes"].as_u64()), (Some(1000), Some(2)));
        assert_eq!(printed.len(), 5, "{printed:?}");
    }
}
