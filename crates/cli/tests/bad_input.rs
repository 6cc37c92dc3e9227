//! The bad-input corpus (`tests/bad-input/*.toml` at the repository root): every case runs the
//! binary in a fresh scratch directory holding the case's input files, with a time limit, and
//! asserts the exit code, the first line of the error message (the first stderr line starting
//! with `error:`), that no file was created, changed or removed
//! (inputs included), and that the run did not crash (no panic, no abort) or hang.
//!
//! A case:
//! ```toml
//! [[case]]
//! name = "photon: cascade energy in eV instead of GeV"
//! args = ["photon", "--device", "cpu", "--energy", "1e30", "-o", "h.parquet"]
//! exit = 1                       # expected exit code
//! stderr = "above 1e13 GeV"      # must appear in the first line of stderr
//! files = { "steps.txt" = "0 0 -400 0 180 0 0 1 1e19\n" }   # optional inputs
//! stdin = "…"                    # optional
//! env = { PPCTABLESDIR = "$DATA/ice/spice_3.2.1" }          # optional; $DATA = shared data
//! ```
//! `$DATA` in args and env is the shared data directory (cases that use it fail without it, as
//! every data test does in CI).

mod common;
use common::{bin, scratch};

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(serde::Deserialize)]
struct Corpus {
    case: Vec<Case>,
}

#[derive(serde::Deserialize)]
struct Case {
    name: String,
    args: Vec<String>,
    exit: i32,
    stderr: String,
    #[serde(default)]
    files: BTreeMap<String, String>,
    #[serde(default)]
    stdin: Option<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
}

const LIMIT: Duration = Duration::from_secs(30);

fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                out.insert(p.clone(), Vec::new());
                todo.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap_or_default());
            }
        }
    }
    out
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/bad-input")
}

/// Run one case; `Err` says what went wrong.
fn run_case(c: &Case, k: usize, data: &Path) -> Result<(), String> {
    let dir = scratch("bad", &format!("case{k}"));
    for (name, text) in &c.files {
        let p = dir.join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(p, text).unwrap();
    }
    let expand = |s: &str| s.replace("$DATA", &data.display().to_string());
    let before = snapshot(&dir);
    let mut cmd = bin();
    cmd.current_dir(&dir)
        .args(c.args.iter().map(|a| expand(a)))
        .env("RUST_BACKTRACE", "0")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    cmd.env("WARPDRIVE_DATA", data);
    for (k, v) in &c.env {
        cmd.env(k, expand(v));
    }
    let mut child = cmd.spawn().map_err(|e| e.to_string())?;
    if let Some(mut si) = child.stdin.take() {
        let text = c.stdin.clone().unwrap_or_default();
        std::thread::spawn(move || {
            let _ = si.write_all(text.as_bytes());
        });
    }
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break s;
        }
        if t0.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("did not finish within {LIMIT:?} (hang)"));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    // The message: the first line that starts with `error:` (progress and description lines of
    // the run may come before it).
    let first = err.lines().find(|l| l.starts_with("error:")).unwrap_or("");
    let mut problems = Vec::new();
    if status.code() != Some(c.exit) {
        problems.push(format!("exit {:?}, expected {}", status.code(), c.exit));
    }
    if err.contains("panicked") || err.contains("memory allocation of") {
        problems.push("crashed".to_string());
    }
    if !first.contains(&c.stderr) {
        problems.push(format!("first line of stderr lacks '{}'", c.stderr));
    }
    if snapshot(&dir) != before {
        problems.push("files were created, changed or removed".to_string());
    }
    let _ = std::fs::remove_dir_all(&dir);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{}\n  stderr: {}",
            problems.join("; "),
            err.trim_end().replace('\n', "\n          ")
        ))
    }
}

#[test]
fn every_bad_input_fails_cleanly() {
    let Some(data) = common::data() else { return };
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("tests/bad-input")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    let mut failures = Vec::new();
    let mut n = 0;
    for f in &files {
        let corpus: Corpus = toml::from_str(&std::fs::read_to_string(f).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for c in &corpus.case {
            if let Err(why) = run_case(c, n, &data) {
                failures.push(format!("{}: {}: {why}", f.file_name().unwrap().to_string_lossy(), c.name));
            }
            n += 1;
        }
    }
    assert!(n >= 100, "the corpus holds {n} cases, fewer than 100");
    assert!(
        failures.is_empty(),
        "{} of {n} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!("bad-input corpus: {n} cases, all clean");
}
