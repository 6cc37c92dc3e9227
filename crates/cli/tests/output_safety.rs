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

/// `beam track` of 500 particles through `lte` for `passes` passes into `out` (no plot).
fn small_beam(lte: &Path, out: &Path, passes: &str, force: bool) -> Command {
    let mut c = bin();
    c.args(["beam", "track"])
        .arg(lte)
        .args(["--device", "cpu", "--particles", "500", "--passes", passes, "--no-plot"]);
    if force {
        c.arg("--force");
    }
    c.arg("-o").arg(out);
    c
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
    let beam = |passes: &str, force: bool| small_beam(&lte, &beam_out, passes, force);
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
        common::signal(child.id(), signal);
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
    let (o, took) = common::interrupt_after(
        bin()
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
            .arg(d.join("out")),
        std::time::Duration::from_millis(500),
        "-TERM",
    );
    assert_eq!(o.status.code(), Some(143), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(took.as_secs_f64() < 5.0, "took {took:?} to stop");
    assert_eq!(snapshot(&d), before);
}

// ---------------------------------------------------------------------------------------------
// Safe under faults (issue #36): special files, links, concurrent runs, SIGKILL at the commit,
// stale temporaries, long and non-UTF-8 names, closed pipes, unwritable and full locations.
// ---------------------------------------------------------------------------------------------

use std::io::{BufRead, Write};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::FileTypeExt;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The test hook of `warpdrive_core::output` (documented there): every commit step prints
/// `test pause: STEP DEST` on stderr and sleeps this many milliseconds.
const PAUSE: &str = "WARPDRIVE_TEST_PAUSE_AT_COMMIT";

/// A running `warpdrive` whose stderr lines arrive on a channel, so a test can act when the
/// process reaches a known point (a commit step) and still see its whole message at the end.
struct Watched {
    child: std::process::Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Watched {
    fn spawn(c: &mut Command) -> Self {
        let mut child = c
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let err = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in std::io::BufReader::new(err).lines() {
                let Ok(l) = l else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Wait until a stderr line contains `needle` (false after `limit` or when the process ended).
    fn wait_for(&mut self, needle: &str, limit: Duration) -> bool {
        if self.seen.iter().any(|l| l.contains(needle)) {
            return true;
        }
        let t0 = Instant::now();
        while let Some(left) = limit.checked_sub(t0.elapsed()) {
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    let hit = l.contains(needle);
                    self.seen.push(l);
                    if hit {
                        return true;
                    }
                }
                Err(_) => return false,
            }
        }
        false
    }

    fn signal(&self, sig: &str) {
        common::signal(self.child.id(), sig);
    }

    /// Wait for the end (killed after 120 s); the exit status and all of stderr.
    fn finish(mut self) -> (std::process::ExitStatus, String) {
        let t0 = Instant::now();
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if t0.elapsed() > Duration::from_secs(120) {
                let _ = self.child.kill();
                panic!("did not finish within 120 s: {}", self.seen.join("\n"));
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.seen.push(l);
        }
        (status, self.seen.join("\n"))
    }
}

/// Names in `dir` (not recursive), sorted, as lossy strings.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Assert that no staging entry (`.NAME.tmp-PID`, `.NAME.old-PID`) is left in `dir`.
fn no_temporaries(dir: &Path) {
    let left: Vec<String> = names(dir)
        .into_iter()
        .filter(|n| n.contains(".tmp-") || n.contains(".old-"))
        .collect();
    assert!(left.is_empty(), "temporaries left in {}: {left:?}", dir.display());
}

/// `photon --device cpu --steps STEPS` (a run of 1000 photons: a fraction of a second).
fn photon(steps: &Path) -> Command {
    let mut c = bin();
    c.args(["photon", "--device", "cpu", "--steps"]).arg(steps);
    c
}

/// `sky autocorr` on a small generated sky (a fraction of a second), without the plot.
fn small_sky(seed: u32) -> Command {
    let mut c = bin();
    c.args([
        "sky",
        "autocorr",
        "--device",
        "cpu",
        "--synthetic-events",
        "300",
        "--trials",
        "4",
        "--no-plot",
    ])
    .args(["--seed", &seed.to_string()]);
    c
}

/// summary.json without its `command` line (which names the output path).
fn summary(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("summary.json"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.join("summary.json").display()))
        .lines()
        .filter(|l| !l.contains("\"command\""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first `error:` line of a message.
fn error_line(err: &str) -> &str {
    err.lines().find(|l| l.starts_with("error:")).unwrap_or("")
}

/// A PID that is not alive: that of a child that has exited and been reaped.
fn dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

#[test]
fn special_outputs_are_refused_even_with_force() {
    let d = scratch("safety", "special");
    let steps = write(&d, "steps.txt", STEPS);
    let fifo = d.join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let _socket = std::os::unix::net::UnixListener::bind(d.join("socket")).unwrap();
    let mut specials = vec![(fifo.clone(), "FIFO"), (d.join("socket"), "socket")];
    // A device node (the issue's `mknod fakenull c 1 3`) where we may create one.
    let null = d.join("fakenull");
    if Command::new("mknod")
        .arg(&null)
        .args(["c", "1", "3"])
        .status()
        .is_ok_and(|s| s.success())
    {
        specials.push((null.clone(), "character device"));
    }
    // A symbolic link to a special file is refused too (the rule for links: ARCHITECTURE.md).
    let link = d.join("link-to-fifo");
    std::os::unix::fs::symlink(&fifo, &link).unwrap();
    specials.push((link.clone(), "FIFO"));
    let kinds = |d: &Path| -> Vec<(String, String)> {
        names(d)
            .into_iter()
            .map(|n| {
                let t = std::fs::symlink_metadata(d.join(&n)).unwrap().file_type();
                (n, format!("{t:?}"))
            })
            .collect()
    };
    let before = kinds(&d);
    for (special, kind) in &specials {
        for (flag, out) in [("-o", d.join("h.parquet")), ("--hit-lines", d.join("h.txt"))] {
            let mut c = photon(&steps);
            c.arg("--force");
            if flag == "-o" {
                c.arg("-o").arg(special);
            } else {
                c.arg("-o").arg(&out).arg("--hit-lines").arg(special);
            }
            let o = c.output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(1), "{c:?}: {err}");
            let line = error_line(&err);
            assert!(
                line.contains(&special.display().to_string()) && line.contains(kind) && line.contains("never replaces"),
                "{c:?}: {err}"
            );
            assert_eq!(kinds(&d), before, "{c:?} changed the directory");
        }
    }
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    // Directory outputs too.
    let o = small_sky(1).arg("--force").arg("-o").arg(&fifo).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(kinds(&d), before);
}

#[test]
fn symlink_outputs_replace_the_link_never_its_target() {
    let d = scratch("safety", "links");
    let steps = write(&d, "steps.txt", STEPS);
    let target = write(&d, "precious.parquet", "not to be overwritten");
    let link = d.join("link.parquet");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    // Without --force a link is an existing output, dangling or not.
    refused(&d, photon(&steps).arg("-o").arg(&link), "exists; pass --force to replace it");
    let dangling = d.join("dangling.parquet");
    std::os::unix::fs::symlink(d.join("nowhere"), &dangling).unwrap();
    refused(&d, photon(&steps).arg("-o").arg(&dangling), "exists; pass --force to replace it");
    // With --force the link itself is replaced by the output; what it pointed to is untouched.
    run_ok(photon(&steps).arg("--force").arg("-o").arg(&link));
    assert!(std::fs::symlink_metadata(&link).unwrap().is_file(), "the link was written through");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "not to be overwritten");
    // A directory output over a link to a directory: the link is replaced, the directory kept.
    let keep = d.join("keep");
    std::fs::create_dir(&keep).unwrap();
    write(&keep, "data.txt", "kept");
    let dlink = d.join("dlink");
    std::os::unix::fs::symlink(&keep, &dlink).unwrap();
    run_ok(small_sky(1).arg("--force").arg("-o").arg(&dlink));
    assert!(std::fs::symlink_metadata(&dlink).unwrap().is_dir());
    assert!(dlink.join("summary.json").is_file());
    assert_eq!(names(&keep), ["data.txt"]);
    no_temporaries(&d);
}

/// Two runs with the same output, started together and held at their commit until both are
/// there: exactly one wins, the other says "exists" and exits 1, nothing is left over.
#[test]
fn concurrent_runs_with_one_output_one_wins() {
    let d = scratch("safety", "race");
    let steps = write(&d, "steps.txt", STEPS);
    let file = d.join("race.parquet");
    let dir = d.join("race-dir");
    type Make<'a> = Box<dyn Fn(u32) -> Command + 'a>;
    let cases: [(&Path, Make); 2] = [
        (
            &file,
            Box::new(|seed| {
                let mut c = photon(&steps);
                c.args(["--seed", &seed.to_string()]).arg("-o").arg(&file);
                c
            }),
        ),
        (
            &dir,
            Box::new(|seed| {
                let mut c = small_sky(seed);
                c.arg("-o").arg(&dir);
                c
            }),
        ),
    ];
    for (out, make) in cases {
        let mut runs: Vec<Watched> = (1..=2).map(|seed| Watched::spawn(make(seed).env(PAUSE, "1500"))).collect();
        for r in &mut runs {
            assert!(r.wait_for("test pause: commit", Duration::from_secs(60)), "{}", r.seen.join("\n"));
        }
        let ends: Vec<_> = runs.into_iter().map(Watched::finish).collect();
        let codes: Vec<_> = ends.iter().map(|(s, _)| s.code()).collect();
        let winners = codes.iter().filter(|c| **c == Some(0)).count();
        assert_eq!(winners, 1, "{}: exits {codes:?}:\n{}\n---\n{}", out.display(), ends[0].1, ends[1].1);
        let (_, loser) = ends.iter().find(|(s, _)| s.code() != Some(0)).unwrap();
        assert!(
            ends.iter().any(|(s, _)| s.code() == Some(1))
                && error_line(loser).contains("exists (another run wrote it while this one was working); pass --force"),
            "{loser}"
        );
        assert!(out.exists());
        no_temporaries(&d);
    }
}

/// `--force` over an existing directory, SIGKILL at every step of the commit: the name holds
/// the old or the new result, whole; the next run collects what the killed one left.
#[test]
fn forced_directory_swap_survives_sigkill_at_every_step() {
    let d = scratch("safety", "swap");
    let reference = d.join("reference");
    run_ok(small_sky(2).arg("-o").arg(&reference));
    let (new, old) = (summary(&reference), {
        let o = d.join("old");
        run_ok(small_sky(1).arg("-o").arg(&o));
        summary(&o)
    });
    assert_ne!(new, old);
    let out = d.join("old");
    // The steps of a forced directory commit: before the swap, and after it (the old result not
    // yet removed).
    for step in ["commit", "swapped"] {
        let mut r = Watched::spawn(small_sky(2).arg("--force").arg("-o").arg(&out).env(PAUSE, "10000"));
        assert!(
            r.wait_for(&format!("test pause: {step} "), Duration::from_secs(60)),
            "no commit step '{step}': {}",
            r.seen.join("\n")
        );
        r.signal("-KILL");
        let (status, err) = r.finish();
        assert_eq!(status.code(), None, "not killed: {err}");
        assert!(out.is_dir(), "after SIGKILL at '{step}' there is no output");
        let now = summary(&out);
        assert!(
            now == old || now == new,
            "after SIGKILL at '{step}' the output is neither the old nor the new one"
        );
        for f in ["counts.parquet", "background.parquet", "run.json"] {
            assert!(out.join(f).is_file(), "after SIGKILL at '{step}': {f} missing");
        }
        // The killed run's leftovers go with the next run that writes this output.
        run_ok(small_sky(1).arg("--force").arg("-o").arg(&out));
        assert_eq!(summary(&out), old);
        no_temporaries(&d);
    }
}

/// SIGKILL leaves `.NAME.tmp-PID`; the next run that stages NAME removes it (and only entries of
/// dead processes with exactly that name pattern).
#[test]
fn stale_temporaries_of_dead_runs_are_collected() {
    let d = scratch("safety", "stale");
    let steps = write(&d, "steps.txt", STEPS);
    let out = d.join("h.parquet");
    // A real one: killed while its output waits at the commit.
    let mut r = Watched::spawn(photon(&steps).arg("-o").arg(&out).env(PAUSE, "10000"));
    assert!(r.wait_for("test pause: commit", Duration::from_secs(60)), "{}", r.seen.join("\n"));
    r.signal("-KILL");
    r.finish();
    assert!(names(&d).iter().any(|n| n.starts_with(".h.parquet.tmp-")), "{:?}", names(&d));
    // Made ones: of a dead process (collected) and look-alikes that are not ours (kept).
    let dead = dead_pid();
    let alive = std::process::id();
    write(&d, &format!(".h.parquet.tmp-{dead}"), "stale");
    std::fs::create_dir(d.join(format!(".h.parquet.old-{dead}"))).unwrap();
    write(&d.join(format!(".h.parquet.old-{dead}")), "x", "stale");
    let keep = [
        format!(".h.parquet.tmp-{alive}"),
        format!(".other.parquet.tmp-{dead}"),
        ".h.parquet.tmp-12x".to_string(),
        format!("h.parquet.tmp-{dead}"),
        format!(".h.parquet.tmp-{dead}.bak"),
    ];
    for k in &keep {
        write(&d, k, "not ours to remove");
    }
    run_ok(photon(&steps).arg("-o").arg(&out));
    let mut expect: Vec<String> = keep.to_vec();
    expect.extend(["h.parquet".to_string(), "steps.txt".to_string()]);
    expect.sort();
    assert_eq!(names(&d), expect);
    // The same for a directory output killed at its commit.
    let dir = d.join("sky");
    let mut r = Watched::spawn(small_sky(1).arg("-o").arg(&dir).env(PAUSE, "10000"));
    assert!(r.wait_for("test pause: commit", Duration::from_secs(60)), "{}", r.seen.join("\n"));
    r.signal("-KILL");
    r.finish();
    assert!(names(&d).iter().any(|n| n.starts_with(".sky.tmp-")));
    run_ok(small_sky(1).arg("-o").arg(&dir));
    assert!(!names(&d).iter().any(|n| n.starts_with(".sky.")), "{:?}", names(&d));
}

/// SIGINT or SIGTERM while the outputs are being committed: the commit finishes, the message
/// names what was written, exit 128 + signal, no temporaries.
#[test]
fn signal_during_commit_reports_what_was_committed() {
    let d = scratch("safety", "commit-signal");
    let steps = write(&d, "steps.txt", STEPS);
    for (sig, code) in [("-INT", 130), ("-TERM", 143)] {
        let out = d.join(format!("h{sig}.parquet"));
        let lines = d.join(format!("h{sig}.txt"));
        let mut r = Watched::spawn(photon(&steps).arg("-o").arg(&out).arg("--hit-lines").arg(&lines).env(PAUSE, "1500"));
        assert!(r.wait_for("test pause: commit", Duration::from_secs(60)), "{}", r.seen.join("\n"));
        r.signal(sig);
        let (status, err) = r.finish();
        assert_eq!(status.code(), Some(code), "{err}");
        let said = err
            .lines()
            .find(|l| l.starts_with("interrupted"))
            .unwrap_or_else(|| panic!("no message: {err}"));
        assert!(
            said.contains(&out.display().to_string()) && said.contains(&lines.display().to_string()) && said.contains("written completely"),
            "{err}"
        );
        assert!(!said.contains("nothing written"), "{err}");
        assert!(warpdrive_core::table::read_parquet(&out).is_ok());
        assert!(std::fs::read_to_string(&lines).unwrap().starts_with("HIT"));
        no_temporaries(&d);
    }
}

/// The JSON report of `bench` (and `gpu-check`, which stages it the same way) is staged before
/// the work: a file that appears at its name while the benchmark runs is not replaced without
/// `--force` (issue #36: the report was checked at the start and written over at the end).
#[test]
fn bench_report_that_appears_during_the_run_is_kept() {
    let d = scratch("safety", "bench-json");
    let json = d.join("bench.json");
    let bench = || {
        let mut c = bin();
        c.args(["bench", "em", "--device", "cpu", "--tracks", "2000", "--threads", "1", "--json"])
            .arg(&json)
            .env(PAUSE, "1500");
        c
    };
    let mut r = Watched::spawn(&mut bench());
    assert!(r.wait_for("test pause: commit", Duration::from_secs(60)), "{}", r.seen.join("\n"));
    std::fs::write(&json, "another run's report").unwrap();
    let (status, err) = r.finish();
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        error_line(&err).contains("exists (another run wrote it while this one was working); pass --force"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&json).unwrap(), "another run's report");
    no_temporaries(&d);
    // With --force the report replaces it.
    run_ok(bench().arg("--force").env_remove(PAUSE));
    assert!(std::fs::read_to_string(&json).unwrap().contains("\"em-kn-cpu\""));
    no_temporaries(&d);
}

/// `em --material` takes a path byte for byte: a TOML file whose name is not UTF-8 is read
/// (clap refused the argument before, exit 2), and its errors name it.
#[test]
fn em_material_file_with_a_non_utf8_name() {
    let d = scratch("safety", "material");
    let name = std::ffi::OsString::from_vec(b"m\xff.toml".to_vec());
    let toml = "name = \"x\"\ndensity = -1\n[[elements]]\nZ = 1\nA = 1\nfraction = 1\n";
    std::fs::write(d.join(&name), toml).unwrap();
    let o = bin()
        .args(["em", "--device", "cpu", "--material"])
        .arg(d.join(&name))
        .arg("-o")
        .arg(d.join("out"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(error_line(&err).contains("m\u{FFFD}.toml: field 'density'"), "{err}");
    assert!(!d.join("out").exists());
}

/// A legal 250-byte output name works: one staging level, a short enough temporary name.
#[test]
fn long_output_names_are_staged_once() {
    let d = scratch("safety", "long");
    let steps = write(&d, "steps.txt", STEPS);
    let name = format!("{}.parquet", "h".repeat(242));
    assert_eq!(name.len(), 250);
    let lines = format!("{}.txt", "l".repeat(246));
    run_ok(photon(&steps).arg("-o").arg(d.join(&name)).arg("--hit-lines").arg(d.join(&lines)));
    assert!(warpdrive_core::table::read_parquet(&d.join(&name)).is_ok());
    let dir = "s".repeat(255);
    run_ok(small_sky(1).arg("-o").arg(d.join(&dir)));
    assert!(d.join(&dir).join("counts.parquet").is_file());
    no_temporaries(&d);
}

/// A photon run of about a minute or more (the default 100 TeV cascade on the CPU).
fn slow_photon() -> Command {
    let mut c = bin();
    c.args(["photon", "--device", "cpu", "--threads", "1"]);
    c
}

/// Run `c`, expect exit 1 within `limit` (long before its work could end) with every one of
/// `words` in the error line; kill it if it runs on.
fn fails_early(c: &mut Command, limit: Duration, words: &[&str]) {
    let mut r = Watched::spawn(c);
    let t0 = Instant::now();
    while r.child.try_wait().unwrap().is_none() {
        if t0.elapsed() > limit {
            let _ = r.child.kill();
            let (_, err) = r.finish();
            panic!("{c:?} still running after {limit:?}: the output location was not checked before the work\n{err}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let (status, err) = r.finish();
    assert_eq!(status.code(), Some(1), "{c:?}: {err}");
    for w in words {
        assert!(error_line(&err).contains(w), "{c:?}: expected '{w}' in: {err}");
    }
}

/// Output names the file system cannot hold fail before any work.
#[test]
fn impossible_output_names_fail_before_the_work() {
    let d = scratch("safety", "names");
    let long = d.join(format!("{}.parquet", "x".repeat(248)));
    fails_early(
        slow_photon().arg("-o").arg(&long),
        Duration::from_secs(10),
        &["256 bytes", "choose a shorter name"],
    );
    assert_eq!(names(&d), Vec::<String>::new());
}

/// Fault injection on a small tmpfs (root only; skipped with a printed reason otherwise):
/// read-only and full locations fail before the work; a disk that fills during the write fails
/// with the file named, leaves nothing, and keeps the earlier output.
#[test]
fn full_and_read_only_file_systems() {
    let d = scratch("safety", "tmpfs");
    let ro = d.join("ro");
    let full = d.join("full");
    let small = d.join("small");
    for m in [&ro, &full, &small] {
        std::fs::create_dir(m).unwrap();
    }
    let mounts = (|| -> Result<[Tmpfs; 3], String> {
        Ok([
            Tmpfs::mount(&ro, "ro,size=1m")?,
            Tmpfs::mount(&full, "size=1m")?,
            Tmpfs::mount(&small, "size=1m")?,
        ])
    })();
    let _mounts = match mounts {
        Ok(m) => m,
        Err(why) => {
            skip("full_and_read_only_file_systems", &why);
            return;
        }
    };
    // Read-only: refused before the work, nothing written.
    fails_early(
        slow_photon().arg("-o").arg(ro.join("h.parquet")),
        Duration::from_secs(10),
        &["h.parquet", "Read-only file system"],
    );
    // Full: refused before the work.
    let filler = std::fs::File::create(full.join("filler")).unwrap();
    let mut w = std::io::BufWriter::new(filler);
    while w.write_all(&[0u8; 65536]).and_then(|_| w.flush()).is_ok() {}
    drop(w);
    fails_early(
        slow_photon().arg("-o").arg(full.join("h.parquet")),
        Duration::from_secs(10),
        &["h.parquet", "full"],
    );
    assert_eq!(names(&full), ["filler"]);
    // Filling up during the write: beam watch files of about 2.8 MB in 1 MB.
    let lte = write(
        &d,
        "line.lte",
        "Q1: QUAD, L=0.2, K1=1.5\nD: DRIF, L=0.5\nW: WATCH, FILENAME=\"%s-w.sdds\"\nL: LINE=(Q1, D, W)\n",
    );
    let out = small.join("beam");
    let beam = |passes: &str, force: bool| small_beam(&lte, &out, passes, force);
    run_ok(&mut beam("1", false));
    let before = snapshot(&small);
    let o = beam("100", true).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(error_line(&err).contains("No space left on device"), "{err}");
    assert!(
        error_line(&err).contains(&out.display().to_string()),
        "the message does not name the output: {err}"
    );
    assert!(
        !error_line(&err).contains(".tmp-"),
        "the message names the staged temporary, not the output: {err}"
    );
    assert_eq!(snapshot(&small), before, "the earlier output changed or temporaries were left");
}

/// Print why a test did not run, where the test harness does not capture it, or fail when
/// `WARPDRIVE_REQUIRE_FAULT_TESTS=1` (CI machines that can run it).
fn skip(test: &str, why: &str) {
    if std::env::var("WARPDRIVE_REQUIRE_FAULT_TESTS").is_ok_and(|v| v == "1") {
        panic!("{test}: cannot run: {why}");
    }
    let _ = writeln!(std::io::stderr().lock(), "SKIPPED {test}: {why}");
}

/// A small tmpfs mounted for one test and unmounted when dropped, also when the test fails.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, options: &str) -> Result<Self, String> {
        let uid = Command::new("id").arg("-u").output().map_err(|e| format!("id -u: {e}"))?;
        if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
            return Err("not root: a tmpfs cannot be mounted".into());
        }
        let o = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "warpdrive-test"])
            .arg(dir)
            .output()
            .map_err(|e| format!("mount: {e}"))?;
        if !o.status.success() {
            return Err(format!("mount -t tmpfs failed: {}", String::from_utf8_lossy(&o.stderr).trim()));
        }
        Ok(Self(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let ok = Command::new("umount").arg(&self.0).status().is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

/// Arguments are paths, not text: a non-UTF-8 output name is written as given, and the run's
/// `run.json` holds the command line with the bytes replaced (issue #36 item 4: exit 101 before).
#[test]
fn non_utf8_arguments_are_paths_not_panics() {
    let d = scratch("safety", "bytes");
    let steps = write(&d, "steps.txt", STEPS);
    let name = std::ffi::OsString::from_vec(b"h\xff\xfe.parquet".to_vec());
    let lines = std::ffi::OsString::from_vec(b"l\xff.txt".to_vec());
    run_ok(photon(&steps).arg("-o").arg(d.join(&name)).arg("--hit-lines").arg(d.join(&lines)));
    assert!(warpdrive_core::table::read_parquet(&d.join(&name)).unwrap().rows() > 0);
    assert!(d.join(&lines).is_file());
    let dir = std::ffi::OsString::from_vec(b"sky\xff".to_vec());
    run_ok(small_sky(1).arg("-o").arg(d.join(&dir)));
    assert!(d.join(&dir).join("summary.json").is_file());
    let run = std::fs::read_to_string(d.join(&dir).join("run.json")).unwrap();
    assert!(run.contains("sky\u{FFFD}"), "{run}");
    no_temporaries(&d);
}

/// A reader that goes away (`| head -1`) is not a crash: the lines for it are dropped, the run
/// finishes and commits its outputs, exit 0; the same for a closed stderr.
#[test]
fn closed_stdout_or_stderr_is_not_a_crash() {
    let d = scratch("safety", "pipe");
    let lte = write(
        &d,
        "line.lte",
        "Q1: QUAD, L=0.2, K1=1.5\nD: DRIF, L=0.5\nW: WATCH, FILENAME=\"%s-w.sdds\"\nL: LINE=(Q1, D, W)\n",
    );
    for (k, close_stderr) in [false, true].into_iter().enumerate() {
        let out = d.join(format!("out{k}"));
        let mut c = bin();
        c.args(["beam", "track"])
            .arg(&lte)
            .args(["--device", "cpu", "--particles", "200", "--passes", "3", "--no-plot"])
            .arg("-o")
            .arg(&out)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = c.spawn().unwrap();
        // `| head -0`: the reader leaves before the first line (every write gets EPIPE; a
        // reader that takes one line first races with the run's first lines).
        drop(child.stdout.take());
        let stderr = child.stderr.take().unwrap();
        let err = if close_stderr {
            drop(stderr);
            String::new()
        } else {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut { stderr }, &mut s).unwrap();
            s
        };
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "closed stderr: {close_stderr}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(out.join("final.parquet").is_file(), "the run's output was lost");
    }
    // A product written to stdout (PPC's HIT lines) stops quietly when its reader leaves, with
    // the status of a process ended by SIGPIPE.
    let Some(data) = common::data() else { return };
    let mut child = bin()
        .args(["ppc", "0"])
        .env("PPCTABLESDIR", data.join("ice/spice_3.2.1"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"V 2000.1.2\nEM 1 1 1970 0 0 0\nTR 1 0 e 0 0 -400 180 0 0 100 0\nEE\nEND\n")
        .unwrap();
    drop(stdin);
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    let status = child.wait().unwrap();
    assert!(!err.contains("panicked") && !err.contains("error"), "{err}");
    assert_eq!(status.code(), Some(141), "{err}");
}
