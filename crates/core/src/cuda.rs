//! CUDA runtime on `cudarc` (driver + NVRTC, loaded dynamically, CUDA 13.0): probing, device
//! discovery, NVRTC compilation of kernel sources with the shared headers and a per-process
//! cache, and launch helpers. A missing driver, GPU or NVRTC is an error, never a panic.

use crate::kernels::{self, Image, Origin};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Shared device headers, embedded so the binary needs no files at run time. Kernel sources
/// include them with `#include "name"`; [`expand_includes`] splices them in.
pub const HEADERS: [(&str, &str); 2] = [
    ("philox.cuh", include_str!("../kernels/philox.cuh")),
    ("pmath.cuh", include_str!("../kernels/pmath.cuh")),
];

#[derive(Debug, thiserror::Error)]
pub enum CudaError {
    #[error("no CUDA driver: libcuda could not be loaded (is an NVIDIA driver installed?)")]
    NoDriver,
    #[error("no NVRTC: libnvrtc could not be loaded (install CUDA 13.0's NVRTC or the nvidia-cuda-nvrtc==13.0.* wheel and put its lib/ on LD_LIBRARY_PATH)")]
    NoNvrtc,
    #[error("no CUDA device visible")]
    NoDevice,
    #[error("NVRTC {found} found, but the driver needs PTX from NVRTC ≤ 13.0")]
    NvrtcTooNew { found: String },
    #[error("CUDA driver: {0:?}")]
    Driver(cudarc::driver::DriverError),
    #[error("NVRTC compile of {name} failed:\n{log}")]
    Compile { name: String, log: String },
    #[error("{0}")]
    Other(String),
}

impl From<cudarc::driver::DriverError> for CudaError {
    fn from(e: cudarc::driver::DriverError) -> Self {
        CudaError::Driver(e)
    }
}

/// Is libcuda loadable? (Checked before any driver call so that absence is an error.)
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the library by its candidate names.
    std::panic::catch_unwind(|| unsafe { cudarc::driver::sys::is_culib_present() }).unwrap_or(false)
}

/// Is libnvrtc loadable?
pub fn nvrtc_present() -> bool {
    // SAFETY: only tries to dlopen the library by its candidate names.
    std::panic::catch_unwind(|| unsafe { cudarc::nvrtc::sys::is_culib_present() }).unwrap_or(false)
}

/// NVRTC's (major, minor) version.
pub fn nvrtc_version() -> Result<(i32, i32), CudaError> {
    if !nvrtc_present() {
        return Err(CudaError::NoNvrtc);
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: NVRTC is loaded; the call writes two ints.
    let rc = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    if rc != cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(CudaError::Other(format!("nvrtcVersion failed: {rc:?}")));
    }
    Ok((major, minor))
}

/// What a domain's GPU path can fail with: the runtime's errors, a driver call, or its own.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error(transparent)]
    Cuda(#[from] CudaError),
    #[error("CUDA driver: {0:?}")]
    Driver(cudarc::driver::DriverError),
    #[error("{0}")]
    Other(String),
}

impl From<cudarc::driver::DriverError> for GpuError {
    fn from(e: cudarc::driver::DriverError) -> Self {
        GpuError::Driver(e)
    }
}

/// Split the work items `0..total` into contiguous shares, one per entry of `items` (GPUs),
/// run `work(item, share)` for each on its own host thread, and return the results in the
/// order of `items` — so merged outputs do not depend on the number of devices (DESIGN §3).
pub fn split_across<I: Sync, T: Send>(
    items: &[I],
    total: u64,
    work: impl Fn(&I, std::ops::Range<u64>) -> Result<T, GpuError> + Sync,
) -> Vec<Result<T, GpuError>> {
    let per = total.div_ceil(items.len().max(1) as u64);
    let work = &work;
    std::thread::scope(|sc| {
        let handles: Vec<_> = items
            .iter()
            .enumerate()
            .map(|(k, item)| {
                let share = (k as u64 * per).min(total)..((k as u64 + 1) * per).min(total);
                sc.spawn(move || work(item, share))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(GpuError::Other("GPU worker thread panicked".into())))
            })
            .collect()
    })
}

/// One GPU, ready to run work: context, a stream, and what the tuning needs to know.
#[derive(Clone, Debug)]
pub struct Gpu {
    pub ordinal: usize,
    pub name: String,
    pub compute_capability: (i32, i32),
    pub multiprocessors: i32,
    pub max_threads_per_sm: i32,
    pub total_memory: usize,
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
}

impl Gpu {
    /// `sm_XY` of this device, as NVRTC's architecture name.
    pub fn arch(&self) -> String {
        format!("sm_{}{}", self.compute_capability.0, self.compute_capability.1)
    }
}

/// Number of visible devices, or why there are none.
pub fn device_count() -> Result<usize, CudaError> {
    if !driver_present() {
        return Err(CudaError::NoDriver);
    }
    let n = CudaContext::device_count()?;
    Ok(usize::try_from(n).unwrap_or(0))
}

/// Number of GPUs the CUDA path can use, or why it cannot run (no NVRTC, no driver, no device).
/// The one place `--device auto` and PPC mode decide between GPU and CPU.
pub fn usable_devices() -> Result<usize, String> {
    // Without NVRTC the GPUs still run the builds installed prebuilt (`kernels.rs`).
    if !nvrtc_present() && !kernels::prebuilt_installed() {
        return Err("NVRTC not found and no prebuilt kernels installed".into());
    }
    match device_count() {
        Ok(0) => Err("no CUDA device visible".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// Open device `ordinal`.
pub fn open(ordinal: usize) -> Result<Gpu, CudaError> {
    use cudarc::driver::sys::CUdevice_attribute as A;
    let n = device_count()?;
    if ordinal >= n {
        return Err(if n == 0 {
            CudaError::NoDevice
        } else {
            CudaError::Other(format!("cuda:{ordinal} requested, {n} device(s) visible"))
        });
    }
    let ctx = CudaContext::new(ordinal)?;
    let stream = ctx.default_stream();
    Ok(Gpu {
        ordinal,
        name: ctx.name()?,
        compute_capability: ctx.compute_capability()?,
        multiprocessors: ctx.attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        max_threads_per_sm: ctx.attribute(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
        total_memory: ctx.total_mem()?,
        ctx,
        stream,
    })
}

/// Parse a `--device` value into the GPU ordinals it names: `cuda` = 0, `cuda:N`, `cuda:all`.
pub fn parse_devices(spec: &str) -> Result<Vec<usize>, CudaError> {
    match spec {
        "cuda" => Ok(vec![0]),
        "cuda:all" => Ok((0..device_count()?).collect()),
        s => s
            .strip_prefix("cuda:")
            .and_then(|n| n.parse().ok())
            .map(|n| vec![n])
            .ok_or_else(|| CudaError::Other(format!("device '{s}': expected cuda, cuda:N or cuda:all"))),
    }
}

/// Replace `#include "name"` lines naming an embedded header by the header's text.
pub fn expand_includes(src: &str) -> String {
    let mut out = String::with_capacity(src.len() + 8192);
    for line in src.lines() {
        let t = line.trim();
        let header = t
            .strip_prefix("#include")
            .map(str::trim)
            .and_then(|r| r.strip_prefix('"'))
            .and_then(|r| r.strip_suffix('"'));
        match header.and_then(|h| HEADERS.iter().find(|(n, _)| *n == h)) {
            Some((_, text)) => {
                out.push_str(&expand_includes(text));
                out.push('\n');
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// How a kernel is compiled.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KernelOptions {
    /// Target architecture, e.g. `sm_90`.
    pub arch: String,
    /// IEEE arithmetic only (no fused multiply-add, precise division, square root and
    /// transcendentals): the device then follows the Rust code's rounding step by step.
    pub precise: bool,
    /// Extra `-D` definitions (feature switches).
    pub defines: Vec<String>,
    /// NVRTC arithmetic options of a precise build set to their fast-mode value, one by one
    /// (measurement only: `bench photon --config precise,nvrtc:fmad`). None for every other build.
    pub fast_arith: FastArith,
}

/// Single NVRTC arithmetic options a precise build takes from fast mode (measurement only: to
/// see what each costs). The default, all off, leaves a build's options and names as they were.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FastArith {
    /// `--fmad=true`: multiplies and adds contracted into FMAs.
    pub fmad: bool,
    /// `--ftz=true`: denormals flushed to zero.
    pub ftz: bool,
    /// `--prec-div=false`: approximate division.
    pub div: bool,
    /// `--prec-sqrt=false`: approximate square root.
    pub sqrt: bool,
    /// `--use_fast_math`: only the intrinsics for sinf, expf, logf, powf … — NVRTC 13.0 lets
    /// the explicit `--ftz`, `--prec-div`, `--prec-sqrt` and `--fmad` of the same call win over
    /// the values `--use_fast_math` implies (its PTX then has sin.approx and ex2.approx beside
    /// div.rn, sqrt.rn, no .ftz and no contraction).
    pub math: bool,
}

impl FastArith {
    /// The `--config` item names (`nvrtc:NAME`), in the order of the fields.
    pub const NAMES: [&'static str; 5] = ["fmad", "ftz", "fast-div", "fast-sqrt", "fast-math"];

    /// Turn on the option called `name` (one of [`Self::NAMES`]); false for an unknown name.
    pub fn set(&mut self, name: &str) -> bool {
        self.set_to(name, true)
    }

    /// Turn the option called `name` on or off (`on`); false for an unknown name.
    pub fn set_to(&mut self, name: &str, on: bool) -> bool {
        let flag = match name {
            "fmad" => &mut self.fmad,
            "ftz" => &mut self.ftz,
            "fast-div" => &mut self.div,
            "fast-sqrt" => &mut self.sqrt,
            "fast-math" => &mut self.math,
            _ => return false,
        };
        *flag = on;
        true
    }

    /// The names of the options on, comma-separated (empty when none is).
    #[must_use]
    pub fn label(&self) -> String {
        let on = [self.fmad, self.ftz, self.div, self.sqrt, self.math];
        let names: Vec<&str> = Self::NAMES.iter().zip(on).filter(|(_, o)| *o).map(|(n, _)| *n).collect();
        names.join(",")
    }
}

type Cache = Mutex<HashMap<(String, String, KernelOptions), Image>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

pub use crate::kernels::{disk_cache_dir, disk_cache_key};

/// The image of a build, from the first place that has it (`kernels.rs`: this process, the
/// prebuilt images, the disk cache, NVRTC, the prebuilt PTX), and where it came from.
/// `skip_prebuilt`: a prebuilt image was refused by the driver; look past it.
pub fn compile_from(name: &str, src: &str, opts: &KernelOptions, skip_prebuilt: bool) -> Result<(Image, Origin), CudaError> {
    let opts = KernelOptions {
        defines: kernels::canonical_defines(&opts.defines),
        ..opts.clone()
    };
    let key = (name.to_string(), src.to_string(), opts.clone());
    let lock = || cache().lock().map_err(|e| CudaError::Other(e.to_string()));
    if let Some(img) = lock()?.get(&key) {
        return Ok((img.clone(), Origin::Process));
    }
    let full = expand_includes(src);
    let dirs = if skip_prebuilt { Vec::new() } else { kernels::prebuilt_dirs() };
    let found = if let Some((_, img)) = kernels::find_prebuilt(name, &full, &opts, &dirs) {
        (img, Origin::Prebuilt)
    } else {
        match nvrtc_version() {
            Ok(v) => match kernels::find_cached(name, &full, &opts, v) {
                Some(img) => (img, Origin::DiskCache),
                None => {
                    let img = kernels::nvrtc_compile(name, &full, &opts, true)?;
                    kernels::store_cached(name, &full, &opts, v, &img);
                    (img, Origin::Nvrtc)
                }
            },
            Err(e) => match kernels::find_prebuilt_ptx(name, &full, &opts, &dirs) {
                Some((_, img)) => (img, Origin::PrebuiltPtx),
                None => return Err(e),
            },
        }
    };
    lock()?.insert(key, found.0.clone());
    Ok(found)
}

/// Compile `src` (a kernel file's text) for `opts`, once per process for each (name, source,
/// options): see [`compile_from`].
pub fn compile(name: &str, src: &str, opts: &KernelOptions) -> Result<Image, CudaError> {
    compile_from(name, src, opts, false).map(|(img, _)| img)
}

/// Compile and load `function` of a kernel source on `gpu`. A prebuilt image the driver
/// refuses (a driver older than the NVRTC that made it) is passed over for the next source.
pub fn load(
    gpu: &Gpu,
    name: &str,
    src: &str,
    function: &str,
    precise: bool,
    defines: &[String],
) -> Result<(Arc<CudaModule>, CudaFunction), CudaError> {
    load_with(gpu, name, src, function, precise, defines, FastArith::default())
}

/// [`load`] with single fast-mode NVRTC options in a precise build (measurement only).
pub fn load_with(
    gpu: &Gpu,
    name: &str,
    src: &str,
    function: &str,
    precise: bool,
    defines: &[String],
    fast_arith: FastArith,
) -> Result<(Arc<CudaModule>, CudaFunction), CudaError> {
    let opts = KernelOptions {
        arch: gpu.arch(),
        precise,
        defines: defines.to_vec(),
        fast_arith,
    };
    let (img, origin) = compile_from(name, src, &opts, false)?;
    let module = match gpu.ctx.load_module(img.to_cudarc()) {
        Ok(m) => m,
        Err(_) if origin == Origin::Prebuilt => {
            if let Ok(mut c) = cache().lock() {
                c.retain(|k, _| !(k.0 == name && k.1 == src));
            }
            let (img, _) = compile_from(name, src, &opts, true)?;
            gpu.ctx.load_module(img.to_cudarc())?
        }
        Err(e) => return Err(e.into()),
    };
    let f = module.load_function(function)?;
    Ok((module, f))
}

/// Resource usage of a loaded kernel (for `warpdrive doctor` and benchmark reports).
#[derive(Clone, Copy, Debug)]
pub struct KernelResources {
    pub registers: i32,
    pub shared_bytes: i32,
    pub local_bytes: i32,
    pub max_threads_per_block: i32,
}

pub fn resources(f: &CudaFunction) -> Result<KernelResources, CudaError> {
    use cudarc::driver::sys::CUfunction_attribute_enum as F;
    Ok(KernelResources {
        registers: f.num_regs()?,
        shared_bytes: f.shared_size_bytes()?,
        local_bytes: f.get_attribute(F::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
        max_threads_per_block: f.get_attribute(F::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_are_spliced() {
        let s = expand_includes("#include \"philox.cuh\"\n__global__ void k() {}\n#include <cstdint>\n");
        assert!(s.contains("philox4x32_10"));
        assert!(s.contains("#include <cstdint>"), "system includes are left alone");
    }

    #[test]
    fn device_specs() {
        assert_eq!(parse_devices("cuda").unwrap(), vec![0]);
        assert_eq!(parse_devices("cuda:3").unwrap(), vec![3]);
        assert!(parse_devices("gpu").is_err());
    }

    /// Without a driver the probes say so instead of panicking.
    #[test]
    fn probing_never_panics() {
        let _ = driver_present();
        let _ = nvrtc_present();
        if !driver_present() {
            assert!(matches!(device_count(), Err(CudaError::NoDriver)));
            assert!(open(0).is_err());
        }
    }
}
