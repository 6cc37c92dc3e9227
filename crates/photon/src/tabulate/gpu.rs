//! The CUDA back end of the tabulator (`warpdrive photon tabulate --device cuda`; kernel:
//! `kernels/tabulate.cu`, compiled after `kernels/propagate.cu`, whose device functions it calls).
//!
//! * The medium, tilt, anisotropy, birefringence and the sources go up through
//!   [`crate::gpu::upload`] (the photon kernel's `PhotonParams`); the binning, the source frame,
//!   the acceptance and the histogram through [`TabParams`].
//! * Always the precise build (as the CPU tabulator): the sums are integers in the CPU's fixed
//!   point, added with 64-bit atomics (128-bit squares as two words with a carry), so the order
//!   of the additions — threads, launches, GPUs — does not matter.
//! * Photons in launches of [`TabGpuOptions::batch`] (progress and cancellation per launch);
//!   each source's photon range shared among the GPUs; one histogram per GPU, summed on the host.
//! * A photon whose distinct cells or a segment whose cuts overflow the kernel's per-thread
//!   scratch (WD_TAB_CELLS, WD_TAB_CUTS) adds nothing on the device; its id comes back and the
//!   host tabulates it with [`super::Tabulate`]'s own CPU code. Nothing is dropped.
//! * [`device_budget`]: the histogram, the overflow list and the kernel's local memory are
//!   checked against the device's free memory before anything large is allocated.

use cudarc::driver::{CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};
use std::mem::{offset_of, size_of};
use std::time::Instant;
use warpdrive_core::cuda::{self, Gpu, GpuError};
use warpdrive_core::engine::ParamError;
use warpdrive_core::progress::Progress;

use super::{Histogram, Tabulate};

/// The kernel file's name (cache key, `warpdrive doctor`'s lines).
pub const KERNEL_NAME: &str = "tabulate.cu";
/// The tabulation kernel: propagate.cu's device functions, then tabulate.cu.
pub const KERNEL_SRC: &str = concat!(
    include_str!("../../kernels/propagate.cu"),
    "\n// ---- fixed_point.cuh ----\n",
    include_str!("../../kernels/fixed_point.cuh"),
    "\n// ---- tabulate.cu ----\n",
    include_str!("../../kernels/tabulate.cu")
);
/// The kernel's entry points.
pub const FUNCTIONS: &[&str] = &["tabulate", "tabulate_layout"];
/// Counters of the kernel (WD_TAB_COUNTERS): tabulated, absorbed, escaped, segments, entries,
/// inside, largest mismatch (f64 bits), overflowed photons.
pub const COUNTERS: usize = 8;
/// The kernel's per-thread scratch: cuts of one segment, distinct cells of one photon
/// (WD_TAB_CUTS, WD_TAB_CELLS in tabulate.cu).
pub const CUTS: usize = 256;
pub const CELLS: usize = 512;
/// Photons per launch (progress and cancellation granularity).
pub const BATCH: u64 = 1 << 22;
/// The photon kernel's switches the tabulation build keeps: bit-for-bit neutral ones only (the
/// precise build; the features WD_BFR, WD_BFR_RB_CONST are added per ice model).
pub const SWITCHES: &[&str] = &["WD_SELECT_SCATTER", "WD_BRANCHLESS_WALK"];

/// The sampled estimator's kernel file (`kernels/sampled.cu`), compiled after propagate.cu in the
/// fast build ([`sampled_defines`]).
pub const SAMPLED_NAME: &str = "sampled.cu";
pub const SAMPLED_SRC: &str = concat!(
    include_str!("../../kernels/propagate.cu"),
    "\n// ---- fixed_point.cuh ----\n",
    include_str!("../../kernels/fixed_point.cuh"),
    "\n// ---- sampled.cu ----\n",
    include_str!("../../kernels/sampled.cu"),
    "\n// ---- sampled_split.cu ----\n",
    include_str!("../../kernels/sampled_split.cu")
);
pub const SAMPLED_FUNCTIONS: &[&str] = &[
    "tabulate_sampled",
    "sampled_layout",
    "sampled_twin_cells",
    "sampled_fold",
    "sampled_rep_fold",
    "sampled_paths",
    "sampled_bins",
    "sampled_split_layout",
];
/// Counters of the sampled kernel (WD_SAMP_COUNTERS): tabulated, absorbed, escaped, segments,
/// runs, points. After them in the same buffer: the job counter of `WD_SAMP_JOBQ` (zeroed before
/// every launch) and `WD_SAMP_RED`'s count of squares it could not split (≥ 2⁹⁶).
pub const SAMPLED_COUNTERS: usize = 6;
/// The sampled kernel's structural alternatives (issue #32, docs/spline.md "Job queue and
/// fire-and-forget squares"), on by default as in sampled.cu since their A/B on an H200: `WD_SAMP_JOBQ`
/// (a per-warp job queue fed from a counter; on wherever the deferred point queue is, i.e. off in
/// the lane-at-a-time builds) and `WD_SAMP_RED` (squares as three fire-and-forget digit adds,
/// folded into the u128 squares by `sampled_fold` after every launch). Both leave the tables the
/// same integers.
pub const SAMPLED_JOBQ_DEFAULT: bool = true;
pub const SAMPLED_RED_DEFAULT: bool = true;
/// `WD_SAMP_REP`'s replicas when the switches do not name it, for the builds that can have it
/// ([`sampled_reps`]); fewer where their memory would pass 1/8 of the device's free memory.
/// docs/spline.md "Batch means".
pub const SAMPLED_REP_DEFAULT: u64 = 256;

/// `defines` with `WD_SAMP_ADAPT=2` for the adaptive comb's directional step (sampled.cu; its
/// own default is the fixed comb, whose build stays the one without the switch; a `--config`
/// naming `WD_SAMP_ADAPT=1` keeps session 35's distance rule, for comparisons): the build a run
/// compiles, and `doctor --prebuild` makes for the default estimator.
pub fn with_adaptive(defines: &mut Vec<String>, adaptive: bool) {
    if adaptive && !switch_on(defines, "WD_SAMP_ADAPT", false) {
        defines.push("WD_SAMP_ADAPT=2".into());
    }
}

/// `defines` with `WD_SAMP_SHAPE` for the grid's `shape` (1 spheres, 2 cylinders) unless they name
/// it: sampled.cu's branches on the shape compiled out (H200, session 38: 3.4 % faster at the
/// bench's 2000 m, 1.8 % at 2300 m; H100, session 39: 1.9 %, 1.2 %, gpu-check passing with it;
/// docs/spline.md "Session 39"). The build a run compiles, and `doctor --prebuild` makes for
/// each shape.
pub fn with_shape(defines: &mut Vec<String>, shape: super::Shape) {
    if define_value(defines, "WD_SAMP_SHAPE").is_none() {
        let v = match shape {
            super::Shape::Spherical => 1,
            super::Shape::Cylindrical => 2,
        };
        defines.push(format!("WD_SAMP_SHAPE={v}"));
    }
}

/// `defines` with `WD_SAMP_REP=reps` when `reps` > 0 and they do not name it already (the
/// kernel's own default is 0): the build a run compiles, and `doctor --prebuild` makes.
pub fn with_reps(defines: &mut Vec<String>, reps: u64) {
    if reps > 0 && define_value(defines, "WD_SAMP_REP").is_none() {
        defines.push(format!("WD_SAMP_REP={reps}"));
    }
}

/// The replicas of the spatial cells' batch means (sampled.cu `WD_SAMP_REP`) for a build of
/// `defines` and `spatial` cells on a device with `free` bytes: the value the switches give, else
/// [`SAMPLED_REP_DEFAULT`] (or 64 or 16, the most whose words fit in 1/8 of `free`) for the
/// builds of the deferred queue with the split squares (sampled.cu's requirement), 0 (the runs'
/// squares) for the others: lane at a time, one point a step, the warp scans, the two kernels,
/// the measurement builds.
#[must_use]
pub fn sampled_reps(defines: &[String], spatial: u64, free: u64) -> u64 {
    if let Some(v) = define_value(defines, "WD_SAMP_REP") {
        return v;
    }
    let on = |n: &str, d: bool| switch_on(defines, n, d);
    let (stepwise, scan) = (on("WD_SAMP_STEPWISE", false), on("WD_SAMP_SCAN", false));
    let slots = on("WD_SAMP_SLOTS", true);
    let deferred = sampled_compact(defines) && slots && on("WD_SAMP_DEFER", slots);
    let measurement = ["WD_SAMP_NOSQ", "WD_SAMP_PHYSICS", "WD_SAMP_SPLIT"].iter().any(|n| on(n, false));
    if !deferred || stepwise || scan || measurement || !on("WD_SAMP_RED", SAMPLED_RED_DEFAULT) {
        return 0;
    }
    [SAMPLED_REP_DEFAULT, 64, 16]
        .into_iter()
        .find(|&r| spatial.saturating_mul(r).saturating_mul(8) <= free / 8)
        .unwrap_or(0)
}

/// Whether a build of `defines` bins through the warp queue of points (sampled.cu
/// `WD_SAMP_COMPACT`, off by default with the one-point-a-step loop or the warp scans).
fn sampled_compact(defines: &[String]) -> bool {
    let on = |n: &str, d: bool| switch_on(defines, n, d);
    on("WD_SAMP_COMPACT", !on("WD_SAMP_STEPWISE", false) && !on("WD_SAMP_SCAN", false))
}

/// Whether a build of `defines` has the adaptive comb: the warp queue of points (sampled.cu
/// `sampled_enqueue`), not the two kernels.
#[must_use]
pub fn sampled_adaptive_build(defines: &[String]) -> bool {
    sampled_compact(defines) && !switch_on(defines, "WD_SAMP_SPLIT", false)
}

/// The value of `-D` switch `name` among `defines` (the last `name` or `name=V`; a bare `name`
/// is "1").
fn define<'a>(defines: &'a [String], name: &str) -> Option<&'a str> {
    defines.iter().rev().find_map(|d| {
        let (n, v) = d.split_once('=').unwrap_or((d.as_str(), "1"));
        (n.trim() == name).then(|| v.trim())
    })
}

/// Whether `-D` switches `defines` turn `name` on: the last `name` or `name=V` among them (on
/// unless V is 0), else `default`.
#[must_use]
pub fn switch_on(defines: &[String], name: &str, default: bool) -> bool {
    define(defines, name).map_or(default, |v| v != "0")
}

/// The number `-D` switch `name` is given among `defines` (the last one), if it is one.
#[must_use]
pub fn define_value(defines: &[String], name: &str) -> Option<u64> {
    define(defines, name)?.parse().ok()
}
/// The fast build's switches that only shape the propagation kernel's launch (job queue, its
/// refills and counter, register cap) or its module search: left out of the sampled build.
pub const NOT_SAMPLED: &[&str] = &[
    "WD_JOBQUEUE",
    "WD_DYNAMIC",
    "WD_CLEARANCE",
    "WD_PHILOX_PAIR",
    "WD_MIN_BLOCKS",
    "WD_REFILL",
];

/// The `-D` switches of the sampled build for a medium: `bench photon --device cuda`'s default
/// (fast) switches that concern one photon's path, the medium's birefringence features, `extra`.
#[must_use]
pub fn sampled_defines(m: &crate::medium::Medium, extra: &[String]) -> Vec<String> {
    let mut d = sampled_switches();
    if m.bfr.is_some() {
        d.push("WD_BFR".into());
    }
    if m.bfr.as_ref().and_then(|b| b.rb_column_const).is_some() {
        d.push("WD_BFR_RB_CONST".into());
    }
    d.extend(extra.iter().cloned());
    d
}

/// `bench photon --device cuda`'s default switches less [`NOT_SAMPLED`].
#[must_use]
pub fn sampled_switches() -> Vec<String> {
    let name = |d: &str| d.split('=').next().unwrap_or(d).to_string();
    crate::gpu::DEFAULT_SWITCHES
        .iter()
        .filter(|s| !NOT_SAMPLED.contains(&name(s).as_str()))
        .map(|s| (*s).to_string())
        .collect()
}

/// Mirror of `struct SampParams` in sampled.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct SampParams {
    pub radial: u64,
    pub azimuth: u64,
    pub polar: u64,
    pub delay: u64,
    pub share: u64,
    pub ang: u64,
    pub sum: u64,
    pub sumsq: u64,
    pub spatial_sumsq: u64,
    pub counters: u64,
    pub photon_lo: u64,
    pub photon_hi: u64,
    pub origin: [f32; 3],
    pub axis: [f32; 3],
    pub e1: [f32; 3],
    pub e2: [f32; 3],
    pub ng_over_c: f32,
    pub cone: f32,
    pub inv_c: f32,
    pub margin: f32,
    pub mas: f32,
    pub step: f32,
    pub lo: [f32; 4],
    pub inv: [f32; 4],
    pub n_radial: i32,
    pub n_azimuth: i32,
    pub n_polar: i32,
    pub n_delay: i32,
    pub spherical: i32,
    pub n_ang: i32,
    pub time_cells: u32,
    /// 1 when every axis has equal steps (`inv` > 0; no delays or `inv[3]` > 0): the lookup's
    /// one-predicate path (sampled.cu WD_SAMP_LEAN).
    pub equal_steps: i32,
    /// Per axis: the last edge (as the uploaded edges' last float; `lo` is the first).
    pub hi: [f32; 4],
    /// The acceptance polynomial's coefficients (as `ang`'s floats), zero above `n_ang`
    /// (sampled.cu WD_SAMP_ANGC).
    pub angc: [f32; SAMPLED_ANGC_MAX],
    /// `WD_SAMP_REP`: the replica sums, replica-major (R × `n_spatial` words).
    pub rep: u64,
    pub n_spatial: u32,
    pub rep_pad: u32,
    /// The adaptive comb ([`super::sampled::AdaptiveStep`], builds with `WD_SAMP_ADAPT`): a
    /// segment's step clamp(slope·r, step, max) (sampled.cu `samp_segment_step`).
    pub adapt_slope: f32,
    pub adapt_max: f32,
    /// `WD_SAMP_ADAPT=2`, the directional step ([`super::sampled::AdaptiveStep::segment_step`]):
    /// one over half the narrowest radial, axial (0 for spheres) and delay (0 without one) bin,
    /// and one over the angular bound's slope (the kernel takes the step as one over the fastest
    /// rate in half bins: [`SampParams::set_adaptive`]).
    pub adapt_inv_hr: f32,
    pub adapt_inv_hz: f32,
    pub adapt_inv_ht: f32,
    pub adapt_inv_slope: f32,
}

impl SampParams {
    /// The adaptive comb's parameters for `samp_segment_step` (zeros for the fixed comb): the
    /// step's bounds as sampled.rs keeps them, and their inverses for the directional step
    /// (a half bin of ∞ — no such bin — is a rate of 0).
    pub fn set_adaptive(&mut self, a: Option<&super::sampled::AdaptiveStep>) {
        let inv = |x: f64| (1.0 / x) as f32;
        (self.adapt_slope, self.adapt_max) = a.map_or((0.0, 0.0), |a| (a.slope as f32, a.max as f32));
        (self.adapt_inv_hr, self.adapt_inv_hz, self.adapt_inv_ht, self.adapt_inv_slope) = a.map_or((0.0, 0.0, 0.0, 0.0), |a| {
            (inv(a.half_radial), inv(a.half_axial), inv(a.half_delay), inv(a.slope))
        });
    }
}
// SAFETY: plain old data of integers and floats, `#[repr(C)]`, passed by value to the kernel.
unsafe impl cudarc::driver::DeviceRepr for SampParams {}

/// Mirror of `struct SampSplit` in sampled_split.cu: one round of the two-kernel sampled
/// estimator (`WD_SAMP_SPLIT=1`, [`Split`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct SplitParams {
    pub path: u64,
    pub head: u64,
    pub cont_in: u64,
    pub cont_out: u64,
    pub work: u64,
    pub jobs: u64,
    pub resumed: u64,
    pub cap: u64,
}
// SAFETY: plain old data of integers, `#[repr(C)]`, passed by value to the kernels.
unsafe impl cudarc::driver::DeviceRepr for SplitParams {}

/// What sampled_split.cu's `sampled_split_layout` reports: offsets of `work`, `jobs`,
/// `cap`, the size of [`SplitParams`], then the sizes of a path's segment, a job's head and a
/// continuation, and WD_SAMP_PATH ([`SPLIT_PATH`] unless a define changes it).
pub const SPLIT_LAYOUT: [usize; 8] = [
    offset_of!(SplitParams, work),
    offset_of!(SplitParams, jobs),
    offset_of!(SplitParams, cap),
    size_of::<SplitParams>(),
    SPLIT_SEGMENT_BYTES as usize,
    SPLIT_HEAD_BYTES as usize,
    SPLIT_CONT_BYTES as usize,
    SPLIT_PATH as usize,
];
/// Segments a job's path holds per round (sampled_split.cu WD_SAMP_PATH), and the bytes of its
/// records: a segment, a job's head, a continuation (PState and the sampler's state).
pub const SPLIT_PATH: u64 = 96;
pub const SPLIT_SEGMENT_BYTES: u64 = 32;
pub const SPLIT_HEAD_BYTES: u64 = 32;
pub const SPLIT_CONT_BYTES: u64 = 112;
/// sampled_bins' launch: threads per block and blocks per multiprocessor (sampled_split.cu
/// WD_SAMP_BIN_BLOCK, WD_SAMP_BIN_MIN_BLOCKS, its launch bounds).
pub const SPLIT_BIN_BLOCK: u64 = 256;
pub const SPLIT_BIN_BLOCKS: u64 = 4;
/// The most jobs a round holds on the device (its paths: ~3.4 kB a job with 96 segments;
/// `WD_SAMP_ROUND_JOBS=N` for another, measurement only).
pub const SPLIT_JOBS: u64 = 1 << 21;

/// The two-kernel sampled estimator's device state (sampled_split.cu, `WD_SAMP_SPLIT=1`; `=2`:
/// the rounds overlapped): the kernels, each round's paths and heads for up to `jobs` jobs of
/// `path` segments (two sets with the overlap), three continuation buffers in turn (round r
/// resumes `cont[r % 3]` and pauses into `cont[(r + 1) % 3]`), the work counters per set.
///
/// With the overlap, the bins of round r run on a second stream (`side`) while the paths of round
/// r + 1 run on the launching stream: sampled_paths(r + 1) needs only the photon states paused by
/// sampled_paths(r), and writes the other set of paths, once sampled_bins(r − 1) has read it
/// (`done[set]`); sampled_bins(r) waits for sampled_paths(r). So each kernel's tail — the warps
/// still walking or binning their last long photon — runs beside the other kernel's work.
struct Split {
    paths: cudarc::driver::CudaFunction,
    bins: cudarc::driver::CudaFunction,
    path_buf: Vec<CudaSlice<u8>>,
    head: Vec<CudaSlice<u8>>,
    work: Vec<CudaSlice<u64>>,
    cont: [CudaSlice<u8>; 3],
    side: Option<std::sync::Arc<cudarc::driver::CudaStream>>,
    done: Vec<Option<cudarc::driver::CudaEvent>>,
    jobs: u64,
    path: u64,
    pending: u64,
    round: u64,
    bins_cfg: LaunchConfig,
}

impl Split {
    /// Bytes a job of a round needs: its path and head per set, three continuations.
    fn job_bytes(path: u64, sets: u64) -> u64 {
        sets * (path * SPLIT_SEGMENT_BYTES + SPLIT_HEAD_BYTES) + 3 * SPLIT_CONT_BYTES
    }

    fn new(
        gpu: &Gpu,
        module: &std::sync::Arc<cudarc::driver::CudaModule>,
        defines: &[String],
        jobs: u64,
        path: u64,
        overlap: bool,
    ) -> Result<Self, GpuError> {
        let stream = &gpu.stream;
        let sets = if overlap { 2 } else { 1 };
        let bytes = |n: u64| stream.alloc_zeros::<u8>(n as usize);
        let bins_block = define_value(defines, "WD_SAMP_BIN_BLOCK").unwrap_or(SPLIT_BIN_BLOCK) as u32;
        let bins_per_sm = define_value(defines, "WD_SAMP_BIN_MIN_BLOCKS").unwrap_or(SPLIT_BIN_BLOCKS) as u32;
        Ok(Self {
            paths: module.load_function("sampled_paths")?,
            bins: module.load_function("sampled_bins")?,
            path_buf: (0..sets)
                .map(|_| bytes(jobs * path * SPLIT_SEGMENT_BYTES))
                .collect::<Result<_, _>>()?,
            head: (0..sets).map(|_| bytes(jobs * SPLIT_HEAD_BYTES)).collect::<Result<_, _>>()?,
            work: (0..sets).map(|_| stream.alloc_zeros::<u64>(3)).collect::<Result<_, _>>()?,
            cont: [
                bytes(jobs * SPLIT_CONT_BYTES)?,
                bytes(jobs * SPLIT_CONT_BYTES)?,
                bytes(jobs * SPLIT_CONT_BYTES)?,
            ],
            side: if overlap { Some(stream.fork()?) } else { None },
            done: (0..sets).map(|_| None).collect(),
            jobs,
            path,
            pending: 0,
            round: 0,
            bins_cfg: LaunchConfig {
                grid_dim: ((gpu.multiprocessors.max(1) as u32) * bins_per_sm, 1, 1),
                block_dim: (bins_block, 1, 1),
                shared_mem_bytes: 0,
            },
        })
    }

    /// The stream the bins (and so the histogram's additions) run on.
    fn bin_stream<'a>(&'a self, stream: &'a std::sync::Arc<cudarc::driver::CudaStream>) -> &'a std::sync::Arc<cudarc::driver::CudaStream> {
        self.side.as_ref().unwrap_or(stream)
    }

    /// A new source: nothing paused (a cancelled source's paused photons are not carried over).
    fn reset(&mut self) {
        (self.pending, self.round) = (0, 0);
    }

    /// One round: the `pending` paused photons resumed and `fresh` photons from `tp.photon_lo`,
    /// each job's path `cap` segments; then `pending` = the photons this round paused.
    fn round(
        &mut self,
        stream: &std::sync::Arc<cudarc::driver::CudaStream>,
        pp: &crate::gpu::GpuParams,
        tp: &SampParams,
        cfg: LaunchConfig,
        fresh: u64,
        cap: u64,
    ) -> Result<(), GpuError> {
        let set = (self.round % self.path_buf.len() as u64) as usize;
        let r = (self.round % 3) as usize;
        if let Some(done) = &self.done[set] {
            // The bins that read this set (two rounds ago) are done.
            stream.wait(done)?;
        }
        stream.memset_zeros(&mut self.work[set])?;
        let ptr = |s: &CudaSlice<u8>| {
            let (p, _sync) = s.device_ptr(stream);
            p
        };
        let work = {
            let (p, _sync) = self.work[set].device_ptr(stream);
            p
        };
        let x = SplitParams {
            path: ptr(&self.path_buf[set]),
            head: ptr(&self.head[set]),
            cont_in: ptr(&self.cont[r]),
            cont_out: ptr(&self.cont[(r + 1) % 3]),
            work,
            jobs: self.pending + fresh,
            resumed: self.pending,
            cap,
        };
        debug_assert!(x.jobs <= self.jobs && x.jobs * cap <= self.jobs * self.path);
        let mut l = stream.launch_builder(&self.paths);
        l.arg(pp).arg(tp).arg(&x);
        // SAFETY: `pp` and `tp` as for tabulate_sampled; `x` names this stream's path buffer
        // (self.jobs × self.path ≥ x.jobs × cap segments), heads and continuations (self.jobs
        // each; a round has at most self.jobs jobs and pauses at most as many) and 3 work words.
        unsafe { l.launch(cfg) }?;
        let bins = self.bin_stream(stream).clone();
        if self.side.is_some() {
            bins.wait(&stream.record_event(None)?)?;
        }
        let mut l = bins.launch_builder(&self.bins);
        l.arg(tp).arg(&x);
        // SAFETY: as above; the bins run after this round's paths (the same stream, or the
        // event above), and the next rounds' paths leave this set alone until `done[set]`.
        unsafe { l.launch(self.bins_cfg) }?;
        if self.side.is_some() {
            self.done[set] = Some(bins.record_event(None)?);
        }
        // (on the launching stream: waits for this round's paths, not for its bins)
        self.pending = stream.clone_dtoh(&self.work[set])?[2];
        self.round += 1;
        Ok(())
    }

    /// Photons `lo..hi`: rounds of up to `self.jobs` jobs, the photons paused by each round
    /// resumed by the next beside fresh ones (still pending after the last: [`Split::drain`]).
    fn launch(
        &mut self,
        stream: &std::sync::Arc<cudarc::driver::CudaStream>,
        pp: &crate::gpu::GpuParams,
        tp: &SampParams,
        cfg: LaunchConfig,
        lo: u64,
        hi: u64,
    ) -> Result<(), GpuError> {
        let mut a = lo;
        while a < hi {
            let fresh = (hi - a).min(self.jobs - self.pending);
            let mut t = *tp;
            (t.photon_lo, t.photon_hi) = (a, a + fresh);
            self.round(stream, pp, &t, cfg, fresh, self.path)?;
            a += fresh;
        }
        Ok(())
    }

    /// Rounds of the paused photons alone until none is left, each job's path the buffer's
    /// share (so the longest photons usually end in one round).
    fn drain(
        &mut self,
        stream: &std::sync::Arc<cudarc::driver::CudaStream>,
        pp: &crate::gpu::GpuParams,
        tp: &SampParams,
        cfg: LaunchConfig,
    ) -> Result<(), GpuError> {
        while self.pending > 0 {
            let cap = (self.jobs * self.path / self.pending).max(self.path);
            self.round(stream, pp, tp, cfg, 0, cap)?;
        }
        Ok(())
    }
}

/// The sampled kernel's default before the structural alternatives (sampled.cu WD_SAMP_JOBQ,
/// WD_SAMP_RED, WD_SAMP_ROUNDS, WD_SAMP_ANGC): gpu-check's reference of the same integers, and
/// the rate it prints beside the default's.
pub const SAMPLED_EARLIER: &[&str] = &["WD_SAMP_JOBQ=0", "WD_SAMP_RED=0", "WD_SAMP_ROUNDS=4", "WD_SAMP_ANGC=0"];

/// Coefficients of the acceptance polynomial the sampled kernel holds in its parameter block
/// (sampled.cu WD_SAMP_ANGC_MAX); a longer polynomial is evaluated from `ang` as before.
pub const SAMPLED_ANGC_MAX: usize = 16;

/// Offsets the kernel's `sampled_layout` reports, in its order.
pub const SAMPLED_LAYOUT: [usize; 12] = [
    offset_of!(SampParams, photon_lo),
    offset_of!(SampParams, origin),
    offset_of!(SampParams, step),
    offset_of!(SampParams, lo),
    offset_of!(SampParams, n_radial),
    offset_of!(SampParams, time_cells),
    offset_of!(SampParams, hi),
    offset_of!(SampParams, angc),
    offset_of!(SampParams, rep),
    offset_of!(SampParams, adapt_slope),
    offset_of!(SampParams, adapt_inv_hr),
    size_of::<SampParams>(),
];
const _: () = assert!(size_of::<SampParams>() == 288 + 4 * SAMPLED_ANGC_MAX);

/// The acceptance polynomial's coefficients as the kernel's floats, zero above their number
/// ([`SampParams::angc`]; all zero when there are more than [`SAMPLED_ANGC_MAX`]: the kernel then
/// loads them).
fn angc(coeffs: &[f64]) -> [f32; SAMPLED_ANGC_MAX] {
    let mut c = [0.0f32; SAMPLED_ANGC_MAX];
    if coeffs.len() <= SAMPLED_ANGC_MAX {
        for (c, &x) in c.iter_mut().zip(coeffs) {
            *c = x as f32;
        }
    }
    c
}

/// Mirror of `struct TabParams` in tabulate.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct TabParams {
    pub radial: u64,
    pub azimuth: u64,
    pub polar: u64,
    pub delay: u64,
    pub az_sin: u64,
    pub az_cos: u64,
    pub share: u64,
    pub ang: u64,
    pub sum: u64,
    pub sumsq: u64,
    pub spatial_sumsq: u64,
    pub counters: u64,
    pub overflow: u64,
    pub origin: [f64; 3],
    pub axis: [f64; 3],
    pub e1: [f64; 3],
    pub e2: [f64; 3],
    pub ng_over_c: f64,
    pub cone: f64,
    pub inv_c: f64,
    pub margin: f64,
    pub mas: f64,
    pub photon_lo: u64,
    pub photon_hi: u64,
    pub overflow_capacity: u64,
    pub n_radial: i32,
    pub n_azimuth: i32,
    pub n_polar: i32,
    pub n_delay: i32,
    pub spherical: i32,
    pub n_ang: i32,
    pub time_cells: u32,
    pub pad: i32,
}
// SAFETY: plain old data of integers and floats, `#[repr(C)]`, passed by value to the kernel.
unsafe impl cudarc::driver::DeviceRepr for TabParams {}

/// Offsets the kernel's `tabulate_layout` reports, in its order.
pub const LAYOUT: [usize; 6] = [
    offset_of!(TabParams, origin),
    offset_of!(TabParams, ng_over_c),
    offset_of!(TabParams, photon_lo),
    offset_of!(TabParams, n_radial),
    offset_of!(TabParams, time_cells),
    size_of::<TabParams>(),
];
const _: () = assert!(size_of::<TabParams>() == 296);

/// How the device tabulation runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TabGpuOptions {
    pub devices: Vec<usize>,
    /// Photons per launch.
    pub batch: u64,
    /// Threads per block and blocks per multiprocessor.
    pub block: u32,
    pub blocks_per_sm: u32,
    /// Extra `-D` switches (checks: `WD_TAB_CELLS=8` forces the host's overflow path).
    pub defines: Vec<String>,
}

impl Default for TabGpuOptions {
    fn default() -> Self {
        Self {
            devices: vec![0],
            batch: BATCH,
            block: 128,
            blocks_per_sm: 8,
            defines: Vec::new(),
        }
    }
}

/// What a device run did besides the histograms.
#[derive(Clone, Debug, Default)]
pub struct TabGpuStats {
    pub devices: Vec<String>,
    /// Seconds in kernel launches (launch to synchronize, summed over devices).
    pub kernel_seconds: f64,
    pub launches: usize,
    /// Photons tabulated by the host because they overflowed the kernel's scratch.
    pub overflowed: u64,
    pub registers: i32,
    pub local_bytes: i32,
}

/// The `-D` switches of the tabulation build for a medium.
#[must_use]
pub fn kernel_defines(m: &crate::medium::Medium, extra: &[String]) -> Vec<String> {
    let mut d: Vec<String> = SWITCHES.iter().map(|s| (*s).to_string()).collect();
    if m.bfr.is_some() {
        d.push("WD_BFR".into());
    }
    if m.bfr.as_ref().and_then(|b| b.rb_column_const).is_some() {
        d.push("WD_BFR_RB_CONST".into());
    }
    d.extend(extra.iter().cloned());
    d
}

/// The tabulation builds runs ask for (exact: precise; sampled: fast; each without
/// birefringence, with it, with one rb for every layer): `doctor --prebuild` and `--prepare`
/// make them.
#[must_use]
pub fn prebuilt_builds() -> Vec<warpdrive_core::kernels::Build> {
    let features = [&[][..], &["WD_BFR"][..], &["WD_BFR", "WD_BFR_RB_CONST"][..]];
    let mut out: Vec<_> = features
        .iter()
        .map(|f| {
            let d = SWITCHES.iter().chain(f.iter()).map(|s| (*s).to_string()).collect();
            warpdrive_core::kernels::Build::new(KERNEL_NAME, KERNEL_SRC, true, d)
        })
        .collect();
    for f in features {
        for shape in [super::Shape::Spherical, super::Shape::Cylindrical] {
            let mut d = sampled_switches();
            d.extend(f.iter().map(|s| (*s).to_string()));
            // The batch means, the adaptive comb and the grid's shape a default run adds
            // (run_sampled_on, sampled_reps, with_adaptive, with_shape).
            with_reps(&mut d, SAMPLED_REP_DEFAULT);
            with_adaptive(&mut d, true);
            with_shape(&mut d, shape);
            out.push(warpdrive_core::kernels::Build::new(SAMPLED_NAME, SAMPLED_SRC, false, d));
        }
    }
    out
}

/// The device memory a tabulation needs [bytes]: the histogram (8 + 16 bytes a cell, 16 a
/// spatial cell), the overflow list (8 bytes a photon of a launch), the counters, and the
/// kernel's local memory for every thread the device can hold (`local_per_thread` bytes each).
#[must_use]
pub fn device_bytes(cells: u64, spatial: u64, batch: u64, resident_threads: u64, local_per_thread: u64) -> u64 {
    cells
        .saturating_mul(24)
        .saturating_add(spatial.saturating_mul(16))
        .saturating_add(batch.saturating_mul(8))
        .saturating_add(COUNTERS as u64 * 8)
        .saturating_add(resident_threads.saturating_mul(local_per_thread))
}

/// The device memory check: what [`device_bytes`] counts must fit in 90 % of the `free` bytes
/// of device `name` (the rest: the medium's tables, the driver).
pub fn device_budget(
    cells: u64,
    spatial: u64,
    batch: u64,
    resident_threads: u64,
    local_per_thread: u64,
    free: u64,
    name: &str,
) -> Result<(), ParamError> {
    let need = device_bytes(cells, spatial, batch, resident_threads, local_per_thread);
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    if need > free / 10 * 9 {
        return Err(ParamError::new(
            "radial_bins",
            format!(
                "{cells} cells need {:.2} GiB on {name} (histogram {:.2} GiB, overflow list {:.2} GiB, kernel scratch {:.2} GiB), \
                 more than 90 % of its {:.2} GiB free: use fewer bins",
                gib(need),
                gib(cells.saturating_mul(24).saturating_add(spatial.saturating_mul(16))),
                gib(batch.saturating_mul(8)),
                gib(resident_threads.saturating_mul(local_per_thread)),
                gib(free)
            ),
        ));
    }
    Ok(())
}

/// sin and cos of the inner azimuth edges (the host's `sin_cos`, as `Binning::deposit`).
#[must_use]
pub fn azimuth_planes(edges: &[f64]) -> (Vec<f64>, Vec<f64>) {
    edges[1..edges.len() - 1].iter().map(|phi| phi.to_radians().sin_cos()).unzip()
}

/// A u128 from the kernel's (low, high) word pairs.
fn wide(v: &[u64]) -> Vec<u128> {
    v.chunks_exact(2).map(|w| u128::from(w[0]) | (u128::from(w[1]) << 64)).collect()
}

fn nonempty(v: &[f64]) -> Vec<f64> {
    if v.is_empty() {
        vec![0.0]
    } else {
        v.to_vec()
    }
}

/// One device's share: per source, the histogram of its photon ids `share` (relative to the
/// source's first id), and the ids that overflowed.
type DevicePart = (Vec<Histogram>, Vec<u64>, TabGpuStats);

fn run_on(t: &Tabulate, gpu: &Gpu, share: std::ops::Range<u64>, opts: &TabGpuOptions, progress: &Progress) -> Result<DevicePart, GpuError> {
    let m = &t.medium;
    let b = &t.binning;
    let (cells, spatial) = (b.spatial_cells() * b.time_cells(), b.spatial_cells());
    let defines = kernel_defines(m, &opts.defines);
    let (module, func) = cuda::load(gpu, KERNEL_NAME, KERNEL_SRC, "tabulate", true, &defines)?;
    let _ = &module;
    let res = cuda::resources(&func)?;
    if opts.block as i32 > res.max_threads_per_block {
        return Err(GpuError::Other(format!(
            "{} threads per block requested, the tabulation kernel allows {} ({} registers)",
            opts.block, res.max_threads_per_block, res.registers
        )));
    }
    let name = format!("cuda:{} {}", gpu.ordinal, gpu.name);
    let (free, _total) = gpu.ctx.mem_get_info()?;
    let resident = (gpu.multiprocessors.max(1) as u64) * (gpu.max_threads_per_sm.max(1) as u64);
    let batch = opts.batch.max(1);
    device_budget(cells, spatial, batch, resident, res.local_bytes.max(0) as u64, free as u64, &name)
        .map_err(|e| GpuError::Other(e.to_string()))?;
    let stream = &gpu.stream;
    let sources: Vec<crate::source::Source> = t.sources.iter().map(|p| p.src.clone()).collect();
    let (tables, _hits, _count) = crate::gpu::upload(stream, m, &t.index, &sources, 1)?;
    let mut pp = tables.params;
    pp.seed = t.seed;
    let (az_sin, az_cos) = azimuth_planes(&b.azimuth);
    let keep: Vec<CudaSlice<f64>> = [
        &b.radial[..],
        &b.azimuth[..],
        &b.polar[..],
        &b.delay[..],
        &az_sin[..],
        &az_cos[..],
        &t.acceptance.share[..],
        &t.acceptance.angular.coeffs[..],
    ]
    .iter()
    .map(|v| stream.clone_htod(&nonempty(v)))
    .collect::<Result<_, _>>()?;
    let ptr = |s: &CudaSlice<f64>| {
        let (p, _sync) = s.device_ptr(stream);
        p
    };
    let mut sum = stream.alloc_zeros::<u64>(cells as usize)?;
    let mut sumsq = stream.alloc_zeros::<u64>(2 * cells as usize)?;
    let mut spatial_sumsq = stream.alloc_zeros::<u64>(2 * spatial as usize)?;
    let mut counters = stream.alloc_zeros::<u64>(COUNTERS)?;
    let overflow = stream.alloc_zeros::<u64>(batch as usize)?;
    let dptr = |s: &CudaSlice<u64>| {
        let (p, _sync) = s.device_ptr(stream);
        p
    };
    let mut tp = TabParams {
        radial: ptr(&keep[0]),
        azimuth: ptr(&keep[1]),
        polar: ptr(&keep[2]),
        delay: ptr(&keep[3]),
        az_sin: ptr(&keep[4]),
        az_cos: ptr(&keep[5]),
        share: ptr(&keep[6]),
        ang: ptr(&keep[7]),
        sum: dptr(&sum),
        sumsq: dptr(&sumsq),
        spatial_sumsq: dptr(&spatial_sumsq),
        counters: dptr(&counters),
        overflow: dptr(&overflow),
        margin: t.margin,
        mas: t.acceptance.angular.mas,
        overflow_capacity: batch,
        n_radial: b.radial.len() as i32,
        n_azimuth: b.azimuth.len() as i32,
        n_polar: b.polar.len() as i32,
        n_delay: b.delay.len() as i32,
        spherical: i32::from(b.shape == super::Shape::Spherical),
        n_ang: t.acceptance.angular.coeffs.len() as i32,
        time_cells: b.time_cells() as u32,
        ..Default::default()
    };
    let cfg = LaunchConfig {
        grid_dim: ((gpu.multiprocessors.max(1) as u32) * opts.blocks_per_sm, 1, 1),
        block_dim: (opts.block, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut stats = TabGpuStats {
        devices: vec![name],
        registers: res.registers,
        local_bytes: res.local_bytes,
        ..Default::default()
    };
    let photons = t.photons();
    let mut hists = Vec::with_capacity(t.sources.len());
    let mut overflowed = Vec::new();
    for (k, placed) in t.sources.iter().enumerate() {
        let f = &placed.frame;
        (tp.origin, tp.axis, tp.e1, tp.e2) = (f.origin, f.axis, f.e1, f.e2);
        (tp.ng_over_c, tp.cone, tp.inv_c) = (f.ng_over_c, f.cone, f.inv_c);
        stream.memset_zeros(&mut sum)?;
        stream.memset_zeros(&mut sumsq)?;
        stream.memset_zeros(&mut spatial_sumsq)?;
        stream.memset_zeros(&mut counters)?;
        let first = k as u64 * photons;
        let mut a = share.start;
        let mut worst = 0.0f64;
        while a < share.end {
            if progress.should_stop() {
                break;
            }
            let e = (a + batch).min(share.end);
            tp.photon_lo = first + a;
            tp.photon_hi = first + e;
            // The overflow slot count restarts per launch (the list holds one launch's ids).
            stream.memset_zeros(&mut counters.slice_mut(7..8))?;
            let t0 = Instant::now();
            let mut launch = stream.launch_builder(&func);
            launch.arg(&pp).arg(&tp);
            // SAFETY: every pointer in `pp` and `tp` names a live allocation of this stream
            // (`tables`, `keep`, the histogram, counters and overflow list, sized as the kernel
            // indexes them: cells, 2 × cells, 2 × spatial cells, COUNTERS, `batch` ids).
            unsafe { launch.launch(cfg) }?;
            stream.synchronize()?;
            stats.kernel_seconds += t0.elapsed().as_secs_f64();
            stats.launches += 1;
            let c = stream.clone_dtoh(&counters)?;
            let n = c[7].min(batch) as usize;
            if n > 0 {
                overflowed.extend(stream.clone_dtoh(&overflow.slice(0..n))?);
            }
            worst = worst.max(f64::from_bits(c[6]));
            progress.add(e - a);
            a = e;
        }
        let c = stream.clone_dtoh(&counters)?;
        hists.push(Histogram {
            sum: stream.clone_dtoh(&sum)?,
            sumsq: wide(&stream.clone_dtoh(&sumsq)?),
            spatial_sumsq: wide(&stream.clone_dtoh(&spatial_sumsq)?),
            inside: c[5],
            segments: c[3],
            worst_photon: worst.max(f64::from_bits(c[6])),
            entries: c[4],
            absorbed: c[1],
            escaped: c[2],
            tabulated: c[0],
            points: 0,
            cell_squares: true,
        });
    }
    stats.overflowed = overflowed.len() as u64;
    Ok((hists, overflowed, stats))
}

/// Tabulate every source's photons on the GPUs of `opts`: per source the histogram (the
/// devices' and the host's overflow photons summed), and the run's statistics.
pub fn run(t: &Tabulate, opts: &TabGpuOptions, progress: &Progress) -> Result<(Vec<Histogram>, TabGpuStats), GpuError> {
    let gpus = opts.devices.iter().map(|&d| cuda::open(d)).collect::<Result<Vec<_>, _>>()?;
    let parts = cuda::split_across(&gpus, t.photons(), |g, share| {
        g.ctx.bind_to_thread()?;
        run_on(t, g, share, opts, progress)
    });
    let b = &t.binning;
    let (cells, spatial) = ((b.spatial_cells() * b.time_cells()) as usize, b.spatial_cells() as usize);
    let mut hists: Vec<Histogram> = (0..t.sources.len()).map(|_| Histogram::new(cells, spatial)).collect();
    let mut stats = TabGpuStats::default();
    let mut overflowed = Vec::new();
    for p in parts {
        let (h, o, s) = p?;
        for (a, b) in hists.iter_mut().zip(&h) {
            a.add(b);
        }
        overflowed.extend(o);
        stats.devices.extend(s.devices);
        stats.kernel_seconds += s.kernel_seconds;
        stats.launches += s.launches;
        stats.overflowed += s.overflowed;
        stats.registers = s.registers;
        stats.local_bytes = s.local_bytes;
    }
    // The photons the kernel left to the host, tabulated by the CPU code into their source's
    // histogram (ids k·photons + i).
    let photons = t.photons();
    let mut scratch = super::Scratch::default();
    for id in overflowed {
        let k = (id / photons) as usize;
        t.photon(&t.sources[k], id, &mut hists[k], &mut scratch);
    }
    Ok((hists, stats))
}

/// One device's share with the sampled estimator (`kernels/sampled.cu`, the fast build): per
/// source the histogram of its photon ids `share`. Nothing overflows (no per-thread scratch).
fn run_sampled_on(
    t: &Tabulate,
    gpu: &Gpu,
    share: std::ops::Range<u64>,
    estimator: super::Estimator,
    opts: &TabGpuOptions,
    progress: &Progress,
) -> Result<(Vec<Histogram>, TabGpuStats), GpuError> {
    let super::Estimator::Sampled { step, adaptive } = estimator else {
        return Err(GpuError::Other("the sampled kernel runs the sampled estimator".into()));
    };
    let m = &t.medium;
    let b = &t.binning;
    let (cells, spatial) = (b.spatial_cells() * b.time_cells(), b.spatial_cells());
    let mut extra = opts.defines.clone();
    // The kernel's launch bounds follow a launch shape other than the default (bench --config).
    let d = TabGpuOptions::default();
    if opts.block != d.block {
        extra.push(format!("WD_SAMP_BLOCK={}", opts.block));
    }
    if opts.blocks_per_sm != d.blocks_per_sm {
        extra.push(format!("WD_SAMP_MIN_BLOCKS={}", opts.blocks_per_sm));
    }
    let mut defines = sampled_defines(m, &extra);
    // The adaptive comb is the warp queue's (sampled_enqueue): not the lane-at-a-time path, one
    // point a step, the warp scans or the two kernels.
    if adaptive && !sampled_adaptive_build(&defines) {
        return Err(GpuError::Other(format!(
            "the adaptive sample step is the default kernel loop's; these switches ({}) make another loop: \
             give a fixed --sample-step",
            extra.join(",")
        )));
    }
    // WD_SAMP_RED: the squares as three digits a cell (sampled_fold adds them to the u128
    // squares, `acc`, after every launch).
    let red = switch_on(&defines, "WD_SAMP_RED", SAMPLED_RED_DEFAULT);
    let words: u64 = if red { 3 } else { 2 };
    // WD_SAMP_REP: the spatial variance by batch means over `reps` replicas (sampled_rep_fold
    // adds each launch's to the squares' digits before sampled_fold); the kernel's own default is 0.
    let (free, _total) = gpu.ctx.mem_get_info()?;
    let reps = sampled_reps(&defines, spatial, free as u64);
    with_reps(&mut defines, reps);
    with_adaptive(&mut defines, adaptive);
    with_shape(&mut defines, b.shape);
    let (module, func) = cuda::load(gpu, SAMPLED_NAME, SAMPLED_SRC, "tabulate_sampled", false, &defines)?;
    let fold = if red { Some(module.load_function("sampled_fold")?) } else { None };
    let rep_fold = if reps > 0 {
        Some(module.load_function("sampled_rep_fold")?)
    } else {
        None
    };
    let res = cuda::resources(&func)?;
    let block = opts.block.min(res.max_threads_per_block.max(1) as u32);
    let name = format!("cuda:{} {}", gpu.ordinal, gpu.name);
    let resident = (gpu.multiprocessors.max(1) as u64) * (gpu.max_threads_per_sm.max(1) as u64);
    device_budget(cells, spatial, 0, resident, res.local_bytes.max(0) as u64, free as u64, &name)
        .map_err(|e| GpuError::Other(e.to_string()))?;
    // The histogram, and WD_SAMP_RED's digits besides the u128 squares: 24 bytes a cell and a
    // spatial cell more.
    let table = device_bytes(cells, spatial, 0, resident, res.local_bytes.max(0) as u64)
        .saturating_add(if red { cells.saturating_add(spatial).saturating_mul(24) } else { 0 })
        .saturating_add(spatial.saturating_mul(reps).saturating_mul(8));
    if (red || reps > 0) && table > free as u64 / 10 * 9 {
        return Err(GpuError::Other(format!(
            "{cells} cells with the split squares (WD_SAMP_RED) and {reps} replicas of {spatial} spatial cells (WD_SAMP_REP) \
             need {table} bytes on {name}, more than 90 % of its {free} bytes free: use fewer bins"
        )));
    }
    let stream = &gpu.stream;
    // WD_SAMP_SPLIT: the two kernels of sampled_split.cu instead of tabulate_sampled, a round's
    // paths for up to SPLIT_JOBS jobs (fewer where 90 % of the free memory, less the histogram,
    // holds fewer; at least 2¹², or the batch if smaller).
    let mut split = if switch_on(&defines, "WD_SAMP_SPLIT", false) {
        let path = define_value(&defines, "WD_SAMP_PATH").unwrap_or(SPLIT_PATH).max(1);
        let overlap = define_value(&defines, "WD_SAMP_SPLIT").unwrap_or(1) >= 2;
        let per_job = Split::job_bytes(path, if overlap { 2 } else { 1 });
        let room = (free as u64 / 10 * 9).saturating_sub(table);
        let most = define_value(&defines, "WD_SAMP_ROUND_JOBS").unwrap_or(SPLIT_JOBS);
        let jobs = (room / per_job).min(most).min(opts.batch.max(1));
        let least = opts.batch.clamp(1, 1 << 12);
        if jobs < least {
            return Err(GpuError::Other(format!(
                "the two-kernel tabulation (WD_SAMP_SPLIT) needs {per_job} bytes a job for at least {least} jobs on {name}: \
                 {room} bytes left of 90 % of its {free} bytes free beside the histogram"
            )));
        }
        Some(Split::new(gpu, &module, &defines, jobs, path, overlap)?)
    } else {
        None
    };
    let sources: Vec<crate::source::Source> = t.sources.iter().map(|p| p.src.clone()).collect();
    let (tables, _hits, _count) = crate::gpu::upload(stream, m, &t.index, &sources, 1)?;
    let mut pp = tables.params;
    pp.seed = t.seed;
    let f32s = |v: &[f64]| nonempty(v).iter().map(|&x| x as f32).collect::<Vec<f32>>();
    let keep: Vec<CudaSlice<f32>> = [
        &b.radial[..],
        &b.azimuth[..],
        &b.polar[..],
        &b.delay[..],
        &t.acceptance.share[..],
        &t.acceptance.angular.coeffs[..],
    ]
    .iter()
    .map(|v| stream.clone_htod(&f32s(v)))
    .collect::<Result<_, _>>()?;
    let ptr = |s: &CudaSlice<f32>| {
        let (p, _sync) = s.device_ptr(stream);
        p
    };
    let mut sum = stream.alloc_zeros::<u64>(cells as usize)?;
    let mut sumsq = stream.alloc_zeros::<u64>((words * cells) as usize)?;
    let mut spatial_sumsq = stream.alloc_zeros::<u64>((words * spatial) as usize)?;
    // The counters, then the job counter (WD_SAMP_JOBQ) and the unsplit squares (WD_SAMP_RED).
    let mut counters = stream.alloc_zeros::<u64>(SAMPLED_COUNTERS + 2)?;
    // WD_SAMP_RED: the u128 squares the digits are folded into (one word pair a cell).
    let (mut acc, mut spatial_acc) = if red {
        (
            stream.alloc_zeros::<u64>(2 * cells as usize)?,
            stream.alloc_zeros::<u64>(2 * spatial as usize)?,
        )
    } else {
        (stream.alloc_zeros::<u64>(1)?, stream.alloc_zeros::<u64>(1)?)
    };
    // WD_SAMP_REP's replica sums (one word when off).
    let mut rep = stream.alloc_zeros::<u64>((spatial * reps).max(1) as usize)?;
    let dptr = |s: &CudaSlice<u64>| {
        let (p, _sync) = s.device_ptr(stream);
        p
    };
    let look = super::sampled::Lookup::new(b);
    // lo and hi: the first and last edges as the uploaded floats (the kernel's range tests
    // compare with them instead of loading the edges: the same floats, the same cells).
    let axis = |a: &super::sampled::Axis| (a.lo as f32, a.inv as f32, a.edges[a.edges.len() - 1] as f32);
    let axes = [
        axis(&look.radial),
        axis(&look.azimuth),
        axis(&look.polar),
        look.delay.as_ref().map_or((0.0, 0.0, 0.0), axis),
    ];
    let f3 = |v: [f64; 3]| v.map(|x| x as f32);
    let mut tp = SampParams {
        radial: ptr(&keep[0]),
        azimuth: ptr(&keep[1]),
        polar: ptr(&keep[2]),
        delay: ptr(&keep[3]),
        share: ptr(&keep[4]),
        ang: ptr(&keep[5]),
        sum: dptr(&sum),
        sumsq: dptr(&sumsq),
        spatial_sumsq: dptr(&spatial_sumsq),
        counters: dptr(&counters),
        margin: t.margin as f32,
        mas: t.acceptance.angular.mas as f32,
        step: if step.is_finite() { step as f32 } else { 0.0 },
        lo: axes.map(|a| a.0),
        inv: axes.map(|a| a.1),
        hi: axes.map(|a| a.2),
        n_radial: b.radial.len() as i32,
        n_azimuth: b.azimuth.len() as i32,
        n_polar: b.polar.len() as i32,
        n_delay: b.delay.len() as i32,
        spherical: i32::from(b.shape == super::Shape::Spherical),
        n_ang: t.acceptance.angular.coeffs.len() as i32,
        time_cells: b.time_cells() as u32,
        equal_steps: i32::from(axes[..3].iter().all(|a| a.1 > 0.0) && (b.delay.is_empty() || axes[3].1 > 0.0)),
        angc: angc(&t.acceptance.angular.coeffs),
        rep: dptr(&rep),
        n_spatial: spatial as u32,
        ..Default::default()
    };
    let cfg = LaunchConfig {
        grid_dim: ((gpu.multiprocessors.max(1) as u32) * opts.blocks_per_sm, 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut stats = TabGpuStats {
        devices: vec![name],
        registers: res.registers,
        local_bytes: res.local_bytes,
        ..Default::default()
    };
    let photons = t.photons();
    // The stream of the histogram's additions (the split's bins may run on their own) and, for
    // the split, launches of at least 16 rounds (each launch ends with both streams idle).
    let fs = split.as_ref().map_or_else(|| stream.clone(), |s| s.bin_stream(stream).clone());
    let batch = match &split {
        Some(s) => opts.batch.max(16 * s.jobs),
        None => opts.batch.max(1),
    };
    let mut hists = Vec::with_capacity(t.sources.len());
    for (k, placed) in t.sources.iter().enumerate() {
        let f = &placed.frame;
        (tp.origin, tp.axis, tp.e1, tp.e2) = (f3(f.origin), f3(f.axis), f3(f.e1), f3(f.e2));
        (tp.ng_over_c, tp.cone, tp.inv_c) = (f.ng_over_c as f32, f.cone as f32, f.inv_c as f32);
        tp.set_adaptive(estimator.adaptive_step(b, f).as_ref());
        stream.memset_zeros(&mut sum)?;
        stream.memset_zeros(&mut sumsq)?;
        stream.memset_zeros(&mut spatial_sumsq)?;
        stream.memset_zeros(&mut counters)?;
        if red {
            stream.memset_zeros(&mut acc)?;
            stream.memset_zeros(&mut spatial_acc)?;
        }
        if reps > 0 {
            stream.memset_zeros(&mut rep)?;
        }
        if let Some(split) = &mut split {
            split.reset();
        }
        let first = k as u64 * photons;
        let mut a = share.start;
        let mut runs = 0u64;
        while a < share.end {
            if progress.should_stop() {
                break;
            }
            let e = (a + batch).min(share.end);
            tp.photon_lo = first + a;
            tp.photon_hi = first + e;
            // WD_SAMP_JOBQ's photon counter starts at 0 every launch (ids photon_lo + counter).
            stream.memset_zeros(&mut counters.slice_mut(SAMPLED_COUNTERS..SAMPLED_COUNTERS + 1))?;
            let t0 = Instant::now();
            if let Some(split) = &mut split {
                split.launch(stream, &pp, &tp, cfg, tp.photon_lo, tp.photon_hi)?;
                if e == share.end {
                    // The source's last photons: every paused one finished before the histogram is read.
                    split.drain(stream, &pp, &tp, cfg)?;
                }
            } else {
                let mut launch = stream.launch_builder(&func);
                launch.arg(&pp).arg(&tp);
                // SAFETY: every pointer in `pp` and `tp` names a live allocation of this stream
                // (`tables`, `keep`, the histogram and counters, sized as the kernel indexes them:
                // cells, `words` × cells, `words` × spatial cells, SAMPLED_COUNTERS + 2).
                unsafe { launch.launch(cfg) }?;
            }
            if let Some(rep_fold) = &rep_fold {
                // The launch's batch-means variances into the spatial squares' digits (timed
                // with the launch: its cost).
                let mut l = fs.launch_builder(rep_fold);
                let n = spatial;
                let r = reps as i32;
                l.arg(&mut rep).arg(&mut spatial_sumsq).arg(&mut counters).arg(&n).arg(&r);
                let fcfg = LaunchConfig {
                    grid_dim: (n.div_ceil(256).clamp(1, 4096) as u32, 1, 1),
                    block_dim: (256, 1, 1),
                    shared_mem_bytes: 0,
                };
                // SAFETY: `rep` holds reps × n words, `spatial_sumsq` 3 × n (WD_SAMP_REP needs
                // WD_SAMP_RED), `counters` SAMPLED_COUNTERS + 2.
                unsafe { l.launch(fcfg) }?;
            }
            if let Some(fold) = &fold {
                // The launch's digits into the u128 squares (timed with the launch: its cost).
                for (w, acc, n) in [(&mut sumsq, &mut acc, cells), (&mut spatial_sumsq, &mut spatial_acc, spatial)] {
                    let mut l = fs.launch_builder(fold);
                    l.arg(w).arg(acc).arg(&n);
                    let fcfg = LaunchConfig {
                        grid_dim: (n.div_ceil(256).clamp(1, 4096) as u32, 1, 1),
                        block_dim: (256, 1, 1),
                        shared_mem_bytes: 0,
                    };
                    // SAFETY: `w` holds 3 × n words, `acc` 2 × n (allocated above when `red`).
                    unsafe { l.launch(fcfg) }?;
                }
            }
            stream.synchronize()?;
            fs.synchronize()?;
            stats.kernel_seconds += t0.elapsed().as_secs_f64();
            stats.launches += 1;
            if red {
                // Each digit word got at most one add per closed run of the launch (a spatial
                // run closes only where a cell run does), each < 2³²: fewer than 2³² runs keep
                // every word below 2⁶⁴; and no square was left unsplit.
                let c = fs.clone_dtoh(&counters)?;
                if c[4] - runs >= 1 << 32 || c[SAMPLED_COUNTERS + 1] > 0 {
                    return Err(GpuError::Other(format!(
                        "the split squares (WD_SAMP_RED) cannot hold this launch: {} runs (at most 2^32 - 1), {} squares of 2^96 or more",
                        c[4] - runs,
                        c[SAMPLED_COUNTERS + 1]
                    )));
                }
                runs = c[4];
            }
            progress.add(e - a);
            a = e;
        }
        let c = fs.clone_dtoh(&counters)?;
        let (sq, ssq) = if red { (&acc, &spatial_acc) } else { (&sumsq, &spatial_sumsq) };
        hists.push(Histogram {
            sum: fs.clone_dtoh(&sum)?,
            sumsq: wide(&fs.clone_dtoh(sq)?),
            spatial_sumsq: wide(&fs.clone_dtoh(ssq)?),
            inside: 0,
            segments: c[3],
            worst_photon: 0.0,
            // Roundings to the fixed point: a run's (runs), or each point's (batch means).
            entries: if reps > 0 { c[5] } else { c[4] },
            absorbed: c[1],
            escaped: c[2],
            tabulated: c[0],
            points: c[5],
            cell_squares: reps == 0,
        });
    }
    Ok((hists, stats))
}

/// Tabulate every source's photons on the GPUs of `opts` with the sampled estimator `estimator`
/// (its step, fixed or adaptive; ∞: one point per segment).
pub fn run_sampled(
    t: &Tabulate,
    estimator: super::Estimator,
    opts: &TabGpuOptions,
    progress: &Progress,
) -> Result<(Vec<Histogram>, TabGpuStats), GpuError> {
    let gpus = opts.devices.iter().map(|&d| cuda::open(d)).collect::<Result<Vec<_>, _>>()?;
    let parts = cuda::split_across(&gpus, t.photons(), |g, share| {
        g.ctx.bind_to_thread()?;
        run_sampled_on(t, g, share, estimator, opts, progress)
    });
    let b = &t.binning;
    let (cells, spatial) = ((b.spatial_cells() * b.time_cells()) as usize, b.spatial_cells() as usize);
    let mut hists: Vec<Histogram> = (0..t.sources.len()).map(|_| Histogram::new(cells, spatial)).collect();
    let mut stats = TabGpuStats::default();
    for p in parts {
        let (h, s) = p?;
        for (a, b) in hists.iter_mut().zip(&h) {
            a.add(b);
        }
        stats.devices.extend(s.devices);
        stats.kernel_seconds += s.kernel_seconds;
        stats.launches += s.launches;
        stats.registers = s.registers;
        stats.local_bytes = s.local_bytes;
    }
    Ok((hists, stats))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel source holds the photon kernel and the tabulation kernel with its entry points
    /// and the device twins of bins.rs and mod.rs, and the scratch sizes agree with the kernel's.
    #[test]
    fn kernel_source_assembles() {
        assert!(KERNEL_SRC.starts_with(include_str!("../../kernels/propagate.cu")));
        for f in [
            "tabulate(",
            "tabulate_layout(",
            "void roots(",
            "within(",
            "local(",
            "coordinates(",
            "cell(",
            "deposit(",
            "inside_length(",
            "escaped(",
            "photon_done(",
            "weight(",
            "photon(",
        ] {
            assert!(KERNEL_SRC.contains(f), "{f} missing");
        }
        assert!(KERNEL_SRC.contains(&format!("#define WD_TAB_CUTS {CUTS}")));
        assert!(KERNEL_SRC.contains(&format!("#define WD_TAB_CELLS {CELLS}")));
        assert!(KERNEL_SRC.contains(&format!("#define WD_TAB_COUNTERS {COUNTERS}")));
        // The fixed point is the CPU's.
        assert!(KERNEL_SRC.contains(&format!("#define WD_SUM_UNIT {:.1}", super::super::SUM_UNIT)));
        assert!(KERNEL_SRC.contains(&format!("#define WD_SQ_UNIT {:.1}", super::super::SQ_UNIT)));
        // Only bit-for-bit neutral switches of the photon kernel.
        assert!(SWITCHES.iter().all(|s| !crate::gpu::FAST_ONLY.contains(s)));
    }

    /// The sampled kernel's source holds its entry points and the twins' names, its constants
    /// are the CPU's (stream tag, Weyl increment, fixed point, counters), and its build keeps
    /// the fast photon switches of `bench photon` but none of the propagation kernel's launch
    /// switches.
    #[test]
    fn sampled_kernel_source_assembles() {
        assert!(SAMPLED_SRC.starts_with(include_str!("../../kernels/propagate.cu")));
        for f in SAMPLED_FUNCTIONS
            .iter()
            .chain(&["axis_bin(", "sampled_cell(", "sampled_weight(", "sampled_record(", "sampled_step("])
        {
            assert!(SAMPLED_SRC.contains(f), "{f} missing");
        }
        let src = include_str!("../../kernels/sampled.cu");
        assert!(src.contains(&format!("#define WD_TAG_TABULATE {}u", super::super::sampled::TAG)));
        assert!(src.contains(&format!("#define WD_GOLDEN 0x{:X}u", super::super::sampled::GOLDEN)));
        assert!(src.contains(&format!("#define WD_SAMP_COUNTERS {SAMPLED_COUNTERS}")));
        assert!(src.contains(&format!("#define WD_SUM_UNIT {:.1}", super::super::SUM_UNIT)));
        assert!(src.contains(&format!("#define WD_SQ_UNIT {:.1}", super::super::SQ_UNIT)));
        // One add_u128, in fixed_point.cuh, assembled before each kernel file.
        for (k, call) in [(KERNEL_SRC, "add_u128(T."), (SAMPLED_SRC, "add_u128(p, v)")] {
            assert_eq!(k.matches("void add_u128(").count(), 1);
            assert!(k.find("void add_u128(") < k.find(call));
        }
        assert!(!src.contains("void add_u128(") && !include_str!("../../kernels/tabulate.cu").contains("void add_u128("));
        // The warp compaction is the default; WD_SAMP_COMPACT=0 the lane-at-a-time path.
        assert!(src.contains("#define WD_SAMP_COMPACT (!WD_SAMP_STEPWISE && !WD_SAMP_SCAN)") && src.contains("#if WD_SAMP_COMPACT"));
        assert!(src.contains("#define WD_SAMP_STEPWISE 0") && src.contains("#define WD_SAMP_SCAN 0"));
        assert!(src.contains("#define WD_SAMP_ATAN 1"));
        let d = sampled_switches();
        assert!(
            d.iter().any(|s| s == "WD_FAST_RNG") && d.iter().any(|s| s == "WD_FACTORED_ICE"),
            "{d:?}"
        );
        let name = |s: &str| s.split('=').next().unwrap_or(s).to_string();
        assert!(d.iter().all(|s| !NOT_SAMPLED.contains(&name(s).as_str())), "{d:?}");
        assert_eq!(d.len() + NOT_SAMPLED.len(), crate::gpu::DEFAULT_SWITCHES.len());
    }

    /// The structural alternatives' defaults are the kernel's, and `switch_on` reads `-D`
    /// lists as NVRTC does (the last definition wins; `NAME` alone is 1).
    #[test]
    fn sampled_alternatives_defaults_and_switches() {
        let src = include_str!("../../kernels/sampled.cu");
        let def = |on: bool| if on { 1 } else { 0 };
        assert!(SAMPLED_JOBQ_DEFAULT && src.contains("#define WD_SAMP_JOBQ (WD_SAMP_DEFERRED || WD_SAMP_STEPWISE || WD_SAMP_SCAN)"));
        assert!(src.contains(&format!("#define WD_SAMP_RED {}", def(SAMPLED_RED_DEFAULT))));
        let v = |d: &[&str]| d.iter().map(|s| (*s).to_string()).collect::<Vec<_>>();
        assert!(!switch_on(&v(&["WD_FAST_RNG", "WD_SAMP_REDX=1"]), "WD_SAMP_RED", false));
        assert!(switch_on(&v(&["WD_SAMP_RED=1"]), "WD_SAMP_RED", false));
        assert!(switch_on(&v(&["WD_SAMP_RED"]), "WD_SAMP_RED", false));
        assert!(!switch_on(&v(&["WD_SAMP_RED=1", "WD_SAMP_RED=0"]), "WD_SAMP_RED", true));
        assert!(switch_on(&v(&[]), "WD_SAMP_RED", true));
        assert_eq!(define_value(&v(&["WD_SAMP_PATH=5", "WD_SAMP_PATH=7"]), "WD_SAMP_PATH"), Some(7));
        assert_eq!(define_value(&v(&["WD_SAMP_PATHS=5", "WD_SAMP_PATH=x"]), "WD_SAMP_PATH"), None);
        assert_eq!(define_value(&v(&["WD_SAMP_SPLIT"]), "WD_SAMP_SPLIT"), Some(1));
        // The split's host defaults are the kernel's.
        let split = include_str!("../../kernels/sampled_split.cu");
        assert!(split.contains(&format!("#define WD_SAMP_PATH {SPLIT_PATH}")));
        assert!(split.contains(&format!("#define WD_SAMP_BIN_BLOCK {SPLIT_BIN_BLOCK}")));
        assert!(split.contains(&format!("#define WD_SAMP_BIN_MIN_BLOCKS {SPLIT_BIN_BLOCKS}")));
        // The kernel keeps its job counter and the unsplit squares after the counters.
        assert!(src.contains("T.counters + WD_SAMP_COUNTERS, T.photon_lo, T.photon_hi"));
        assert!(src.contains("T.counters + WD_SAMP_COUNTERS + 1, 1ull"));
    }

    /// The batch means (WD_SAMP_REP) where sampled.cu can have them: the deferred queue with the
    /// split squares, not in the measurement builds; fewer replicas for very large tables.
    #[test]
    fn batch_means_only_where_the_kernel_has_them() {
        let v = |d: &[&str]| d.iter().map(|s| (*s).to_string()).collect::<Vec<_>>();
        let gib = 1u64 << 30;
        assert_eq!(sampled_reps(&v(&[]), 5_400, 80 * gib), SAMPLED_REP_DEFAULT);
        assert_eq!(sampled_reps(&v(&["WD_SAMP_REP=64"]), 5_400, 80 * gib), 64);
        assert_eq!(sampled_reps(&v(&["WD_SAMP_REP=0"]), 5_400, 80 * gib), 0);
        for d in [
            &["WD_SAMP_STEPWISE=1"][..],
            &["WD_SAMP_SCAN=1"],
            &["WD_SAMP_COMPACT=0"],
            &["WD_SAMP_DEFER=0"],
            &["WD_SAMP_SLOTS=0"],
            &["WD_SAMP_RED=0"],
            &["WD_SAMP_NOSQ=1"],
            &["WD_SAMP_SPLIT=1"],
            &["WD_SAMP_PHYSICS=1"],
            SAMPLED_EARLIER,
        ] {
            assert_eq!(sampled_reps(&v(d), 5_400, 80 * gib), 0, "{d:?}");
        }
        assert_eq!(
            sampled_reps(&v(&["WD_SAMP_JOBQ=0", "WD_BFR"]), 5_400, 80 * gib),
            SAMPLED_REP_DEFAULT
        );
        // Fewer replicas where their words would pass 1/8 of the free memory.
        assert_eq!(sampled_reps(&v(&[]), 1 << 20, 8 * gib), 64);
        assert_eq!(sampled_reps(&v(&[]), 1 << 24, 8 * gib), 0);
    }

    /// The memory guard: a histogram that does not fit says how much it needs and what to do.
    #[test]
    fn device_budget_refuses_what_does_not_fit() {
        let gib = 1u64 << 30;
        device_budget(1_000_000, 10_000, BATCH, 270_336, 8_500, 80 * gib, "cuda:0 test").unwrap();
        let e = device_budget(40_000_000, 1_000_000, BATCH, 270_336, 8_500, gib, "cuda:0 test").unwrap_err();
        let s = e.to_string();
        assert!(
            s.contains("radial_bins") && s.contains("cuda:0 test") && s.contains("use fewer bins"),
            "{s}"
        );
        // Saturating: absurd sizes are refused, not wrapped.
        assert!(device_budget(u64::MAX, u64::MAX, u64::MAX, 1, 1, u64::MAX, "x").is_err());
        assert_eq!(device_bytes(10, 2, 3, 4, 5), 240 + 32 + 24 + 64 + 20);
    }

    /// The azimuth planes' sines and cosines are the host's (the kernel does not compute them).
    #[test]
    fn azimuth_planes_are_the_host_sin_cos() {
        let e = [0.0, 20.0, 45.0, 180.0];
        let (s, c) = azimuth_planes(&e);
        assert_eq!(s.len(), 2);
        assert_eq!((s[1], c[1]), 45f64.to_radians().sin_cos());
    }

    /// The prebuilt tabulation images are the builds runs ask for in the shipped ice models
    /// (without and with birefringence).
    #[test]
    fn prebuilt_builds_are_the_ones_runs_ask_for() {
        let Some(data) = warpdrive_core::data::test_data_dir(env!("CARGO_MANIFEST_DIR")) else {
            return;
        };
        let builds = prebuilt_builds();
        for model in ["spice_3.2.1", "spice_ftp-v3m", "spice_bfr-v2"] {
            let det = crate::detector::Detector::build(&crate::detector::DetectorOptions {
                ice_dir: Some(data.join("ice").join(model)),
                ..Default::default()
            })
            .unwrap();
            let want = warpdrive_core::kernels::Build::new(KERNEL_NAME, KERNEL_SRC, true, kernel_defines(&det.medium, &[]));
            assert!(builds.contains(&want), "{model}: {:?} not prebuilt", want.defines);
            // As run_sampled_on makes it for the default bins (5 400 spatial cells) on a large GPU.
            let mut d = sampled_defines(&det.medium, &[]);
            let reps = sampled_reps(&d, 5_400, 80 << 30);
            with_reps(&mut d, reps);
            with_adaptive(
                &mut d,
                crate::tabulate::Estimator::default_for(true) == crate::tabulate::Estimator::adaptive(),
            );
            for shape in [super::super::Shape::Spherical, super::super::Shape::Cylindrical] {
                let mut d = d.clone();
                with_shape(&mut d, shape);
                let sampled = warpdrive_core::kernels::Build::new(SAMPLED_NAME, SAMPLED_SRC, false, d);
                assert!(builds.contains(&sampled), "{model}, {shape:?}: {:?} not prebuilt", sampled.defines);
            }
        }
    }

    #[test]
    fn wide_words_carry() {
        assert_eq!(wide(&[5, 0, u64::MAX, 2]), vec![5u128, u128::from(u64::MAX) | (2u128 << 64)]);
    }
}
