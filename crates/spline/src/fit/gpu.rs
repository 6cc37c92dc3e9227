//! The fitter on a GPU: the same penalized least squares as [`Problem::solve`], every step a
//! kernel that twins the CPU function of the same name — GLAM's ρ and the normal matrix
//! (`kernels/glam.cu`), the penalty (`kernels/penalty.cu`), the blocked Cholesky factor and the
//! two triangular solves (`kernels/cholesky.cu`). Each kernel performs the CPU's floating-point
//! operations in the CPU's order, rounded one by one (no fused multiply-add), so the coefficients
//! equal the CPU's bit for bit; `warpdrive gpu-check` (spline) asserts it.
//!
//! The dense normal matrix (n² doubles, 0.8 GB for 10⁴ coefficients) is built and factored on the
//! device; only the histogram's weights and values go up and the n coefficients come down.

use super::glam::{self, Op};
use super::{cholesky, Fit, Problem};
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg};
use std::mem::size_of;
use std::sync::Arc;
use std::time::Instant;
use warpdrive_core::cuda;
use warpdrive_core::engine::{Cancelled, Error, ParamError};
use warpdrive_core::progress::Progress;

pub const GLAM_NAME: &str = "glam.cu";
pub const GLAM_SRC: &str = include_str!("../../kernels/glam.cu");
pub const PENALTY_NAME: &str = "penalty.cu";
pub const PENALTY_SRC: &str = include_str!("../../kernels/penalty.cu");
pub const CHOLESKY_NAME: &str = "cholesky.cu";
pub const CHOLESKY_SRC: &str = include_str!("../../kernels/cholesky.cu");
/// The fitter's kernels (file, source, functions), for `warpdrive doctor`. They are always
/// built precise (IEEE arithmetic, no contraction): CPU and GPU must agree bit for bit.
pub const KERNELS: &[(&str, &str, &[&str])] = &[
    (GLAM_NAME, GLAM_SRC, &["rho", "normal_matrix"]),
    (PENALTY_NAME, PENALTY_SRC, &["add_kron_penalty"]),
    (
        CHOLESKY_NAME,
        CHOLESKY_SRC,
        &[
            "diagonal",
            "factor_diagonal_block",
            "solve_panel",
            "update_trailing",
            "solve_lower",
            "solve_upper",
        ],
    ),
];

const THREADS: u32 = 256;
/// Threads of the single-block triangular solves.
const SOLVE_THREADS: u32 = 1024;
/// Edge of `update_trailing`'s tiles (TT in cholesky.cu).
const TILE: usize = 64;

/// Twin of `PivotStatus` in cholesky.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct PivotStatus {
    index: i64,
    pivot: f64,
    diagonal: f64,
}
const _: () = assert!(size_of::<PivotStatus>() == 24);
// SAFETY: plain old data with the kernel's layout.
unsafe impl DeviceRepr for PivotStatus {}

/// Twin of `NormalDev` in glam.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct NormalDev {
    cs: [u64; 8],
    bs: [u64; 8],
    n_ax: [i32; 8],
    w: [i32; 8],
    k: [i32; 8],
    nd: i32,
    support: i32,
    n: u64,
}
const _: () = assert!(size_of::<NormalDev>() == 240);
// SAFETY: as PivotStatus.
unsafe impl DeviceRepr for NormalDev {}

/// Where a GPU fit spent its time [s] (each phase synchronised).
#[derive(Clone, Debug, Default)]
pub struct GpuFitStats {
    pub device: String,
    /// Compiling or loading the kernels.
    pub load_s: f64,
    /// Histogram up, GLAM contractions, normal matrix and penalties.
    pub assemble_s: f64,
    /// The Cholesky factor.
    pub factor_s: f64,
    /// The two triangular solves and the coefficients down.
    pub solve_s: f64,
    /// The fitted values and χ² (on the CPU, as [`Problem::solve`] computes them).
    pub finish_s: f64,
}

/// Bytes of device memory a fit of `problem` needs: the dense matrix, and the two largest arrays
/// of a GLAM contraction (input and result).
pub fn device_bytes(problem: &Problem) -> u64 {
    let n: u64 = problem.naxes().iter().map(|&m| m as u64).product();
    let shape: Vec<usize> = problem.hist.centers.iter().map(Vec::len).collect();
    let band_rows: Vec<usize> = problem.bases.iter().map(|b| b.n * (2 * b.k + 1)).collect();
    let largest = glam::largest_intermediate(&band_rows, &shape);
    8 * (n.saturating_mul(n) + 2 * largest + 2 * n)
}

fn grid(count: u64) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (count.div_ceil(u64::from(THREADS)).max(1) as u32, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// ρ(X_{N−1}, … ρ(X_0, A)…) on the device (twin of [`glam::kron_apply`]); `step` after each axis.
fn kron_apply(
    st: &Arc<CudaStream>,
    rho: &CudaFunction,
    ops: &[Op],
    a: CudaSlice<f64>,
    mut step: impl FnMut() -> Result<(), Cancelled>,
) -> Result<CudaSlice<f64>, Error> {
    let mut a = a;
    for x in ops {
        let (off, cols, vals) = x.by_rows();
        let (off, cols, vals) = (st.clone_htod(&off)?, st.clone_htod(&cols)?, st.clone_htod(&vals)?);
        let rest = (a.len() / x.cols().max(1)) as u64;
        let rows = x.rows as u32;
        let count = rest * u64::from(rows);
        let mut out = st.alloc_zeros::<f64>(count as usize)?;
        let mut l = st.launch_builder(rho);
        l.arg(&off).arg(&cols).arg(&vals).arg(&rows).arg(&a).arg(&rest).arg(&mut out);
        // SAFETY: `a` holds cols·rest doubles, `out` rest·rows; the CSR arrays describe X.
        unsafe { l.launch(grid(count)) }?;
        st.synchronize()?;
        a = out;
        step()?;
    }
    Ok(a)
}

/// Solve `problem` on GPU `ordinal` (progress and cancellation as [`Problem::solve`]).
pub fn solve(problem: &Problem, ordinal: usize, progress: &Progress) -> Result<(Fit, GpuFitStats), Error> {
    if let Some(d) = problem.monodim {
        return Err(ParamError::new(
            "monodim",
            format!("= {d}: monotonic fits run on the CPU (the GPU fitter has no non-negative solver)"),
        )
        .into());
    }
    let t0 = Instant::now();
    let gpu = cuda::open(ordinal)?;
    gpu.ctx.bind_to_thread()?;
    let need = device_bytes(problem);
    if need > gpu.total_memory as u64 / 10 * 9 {
        return Err(ParamError::new(
            "knots",
            format!(
                "make a fit that needs {:.1} GB on the GPU ({} has {:.1} GB): the dense normal matrix grows as the square of the coefficients; use fewer knots or fit on the CPU",
                need as f64 / 1e9,
                gpu.name,
                gpu.total_memory as f64 / 1e9
            ),
        )
        .into());
    }
    let load = |name: &str, src: &str, f: &str| cuda::load(&gpu, name, src, f, true, &[]);
    let (_g, rho) = load(GLAM_NAME, GLAM_SRC, "rho")?;
    let (_g2, normal) = load(GLAM_NAME, GLAM_SRC, "normal_matrix")?;
    let (_p, penalty_k) = load(PENALTY_NAME, PENALTY_SRC, "add_kron_penalty")?;
    let (_c, diag_k) = load(CHOLESKY_NAME, CHOLESKY_SRC, "factor_diagonal_block")?;
    let (_c2, panel_k) = load(CHOLESKY_NAME, CHOLESKY_SRC, "solve_panel")?;
    let (_c3, trailing_k) = load(CHOLESKY_NAME, CHOLESKY_SRC, "update_trailing")?;
    let (_c4, lower_k) = load(CHOLESKY_NAME, CHOLESKY_SRC, "solve_lower")?;
    let (_c5, upper_k) = load(CHOLESKY_NAME, CHOLESKY_SRC, "solve_upper")?;
    let (_c6, diagonal_k) = load(CHOLESKY_NAME, CHOLESKY_SRC, "diagonal")?;
    let st = gpu.stream.clone();
    let mut stats = GpuFitStats {
        device: gpu.name.clone(),
        load_s: t0.elapsed().as_secs_f64(),
        ..Default::default()
    };

    // 1. BᵀWB + Σ λ_d P_d and BᵀWz (Problem::normal_equations).
    let t1 = Instant::now();
    let mut step = super::contraction_step(progress);
    let band_ops: Vec<Op> = problem.bases.iter().map(Op::row_tensor_band).collect();
    let w = st.clone_htod(problem.hist.w)?;
    let band = kron_apply(&st, &rho, &band_ops, w, &mut step)?;
    drop(band_ops);
    let n_ax = problem.naxes();
    let nd = n_ax.len();
    let n: usize = n_ax.iter().product();
    let mut p = NormalDev {
        nd: nd as i32,
        n: n as u64,
        ..Default::default()
    };
    for d in 0..nd {
        p.n_ax[d] = n_ax[d] as i32;
        p.k[d] = problem.bases[d].k as i32;
        p.w[d] = 2 * p.k[d] + 1;
    }
    p.cs[nd - 1] = 1;
    p.bs[nd - 1] = 1;
    for d in (0..nd - 1).rev() {
        p.cs[d] = p.cs[d + 1] * n_ax[d + 1] as u64;
        p.bs[d] = p.bs[d + 1] * (n_ax[d + 1] as u64) * p.w[d + 1] as u64;
    }
    p.support = p.w[..nd].iter().product();
    let mut m = st.alloc_zeros::<f64>(n * n)?;
    {
        let mut l = st.launch_builder(&normal);
        l.arg(&p).arg(&band).arg(&mut m);
        // SAFETY: `band` is the banded array of these bases, `m` holds n² doubles.
        unsafe { l.launch(grid(n as u64 * p.support as u64)) }?;
    }
    drop(band);
    for d in 0..nd {
        if let Some(g) = &problem.grams[d] {
            let na = n_ax[d];
            let dtd: Vec<f64> = g.iter().flat_map(|row| row.iter().copied()).collect();
            let dtd = st.clone_htod(&dtd)?;
            let stride: u64 = n_ax[d + 1..].iter().map(|&v| v as u64).product();
            let (n64, na32, lambda, po) = (n as u64, na as i32, problem.smooth[d], problem.penalty_order[d] as i32);
            let mut l = st.launch_builder(&penalty_k);
            l.arg(&mut m).arg(&n64).arg(&stride).arg(&na32).arg(&lambda).arg(&dtd).arg(&po);
            // SAFETY: `m` is n × n, `dtd` na × na; rows index within them.
            unsafe { l.launch(grid(n as u64)) }?;
            st.synchronize()?;
        }
    }
    let rhs_ops: Vec<Op> = problem.bases.iter().map(Op::basis_transposed).collect();
    let wz = st.clone_htod(&problem.weighted_values())?;
    let mut rhs = kron_apply(&st, &rho, &rhs_ops, wz, &mut step)?;
    st.synchronize()?;
    stats.assemble_s = t1.elapsed().as_secs_f64();

    // 2. The factor, block column by block column (cholesky::factor).
    let t2 = Instant::now();
    let n64 = n as i64;
    let mut diag = st.alloc_zeros::<f64>(n)?;
    {
        let mut l = st.launch_builder(&diagonal_k);
        l.arg(&m).arg(&n64).arg(&mut diag);
        // SAFETY: `m` is n × n, `diag` n doubles.
        unsafe { l.launch(grid(n as u64)) }?;
    }
    let fresh = PivotStatus {
        index: -1,
        ..Default::default()
    };
    let mut status = st.clone_htod(&[fresh])?;
    let tol = cholesky::pivot_tolerance(n);
    let mut kb = 0usize;
    while kb < n {
        let b = cholesky::BLOCK.min(n - kb);
        let (kb64, b32) = (kb as i64, b as i32);
        {
            let mut l = st.launch_builder(&diag_k);
            l.arg(&mut m).arg(&n64).arg(&kb64).arg(&b32).arg(&diag).arg(&tol).arg(&mut status);
            let cfg = LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: (cholesky::BLOCK as u32, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: rows kb..kb+b of the n × n matrix exist; one block of 64 threads.
            unsafe { l.launch(cfg) }?;
        }
        let s = st.clone_dtoh(&status)?[0];
        if s.index >= 0 {
            return Err(problem.singular(s.index as usize, s.pivot, s.diagonal).into());
        }
        let end = kb + b;
        if end < n {
            let rows = (n - end) as u64;
            let mut l = st.launch_builder(&panel_k);
            l.arg(&mut m).arg(&n64).arg(&kb64).arg(&b32);
            // SAFETY: one thread per row below the block.
            unsafe { l.launch(grid(rows)) }?;
            let tiles = (n - end).div_ceil(TILE) as u32;
            let mut l = st.launch_builder(&trailing_k);
            l.arg(&mut m).arg(&n64).arg(&kb64).arg(&b32);
            let cfg = LaunchConfig {
                grid_dim: (tiles, tiles, 1),
                block_dim: (16, 16, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: tiles cover the trailing matrix; threads outside it do not write.
            unsafe { l.launch(cfg) }?;
        }
        progress.add(b as u64);
        kb = end;
        if progress.should_stop() {
            return Err(Error::Cancelled(Cancelled));
        }
    }
    st.synchronize()?;
    stats.factor_s = t2.elapsed().as_secs_f64();

    // 3. L Lᵀ x = BᵀWz.
    let t3 = Instant::now();
    let one_block = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (SOLVE_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    for f in [&lower_k, &upper_k] {
        let mut l = st.launch_builder(f);
        l.arg(&m).arg(&n64).arg(&mut rhs);
        // SAFETY: `m` holds the factor (n × n), `rhs` n doubles.
        unsafe { l.launch(one_block) }?;
    }
    let coefficients = st.clone_dtoh(&rhs)?;
    stats.solve_s = t3.elapsed().as_secs_f64();
    let t4 = Instant::now();
    let fit = problem.finish(coefficients);
    stats.finish_s = t4.elapsed().as_secs_f64();
    Ok((fit, stats))
}
