//! Building CUDA kernel pieces for the host (C++ without contraction: the arithmetic of a GPU
//! build with `--fmad=false`), shared by the host-twin tests.

use std::process::Command;

/// The text of `src` from the line starting `from` up to (without) the one starting `to`.
pub fn piece<'a>(src: &'a str, from: &str, to: &str) -> &'a str {
    let a = src.find(from).unwrap_or_else(|| panic!("{from:?} not in the kernel"));
    let b = a + src[a..].find(to).unwrap_or_else(|| panic!("{to:?} not after {from:?}"));
    &src[a..b]
}

/// Compiles `cpp` to `exe` with `flags` (and the kernel switches `defines`); false (test skipped)
/// without a C++ compiler unless `WARPDRIVE_REQUIRE_DATA=1`.
pub fn compile(cpp: &std::path::Path, exe: &std::path::Path, flags: &[&str], defines: &[&str]) -> bool {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    match Command::new(&cxx)
        .args(flags)
        .args(defines.iter().map(|d| format!("-D{d}")))
        .arg(cpp)
        .arg("-o")
        .arg(exe)
        .output()
    {
        Ok(o) if o.status.success() => true,
        Ok(o) => panic!(
            "{cxx} failed on the host twin ({defines:?}):\n{}",
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => {
            assert!(
                std::env::var("WARPDRIVE_REQUIRE_DATA").as_deref() != Ok("1"),
                "no C++ compiler ({cxx}: {e})"
            );
            eprintln!("skipped: no C++ compiler ({cxx}: {e})");
            false
        }
    }
}
