//! Kernel images and where they come from (issue #33: kernels ready at first use).
//!
//! A *build* is a kernel source with its architecture, arithmetic (precise or fast) and `-D`
//! switches. [`crate::cuda::load`] takes the build's image from the first of:
//!
//! 1. the images this process already has (one NVRTC call or file read per build);
//! 2. the **prebuilt** images installed with the binary (`warpdrive doctor --prebuild DIR`):
//!    cubins for `sm_80` and `sm_90` and a PTX for `compute_80`, made by NVRTC 13.0 from the
//!    sources compiled into this binary. A cubin for `sm_XY` serves every `sm_XZ` with Z ≥ Y
//!    (CUDA's binary compatibility within a major version). No NVRTC is needed for them;
//! 3. the **disk cache** ([`disk_cache_dir`]): cubins NVRTC made on this node before;
//! 4. **NVRTC**, whose cubin then goes into the disk cache;
//! 5. without NVRTC, the prebuilt `compute_80` PTX, which the driver compiles for the device.
//!
//! Prebuilt images are made without line tables (`-lineinfo` triples a cubin); to profile with
//! source lines set `WARPDRIVE_KERNELS=off`, so that NVRTC compiles the kernel with them.
//!
//! Every name holds a 64-bit FNV-1a hash of the expanded source, architecture, arithmetic and
//! switches, so an image made from other sources is never taken: it is simply not found, and the
//! build falls through to the next place. Switches are sorted and deduplicated before they are
//! hashed and passed to NVRTC ([`canonical_defines`]): their order never decides a name.

use crate::cuda::{expand_includes, CudaError, FastArith, KernelOptions};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The architectures `warpdrive doctor --prebuild` makes images for by default: cubins for the
/// A100 and H100/H200 generations and PTX for everything from sm_80 on.
pub const PREBUILT_ARCHS: &[&str] = &["sm_80", "sm_90", "compute_80"];

/// A compiled kernel: SASS for one architecture (loaded as it is) or PTX (compiled by the
/// driver when loaded).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Image {
    Cubin(Vec<u8>),
    Ptx(String),
}

impl Image {
    /// The image as cudarc loads it.
    #[must_use]
    pub fn to_cudarc(&self) -> cudarc::nvrtc::Ptx {
        match self {
            Image::Cubin(b) => cudarc::nvrtc::Ptx::from_binary(b.clone()),
            Image::Ptx(s) => cudarc::nvrtc::Ptx::from_src(s.clone()),
        }
    }

    #[must_use]
    pub fn len(&self) -> usize {
        match self {
            Image::Cubin(b) => b.len(),
            Image::Ptx(s) => s.len(),
        }
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// "cubin" or "PTX".
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Image::Cubin(_) => "cubin",
            Image::Ptx(_) => "PTX",
        }
    }
}

/// Where an image came from (for `warpdrive doctor` and the cold-start measurements).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    Process,
    Prebuilt,
    DiskCache,
    Nvrtc,
    PrebuiltPtx,
}

/// Which builds a domain lists: those of runs with default options (`doctor --prebuild`,
/// installed with the binary), or every combination its runs can ask for (`doctor --prepare`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Default,
    All,
}

/// One kernel build, without its architecture: what a domain lists for `doctor --prebuild`
/// and `doctor --prepare` — made by the same function its GPU path calls, so the names agree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Build {
    /// Kernel file name (as passed to [`crate::cuda::load`]).
    pub file: String,
    /// Its source (before the shared headers are spliced in).
    pub src: String,
    pub precise: bool,
    pub defines: Vec<String>,
    /// NVRTC arithmetic options a precise build takes from fast mode (the photon kernel's
    /// precise twin contracts into FMAs); none for every other build.
    pub fast_arith: FastArith,
}

impl Build {
    #[must_use]
    pub fn new(file: &str, src: &str, precise: bool, defines: Vec<String>) -> Self {
        Self {
            file: file.to_string(),
            src: src.to_string(),
            precise,
            defines: canonical_defines(&defines),
            fast_arith: FastArith::default(),
        }
    }

    /// The same build with these NVRTC arithmetic options.
    #[must_use]
    pub fn with_fast_arith(self, fast_arith: FastArith) -> Self {
        Self { fast_arith, ..self }
    }

    #[must_use]
    pub fn options(&self, arch: &str) -> KernelOptions {
        KernelOptions {
            arch: arch.to_string(),
            precise: self.precise,
            defines: self.defines.clone(),
            fast_arith: self.fast_arith,
        }
    }

    /// `file (fast, -DA -DB=2)` for lines and errors (`precise nvrtc:fmad, …` with NVRTC options).
    #[must_use]
    pub fn label(&self) -> String {
        let d: String = self.defines.iter().map(|d| format!(" -D{d}")).collect();
        let mode = match (self.precise, self.fast_arith == FastArith::default()) {
            (false, _) => "fast".to_string(),
            (true, true) => "precise".to_string(),
            (true, false) => format!("precise nvrtc:{}", self.fast_arith.label()),
        };
        format!("{} ({mode}{d})", self.file)
    }
}

/// Switches in the form every name, cache key and NVRTC call uses: one per macro, the last
/// given (the one that wins on a compiler's command line, `-DA=1 -DA=2` defining A as 2),
/// sorted by macro name.
#[must_use]
pub fn canonical_defines(defines: &[String]) -> Vec<String> {
    let macro_name = |d: &String| d.split('=').next().unwrap_or_default().to_string();
    let mut last: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
    for d in defines {
        last.insert(macro_name(d), d.clone());
    }
    last.into_values().collect()
}

/// `stem-HASH` of a build for `arch`: the file name stem of the kernel and a hash of what
/// decides its image. `nvrtc` (the compiler's version) is part of disk-cache names only:
/// prebuilt images are made by the one NVRTC the project pins.
fn build_name(name: &str, full_src: &str, opts: &KernelOptions, nvrtc: Option<(i32, i32)>) -> String {
    let mut h = crate::hash::Fnv64::new();
    h.part(full_src.as_bytes())
        .part(opts.arch.as_bytes())
        .part(&[u8::from(opts.precise)]);
    for d in canonical_defines(&opts.defines) {
        h.part(d.as_bytes());
    }
    if opts.fast_arith != FastArith::default() {
        // Only then, so that every other build keeps its name. No switch begins with "nvrtc:".
        h.part(format!("nvrtc:{}", opts.fast_arith.label()).as_bytes());
    }
    if let Some((major, minor)) = nvrtc {
        h.part(format!("{major}.{minor}").as_bytes());
    }
    let stem: String = name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    format!("{stem}-{}", h.hex())
}

/// File name of a prebuilt image: `stem-HASH.sm_90.cubin` or `stem-HASH.compute_80.ptx`.
#[must_use]
pub fn prebuilt_name(name: &str, full_src: &str, opts: &KernelOptions) -> String {
    let ext = if opts.arch.starts_with("compute_") { "ptx" } else { "cubin" };
    format!("{}.{}.{ext}", build_name(name, full_src, opts, None), opts.arch)
}

/// File name of a cached cubin: kernel name and a hash of everything that decides the output
/// (expanded source, options, NVRTC version). Stable across runs and Rust versions.
#[must_use]
pub fn disk_cache_key(name: &str, full_src: &str, opts: &KernelOptions, nvrtc: (i32, i32)) -> String {
    format!("{}.cubin", build_name(name, full_src, opts, Some(nvrtc)))
}

/// Directory of the on-disk cache: `$WARPDRIVE_KERNEL_CACHE`, else
/// `$XDG_CACHE_HOME/warpdrive/kernels`, else `~/.cache/warpdrive/kernels`;
/// `WARPDRIVE_KERNEL_CACHE=off` disables it. NVRTC takes seconds per kernel, which dominates
/// one-event-per-process use.
#[must_use]
pub fn disk_cache_dir() -> Option<PathBuf> {
    match std::env::var_os("WARPDRIVE_KERNEL_CACHE") {
        Some(v) if v == "off" => None,
        Some(v) => Some(PathBuf::from(v)),
        None => std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .map(|c| c.join("warpdrive").join("kernels")),
    }
}

static PREBUILT_DIR: OnceLock<PathBuf> = OnceLock::new();

/// Make `dir` the first place prebuilt images are looked for (the Python package points it at
/// the images inside its wheel). Only the first call counts.
pub fn set_prebuilt_dir(dir: PathBuf) {
    let _ = PREBUILT_DIR.set(dir);
}

/// Name of the directory of prebuilt images beside the executable.
pub const PREBUILT_DIR_NAME: &str = "warpdrive-kernels";

/// Where prebuilt images are looked for, in order: `$WARPDRIVE_KERNELS` (`off`: nowhere), the
/// directory set by [`set_prebuilt_dir`], `warpdrive-kernels/` beside the executable and
/// `../share/warpdrive/kernels/` from it (an installation prefix).
#[must_use]
pub fn prebuilt_dirs() -> Vec<PathBuf> {
    match std::env::var_os("WARPDRIVE_KERNELS") {
        Some(v) if v == "off" => return Vec::new(),
        Some(v) => return vec![PathBuf::from(v)],
        None => {}
    }
    let mut dirs: Vec<PathBuf> = PREBUILT_DIR.get().cloned().into_iter().collect();
    if let Some(exe_dir) = std::env::current_exe().ok().and_then(|e| e.parent().map(Path::to_path_buf)) {
        dirs.push(exe_dir.join(PREBUILT_DIR_NAME));
        dirs.push(exe_dir.join("..").join("share").join("warpdrive").join("kernels"));
    }
    dirs
}

/// Whether a directory of prebuilt images (with the MANIFEST.txt `doctor --prebuild` writes)
/// is where runs look for one.
#[must_use]
pub fn prebuilt_installed() -> bool {
    prebuilt_dirs().iter().any(|d| d.join("MANIFEST.txt").is_file())
}

/// The cubin architectures that run on `arch` (`sm_86` → sm_86, sm_85 … sm_80): the same
/// major version, minor at most the device's.
#[must_use]
pub fn compatible_archs(arch: &str) -> Vec<String> {
    let Some(cc) = arch.strip_prefix("sm_").and_then(|s| s.parse::<u32>().ok()) else {
        return vec![arch.to_string()];
    };
    let (major, minor) = (cc / 10, cc % 10);
    (0..=minor).rev().map(|m| format!("sm_{major}{m}")).collect()
}

/// A prebuilt cubin for `opts` (or one of its compatible architectures) in `dirs`.
#[must_use]
pub fn find_prebuilt(name: &str, full_src: &str, opts: &KernelOptions, dirs: &[PathBuf]) -> Option<(PathBuf, Image)> {
    for arch in compatible_archs(&opts.arch) {
        let o = KernelOptions { arch, ..opts.clone() };
        let file = prebuilt_name(name, full_src, &o);
        for d in dirs {
            let p = d.join(&file);
            if let Ok(bytes) = std::fs::read(&p) {
                return Some((p, Image::Cubin(bytes)));
            }
        }
    }
    None
}

/// The prebuilt `compute_80` PTX of a build (for devices without a cubin when NVRTC is absent).
#[must_use]
pub fn find_prebuilt_ptx(name: &str, full_src: &str, opts: &KernelOptions, dirs: &[PathBuf]) -> Option<(PathBuf, Image)> {
    let o = KernelOptions {
        arch: "compute_80".into(),
        ..opts.clone()
    };
    let file = prebuilt_name(name, full_src, &o);
    dirs.iter().find_map(|d| {
        let p = d.join(&file);
        std::fs::read_to_string(&p).ok().map(|s| (p, Image::Ptx(s)))
    })
}

/// A cached cubin of this node's NVRTC.
#[must_use]
pub fn find_cached(name: &str, full_src: &str, opts: &KernelOptions, nvrtc: (i32, i32)) -> Option<Image> {
    let dir = disk_cache_dir()?;
    std::fs::read(dir.join(disk_cache_key(name, full_src, opts, nvrtc)))
        .ok()
        .map(Image::Cubin)
}

/// Put a cubin into the disk cache (best effort: an unwritable cache only costs the next
/// process a compile).
pub fn store_cached(name: &str, full_src: &str, opts: &KernelOptions, nvrtc: (i32, i32), image: &Image) {
    if let (Some(dir), Image::Cubin(bytes)) = (disk_cache_dir(), image) {
        if std::fs::create_dir_all(&dir).is_ok() {
            let _ = crate::table::write_atomic(&dir.join(disk_cache_key(name, full_src, opts, nvrtc)), bytes);
        }
    }
}

/// The NVRTC options of a build: the switches, C++17, fast-math intrinsics in fast mode and
/// IEEE arithmetic (no contraction, exact division and square root) in precise mode, line
/// tables for profilers when `line_info` (they do not change the code, but triple a cubin's
/// size: prebuilt images go without), the architecture. `opts.fast_arith` turns single options
/// of a precise build to their fast-mode value (measurement only).
fn nvrtc_options(opts: &KernelOptions, line_info: bool) -> Vec<String> {
    let fast = !opts.precise;
    let a = opts.fast_arith;
    let mut o = vec![
        format!("--ftz={}", fast || a.ftz),
        format!("--prec-sqrt={}", opts.precise && !a.sqrt),
        format!("--prec-div={}", opts.precise && !a.div),
        format!("--fmad={}", fast || a.fmad),
    ];
    o.extend(canonical_defines(&opts.defines).iter().map(|d| format!("-D{d}")));
    o.push("-std=c++17".into());
    if fast || a.math {
        // The fast-math intrinsics (sincosf, logf, powf, expf on the SFU).
        o.push("--use_fast_math".into());
    }
    if line_info {
        o.push("-lineinfo".into());
    }
    o.push(format!("--gpu-architecture={}", opts.arch));
    o
}

/// Compile the expanded source `full_src` with NVRTC: the cubin for an `sm_XY` architecture,
/// the PTX for a `compute_XY` one. NVRTC must be 13.0 or older (the driver on the GPU
/// machines rejects newer PTX). `line_info`: with line tables (for profilers).
pub fn nvrtc_compile(name: &str, full_src: &str, opts: &KernelOptions, line_info: bool) -> Result<Image, CudaError> {
    use cudarc::nvrtc::{result, sys};
    use std::ffi::{CStr, CString};
    let (major, minor) = crate::cuda::nvrtc_version()?;
    if (major, minor) > (13, 0) {
        return Err(CudaError::NvrtcTooNew {
            found: format!("{major}.{minor}"),
        });
    }
    let fail = |what: &str| CudaError::Compile {
        name: name.to_string(),
        log: what.to_string(),
    };
    let src = CString::new(full_src).map_err(|_| fail("the source holds a NUL byte"))?;
    let cname = CString::new(name).map_err(|_| fail("the name holds a NUL byte"))?;
    let prog = result::create_program(&src, Some(&cname)).map_err(|e| fail(&format!("{e:?}")))?;
    // Destroy the program on every path out.
    struct Program(sys::nvrtcProgram);
    impl Drop for Program {
        fn drop(&mut self) {
            // SAFETY: created by create_program above and destroyed once, here.
            let _ = unsafe { result::destroy_program(self.0) };
        }
    }
    let prog = Program(prog);
    // SAFETY: `prog.0` is a live program; the options are plain strings.
    if let Err(e) = unsafe { result::compile_program(prog.0, &nvrtc_options(opts, line_info)) } {
        // SAFETY: as above; the log is a NUL-terminated string NVRTC wrote.
        let log = unsafe { result::get_program_log(prog.0) }
            .map(|l| unsafe { CStr::from_ptr(l.as_ptr()) }.to_string_lossy().into_owned())
            .unwrap_or_default();
        return Err(fail(&format!("{e:?}\n{log}")));
    }
    if opts.arch.starts_with("compute_") {
        // SAFETY: the program compiled; get_ptx returns its NUL-terminated PTX.
        let ptx = unsafe { result::get_ptx(prog.0) }.map_err(|e| fail(&format!("{e:?}")))?;
        let text = unsafe { CStr::from_ptr(ptx.as_ptr()) }.to_string_lossy().into_owned();
        return Ok(Image::Ptx(text));
    }
    let mut size = 0usize;
    // SAFETY: the program compiled for a real architecture, so it holds a cubin of `size` bytes.
    let rc = unsafe { sys::nvrtcGetCUBINSize(prog.0, &mut size) };
    if rc != sys::nvrtcResult::NVRTC_SUCCESS || size == 0 {
        return Err(fail(&format!("no cubin for {} ({rc:?})", opts.arch)));
    }
    let mut bytes = vec![0u8; size];
    // SAFETY: `bytes` holds `size` bytes, as NVRTC asked for.
    let rc = unsafe { sys::nvrtcGetCUBIN(prog.0, bytes.as_mut_ptr().cast()) };
    if rc != sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(fail(&format!("nvrtcGetCUBIN: {rc:?}")));
    }
    Ok(Image::Cubin(bytes))
}

/// Compile `build` for `arch` with NVRTC and write it into `dir` under its prebuilt name
/// (atomically). Returns the file name and the image's size.
pub fn prebuild(build: &Build, arch: &str, dir: &Path) -> Result<(String, usize), CudaError> {
    let full = expand_includes(&build.src);
    let image = nvrtc_compile(&build.file, &full, &build.options(arch), false)?;
    write_prebuilt(build, arch, dir, &image)
}

/// Write `image`, compiled from `build` for `arch` without line tables (as [`prebuild`] makes
/// it), into `dir` under its prebuilt name (atomically). Returns the file name and the image's
/// size.
pub fn write_prebuilt(build: &Build, arch: &str, dir: &Path, image: &Image) -> Result<(String, usize), CudaError> {
    let full = expand_includes(&build.src);
    let file = prebuilt_name(&build.file, &full, &build.options(arch));
    let bytes: &[u8] = match image {
        Image::Cubin(b) => b,
        Image::Ptx(s) => s.as_bytes(),
    };
    crate::table::write_atomic(&dir.join(&file), bytes).map_err(|e| CudaError::Other(format!("{}: {e}", dir.join(&file).display())))?;
    Ok((file, image.len()))
}

/// Whether `dir` holds the prebuilt image of `build` for `arch`.
#[must_use]
pub fn has_prebuilt(build: &Build, arch: &str, dir: &Path) -> bool {
    let full = expand_includes(&build.src);
    dir.join(prebuilt_name(&build.file, &full, &build.options(arch))).is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> KernelOptions {
        KernelOptions {
            arch: "sm_90".into(),
            precise: false,
            defines: vec!["B=2".into(), "A".into()],
            fast_arith: FastArith::default(),
        }
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn the_default_options_are_unchanged() {
        let fast = opts();
        assert_eq!(
            nvrtc_options(&fast, true),
            strings(&[
                "--ftz=true",
                "--prec-sqrt=false",
                "--prec-div=false",
                "--fmad=true",
                "-DA",
                "-DB=2",
                "-std=c++17",
                "--use_fast_math",
                "-lineinfo",
                "--gpu-architecture=sm_90",
            ])
        );
        let precise = KernelOptions { precise: true, ..fast };
        assert_eq!(
            nvrtc_options(&precise, false),
            strings(&[
                "--ftz=false",
                "--prec-sqrt=true",
                "--prec-div=true",
                "--fmad=false",
                "-DA",
                "-DB=2",
                "-std=c++17",
                "--gpu-architecture=sm_90",
            ])
        );
    }

    #[test]
    fn single_fast_options_of_a_precise_build() {
        let precise = KernelOptions {
            precise: true,
            defines: vec![],
            ..opts()
        };
        let with = |names: &[&str]| {
            let mut a = FastArith::default();
            for n in names {
                assert!(a.set(n), "{n}");
            }
            nvrtc_options(
                &KernelOptions {
                    fast_arith: a,
                    ..precise.clone()
                },
                false,
            )
        };
        let tail = ["-std=c++17", "--gpu-architecture=sm_90"];
        let expect = |head: [&str; 4], math: bool| {
            let mut v = strings(&head);
            v.push(tail[0].into());
            if math {
                v.push("--use_fast_math".into());
            }
            v.push(tail[1].into());
            v
        };
        let ieee = ["--ftz=false", "--prec-sqrt=true", "--prec-div=true", "--fmad=false"];
        assert_eq!(with(&[]), expect(ieee, false));
        assert_eq!(
            with(&["fmad"]),
            expect(["--ftz=false", "--prec-sqrt=true", "--prec-div=true", "--fmad=true"], false)
        );
        assert_eq!(
            with(&["ftz"]),
            expect(["--ftz=true", "--prec-sqrt=true", "--prec-div=true", "--fmad=false"], false)
        );
        assert_eq!(
            with(&["fast-div"]),
            expect(["--ftz=false", "--prec-sqrt=true", "--prec-div=false", "--fmad=false"], false)
        );
        assert_eq!(
            with(&["fast-sqrt"]),
            expect(["--ftz=false", "--prec-sqrt=false", "--prec-div=true", "--fmad=false"], false)
        );
        assert_eq!(with(&["fast-math"]), expect(ieee, true));
        let all = with(&FastArith::NAMES);
        let fast = nvrtc_options(
            &KernelOptions {
                precise: false,
                ..precise.clone()
            },
            false,
        );
        assert_eq!(all, fast, "every option turned: the fast build's options");
        assert!(!FastArith::default().set("fma"), "unknown names are refused");
    }

    #[test]
    fn fast_options_separate_names() {
        let precise = KernelOptions { precise: true, ..opts() };
        let base_key = disk_cache_key("p.cu", "src", &precise, (13, 0));
        let base_name = prebuilt_name("p.cu", "src", &precise);
        let mut keys = vec![base_key.clone()];
        let mut names = vec![base_name];
        for n in FastArith::NAMES {
            let mut a = FastArith::default();
            a.set(n);
            let o = KernelOptions {
                fast_arith: a,
                ..precise.clone()
            };
            keys.push(disk_cache_key("p.cu", "src", &o, (13, 0)));
            names.push(prebuilt_name("p.cu", "src", &o));
        }
        let mut all = FastArith::default();
        for n in FastArith::NAMES {
            all.set(n);
        }
        let o = KernelOptions {
            fast_arith: all,
            ..precise.clone()
        };
        keys.push(disk_cache_key("p.cu", "src", &o, (13, 0)));
        names.push(prebuilt_name("p.cu", "src", &o));
        for v in [&keys, &names] {
            let distinct: std::collections::BTreeSet<&String> = v.iter().collect();
            assert_eq!(distinct.len(), v.len(), "{v:?}");
        }
        // With none turned on, the name is the one computed before the field existed: the hash
        // of the same parts (source, architecture, arithmetic, switches, NVRTC version).
        let mut h = crate::hash::Fnv64::new();
        h.part(b"src").part(b"sm_90").part(&[1]).part(b"A").part(b"B=2").part(b"13.0");
        assert_eq!(base_key, format!("p_cu-{}.cubin", h.hex()));
    }

    #[test]
    fn names_separate_what_changes_the_image() {
        let o = opts();
        let k = disk_cache_key("p.cu", "src", &o, (13, 0));
        assert_eq!(k, disk_cache_key("p.cu", "src", &o.clone(), (13, 0)), "stable");
        assert!(k.starts_with("p_cu-") && k.ends_with(".cubin"));
        assert_ne!(k, disk_cache_key("p.cu", "src2", &o, (13, 0)), "source");
        assert_ne!(k, disk_cache_key("p.cu", "src", &o, (12, 9)), "NVRTC version");
        let variants = [
            KernelOptions {
                precise: true,
                ..o.clone()
            },
            KernelOptions {
                defines: vec![],
                ..o.clone()
            },
            KernelOptions {
                arch: "sm_80".into(),
                ..o.clone()
            },
        ];
        for v in &variants {
            assert_ne!(k, disk_cache_key("p.cu", "src", v, (13, 0)), "{v:?}");
            assert_ne!(prebuilt_name("p.cu", "src", &o), prebuilt_name("p.cu", "src", v), "{v:?}");
        }
    }

    #[test]
    fn the_order_of_switches_decides_no_name() {
        let o = opts();
        let swapped = KernelOptions {
            defines: vec!["A".into(), "B=1".into(), "B=2".into(), "A".into()],
            ..o.clone()
        };
        assert_eq!(canonical_defines(&swapped.defines), ["A", "B=2"], "the last value of a macro wins");
        assert_eq!(prebuilt_name("p.cu", "s", &o), prebuilt_name("p.cu", "s", &swapped));
        assert_eq!(
            disk_cache_key("p.cu", "s", &o, (13, 0)),
            disk_cache_key("p.cu", "s", &swapped, (13, 0))
        );
        assert_eq!(nvrtc_options(&o, true), nvrtc_options(&swapped, true));
        assert!(prebuilt_name("p.cu", "s", &o).ends_with(".sm_90.cubin"));
        let ptx = KernelOptions {
            arch: "compute_80".into(),
            ..o
        };
        assert!(prebuilt_name("p.cu", "s", &ptx).ends_with(".compute_80.ptx"));
    }

    #[test]
    fn cubins_serve_later_minor_versions_of_their_major() {
        assert_eq!(
            compatible_archs("sm_86"),
            ["sm_86", "sm_85", "sm_84", "sm_83", "sm_82", "sm_81", "sm_80"]
        );
        assert_eq!(compatible_archs("sm_90"), ["sm_90"]);
        assert_eq!(compatible_archs("weird"), ["weird"]);
    }

    #[test]
    fn prebuilt_images_are_found_by_name_in_order() {
        let dir = std::env::temp_dir().join(format!("wd-prebuilt-test-{}", std::process::id()));
        let (a, b) = (dir.join("a"), dir.join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        let o = KernelOptions {
            arch: "sm_86".into(),
            ..opts()
        };
        let at80 = KernelOptions {
            arch: "sm_80".into(),
            ..o.clone()
        };
        assert!(find_prebuilt("k.cu", "src", &o, &[a.clone(), b.clone()]).is_none());
        std::fs::write(b.join(prebuilt_name("k.cu", "src", &at80)), b"sm80").unwrap();
        let (p, img) = find_prebuilt("k.cu", "src", &o, &[a.clone(), b.clone()]).unwrap();
        assert_eq!((p.parent().unwrap(), img), (b.as_path(), Image::Cubin(b"sm80".to_vec())));
        std::fs::write(a.join(prebuilt_name("k.cu", "src", &o)), b"sm86").unwrap();
        let (_, img) = find_prebuilt("k.cu", "src", &o, &[a.clone(), b.clone()]).unwrap();
        assert_eq!(img, Image::Cubin(b"sm86".to_vec()), "the exact architecture first");
        assert!(find_prebuilt("k.cu", "other source", &o, &[a.clone(), b.clone()]).is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
