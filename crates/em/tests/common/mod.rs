//! Shared by the host-twin tests (`shower_host_twin.rs`, `geo_host_twin.rs`): a CUDA kernel's
//! device code compiled for the host with the C++ compiler, and the bytes of the records it reads.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The raw bytes of `#[repr(C)]` plain-old-data records (what the device is sent).
pub fn bytes<T>(v: &[T]) -> &[u8] {
    // SAFETY: callers pass #[repr(C)] records of f64/u32/i32/u64 fields; their bytes are what
    // the device reads too.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// Compile `tests/NAME.cpp` into `dir/NAME` with `c++` (or `$CXX`): no contraction, no fast
/// math, the crate's and core's kernel folders on the include path. `None` (skipped) without a
/// compiler, unless `WARPDRIVE_REQUIRE_DATA=1`.
pub fn compile(dir: &Path, name: &str) -> Option<PathBuf> {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = dir.join(name);
    let out = Command::new(&cxx)
        .args(["-O2", "-std=c++17", "-ffp-contract=off", "-fno-fast-math", "-w"])
        .arg("-I")
        .arg(root.join("kernels"))
        .arg("-I")
        .arg(root.join("../core/kernels"))
        .arg(root.join(format!("tests/{name}.cpp")))
        .arg("-o")
        .arg(&exe)
        .output();
    match out {
        Ok(o) if o.status.success() => Some(exe),
        Ok(o) => panic!("{cxx} failed on the host twin {name}:\n{}", String::from_utf8_lossy(&o.stderr)),
        Err(e) => {
            assert!(
                std::env::var("WARPDRIVE_REQUIRE_DATA").as_deref() != Ok("1"),
                "no C++ compiler ({cxx}: {e})"
            );
            eprintln!("skipped: no C++ compiler ({cxx}: {e})");
            None
        }
    }
}

/// [`compile`] once per test binary, into a directory of this process: the tests of one binary
/// share the build of `tests/NAME.cpp` instead of each compiling the same source.
#[allow(dead_code)] // Not every test binary that includes this module uses it.
pub fn compile_once(name: &str) -> Option<PathBuf> {
    static EXE: std::sync::OnceLock<(String, Option<PathBuf>)> = std::sync::OnceLock::new();
    let (built, exe) = EXE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("wd-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        (name.to_string(), compile(&dir, name))
    });
    assert_eq!(built, name, "one host twin per test binary");
    exe.clone()
}
