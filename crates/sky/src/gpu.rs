//! The CUDA path: scrambled trials in batches, entirely on the device (`kernels/autocorr.cu`).
//!
//! Per batch of up to `batch` trials the host enqueues two launches — `scramble` (new RA and
//! unit vectors of every event for every trial of the batch) and `pairs` (grid.y = trial) —
//! and copies back one small histogram per trial. The kernel is always compiled in precise mode
//! (no FMA contraction), so a trial's counts are the same integers as on the CPU.

use crate::count::cumulative;
use crate::sample::Sample;
use crate::trials::Background;
use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};
use std::ops::Range;
use std::sync::Arc;
use warpdrive_core::cuda::{self, Gpu};
use warpdrive_core::progress::Progress;

pub const KERNEL_NAME: &str = "autocorr.cu";
pub const KERNEL_SRC: &str = include_str!("../kernels/autocorr.cu");
/// (file, source, functions) for `warpdrive doctor`.
pub const KERNELS: &[(&str, &str, &[&str])] = &[(KERNEL_NAME, KERNEL_SRC, &["scramble", "pairs"])];
/// Feature switches of the kernel (each measured by `warpdrive bench sky --device cuda`).
pub const SWITCHES: &[&str] = &["WD_BIN_SEARCH"];
/// Threads per block of `pairs` (= its shared-memory tile).
const TILE: u32 = 256;
/// Limits of the kernel's shared-memory histogram and bin table.
const MAX_HIST: usize = 4096;

pub use warpdrive_core::cuda::GpuError;

/// The sample uploaded to one GPU, with the compiled kernels.
pub struct SkyGpu {
    pub gpu: Gpu,
    scramble: CudaFunction,
    pairs: CudaFunction,
    _module: Arc<cudarc::driver::CudaModule>,
    sin_dec: CudaSlice<f64>,
    cos_dec: CudaSlice<f64>,
    order: CudaSlice<u32>,
    level: CudaSlice<u8>,
    window_end: CudaSlice<u32>,
    limits: CudaSlice<f64>,
    lut: CudaSlice<u16>,
    n: u32,
    bins: u32,
    levels: u32,
    ra_grid: u32,
    /// Trials per launch pair.
    pub batch: u32,
    vec: CudaSlice<f64>,
    hist: CudaSlice<u64>,
}

impl SkyGpu {
    /// Compile the kernels for GPU `ordinal` and upload `s`.
    pub fn new(ordinal: usize, s: &Sample) -> Result<SkyGpu, GpuError> {
        Self::with_switches(ordinal, s, &[])
    }

    /// As [`SkyGpu::new`] with kernel switches (`-D` definitions from [`SWITCHES`]).
    pub fn with_switches(ordinal: usize, s: &Sample, defines: &[String]) -> Result<SkyGpu, GpuError> {
        if s.hist_len() > MAX_HIST {
            return Err(GpuError::Other(format!(
                "{} cuts × {} bins = {} histogram cells: the GPU kernel holds at most {MAX_HIST} (run it on the CPU device)",
                s.cuts.levels(),
                s.bins.len(),
                s.hist_len()
            )));
        }
        let gpu = cuda::open(ordinal)?;
        gpu.ctx.bind_to_thread()?;
        let (module, scramble) = cuda::load(&gpu, KERNEL_NAME, KERNEL_SRC, "scramble", true, defines)?;
        let pairs = module.load_function("pairs")?;
        let st = &gpu.stream;
        let n = s.len();
        // Memory per trial in flight: one double4 per event; keep a batch under ~1/4 of memory.
        let per_trial = 32 * n + 8 * s.hist_len();
        let batch = ((gpu.total_memory / 4) / per_trial).clamp(1, 64) as u32;
        Ok(SkyGpu {
            sin_dec: st.clone_htod(&s.sin_dec)?,
            cos_dec: st.clone_htod(&s.cos_dec)?,
            order: st.clone_htod(&s.order)?,
            level: st.clone_htod(&s.level)?,
            window_end: st.clone_htod(&s.window_end)?,
            limits: st.clone_htod(&s.bins.chord2_limits)?,
            lut: st.clone_htod(s.bins.lookup_table())?,
            vec: st.alloc_zeros::<f64>(4 * n * batch as usize)?,
            hist: st.alloc_zeros::<u64>(s.hist_len() * batch as usize)?,
            n: n as u32,
            bins: s.bins.len() as u32,
            levels: s.cuts.levels() as u32,
            ra_grid: s.ra_grid,
            batch,
            scramble,
            pairs,
            _module: module,
            gpu,
        })
    }

    /// Enqueue `count` ≤ batch trials starting at `first`.
    fn launch(&mut self, seed: u64, first: u64, count: u32) -> Result<(), GpuError> {
        let st = self.gpu.stream.clone();
        st.memset_zeros(&mut self.hist)?;
        let grid_x = self.n.div_ceil(TILE);
        let cfg = LaunchConfig {
            grid_dim: (grid_x, count, 1),
            block_dim: (TILE, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut l = st.launch_builder(&self.scramble);
        l.arg(&self.sin_dec)
            .arg(&self.cos_dec)
            .arg(&self.order)
            .arg(&self.level)
            .arg(&self.n)
            .arg(&seed)
            .arg(&first)
            .arg(&self.ra_grid)
            .arg(&mut self.vec);
        // SAFETY: argument types and order match `scramble` in autocorr.cu; every buffer holds
        // n (or 4·n·batch) elements and grid.y ≤ batch.
        unsafe { l.launch(cfg) }?;
        let mut l = st.launch_builder(&self.pairs);
        l.arg(&self.vec)
            .arg(&self.window_end)
            .arg(&self.limits)
            .arg(&self.lut)
            .arg(&self.n)
            .arg(&self.bins)
            .arg(&self.levels)
            .arg(&mut self.hist);
        // SAFETY: as above for `pairs`; hist holds levels·bins counters per trial of the batch.
        unsafe { l.launch(cfg) }?;
        Ok(())
    }

    /// Cumulative counts N[cut][bin] of each trial in `range`, in trial order.
    pub fn trial_counts(&mut self, seed: u64, range: Range<u64>, progress: &Progress) -> Result<Vec<Vec<u64>>, GpuError> {
        self.gpu.ctx.bind_to_thread()?;
        let h = (self.levels * self.bins) as usize;
        let mut out = Vec::with_capacity((range.end - range.start) as usize);
        let mut first = range.start;
        while first < range.end {
            let count = (range.end - first).min(u64::from(self.batch)) as u32;
            self.launch(seed, first, count)?;
            let diff = self.gpu.stream.clone_dtoh(&self.hist.slice(0..h * count as usize))?;
            for t in 0..count as usize {
                out.push(cumulative(&diff[t * h..(t + 1) * h], self.levels as usize, self.bins as usize));
            }
            progress.add(u64::from(count));
            first += u64::from(count);
        }
        Ok(out)
    }

    /// The background of the trials in `range` (`total`: trials of the whole run, which decides
    /// whether per-trial counts are kept), folded batch by batch so that memory does not grow
    /// with the trial count; stops after the current batch when `progress` says so.
    pub fn trial_background(&mut self, seed: u64, range: Range<u64>, total: u64, progress: &Progress) -> Result<Background, GpuError> {
        self.gpu.ctx.bind_to_thread()?;
        let h = (self.levels * self.bins) as usize;
        let mut bg = Background::for_trials(h, total);
        let mut first = range.start;
        while first < range.end && !progress.should_stop() {
            let count = (range.end - first).min(u64::from(self.batch)) as u32;
            self.launch(seed, first, count)?;
            let diff = self.gpu.stream.clone_dtoh(&self.hist.slice(0..h * count as usize))?;
            for t in 0..count as usize {
                bg.add(&cumulative(&diff[t * h..(t + 1) * h], self.levels as usize, self.bins as usize));
            }
            progress.add(u64::from(count));
            first += u64::from(count);
        }
        Ok(bg)
    }

    /// The unit vectors and levels (x, y, z, level per sorted event) of one trial, for the
    /// twin check against `sphere::unit_vector_turn(trials::trial_turn(..))`.
    pub fn trial_vectors(&mut self, seed: u64, trial: u64) -> Result<Vec<f64>, GpuError> {
        self.gpu.ctx.bind_to_thread()?;
        self.launch(seed, trial, 1)?;
        Ok(self.gpu.stream.clone_dtoh(&self.vec.slice(0..4 * self.n as usize))?)
    }

    /// Seconds of one batch of `count` trials (kernel time, host-timed with a synchronize).
    pub fn time_batch(&mut self, seed: u64, first: u64, count: u32) -> Result<f64, GpuError> {
        self.gpu.ctx.bind_to_thread()?;
        self.gpu.stream.synchronize()?;
        let t = std::time::Instant::now();
        self.launch(seed, first, count.min(self.batch))?;
        self.gpu.stream.synchronize()?;
        Ok(t.elapsed().as_secs_f64())
    }
}

/// Run trials `range` on the GPUs `devices` (contiguous shares, merged in trial order, so the
/// result does not depend on the number of devices). Stops early, with a partial background,
/// when `progress` says so.
pub fn run_trials(devices: &[usize], s: &Sample, seed: u64, range: Range<u64>, progress: &Progress) -> Result<Background, GpuError> {
    let total = range.end - range.start;
    let results = cuda::split_across(devices, total, |&d, share| {
        SkyGpu::new(d, s)?.trial_background(seed, range.start + share.start..range.start + share.end, total, progress)
    });
    let mut bg = Background::for_trials(s.hist_len(), total);
    for r in results {
        bg.append(r?);
    }
    Ok(bg)
}

/// The build runs ask for (precise, no switches), for `doctor --prebuild`.
#[must_use]
pub fn prebuilt_builds() -> Vec<warpdrive_core::kernels::Build> {
    vec![warpdrive_core::kernels::Build::new(KERNEL_NAME, KERNEL_SRC, true, Vec::new())]
}

/// The builds `warpdrive doctor` checks (precise only: CPU and GPU counts must match).
pub fn kernel_sets() -> Vec<warpdrive_core::doctor::KernelSet> {
    warpdrive_core::doctor::KernelSet::fixed(KERNELS, SWITCHES, false)
}
