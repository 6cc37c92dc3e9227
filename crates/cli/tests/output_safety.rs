//! The output discipline end to end (DESIGN.md §6, `warpdrive_core::output`): no output may
//! replace, lie inside or contain an input (also through symbolic and hard links); an existing
//! output needs `--force` and is then replaced as a whole; an interrupted run leaves nothing.
//! Every refusal is checked for its exit code, the first line of its message, and that no file
//! in the scratch directory was created, changed or removed.

mod common;
use common::{bin, run_ok, scratch};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every file and directory under `dir` with a fingerprint of its contents.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, u64> {
    fn walk(p: &Path, out: &mut BTreeMap<PathBuf, u64>) {
        let mut entries: Vec<_> = std::fs::read_dir(p).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for e in entries {
            let meta = std::fs::symlink_metadata(&e).unwrap();
            if meta.is_dir() {
                out.insert(e.clone(), u64::MAX);
                walk(&e, out);
            } else {
                let bytes = std::fs::read(&e).unwrap_or_default();
                let mut h = warpdrive_core::hash::Fnv64::new();
                h.write(&bytes);
                out.insert(e, h.finish());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, &mut out);
    out
}

/// Run `c`, expect exit code 1 with `first_line` in the first line of stderr, and nothing under
/// `dir` created, changed or removed.
fn refused(dir: &Path, c: &mut Command, first_line: &str) {
    let before = snapshot(dir);
    let o = c.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{c:?}: expected exit 1, got {:?}: {err}", o.status);
    let line = err.lines().next().unwrap_or("");
    assert!(line.contains(first_line), "{c:?}: expected '{first_line}' in the first line: {err}");
    assert_eq!(snapshot(dir), before, "{c:?} created, changed or removed files");
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const STEPS: &str = "0 0 -400 0 180 0 0 1 1000\n";

#[test]
fn photon_outputs_never_replace_inputs() {
    let d = scratch("safety", "photon");
    let steps = write(&d, "steps.txt", STEPS);
    // The cases: -o X --steps X, and --hit-lines X.
    refused(
        &d,
        bin()
            .args(["photon", "--device", "cpu", "--steps"])
            .arg(&steps)
            .arg("-o")
            .arg(&steps),
        "the output is the input",
    );
    refused(
        &d,
        bin()
            .args(["photon", "--device", "cpu", "--steps"])
            .arg(&steps)
            .arg("-o")
            .arg(d.join("h.parquet"))
            .arg("--hit-lines")
            .arg(&steps),
        "the output is the input",
    );
    // Another spelling, a symbolic link and a hard link to the input.
    let dotted = d.join(".").join("sub").join("..").join("steps.txt");
    std::fs::create_dir(d.join("sub")).unwrap();
    refused(
        &d,
        bin()
            .args(["photon", "--device", "cpu", "--steps"])
            .arg(&steps)
            .arg("-o")
            .arg(&dotted),
        "the output is the input",
    );
    let link = d.join("link.txt");
    std::os::unix::fs::symlink(&steps, &link).unwrap();
    refused(
        &d,
        bin()
            .args(["photon", "--device", "cpu", "--force", "--steps"])
            .arg(&steps)
            .arg("-o")
            .arg(&link),
        "the output is the input",
    );
    let hard = d.join("hard.txt");
    std::fs::hard_link(&steps, &hard).unwrap();
    refused(
        &d,
        bin()
            .args(["photon", "--device", "cpu", "--force", "--steps"])
            .arg(&steps)
            .arg("--hit-lines")
            .arg(&hard),
        "the output is the input",
    );
    // An output inside an input directory (the ice directory).
    let ice = d.join("ice");
    std::fs::create_dir(&ice).unwrap();
    refused(
        &d,
        bin()
            .args(["photon", "--device", "cpu", "--ice"])
            .arg(&ice)
            .arg("-o")
            .arg(ice.join("hits.parquet")),
        "would lie inside the input",
    );
    // The same output named twice.
    refused(
        &d,
        bin()
            .args(["photon", "--device", "cpu", "--steps"])
            .arg(&steps)
            .arg("-o")
            .arg(d.join("x"))
            .arg("--hit-lines")
            .arg(d.join("x")),
        "named twice",
    );
    // An existing output without --force is refused and left as it was; with --force replaced.
    let out = write(&d, "hits.parquet", "an earlier result");
    refused(
        &d,
        bin().args(["photon", "--device", "cpu", "--steps"]).arg(&steps).arg("-o").arg(&out),
        "exists; pass --force to replace it",
    );
    run_ok(
        bin()
            .args(["photon", "--device", "cpu", "--force", "--steps"])
            .arg(&steps)
            .arg("-o")
            .arg(&out),
    );
    assert_ne!(std::fs::read(&out).unwrap(), b"an earlier result");
    let left: Vec<_> = std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(
        left.iter().all(|n| !n.to_string_lossy().contains(".tmp-")),
        "temporaries left: {left:?}"
    );
}

#[test]
fn spline_and_merge_outputs_never_replace_inputs() {
    let d = scratch("safety", "spline");
    // The refusal comes before the table is read: placeholder files are enough.
    let table = write(&d, "table.fits", "placeholder");
    let points = write(&d, "points.csv", "a,b\n1,2\n");
    refused(
        &d,
        bin()
            .args(["spline", "eval"])
            .arg(&table)
            .arg("--points")
            .arg(&points)
            .arg("-o")
            .arg(&points),
        "the output is the input",
    );
    refused(
        &d,
        bin()
            .args(["spline", "eval"])
            .arg(&table)
            .arg("--points")
            .arg(&points)
            .arg("-o")
            .arg(&table),
        "the output is the input",
    );
    // merge -o job0 job0 job1
    let job0 = d.join("job0");
    let job1 = d.join("job1");
    for j in [&job0, &job1] {
        std::fs::create_dir(j).unwrap();
        write(j, "counts.parquet", "placeholder");
    }
    refused(
        &d,
        bin().arg("merge").arg("-o").arg(&job0).arg(&job0).arg(&job1),
        "the output is the input",
    );
    refused(
        &d,
        bin().arg("merge").arg("--force").arg("-o").arg(&d).arg(&job0).arg(&job1),
        "lies inside this output directory",
    );
    refused(
        &d,
        bin().arg("merge").arg("-o").arg(job0.join("merged")).arg(&job0).arg(&job1),
        "would lie inside the input",
    );
}

#[test]
fn existing_directories_are_replaced_whole_with_force() {
    let d = scratch("safety", "dirs");
    let out = d.join("sky");
    let sky = |extra: &[&str]| {
        let mut c = bin();
        c.args(["sky", "autocorr", "--device", "cpu", "--synthetic-events", "300", "--trials", "4"])
            .args(extra)
            .arg("-o")
            .arg(&out);
        c
    };
    run_ok(&mut sky(&[]));
    assert!(out.join("autocorr.png").is_file());
    refused(&d, &mut sky(&["--no-plot"]), "exists; pass --force to replace it");
    run_ok(&mut sky(&["--no-plot", "--force"]));
    assert!(!out.join("autocorr.png").exists(), "a stale plot of the earlier run survived");
    assert!(out.join("summary.json").is_file() && out.join("run.json").is_file());

    // beam: watch files of 3 passes, then 1 pass into the same directory.
    let lte = write(
        &d,
        "line.lte",
        "Q1: QUAD, L=0.2, K1=1.5\nD: DRIF, L=0.5\nW: WATCH, FILENAME=\"%s-w.sdds\"\nL: LINE=(Q1, D, W)\n",
    );
    let beam_out = d.join("beam");
    let beam = |passes: &str, force: bool| {
        let mut c = bin();
        c.args(["beam", "track"])
            .arg(&lte)
            .args(["--device", "cpu", "--particles", "500", "--passes", passes, "--no-plot"]);
        if force {
            c.arg("--force");
        }
        c.arg("-o").arg(&beam_out);
        c
    };
    run_ok(&mut beam("3", false));
    let names = |dir: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert!(names(&beam_out).iter().any(|n| n.contains("-pass00002")), "{:?}", names(&beam_out));
    run_ok(&mut beam("1", true));
    assert!(
        names(&beam_out).iter().all(|n| !n.contains("-pass")),
        "stale watch files of the earlier run: {:?}",
        names(&beam_out)
    );
    assert!(names(&d).iter().all(|n| !n.starts_with('.')), "temporaries left: {:?}", names(&d));
}

/// SIGINT or SIGTERM during a run: exit 128 + signal, no output, no temporary, inputs intact.
#[test]
fn interrupted_runs_leave_nothing() {
    let d = scratch("safety", "signal");
    let lte = write(
        &d,
        "line.lte",
        "Q1: QUAD, L=0.2, K1=1.5\nQ2: Q1, K1=-1.5\nD: DRIF, L=0.5\nW: WATCH, FILENAME=\"%s-w.sdds\"\nL: LINE=(Q1, D, Q2, D, W)\n",
    );
    let before = snapshot(&d);
    for (signal, code) in [("-INT", 130), ("-TERM", 143)] {
        let out = d.join(format!("out{signal}"));
        let child = bin()
            .args(["beam", "track"])
            .arg(&lte)
            .args([
                "--device",
                "cpu",
                "--threads",
                "1",
                "--particles",
                "2000",
                "--passes",
                "100000000",
                // The moments of 1e8 watch records would not fit in memory (refused up front).
                "--watch-every",
                "1000",
                "--no-plot",
            ])
            .arg("-o")
            .arg(&out)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Wait until the run is under way (its staged directory holds watch files), then signal.
        let t0 = std::time::Instant::now();
        loop {
            let staged = std::fs::read_dir(&d).unwrap().filter_map(|e| e.ok()).any(|e| {
                e.file_name().to_string_lossy().contains(".tmp-")
                    && std::fs::read_dir(e.path()).map(|mut r| r.next().is_some()).unwrap_or(false)
            });
            if staged || t0.elapsed().as_secs() > 20 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let st = Command::new("kill").arg(signal).arg(child.id().to_string()).status().unwrap();
        assert!(st.success());
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(code), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(snapshot(&d), before, "an interrupted run left files behind");
    }
}

/// A command busy in a loop that does not poll for signals (sky trials) still stops promptly on
/// SIGTERM through the signal thread, with exit 143 and nothing written.
#[test]
fn signal_thread_stops_a_busy_run() {
    let d = scratch("safety", "busy");
    let before = snapshot(&d);
    let child = bin()
        .args([
            "sky",
            "autocorr",
            "--device",
            "cpu",
            "--synthetic-events",
            "20000",
            "--trials",
            "10000000",
        ])
        .arg("-o")
        .arg(d.join("out"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let t0 = std::time::Instant::now();
    assert!(Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .unwrap()
        .success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(143), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(t0.elapsed().as_secs_f64() < 5.0, "took {:?} to stop", t0.elapsed());
    assert_eq!(snapshot(&d), before);
}
