//! End-to-end tests of `warpdrive spline`: info, eval (CSV in, Parquet out, values equal to the
//! library's; points from a FIFO), simulate → unfold on the CPU (every solver, energies near the
//! truth and never negative; one and two threads give byte-identical data files, machine facts
//! only in run.json), the memory guard of long tracks, and bad input failing cleanly.

mod common;
use common::{bin, data, run_ok, scratch};

use std::path::{Path, PathBuf};
use std::process::Command;

use warpdrive_core::table::read_parquet;
use warpdrive_spline::SplineTable;

/// `warpdrive spline unfold --device cpu` reading the shared data at `data`: the command every
/// unfolding test starts from.
fn unfold_cpu(data: &Path) -> Command {
    let mut c = bin();
    c.env("WARPDRIVE_DATA", data).args(["spline", "unfold", "--device", "cpu"]);
    c
}

fn ems(dir: &Path, which: &str) -> PathBuf {
    dir.join(format!("splines/icetray_photospline_ems/ems_z0_a0.pt.{which}.fits"))
}

#[test]
fn info_and_eval_match_the_library() {
    let Some(data) = data() else { return };
    let table = ems(&data, "prob");
    let o = run_ok(bin().args(["spline", "info"]).arg(&table));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("4-D photospline table") && text.contains("NGROUP"), "{text}");

    let dir = scratch("spline", "eval");
    let points = dir.join("points.csv");
    std::fs::write(&points, "r,phi,cos,t\n50,0,0,100\n50,0,0,500\n300,90,0,3500\n700,0,0,100\n").unwrap();
    let out = dir.join("values.parquet");
    run_ok(
        bin()
            .args(["spline", "eval", "--device", "cpu", "--gradient", "--points"])
            .arg(&points)
            .arg("-o")
            .arg(&out)
            .arg(&table),
    );
    let t = read_parquet(&out).unwrap();
    let lib = SplineTable::read(&table).unwrap();
    let value = t.column("value").unwrap().to_f64();
    let grad3 = t.column("grad3").unwrap().to_f64();
    let pts = [
        [50.0, 0.0, 0.0, 100.0],
        [50.0, 0.0, 0.0, 500.0],
        [300.0, 90.0, 0.0, 3500.0],
        [700.0, 0.0, 0.0, 100.0],
    ];
    for (i, x) in pts.iter().enumerate() {
        assert_eq!(value[i], lib.evaluate(x), "point {i}");
        assert_eq!(grad3[i], lib.gradient(x).grad[3], "point {i}");
    }
    // Beyond the last radial knot (600 m) the table is 0, as in photospline.
    assert_eq!(value[3], 0.0);
    assert_eq!(t.column("r").unwrap().to_f64()[2], 300.0);
}

#[test]
fn simulate_then_unfold_a_cascade_with_every_solver() {
    let Some(data) = data() else { return };
    let dir = scratch("spline", "unfold");
    let event = dir.join("event.parquet");
    let cascade = "30,-20,-100,0.8,1.5,0";
    let geo = data.join("geometry/icecube_geo-f2k");
    let with_data = |c: &mut Command| {
        c.env("WARPDRIVE_DATA", &data);
    };
    let mut c = bin();
    with_data(&mut c);
    run_ok(
        c.args([
            "spline",
            "simulate",
            "--cascade",
            cascade,
            "--energy",
            "5000",
            "--seed",
            "11",
            "--geometry",
        ])
        .arg(&geo)
        .arg("-o")
        .arg(&event),
    );
    let mut results = Vec::new();
    for (solver, threads) in [("newton", "1"), ("newton", "2"), ("pcg", "2"), ("nnls", "2")] {
        let out = dir.join(format!("{solver}-{threads}"));
        let mut c = unfold_cpu(&data);
        run_ok(
            c.args(["--cascade", cascade, "--solver", solver, "--threads", threads])
                .arg("--event")
                .arg(&event)
                .arg("-o")
                .arg(&out),
        );
        let t = read_parquet(&out.join("energies.parquet")).unwrap();
        let (e, s) = (t.column("energy").unwrap().to_f64()[0], t.column("sigma").unwrap().to_f64()[0]);
        let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
        assert_eq!(summary["converged"], true, "{solver}");
        assert!(out.join("energies.png").exists());
        results.push((solver, e, s));
    }
    for &(solver, e, s) in &results {
        assert!(e >= 0.0 && s > 0.0, "{solver}: {e} ± {s}");
    }
    let (_, e, s) = results[0];
    // The likelihood solvers: 4σ of the truth (fixed seed), identical across threads, and
    // Newton = PCG well inside the uncertainty.
    assert!((e - 5000.0).abs() < 4.0 * s, "newton {e} ± {s}");
    assert_eq!(results[0].1, results[1].1, "threads changed the result");
    // Issue #36 item 12: the data files of identical runs with different --threads are
    // byte-identical; device, threads and timings are in run.json only.
    let (one, two) = (dir.join("newton-1"), dir.join("newton-2"));
    for f in ["energies.parquet", "summary.json", "energies.png"] {
        assert_eq!(
            std::fs::read(one.join(f)).unwrap(),
            std::fs::read(two.join(f)).unwrap(),
            "{f} differs with --threads"
        );
    }
    let summary = std::fs::read_to_string(one.join("summary.json")).unwrap();
    for machine in ["seconds", "device", "threads", "invocation"] {
        assert!(!summary.contains(machine), "summary.json holds '{machine}': {summary}");
    }
    let run: serde_json::Value = serde_json::from_slice(&std::fs::read(one.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["response_device"], "cpu (1 threads)");
    assert!(run["solve_seconds"].as_f64().is_some());
    assert!((results[2].1 - e).abs() < 1e-3 * s, "pcg {} vs newton {e}", results[2].1);
    // NNLS (Neyman χ²) is a different estimator: same ballpark only.
    assert!((results[3].1 - e).abs() < 0.3 * e, "nnls {} vs {e}", results[3].1);
}

#[test]
fn bad_inputs_fail_cleanly() {
    let Some(data) = data() else { return };
    let dir = scratch("spline", "bad");
    // A truncated table: the error names the file.
    let bytes = std::fs::read(ems(&data, "abs")).unwrap();
    let cut = dir.join("cut.fits");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let o = bin().args(["spline", "info"]).arg(&cut).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("cut.fits"), "{err}");
    // Points with the wrong number of columns: file and line.
    let pts = dir.join("pts.csv");
    std::fs::write(&pts, "r,phi,cos\n1,2,3\n4,5\n").unwrap();
    let out = dir.join("never.parquet");
    let o = bin()
        .args(["spline", "eval", "--device", "cpu", "--points"])
        .arg(&pts)
        .arg("-o")
        .arg(&out)
        .arg(ems(&data, "abs"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("pts.csv:3"), "{err}");
    assert!(!out.exists());
    // A missing event file and an unknown solver.
    let o = unfold_cpu(&data)
        .args(["--cascade", "0,0,0,0,0,0", "--event"])
        .arg(dir.join("missing.parquet"))
        .arg("-o")
        .arg(dir.join("u"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("missing.parquet"), "{err}");
    let o = unfold_cpu(&data)
        .args(["--solver", "lbfgs", "--cascade", "0,0,0,0,0,0", "--event"])
        .arg(dir.join("missing.parquet"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("lbfgs"), "{err}");
    // Source axes: an unknown name, and a depth axis the (3-D, public) table does not have.
    let o = unfold_cpu(&data)
        .args(["--source-axes", "height", "--cascade", "0,0,0,0,0,0", "--event"])
        .arg(dir.join("missing.parquet"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("--source-axes 'height': a source axis is zenith or depth"), "{err}");
    let o = unfold_cpu(&data)
        .args(["--source-axes", "depth", "--amplitude-only", "--cascade", "0,0,0,0,0,0", "--event"])
        .arg(dir.join("missing.parquet"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("ems_z0_a0.pt.abs.fits") && err.contains("a 3-D table where 4 dimensions (r, azimuth, cos_theta, depth) are needed"),
        "{err}"
    );
}

#[test]
fn simulate_does_not_depend_on_threads() {
    let Some(data) = data() else { return };
    let dir = scratch("spline", "sim-threads");
    let mut files = Vec::new();
    for threads in ["1", "2"] {
        let out = dir.join(format!("event-{threads}.parquet"));
        run_ok(
            bin()
                .env("WARPDRIVE_DATA", &data)
                .args(["spline", "simulate", "--track", "-500,0,-250,90,180,0,1000", "--spacing", "50"])
                .args(["--energy", "3000", "--seed", "9", "--threads", threads, "-o"])
                .arg(&out),
        );
        files.push(std::fs::read(&out).unwrap());
    }
    assert_eq!(files[0], files[1], "the event file differs with --threads");
}

/// Issue #36 item 9: CSV points from a FIFO keep their first bytes (the format sniff used to
/// open the file a second time and lose the 4 bytes it read: `radius` became `us`).
#[cfg(unix)]
#[test]
fn points_from_a_fifo_keep_their_header() {
    let Some(data) = data() else { return };
    let dir = scratch("spline", "fifo");
    let fifo = dir.join("points.csv");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(&fifo, "radius,phi,cos_theta\n50,0,0\n300,90,0.5\n").unwrap())
    };
    let out = dir.join("values.parquet");
    run_ok(
        bin()
            .args(["spline", "eval", "--device", "cpu", "--points"])
            .arg(&fifo)
            .arg("-o")
            .arg(&out)
            .arg(ems(&data, "abs")),
    );
    writer.join().unwrap();
    let t = read_parquet(&out).unwrap();
    let names: Vec<&str> = t.columns.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["radius", "phi", "cos_theta", "value"]);
    assert_eq!(t.column("radius").unwrap().to_f64(), [50.0, 300.0]);
}

/// Issue #28: `spline.unfold(spacing=0.01)` on a 400 m track was killed by the kernel; the
/// response matrix and the solver's matrices are now budgeted before anything is allocated.
#[test]
fn a_fine_track_is_refused_before_allocating() {
    let Some(data) = data() else { return };
    let dir = scratch("spline", "budget");
    let event = dir.join("event.parquet");
    let track = "-100,0,-250,80,10,0,400";
    run_ok(
        bin()
            .env("WARPDRIVE_DATA", &data)
            .args(["spline", "simulate", "--track", track, "--spacing", "40", "--energy", "1000", "-o"])
            .arg(&event),
    );
    let out = dir.join("u");
    let t0 = std::time::Instant::now();
    let o = unfold_cpu(&data)
        .env("WARPDRIVE_MAX_MEMORY", "4G")
        .args(["--track", track, "--spacing", "0.01", "--event"])
        .arg(&event)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.starts_with("error: --spacing: 40000 × "), "{err}");
    assert!(err.contains("would not fit in the memory available (4.000 GiB)"), "{err}");
    assert!(err.trim_end().ends_with("use a larger --spacing or a shorter --track"), "{err}");
    assert!(t0.elapsed().as_secs_f64() < 20.0, "took {:?}", t0.elapsed());
    assert!(!out.exists());
}

/// Ctrl-C stops an unfolding itself (its loops poll the token; the signal thread's forced exit
/// after its grace period of a second is not needed), leaving no output.
#[test]
fn sigint_stops_an_unfolding_within_a_second() {
    let Some(data) = data() else { return };
    let dir = scratch("spline", "sigint");
    let event = dir.join("event.parquet");
    run_ok(
        bin()
            .env("WARPDRIVE_DATA", &data)
            .args(["spline", "simulate", "--cascade", "10,20,-300,60,30,0", "--energy", "100", "-o"])
            .arg(&event),
    );
    let out = dir.join("u");
    // A 1 km track in 1 m segments on one thread: the response matrix alone takes seconds.
    let (o, took) = common::interrupt_after(
        unfold_cpu(&data)
            .args(["--threads", "1", "--track", "-500,0,-250,90,180,0,1000"])
            .args(["--spacing", "1", "--event"])
            .arg(&event)
            .arg("-o")
            .arg(&out),
        std::time::Duration::from_millis(1500),
        "-INT",
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(
        err.contains("interrupted (SIGINT): temporary outputs removed, nothing written"),
        "{err}"
    );
    // Within the signal thread's grace period: the run stopped itself, it was not forced out.
    assert!(took.as_secs_f64() < 1.0, "took {took:?} to stop");
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, [std::ffi::OsString::from("event.parquet")]);
}

/// A stand-in for the Python interpreter of `bench spline --against photospline`, speaking the
/// anchor script's protocol: it answers `head` as its first line (an `error` at once, before
/// reading, as the real script does when photospline cannot be imported), then every value call
/// takes 0.01 s and every gradient 0.02 s, and its values are zeros.
fn fake_python(dir: &Path, head: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(format!("fake-python-{}", head.len()));
    let script = format!(
        r#"#!/usr/bin/env python3
import json, sys
i, o = sys.stdin.buffer, sys.stdout.buffer
head = {head:?}
if "error" in head:
    o.write(head.encode() + b"\n")
    sys.exit(0)
h = json.loads(i.readline())
n = h["points"]
i.read(8 * n * h["ndim"])
o.write(head.encode() + b"\n")
o.flush()
for line in iter(i.readline, b""):
    c = line.strip()
    if c == b"v":
        o.write(b"0.01\n")
    elif c == b"g":
        o.write(b"0.02\n")
    elif c == b"d":
        o.write(b"values %d\n" % n + bytes(8 * n))
    elif c == b"q":
        break
    o.flush()
"#
    );
    std::fs::write(&p, script).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// `bench spline --against photospline`: both sides' rates and their agreement per table in the
/// report (the anchor's side here a stand-in answering zeros, so the difference is the spline's
/// own scale); an interpreter that cannot import photospline, or none at all, is a clear error
/// and leaves no report behind.
#[test]
fn bench_against_photospline_reports_both_sides_or_says_what_is_missing() {
    let Some(data) = data() else { return };
    let dir = scratch("spline", "anchor");
    let json = dir.join("anchor.json");
    let bench = |python: &Path| {
        let mut c = bin();
        c.env("WARPDRIVE_DATA", &data)
            .args([
                "bench",
                "spline",
                "--device",
                "cpu",
                "--threads",
                "1",
                "--cpu-points",
                "100",
                "--against",
                "photospline",
                "--python",
            ])
            .arg(python)
            .arg("--json")
            .arg(&json);
        c
    };
    let fake = fake_python(&dir, r#"{"version": "stand-in"}"#);
    let o = run_ok(&mut bench(&fake));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("test_spline_5d") && text.contains("ems_z0_a0.pt.prob"), "{text}");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let tables = report["tables"].as_array().unwrap();
    assert_eq!(tables.len(), 7);
    for t in tables {
        assert_eq!(t["photospline"]["value_per_s"].as_f64(), Some(1e4), "{t}");
        assert_eq!(t["photospline"]["gradient_per_s"].as_f64(), Some(5e3), "{t}");
        assert_eq!(t["value_pairs"]["a_s"].as_array().unwrap().len(), 11, "{t}");
        assert_eq!(t["photospline"]["version"], "stand-in");
        assert!(t["warpdrive"]["threads 1"]["value_per_s"].as_f64().unwrap() > 0.0, "{t}");
        // Zeros against the spline: a difference of the order of the coefficient scale.
        assert!(t["max_abs_difference_over_scale"].as_f64().unwrap() > 1e-3, "{t}");
    }
    std::fs::remove_file(&json).unwrap();

    let no_module = fake_python(&dir, r#"{"error": "No module named photospline"}"#);
    let o = bench(&no_module).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("No module named photospline") && err.contains("PYTHONPATH"),
        "{err}"
    );
    assert!(!json.exists());
    let o = bench(&dir.join("no-such-python")).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("no-such-python") && err.contains("photospline cannot be run"),
        "{err}"
    );
    assert!(!json.exists());
}

/// Ctrl-C during `bench spline --against photospline` stops the run and kills photospline's
/// process too (a stand-in here that would sleep for a minute and leaves a pid file), even when
/// the signal reaches warpdrive alone (as a batch system's `kill -INT` does), and writes no report.
#[test]
fn bench_against_photospline_kills_the_anchor_on_ctrl_c() {
    use std::os::unix::fs::PermissionsExt;
    let Some(data) = data() else { return };
    let dir = scratch("spline", "anchor-cancel");
    let pid_file = dir.join("anchor.pid");
    let py = dir.join("slow-python");
    std::fs::write(&py, format!("#!/bin/sh\necho $$ > {}\nexec sleep 60\n", pid_file.display())).unwrap();
    std::fs::set_permissions(&py, std::fs::Permissions::from_mode(0o755)).unwrap();
    let json = dir.join("anchor.json");
    let mut c = bin();
    c.env("WARPDRIVE_DATA", &data)
        .args(["bench", "spline", "--device", "cpu", "--threads", "1", "--cpu-points", "100"])
        .args(["--against", "photospline", "--python"])
        .arg(&py)
        .arg("--json")
        .arg(&json);
    let (o, took) = common::interrupt_after(&mut c, std::time::Duration::from_secs(2), "-INT");
    assert_eq!(o.status.code(), Some(130), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(took < std::time::Duration::from_secs(10), "{took:?}");
    assert!(!json.exists());
    let pid = std::fs::read_to_string(&pid_file).expect("the stand-in ran").trim().to_string();
    // The stand-in's process is gone (kill -0 fails once it has exited and been reaped).
    std::thread::sleep(std::time::Duration::from_millis(200));
    let alive = std::process::Command::new("kill").args(["-0", &pid]).status().unwrap().success();
    assert!(!alive, "photospline's stand-in (pid {pid}) is still running");
}

#[test]
fn fit_writes_the_library_table_whatever_the_threads() {
    use warpdrive_core::engine::Control;
    use warpdrive_spline::engine::{FitOptions, FitTable, HistogramInput, Knots};
    let dir = scratch("spline", "fit");
    let (xs, ys): (Vec<f64>, Vec<f64>) = (
        (0..20).map(|i| 0.25 + 0.5 * i as f64).collect(),
        (0..15).map(|j| 0.1 + 0.2 * j as f64).collect(),
    );
    let mut text = "x,y,value,weight\n".to_string();
    let (mut z, mut w) = (Vec::new(), Vec::new());
    for &x in &xs {
        for &y in &ys {
            let v = (-(x - 4.0f64).powi(2) / 8.0).exp() * (1.0 + y);
            text += &format!("{x:?},{y:?},{v:?},400.0\n");
            z.push(v);
            w.push(400.0);
        }
    }
    let hist = dir.join("h.csv");
    std::fs::write(&hist, text).unwrap();
    let fit = |threads: &str, out: &Path| {
        run_ok(
            bin()
                .args([
                    "spline",
                    "fit",
                    "--knots",
                    "0:10:12",
                    "--knots",
                    "0:3:6",
                    "--order",
                    "3,2",
                    "--smooth",
                    "1e-3",
                    "--threads",
                    threads,
                ])
                .arg(&hist)
                .arg("-o")
                .arg(out),
        )
    };
    let (one, two) = (dir.join("t1.fits"), dir.join("t2.fits"));
    let o = fit("1", &one);
    assert!(String::from_utf8_lossy(&o.stdout).contains("98 coefficients fitted to 300 of 300 bins"));
    fit("2", &two);
    assert_eq!(
        std::fs::read(&one).unwrap(),
        std::fs::read(&two).unwrap(),
        "the table depends on --threads"
    );
    // The same fit through the library on arrays.
    let opts = FitOptions {
        knots: vec![Knots::parse("0:10:12").unwrap(), Knots::parse("0:3:6").unwrap()],
        order: vec![3, 2],
        smooth: vec![1e-3],
        penalty_order: vec![2],
        monodim: None,
    };
    let input = HistogramInput::Arrays {
        z: &z,
        w: &w,
        z_shape: vec![20, 15],
        w_shape: vec![20, 15],
        centers: vec![xs, ys],
    };
    let lib = FitTable::new(input, &opts).unwrap().run(&Control::new()).unwrap();
    let file = SplineTable::read(&one).unwrap();
    assert_eq!(file.coefficients, lib.table.coefficients);
    assert_eq!(file.aux_f64("SMOOTH1"), Some(1e-3));
    // An existing output is not replaced without --force.
    let again = bin()
        .args(["spline", "fit", "--knots", "0:10:12", "--knots", "0:3:6", "--smooth", "1"])
        .arg(&hist)
        .arg("-o")
        .arg(&one)
        .output()
        .unwrap();
    assert!(!again.status.success() && String::from_utf8_lossy(&again.stderr).contains("exists; pass --force"));
}

/// Millipede over a list of events (each with its own hypothesis): every event unfolded as
/// `--event` unfolds it alone, and batch jobs over the list merged by `warpdrive merge` into
/// the unsplit run's files (issue #33).
#[test]
fn event_lists_unfold_each_event_and_split_into_jobs() {
    let Some(data) = data() else { return };
    let dir = scratch("spline", "events");
    let geo = data.join("geometry/icecube_geo-f2k");
    let hyps = [
        ("cascade", "30,-20,-100,0.8,1.5,0", "", "3000"),
        ("cascade", "-60,40,-250,70,20,0", "", "800"),
        ("track", "-300,0,-150,90,180,0", "600", "500"),
    ];
    let mut list = String::from("event,kind,x,y,z,zenith,azimuth,t,length\n");
    for (k, (kind, at, length, energy)) in hyps.iter().enumerate() {
        let event = dir.join(format!("e{k}.parquet"));
        let hyp = if length.is_empty() {
            at.to_string()
        } else {
            format!("{at},{length}")
        };
        let mut c = bin();
        c.env("WARPDRIVE_DATA", &data).args([
            "spline",
            "simulate",
            &format!("--{kind}"),
            &hyp,
            "--spacing",
            "100",
            "--energy",
            energy,
            "--seed",
        ]);
        run_ok(c.arg((k + 3).to_string()).arg("--geometry").arg(&geo).arg("-o").arg(&event));
        list += &format!("e{k}.parquet,{kind},{at},{length}\n");
    }
    let lst = dir.join("events.csv");
    std::fs::write(&lst, list).unwrap();
    let whole = dir.join("whole");
    run_ok(
        unfold_cpu(&data)
            .args(["--spacing", "100", "--geometry"])
            .arg(&geo)
            .arg("--events")
            .arg(&lst)
            .arg("-o")
            .arg(&whole),
    );
    let energies = read_parquet(&whole.join("energies.parquet")).unwrap();
    let ev = energies.column("event").unwrap().to_f64();
    // Each event as its own `--event` run gives the same energies.
    for (k, (kind, at, length, _)) in hyps.iter().enumerate() {
        let one = dir.join(format!("one{k}"));
        let hyp = if length.is_empty() {
            at.to_string()
        } else {
            format!("{at},{length}")
        };
        run_ok(
            unfold_cpu(&data)
                .args(["--spacing", "100", &format!("--{kind}"), &hyp, "--geometry"])
                .arg(&geo)
                .arg("--event")
                .arg(dir.join(format!("e{k}.parquet")))
                .arg("-o")
                .arg(&one),
        );
        let alone = read_parquet(&one.join("energies.parquet"))
            .unwrap()
            .column("energy")
            .unwrap()
            .to_f64();
        let listed: Vec<f64> = energies
            .column("energy")
            .unwrap()
            .to_f64()
            .iter()
            .zip(&ev)
            .filter(|(_, &e)| e == k as f64)
            .map(|(x, _)| *x)
            .collect();
        assert_eq!(alone, listed, "event {k}");
    }
    let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(whole.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["events"], 3);
    // Two jobs, merged: the unsplit run's data files.
    let jobs: Vec<PathBuf> = (0..2)
        .map(|i| {
            let j = dir.join(format!("job{i}"));
            run_ok(
                unfold_cpu(&data)
                    .args(["--spacing", "100", "--jobs", "2", "--job-index", &i.to_string(), "--geometry"])
                    .arg(&geo)
                    .arg("--events")
                    .arg(&lst)
                    .arg("-o")
                    .arg(&j),
            );
            j
        })
        .collect();
    let merged = dir.join("merged");
    run_ok(bin().arg("merge").arg("-o").arg(&merged).args(jobs.iter().rev()));
    for f in ["energies.parquet", "events.parquet", "summary.json"] {
        assert!(
            std::fs::read(whole.join(f)).unwrap() == std::fs::read(merged.join(f)).unwrap(),
            "{f}"
        );
    }
    // A job missing is named; one event is not split.
    let o = bin()
        .arg("merge")
        .arg("-o")
        .arg(dir.join("partial"))
        .arg(&jobs[0])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("lack job 1 of 2"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = unfold_cpu(&data)
        .args(["--cascade", hyps[0].1, "--jobs", "2", "--event"])
        .arg(dir.join("e0.parquet"))
        .arg("-o")
        .arg(dir.join("x"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("one event cannot be split"));
}
