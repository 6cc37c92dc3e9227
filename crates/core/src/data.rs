//! Where the shared real data lives: `$WARPDRIVE_DATA`; when it is unset, the first
//! `shared/data` (holding `PROVENANCE.md`) found beside the working directory or beside one of
//! the executable's ancestor directories (a binary built in a checkout finds the data next to
//! the checkout from any working directory), else `../shared/data`.

use std::path::{Path, PathBuf};

/// Is `dir` a shared data directory?
fn is_data(dir: &Path) -> bool {
    dir.join("PROVENANCE.md").is_file()
}

/// The data directory named by `WARPDRIVE_DATA`, or found as the module documentation says.
pub fn data_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("WARPDRIVE_DATA") {
        return PathBuf::from(d);
    }
    let mut starts: Vec<PathBuf> = Vec::new();
    if let Ok(cwd) = std::env::current_dir() {
        starts.push(cwd);
    }
    if let Ok(exe) = std::env::current_exe() {
        starts.extend(exe.parent().map(Path::to_path_buf));
    }
    for s in &starts {
        for a in s.ancestors().take(6) {
            let c = a.join("../shared/data");
            if is_data(&c) {
                return c;
            }
        }
    }
    PathBuf::from("../shared/data")
}

/// The hint appended to "cannot read" errors of default data files.
pub fn missing_hint() -> &'static str {
    "the shared data directory was not found: set WARPDRIVE_DATA to it (README: Data)"
}

/// For tests: the data directory, searched from the crate's manifest directory upwards when
/// `WARPDRIVE_DATA` is unset. Returns `None` (the caller skips, printing why) when it is missing,
/// unless `WARPDRIVE_REQUIRE_DATA=1`, in which case a missing directory is a test failure.
pub fn test_data_dir(manifest_dir: &str) -> Option<PathBuf> {
    let candidates: Vec<PathBuf> = match std::env::var_os("WARPDRIVE_DATA") {
        Some(d) => vec![PathBuf::from(d)],
        None => {
            let m = PathBuf::from(manifest_dir);
            m.ancestors().map(|a| a.join("../shared/data")).take(5).collect()
        }
    };
    for c in &candidates {
        if c.join("PROVENANCE.md").is_file() {
            return Some(c.clone());
        }
    }
    let required = std::env::var("WARPDRIVE_REQUIRE_DATA").is_ok_and(|v| v == "1");
    assert!(
        !required,
        "WARPDRIVE_REQUIRE_DATA=1 but no shared data found (tried {candidates:?}); set WARPDRIVE_DATA"
    );
    eprintln!("skipping: shared data not found (tried {candidates:?}); set WARPDRIVE_DATA");
    None
}
