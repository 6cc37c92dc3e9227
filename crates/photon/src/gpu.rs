//! The CUDA back end of the propagation (kernel: `kernels/propagate.cu`). Params are packed
//! into flat device arrays and one `#[repr(C)]` struct of device pointers (DESIGN.md §4); photon
//! ids are split into batches, hits come back through a buffer that is never allowed to drop a
//! hit (a batch that overflows it is re-run in halves — the result is the same because every
//! photon draws from its own counter-based stream), and are sorted by (photon, ordinal) so the
//! output is identical for any batch size and any number of GPUs.

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits};
use std::mem::{offset_of, size_of};
use std::sync::Arc;
use std::time::Instant;
use warpdrive_core::cuda::{self, Gpu};
use warpdrive_core::progress::Progress;

use crate::collision::DomIndex;
use crate::medium::Medium;
use crate::propagate::RawHit;
use crate::source::{Emission, Source};
use crate::tilt::{Tilt, TILT_AZIMUTH_DEG};

/// The kernel source, embedded.
pub const KERNEL_SRC: &str = include_str!("../kernels/propagate.cu");
pub const KERNEL_NAME: &str = "propagate.cu";

/// Mirror of `struct PhotonParams` in propagate.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct GpuParams {
    pub slice_wavelength: u64,
    pub slice_n_phase: u64,
    pub slice_ocm: u64,
    pub abs: u64,
    pub sca: u64,
    pub tilt_depths: u64,
    pub tilt_dist: u64,
    pub tilt_shifts: u64,
    pub t2_column: u64,
    pub str_xyr: u64,
    pub str_first_count: u64,
    pub dom_pos: u64,
    pub dom_id: u64,
    pub cell_start: u64,
    pub cell_strings: u64,
    pub src_f64: u64,
    pub src_i32: u64,
    pub src_offsets: u64,
    pub hits: u64,
    pub hit_count: u64,
    pub tilt_r0x: f64,
    pub tilt_r0y: f64,
    pub tilt_ca: f64,
    pub tilt_sa: f64,
    pub t2: [f64; 10],
    pub photon_lo: u64,
    pub photon_hi: u64,
    pub seed: u64,
    pub hit_capacity: u64,
    pub hmin: f32,
    pub dh: f32,
    pub g: f32,
    pub f_sl: f32,
    pub azx: f32,
    pub azy: f32,
    pub k: [f32; 3],
    pub old_abs_scale: f32,
    pub new_abs: [f32; 3],
    pub grid_x0: f32,
    pub grid_y0: f32,
    pub grid_cell: f32,
    pub r_eff: f32,
    pub oversize: f32,
    pub n_layers: i32,
    pub has_aniso: i32,
    pub has_new_abs: i32,
    pub tilt_kind: i32,
    pub tilt_n_depths: i32,
    pub tilt_n_dist: i32,
    pub t2_n1: i32,
    pub t2_n2: i32,
    pub t2_nodes: i32,
    pub grid_nx: i32,
    pub grid_ny: i32,
    pub n_sources: i32,
    pub lut_n_depth: i32,
    pub lut_n_dist: i32,
    pub lut_d0: f32,
    pub lut_dz: f32,
    pub lut_xx: f32,
    pub lut_xy: f32,
    pub lut_x0: f32,
    pub n_strings: i32,
    pub tilt_lut: u64,
    pub layer_f: u64,
    pub slice_f: u64,
    pub clearance: u64,
    pub clear_near: u64,
    pub clear_inv: f32,
    pub clear_nx: i32,
    pub clear_ny: i32,
    pub inv_dh: f32,
    pub inv_k: [f32; 3],
    pub l: [f32; 3],
    pub inv_l: [f32; 3],
    pub b2: f32,
    /// 1 when the scattering anisotropy is on (k ≠ 1, 1, 1); spice_ftp-v3m has only the absorption's.
    pub has_sca_aniso: i32,
    pub aniso_pad: i32,
    pub z_grid: u64,
    pub z_start: u64,
    // Birefringence (birefringence.rs): per-layer ra, rb; p0…p11; flow axis; on/off.
    pub bfr_ra: u64,
    pub bfr_rb: u64,
    pub bfr_p: [f32; 12],
    pub bfr_ax: f32,
    pub bfr_ay: f32,
    pub has_bfr: i32,
    /// rb when it is the same in every layer (the kernel's WD_BFR_RB_CONST), else −1.
    pub bfr_rb0: f32,
    // The 2-D tilt map resampled on a regular (depth, x, y) grid (WD_TILT_LUT, `tilt2_lut`).
    pub tilt_lut2: u64,
    pub lut2_nx: i32,
    pub lut2_ny: i32,
    pub lut2_nd: i32,
    pub lut2_x0: f32,
    pub lut2_y0: f32,
    pub lut2_inv_dxy: f32,
    pub lut2_d0: f32,
    pub lut2_dz: f32,
    pub lut2_pad: [i32; 2],
    pub bfr_table: u64,
    // Hole ice (hole.rs HoleParams, WD_HOLE): radius, coefficients, phase function; on/off.
    pub hole_r: f32,
    pub hole_sca: f32,
    pub hole_abs: f32,
    pub hole_g: f32,
    pub hole_f_sl: f32,
    pub has_hole: i32,
    // The 2-D tilt map's lattice in float (WD_TILT2_LATTICE, `tilt2_lattice`).
    pub tilt_lat: u64,
    pub lat: [f32; 8],
    // Multi-PMT modules' shapes (WD_SHAPES, collision.rs): [R, F] per DOM, xR·max(R·|F|).
    pub dom_shape: u64,
    pub rz_eff: f32,
    pub shape_pad: i32,
    /// The bulk phase functions' constants (WD_FAST_PHASE, `phase_constants`): (1 − g)/(1 + g) of
    /// simplified Liu; 1 − g², 1 + g², 1/(2g) of Henyey–Greenstein.
    pub sl_exp: f32,
    pub hg: [f32; 3],
    /// The clearance grid's second level (collision.rs `clear_more`), uint4 per cell.
    pub clear_more: u64,
    /// The out-of-reach test (WD_REACH, `reach.rs`): per slice the distance bound per unit of
    /// absorption depth; the DOMs' z range widened by `rz_eff`.
    pub reach: u64,
    pub z_lo: f32,
    pub z_hi: f32,
}
const _: () = assert!(size_of::<GpuParams>() == 832);
// WD_BFR_BINS in propagate.cu.
const _: () = assert!(crate::birefringence::BFR_TABLE_BINS == 512);
// WD_Z_BINS in propagate.cu.
const _: () = assert!(crate::collision::Z_BINS == 128);
const _: () = assert!(offset_of!(GpuParams, tilt_r0x) == 160);
const _: () = assert!(offset_of!(GpuParams, photon_lo) == 272);
const _: () = assert!(offset_of!(GpuParams, hmin) == 304);
const _: () = assert!(offset_of!(GpuParams, n_layers) == 376);

/// Offsets the kernel's `layout` entry point reports, in its order.
pub const LAYOUT: [usize; 25] = [
    offset_of!(GpuParams, tilt_r0x),
    offset_of!(GpuParams, photon_lo),
    offset_of!(GpuParams, hmin),
    offset_of!(GpuParams, n_layers),
    offset_of!(GpuParams, n_sources),
    offset_of!(GpuParams, t2) + 9 * 8,
    offset_of!(GpuParams, grid_x0),
    offset_of!(GpuHit, time),
    offset_of!(GpuHit, impact),
    offset_of!(GpuParams, tilt_lut),
    offset_of!(GpuParams, slice_f),
    offset_of!(GpuParams, clear_near),
    offset_of!(GpuParams, clear_ny),
    offset_of!(GpuParams, b2),
    offset_of!(GpuParams, z_start),
    offset_of!(GpuParams, bfr_p),
    offset_of!(GpuParams, lut2_dz),
    offset_of!(GpuParams, bfr_table),
    offset_of!(GpuParams, hole_r),
    offset_of!(GpuParams, lat),
    offset_of!(GpuParams, rz_eff),
    offset_of!(GpuParams, hg),
    offset_of!(GpuParams, clear_more),
    offset_of!(GpuParams, reach),
    offset_of!(GpuParams, z_hi),
];

/// Accuracy cost of the resampled tilt table: the largest |LUT − exact| shift [m] over `n`
/// random points with |x|, |y| < 700 m and depths inside the table (host evaluation of the
/// kernel's bilinear formula).
pub fn tilt_lut_error(t: &crate::tilt::Tilt1d, n: usize) -> Option<f64> {
    let (d0, dd, nd, x0, dx, v) = tilt_lut(t)?;
    let a = TILT_AZIMUTH_DEG.to_radians();
    let mut r = warpdrive_core::RandomStream::new(5, 0, 0);
    let mut worst = 0.0f64;
    for _ in 0..n {
        let (x, y) = (1400.0 * r.uniform_f64() - 700.0, 1400.0 * r.uniform_f64() - 700.0);
        let depth = d0 + (nd - 1) as f64 * dd * r.uniform_f64();
        let fd = ((depth - d0) / dd).clamp(0.0, (nd - 1) as f64);
        let dist = (x - t.r0[0]) * a.cos() + (y - t.r0[1]) * a.sin();
        let fx = ((dist - x0) / dx).clamp(0.0, (TILT_LUT_DIST - 1) as f64);
        let (i, j) = ((fd as usize).min(nd - 2), (fx as usize).min(TILT_LUT_DIST - 2));
        let (aa, bb) = (fd - i as f64, fx - j as f64);
        let at = |i: usize, j: usize| f64::from(v[i * TILT_LUT_DIST + j]);
        let lut = (at(i, j) * (1.0 - bb) + at(i, j + 1) * bb) * (1.0 - aa) + (at(i + 1, j) * (1.0 - bb) + at(i + 1, j + 1) * bb) * aa;
        worst = worst.max((lut - t.zshift(x, y, crate::ice::ZOFF - depth)).abs());
    }
    Some(worst)
}

/// Spacing [m] and half extent [m] of the regular x–y grid the 2-D tilt map is resampled on.
pub const TILT2_LUT_STEP: f64 = 10.0;
pub const TILT2_LUT_HALF: f64 = 800.0;

/// The 2-D tilt map resampled for direct indexing (WD_TILT_LUT): rows at the map's depths (which
/// must be evenly spaced), a regular x–y grid of `TILT2_LUT_STEP` over ±`TILT2_LUT_HALF` m, values
/// the exact shift at the nodes; trilinear on the device. Returns (depth0, ddepth, n_depth, n_xy,
/// values[(row·n + iy)·n + ix]) or `None`.
pub fn tilt2_lut(t: &crate::tilt::Tilt2d) -> Option<(f64, f64, usize, usize, Vec<f32>)> {
    let (_, dd) = tilt2_lut_rows(t)?;
    let nd = t.depths.len();
    let n = (2.0 * TILT2_LUT_HALF / TILT2_LUT_STEP).round() as usize + 1;
    let mut v = Vec::with_capacity(nd * n * n);
    for &depth in &t.depths {
        for iy in 0..n {
            for ix in 0..n {
                let (x, y) = (
                    -TILT2_LUT_HALF + ix as f64 * TILT2_LUT_STEP,
                    -TILT2_LUT_HALF + iy as f64 * TILT2_LUT_STEP,
                );
                v.push(t.zshift(x, y, crate::ice::ZOFF - depth) as f32);
            }
        }
    }
    Some((t.depths[0], dd, nd, n, v))
}

/// The 2-D tilt map for WD_TILT2_LATTICE: per depth row k (of the evenly spaced map rows) and
/// lattice node j·n1 + i the pair (shift at row k, at row k + 1) as f32 (cut nodes 0, the last
/// row paired with itself), and the lattice transform fi = x·c0 + y·c1 + c2, fj = x·c3 + y·c4 + c5
/// (tilt.rs `Tilt2d::lattice`) with the two cuts: `[c0 … c5, cut1, cut2]`. `None` when the rows
/// are not evenly spaced (the exact map is used then).
pub fn tilt2_lattice(t: &crate::tilt::Tilt2d) -> Option<(Vec<[f32; 2]>, [f32; 8])> {
    tilt2_lut_rows(t)?;
    let (n1, n2) = (t.axes[0][3] as usize, t.axes[1][3] as usize);
    let nd = t.depths.len();
    let node = |row: usize, k: usize| t.column[k].map_or(0.0, |c| t.shifts[row][c]) as f32;
    let mut v = Vec::with_capacity(nd * n1 * n2);
    for row in 0..nd {
        for k in 0..n1 * n2 {
            v.push([node(row, k), node((row + 1).min(nd - 1), k)]);
        }
    }
    let (a1, a2) = (t.axes[0][0].to_radians(), t.axes[1][0].to_radians());
    let (e1, e2) = ([a1.cos(), a1.sin()], [a2.cos(), a2.sin()]);
    let det = e1[0] * e2[1] - e2[0] * e1[1];
    let (s1, s2) = (t.axes[0][2], t.axes[1][2]);
    let c = [
        e2[1] / (det * s1),
        -e2[0] / (det * s1),
        -t.axes[0][1] / s1,
        -e1[1] / (det * s2),
        e1[0] / (det * s2),
        -t.axes[1][1] / s2,
        t.axes[0][4],
        t.axes[1][4],
    ];
    Some((v, c.map(|x| x as f32)))
}

/// The kernel's WD_TILT2_LATTICE shift, evaluated on the host in the same f32 arithmetic (for
/// the accuracy test against the exact map).
#[must_use]
pub fn tilt2_lattice_shift(t: &crate::tilt::Tilt2d, table: &[[f32; 2]], c: &[f32; 8], x: f32, y: f32, z: f32) -> f32 {
    let (d0, dd) = tilt2_lut_rows(t).expect("evenly spaced rows");
    let nd = t.depths.len();
    let (n1, n2) = (t.axes[0][3] as usize, t.axes[1][3] as usize);
    let (dz0, ddz) = (((crate::ice::ZOFF - d0) / dd) as f32, (1.0 / dd) as f32);
    let fd = (dz0 - z * ddz).clamp(0.0, (nd - 1) as f32);
    let k = (fd as usize).min(nd - 2);
    let f = fd - k as f32;
    let (mut fi, mut fj) = (x * c[0] + y * c[1] + c[2], x * c[3] + y * c[4] + c[5]);
    for _ in 0..3 {
        fi = fi.clamp(0.0, (n1 - 1) as f32);
        fj = fj.clamp(0.0, (n2 - 1) as f32);
        let d = fi - fj;
        if d > c[6] - 1.0 {
            let e = (d - (c[6] - 1.0)) * 0.5;
            fi -= e;
            fj += e;
        } else if d < 1.0 - c[7] {
            let e = ((1.0 - c[7]) - d) * 0.5;
            fi += e;
            fj -= e;
        }
    }
    let (i0, j0) = ((fi.floor() as usize).min(n1 - 2), (fj.floor() as usize).min(n2 - 2));
    let (a, b) = (fi - i0 as f32, fj - j0 as f32);
    let base = k * n1 * n2 + j0 * n1 + i0;
    let (s00, s11) = (table[base], table[base + n1 + 1]);
    let (sm, w00, wm, w11) = if a >= b {
        (table[base + 1], 1.0 - a, a - b, b)
    } else {
        (table[base + n1], 1.0 - b, b - a, a)
    };
    let v0 = s00[0] * w00 + sm[0] * wm + s11[0] * w11;
    let v1 = s00[1] * w00 + sm[1] * wm + s11[1] * w11;
    v0 * (1.0 - f) + v1 * f
}

/// First depth and spacing of the 2-D map's rows when they are evenly spaced.
fn tilt2_lut_rows(t: &crate::tilt::Tilt2d) -> Option<(f64, f64)> {
    let nd = t.depths.len();
    if nd < 2 {
        return None;
    }
    let dd = (t.depths[nd - 1] - t.depths[0]) / (nd - 1) as f64;
    if t.depths.windows(2).any(|w| ((w[1] - w[0]) - dd).abs() > 1e-6 * dd.abs()) {
        return None;
    }
    Some((t.depths[0], dd))
}

/// Accuracy cost of the resampled 2-D map: the largest |LUT − exact| shift [m] over `n` random
/// points with |x|, |y| < 700 m and depths inside the map (host evaluation of the kernel's formula).
pub fn tilt2_lut_error(t: &crate::tilt::Tilt2d, n: usize) -> Option<f64> {
    let (d0, dd, nd, nxy, v) = tilt2_lut(t)?;
    let mut r = warpdrive_core::RandomStream::new(5, 0, 0);
    let mut worst = 0.0f64;
    for _ in 0..n {
        let (x, y) = (1400.0 * r.uniform_f64() - 700.0, 1400.0 * r.uniform_f64() - 700.0);
        let depth = d0 + (nd - 1) as f64 * dd * r.uniform_f64();
        let fd = ((depth - d0) / dd).clamp(0.0, (nd - 1) as f64);
        let fx = ((x + TILT2_LUT_HALF) / TILT2_LUT_STEP).clamp(0.0, (nxy - 1) as f64);
        let fy = ((y + TILT2_LUT_HALF) / TILT2_LUT_STEP).clamp(0.0, (nxy - 1) as f64);
        let (i, ix, iy) = ((fd as usize).min(nd - 2), (fx as usize).min(nxy - 2), (fy as usize).min(nxy - 2));
        let (a, bx, by) = (fd - i as f64, fx - ix as f64, fy - iy as f64);
        let at = |i: usize, iy: usize, ix: usize| f64::from(v[(i * nxy + iy) * nxy + ix]);
        let plane = |i: usize| {
            (at(i, iy, ix) * (1.0 - bx) + at(i, iy, ix + 1) * bx) * (1.0 - by)
                + (at(i, iy + 1, ix) * (1.0 - bx) + at(i, iy + 1, ix + 1) * bx) * by
        };
        let lut = plane(i) * (1.0 - a) + plane(i + 1) * a;
        worst = worst.max((lut - t.zshift(x, y, crate::ice::ZOFF - depth)).abs());
    }
    Some(worst)
}

/// Distance points of the resampled tilt table (WD_TILT_LUT).
pub const TILT_LUT_DIST: usize = 256;

/// The 1-D tilt resampled for direct indexing: rows at the table's depths (which must be evenly
/// spaced), `TILT_LUT_DIST` distances spanning the table's distances; values are the exact
/// shift at the grid nodes. Returns (depth0, ddepth, n_depth, dist0, ddist, values) or `None`.
pub fn tilt_lut(t: &crate::tilt::Tilt1d) -> Option<(f64, f64, usize, f64, f64, Vec<f32>)> {
    let nd = t.depths.len();
    let dd = (t.depths[nd - 1] - t.depths[0]) / (nd - 1) as f64;
    if t.depths.windows(2).any(|w| ((w[1] - w[0]) - dd).abs() > 1e-6 * dd.abs()) {
        return None;
    }
    let (x0, x1) = (t.distances[0], t.distances[t.distances.len() - 1]);
    let dx = (x1 - x0) / (TILT_LUT_DIST - 1) as f64;
    let mut v = Vec::with_capacity(nd * TILT_LUT_DIST);
    let a = TILT_AZIMUTH_DEG.to_radians();
    for i in 0..nd {
        for j in 0..TILT_LUT_DIST {
            // A point at distance x0 + j·dx from r0 along the gradient, at depth row i.
            let d = x0 + j as f64 * dx;
            let (x, y) = (t.r0[0] + d * a.cos(), t.r0[1] + d * a.sin());
            v.push(t.zshift(x, y, crate::ice::ZOFF - t.depths[i]) as f32);
        }
    }
    Some((t.depths[0], dd, nd, x0, dx, v))
}
/// The resampled 1-D tilt as the kernel reads it (WD_TILT_LUT): the nodes of [`tilt_lut`] as
/// pairs (value, next value along the distance; the last repeats itself), so one 8-byte load
/// reads both nodes of a row, and the fractional indices as affine functions of the position,
/// fd = d0 − z·dz and fx = x·xx + y·xy − x0 (computed in f64, used in f32). The precise twin on
/// the CPU (`fast::twin`) evaluates the same table.
#[derive(Clone, Debug)]
pub struct TiltLut {
    pub pairs: Vec<[f32; 2]>,
    pub d0: f32,
    pub dz: f32,
    pub xx: f32,
    pub xy: f32,
    pub x0: f32,
    pub n_depth: usize,
    pub n_dist: usize,
}

impl TiltLut {
    #[must_use]
    pub fn new(t: &crate::tilt::Tilt1d) -> Option<Self> {
        let (d0, dd, nd, x0, dx, v) = tilt_lut(t)?;
        let pairs = v
            .chunks(TILT_LUT_DIST)
            .flat_map(|row| (0..row.len()).map(move |j| [row[j], row[(j + 1).min(row.len() - 1)]]))
            .collect();
        let a = TILT_AZIMUTH_DEG.to_radians();
        let (ca, sa) = (a.cos(), a.sin());
        Some(Self {
            pairs,
            d0: ((crate::ice::ZOFF - d0) / dd) as f32,
            dz: (1.0 / dd) as f32,
            xx: (ca / dx) as f32,
            xy: (sa / dx) as f32,
            x0: ((t.r0[0] * ca + t.r0[1] * sa + x0) / dx) as f32,
            n_depth: nd,
            n_dist: TILT_LUT_DIST,
        })
    }

    /// The kernel's `zshift_fast` on this table (bilinear; the same operations in the same order).
    #[inline(always)]
    #[must_use]
    pub fn zshift(&self, x: f32, y: f32, z: f32) -> f32 {
        self.zshift_p::<crate::fast::math::Plain>(x, y, z)
    }

    /// [`Self::zshift`] with its sums through `Poly::gmad` (the precise twin's `FusedGeom`, the
    /// kernel's WD_TWIN_FMA_GEOM).
    #[must_use]
    #[inline(always)]
    pub fn zshift_p<P: crate::fast::math::Poly>(&self, x: f32, y: f32, z: f32) -> f32 {
        let fd = P::gmad(-z, self.dz, self.d0).max(0.0).min((self.n_depth - 1) as f32);
        let fx = (P::gmad(y, self.xy, x * self.xx) - self.x0).max(0.0).min((self.n_dist - 1) as f32);
        let (i, j) = ((fd as usize).min(self.n_depth - 2), (fx as usize).min(self.n_dist - 2));
        let (a, b) = (fd - i as f32, fx - j as f32);
        let (r0, r1) = (self.pairs[i * self.n_dist + j], self.pairs[(i + 1) * self.n_dist + j]);
        let (v0, v1) = (P::gmad(r0[1], b, r0[0] * (1.0 - b)), P::gmad(r1[1], b, r1[0] * (1.0 - b)));
        P::gmad(v1, a, v0 * (1.0 - a))
    }
}

// SAFETY: plain old data with the C layout asserted above.
unsafe impl DeviceRepr for GpuParams {}

/// Mirror of `struct GpuHit` in propagate.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GpuHit {
    pub photon: u64,
    pub source: u32,
    pub seq: u32,
    pub dom: u32,
    pub time: f32,
    pub slice: u32,
    pub dir: [f32; 3],
    pub impact: [f32; 3],
    pub pad: u32,
}
const _: () = assert!(size_of::<GpuHit>() == 56);
// SAFETY: plain old data; all-zero bits are a valid value.
unsafe impl DeviceRepr for GpuHit {}
unsafe impl ValidAsZeroBits for GpuHit {}

/// Settings of the GPU run; the switches let each optimisation be measured on its own.
#[derive(Clone, Debug)]
pub struct GpuOptions {
    /// Device ordinals (`cuda:all` = all visible).
    pub devices: Vec<usize>,
    /// IEEE arithmetic matching the CPU path step by step (slower).
    pub precise: bool,
    /// Photons per launch.
    pub batch: u64,
    /// Hit buffer capacity (hits per launch before a re-run in halves).
    pub hit_capacity: usize,
    /// Threads per block and blocks per multiprocessor.
    pub block: u32,
    pub blocks_per_sm: u32,
    /// Kernel switches (`-D` definitions, see the top of propagate.cu's kernel section).
    pub defines: Vec<String>,
    /// Switches of [`FAST_ONLY`] a precise build keeps (measurement only: what each costs
    /// precise mode; `bench photon --config precise,keep:WD_…`). Empty for every real run.
    pub keep_fast_only: Vec<String>,
    /// Single NVRTC arithmetic options a precise build takes from fast mode (measurement only:
    /// `bench photon --config precise,nvrtc:fmad`). None for every real run.
    pub fast_arith: cuda::FastArith,
}

impl Default for GpuOptions {
    fn default() -> Self {
        Self {
            devices: vec![0],
            precise: false,
            batch: 1 << 28,
            hit_capacity: 1 << 23,
            block: 256,
            blocks_per_sm: 16,
            defines: DEFAULT_SWITCHES.iter().map(|d| (*d).to_string()).collect(),
            keep_fast_only: Vec::new(),
            fast_arith: cuda::FastArith::default(),
        }
    }
}

/// Per-run statistics.
#[derive(Clone, Debug, Default)]
pub struct GpuStats {
    pub devices: Vec<String>,
    /// Seconds inside kernel launches (host-timed around launch + synchronize), summed over
    /// devices, and the wall time of the slowest device.
    pub kernel_seconds: f64,
    pub wall_seconds: f64,
    pub launches: usize,
    pub reruns: usize,
    pub registers: i32,
    pub local_bytes: i32,
    /// Host-side phases [s] (slowest device where per device): opening the devices, loading the
    /// kernel (NVRTC or the disk cache), uploading the tables, copying hits back and converting
    /// them, sorting them into canonical order. With `kernel_seconds` they say where a run's wall
    /// time goes (`warpdrive ppc` prints them).
    pub open_seconds: f64,
    pub load_seconds: f64,
    pub upload_seconds: f64,
    pub download_seconds: f64,
    pub sort_seconds: f64,
    /// The DOM acceptance on the host (set by `crate::engine::simulate`).
    pub accept_seconds: f64,
}

impl GpuStats {
    /// The phases in words, for a run's log.
    #[must_use]
    pub fn phases(&self) -> String {
        format!(
            "{:.3} s in kernels; devices opened {:.2}, kernel loaded {:.2}, tables uploaded {:.2}, hits copied back {:.2}, sorted {:.2}, accepted {:.2} s",
            self.kernel_seconds,
            self.open_seconds,
            self.load_seconds,
            self.upload_seconds,
            self.download_seconds,
            self.sort_seconds,
            self.accept_seconds
        )
    }
}

pub use warpdrive_core::cuda::GpuError;

/// Params uploaded to one device; the slices own the memory the pointers in `params` name.
pub struct DeviceTables {
    _keep_f32: Vec<CudaSlice<f32>>,
    _keep_f64: Vec<CudaSlice<f64>>,
    _keep_u32: Vec<CudaSlice<u32>>,
    _keep_i32: Vec<CudaSlice<i32>>,
    _keep_u64: Vec<CudaSlice<u64>>,
    pub params: GpuParams,
}

/// Non-empty copy of `v` (a zero-length allocation is not allowed).
fn nonempty<T: Clone + Default>(v: &[T]) -> Vec<T> {
    if v.is_empty() {
        vec![T::default()]
    } else {
        v.to_vec()
    }
}

/// Doubles per source record: pos, dir, time, p0..p6 (see the kernel's `emit`).
pub const SOURCE_F64: usize = 14;

/// Encode the sources: f64[14] = pos, dir, time, p0..p6; i32[2] = kind, own_dom (see the kernel).
/// Flashers: kind 3 (LED pattern) or 4 (one tilted LED), p0 = ka, p1 = FLDR, p2 = elevation,
/// p3 = 1 for tilted LEDs, p4..p6 = the tilted LED's position relative to the DOM centre.
pub fn encode_sources(sources: &[Source]) -> (Vec<f64>, Vec<i32>, Vec<u64>) {
    let mut f = Vec::with_capacity(SOURCE_F64 * sources.len());
    let mut i = Vec::with_capacity(2 * sources.len());
    let mut offsets = vec![0u64];
    for s in sources {
        let (kind, p) = match s.emission {
            Emission::Cascade { profile_a, profile_b } => (0, [profile_a, profile_b, 0.0, 0.0, 0.0, 0.0, 0.0]),
            Emission::Track { length, beta, f_direct } => (1, [length, beta, f_direct, 0.0, 0.0, 0.0, 0.0]),
            Emission::Isotropic => (2, [0.0; 7]),
            Emission::Flasher(led) => {
                let r = led.fixed.unwrap_or([0.0; 3]);
                let kind = if led.fixed.is_some() { 4 } else { 3 };
                (kind, [led.ka, led.fldr, led.up, f64::from(u8::from(led.tilted)), r[0], r[1], r[2]])
            }
        };
        f.extend_from_slice(&s.pos);
        f.extend_from_slice(&s.dir);
        f.push(s.time);
        f.extend_from_slice(&p);
        i.push(kind);
        i.push(s.own_dom.map_or(-1, |d| d as i32));
        offsets.push(offsets.last().copied().unwrap_or(0) + s.photons);
    }
    (f, i, offsets)
}

/// Whether any source is a lab-profile flasher (its photons can be absorbed where they are
/// made: the kernel's WD_FLASHER code).
#[must_use]
pub fn has_lab_flasher(sources: &[Source]) -> bool {
    sources.iter().any(|s| matches!(s.emission, Emission::Flasher(l) if l.lab()))
}

/// Where [`params`] puts the kernel's tables: each call stores one table and returns the address
/// the kernel reads it at (a device pointer for [`upload`]; an offset into one host buffer for
/// the host build of the kernel, tests/twin_host_kernel.rs).
pub trait TableSink {
    fn f32s(&mut self, v: &[f32]) -> Result<u64, GpuError>;
    fn f64s(&mut self, v: &[f64]) -> Result<u64, GpuError>;
    fn u32s(&mut self, v: &[u32]) -> Result<u64, GpuError>;
    fn i32s(&mut self, v: &[i32]) -> Result<u64, GpuError>;
    fn u64s(&mut self, v: &[u64]) -> Result<u64, GpuError>;
}

/// The tables on one device, kept alive with the params that point at them.
struct DeviceSink<'a> {
    stream: &'a Arc<CudaStream>,
    f32s: Vec<CudaSlice<f32>>,
    f64s: Vec<CudaSlice<f64>>,
    u32s: Vec<CudaSlice<u32>>,
    i32s: Vec<CudaSlice<i32>>,
    u64s: Vec<CudaSlice<u64>>,
}

macro_rules! device_put {
    ($name:ident, $t:ty) => {
        fn $name(&mut self, v: &[$t]) -> Result<u64, GpuError> {
            let d = self.stream.clone_htod(&nonempty(v))?;
            let ptr = {
                let (ptr, _sync) = d.device_ptr(self.stream);
                ptr
            };
            self.$name.push(d);
            Ok(ptr)
        }
    };
}

impl TableSink for DeviceSink<'_> {
    device_put!(f32s, f32);
    device_put!(f64s, f64);
    device_put!(u32s, u32);
    device_put!(i32s, i32);
    device_put!(u64s, u64);
}

/// Upload medium, geometry and sources to `stream`.
pub fn upload(
    stream: &Arc<CudaStream>,
    m: &Medium,
    idx: &DomIndex,
    sources: &[Source],
    hit_capacity: usize,
) -> Result<(DeviceTables, CudaSlice<GpuHit>, CudaSlice<u64>), GpuError> {
    let mut sink = DeviceSink {
        stream,
        f32s: Vec::new(),
        f64s: Vec::new(),
        u32s: Vec::new(),
        i32s: Vec::new(),
        u64s: Vec::new(),
    };
    let mut p = params(m, idx, sources, &mut sink)?;
    let hits = stream.alloc_zeros::<GpuHit>(hit_capacity.max(1))?;
    // [hit count, next photon offset of the dynamic distribution (WD_DYNAMIC)].
    let count = stream.alloc_zeros::<u64>(2)?;
    {
        let (h, _s) = hits.device_ptr(stream);
        let (c, _t) = count.device_ptr(stream);
        p.hits = h;
        p.hit_count = c;
    }
    p.hit_capacity = hit_capacity.max(1) as u64;
    Ok((
        DeviceTables {
            _keep_f32: sink.f32s,
            _keep_f64: sink.f64s,
            _keep_u32: sink.u32s,
            _keep_i32: sink.i32s,
            _keep_u64: sink.u64s,
            params: p,
        },
        hits,
        count,
    ))
}

/// The kernel's params for medium, geometry and sources, their tables stored by `sink` (the
/// hit buffer, its count and capacity, the seed and the photon range are the caller's).
pub fn params(m: &Medium, idx: &DomIndex, sources: &[Source], sink: &mut dyn TableSink) -> Result<GpuParams, GpuError> {
    let mut p = GpuParams::default();
    macro_rules! put {
        ($keep:ident, $field:ident, $data:expr) => {{
            p.$field = sink.$keep(&$data)?;
        }};
    }
    put!(f32s, slice_wavelength, m.slices.iter().map(|s| s.wavelength).collect::<Vec<_>>());
    put!(f32s, slice_n_phase, m.slices.iter().map(|s| s.n_phase).collect::<Vec<_>>());
    put!(f32s, slice_ocm, m.slices.iter().map(|s| s.ocm).collect::<Vec<_>>());
    put!(f32s, abs, m.abs);
    put!(f32s, sca, m.sca);
    put!(f32s, layer_f, m.layer_factors.concat());
    // Padded to four floats: one 16-byte load per step.
    put!(
        f32s,
        slice_f,
        m.slice_factors.iter().flat_map(|f| [f[0], f[1], f[2], 0.0]).collect::<Vec<_>>()
    );
    match &m.bfr {
        Some(b) => {
            put!(f32s, bfr_ra, b.ra);
            put!(f32s, bfr_rb, b.rb);
            put!(f32s, bfr_table, b.width_table().concat());
            p.bfr_p = b.p;
            [p.bfr_ax, p.bfr_ay] = b.axis;
            p.has_bfr = 1;
            p.bfr_rb0 = b.rb_column_const.unwrap_or(-1.0);
        }
        None => {
            put!(f32s, bfr_ra, Vec::<f32>::new());
            put!(f32s, bfr_rb, Vec::<f32>::new());
            put!(f32s, bfr_table, Vec::<f32>::new());
        }
    }
    if let Some(h) = &m.hole {
        (p.hole_r, p.hole_sca, p.hole_abs, p.hole_g, p.hole_f_sl) = (h.radius, h.sca, h.abs, h.g, h.f_sl);
        p.has_hole = 1;
    }
    p.hmin = m.hmin;
    p.dh = m.dh;
    p.inv_dh = 1.0 / m.dh;
    p.g = m.g;
    p.f_sl = m.f_sl;
    (p.sl_exp, p.hg) = phase_constants(m.g);
    p.n_layers = m.n_layers as i32;
    if let Some(a) = &m.anisotropy {
        p.has_aniso = 1;
        p.azx = a.azx;
        p.azy = a.azy;
        p.k = a.k;
        p.old_abs_scale = a.old_abs_scale;
        // The same f32 operations as the CPU path's (medium.rs), done once here.
        let (l, il) = a.squares();
        (p.inv_k, p.l, p.inv_l) = (a.inverse_k(), l, il);
        p.b2 = il[0] + il[1] + il[2];
        p.has_sca_aniso = i32::from(a.k != [1.0; 3]);
        if let Some(k) = a.new_abs {
            p.has_new_abs = 1;
            p.new_abs = k;
        }
    }
    match &m.tilt {
        Tilt::None => {
            put!(f64s, tilt_depths, Vec::<f64>::new());
            put!(f64s, tilt_dist, Vec::<f64>::new());
            put!(f64s, tilt_shifts, Vec::<f64>::new());
            put!(i32s, t2_column, Vec::<i32>::new());
        }
        Tilt::OneD(t) => {
            p.tilt_kind = 1;
            put!(f64s, tilt_depths, t.depths);
            put!(f64s, tilt_dist, t.distances);
            put!(f64s, tilt_shifts, t.shifts.concat());
            put!(i32s, t2_column, Vec::<i32>::new());
            p.tilt_n_depths = t.depths.len() as i32;
            p.tilt_n_dist = t.distances.len() as i32;
            p.tilt_r0x = t.r0[0];
            p.tilt_r0y = t.r0[1];
            let a = TILT_AZIMUTH_DEG.to_radians();
            p.tilt_ca = a.cos();
            p.tilt_sa = a.sin();
            if let Some(l) = TiltLut::new(t) {
                put!(f32s, tilt_lut, l.pairs.concat());
                (p.lut_d0, p.lut_dz, p.lut_xx, p.lut_xy, p.lut_x0) = (l.d0, l.dz, l.xx, l.xy, l.x0);
                p.lut_n_depth = l.n_depth as i32;
                p.lut_n_dist = l.n_dist as i32;
            }
        }
        Tilt::TwoD(t) => {
            p.tilt_kind = 2;
            put!(f64s, tilt_depths, t.depths);
            put!(f64s, tilt_dist, Vec::<f64>::new());
            put!(f64s, tilt_shifts, t.shifts.concat());
            put!(
                i32s,
                t2_column,
                t.column.iter().map(|c| c.map_or(-1, |v| v as i32)).collect::<Vec<_>>()
            );
            p.tilt_n_depths = t.depths.len() as i32;
            let (a1, a2) = (t.axes[0][0].to_radians(), t.axes[1][0].to_radians());
            p.t2 = [
                a1.cos(),
                a1.sin(),
                a2.cos(),
                a2.sin(),
                t.axes[0][1],
                t.axes[0][2],
                t.axes[1][1],
                t.axes[1][2],
                t.axes[0][4],
                t.axes[1][4],
            ];
            p.t2_n1 = t.axes[0][3] as i32;
            p.t2_n2 = t.axes[1][3] as i32;
            p.t2_nodes = t.nodes as i32;
            if let Some((d0, dd, nd, nxy, v)) = tilt2_lut(t) {
                put!(f32s, tilt_lut2, v);
                p.lut2_nx = nxy as i32;
                p.lut2_ny = nxy as i32;
                p.lut2_nd = nd as i32;
                p.lut2_x0 = -TILT2_LUT_HALF as f32;
                p.lut2_y0 = -TILT2_LUT_HALF as f32;
                p.lut2_inv_dxy = (1.0 / TILT2_LUT_STEP) as f32;
                p.lut2_d0 = ((crate::ice::ZOFF - d0) / dd) as f32;
                p.lut2_dz = (1.0 / dd) as f32;
            }
            if let Some((v, c)) = tilt2_lattice(t) {
                put!(f32s, tilt_lat, v.concat());
                p.lat = c;
            }
        }
    }
    put!(f32s, str_xyr, idx.strings.iter().flat_map(|s| [s.x, s.y, s.r]).collect::<Vec<_>>());
    put!(
        u32s,
        str_first_count,
        idx.strings.iter().flat_map(|s| [s.first, s.count]).collect::<Vec<_>>()
    );
    put!(f32s, dom_pos, idx.pos.concat());
    put!(u32s, dom_id, idx.id);
    put!(u32s, cell_start, idx.cell_start);
    put!(f32s, z_grid, idx.z_grid.concat());
    put!(u32s, z_start, idx.z_start);
    put!(u32s, cell_strings, idx.cell_strings);
    p.n_strings = idx.strings.len() as i32;
    p.grid_x0 = idx.x0;
    p.grid_y0 = idx.y0;
    p.grid_cell = idx.cell;
    p.grid_nx = idx.nx as i32;
    p.grid_ny = idx.ny as i32;
    put!(f32s, clearance, idx.clearance.concat());
    put!(u32s, clear_near, idx.clear_near);
    put!(u32s, clear_more, idx.clear_more.concat());
    p.clear_inv = 1.0 / idx.clear_cell;
    p.clear_nx = idx.clear_nx as i32;
    p.clear_ny = idx.clear_ny as i32;
    p.r_eff = idx.r_eff;
    p.oversize = idx.oversize;
    if !idx.shape.is_empty() {
        put!(f32s, dom_shape, idx.shape.concat());
    }
    p.rz_eff = idx.rz_eff;
    // Off (WARPDRIVE_NO_REACH): infinite bounds, the test never fires.
    let mut reach = crate::reach::table(m);
    reach.resize(m.slices.len(), f32::INFINITY);
    put!(f32s, reach, reach);
    (p.z_lo, p.z_hi) = (idx.z_lo, idx.z_hi);
    let (sf, si, offsets) = encode_sources(sources);
    put!(f64s, src_f64, sf);
    put!(i32s, src_i32, si);
    put!(u64s, src_offsets, offsets);
    p.n_sources = sources.len() as i32;
    Ok(p)
}

fn to_raw(h: &GpuHit) -> RawHit {
    RawHit {
        photon: h.photon,
        source: h.source,
        seq: h.seq,
        dom: h.dom,
        time: h.time,
        slice: h.slice,
        dir: h.dir,
        impact: h.impact,
    }
}

/// The per-segment constants of the bulk phase functions for the fast kernel (WD_FAST_PHASE):
/// simplified Liu's exponent (1 − g)/(1 + g) and Henyey–Greenstein's 1 − g², 1 + g², 1/(2g)
/// (spec §3.5; the kernel's `henyey_greenstein` and `simplified_liu` compute them per call).
fn phase_constants(g: f32) -> (f32, [f32; 3]) {
    let inv2g = if g.abs() < 1e-6 { 0.0 } else { 1.0 / (2.0 * g) };
    ((1.0 - g) / (1.0 + g), [1.0 - g * g, 1.0 + g * g, inv2g])
}

/// What a run needs compiled into the kernel besides the tuning switches: each is set only
/// when the run has it, so that runs without it pay nothing for its code.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelFeatures {
    /// Birefringence (WD_BFR), with the same rb in every layer (WD_BFR_RB_CONST).
    pub bfr: bool,
    pub bfr_rb_const: bool,
    /// Hole-ice columns (WD_HOLE).
    pub hole: bool,
    /// A lab-profile flasher, photons absorbed at emission (WD_FLASHER).
    pub lab_flasher: bool,
    /// A flasher whose own DOM absorbs (WD_OWN_DOM).
    pub own_dom: bool,
    /// Multi-PMT modules colliding with their own shapes (WD_SHAPES).
    pub shapes: bool,
}

impl KernelFeatures {
    /// The features of a run on medium `m` with geometry `idx` and `sources`.
    #[must_use]
    pub fn of(m: &Medium, idx: &DomIndex, sources: &[Source]) -> Self {
        Self {
            bfr: m.bfr.is_some(),
            bfr_rb_const: m.bfr.as_ref().and_then(|b| b.rb_column_const).is_some(),
            hole: m.hole.is_some(),
            lab_flasher: has_lab_flasher(sources),
            own_dom: sources.iter().any(|s| s.own_dom.is_some()),
            shapes: !idx.shape.is_empty(),
        }
    }
}

/// The `-D` switches of the kernel for `opts` and `features`: the tuning switches (precise
/// mode drops those of [`FAST_ONLY`] but `opts.keep_fast_only`: it promises the CPU path's
/// arithmetic), the block size
/// and the features' switches. `doctor --prebuild` lists its builds through this function too,
/// so the prebuilt images are the ones runs ask for.
#[must_use]
pub fn kernel_defines(opts: &GpuOptions, f: KernelFeatures) -> Vec<String> {
    let mut defines: Vec<String> = opts
        .defines
        .iter()
        .filter(|d| !(opts.precise && FAST_ONLY.contains(&d.as_str()) && !opts.keep_fast_only.contains(d)))
        .cloned()
        .collect();
    defines.push(format!("WD_BLOCK={}", opts.block));
    for (on, switch) in [
        (f.bfr, "WD_BFR"),
        (f.bfr_rb_const, "WD_BFR_RB_CONST"),
        (f.hole, "WD_HOLE"),
        (f.lab_flasher, "WD_FLASHER"),
        (f.own_dom, "WD_OWN_DOM"),
        (f.shapes, "WD_SHAPES"),
    ] {
        if on && !defines.iter().any(|d| d == switch) {
            defines.push(switch.into());
        }
    }
    defines
}

/// The builds of the propagation kernel that runs with the default options ask for, fast and
/// precise: `Default` scope — the ice models as they come (no birefringence; birefringence with
/// and without one rb per layer; none of the shipped models has hole ice), for cascades and
/// muons and for flashers (own DOM absorbing), and the tabulation kernel's
/// (`tabulate::gpu::prebuilt_builds`); `All` adds hole ice, the lab-profile flasher and
/// multi-PMT shapes in every combination (for `doctor --prepare`).
#[must_use]
pub fn prebuilt_builds(scope: warpdrive_core::kernels::Scope) -> Vec<warpdrive_core::kernels::Build> {
    use warpdrive_core::kernels::{Build, Scope};
    let all = scope == Scope::All;
    let mut out = Vec::new();
    for precise in [false, true] {
        // Precise runs are the precise twin (`--precise`; the exact precise build of
        // `GpuOptions { precise: true, .. }` is the device check's and compiles on demand).
        let opts = if precise { precise_options(vec![0]) } else { GpuOptions::default() };
        for (bfr, bfr_rb_const) in [(false, false), (true, false), (true, true)] {
            for hole in if all { &[false, true][..] } else { &[false][..] } {
                for own_dom in [false, true] {
                    for lab_flasher in if all { &[false, true][..] } else { &[false][..] } {
                        for shapes in if all { &[false, true][..] } else { &[false][..] } {
                            let f = KernelFeatures {
                                bfr,
                                bfr_rb_const,
                                hole: *hole,
                                lab_flasher: *lab_flasher,
                                own_dom,
                                shapes: *shapes,
                            };
                            out.push(
                                Build::new(KERNEL_NAME, KERNEL_SRC, precise, kernel_defines(&opts, f)).with_fast_arith(opts.fast_arith),
                            );
                        }
                    }
                }
            }
        }
    }
    out.extend(crate::tabulate::gpu::prebuilt_builds());
    out
}

/// Propagate photon ids [lo, hi) on one GPU in batches. Returns raw hits (unsorted) and stats.
/// Between batches it adds the batch's photons to `progress` and stops launching once
/// `progress` asks to stop (the hits are then incomplete; see [`run_with`]).
#[allow(clippy::too_many_arguments)]
fn run_on(
    gpu: &Gpu,
    m: &Medium,
    idx: &DomIndex,
    sources: &[Source],
    seed: u64,
    (lo, hi): (u64, u64),
    opts: &GpuOptions,
    progress: &Progress,
) -> Result<(Vec<GpuHit>, GpuStats), GpuError> {
    let defines = kernel_defines(opts, KernelFeatures::of(m, idx, sources));
    let t_load = Instant::now();
    let (_module, func) = cuda::load_with(gpu, KERNEL_NAME, KERNEL_SRC, "propagate", opts.precise, &defines, opts.fast_arith)?;
    let load_seconds = t_load.elapsed().as_secs_f64();
    let res = cuda::resources(&func)?;
    if opts.block as i32 > res.max_threads_per_block {
        return Err(GpuError::Other(format!(
            "{} threads per block requested, the kernel allows {} ({} registers)",
            opts.block, res.max_threads_per_block, res.registers
        )));
    }
    let stream = &gpu.stream;
    let t_upload = Instant::now();
    let (tables, hits, count) = upload(stream, m, idx, sources, opts.hit_capacity)?;
    let upload_seconds = t_upload.elapsed().as_secs_f64();
    let grid = (gpu.multiprocessors as u32) * opts.blocks_per_sm;
    let cfg = LaunchConfig {
        grid_dim: (grid, 1, 1),
        block_dim: (opts.block, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut out = Vec::new();
    let mut stats = GpuStats {
        devices: vec![format!("cuda:{} {}", gpu.ordinal, gpu.name)],
        registers: res.registers,
        local_bytes: res.local_bytes,
        load_seconds,
        upload_seconds,
        ..Default::default()
    };
    let wall = Instant::now();
    // Work list of photon ranges; an overflowing range is split in two and re-run.
    let mut todo: Vec<(u64, u64)> = Vec::new();
    let mut a = lo;
    while a < hi {
        let b = (a + opts.batch).min(hi);
        todo.push((a, b));
        a = b;
    }
    todo.reverse();
    let mut count = count;
    while let Some((a, b)) = todo.pop() {
        if progress.should_stop() {
            break;
        }
        stream.memset_zeros(&mut count)?;
        let mut p = tables.params;
        p.photon_lo = a;
        p.photon_hi = b;
        p.seed = seed;
        let t0 = Instant::now();
        let mut launch = stream.launch_builder(&func);
        launch.arg(&p);
        // SAFETY: the params point at live device allocations owned by `tables`, `hits` and
        // `count`; the kernel writes at most `hit_capacity` hits.
        unsafe { launch.launch(cfg) }?;
        stream.synchronize()?;
        stats.kernel_seconds += t0.elapsed().as_secs_f64();
        stats.launches += 1;
        let n = stream.clone_dtoh(&count)?[0] as usize;
        if n > opts.hit_capacity {
            if b - a < 2 {
                return Err(GpuError::Other(format!(
                    "one photon produced {n} hits, more than the hit buffer ({}) holds",
                    opts.hit_capacity
                )));
            }
            let mid = a + (b - a) / 2;
            todo.push((mid, b));
            todo.push((a, mid));
            stats.reruns += 1;
            continue;
        }
        if n > 0 {
            let t_back = Instant::now();
            let h = stream.clone_dtoh(&hits.slice(0..n))?;
            out.extend_from_slice(&h);
            stats.download_seconds += t_back.elapsed().as_secs_f64();
        }
        progress.add(b - a);
    }
    stats.wall_seconds = wall.elapsed().as_secs_f64();
    Ok((out, stats))
}

/// Propagate all photons of `sources` on the GPUs of `opts`. Hits come back in canonical order,
/// identical for any number of devices and batch size.
pub fn run(m: &Medium, idx: &DomIndex, sources: &[Source], seed: u64, opts: &GpuOptions) -> Result<(Vec<RawHit>, GpuStats), GpuError> {
    run_with(m, idx, sources, seed, 0..u64::MAX, opts, &Progress::hidden())
}

/// [`run`] reporting each finished batch to `progress` and stopping between batches (about a
/// tenth of a second each on an H100) once `progress` asks to stop; the hits are then
/// incomplete, and the caller (`crate::engine`) reports the run as cancelled.
pub fn run_with(
    m: &Medium,
    idx: &DomIndex,
    sources: &[Source],
    seed: u64,
    ids: std::ops::Range<u64>,
    opts: &GpuOptions,
    progress: &Progress,
) -> Result<(Vec<RawHit>, GpuStats), GpuError> {
    let total: u64 = sources.iter().map(|s| s.photons).sum();
    // Photon ids `ids` only (one job of a split run), cut into one share per GPU.
    let (first, end) = (ids.start.min(total), ids.end.min(total));
    let t_open = Instant::now();
    let gpus = opts.devices.iter().map(|&d| cuda::open(d)).collect::<Result<Vec<_>, _>>()?;
    let open_seconds = t_open.elapsed().as_secs_f64();
    let results = cuda::split_across(&gpus, end - first, |g, share| {
        g.ctx.bind_to_thread()?;
        run_on(g, m, idx, sources, seed, (first + share.start, first + share.end), opts, progress)
    });
    let mut device_hits = Vec::new();
    let mut stats = GpuStats {
        open_seconds,
        ..Default::default()
    };
    for r in results {
        let (h, s) = r?;
        device_hits.push(h);
        stats.devices.extend(s.devices);
        stats.kernel_seconds += s.kernel_seconds;
        stats.wall_seconds = stats.wall_seconds.max(s.wall_seconds);
        stats.launches += s.launches;
        stats.reruns += s.reruns;
        stats.registers = s.registers;
        stats.local_bytes = s.local_bytes;
        stats.load_seconds = stats.load_seconds.max(s.load_seconds);
        stats.upload_seconds = stats.upload_seconds.max(s.upload_seconds);
        stats.download_seconds = stats.download_seconds.max(s.download_seconds);
    }
    // Stopped: the hits are incomplete and will be discarded; sorting millions of them (a
    // second for a 10⁸ GeV cascade's first seconds) would only delay the stop.
    if progress.should_stop() {
        return Ok((Vec::new(), stats));
    }
    // The devices' hits converted on the caller's pool (one core took 0.4 s for PPC's benchmark).
    let t_convert = Instant::now();
    let mut hits: Vec<RawHit> = Vec::with_capacity(device_hits.iter().map(Vec::len).sum());
    for h in &device_hits {
        use rayon::prelude::*;
        hits.par_extend(h.par_iter().map(to_raw));
    }
    drop(device_hits);
    stats.download_seconds += t_convert.elapsed().as_secs_f64();
    let t_sort = Instant::now();
    // (photon, seq) is unique: the unstable parallel sort gives the one canonical order (on the
    // caller's pool; 1.2 s on one core for the 5.9 million hits of PPC's benchmark).
    {
        use rayon::slice::ParallelSliceMut;
        hits.par_sort_unstable_by_key(|h| (h.photon, h.seq));
    }
    stats.sort_seconds = t_sort.elapsed().as_secs_f64();
    Ok((hits, stats))
}

/// Every kernel of this crate: (file name, source, entry points). `warpdrive doctor` compiles
/// them all; CI runs it with `--compile-only`.
pub const KERNELS: &[(&str, &str, &[&str])] = &[(KERNEL_NAME, KERNEL_SRC, &["propagate", "twin_rng", "twin_physics", "layout"])];

/// Switch sets compiled together on top of the defaults by `warpdrive doctor` (code that exists
/// only when both are on: birefringence over the bulk part of a segment cut by a hole-ice column;
/// a flasher's own DOM among shaped modules).
pub const COMBINED_SWITCHES: &[&[&str]] = &[&["WD_BFR", "WD_HOLE"], &["WD_SHAPES", "WD_OWN_DOM"]];

/// The switches of the default build, chosen by `warpdrive bench photon --device cuda` on an
/// H100 (docs/performance/photon.md): per-warp job queue fed by a global counter and refilled when
/// two lanes are idle, 48-register cap at 5 × 256 threads per SM, resampled float tilt tables and
/// factored ice coefficients, the clearance pre-test of the collision search, selects instead of
/// branches in the scattering, the layer walk's direction fixed per segment, and the fast-mode
/// arithmetic of 2026-11-26: birefringence integrals summed by the walk, no renormalisation of
/// its unit vectors, no anisotropy frame for k = (1, 1, 1), uniforms by mantissa placement, the
/// cascade's gamma draw in float, per-photon MWC64X streams for the per-segment words, the phase
/// functions' constants from the host. Precise mode drops every switch of [`FAST_ONLY`]; the
/// others leave every hit bit for bit unchanged.
pub const DEFAULT_SWITCHES: &[&str] = &[
    "WD_JOBQUEUE",
    "WD_MIN_BLOCKS=5",
    "WD_TILT_LUT",
    "WD_FACTORED_ICE",
    "WD_CLEARANCE",
    "WD_SELECT_SCATTER",
    "WD_DYNAMIC",
    "WD_BRANCHLESS_WALK",
    "WD_BFR_TABLE",
    "WD_TILT2_LATTICE",
    "WD_BFR_WALK",
    "WD_FAST_BFR",
    "WD_ISO_SCATTER",
    "WD_FAST_UNIFORM",
    "WD_FAST_GAMMA",
    "WD_PHILOX_PAIR",
    "WD_FAST_RNG",
    "WD_FAST_PHASE",
    "WD_REFILL=2",
];

/// Switches that change the arithmetic (resampled or refactored tables): fast mode only.
pub const FAST_ONLY: &[&str] = &[
    "WD_TILT_LUT",
    "WD_FACTORED_ICE",
    "WD_BFR_TABLE",
    "WD_TILT2_LATTICE",
    "WD_BFR_WALK",
    "WD_FAST_BFR",
    "WD_ISO_SCATTER",
    "WD_FAST_UNIFORM",
    "WD_FAST_GAMMA",
    "WD_FAST_RNG",
    "WD_FAST_PHASE",
];

/// The GPU side of `fast::twin`, what `--precise` runs on a GPU: a precise build
/// (IEEE division and square root, no flush to zero, no CUDA fast-math functions) that keeps
/// every switch of [`FAST_ONLY`], computes ln, exp, pow and sincos with the CPU fast mode's
/// polynomials (`WD_TWIN_MATH`), and runs at ≤ 64 registers (`WD_MIN_BLOCKS=4`). NVRTC does not
/// contract a·b + c (`--fmad=false`): where it chose FMAs the two sides drifted apart in last
/// bits (98.99 % of a flasher's photons with the same hits). The FMAs are written out instead
/// (`WD_TWIN_FMA_GEOM`: the polynomials, the per-step geometry, the walk; 1/√ by Newton), the
/// same ones on the CPU (`fast::math::FusedGeom`), so the two agree bit for bit (docs/
/// performance/photon.md, "an exact twin"). `bench photon --config default,twin`.
pub fn precise_twin(o: &mut GpuOptions) {
    o.precise = true;
    for d in FAST_ONLY {
        if !o.keep_fast_only.iter().any(|k| k == d) {
            o.keep_fast_only.push((*d).to_string());
        }
        if !o.defines.iter().any(|k| k == d) {
            o.defines.push((*d).to_string());
        }
    }
    o.defines.retain(|d| d.split('=').next() != Some("WD_MIN_BLOCKS"));
    o.defines.push("WD_MIN_BLOCKS=4".into());
    for d in ["WD_TWIN_MATH", "WD_TWIN_FMA_GEOM"] {
        if !o.defines.iter().any(|k| k == d) {
            o.defines.push(d.into());
        }
    }
    o.fast_arith.fmad = false;
}

/// The options of `--precise` on GPUs `devices`: the default switches made a precise twin
/// ([`precise_twin`]).
#[must_use]
pub fn precise_options(devices: Vec<usize>) -> GpuOptions {
    let mut o = GpuOptions {
        devices,
        ..GpuOptions::default()
    };
    precise_twin(&mut o);
    o
}

/// The kernel switches, each compiled by `warpdrive doctor` so CI checks every variant.
pub const SWITCHES: &[&str] = &[
    "WD_NAIVE_LOOP",
    "WD_JOBQUEUE",
    "WD_BRANCHLESS_WALK",
    "WD_MIN_BLOCKS=4",
    "WD_NOINLINE_EMIT",
    "WD_TILT_LUT",
    "WD_FACTORED_ICE",
    "WD_CLEARANCE",
    "WD_SELECT_SCATTER",
    "WD_DYNAMIC",
    "WD_SHARED_TABLES",
    "WD_RNG_WARP",
    "WD_BFR_TABLE",
    "WD_TILT2_LATTICE",
    "WD_BFR_WALK",
    "WD_FAST_BFR",
    "WD_ISO_SCATTER",
    "WD_FAST_UNIFORM",
    "WD_FAST_GAMMA",
    "WD_PHILOX_PAIR",
    "WD_REFILL=4",
    "WD_FAST_RNG",
    "WD_FAST_PHASE",
    // Off by default (reach.rs): exact, but on an H200 the test costs more than the segments it
    // saves (docs/performance/photon.md, "the out-of-reach test").
    "WD_REACH",
    // Measurement only (changes the physics): the tilt shift left out, to time what it costs.
    "WD_NO_TILT",
    // Measurement only (changes the physics): only the first DOM on a segment is searched.
    "WD_NO_CONTINUE",
    // Precise mode (`precise_options`, with every fast-only switch kept): the CPU fast mode's
    // approximations of ln, exp, pow and sincos in place of the CUDA functions (fast/twin.rs).
    "WD_TWIN_MATH",
    // Measurement only, with WD_TWIN_MATH in a twin without contraction
    // (`twin,-WD_TWIN_FMA_GEOM,WD_TWIN_FMA`): only the polynomials' Horner steps as explicit fmaf
    // (propagate.cu WD_MAD; the CPU side is fast::math::Fused).
    "WD_TWIN_FMA",
    // Precise mode (`precise_twin`, without contraction): also the per-step geometry's
    // multiply-adds as explicit fmaf and its 1/sqrt by Newton (implies WD_TWIN_FMA; the CPU side
    // is fast::math::FusedGeom).
    "WD_TWIN_FMA_GEOM",
    // Not a tuning switch: set automatically for ice models with birefringence (run_on), so
    // that models without it pay nothing for its code (listed here for the NVRTC compile check).
    "WD_BFR",
    // Likewise for birefringence with the same rb in every layer (`Birefringence::rb_column_const`).
    "WD_BFR_RB_CONST",
    // Likewise for hole ice (cfg.txt lines 8-12 with a radius above 0, hole.rs).
    "WD_HOLE",
    // Likewise for runs with a lab-profile flasher (FWID > 999): photons absorbed at emission.
    "WD_FLASHER",
    // Likewise for runs with a flasher whose own DOM absorbs (OFLA not 0): that DOM unoversized.
    "WD_OWN_DOM",
    // Likewise for runs with multi-PMT modules: every DOM collides with its own shape.
    "WD_SHAPES",
];

/// The builds `warpdrive doctor` checks: fast and precise; without a GPU no switches, each
/// switch alone, the default combination, it with each switch it lacks, and the combined sets.
pub fn kernel_sets() -> Vec<warpdrive_core::doctor::KernelSet> {
    let mut sets = warpdrive_core::doctor::KernelSet::fixed(KERNELS, SWITCHES, true);
    let name = |d: &str| d.split('=').next().unwrap_or(d).to_string();
    let owned = |v: Vec<&str>| v.into_iter().map(str::to_string).collect::<Vec<_>>();
    for set in &mut sets {
        set.variants.push(owned(DEFAULT_SWITCHES.to_vec()));
        for extra in SWITCHES.iter().filter(|s| !DEFAULT_SWITCHES.iter().any(|d| name(d) == name(s))) {
            set.variants.push(owned(DEFAULT_SWITCHES.iter().copied().chain([*extra]).collect()));
        }
        for combined in COMBINED_SWITCHES {
            set.variants
                .push(owned(DEFAULT_SWITCHES.iter().chain(combined.iter()).copied().collect()));
        }
        // Precise runs drop the fast-only switches (kernel_defines): check the builds they make.
        set.drop_in_precise(FAST_ONLY);
    }
    // The tabulation kernel (tabulate/gpu.rs): precise only, with the switches it keeps and the
    // birefringence features the ice models switch on.
    let tab = |extra: &[&str]| owned(crate::tabulate::gpu::SWITCHES.iter().chain(extra).copied().collect());
    sets.push(warpdrive_core::doctor::KernelSet {
        file: crate::tabulate::gpu::KERNEL_NAME.to_string(),
        src: crate::tabulate::gpu::KERNEL_SRC.to_string(),
        functions: crate::tabulate::gpu::FUNCTIONS.iter().map(|f| (*f).to_string()).collect(),
        precise_variants: None,
        variants: vec![
            Vec::new(),
            tab(&[]),
            tab(&["WD_BFR"]),
            tab(&["WD_BFR", "WD_BFR_RB_CONST"]),
            tab(&["WD_TAB_CELLS=8"]),
        ],
        fast: false,
        generated: false,
    });
    // The sampled tabulation kernel (tabulate/gpu.rs SAMPLED_SRC): the fast build's photon
    // switches, with the birefringence features, and without any switch.
    let samp = |extra: &[&str]| {
        let mut d = crate::tabulate::gpu::sampled_switches();
        d.extend(extra.iter().map(|s| (*s).to_string()));
        d
    };
    sets.push(warpdrive_core::doctor::KernelSet {
        file: crate::tabulate::gpu::SAMPLED_NAME.to_string(),
        src: crate::tabulate::gpu::SAMPLED_SRC.to_string(),
        functions: crate::tabulate::gpu::SAMPLED_FUNCTIONS.iter().map(|f| (*f).to_string()).collect(),
        precise_variants: None,
        // The warp compaction of the points is the default; WD_SAMP_COMPACT=0 the lane-at-a-time
        // path (gpu-check compares them); the earlier code without the exact speed-ups, lane at a
        // time (gpu-check's reference) and compacted, the deferred queue off or unlimited
        // (the A/B of docs/spline.md), and the job queue and split squares.
        variants: vec![
            Vec::new(),
            // The runs' build (the kernel's own default, WD_SAMP_REP=0: gpu-check's reference);
            // with birefringence it is compiled below as the earlier default, lane at a time,
            // one point a step and the warp scans.
            samp(&[]),
            samp(&["WD_SAMP_COMPACT=0"]),
            samp(&["WD_BFR", "WD_SAMP_COMPACT=0"]),
            samp(&["WD_SAMP_COMPACT=0", "WD_SAMP_NODIV=0", "WD_SAMP_EDGES=0"]),
            samp(&["WD_SAMP_NODIV=0", "WD_SAMP_EDGES=0", "WD_SAMP_SLOTS=0", "WD_SAMP_UNROLL=0"]),
            samp(&["WD_SAMP_DEFER=0"]),
            samp(&["WD_SAMP_ROUNDS=0"]),
            // The structural alternatives of docs/spline.md "Job queue and fire-and-forget
            // squares" (on by default) turned off, down to the earlier default (gpu-check
            // compares them with the default).
            samp(&["WD_SAMP_JOBQ=0"]),
            samp(&["WD_SAMP_RED=0"]),
            samp(&["WD_SAMP_ANGC=0"]),
            samp(crate::tabulate::gpu::SAMPLED_EARLIER),
            samp(&[&["WD_BFR"], crate::tabulate::gpu::SAMPLED_EARLIER].concat()),
            // One point per lane and step, no queue of points (docs/spline.md "One point per
            // step"; gpu-check compares it with the default), with and without the job queue.
            samp(&["WD_SAMP_STEPWISE=1"]),
            samp(&["WD_BFR", "WD_SAMP_STEPWISE=1"]),
            samp(&["WD_SAMP_STEPWISE=1", "WD_SAMP_JOBQ=0"]),
            // The warp scans of the points with per-point integer amounts (docs/spline.md "Warp
            // scans of the points"), and their lane-at-a-time reference (gpu-check compares them).
            samp(&["WD_SAMP_SCAN=1"]),
            samp(&["WD_BFR", "WD_SAMP_SCAN=1"]),
            samp(&["WD_SAMP_SCAN=1", "WD_SAMP_JOBQ=0"]),
            samp(&["WD_SAMP_STEPWISE=1", "WD_SAMP_QPOINT=1"]),
            // The azimuth by atan2f instead of the default polynomial (gpu-check compares them).
            samp(&["WD_SAMP_ATAN=0"]),
            // The lookup axis by axis instead of one range predicate (gpu-check compares them).
            samp(&["WD_SAMP_LEAN=0"]),
            // The sums-only probe (measurement only: no squares; docs/spline.md "What the 50 %
            // would cost in table quality").
            samp(&["WD_SAMP_NOSQ=1"]),
            // The spatial variance by batch means with the adaptive comb: the builds default runs
            // compile, without and with the birefringence features, and with a fixed step
            // (docs/spline.md "Batch means", "The adaptive step"; the kernel's own defaults are
            // the runs', WD_SAMP_REP=0, and the fixed comb).
            samp(&["WD_SAMP_REP=256", "WD_SAMP_ADAPT=2"]),
            samp(&["WD_BFR", "WD_SAMP_REP=256", "WD_SAMP_ADAPT=2"]),
            samp(&["WD_BFR", "WD_BFR_RB_CONST", "WD_SAMP_REP=256", "WD_SAMP_ADAPT=2"]),
            samp(&["WD_SAMP_REP=256"]),
            // Session 35's distance rule of the adaptive comb (comparison build; docs/spline.md
            // "The directional step").
            samp(&["WD_SAMP_REP=256", "WD_SAMP_ADAPT=1"]),
            // The queue's entries as six arrays (session 37's default, a comparison build;
            // docs/spline.md "The queue as vectors").
            samp(&["WD_SAMP_REP=256", "WD_SAMP_ADAPT=2", "WD_SAMP_AOS=0"]),
            // The loop without its points (measurement only; docs/spline.md "The floor").
            samp(&["WD_SAMP_PHYSICS=1"]),
        ],
        fast: true,
        generated: false,
    });
    sets
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_data::data_dir;

    /// The switch lists agree: every default and every fast-only switch is one `warpdrive doctor`
    /// compiles (by name; `WD_MIN_BLOCKS=…` and `WD_REFILL=…` take any value).
    #[test]
    fn switch_lists_agree() {
        let name = |d: &str| d.split('=').next().unwrap_or(d).to_string();
        let known: Vec<String> = SWITCHES.iter().map(|d| name(d)).collect();
        for d in DEFAULT_SWITCHES.iter().chain(FAST_ONLY) {
            assert!(known.contains(&name(d)), "{d} is not in SWITCHES");
        }
    }

    /// The kernel's per-segment hit cap is the CPU path's (precise mode follows it photon by photon).
    #[test]
    fn kernel_hit_cap_is_the_cpu_one() {
        let line = format!("#define WD_MAX_SEGMENT_HITS {}", crate::propagate::MAX_HITS_PER_SEGMENT);
        assert!(KERNEL_SRC.contains(&line), "propagate.cu lacks {line:?}");
    }

    /// The resampled tilt tables' accuracy (fast mode only; precise mode evaluates the exact map):
    /// spice_3.2.1's 1-D model and spice_ftp-v3m's 2-D map within 0.25 m of the exact shift over
    /// the detector (layer thickness 10 m; the 1-D LUT measured 9.5 cm on the H100 host).
    #[test]
    fn resampled_tilt_tables_are_close_to_the_exact_shift() {
        let ice = data_dir().join("ice");
        let one = crate::tilt::Tilt::read_dir(&ice.join("spice_3.2.1"), |_| None);
        if let Ok(crate::tilt::Tilt::OneD(t)) = one {
            let e = tilt_lut_error(&t, 20_000).expect("regular depths");
            assert!(e < 0.25, "1-D LUT error {e} m");
        }
        let geo = crate::geometry::Geometry::read(&ice.join("spice_ftp-v3m/geo-f2k")).unwrap();
        let two = crate::tilt::Tilt::read_dir(&ice.join("spice_ftp-v3m"), |s| geo.string_xy(s)).unwrap();
        let crate::tilt::Tilt::TwoD(t) = two else {
            panic!("spice_ftp-v3m has a 2-D tilt map")
        };
        let e = tilt2_lut_error(&t, 20_000).expect("regular depths");
        eprintln!("2-D tilt LUT error: {e:.3} m");
        assert!(e < 0.25, "2-D LUT error {e} m");
    }

    /// WD_TILT2_LATTICE evaluates spice_ftp-v3m's 2-D map on its own lattice in f32: only float
    /// rounding separates it from the exact f64 map — within 2 mm over 20 000 random points with
    /// |x|, |y| < 900 m (outside the hexagon too, where the clamp applies) and depths 1100–2700 m.
    #[test]
    fn lattice_tilt_table_equals_the_exact_map_to_float_rounding() {
        let ice = data_dir().join("ice");
        let geo = crate::geometry::Geometry::read(&ice.join("spice_ftp-v3m/geo-f2k")).unwrap();
        let crate::tilt::Tilt::TwoD(t) = crate::tilt::Tilt::read_dir(&ice.join("spice_ftp-v3m"), |s| geo.string_xy(s)).unwrap() else {
            panic!("spice_ftp-v3m has a 2-D tilt map")
        };
        let (table, c) = tilt2_lattice(&t).expect("evenly spaced rows");
        assert_eq!(table.len(), t.depths.len() * t.axes[0][3] as usize * t.axes[1][3] as usize);
        assert!(table.len() * 8 <= 128 * 1024, "{} bytes", table.len() * 8);
        let mut r = warpdrive_core::RandomStream::new(9, 0, 0);
        let mut worst = 0.0f64;
        for _ in 0..20_000 {
            let (x, y) = (1800.0 * r.uniform_f64() - 900.0, 1800.0 * r.uniform_f64() - 900.0);
            let z = crate::ice::ZOFF - (1100.0 + 1600.0 * r.uniform_f64());
            let fast = tilt2_lattice_shift(&t, &table, &c, x as f32, y as f32, z as f32);
            worst = worst.max((f64::from(fast) - t.zshift(x, y, z)).abs());
        }
        eprintln!("2-D tilt lattice table error: {worst:.2e} m");
        assert!(worst < 2e-3, "{worst} m");
    }
}
