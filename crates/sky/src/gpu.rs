//! The CUDA path: scrambled trials in batches, entirely on the device (`kernels/autocorr.cu`).
//!
//! Per batch of up to `batch` trials the host enqueues two launches — `scramble` (new RA and
//! unit vectors of every event for every trial of the batch) and `pairs` (grid.y = trial) —
//! and copies back one small histogram per trial. The kernel is always compiled in precise mode
//! (no FMA contraction), so a trial's counts are the same integers as on the CPU.
//!
//! Signal injection ([`SkyGpu::injected_background`]) adds, per batch, one upload of the signal
//! the host drew for its trials ([`crate::inject::SignalBatch`], drawn in parallel while the
//! GPU counts the previous batch) and two launches: `remove_replaced` after `scramble`, and
//! `signal_pairs` after `pairs` (kernel docs in `kernels/autocorr.cu`).

use crate::count::cumulative;
use crate::inject::{Injection, Selection, SignalBatch};
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
pub const KERNELS: &[(&str, &str, &[&str])] = &[(KERNEL_NAME, KERNEL_SRC, &["scramble", "pairs", "remove_replaced", "signal_pairs"])];
/// Feature switches of the kernel (each measured by `warpdrive bench sky --device cuda`).
pub const SWITCHES: &[&str] = &["WD_BIN_SEARCH"];
/// Threads per block of `pairs` (= its shared-memory tile).
const TILE: u32 = 256;
/// Threads per block of `remove_replaced` and `signal_pairs`.
const SIGNAL_THREADS: u32 = 128;
/// The most trials of one batch (one launch pair).
pub const MAX_BATCH: u32 = 64;
/// Limits of the kernel's shared-memory histogram and bin table.
const MAX_HIST: usize = 4096;

pub use warpdrive_core::cuda::GpuError;

/// The sample uploaded to one GPU, with the compiled kernels.
pub struct SkyGpu {
    pub gpu: Gpu,
    scramble: CudaFunction,
    pairs: CudaFunction,
    remove_replaced: CudaFunction,
    signal_pairs: CudaFunction,
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
    /// The signal buffers of injected batches (allocated by the first one).
    signal: Option<SignalBuffers>,
}

/// A batch's signal on the device: [`SignalBatch`]'s arrays, room for `per_trial` events of
/// each of `batch` trials.
struct SignalBuffers {
    per_trial: u32,
    vec: CudaSlice<f64>,
    window: CudaSlice<u32>,
    replaced: CudaSlice<u32>,
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
        let remove_replaced = module.load_function("remove_replaced")?;
        let signal_pairs = module.load_function("signal_pairs")?;
        let st = &gpu.stream;
        let n = s.len();
        // Memory per trial in flight: one double4 per event; keep a batch under ~1/4 of memory.
        let per_trial = 32 * n + 8 * s.hist_len();
        let batch = ((gpu.total_memory / 4) / per_trial).clamp(1, MAX_BATCH as usize) as u32;
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
            remove_replaced,
            signal_pairs,
            signal: None,
            _module: module,
            gpu,
        })
    }

    /// Enqueue `count` ≤ batch trials starting at `first`.
    fn launch(&mut self, seed: u64, first: u64, count: u32) -> Result<(), GpuError> {
        self.launch_with(seed, first, count, 0)
    }

    /// As [`SkyGpu::launch`], with the `m` signal events per trial of the uploaded batch
    /// (`self.signal`) replacing their background events and counted with every event.
    fn launch_with(&mut self, seed: u64, first: u64, count: u32, m: u32) -> Result<(), GpuError> {
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
        let signal = if m > 0 { self.signal.as_ref() } else { None };
        if let Some(sb) = signal {
            let cfg_m = LaunchConfig {
                grid_dim: (m.div_ceil(SIGNAL_THREADS), count, 1),
                block_dim: (SIGNAL_THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            let mut l = st.launch_builder(&self.remove_replaced);
            l.arg(&sb.replaced).arg(&m).arg(&self.n).arg(&mut self.vec);
            // SAFETY: `remove_replaced(replaced, m, n, vec)`; replaced holds m entries per trial
            // of the batch (m ≤ sb.per_trial, checked by the caller), vec n per trial.
            unsafe { l.launch(cfg_m) }?;
        }
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
        if let Some(sb) = signal {
            let cfg_s = LaunchConfig {
                grid_dim: (m, count, 1),
                block_dim: (SIGNAL_THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            let mut l = st.launch_builder(&self.signal_pairs);
            l.arg(&self.vec)
                .arg(&sb.vec)
                .arg(&sb.window)
                .arg(&self.limits)
                .arg(&self.lut)
                .arg(&self.n)
                .arg(&m)
                .arg(&self.bins)
                .arg(&self.levels)
                .arg(&mut self.hist);
            // SAFETY: `signal_pairs(vec, sig, window, limits, lut, n, m, bins, levels, hist)`;
            // sig holds 4·m doubles and window 2·m indices ≤ n per trial, grid = (m, count).
            unsafe { l.launch(cfg_s) }?;
        }
        Ok(())
    }

    /// Upload a batch's signal (allocating or growing the buffers, after the memory check).
    fn upload_signal(&mut self, b: &SignalBatch) -> Result<(), GpuError> {
        let m = b.per_trial;
        if m == 0 {
            return Ok(());
        }
        if self.signal.as_ref().is_none_or(|sb| sb.per_trial < m) {
            self.signal = None;
            // (The engine checked the host's share against the memory budget, `Inject::run`.)
            let events = u64::from(m) * u64::from(self.batch);
            let st = &self.gpu.stream;
            let k = events as usize;
            self.signal = Some(SignalBuffers {
                per_trial: m,
                vec: st.alloc_zeros::<f64>(4 * k)?,
                window: st.alloc_zeros::<u32>(2 * k)?,
                replaced: st.alloc_zeros::<u32>(k)?,
            });
        }
        let st = self.gpu.stream.clone();
        let sb = self.signal.as_mut().ok_or_else(|| GpuError::Other("no signal buffers".into()))?;
        st.memcpy_htod(&b.vec, &mut sb.vec.slice_mut(0..b.vec.len()))?;
        st.memcpy_htod(&b.window, &mut sb.window.slice_mut(0..b.window.len()))?;
        st.memcpy_htod(&b.replaced, &mut sb.replaced.slice_mut(0..b.replaced.len()))?;
        Ok(())
    }

    /// Cumulative counts of the injected trials `range` with `n_sources` sources, handed to
    /// `each` in trial order: per batch the host draws the signal (in parallel on `pool`,
    /// the next batch while the GPU counts this one), uploads it once and runs the four
    /// launches; only the histograms come back. Stops after the current batch when
    /// `progress` says so.
    #[allow(clippy::too_many_arguments)]
    pub fn injected_counts(
        &mut self,
        sel: &Selection,
        inj: &Injection,
        seed: u64,
        n_sources: u64,
        range: Range<u64>,
        pool: &rayon::ThreadPool,
        progress: &Progress,
        mut each: impl FnMut(Vec<u64>),
    ) -> Result<(), GpuError> {
        self.gpu.ctx.bind_to_thread()?;
        let h = (self.levels * self.bins) as usize;
        let batch = u64::from(self.batch);
        let m = n_sources
            .checked_mul(inj.per_source)
            .filter(|&m| m <= u64::from(self.n))
            .ok_or_else(|| GpuError::Other(format!("{n_sources} sources × {} events: more than the sample", inj.per_source)))?;
        let draw = |first: u64| {
            let end = (first + batch).min(range.end);
            pool.install(|| SignalBatch::new(sel, inj, seed, n_sources, first..end))
        };
        let mut first = range.start;
        let mut next = (first < range.end).then(|| draw(first));
        while let Some(b) = next.take() {
            if progress.should_stop() {
                break;
            }
            self.upload_signal(&b)?;
            self.launch_with(seed, first, b.trials, m as u32)?;
            let after = first + u64::from(b.trials);
            // The host draws the next batch while the GPU counts this one.
            next = (after < range.end).then(|| draw(after));
            let diff = self.gpu.stream.clone_dtoh(&self.hist.slice(0..h * b.trials as usize))?;
            for t in 0..b.trials as usize {
                each(cumulative(&diff[t * h..(t + 1) * h], self.levels as usize, self.bins as usize));
            }
            progress.add(u64::from(b.trials));
            first = after;
        }
        Ok(())
    }

    /// The count distributions of the injected trials `range` (`total`: trials of the whole
    /// run, which decides whether per-trial counts are kept); see [`SkyGpu::injected_counts`].
    #[allow(clippy::too_many_arguments)]
    pub fn injected_background(
        &mut self,
        sel: &Selection,
        inj: &Injection,
        seed: u64,
        n_sources: u64,
        range: Range<u64>,
        total: u64,
        pool: &rayon::ThreadPool,
        progress: &Progress,
    ) -> Result<Background, GpuError> {
        let mut bg = Background::for_trials((self.levels * self.bins) as usize, total);
        self.injected_counts(sel, inj, seed, n_sources, range, pool, progress, |c| bg.add(&c))?;
        Ok(bg)
    }

    /// Seconds of one injected batch (`batch` trials from `first`) with `n_sources` sources, from the
    /// host's draw to the histograms (host-timed with a synchronize).
    pub fn time_injected_batch(
        &mut self,
        sel: &Selection,
        inj: &Injection,
        seed: u64,
        n_sources: u64,
        first: u64,
        pool: &rayon::ThreadPool,
    ) -> Result<f64, GpuError> {
        self.gpu.ctx.bind_to_thread()?;
        self.gpu.stream.synchronize()?;
        let t = std::time::Instant::now();
        let range = first..first + u64::from(self.batch);
        self.injected_counts(sel, inj, seed, n_sources, range, pool, &Progress::hidden(), |_| {})?;
        self.gpu.stream.synchronize()?;
        Ok(t.elapsed().as_secs_f64())
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

/// The background trials `range` and, with the same scrambles, the injected trials of every
/// strength `sources` on the GPUs `devices` (contiguous shares, merged in trial order: the
/// result does not depend on the number of devices). One upload of the sample per GPU serves
/// all strengths; each GPU's host thread draws the signal on its share of `threads` workers.
/// Stops early, with partial distributions, when `progress` says so.
#[allow(clippy::too_many_arguments)]
pub fn run_injected(
    devices: &[usize],
    sel: &Selection,
    inj: &Injection,
    seed: u64,
    sources: &[u64],
    range: Range<u64>,
    threads: usize,
    progress: &Progress,
) -> Result<(Background, Vec<Background>), GpuError> {
    let s = sel.sample;
    let total = range.end - range.start;
    let per_gpu = (threads / devices.len().max(1)).max(1);
    let results = cuda::split_across(devices, total, |&d, share| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(per_gpu)
            .build()
            .map_err(|e| GpuError::Other(format!("cannot start {per_gpu} worker threads: {e}")))?;
        let mut g = SkyGpu::new(d, s)?;
        let r = range.start + share.start..range.start + share.end;
        let bg = g.trial_background(seed, r.clone(), total, progress)?;
        let mut signal = Vec::with_capacity(sources.len());
        for &n in sources {
            signal.push(g.injected_background(sel, inj, seed, n, r.clone(), total, &pool, progress)?);
        }
        Ok((bg, signal))
    });
    let mut bg = Background::for_trials(s.hist_len(), total);
    let mut signal: Vec<Background> = sources.iter().map(|_| Background::for_trials(s.hist_len(), total)).collect();
    for r in results {
        let (b, sig) = r?;
        bg.append(b);
        for (a, x) in signal.iter_mut().zip(sig) {
            a.append(x);
        }
    }
    Ok((bg, signal))
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
