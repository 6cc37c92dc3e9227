//! Test helpers: the shared data directory and scratch files.
#![cfg(test)]

use std::path::PathBuf;

/// The shared data directory (`WARPDRIVE_DATA`, else `../shared/data` beside the checkout).
/// The crate's unit tests need it: without it they fail on the missing files (and with
/// `WARPDRIVE_REQUIRE_DATA=1`, as in CI, on the lookup itself).
pub fn data_dir() -> PathBuf {
    warpdrive_core::data::test_data_dir(env!("CARGO_MANIFEST_DIR")).unwrap_or_else(|| PathBuf::from("/nonexistent-warpdrive-data"))
}

/// A scratch file with the given content, unique per test process.
pub fn scratch(name: &str, content: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("warpdrive-photon-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, content).unwrap();
    p
}

/// A scratch directory with the given files.
pub fn scratch_dir(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir()
        .join(format!("warpdrive-photon-test-{}", std::process::id()))
        .join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for (f, c) in files {
        std::fs::write(dir.join(f), c).unwrap();
    }
    dir
}
