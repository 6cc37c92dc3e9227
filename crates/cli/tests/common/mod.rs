//! Helpers shared by the end-to-end tests of the `warpdrive` binary (each test file uses a
//! subset, hence the `dead_code` allowance).
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// The binary under test, with progress bars off.
pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_warpdrive"));
    c.env("WARPDRIVE_PROGRESS", "0");
    c
}

/// The shared data directory, if present (tests that need it fail in CI without it).
pub fn data() -> Option<PathBuf> {
    warpdrive_core::data::test_data_dir(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh, empty directory for one test: `$TMP/warpdrive-<suite>-<pid>-<name>`.
pub fn scratch(suite: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("warpdrive-{suite}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Run `c` and assert that it succeeded, showing its output if not.
pub fn run_ok(c: &mut Command) -> Output {
    let o = c.output().unwrap();
    assert!(
        o.status.success(),
        "{:?} failed: {}{}",
        c,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// Send `sig` (`-INT`, `-TERM`, `-KILL`) to process `pid` with kill(1).
pub fn signal(pid: u32, sig: &str) {
    let st = Command::new("kill").arg(sig).arg(pid.to_string()).status().unwrap();
    assert!(st.success(), "kill {sig} {pid} failed");
}

/// Start `c` (stdout discarded, stderr kept), send it `sig` after `settle`, and return its
/// output and the time from the signal to its exit.
pub fn interrupt_after(c: &mut Command, settle: std::time::Duration, sig: &str) -> (Output, std::time::Duration) {
    let child = c
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(settle);
    let t0 = std::time::Instant::now();
    signal(child.id(), sig);
    let o = child.wait_with_output().unwrap();
    (o, t0.elapsed())
}
