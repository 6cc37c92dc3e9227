//! `warpdrive bench spline --against photospline` (issue #34): photospline and warpdrive evaluating
//! the same random points of the same tables on the CPU, side by side in one run.
//!
//! photospline runs in a child process of the interpreter given (`--python`; it must import
//! `photospline` and `numpy`), through `anchor_photospline.py`: the points go in once per table,
//! then the child answers commands — time one value call, time one gradient, send the values —
//! on its stdin and stdout. The two sides are timed in adjacent pairs ([`bench::paired`]: one
//! photospline call, one warpdrive call, alternating which goes first), `pairs` pairs per table,
//! and a ratio is the median of the per-pair ratios: the machines this runs on change one core's
//! speed by up to 2x in phases of seconds (docs/performance/spline.md), which moved the earlier
//! measurement's ratios (each side's fastest of a few rounds) by as much. warpdrive's side is the
//! evaluation behind `spline eval` and `Table.eval` (the CPU path of
//! [`crate::points::evaluate_cpu`]) on a pool of one thread; every further thread count asked for
//! is paired with the one-thread call the same way (the scaling). Run it under `taskset -c N` to
//! put both on one core: the child inherits the affinity. The values are compared too
//! (photospline evaluates in float32 arithmetic: ~1e-7 of the coefficient scale).

use crate::eval::uniform_points;
use crate::points::evaluate_cpu;
use crate::SplineTable;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
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
    /// Pairs of adjacent calls (photospline, warpdrive) timed per table and quantity; the ratio is
    /// the median over the pairs.
    pub pairs: usize,
    /// warpdrive's thread counts (empty: 1 and all cores); photospline runs on one.
    pub threads: Vec<usize>,
    pub command: String,
}

/// Pairs per table and quantity by default: an odd number (the median is one pair's ratio), enough
/// that a slow phase spanning a few pairs cannot move it.
pub const DEFAULT_PAIRS: usize = 11;

/// What photospline's process sends back.
enum Answer {
    Line(String),
    Values(Vec<f64>),
    /// Its stdout closed (it exited or crashed).
    End,
}

/// photospline's process for one table, serving timing commands.
struct Photospline {
    child: Child,
    stdin: ChildStdin,
    answers: Receiver<Answer>,
    stderr: Option<std::thread::JoinHandle<Vec<u8>>>,
    python: PathBuf,
    version: String,
}

impl Photospline {
    /// An error naming the interpreter and what went wrong.
    fn unusable(python: &std::path::Path, why: String) -> Error {
        ParamError::new(
            "python",
            format!(
                "{}: photospline cannot be run with it ({why}); build photospline's Python module as docs/performance/spline.md says and put it on PYTHONPATH",
                python.display()
            ),
        )
        .into()
    }

    /// Start the child, hand it the table and the points, and wait until it has opened the table.
    fn start(o: &AnchorOptions, ctl: &Control, table: &std::path::Path, nd: usize, pts: &[f64]) -> Result<Self> {
        // photospline's evaluation is single-threaded; numpy's bundled OpenBLAS would otherwise
        // start a thread per CPU of the machine inside a one-core `taskset`.
        let mut child = Command::new(&o.python)
            .arg("-c")
            .arg(SCRIPT)
            .env("OPENBLAS_NUM_THREADS", "1")
            .env("OMP_NUM_THREADS", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Self::unusable(&o.python, e.to_string()))?;
        let mut stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut stderr_pipe = child.stderr.take().expect("piped stderr");
        let stderr = std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = stderr_pipe.read_to_end(&mut buf);
            buf
        });
        // Answers are read on a thread, so that this one can watch for Ctrl-C while waiting.
        let (tx, answers) = channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let mut line = String::new();
                if !matches!(r.read_line(&mut line), Ok(n) if n > 0) {
                    let _ = tx.send(Answer::End);
                    return;
                }
                let line = line.trim_end().to_string();
                let answer = match line.strip_prefix("values ").and_then(|n| n.parse::<usize>().ok()) {
                    Some(n) => {
                        let mut bytes = vec![0u8; 8 * n];
                        if r.read_exact(&mut bytes).is_err() {
                            let _ = tx.send(Answer::End);
                            return;
                        }
                        Answer::Values(
                            bytes
                                .chunks_exact(8)
                                .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")))
                                .collect(),
                        )
                    }
                    None => Answer::Line(line),
                };
                if tx.send(answer).is_err() {
                    return;
                }
            }
        });
        let head = serde_json::json!({"table": table, "ndim": nd, "points": pts.len() / nd});
        let bytes: Vec<u8> = pts.iter().flat_map(|v| v.to_le_bytes()).collect();
        // A child that exits early (import error) closes its stdin: its answer says why.
        let _ = stdin
            .write_all(format!("{head}\n").as_bytes())
            .and_then(|_| stdin.write_all(&bytes))
            .and_then(|_| stdin.flush());
        let mut p = Self {
            child,
            stdin,
            answers,
            stderr: Some(stderr),
            python: o.python.clone(),
            version: String::new(),
        };
        let meta: serde_json::Value = match p.next(ctl)? {
            Answer::Line(l) => serde_json::from_str(&l).map_err(|e| p.fail(format!("its answer is not JSON: {e}")))?,
            _ => return Err(p.fail("no answer".into())),
        };
        if let Some(e) = meta.get("error") {
            return Err(p.fail(e.as_str().unwrap_or("?").to_string()));
        }
        p.version = meta.get("version").and_then(|v| v.as_str()).unwrap_or("unknown").to_string();
        Ok(p)
    }

    /// The next answer; a raised stop kills the child.
    fn next(&mut self, ctl: &Control) -> Result<Answer> {
        loop {
            match self.answers.recv_timeout(std::time::Duration::from_millis(50)) {
                Ok(a) => return Ok(a),
                Err(RecvTimeoutError::Disconnected) => return Ok(Answer::End),
                Err(RecvTimeoutError::Timeout) => {
                    if ctl.progress.should_stop() {
                        let _ = self.child.kill();
                        let _ = self.child.wait();
                        return Err(Cancelled.into());
                    }
                }
            }
        }
    }

    /// The child's failure, with its exit status and stderr (a crash's traceback).
    fn fail(&mut self, why: String) -> Error {
        let _ = self.child.kill();
        let status = self.child.wait().map(|s| s.to_string()).unwrap_or_default();
        let stderr = self.stderr.take().and_then(|h| h.join().ok()).unwrap_or_default();
        Self::unusable(
            &self.python,
            format!("{why}; {status}; {}", String::from_utf8_lossy(&stderr).trim()),
        )
    }

    fn ask(&mut self, ctl: &Control, cmd: &str) -> Result<Answer> {
        if let Err(e) = self.stdin.write_all(format!("{cmd}\n").as_bytes()).and_then(|_| self.stdin.flush()) {
            return Err(self.fail(format!("its stdin: {e}")));
        }
        match self.next(ctl)? {
            Answer::End => Err(self.fail("it stopped answering".into())),
            a => Ok(a),
        }
    }

    /// Seconds of one timed call (`v` value, `g` gradient).
    fn seconds(&mut self, ctl: &Control, cmd: &str) -> Result<f64> {
        match self.ask(ctl, cmd)? {
            Answer::Line(l) => match l.parse::<f64>() {
                Ok(s) if s > 0.0 => Ok(s),
                _ => Err(self.fail(format!("answered {l:?} to {cmd}"))),
            },
            _ => Err(self.fail(format!("answered values to {cmd}"))),
        }
    }

    fn values(&mut self, ctl: &Control) -> Result<Vec<f64>> {
        match self.ask(ctl, "d")? {
            Answer::Values(v) => Ok(v),
            Answer::Line(l) => Err(self.fail(format!("answered {l:?} to d"))),
            Answer::End => Err(self.fail("no values".into())),
        }
    }

    fn quit(mut self) {
        let _ = self.stdin.write_all(b"q\n").and_then(|_| self.stdin.flush());
        let _ = self.child.wait();
    }
}

/// Compare photospline and warpdrive on every table of [`TABLES`].
pub fn run(o: &AnchorOptions, ctl: &Control, lines: Lines) -> Result<BenchReport> {
    let threads = bench::thread_counts(&o.threads)?;
    if o.points == 0 || o.pairs == 0 {
        return Err(ParamError::new("points", "and pairs must be at least 1").into());
    }
    warpdrive_core::limits::check_alloc("points", o.points as u64, 8 * 16, "compare fewer points")?;
    let dir = warpdrive_core::data::data_dir().join("splines");
    let hidden = Progress::hidden();
    let mut rows = Vec::new();
    lines(&format!(
        "{:<44} {:>10} {:>10} {:>7} {:>11}   {:>10} {:>10} {:>7} {:>11}   {:>9}",
        "table (one core)",
        "ps value/s",
        "wd value/s",
        "wd/ps",
        "pairs' range",
        "ps grad/s",
        "wd grad/s",
        "wd/ps",
        "pairs' range",
        "max|Δ|/sc"
    ));
    for name in TABLES {
        ctl.check()?;
        let path = dir.join(name);
        let t = SplineTable::read(&path)?;
        let nd = t.ndim();
        let pts = uniform_points(&t, o.points, 1);
        let n = o.points as f64;
        let ours = |th: usize, grad: bool| bench::timed(ctl, th, || evaluate_cpu(&t, &pts, grad, &hidden)).map(|(_, s)| s);
        let mut ps = Photospline::start(o, ctl, &path, nd, &pts)?;
        // photospline's seconds are a, ours b: a pair's ratio is how many times faster we were.
        let value = bench::paired(ctl, o.pairs, || ps.seconds(ctl, "v"), || ours(1, false))?;
        let gradient = bench::paired(ctl, o.pairs, || ps.seconds(ctl, "g"), || ours(1, true))?;
        let theirs = ps.values(ctl)?;
        let version = ps.version.clone();
        ps.quit();
        // Agreement: |photospline − warpdrive| against Σ|c·ΠB| (the float32 rounding scale).
        let mine = evaluate_cpu(&t, &pts, false, &hidden);
        if theirs.len() != mine.len() {
            return Err(Photospline::unusable(
                &o.python,
                format!("{} values for {} points", theirs.len(), mine.len()),
            ));
        }
        let worst = pts
            .chunks_exact(nd)
            .zip(mine.iter().zip(&theirs))
            .map(|(x, (a, b))| (a - b).abs() / t.magnitude(x).max(f64::MIN_POSITIVE))
            .fold(0.0, f64::max);
        let label = name.rsplit('/').next().unwrap_or(name).trim_end_matches(".fits");
        let range = |p: &bench::Paired| {
            let (lo, hi) = p.ratio_range();
            format!("{lo:.2}–{hi:.2}")
        };
        lines(&format!(
            "{:<44} {:>10.3e} {:>10.3e} {:>6.2}× {:>11}   {:>10.3e} {:>10.3e} {:>6.2}× {:>11}   {worst:>9.1e}",
            format!("{label} ({nd}-D, orders {:?})", t.order),
            n / value.median_a(),
            n / value.median_b(),
            value.median_ratio(),
            range(&value),
            n / gradient.median_a(),
            n / gradient.median_b(),
            gradient.median_ratio(),
            range(&gradient)
        ));
        // Thread scaling: each further thread count paired with one thread, on the comparison's
        // points and again on calls of at least SCALING_MIN_S seconds on one thread.
        let long_n = scaling_points(o.points, value.median_b());
        let long_pts = if long_n > o.points {
            warpdrive_core::limits::check_alloc("scaling points", long_n as u64, 8 * 16, "compare fewer points")?;
            uniform_points(&t, long_n, 1)
        } else {
            Vec::new()
        };
        let mut scaling = serde_json::Map::new();
        for &th in threads.iter().filter(|&&th| th != 1) {
            for (tag, pts) in [("", &pts), (" long", &long_pts)] {
                if pts.is_empty() {
                    continue;
                }
                let m = (pts.len() / nd) as f64;
                let v = scaling_pairs(ctl, o.pairs, &t, pts, th, false)?;
                let g = scaling_pairs(ctl, o.pairs, &t, pts, th, true)?;
                lines(&format!(
                    "{:<44} {th} threads over 1, {:.1e} points: value {:.2}× ({}; {:.3e}/s), gradient {:.2}× ({}; {:.3e}/s); {}",
                    "",
                    m,
                    v.times.median_ratio(),
                    range(&v.times),
                    m / v.times.median_b(),
                    g.times.median_ratio(),
                    range(&g.times),
                    m / g.times.median_b(),
                    v.summary()
                ));
                scaling.insert(
                    format!("threads {th} over 1{tag}"),
                    serde_json::json!({"points": pts.len() / nd, "value": v.json(m), "gradient": g.json(m)}),
                );
            }
        }
        rows.push(serde_json::json!({
            "table": name,
            "ndim": nd,
            "orders": t.order,
            "photospline": {"value_per_s": n / value.median_a(), "gradient_per_s": n / gradient.median_a(), "version": version},
            "warpdrive": {"threads 1": {"value_per_s": n / value.median_b(), "gradient_per_s": n / gradient.median_b()}},
            "value_ratio_one_thread": value.median_ratio(),
            "gradient_ratio_one_thread": gradient.median_ratio(),
            "value_pairs": paired_json(&value, n),
            "gradient_pairs": paired_json(&gradient, n),
            "scaling": scaling,
            "max_abs_difference_over_scale": worst,
        }));
    }
    // The machine's own scaling, the ceiling of the scaling lines above.
    let mut machine = serde_json::Map::new();
    for &th in threads.iter().filter(|&&th| th != 1) {
        let p = bench::machine_scaling(ctl, th, o.pairs)?;
        let (lo, hi) = p.ratio_range();
        lines(&format!(
            "the machine itself on {th} threads over 1 (arithmetic sharing nothing, plain threads): {:.2}× ({lo:.2}–{hi:.2})",
            p.median_ratio()
        ));
        machine.insert(format!("threads {th} over 1"), paired_json(&p, 1.0));
    }
    let doc = serde_json::json!({
        "command": o.command,
        "points": o.points,
        "pairs": o.pairs,
        "machine_scaling": machine,
        "threads": threads,
        "python": o.python,
        "tables": rows,
    });
    Ok(BenchReport {
        json: format!("{doc:#}\n"),
    })
}

/// The shortest one-thread call (seconds) on which the thread scaling is measured a second time.
/// A two-thread call pays fixed costs that a one-thread call does not — waking the second worker
/// and the core it sleeps on — which on the GPU host made the first table's 8 ms calls of one
/// process scale 1.1–1.2× (2.6–3.9 ms more than half a one-thread call; docs/performance/spline.md,
/// session 23); on calls of 50 ms such a cost is a few per cent. Both measurements are reported,
/// with each call's minor page faults (a fresh result faulting its pages would be such a cost too).
pub const SCALING_MIN_S: f64 = 0.05;

/// Points per call for the second scaling measurement: `points` scaled so that one thread takes
/// at least [`SCALING_MIN_S`], given that `points` took `one_thread_s` (never fewer than `points`).
pub fn scaling_points(points: usize, one_thread_s: f64) -> usize {
    if one_thread_s.is_nan() || one_thread_s <= 0.0 || one_thread_s >= SCALING_MIN_S {
        return points;
    }
    (points as f64 * SCALING_MIN_S / one_thread_s).ceil() as usize
}

/// One thread against `th` threads on the same points, paired, with each call's minor page faults.
struct Scaling {
    times: bench::Paired,
    faults_one: Vec<u64>,
    faults_many: Vec<u64>,
    /// Each call's CPU seconds (all threads) over its wall seconds.
    busy_one: Vec<f64>,
    busy_many: Vec<f64>,
}

fn scaling_pairs(ctl: &Control, pairs: usize, t: &SplineTable, pts: &[f64], th: usize, grad: bool) -> Result<Scaling> {
    let hidden = Progress::hidden();
    let call = |threads: usize, faults: &mut Vec<u64>, busy: &mut Vec<f64>| -> Result<f64> {
        let (f0, c0) = (bench::minor_faults(), bench::cpu_seconds());
        let (r, s) = bench::timed(ctl, threads, || evaluate_cpu(t, pts, grad, &hidden))?;
        faults.push(bench::minor_faults() - f0);
        busy.push((bench::cpu_seconds() - c0) / s);
        drop(r);
        Ok(s)
    };
    let (mut one, mut many, mut busy_one, mut busy_many) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let times = bench::paired(
        ctl,
        pairs,
        || call(1, &mut one, &mut busy_one),
        || call(th, &mut many, &mut busy_many),
    )?;
    // The untimed warm-up calls come first: keep the timed pairs' records.
    fn keep<T: Clone>(v: Vec<T>, pairs: usize) -> Vec<T> {
        v[v.len() - pairs..].to_vec()
    }
    Ok(Scaling {
        times,
        faults_one: keep(one, pairs),
        faults_many: keep(many, pairs),
        busy_one: keep(busy_one, pairs),
        busy_many: keep(busy_many, pairs),
    })
}

impl Scaling {
    fn summary(&self) -> String {
        let med = |v: &[u64]| {
            let mut v = v.to_vec();
            v.sort_unstable();
            v[v.len() / 2]
        };
        let medf = |v: &[f64]| {
            let mut v = v.to_vec();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        format!(
            "faults/call {} (1 thread), {} (more); CPU/wall {:.2}, {:.2}",
            med(&self.faults_one),
            med(&self.faults_many),
            medf(&self.busy_one),
            medf(&self.busy_many)
        )
    }

    fn json(&self, n: f64) -> serde_json::Value {
        let mut j = paired_json(&self.times, n);
        j["faults_one_thread"] = serde_json::json!(self.faults_one);
        j["faults_more_threads"] = serde_json::json!(self.faults_many);
        j["cpu_over_wall_one_thread"] = serde_json::json!(self.busy_one);
        j["cpu_over_wall_more_threads"] = serde_json::json!(self.busy_many);
        j
    }
}

/// A pairing's record in the report: every pair's seconds (a: the first side), the medians as
/// rates of `n` evaluations, and the per-pair ratios' median and range.
pub(crate) fn paired_json(p: &bench::Paired, n: f64) -> serde_json::Value {
    let (lo, hi) = p.ratio_range();
    serde_json::json!({
        "a_s": p.a,
        "b_s": p.b,
        "a_per_s_median": n / p.median_a(),
        "b_per_s_median": n / p.median_b(),
        "median_ratio": p.median_ratio(),
        "ratio_min": lo,
        "ratio_max": hi,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_points_make_calls_of_at_least_the_minimum() {
        // 4·10⁵ points in 8 ms: 2.5·10⁶ points take 50 ms.
        assert_eq!(scaling_points(400_000, 0.008), 2_500_000);
        // Already long enough, or no timing: the comparison's points.
        assert_eq!(scaling_points(400_000, 0.2), 400_000);
        assert_eq!(scaling_points(400_000, SCALING_MIN_S), 400_000);
        assert_eq!(scaling_points(400_000, 0.0), 400_000);
        assert_eq!(scaling_points(400_000, f64::NAN), 400_000);
    }

    #[test]
    fn minor_faults_count_a_fresh_buffer() {
        let f0 = bench::minor_faults();
        let mut v = vec![0u8; 64 << 20];
        for b in v.iter_mut().step_by(4096) {
            *b = 1;
        }
        std::hint::black_box(&v);
        // 16 384 pages written; the allocator may map some with huge pages, so ask for a tenth.
        assert!(bench::minor_faults() - f0 >= 16_384 / 10 / 512, "{}", bench::minor_faults() - f0);
    }
}
