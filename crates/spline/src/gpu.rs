//! The CUDA path (`kernels/spline.cu`): batch evaluation of a table (value or value +
//! gradient) and Millipede's response matrix. Each table's orders are compiled into the kernel
//! (`-DWD_ORDERS=2,2,2,3`; PTX cached per shape); `-DWD_WINDOW=1` switches to the redundant
//! window layout of [`crate::layout`].

use crate::layout::Layout;
use crate::millipede::model::{Bins, Model, Response, Source};
use crate::SplineTable;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg};
use std::mem::size_of;
use std::sync::Arc;
use std::time::Instant;
use warpdrive_core::cuda::{self, GpuError};

pub const KERNEL_NAME: &str = "spline.cu";
pub const KERNEL_SRC: &str = include_str!("../kernels/spline.cu");
pub const KERNELS: &[(&str, &str, &[&str])] = &[(KERNEL_NAME, KERNEL_SRC, &["eval_points", "response"])];
/// Switches compiled by `doctor --compile-only` (layout, gradient, and table shapes beyond the
/// default 4-D one: 1-D and the 5-D mixed-order test table); `warpdrive bench spline` measures
/// the layouts.
pub const SWITCHES: &[&str] = &["WD_WINDOW=1", "WD_GRAD", "WD_ORDERS=2", "WD_ORDERS=2,2,2,2,3"];
const BLOCK: u32 = 256;

/// Twin of `TableDev` in spline.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct TableDev {
    knots: u64,
    coef: u64,
    stride: [i64; 8],
    knot_off: [i32; 8],
    nknots: [i32; 8],
    naxes: [i32; 8],
    lo: [f64; 8],
    hi: [f64; 8],
}
const _: () = assert!(size_of::<TableDev>() == 304);
// SAFETY: plain old data with the kernel's layout (size checked here and in spline.cu).
unsafe impl DeviceRepr for TableDev {}

/// Twin of `ResponseParams` in spline.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct ResponseParams {
    dom_pos: u64,
    dom_scale: u64,
    first_row: u64,
    rows: u64,
    first_edge: u64,
    edges: u64,
    sources: u64,
    out: u64,
    ndoms: u32,
    nsources: u32,
    yield_per_gev: f64,
    t_geo_per_m: f64,
    timing: i32,
    pad: i32,
}
const _: () = assert!(size_of::<ResponseParams>() == 96);
// SAFETY: as TableDev.
unsafe impl DeviceRepr for ResponseParams {}

fn ptr<T>(s: &CudaSlice<T>, st: &Arc<CudaStream>) -> u64 {
    let (p, _sync) = s.device_ptr(st);
    p
}

/// `-D` definition of a table's orders for the kernel (`WD_ORDERS=2,2,2,3`).
pub fn orders_define(name: &str, t: &SplineTable) -> String {
    orders_list_define(name, &t.order)
}

fn orders_list_define(name: &str, order: &[u32]) -> String {
    let o: Vec<String> = order.iter().map(u32::to_string).collect();
    format!("{name}={}", o.join(","))
}

/// The switches of `eval_points` for a table of orders `order`.
fn eval_defines(order: &[u32], window: bool, gradient: bool) -> Vec<String> {
    defines(&[orders_list_define("WD_ORDERS", order)], window, gradient)
}

/// The switches of `response` for amplitude and timing tables of these orders.
fn response_defines(amplitude: &[u32], timing: Option<&[u32]>, window: bool) -> Vec<String> {
    let mut defs = vec![orders_list_define("WD_AMP_ORDERS", amplitude)];
    if let Some(t) = timing {
        defs.push(orders_list_define("WD_TIME_ORDERS", t));
    }
    defines(&defs, window, false)
}

/// The builds of the table shapes photospline users bring, for `doctor --prebuild`
/// (`Default`) and `doctor --prepare` (`All`). `eval_points`: 1 to 6 dimensions of order 2, of
/// order 3, and of order 2 with order 3 in the last dimension (IceCube's timing tables), window
/// layout, fast — and for the shapes of the shipped cascade tables (2,2,2 and 2,2,2,3) also
/// precise and with gradients; `All` adds those for every shape, and orders 1, 4 and 5. `response`:
/// the amplitude/timing pair of the shipped cascade tables, fast and precise; `All` adds 3- to
/// 6-D amplitude tables of order 2 with and without a timing table of one more dimension
/// ending in order 3.
#[must_use]
pub fn prebuilt_builds(scope: warpdrive_core::kernels::Scope) -> Vec<warpdrive_core::kernels::Build> {
    use warpdrive_core::kernels::{Build, Scope};
    let all = scope == Scope::All;
    let mut shapes: Vec<Vec<u32>> = Vec::new();
    let uniform: &[u32] = if all { &[1, 2, 3, 4, 5] } else { &[2, 3] };
    for dims in 1..=6usize {
        for &o in uniform {
            shapes.push(vec![o; dims]);
        }
        if dims > 1 {
            let mut s = vec![2; dims];
            s[dims - 1] = 3;
            shapes.push(s);
        }
    }
    let mut pairs: Vec<(Vec<u32>, Option<Vec<u32>>)> = vec![(vec![2, 2, 2], Some(vec![2, 2, 2, 3]))];
    if all {
        for dims in 3..=6usize {
            let mut t = vec![2; dims + 1];
            t[dims] = 3;
            pairs.push((vec![2; dims], None));
            if dims > 3 && dims < 6 {
                pairs.push((vec![2; dims], Some(t)));
            }
        }
    }

    let mut out: Vec<Build> = crate::fit::gpu::KERNELS
        .iter()
        .map(|&(name, src, _)| Build::new(name, src, true, Vec::new()))
        .collect();
    let shipped = |s: &[u32]| s == [2, 2, 2] || s == [2, 2, 2, 3];
    for precise in [false, true] {
        for s in shapes.iter().filter(|s| all || !precise || shipped(s)) {
            let gradients: &[bool] = if all || shipped(s) { &[false, true] } else { &[false] };
            for &g in gradients {
                out.push(Build::new(KERNEL_NAME, KERNEL_SRC, precise, eval_defines(s, true, g)));
            }
        }
        for (a, t) in &pairs {
            out.push(Build::new(
                KERNEL_NAME,
                KERNEL_SRC,
                precise,
                response_defines(a, t.as_deref(), true),
            ));
        }
    }
    out
}

/// A table on the device (the allocations must outlive the `TableDev`).
struct DeviceTable {
    _knots: CudaSlice<f64>,
    _coef: CudaSlice<f32>,
    dev: TableDev,
    layout_bytes: usize,
}

fn upload(st: &Arc<CudaStream>, t: &SplineTable, window: bool) -> Result<DeviceTable, GpuError> {
    let layout = if window {
        Layout::window(t).unwrap_or_else(|| Layout::standard(t))
    } else {
        Layout::standard(t)
    };
    let flat: Vec<f64> = t.knots.iter().flatten().copied().collect();
    let knots = st.clone_htod(&flat)?;
    let coef = st.clone_htod(&layout.coefficients)?;
    let mut dev = TableDev {
        knots: ptr(&knots, st),
        coef: ptr(&coef, st),
        ..Default::default()
    };
    let mut off = 0;
    for d in 0..t.ndim() {
        dev.stride[d] = layout.strides[d] as i64;
        dev.knot_off[d] = off as i32;
        dev.nknots[d] = t.knots[d].len() as i32;
        dev.naxes[d] = t.naxes[d] as i32;
        dev.lo[d] = t.extents[d][0];
        dev.hi[d] = t.extents[d][1];
        off += t.knots[d].len();
    }
    Ok(DeviceTable {
        _knots: knots,
        _coef: coef,
        dev,
        layout_bytes: layout.bytes(),
    })
}

/// How to evaluate on the GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EvalOptions {
    /// Read the redundant window layout.
    pub window: bool,
    /// Value and gradient (ndim + 1 floats per point) instead of the value.
    pub gradient: bool,
    /// Launch the kernel this many times (≥ 1) and report the fastest (benchmarks).
    pub repeats: usize,
    /// IEEE arithmetic (no fast-math intrinsics, no fused multiply-add): slower, closer to the
    /// CPU path's rounding.
    pub precise: bool,
}

/// Timings of a GPU evaluation.
#[derive(Clone, Debug, Default)]
pub struct EvalStats {
    pub device: String,
    /// Fastest kernel time [s].
    pub kernel_s: f64,
    pub upload_s: f64,
    pub download_s: f64,
    pub registers: i32,
    pub local_bytes: i32,
    /// Coefficient array bytes on the device in the layout used.
    pub layout_bytes: usize,
}

fn defines(extra: &[String], window: bool, gradient: bool) -> Vec<String> {
    let mut d = extra.to_vec();
    if window {
        d.push("WD_WINDOW=1".into());
    }
    if gradient {
        d.push("WD_GRAD".into());
    }
    d
}

/// Run `launch` `repeats` (≥ 1) times, each to completion; the fastest wall time [s].
fn fastest_of(st: &Arc<CudaStream>, repeats: usize, mut launch: impl FnMut() -> Result<(), GpuError>) -> Result<f64, GpuError> {
    let mut best = f64::INFINITY;
    for _ in 0..repeats.max(1) {
        let t = Instant::now();
        launch()?;
        st.synchronize()?;
        best = best.min(t.elapsed().as_secs_f64());
    }
    Ok(best)
}

/// Evaluate `points` (row-major, ndim each) on GPU `ordinal`: one float per point, or
/// ndim + 1 (value, gradient) with `opts.gradient`, in one batch (benchmarks and checks; runs
/// go through [`evaluate_chunked`]).
pub fn evaluate(t: &SplineTable, points: &[f64], ordinal: usize, opts: &EvalOptions) -> Result<(Vec<f32>, EvalStats), GpuError> {
    evaluate_chunked(t, points, ordinal, opts, usize::MAX, |_| true)
}

/// Evaluate `points` in batches of at most `chunk` points (upload, launch, download each), so
/// the device holds a bounded buffer whatever the number of points and the caller hears after
/// every batch: `after(points done in it)` returning false stops before the next batch (the
/// result then holds only the batches done). Table, kernel and buffers are set up once.
pub fn evaluate_chunked(
    t: &SplineTable,
    points: &[f64],
    ordinal: usize,
    opts: &EvalOptions,
    chunk: usize,
    mut after: impl FnMut(usize) -> bool,
) -> Result<(Vec<f32>, EvalStats), GpuError> {
    let nd = t.ndim();
    if !points.len().is_multiple_of(nd) {
        return Err(GpuError::Other(format!("{} coordinates are not a multiple of {nd}", points.len())));
    }
    let n = points.len() / nd;
    let batch = chunk.clamp(1, n.max(1));
    let gpu = cuda::open(ordinal)?;
    gpu.ctx.bind_to_thread()?;
    let defs = eval_defines(&t.order, opts.window, opts.gradient);
    let (_module, f) = cuda::load(&gpu, KERNEL_NAME, KERNEL_SRC, "eval_points", opts.precise, &defs)?;
    let res = cuda::resources(&f)?;
    let st = gpu.stream.clone();
    let table = upload(&st, t, opts.window)?;
    let per = if opts.gradient { nd + 1 } else { 1 };
    let mut x = st.alloc_zeros::<f64>(batch * nd)?;
    let mut out = st.alloc_zeros::<f32>(batch * per)?;
    let mut values = vec![0f32; n * per];
    let mut stats = EvalStats {
        device: gpu.name.clone(),
        registers: res.registers,
        local_bytes: res.local_bytes,
        layout_bytes: table.layout_bytes,
        ..Default::default()
    };
    let mut done = 0;
    while done < n {
        let m = batch.min(n - done);
        let t0 = Instant::now();
        st.memcpy_htod(&points[done * nd..(done + m) * nd], &mut x)?;
        st.synchronize()?;
        stats.upload_s += t0.elapsed().as_secs_f64();
        let cfg = LaunchConfig {
            grid_dim: ((m as u32).div_ceil(BLOCK).max(1), 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let count = m as u64;
        stats.kernel_s += fastest_of(&st, opts.repeats, || {
            let mut l = st.launch_builder(&f);
            l.arg(&table.dev).arg(&x).arg(&count).arg(&mut out);
            // SAFETY: `x` holds at least m·nd doubles, `out` m·per floats; the table's arrays are alive.
            unsafe { l.launch(cfg) }?;
            Ok(())
        })?;
        let t2 = Instant::now();
        st.memcpy_dtoh(&out.slice(0..m * per), &mut values[done * per..(done + m) * per])?;
        st.synchronize()?;
        stats.download_s += t2.elapsed().as_secs_f64();
        done += m;
        if !after(m) {
            values.truncate(done * per);
            break;
        }
    }
    Ok((values, stats))
}

/// Build Λ on GPU `ordinal` (same rows and columns as [`crate::millipede::model::response`]);
/// with `opts`' layout, arithmetic and repeats (its `gradient` is ignored); the stats' `kernel_s`
/// is the fastest of `opts.repeats` kernel launches.
pub fn response(
    model: &Model,
    bins: &Bins,
    sources: &[Source],
    ordinal: usize,
    opts: &EvalOptions,
) -> Result<(Response, EvalStats), GpuError> {
    let window = opts.window;
    let gpu = cuda::open(ordinal)?;
    gpu.ctx.bind_to_thread()?;
    let defs = response_defines(&model.amplitude.order, model.timing.as_ref().map(|t| t.order.as_slice()), window);
    let (_module, f) = cuda::load(&gpu, KERNEL_NAME, KERNEL_SRC, "response", opts.precise, &defs)?;
    let res = cuda::resources(&f)?;
    let st = gpu.stream.clone();
    let amp = upload(&st, &model.amplitude, window)?;
    // Amplitude-only models pass the amplitude table in the timing slot; the kernel does not
    // read it then.
    let tim = upload(&st, model.timing.as_ref().unwrap_or(&model.amplitude), window)?;
    let t0 = Instant::now();
    let pos: Vec<f64> = bins.doms.iter().flat_map(|d| d.pos).collect();
    let scale: Vec<f64> = bins.doms.iter().map(|d| d.scale).collect();
    let first_row: Vec<u32> = bins.doms.iter().map(|d| d.first_row as u32).collect();
    let rows: Vec<u32> = bins.doms.iter().map(|d| d.rows as u32).collect();
    let first_edge: Vec<u32> = bins.doms.iter().map(|d| d.first_edge as u32).collect();
    // Per source: position, direction, time, and its (clamped) values on the amplitude and the
    // timing table's source axes (zeros for tables without them; the kernel then reads none).
    let src: Vec<f64> = sources
        .iter()
        .flat_map(|s| {
            let (a, t) = model.locate(s).values();
            [
                s.pos[0], s.pos[1], s.pos[2], s.dir[0], s.dir[1], s.dir[2], s.time, a[0], a[1], t[0], t[1],
            ]
        })
        .collect();
    let d_pos = st.clone_htod(&pos)?;
    let d_scale = st.clone_htod(&scale)?;
    let d_first_row = st.clone_htod(&first_row)?;
    let d_rows = st.clone_htod(&rows)?;
    let d_first_edge = st.clone_htod(&first_edge)?;
    let d_edges = st.clone_htod(&bins.edges)?;
    let d_src = st.clone_htod(&src)?;
    let out = st.alloc_zeros::<f64>((bins.rows() * sources.len()).max(1))?;
    st.synchronize()?;
    let upload_s = t0.elapsed().as_secs_f64();
    let p = ResponseParams {
        dom_pos: ptr(&d_pos, &st),
        dom_scale: ptr(&d_scale, &st),
        first_row: ptr(&d_first_row, &st),
        rows: ptr(&d_rows, &st),
        first_edge: ptr(&d_first_edge, &st),
        edges: ptr(&d_edges, &st),
        sources: ptr(&d_src, &st),
        out: ptr(&out, &st),
        ndoms: bins.doms.len() as u32,
        nsources: sources.len() as u32,
        yield_per_gev: model.yield_per_gev,
        t_geo_per_m: model.t_geo(1.0),
        timing: i32::from(model.timing.is_some()),
        pad: 0,
    };
    let threads = bins.doms.len() as u64 * sources.len() as u64;
    let cfg = LaunchConfig {
        grid_dim: ((threads as u32).div_ceil(BLOCK).max(1), 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    let best = fastest_of(&st, opts.repeats, || {
        let mut l = st.launch_builder(&f);
        l.arg(&amp.dev).arg(&tim.dev).arg(&p);
        // SAFETY: every pointer in `p` is a live allocation sized from `bins` and `sources`.
        unsafe { l.launch(cfg) }?;
        Ok(())
    })?;
    let t2 = Instant::now();
    let mut values = st.clone_dtoh(&out)?;
    values.truncate(bins.rows() * sources.len());
    let download_s = t2.elapsed().as_secs_f64();
    Ok((
        Response {
            rows: bins.rows(),
            cols: sources.len(),
            values,
        },
        EvalStats {
            device: gpu.name.clone(),
            kernel_s: best,
            upload_s,
            download_s,
            registers: res.registers,
            local_bytes: res.local_bytes,
            layout_bytes: amp.layout_bytes + tim.layout_bytes,
        },
    ))
}

/// The builds `warpdrive doctor` checks: the evaluator fast and precise, the fitter's kernels
/// precise only (they must equal the CPU bit for bit).
pub fn kernel_sets() -> Vec<warpdrive_core::doctor::KernelSet> {
    let mut sets = warpdrive_core::doctor::KernelSet::fixed(KERNELS, SWITCHES, true);
    sets.extend(warpdrive_core::doctor::KernelSet::fixed(crate::fit::gpu::KERNELS, &[], false));
    sets
}
