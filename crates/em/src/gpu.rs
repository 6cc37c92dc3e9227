//! The CUDA path of the mini-app (`kernels/kn.cu`): the same state, stacks and tally as
//! [`crate::transport`], one thread per track slot, iterations of `step` → `bin_hits` → `clear`
//! driven by the host until no track is alive. Compiled in precise mode; see the kernel header.

use crate::physics::PhysicsList;
use crate::transport::{RunOptions, RunResult};
use crate::xs::XsGrid;
use cudarc::driver::{CudaSlice, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg};
use std::mem::size_of;
use warpdrive_core::cuda::{self, GpuError};
use warpdrive_core::progress::Progress;

pub const KERNEL_NAME: &str = "kn.cu";
pub const KERNEL_SRC: &str = include_str!("../kernels/kn.cu");
pub const KERNELS: &[(&str, &str, &[&str])] = &[(KERNEL_NAME, KERNEL_SRC, &["init", "step", "bin_hits", "clear"])];
/// Kernel switches measured by `warpdrive bench em --device cuda`.
pub const SWITCHES: &[&str] = &["WD_MIN_BLOCKS=4"];
/// The switches of the default build: ≤ 64 registers for 4 blocks of 256 per SM (6.27e9 vs
/// 5.84e9 track-steps/s without on the H100 benchmark, docs/performance/em.md).
pub const DEFAULT_SWITCHES: &[&str] = &["WD_MIN_BLOCKS=4"];
const BLOCK: u32 = 256;
/// Iterations between reads of the alive counter.
const SYNC_EVERY: u64 = 4;

/// Twin of `EmParams` in kn.cu (device pointers as u64).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct EmParams {
    xs_energy: u64,
    xs_value: u64,
    log_front: f64,
    log_delta: f64,
    xs_size: u32,
    prime_index: u32,
    tally_front: f64,
    tally_delta: f64,
    tally_size: u32,
    slots: u32,
    seed: u64,
    first_track: u64,
    state: [u64; 14],
    hits: u64,
    hit_size: u64,
    hit_capacity: u32,
    secondaries: u64,
    secondary_size: u64,
    secondary_capacity: u32,
    tally: u64,
    totals: u64,
}
const _: () = assert!(size_of::<EmParams>() == 256);
const _: () = assert!(std::mem::offset_of!(EmParams, hits) == 192);
const _: () = assert!(std::mem::offset_of!(EmParams, totals) == 248);
// SAFETY: plain old data with the kernel's layout (checked above and by static_assert in kn.cu).
unsafe impl DeviceRepr for EmParams {}

fn ptr<T>(s: &CudaSlice<T>, st: &std::sync::Arc<cudarc::driver::CudaStream>) -> u64 {
    let (p, _sync) = s.device_ptr(st);
    p
}

/// Kernel timing and resources of a GPU run.
#[derive(Clone, Debug, Default)]
pub struct GpuStats {
    pub device: String,
    pub seconds: f64,
    pub registers: i32,
}

/// Run the mini-app on GPU `ordinal` (the physics list must be Compton only: the kernel holds
/// that one interactor).
pub fn run(physics: &PhysicsList, opts: &RunOptions, ordinal: usize, progress: &Progress) -> Result<(RunResult, GpuStats), GpuError> {
    let defines = default_defines();
    run_with(physics, opts, ordinal, progress, &defines)
}

/// Run on several GPUs: contiguous shares of the track ids, one host thread per GPU, results
/// added in device order. Tallies and totals are integers, so the result equals one GPU's.
pub fn run_devices(
    physics: &PhysicsList,
    opts: &RunOptions,
    devices: &[usize],
    progress: &Progress,
) -> Result<(RunResult, GpuStats), GpuError> {
    let defines = default_defines();
    let parts = cuda::split_across(devices, opts.tracks, |&d, share| {
        run_share(physics, opts, d, progress, &defines, share)
    });
    let mut res = RunResult {
        tally: vec![0; opts.tally.size],
        ..Default::default()
    };
    let mut stats = GpuStats::default();
    let mut names = Vec::new();
    for p in parts {
        let (r, st) = p?;
        res.add(&r);
        names.push(st.device);
        stats.seconds = stats.seconds.max(st.seconds);
        stats.registers = st.registers;
    }
    stats.device = names.join(", ");
    Ok((res, stats))
}

/// [`run`] with kernel switches (`-D` definitions from [`SWITCHES`]).
pub fn run_with(
    physics: &PhysicsList,
    opts: &RunOptions,
    ordinal: usize,
    progress: &Progress,
    defines: &[String],
) -> Result<(RunResult, GpuStats), GpuError> {
    run_share(physics, opts, ordinal, progress, defines, 0..opts.tracks)
}

/// The tracks with ids in `share` on GPU `ordinal`.
fn run_share(
    physics: &PhysicsList,
    opts: &RunOptions,
    ordinal: usize,
    progress: &Progress,
    defines: &[String],
    share: std::ops::Range<u64>,
) -> Result<(RunResult, GpuStats), GpuError> {
    let grid_xs: &XsGrid = match (physics.processes.len(), physics.processes[0].xs_grid()) {
        (1, Some(g)) if physics.processes[0].name() == "compt" => g,
        _ => return Err(GpuError::Other("the EM GPU kernel implements Compton scattering only".into())),
    };
    let gpu = cuda::open(ordinal)?;
    gpu.ctx.bind_to_thread()?;
    let (module, step) = cuda::load(&gpu, KERNEL_NAME, KERNEL_SRC, "step", true, defines)?;
    let bin_hits = module.load_function("bin_hits")?;
    let clear = module.load_function("clear")?;
    let init = module.load_function("init")?;
    let st = gpu.stream.clone();
    let slots = opts.slots.min(opts.tracks as usize);
    let xs_energy = st.clone_htod(&grid_xs.energy)?;
    let xs_value = st.clone_htod(&grid_xs.value)?;
    let hits = st.alloc_zeros::<f64>(2 * opts.hit_capacity.max(1) as usize)?;
    let secondaries = st.alloc_zeros::<f64>(4 * opts.secondary_capacity.max(1) as usize)?;
    let hit_size = st.alloc_zeros::<u32>(1)?;
    let secondary_size = st.alloc_zeros::<u32>(1)?;
    let tally = st.alloc_zeros::<u64>(opts.tally.size)?;
    let totals = st.alloc_zeros::<u64>(7)?;
    let t0 = std::time::Instant::now();
    let mut res = RunResult {
        tally: vec![0; opts.tally.size],
        ..Default::default()
    };
    let mut registers = 0;
    // Track state, allocated once and initialised on the device for every batch by `init`.
    let state_f64: Vec<CudaSlice<f64>> = (0..7).map(|_| st.alloc_zeros::<f64>(slots)).collect::<Result<_, _>>()?;
    let rng_block = st.alloc_zeros::<u32>(slots)?;
    let rng_buf = st.alloc_zeros::<u32>(4 * slots)?;
    let rng_used = st.alloc_zeros::<u8>(slots)?;
    let alive = st.alloc_zeros::<u8>(slots)?;
    let pending = st.alloc_zeros::<u8>(slots)?;
    let steps = st.alloc_zeros::<u32>(slots)?;
    let electrons = st.alloc_zeros::<u32>(slots)?;
    let mut state = [0u64; 14];
    for (k, s) in state_f64.iter().enumerate() {
        state[k] = ptr(s, &st);
    }
    state[7] = ptr(&rng_block, &st);
    state[8] = ptr(&rng_buf, &st);
    state[9] = ptr(&rng_used, &st);
    state[10] = ptr(&alive, &st);
    state[11] = ptr(&pending, &st);
    state[12] = ptr(&steps, &st);
    state[13] = ptr(&electrons, &st);
    let mut first = share.start;
    while first < share.end {
        // Asked to stop: the rest is skipped; the caller discards the partial result.
        if progress.should_stop() {
            break;
        }
        let n = (share.end - first).min(slots as u64) as usize;
        let p = EmParams {
            xs_energy: ptr(&xs_energy, &st),
            xs_value: ptr(&xs_value, &st),
            log_front: grid_xs.log_front,
            log_delta: grid_xs.log_delta,
            xs_size: grid_xs.value.len() as u32,
            prime_index: grid_xs.prime_index as u32,
            tally_front: opts.tally.front,
            tally_delta: opts.tally.delta,
            tally_size: opts.tally.size as u32,
            slots: n as u32,
            seed: opts.seed,
            first_track: first,
            state,
            hits: ptr(&hits, &st),
            hit_size: ptr(&hit_size, &st),
            hit_capacity: opts.hit_capacity,
            secondaries: ptr(&secondaries, &st),
            secondary_size: ptr(&secondary_size, &st),
            secondary_capacity: opts.secondary_capacity,
            tally: ptr(&tally, &st),
            totals: ptr(&totals, &st),
        };
        let cfg = |threads: u32| LaunchConfig {
            grid_dim: (threads.div_ceil(BLOCK).max(1), 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let one = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1, 1, 1),
            shared_mem_bytes: 0,
        };
        // Fresh tracks in the first n slots: at the origin along +z with the primary energy.
        {
            let mut l = st.launch_builder(&init);
            l.arg(&p).arg(&opts.energy);
            // SAFETY: `init` writes slot s < p.slots of the state arrays, which hold `slots` ≥ n.
            unsafe { l.launch(cfg(n as u32)) }?;
        }
        // Start with empty stacks and the alive counter at zero.
        {
            let mut l = st.launch_builder(&clear);
            l.arg(&p);
            // SAFETY: `p` points at live allocations of this function; `clear` writes three counters.
            unsafe { l.launch(one) }?;
        }
        let mut done_before = 0u64;
        loop {
            let mut l = st.launch_builder(&step);
            l.arg(&p);
            // SAFETY: every state array holds `slots` entries, the stacks their capacities.
            unsafe { l.launch(cfg(n as u32)) }?;
            let mut l = st.launch_builder(&bin_hits);
            l.arg(&p);
            // SAFETY: as above; grid-stride over at most hit_capacity hits.
            // A few blocks per SM, each folding many hits into its shared-memory tally.
            unsafe { l.launch(cfg(opts.hit_capacity.min(gpu.multiprocessors as u32 * 4 * BLOCK))) }?;
            // The alive count is read back (a synchronisation) every SYNC_EVERY iterations only;
            // iterations after the last track died cost one near-empty launch each.
            res.iterations += 1;
            let t = if res.iterations.is_multiple_of(SYNC_EVERY) {
                Some(st.clone_dtoh(&totals)?)
            } else {
                None
            };
            let mut l = st.launch_builder(&clear);
            l.arg(&p);
            // SAFETY: as above.
            unsafe { l.launch(one) }?;
            let Some(t) = t else { continue };
            if progress.should_stop() {
                break;
            }
            let alive_now = t[2];
            let done = n as u64 - alive_now;
            progress.add(done - done_before);
            done_before = done;
            if alive_now == 0 {
                break;
            }
            if res.iterations > 1_000_000 {
                return Err(GpuError::Other("the EM loop did not finish within 10⁶ iterations".into()));
            }
        }
        registers = step.num_regs().unwrap_or(0);
        first += n as u64;
    }
    let t = st.clone_dtoh(&totals)?;
    let tally_h = st.clone_dtoh(&tally)?;
    res.tally.copy_from_slice(&tally_h);
    res.edep_total = u128::from(t[0]);
    // Σ edep·z: a 128-bit two's-complement sum, low word in [1], high word in [6].
    res.edep_z = ((u128::from(t[6]) << 64) | u128::from(t[1])) as i128;
    res.steps = t[3];
    res.secondaries = t[4];
    res.retries = t[5];
    res.tracks = share.end - share.start;
    Ok((
        res,
        GpuStats {
            device: gpu.name.clone(),
            seconds: t0.elapsed().as_secs_f64(),
            registers,
        },
    ))
}

/// The builds `warpdrive doctor` checks (precise only: the CPU and GPU tallies must match).
pub fn kernel_sets() -> Vec<warpdrive_core::doctor::KernelSet> {
    let mut sets = warpdrive_core::doctor::KernelSet::fixed(KERNELS, SWITCHES, false);
    sets.extend(crate::geo::gpu::kernel_sets());
    sets
}

/// The build runs ask for (precise, the default switches), for `doctor --prebuild`.
#[must_use]
pub fn prebuilt_builds() -> Vec<warpdrive_core::kernels::Build> {
    vec![warpdrive_core::kernels::Build::new(
        KERNEL_NAME,
        KERNEL_SRC,
        true,
        default_defines(),
    )]
}

fn default_defines() -> Vec<String> {
    DEFAULT_SWITCHES.iter().map(|d| d.to_string()).collect()
}
