//! `warpdrive bench spline --against photospline` (issue #34): photospline and warpdrive evaluating
//! the same random points of the same tables on the CPU, side by side in one run.
//!
//! photospline runs in a child process of the interpreter given (`--python`; it must import
//! `photospline` and `numpy`), through `anchor_photospline.py`: points go in on its stdin, its
//! times and values come back on its stdout. Both sides time the best of `repeats` calls over all
//! points, in `rounds` alternating rounds (photospline, then warpdrive; each side's fastest round
//! counts); warpdrive's side is the evaluation behind `spline eval` and `Table.eval` (the CPU
//! path of [`crate::points::evaluate_cpu`]) on a pool of one thread, then of every thread count
//! asked for. Run it under `taskset -c N` to put both on one core: the child inherits the
//! affinity. The values are compared too (photospline evaluates in float32 arithmetic:
//! ~1e-7 of the coefficient scale).

use crate::eval::uniform_points;
use crate::points::evaluate_cpu;
use crate::SplineTable;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use warpdrive_core::bench::{self, BenchReport, Lines};
use warpdrive_core::engine::{Cancelled, Control, Error, ParamError, Result};
use warpdrive_core::progress::Progress;

/// The tables of the comparison (relative to `$WARPDRIVE_DATA/splines`).
pub const TABLES: &[&str] = &[
    "photospline_test/test_spline_1d.fits",
    "photospline_test/test_spline_2d.fits",
    "photospline_test/test_spline_3d.fits",
    "photospline_test/test_spline_4d.fits",
    "photospline_test/test_spline_5d.fits",
    "icetray_photospline_ems/ems_z0_a0.pt.abs.fits",
    "icetray_photospline_ems/ems_z0_a0.pt.prob.fits",
];

const SCRIPT: &str = include_str!("anchor_photospline.py");

/// What to compare.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnchorOptions {
    /// The Python interpreter that imports photospline.
    pub python: PathBuf,
    /// Random points per table (uniform in its extents).
    pub points: usize,
    /// Calls timed per side; the fastest counts.
    pub repeats: usize,
    /// Rounds per table, each timing photospline and then warpdrive; each side's fastest round
    /// counts. On shared machines one core's speed moved by 2x within seconds (the GPU host,
    /// docs/performance/spline.md), so the two sides are timed alternately, not one after the other.
    pub rounds: usize,
    /// warpdrive's thread counts (empty: 1 and all cores); photospline runs on one.
    pub threads: Vec<usize>,
    pub command: String,
}

/// photospline's side of one table.
struct Anchor {
    value_s: f64,
    gradient_s: f64,
    version: String,
    values: Vec<f64>,
}

fn run_photospline(o: &AnchorOptions, ctl: &Control, table: &std::path::Path, nd: usize, pts: &[f64]) -> Result<Anchor> {
    let unusable = |why: String| -> Error {
        ParamError::new(
            "python",
            format!(
                "{}: photospline cannot be run with it ({why}); build photospline's Python module as docs/performance/spline.md says and put it on PYTHONPATH",
                o.python.display()
            ),
        )
        .into()
    };
    // photospline's evaluation is single-threaded; numpy's bundled OpenBLAS would otherwise start
    // a thread per CPU of the machine inside a one-core `taskset`.
    let mut child = Command::new(&o.python)
        .arg("-c")
        .arg(SCRIPT)
        .env("OPENBLAS_NUM_THREADS", "1")
        .env("OMP_NUM_THREADS", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| unusable(e.to_string()))?;
    let head = serde_json::json!({"table": table, "ndim": nd, "points": pts.len() / nd, "repeats": o.repeats});
    // Feed and read on threads, so that this one can watch for Ctrl-C: a cancelled run kills
    // photospline's process rather than leaving it to finish its timing.
    let mut stdin = child.stdin.take().expect("piped stdin");
    let bytes: Vec<u8> = pts.iter().flat_map(|v| v.to_le_bytes()).collect();
    let feeder = std::thread::spawn(move || {
        // A child that exits early (import error) closes its stdin: its answer says why.
        let _ = stdin
            .write_all(format!("{head}\n").as_bytes())
            .and_then(|_| stdin.write_all(&bytes));
    });
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>));
    let status = loop {
        if let Some(st) = child.try_wait().map_err(|e| unusable(e.to_string()))? {
            break st;
        }
        if ctl.progress.should_stop() {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Cancelled.into());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let _ = feeder.join();
    let out = std::process::Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    let nl = out.stdout.iter().position(|&b| b == b'\n');
    let Some(nl) = nl.filter(|_| out.status.success()) else {
        return Err(unusable(format!("{}; {}", out.status, stderr.trim())));
    };
    let meta: serde_json::Value =
        serde_json::from_slice(&out.stdout[..nl]).map_err(|e| unusable(format!("its answer is not JSON: {e}")))?;
    if let Some(e) = meta.get("error") {
        return Err(unusable(e.as_str().unwrap_or("?").to_string()));
    }
    let values: Vec<f64> = out.stdout[nl + 1..]
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")))
        .collect();
    if values.len() != pts.len() / nd {
        return Err(unusable(format!("{} values for {} points", values.len(), pts.len() / nd)));
    }
    let num = |k: &str| {
        meta.get(k)
            .and_then(serde_json::Value::as_f64)
            .ok_or_else(|| unusable(format!("no {k}")))
    };
    Ok(Anchor {
        value_s: num("value_s")?,
        gradient_s: num("gradient_s")?,
        version: meta.get("version").and_then(|v| v.as_str()).unwrap_or("unknown").to_string(),
        values,
    })
}

/// Compare photospline and warpdrive on every table of [`TABLES`].
pub fn run(o: &AnchorOptions, ctl: &Control, lines: Lines) -> Result<BenchReport> {
    let threads = bench::thread_counts(&o.threads)?;
    if o.points == 0 || o.repeats == 0 || o.rounds == 0 {
        return Err(ParamError::new("points", "and repeats and rounds must be at least 1").into());
    }
    warpdrive_core::limits::check_alloc("points", o.points as u64, 8 * 16, "compare fewer points")?;
    let dir = warpdrive_core::data::data_dir().join("splines");
    let hidden = Progress::hidden();
    let mut rows = Vec::new();
    lines(&format!(
        "{:<34} {:>10} {:>10} {:>7}   {:>10} {:>10} {:>7}   {:>9}",
        "table (one core)", "ps value/s", "wd value/s", "wd/ps", "ps grad/s", "wd grad/s", "wd/ps", "max|Δ|/sc"
    ));
    for name in TABLES {
        ctl.check()?;
        let path = dir.join(name);
        let t = SplineTable::read(&path)?;
        let nd = t.ndim();
        let pts = uniform_points(&t, o.points, 1);
        let n = o.points as f64;
        // Fastest times per side over the rounds: photospline's, and ours per thread count.
        let mut anchor = run_photospline(o, ctl, &path, nd, &pts)?;
        let mut ours = vec![(f64::INFINITY, f64::INFINITY); threads.len()];
        for round in 0..o.rounds {
            if round > 0 {
                let again = run_photospline(o, ctl, &path, nd, &pts)?;
                anchor.value_s = anchor.value_s.min(again.value_s);
                anchor.gradient_s = anchor.gradient_s.min(again.gradient_s);
            }
            for (&th, best) in threads.iter().zip(ours.iter_mut()) {
                best.0 = best
                    .0
                    .min(bench::fastest(ctl, th, o.repeats, || evaluate_cpu(&t, &pts, false, &hidden))?);
                best.1 = best
                    .1
                    .min(bench::fastest(ctl, th, o.repeats, || evaluate_cpu(&t, &pts, true, &hidden))?);
            }
        }
        let mut wd = serde_json::Map::new();
        let (mut v1, mut g1, mut va, mut ga) = (0.0, 0.0, 0.0, 0.0);
        for (&th, &(vs, gs)) in threads.iter().zip(&ours) {
            let (v, g) = (n / vs, n / gs);
            if th == threads[0] {
                (v1, g1) = (v, g);
            }
            (va, ga) = (v, g);
            wd.insert(format!("threads {th}"), serde_json::json!({"value_per_s": v, "gradient_per_s": g}));
        }
        // Agreement: |photospline − warpdrive| against Σ|c·ΠB| (the float32 rounding scale).
        let ours = evaluate_cpu(&t, &pts, false, &hidden);
        let worst = pts
            .chunks_exact(nd)
            .zip(ours.iter().zip(&anchor.values))
            .map(|(x, (a, b))| (a - b).abs() / t.magnitude(x).max(f64::MIN_POSITIVE))
            .fold(0.0, f64::max);
        let (pv, pg) = (n / anchor.value_s, n / anchor.gradient_s);
        let label = name.rsplit('/').next().unwrap_or(name).trim_end_matches(".fits");
        lines(&format!(
            "{:<34} {pv:>10.3e} {v1:>10.3e} {:>6.2}×   {pg:>10.3e} {g1:>10.3e} {:>6.2}×   {worst:>9.1e}",
            format!("{label} ({nd}-D, orders {:?})", t.order),
            v1 / pv,
            g1 / pg
        ));
        if threads.len() > 1 {
            lines(&format!(
                "{:<34} warpdrive on {} threads: value {va:.3e}/s ({:.2}× one thread), gradient {ga:.3e}/s ({:.2}×)",
                "",
                threads[threads.len() - 1],
                va / v1,
                ga / g1
            ));
        }
        rows.push(serde_json::json!({
            "table": name,
            "ndim": nd,
            "orders": t.order,
            "photospline": {"value_per_s": pv, "gradient_per_s": pg, "version": anchor.version},
            "warpdrive": wd,
            "value_ratio_one_thread": v1 / pv,
            "gradient_ratio_one_thread": g1 / pg,
            "max_abs_difference_over_scale": worst,
        }));
    }
    let doc = serde_json::json!({
        "command": o.command,
        "points": o.points,
        "repeats": o.repeats,
        "rounds": o.rounds,
        "threads": threads,
        "python": o.python,
        "tables": rows,
    });
    Ok(BenchReport {
        json: format!("{doc:#}\n"),
    })
}
