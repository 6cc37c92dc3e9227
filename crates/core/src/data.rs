//! Where the shared real data lives: `$WARPDRIVE_DATA`, default `../shared/data` (relative to
//! the working directory, i.e. beside a checkout).

use std::path::PathBuf;

/// The data directory named by `WARPDRIVE_DATA`, or `../shared/data`.
pub fn data_dir() -> PathBuf {
    std::env::var_os("WARPDRIVE_DATA").map_or_else(|| PathBuf::from("../shared/data"), PathBuf::from)
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
