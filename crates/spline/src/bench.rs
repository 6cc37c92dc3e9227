//! `warpdrive bench spline` as a library call: evaluation rates of the 3-D amplitude and 4-D
//! timing tables (per CPU thread count; on a GPU in both coefficient layouts), the Millipede
//! response matrix of a 1 km track (one CPU thread; GPU), and the solvers unfolding it
//! (docs/performance/spline.md cites the report).

use crate::eval::uniform_points;
use crate::millipede::event::Binning;
use crate::millipede::model::{direction, response, Bins, Hypothesis, Model, Response, Source};
use crate::millipede::solve::{unfold, SolveOptions, Solver};
use crate::millipede::synth::{generate, SynthOptions};
use crate::millipede::unfold::{load, ModelFiles};
use crate::SplineTable;
use warpdrive_core::bench::{self, BenchReport, Lines};
use warpdrive_core::engine::{Control, Error, ParamError, Result};
use warpdrive_photon::geometry::Geometry;

/// What to time; `Default` is the command line's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BenchOptions {
    /// Random points per GPU batch.
    pub points: usize,
    /// Points for the CPU timings (the rate is per point).
    pub cpu_points: usize,
    /// CPU thread counts of the evaluation and solver timings (empty: 1 and all cores).
    pub threads: Vec<usize>,
    /// How the benchmark was asked for (the report's `command`).
    pub command: String,
}

impl Default for BenchOptions {
    fn default() -> Self {
        Self {
            points: 10_000_000,
            cpu_points: 1_000_000,
            threads: Vec::new(),
            command: String::new(),
        }
    }
}

/// Bytes a benchmark point costs: four coordinates and up to five results (value and gradient
/// of the 4-D table).
const BYTES_PER_POINT: u64 = 9 * 8;

fn check_points(param: &'static str, n: usize) -> Result<()> {
    if n == 0 {
        return Err(ParamError::new(param, "must be at least 1").into());
    }
    warpdrive_core::limits::check_alloc(param, n as u64, BYTES_PER_POINT, "time fewer points")?;
    Ok(())
}

/// The benchmark event: a 1 km track of 100 segments of 10 m through the detector, 10 TeV each,
/// binned at 5 PE per bin on the 5 160 DOMs of the IceCube geometry.
fn bench_event(model: &Model, geo: &Geometry) -> Result<(Vec<Source>, Bins)> {
    let h = Hypothesis::Track {
        vertex: [450.0, 250.0, 400.0],
        dir: direction(0.9, 0.5),
        time: 0.0,
        length: 1000.0,
        spacing: 10.0,
    };
    let sources = h.sources();
    let e = vec![10_000.0; sources.len()];
    let ev = generate(model, geo, &sources, &e, &SynthOptions::default(), 0);
    let bins = ev.bin(geo, &Binning::default()).map_err(|e| Error::Failed(e.to_string()))?;
    Ok((sources, bins))
}

/// The report as it grows: printed lines and the JSON object.
struct Report<'a> {
    lines: Lines<'a>,
    json: serde_json::Map<String, serde_json::Value>,
}

impl Report<'_> {
    fn add(&mut self, line: String, key: String, value: serde_json::Value) {
        (self.lines)(&line);
        self.json.insert(key, value);
    }
}

/// Time the benchmark on the control's device (`auto`: the first GPU if CUDA works, else the
/// CPU), printing each row to `lines` as it is measured.
pub fn run(o: &BenchOptions, ctl: &Control, lines: Lines) -> Result<BenchReport> {
    let threads = bench::thread_counts(&o.threads)?;
    check_points("cpu_points", o.cpu_points)?;
    let gpu = bench::gpus(ctl)?.map(|d| d[0]);
    if gpu.is_some() {
        check_points("points", o.points)?;
    }
    let ems = warpdrive_core::data::data_dir().join("splines/icetray_photospline_ems");
    let tables = [
        ("amplitude 3-D", ems.join("ems_z0_a0.pt.abs.fits")),
        ("timing 4-D", ems.join("ems_z0_a0.pt.prob.fits")),
    ];
    let mut report = Report {
        lines,
        json: serde_json::Map::new(),
    };
    for (label, path) in &tables {
        let t = SplineTable::read(path)?;
        eval_cpu(label, &t, o.cpu_points, &threads, ctl, &mut report)?;
        if let Some(dev) = gpu {
            eval_gpu(label, &t, o.points, dev, ctl, &mut report)?;
        }
    }
    machine_scaling(&threads, ctl, &mut report)?;
    // Response matrix: 5 160 DOMs × 100 segments, then unfolding it.
    let (model, geo, _) = load(&ModelFiles::default())?;
    let (sources, bins) = bench_event(&model, &geo)?;
    let (l_cpu, cpu_s) = bench::timed(ctl, 1, || response(&model, &bins, &sources))?;
    report.add(
        format!(
            "response {} DOMs × {} segments ({} rows, {} bin edges): cpu 1 thread {:.3} s",
            bins.doms.len(),
            sources.len(),
            bins.rows(),
            bins.edges.len(),
            cpu_s
        ),
        "response cpu1 s".into(),
        serde_json::json!(cpu_s),
    );
    if let Some(dev) = gpu {
        response_gpu(&model, &bins, &sources, &l_cpu, cpu_s, dev, ctl, &mut report)?;
    }
    solvers(&l_cpu, &bins, &threads, ctl, &mut report)?;
    report.json.insert("command".into(), serde_json::json!(o.command));
    Ok(BenchReport {
        json: format!("{:#}\n", serde_json::Value::Object(report.json)),
    })
}

/// Timed calls per CPU rate, after one untimed call; the fastest counts (bench::fastest).
const CPU_REPEATS: usize = 3;

/// Pairs of adjacent calls (one thread, N threads) behind a scaling (bench::paired).
const SCALING_PAIRS: usize = 11;

/// Value and gradient rates on each thread count (the fastest of [`CPU_REPEATS`] calls), and
/// each further thread count's scaling over the first: the median over [`SCALING_PAIRS`] pairs of
/// adjacent calls, since two rates measured a few seconds apart on a shared machine differ by the
/// machine's phases, not only by the threads (docs/performance/spline.md).
fn eval_cpu(label: &str, t: &SplineTable, n: usize, threads: &[usize], ctl: &Control, report: &mut Report) -> Result<()> {
    let pts = uniform_points(t, n, 1);
    let call = |grad: bool| {
        if grad {
            t.gradient_many(&pts)
        } else {
            t.evaluate_many(&pts)
        }
    };
    for &th in threads {
        for grad in [false, true] {
            let s = bench::fastest(ctl, th, CPU_REPEATS, || call(grad))?;
            let rate = n as f64 / s;
            let what = if grad { "gradient" } else { "value" };
            report.add(
                format!("{label:<14} cpu {th:>2} thread(s) {what:<9} {rate:>12.3e} evals/s"),
                format!("{label} cpu{th} {what}"),
                serde_json::json!(rate),
            );
        }
    }
    let first = threads[0];
    for &th in threads.iter().filter(|&&th| th != first) {
        for grad in [false, true] {
            let timed = |k: usize| bench::timed(ctl, k, || call(grad)).map(|(_, s)| s);
            let p = bench::paired(ctl, SCALING_PAIRS, || timed(first), || timed(th))?;
            let (lo, hi) = p.ratio_range();
            let what = if grad { "gradient" } else { "value" };
            report.add(
                format!(
                    "{label:<14} cpu {th:>2} over {first} thread(s) {what:<9} {:>6.2}× (median of {SCALING_PAIRS} adjacent pairs; {lo:.2}–{hi:.2})",
                    p.median_ratio()
                ),
                format!("{label} cpu{th} over cpu{first} {what}"),
                crate::anchor::paired_json(&p, n as f64),
            );
        }
    }
    Ok(())
}

/// The machine's own scaling over the same thread counts ([`bench::machine_scaling`]): the
/// ceiling the evaluation's scaling above is to be read against.
fn machine_scaling(threads: &[usize], ctl: &Control, report: &mut Report) -> Result<()> {
    let first = threads[0];
    for &th in threads.iter().filter(|&&th| th != first) {
        // Against one thread, as the evaluation's scaling lines (the first count is 1 unless the
        // thread counts were given otherwise; the ceiling is per thread anyway).
        let p = bench::machine_scaling(ctl, th, SCALING_PAIRS)?;
        let (lo, hi) = p.ratio_range();
        report.add(
            format!(
                "machine itself  cpu {th:>2} over 1 thread(s) {:>6.2}× (arithmetic sharing nothing, plain threads; median of {SCALING_PAIRS} pairs; {lo:.2}–{hi:.2})",
                p.median_ratio()
            ),
            format!("machine cpu{th} over cpu1"),
            crate::anchor::paired_json(&p, 1.0),
        );
    }
    Ok(())
}

/// Value and gradient rates on the GPU in the standard and the window layout (the fastest of
/// five launches).
fn eval_gpu(label: &str, t: &SplineTable, n: usize, dev: usize, ctl: &Control, report: &mut Report) -> Result<()> {
    let pts = uniform_points(t, n, 2);
    for window in [false, true] {
        for grad in [false, true] {
            ctl.check()?;
            let opts = crate::gpu::EvalOptions {
                window,
                gradient: grad,
                repeats: 5,
                precise: false,
            };
            let (_, st) = crate::gpu::evaluate(t, &pts, dev, &opts)?;
            let rate = n as f64 / st.kernel_s;
            let name = format!(
                "{label} gpu {}{}",
                if window { "window" } else { "standard" },
                if grad { " gradient" } else { " value" }
            );
            report.add(
                format!(
                    "{name:<40} {rate:>12.3e} evals/s (kernel {:.3} ms, upload {:.1} ms, download {:.1} ms, {} regs, {} B local, coefficients {:.1} kB vs {:.1} kB)",
                    1e3 * st.kernel_s,
                    1e3 * st.upload_s,
                    1e3 * st.download_s,
                    st.registers,
                    st.local_bytes,
                    st.layout_bytes as f64 / 1e3,
                    4e-3 * t.coefficients.len() as f64
                ),
                name,
                serde_json::json!({"evals_per_s": rate, "kernel_s": st.kernel_s, "upload_s": st.upload_s, "download_s": st.download_s, "registers": st.registers, "coefficient_bytes": st.layout_bytes}),
            );
        }
    }
    Ok(())
}

/// The response matrix on the GPU in both layouts, against the CPU's.
#[allow(clippy::too_many_arguments)]
fn response_gpu(
    model: &Model,
    bins: &Bins,
    sources: &[Source],
    l_cpu: &Response,
    cpu_s: f64,
    dev: usize,
    ctl: &Control,
    report: &mut Report,
) -> Result<()> {
    for window in [false, true] {
        ctl.check()?;
        let opts = crate::gpu::EvalOptions {
            window,
            repeats: 5,
            ..Default::default()
        };
        let (l, st) = crate::gpu::response(model, bins, sources, dev, &opts)?;
        let worst = l
            .values
            .iter()
            .zip(&l_cpu.values)
            .map(|(a, c)| (a - c).abs())
            .fold(0.0f64, f64::max);
        let scale = l_cpu.values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let layout = if window { "window" } else { "standard" };
        report.add(
            format!(
                "response gpu {layout:<8} kernel {:.3} ms (+ upload {:.2} ms, download {:.2} ms) = {:.0}× one core (kernel), {:.0}× with transfers; max |ΔΛ| {:.2e} of max Λ {:.2e}; {} regs",
                1e3 * st.kernel_s,
                1e3 * st.upload_s,
                1e3 * st.download_s,
                cpu_s / st.kernel_s,
                cpu_s / (st.kernel_s + st.upload_s + st.download_s),
                worst,
                scale,
                st.registers
            ),
            format!("response gpu {layout}"),
            serde_json::json!({"kernel_s": st.kernel_s, "upload_s": st.upload_s, "download_s": st.download_s, "speedup_kernel": cpu_s / st.kernel_s}),
        );
    }
    Ok(())
}

/// Unfolding the response: each solver on each thread count.
fn solvers(l: &Response, bins: &Bins, threads: &[usize], ctl: &Control, report: &mut Report) -> Result<()> {
    for solver in [Solver::Newton, Solver::Pcg, Solver::Nnls] {
        for &threads in threads {
            let opts = SolveOptions {
                solver,
                ..Default::default()
            };
            let (sol, s) = bench::timed(ctl, threads, || unfold(l, &bins.charge, &bins.noise, &opts))?;
            let name = format!("unfold {solver:?} {threads} thread(s)").to_lowercase();
            report.add(
                format!(
                    "{name:<40} {s:>8.3} s ({} iterations after {} of NNLS, {}; total {:.1} TeV)",
                    sol.iterations,
                    sol.start_iterations,
                    if sol.converged { "converged" } else { "NOT converged" },
                    sol.energy.iter().sum::<f64>() / 1e3
                ),
                name,
                serde_json::json!({"seconds": s, "iterations": sol.iterations, "converged": sol.converged}),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpdrive_core::engine::{Device, Style};

    #[test]
    fn point_counts_are_checked_before_the_work() {
        let refused = |o: BenchOptions| {
            run(&o, &Control::new().device(Device::Cpu), &mut |_| {})
                .unwrap_err()
                .render(Style::Cli)
        };
        let o = BenchOptions {
            cpu_points: 0,
            ..Default::default()
        };
        assert_eq!(refused(o), "--cpu-points must be at least 1");
        let o = BenchOptions {
            cpu_points: usize::MAX / 2,
            ..Default::default()
        };
        assert!(refused(o).starts_with("--cpu-points: "));
        let o = BenchOptions {
            threads: vec![0],
            ..Default::default()
        };
        assert_eq!(refused(o), "--threads: every thread count must be at least 1");
    }
}

/// What `bench spline --fit` times: a synthetic fit ([`crate::fit::synthetic::problem`]) of
/// `bins` bins and `coefs` coefficients per axis over `dims` axes.
#[derive(Clone, Debug, PartialEq)]
pub struct FitBenchOptions {
    pub dims: usize,
    pub bins: usize,
    pub coefs: usize,
    pub smooth: f64,
    /// CPU thread counts (empty: 1 and all cores).
    pub threads: Vec<usize>,
    /// Skip the CPU timings above this many coefficients (their time grows as n³); 0: never.
    pub cpu_max_coefs: usize,
    pub command: String,
}

impl Default for FitBenchOptions {
    fn default() -> Self {
        Self {
            dims: 4,
            bins: 32,
            coefs: 10,
            smooth: 1e-2,
            threads: Vec::new(),
            cpu_max_coefs: 0,
            command: String::new(),
        }
    }
}

/// Time the GLAM fitter on the CPU (per thread count) and on the control's GPU, the same problem
/// and, where both ran, whether their coefficients are bit for bit the same.
pub fn fit(o: &FitBenchOptions, ctl: &Control, lines: Lines) -> Result<BenchReport> {
    use crate::fit::{gpu, synthetic, Problem};
    if o.dims == 0 || o.dims > crate::fit::MAX_FIT_DIM {
        return Err(ParamError::new("fit_dims", format!("{}: fits take 1 to {} axes", o.dims, crate::fit::MAX_FIT_DIM)).into());
    }
    if o.coefs < 3 || o.bins < o.coefs {
        return Err(ParamError::new(
            "fit_coefs",
            format!(
                "{} with {} bins per axis: at least 3 coefficients and no more than the bins",
                o.coefs, o.bins
            ),
        )
        .into());
    }
    let cells = (o.bins as u64).checked_pow(o.dims as u32).unwrap_or(u64::MAX);
    warpdrive_core::limits::check_alloc("fit_bins", cells, 3 * 8, "fit fewer bins")?;
    let threads = bench::thread_counts(&o.threads)?;
    let gpu_dev = bench::gpus(ctl)?.map(|d| d[0]);
    let s = synthetic::problem(o.dims, o.bins, o.coefs, o.smooth, 0, 1);
    let p = Problem::new(s.histogram(), &s.spec)?;
    let n: usize = p.naxes().iter().product();
    let mut report = Report {
        lines,
        json: serde_json::Map::new(),
    };
    report.add(
        format!(
            "fit {}-D: {} bins, {n} coefficients (degree 2, {} per axis), dense normal matrix {:.2} GB",
            o.dims,
            s.z.len(),
            o.coefs,
            8.0 * (n * n) as f64 / 1e9
        ),
        "fit problem".into(),
        serde_json::json!({"dims": o.dims, "bins": s.z.len(), "coefficients": n}),
    );
    let mut cpu: Option<(Vec<f64>, f64)> = None;
    if o.cpu_max_coefs == 0 || n <= o.cpu_max_coefs {
        for &t in &threads {
            // The control's progress: Ctrl-C is seen per block column, as in `spline fit`.
            let (r, secs) = bench::timed(ctl, t, || p.solve(&ctl.progress))?;
            let f = r?;
            report.add(
                format!("fit cpu {t:>2} thread(s) {secs:>10.3} s"),
                format!("fit cpu{t} s"),
                serde_json::json!(secs),
            );
            if t == 1 || cpu.is_none() {
                cpu = Some((f.coefficients, secs));
            }
        }
    }
    if let Some(dev) = gpu_dev {
        ctl.check()?;
        // The first call compiles or loads the kernels; the second is the one timed.
        let _ = gpu::solve(&p, dev, &ctl.progress)?;
        let t0 = std::time::Instant::now();
        let (g, st) = gpu::solve(&p, dev, &ctl.progress)?;
        let secs = t0.elapsed().as_secs_f64();
        let versus = cpu.as_ref().map(|(c, cpu_s)| {
            let same = c.iter().zip(&g.coefficients).all(|(a, b)| a.to_bits() == b.to_bits());
            (same, cpu_s / secs)
        });
        report.add(
            format!(
                "fit gpu ({}) {secs:>10.3} s: load {:.4} s, assemble {:.4} s, factor {:.4} s ({:.0} GFLOP/s, n³/3), solve {:.4} s, χ² on the CPU {:.4} s{}",
                st.device,
                st.load_s,
                st.assemble_s,
                st.factor_s,
                (n as f64).powi(3) / 3.0 / st.factor_s / 1e9,
                st.solve_s,
                st.finish_s,
                match versus {
                    Some((same, x)) => format!(
                        "; {x:.1}× the first CPU timing; coefficients {}",
                        if same { "bit for bit the CPU's" } else { "DIFFER from the CPU's" }
                    ),
                    None => String::new(),
                }
            ),
            "fit gpu".into(),
            serde_json::json!({"s": secs, "load_s": st.load_s, "finish_s": st.finish_s, "assemble_s": st.assemble_s, "factor_s": st.factor_s, "solve_s": st.solve_s,
                "device": st.device, "identical_to_cpu": versus.map(|v| v.0), "speedup_vs_cpu": versus.map(|v| v.1)}),
        );
    }
    report.json.insert("command".into(), serde_json::json!(o.command));
    Ok(BenchReport {
        json: format!("{:#}\n", serde_json::Value::Object(report.json)),
    })
}
