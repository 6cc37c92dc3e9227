//! The CUDA back end. Map elements: CUDA source generated per lattice (NVRTC, PTX cached by
//! text), one device function per distinct map with its coefficients in `__constant__` memory
//! and compile-time indices, and one kernel per run of map elements that loads a particle into
//! registers, applies every element of the run for all its passes and stores it once. The
//! operation order is [`crate::program::Row`]'s, so with `precise` (no FMA contraction) the GPU
//! reproduces the CPU bit for bit. LSC: `kernels/lsc.cu` and cuFFT (host FFT if cuFFT cannot be
//! loaded).

use crate::beam::{Particles, Reference};
use crate::lattice::LscParams;
use crate::lsc::{Histogram, LscStats};
use crate::program::{Compact, Program, RunItem, Step};
use crate::track::Backend;
use cudarc::driver::{CudaFunction, CudaModule, CudaSlice, DeviceRepr, LaunchConfig, PushKernelArg};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;
use warpdrive_core::cuda::{self, Gpu, GpuError};

pub const LSC_NAME: &str = "lsc.cu";
pub const LSC_SRC: &str = include_str!("../kernels/lsc.cu");
pub const LSC_FUNCTIONS: &[&str] = &[
    "lsc_times",
    "lsc_minmax",
    "hist_block_atomic",
    "hist_block_sort_scan",
    "hist_keys",
    "bitonic_step",
    "hist_bounds",
    "lsc_current",
    "lsc_impedance",
    "lsc_kick",
];
pub const KERNELS: &[(&str, &str, &[&str])] = &[(LSC_NAME, LSC_SRC, LSC_FUNCTIONS)];
pub const SWITCHES: &[&str] = &[];
const BLOCK: u32 = 256;
/// Doubles of `__constant__` memory for map coefficients (64 KiB).
const MAX_CONSTANTS: usize = 8192;

/// Generated map-kernel source for a program: (source, coefficient values, kernel names by step).
pub struct MapSource {
    pub source: String,
    pub constants: Vec<f64>,
    /// Fused kernel of each run step (step index → function name).
    pub run_kernels: HashMap<usize, String>,
    /// Per-element kernels of each run step (for `--launch-per-element`).
    pub element_kernels: HashMap<usize, Vec<String>>,
}

/// Literal index expression into the constant array.
fn kc(i: usize) -> String {
    format!("K[{i}]")
}

/// Generate the map kernels of `program`; `min_blocks` > 0 asks the compiler to fit that many
/// 256-thread blocks per multiprocessor (`__launch_bounds__(256, min_blocks)`: fewer registers,
/// more warps in flight).
pub fn generate(program: &Program, min_blocks: u32) -> Result<MapSource, String> {
    let bounds = if min_blocks > 0 {
        format!("{BLOCK}, {min_blocks}")
    } else {
        BLOCK.to_string()
    };
    let mut constants: Vec<f64> = Vec::new();
    let mut maps: Vec<Compact> = Vec::new();
    let mut functions = String::new();
    let mut map_id = |m: &Compact, functions: &mut String, constants: &mut Vec<f64>| -> usize {
        if let Some(k) = maps.iter().position(|q| q == m) {
            return k;
        }
        let k = maps.len();
        maps.push(m.clone());
        let _ = writeln!(
            functions,
            "__device__ __forceinline__ void map_{k}(double& z0, double& z1, double& z2, double& z3, double& z4, double& z5) {{"
        );
        let mut assigns = Vec::new();
        for (i, row) in m.rows.iter().enumerate() {
            if row.is_identity(i) {
                continue;
            }
            let mut terms: Vec<String> = Vec::new();
            if row.c != 0.0 {
                terms.push(kc(constants.len()));
                constants.push(row.c);
            }
            for &(j, v) in &row.r {
                if v == 1.0 {
                    terms.push(format!("z{j}"));
                } else {
                    terms.push(format!("{} * z{j}", kc(constants.len())));
                    constants.push(v);
                }
            }
            for &(j, kk, v) in &row.t {
                terms.push(format!("{} * z{j} * z{kk}", kc(constants.len())));
                constants.push(v);
            }
            let expr = if terms.is_empty() { "0.0".to_string() } else { terms.join(" + ") };
            let _ = writeln!(functions, "    const double n{i} = {expr};");
            assigns.push(format!("z{i} = n{i};"));
        }
        let _ = writeln!(functions, "    {}\n}}", assigns.join(" "));
        k
    };
    let mut kernels = String::new();
    let mut run_kernels = HashMap::new();
    let mut element_kernels = HashMap::new();
    let mut runs: Vec<(usize, &[RunItem])> = program
        .steps
        .iter()
        .enumerate()
        .filter_map(|(k, s)| match s {
            Step::Run(items) => Some((k, items.as_slice())),
            _ => None,
        })
        .collect();
    // LSC half drifts run as one-element runs, keyed after the program's steps.
    let halves: Vec<(usize, Vec<RunItem>)> = program
        .steps
        .iter()
        .enumerate()
        .filter_map(|(k, s)| match s {
            Step::Lsc { element, half_drift, .. } => Some((
                k,
                vec![RunItem::Map {
                    element: *element,
                    map: half_drift.clone(),
                }],
            )),
            _ => None,
        })
        .collect();
    runs.extend(halves.iter().map(|(k, v)| (*k, v.as_slice())));
    for (step, items) in runs {
        let body: Vec<String> = items
            .iter()
            .map(|it| {
                let call = match it {
                    RunItem::Map { map, .. } => format!("map_{}(z0, z1, z2, z3, z4, z5);", map_id(map, &mut functions, &mut constants)),
                    RunItem::ExactDrift { l, .. } => {
                        let c = kc(constants.len());
                        constants.push(*l);
                        format!("exact_drift(z0, z1, z2, z3, z4, {c});")
                    }
                };
                format!("{call} CHECK({});", it.element() + 1)
            })
            .collect();
        let last = items.last().map_or(0, |it| it.element() + 1);
        let name = format!("run_{step}");
        let _ = writeln!(
            kernels,
            "extern \"C\" __global__ void __launch_bounds__({bounds}) {name}(PARTICLE_ARGS, unsigned pass0, unsigned npass, double aperture) {{\n  FOR_PARTICLES {{\n    LOAD;\n    for (unsigned pass = pass0; pass < pass0 + npass; ++pass) {{\n      {}\n      FINITE({last});\n    }}\n    STORE;\n  }}\n}}",
            body.join("\n      ")
        );
        // The same run with the next particle's coordinates loaded before this one's elements
        // are applied, so the load overlaps the arithmetic (a software prefetch).
        let _ = writeln!(
            kernels,
            "extern \"C\" __global__ void __launch_bounds__({bounds}) {name}_pf(PARTICLE_ARGS, unsigned pass0, unsigned npass, double aperture) {{\n  const unsigned stride = gridDim.x * blockDim.x;\n  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i >= n) return;\n  double q0 = px[i], q1 = pxp[i], q2 = py[i], q3 = pyp[i], q4 = ps[i], q5 = pd[i]; unsigned ql = lost_at[i];\n  for (; i < n; i += stride) {{\n    double z0 = q0, z1 = q1, z2 = q2, z3 = q3, z4 = q4, z5 = q5; const unsigned was_lost = ql;\n    const unsigned next = i + stride;\n    if (next < n) {{ q0 = px[next]; q1 = pxp[next]; q2 = py[next]; q3 = pyp[next]; q4 = ps[next]; q5 = pd[next]; ql = lost_at[next]; }}\n    if (was_lost) continue;\n    unsigned lost = 0, lpass = 0;\n    for (unsigned pass = pass0; pass < pass0 + npass; ++pass) {{\n      {}\n      FINITE({last});\n    }}\n    STORE;\n  }}\n}}",
            body.join("\n      ")
        );
        run_kernels.insert(step, name);
        let mut per = Vec::new();
        for (e, line) in body.iter().enumerate() {
            let name = format!("elem_{step}_{e}");
            let finite = if e + 1 == items.len() {
                format!("FINITE({last});")
            } else {
                String::new()
            };
            let _ = writeln!(
                kernels,
                "extern \"C\" __global__ void __launch_bounds__({bounds}) {name}(PARTICLE_ARGS, unsigned pass0, unsigned npass, double aperture) {{\n  FOR_PARTICLES {{\n    LOAD;\n    const unsigned pass = pass0;\n    {line} {finite}\n    STORE;\n  }}\n}}"
            );
            per.push(name);
        }
        element_kernels.insert(step, per);
    }
    if constants.len() > MAX_CONSTANTS {
        return Err(format!(
            "the lattice has {} distinct map coefficients; constant memory holds {MAX_CONSTANTS} (split the line or reduce distinct elements)",
            constants.len()
        ));
    }
    let nk = constants.len().max(1);
    let source = format!("{}\n__constant__ double K[{nk}];\n\n{functions}\n{kernels}", MAP_PRELUDE);
    Ok(MapSource {
        source,
        constants,
        run_kernels,
        element_kernels,
    })
}

/// Shared text of every generated map kernel.
const MAP_PRELUDE: &str = r#"// Generated by warpdrive-beam (src/gpu.rs): second-order maps of one lattice.
#define PARTICLE_ARGS double* __restrict__ px, double* __restrict__ pxp, double* __restrict__ py, double* __restrict__ pyp, \
    double* __restrict__ ps, double* __restrict__ pd, unsigned* __restrict__ lost_at, unsigned* __restrict__ lost_pass, unsigned n
#define FOR_PARTICLES for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
#define LOAD if (lost_at[i]) continue; \
    double z0 = px[i], z1 = pxp[i], z2 = py[i], z3 = pyp[i], z4 = ps[i], z5 = pd[i]; unsigned lost = 0, lpass = 0
#define CHECK(e) if (!(fabs(z0) < aperture && fabs(z2) < aperture)) { lost = (e); lpass = pass; goto done; }
#define FINITE(e) if (!(isfinite(z0) && isfinite(z1) && isfinite(z2) && isfinite(z3) && isfinite(z4) && isfinite(z5))) { lost = (e); lpass = pass; goto done; }
#define STORE done: px[i] = z0; pxp[i] = z1; py[i] = z2; pyp[i] = z3; ps[i] = z4; pd[i] = z5; \
    if (lost) { lost_at[i] = lost; lost_pass[i] = lpass; }

__device__ __forceinline__ void exact_drift(double& z0, double z1, double& z2, double z3, double& z4, double l) {
    const double path = sqrt(1.0 + z1 * z1 + z3 * z3);
    z0 = z0 + l * z1;
    z2 = z2 + l * z3;
    z4 = z4 + l * path;
}
"#;

/// Twin of `LscDev` in lsc.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct LscDev {
    beta0: f64,
    gamma0: f64,
    l_eff: f64,
    radius_factor: f64,
    low0: f64,
    low1: f64,
    high0: f64,
    high1: f64,
    p0: f64,
    mass_ev: f64,
    bins: u32,
    interpolate: u32,
}
const _: () = assert!(std::mem::size_of::<LscDev>() == 88);
// SAFETY: plain old data with the kernel's layout.
unsafe impl DeviceRepr for LscDev {}

/// Options of the GPU back end.
#[derive(Clone, Copy, Debug)]
pub struct GpuOptions {
    pub device: usize,
    /// IEEE operations only (no FMA contraction): bit-identical to the CPU for map elements.
    pub precise: bool,
    /// One launch per element instead of one per run (to measure what fusion saves).
    pub per_element: bool,
    pub histogram: Histogram,
    pub aperture: f64,
    /// Blocks per multiprocessor the map kernels are compiled for (0: the compiler's choice).
    pub min_blocks: u32,
    /// Fused runs load the next particle before applying the elements to this one.
    pub prefetch: bool,
}

/// Measured on an H100 (docs/performance/beam.md): the fused benchmark line ran at 17.2 TFLOP/s
/// with the compiler's choice, 17.8 with 2 blocks/SM, 16.9 with 3, 14.6 with 4.
pub const DEFAULT_MIN_BLOCKS: u32 = 2;

/// Software prefetch of the next particle in fused runs (measured in `bench beam`).
pub const DEFAULT_PREFETCH: bool = false;

/// Particles on one GPU.
pub struct GpuBackend {
    gpu: Gpu,
    opts: GpuOptions,
    reference: Reference,
    n: usize,
    z: [CudaSlice<f64>; 6],
    lost_at: CudaSlice<u32>,
    lost_pass: CudaSlice<u32>,
    _maps: Arc<CudaModule>,
    run_fns: HashMap<usize, CudaFunction>,
    elem_fns: HashMap<usize, Vec<CudaFunction>>,
    lsc: Arc<CudaModule>,
    /// Scratch for LSC: t per particle, keys (sort strategy), reductions.
    t: Option<CudaSlice<f64>>,
    keys: Option<CudaSlice<u32>>,
    /// Kernel time per step kind (ms), accumulated with events.
    pub timing: Timing,
    fft_host_fallback: Option<String>,
}

/// Accumulated device time [ms].
#[derive(Clone, Debug, Default)]
pub struct Timing {
    pub maps_ms: f64,
    pub lsc_ms: f64,
    pub launches: u64,
}

fn grid(n: usize, gpu: &Gpu) -> u32 {
    let max_blocks = (gpu.multiprocessors as u32) * (gpu.max_threads_per_sm as u32 / BLOCK).max(1) * 8;
    (n as u32).div_ceil(BLOCK).clamp(1, max_blocks)
}

impl GpuBackend {
    pub fn new(program: &Program, particles: &Particles, reference: Reference, opts: GpuOptions) -> Result<Self, GpuError> {
        let gpu = cuda::open(opts.device)?;
        let src = generate(program, opts.min_blocks).map_err(GpuError::Other)?;
        let (module, _) = cuda::load(&gpu, "beam_maps.cu", &src.source, first_function(&src), opts.precise, &[])?;
        if !src.constants.is_empty() {
            let mut sym = module.get_global("K", &gpu.stream)?;
            // SAFETY: `K` is a __constant__ double array of at least constants.len() elements.
            let mut view = unsafe { sym.transmute_mut::<f64>(src.constants.len()) }
                .ok_or_else(|| GpuError::Other("constant array K is smaller than the coefficients".into()))?;
            gpu.stream.memcpy_htod(&src.constants, &mut view)?;
        }
        let mut run_fns = HashMap::new();
        for (step, name) in &src.run_kernels {
            let name = if opts.prefetch { format!("{name}_pf") } else { name.clone() };
            run_fns.insert(*step, module.load_function(&name)?);
        }
        let mut elem_fns = HashMap::new();
        for (step, names) in &src.element_kernels {
            let f: Result<Vec<_>, _> = names.iter().map(|nm| module.load_function(nm)).collect();
            elem_fns.insert(*step, f?);
        }
        let (lsc, _) = cuda::load(&gpu, LSC_NAME, LSC_SRC, "lsc_kick", opts.precise, &[])?;
        let s = &gpu.stream;
        let c = particles.coords();
        let z = [
            s.clone_htod(c[0])?,
            s.clone_htod(c[1])?,
            s.clone_htod(c[2])?,
            s.clone_htod(c[3])?,
            s.clone_htod(c[4])?,
            s.clone_htod(c[5])?,
        ];
        let lost_at = s.clone_htod(&particles.lost_at)?;
        let lost_pass = s.clone_htod(&particles.lost_pass)?;
        Ok(Self {
            n: particles.len(),
            z,
            lost_at,
            lost_pass,
            _maps: module,
            run_fns,
            elem_fns,
            lsc,
            t: None,
            keys: None,
            timing: Timing::default(),
            fft_host_fallback: None,
            gpu,
            opts,
            reference,
        })
    }

    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Why the host FFT was used instead of cuFFT, if it was.
    pub fn fft_fallback(&self) -> Option<&str> {
        self.fft_host_fallback.as_deref()
    }

    fn launch_map(&mut self, f: &CudaFunction, pass0: u32, npass: u32) -> Result<(), GpuError> {
        let cfg = LaunchConfig {
            grid_dim: (grid(self.n, &self.gpu), 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let n = self.n as u32;
        let ap = self.opts.aperture;
        let [z0, z1, z2, z3, z4, z5] = &mut self.z;
        let mut b = self.gpu.stream.launch_builder(f);
        b.arg(z0).arg(z1).arg(z2).arg(z3).arg(z4).arg(z5);
        b.arg(&mut self.lost_at)
            .arg(&mut self.lost_pass)
            .arg(&n)
            .arg(&pass0)
            .arg(&npass)
            .arg(&ap);
        // SAFETY: argument list matches PARTICLE_ARGS + (pass0, npass, aperture).
        unsafe { b.launch(cfg) }?;
        self.timing.launches += 1;
        Ok(())
    }

    fn run_step(&mut self, step: usize, passes: std::ops::Range<u32>) -> Result<(), GpuError> {
        let start = self.event()?;
        if self.opts.per_element {
            let fns = self.elem_fns.get(&step).cloned().unwrap_or_default();
            for pass in passes {
                for f in &fns {
                    self.launch_map(f, pass, 1)?;
                }
            }
        } else {
            let f = self
                .run_fns
                .get(&step)
                .cloned()
                .ok_or_else(|| GpuError::Other(format!("no kernel for step {step}")))?;
            self.launch_map(&f, passes.start, passes.end - passes.start)?;
        }
        let stop = self.event()?;
        self.timing.maps_ms += f64::from(start.elapsed_ms(&stop)?);
        Ok(())
    }

    fn event(&self) -> Result<cudarc::driver::CudaEvent, GpuError> {
        use cudarc::driver::sys::CUevent_flags;
        Ok(self.gpu.stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?)
    }

    fn func(&self, name: &str) -> Result<CudaFunction, GpuError> {
        Ok(self.lsc.load_function(name)?)
    }

    fn cfg(&self, n: usize, shared: u32) -> LaunchConfig {
        LaunchConfig {
            grid_dim: (grid(n, &self.gpu), 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: shared,
        }
    }

    /// The integer charge histogram of the current particles (after `lsc_times`).
    fn histogram(&mut self, red: &CudaSlice<f64>, bins: u32, counts: &mut CudaSlice<u32>) -> Result<(), GpuError> {
        let s = self.gpu.stream.clone();
        let n = self.n as u32;
        let t = self.t.as_ref().ok_or_else(|| GpuError::Other("LSC times not computed".into()))?;
        match self.opts.histogram {
            Histogram::BlockAtomic => {
                let f = self.func("hist_block_atomic")?;
                if bins as usize * 4 > 48 * 1024 {
                    f.set_attribute(
                        cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                        (bins * 4) as i32,
                    )?;
                }
                let mut b = s.launch_builder(&f);
                b.arg(t).arg(&self.lost_at).arg(&n).arg(red).arg(&bins).arg(counts);
                // SAFETY: matches hist_block_atomic; shared memory holds `bins` counters.
                unsafe { b.launch(self.cfg(self.n, bins * 4)) }?;
            }
            Histogram::BlockSortScan => {
                let f = self.func("hist_block_sort_scan")?;
                let blocks = (self.n as u32).div_ceil(1024).clamp(1, self.gpu.multiprocessors as u32 * 8);
                let cfg = LaunchConfig {
                    grid_dim: (blocks, 1, 1),
                    block_dim: (512, 1, 1),
                    shared_mem_bytes: 0,
                };
                let mut b = s.launch_builder(&f);
                b.arg(t).arg(&self.lost_at).arg(&n).arg(red).arg(&bins).arg(counts);
                // SAFETY: matches hist_block_sort_scan (512 threads, 1024 keys per block).
                unsafe { b.launch(cfg) }?;
            }
            Histogram::Sort => {
                let padded = (self.n.max(2)).next_power_of_two();
                if self.keys.as_ref().is_none_or(|k| k.len() != padded) {
                    self.keys = Some(s.alloc_zeros::<u32>(padded)?);
                }
                let cfgp = self.cfg(padded, 0);
                let keys = self.keys.as_mut().ok_or_else(|| GpuError::Other("keys".into()))?;
                let p32 = padded as u32;
                let f = self.lsc.load_function("hist_keys")?;
                let mut b = s.launch_builder(&f);
                b.arg(t).arg(&self.lost_at).arg(&n).arg(&p32).arg(red).arg(&bins).arg(&mut *keys);
                // SAFETY: matches hist_keys.
                unsafe { b.launch(cfgp) }?;
                let step = self.lsc.load_function("bitonic_step")?;
                let mut k = 2u32;
                while k as usize <= padded {
                    let mut j = k / 2;
                    while j > 0 {
                        let mut b = s.launch_builder(&step);
                        b.arg(&mut *keys).arg(&p32).arg(&k).arg(&j);
                        // SAFETY: matches bitonic_step.
                        unsafe { b.launch(cfgp) }?;
                        j /= 2;
                    }
                    k *= 2;
                }
                let f = self.lsc.load_function("hist_bounds")?;
                let mut b = s.launch_builder(&f);
                b.arg(&*keys).arg(&p32).arg(&bins).arg(counts);
                let cfg = LaunchConfig {
                    grid_dim: (bins.div_ceil(BLOCK), 1, 1),
                    block_dim: (BLOCK, 1, 1),
                    shared_mem_bytes: 0,
                };
                // SAFETY: matches hist_bounds.
                unsafe { b.launch(cfg) }?;
            }
        }
        Ok(())
    }

    /// Histogram only (for the strategy checks): counts with the current strategy.
    pub fn charge_histogram(&mut self, bins: u32) -> Result<Vec<u32>, GpuError> {
        let red = self.times()?;
        let mut counts = self.gpu.stream.alloc_zeros::<u32>(bins as usize)?;
        self.histogram(&red, bins, &mut counts)?;
        Ok(self.gpu.stream.clone_dtoh(&counts)?)
    }

    pub fn set_histogram(&mut self, h: Histogram) {
        self.opts.histogram = h;
    }

    /// Steps 1, 2, 6 on the device; returns the reduction slots.
    fn times(&mut self) -> Result<CudaSlice<f64>, GpuError> {
        let s = self.gpu.stream.clone();
        if self.t.as_ref().is_none_or(|t| t.len() != self.n) {
            self.t = Some(s.alloc_zeros::<f64>(self.n)?);
        }
        let mut red = s.alloc_zeros::<f64>(8)?;
        let mut ordered = s.clone_htod(&[u64::MAX, 0u64])?;
        let n = self.n as u32;
        let p0 = self.reference.p_central;
        let f = self.func("lsc_times")?;
        let cfg = self.cfg(self.n, 0);
        {
            let t = self.t.as_mut().ok_or_else(|| GpuError::Other("t".into()))?;
            let mut b = s.launch_builder(&f);
            b.arg(&self.z[0]).arg(&self.z[2]).arg(&self.z[4]).arg(&self.z[5]).arg(&self.lost_at);
            b.arg(&n).arg(&p0).arg(t).arg(&mut ordered).arg(&mut red);
            // SAFETY: matches lsc_times (256 threads: its shared arrays).
            unsafe { b.launch(cfg) }?;
        }
        let f = self.func("lsc_minmax")?;
        let mut b = s.launch_builder(&f);
        b.arg(&ordered).arg(&mut red);
        // SAFETY: one thread decodes two values.
        unsafe { b.launch(LaunchConfig::for_num_elems(1)) }?;
        Ok(red)
    }

    fn kick(&mut self, params: &LscParams, charge: f64) -> Result<LscStats, GpuError> {
        let s = self.gpu.stream.clone();
        let mut red = self.times()?;
        let r = s.clone_dtoh(&red)?;
        let (tmin, tmax) = (r[0], r[1]);
        let mut stats = LscStats {
            tmin,
            tmax,
            ..Default::default()
        };
        let spread = tmax > tmin;
        if !spread || charge == 0.0 || !params.enabled {
            return Ok(stats);
        }
        let bins = params.bins as u32;
        let mut counts = s.alloc_zeros::<u32>(params.bins)?;
        self.histogram(&red, bins, &mut counts)?;
        let q = charge / self.n as f64;
        let m = 2 * params.bins;
        let mut current = s.alloc_zeros::<f64>(m)?;
        let f = self.func("lsc_current")?;
        let mut b = s.launch_builder(&f);
        b.arg(&counts).arg(&bins).arg(&q).arg(&mut red).arg(&mut current);
        // SAFETY: matches lsc_current.
        unsafe { b.launch(self.cfg(m, 0)) }?;
        let sx = crate::lsc::rms_from_sums(r[6], r[2], r[3]);
        let sy = crate::lsc::rms_from_sums(r[6], r[4], r[5]);
        stats.sigma_x = sx;
        stats.sigma_y = sy;
        stats.radius = params.radius_factor * 0.5 * (sx + sy);
        if stats.radius <= 0.0 {
            return Ok(stats);
        }
        let dev = LscDev {
            beta0: self.reference.beta(),
            gamma0: self.reference.gamma(),
            l_eff: params.kick_length(),
            radius_factor: params.radius_factor,
            low0: params.low_cutoff.0,
            low1: params.low_cutoff.1,
            high0: params.high_cutoff.0,
            high1: params.high_cutoff.1,
            p0: self.reference.p_central,
            mass_ev: self.reference.mass_ev,
            bins,
            interpolate: u32::from(params.interpolate),
        };
        let volts = self.spectrum_to_voltage(&current, &red, dev, m)?;
        let f = self.func("lsc_kick")?;
        let n = self.n as u32;
        let cfg = self.cfg(self.n, 0);
        let t = self.t.as_ref().ok_or_else(|| GpuError::Other("t".into()))?;
        let [_, _, _, _, z4, z5] = &mut self.z;
        let mut b = s.launch_builder(&f);
        b.arg(z4).arg(z5).arg(&self.lost_at).arg(t).arg(&n).arg(&volts).arg(&red).arg(&dev);
        // SAFETY: matches lsc_kick.
        unsafe { b.launch(cfg) }?;
        let r = s.clone_dtoh(&red)?;
        let raw = s.clone_dtoh(&volts)?;
        stats.voltage = raw[..params.bins].iter().map(|v| v / m as f64).collect();
        let dt = (tmax - tmin) / f64::from(bins);
        stats.max_count = r[7].to_bits();
        stats.peak_current = stats.max_count as f64 * q / dt;
        Ok(stats)
    }

    /// Steps 5, 7, 8: cuFFT D2Z, impedance, Z2D (unnormalised); the host FFT if cuFFT is absent.
    fn spectrum_to_voltage(
        &mut self,
        current: &CudaSlice<f64>,
        red: &CudaSlice<f64>,
        dev: LscDev,
        m: usize,
    ) -> Result<CudaSlice<f64>, GpuError> {
        use cudarc::cufft::{safe::CudaFft, sys::cufftType};
        let s = self.gpu.stream.clone();
        let half = m / 2 + 1;
        let imp = self.func("lsc_impedance")?;
        if self.fft_host_fallback.is_none() {
            let plans = (|| -> Result<(CudaFft, CudaFft), String> {
                // SAFETY: probing only dlopens the library.
                let present = std::panic::catch_unwind(|| unsafe { cudarc::cufft::sys::is_culib_present() }).unwrap_or(false);
                if !present {
                    return Err("libcufft not found".into());
                }
                let f = CudaFft::plan_1d(m as i32, cufftType::CUFFT_D2Z, 1, s.clone()).map_err(|e| format!("{e:?}"))?;
                let i = CudaFft::plan_1d(m as i32, cufftType::CUFFT_Z2D, 1, s.clone()).map_err(|e| format!("{e:?}"))?;
                Ok((f, i))
            })();
            match plans {
                Ok((fwd, inv)) => {
                    let mut spec = s.alloc_zeros::<cudarc::cufft::sys::double2>(half)?;
                    fwd.exec_d2z(current, &mut spec)
                        .map_err(|e| GpuError::Other(format!("cuFFT D2Z: {e:?}")))?;
                    let mut b = s.launch_builder(&imp);
                    b.arg(&mut spec).arg(red).arg(&dev);
                    // SAFETY: matches lsc_impedance (one thread per frequency 0..=m/2).
                    unsafe { b.launch(LaunchConfig::for_num_elems(half as u32)) }?;
                    let mut out = s.alloc_zeros::<f64>(m)?;
                    inv.exec_z2d(&mut spec, &mut out)
                        .map_err(|e| GpuError::Other(format!("cuFFT Z2D: {e:?}")))?;
                    return Ok(out);
                }
                Err(why) => self.fft_host_fallback = Some(why),
            }
        }
        // Host FFT: the same spectrum product through rustfft (M values each way).
        let cur = s.clone_dtoh(current)?;
        let r = s.clone_dtoh(red)?;
        let sx = crate::lsc::rms_from_sums(r[6], r[2], r[3]);
        let sy = crate::lsc::rms_from_sums(r[6], r[4], r[5]);
        let rb = dev.radius_factor * 0.5 * (sx + sy);
        let dt = (r[1] - r[0]) / f64::from(dev.bins);
        let params = LscParams {
            l: dev.l_eff,
            l_effective: dev.l_eff,
            bins: dev.bins as usize,
            interpolate: dev.interpolate != 0,
            low_cutoff: (dev.low0, dev.low1),
            high_cutoff: (dev.high0, dev.high1),
            radius_factor: dev.radius_factor,
            enabled: true,
        };
        let v = crate::lsc::raw_voltage(&cur, dt, rb, &params, &self.reference);
        Ok(s.clone_htod(&v)?)
    }
}

fn first_function(src: &MapSource) -> &str {
    src.run_kernels.values().next().map_or("lsc_kick", String::as_str)
}

impl Backend for GpuBackend {
    fn run(&mut self, step: usize, _items: &[RunItem], passes: std::ops::Range<u32>) -> Result<(), String> {
        self.run_step(step, passes).map_err(|e| e.to_string())
    }

    fn lsc(&mut self, step: usize, params: &LscParams, _half: &[RunItem], charge: f64, pass: u32) -> Result<LscStats, String> {
        (|| -> Result<LscStats, GpuError> {
            self.run_step(step, pass..pass + 1)?;
            let start = self.event()?;
            let st = self.kick(params, charge)?;
            let stop = self.event()?;
            self.timing.lsc_ms += f64::from(start.elapsed_ms(&stop)?);
            self.run_step(step, pass..pass + 1)?;
            Ok(st)
        })()
        .map_err(|e| e.to_string())
    }

    fn particles(&mut self) -> Result<Particles, String> {
        (|| -> Result<Particles, GpuError> {
            let s = &self.gpu.stream;
            Ok(Particles {
                x: s.clone_dtoh(&self.z[0])?,
                xp: s.clone_dtoh(&self.z[1])?,
                y: s.clone_dtoh(&self.z[2])?,
                yp: s.clone_dtoh(&self.z[3])?,
                s: s.clone_dtoh(&self.z[4])?,
                delta: s.clone_dtoh(&self.z[5])?,
                lost_at: s.clone_dtoh(&self.lost_at)?,
                lost_pass: s.clone_dtoh(&self.lost_pass)?,
            })
        })()
        .map_err(|e| e.to_string())
    }
}

/// Generated map sources that `warpdrive doctor` compiles: the benchmark line (maps only and
/// with LSCDRIFT) and a line with every element kind. (name, source, run-kernel names)
pub fn doctor_sources() -> Vec<(String, String, Vec<String>)> {
    let lines = [
        ("beam_maps_bench.cu", crate::lattice::bench_lte(false)),
        ("beam_maps_bench_lsc.cu", crate::lattice::bench_lte(true)),
        ("beam_maps_all_kinds.cu", crate::gpu_check::ALL_KINDS.to_string()),
    ];
    lines
        .into_iter()
        .filter_map(|(name, text)| {
            let lattice = crate::lattice::parse(&text, name, None).ok()?;
            let src = generate(&Program::compile(&lattice), DEFAULT_MIN_BLOCKS).ok()?;
            let mut fns: Vec<String> = src.run_kernels.values().cloned().collect();
            fns.sort();
            Some((name.to_string(), src.source, fns))
        })
        .collect()
}
