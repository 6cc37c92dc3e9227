//! The navigator on a GPU (issue #31): the CUDA twins of [`super::vec3`], [`super::roots`],
//! [`super::solid`], [`super::navigator`] and [`super::trace`] (`kernels/geo/*.cuh`, `trace.cu`,
//! one function per Rust function, same names, the same operations in the same order, built
//! precise). Two entry points: whole rays walked through a volume tree ([`trace_rays`]) and one
//! solid's distances and safeties at many points ([`solid_distances`]). `warpdrive gpu-check`
//! (em) compares both with the CPU.
//!
//! Where the two sides may differ: CUDA's `atan2` and `sin` (polyhedra side choice, the sphere's
//! θ membership and θ safety) are not glibc's, so a point within an ulp or two of a θ cone or a
//! polyhedra side boundary can be classified differently; every other operation is IEEE-exact on
//! both sides (the cos/sin the CPU computes per call are computed by the host and uploaded).

use super::device::{flatten_solids, BvhNodeRecord, DeviceGeometry, LogicalRecord, PlacementRecord, SolidRecord};
use super::navigator::Navigator;
use super::solid::{SolidId, Solids};
use super::trace::{trace_ray, Trace};
use super::vec3::Vec3;
use super::volumes::VolumeTree;
use cudarc::driver::{DeviceRepr, LaunchConfig, PushKernelArg};
use warpdrive_core::cuda;
use warpdrive_core::engine::{Error, ParamError};

pub const GEO_NAME: &str = "geo.cu";
/// The geometry's device code: the twins in dependency order, then the entry points.
pub const GEO_SRC: &str = concat!(
    include_str!("../../kernels/geo/vec3.cuh"),
    include_str!("../../kernels/geo/roots.cuh"),
    include_str!("../../kernels/geo/solid.cuh"),
    include_str!("../../kernels/geo/navigator.cuh"),
    include_str!("../../kernels/geo/trace.cu"),
);
/// For `warpdrive doctor`: always precise (the GPU must give the CPU's distances).
pub const KERNELS: &[(&str, &str, &[&str])] = &[(GEO_NAME, GEO_SRC, &["trace_ray", "solid_distances"])];

const THREADS: u32 = 128;
/// Per-thread stack for the booleans' recursion [bytes].
const STACK_BYTES: usize = 4096;
/// Most rays or points of one call (the outputs are allocated up front).
pub const MAX_RAYS: usize = 1 << 24;

// SAFETY: plain old data with the kernels' layouts (static_assert in solid.cuh / navigator.cuh,
// const asserts in device.rs).
unsafe impl DeviceRepr for SolidRecord {}
unsafe impl DeviceRepr for LogicalRecord {}
unsafe impl DeviceRepr for PlacementRecord {}
unsafe impl DeviceRepr for BvhNodeRecord {}

fn flat(v: &[Vec3]) -> Vec<f64> {
    v.iter().flat_map(|p| [p.x, p.y, p.z]).collect()
}

fn grid(n: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((n as u32).div_ceil(THREADS).max(1), 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

fn check_sizes(starts: &[Vec3], dirs: &[Vec3], max_steps: usize) -> Result<(), Error> {
    if starts.len() != dirs.len() {
        return Err(ParamError::new("directions", format!("{} directions for {} points", dirs.len(), starts.len())).into());
    }
    if starts.len() > MAX_RAYS {
        return Err(ParamError::new("rays", format!("{} rays; at most {MAX_RAYS} per call", starts.len())).into());
    }
    if max_steps > 4096 {
        return Err(ParamError::new("max_steps", format!("{max_steps}; at most 4096")).into());
    }
    Ok(())
}

fn open(ordinal: usize, need: usize) -> Result<cuda::Gpu, Error> {
    let gpu = cuda::open(ordinal)?;
    gpu.ctx.bind_to_thread()?;
    if need > gpu.total_memory / 10 * 9 {
        return Err(ParamError::new(
            "rays",
            format!(
                "{:.1} GB on {} ({:.1} GB): use fewer rays per call",
                need as f64 / 1e9,
                gpu.name,
                gpu.total_memory as f64 / 1e9
            ),
        )
        .into());
    }
    gpu.ctx.set_limit(cudarc::driver::sys::CUlimit::CU_LIMIT_STACK_SIZE, STACK_BYTES)?;
    Ok(gpu)
}

/// Walk every ray (`starts[i]` along the unit `dirs[i]`) through `tree` on GPU `ordinal`, as
/// [`trace_ray`] does on the CPU.
pub fn trace_rays(tree: &VolumeTree, starts: &[Vec3], dirs: &[Vec3], max_steps: usize, ordinal: usize) -> Result<Vec<Trace>, Error> {
    check_sizes(starts, dirs, max_steps)?;
    let g = DeviceGeometry::new(tree).map_err(|e| ParamError::new("device", e.to_string()))?;
    let n = starts.len();
    let need = g.bytes() + n * (3 * 24 + 16) + n * max_steps * 12;
    let gpu = open(ordinal, need)?;
    let (_m, f) = cuda::load(&gpu, GEO_NAME, GEO_SRC, "trace_ray", true, &[])?;
    let st = gpu.stream.clone();
    let (solids, pool) = (st.clone_htod(&g.solids)?, st.clone_htod(&g.pool)?);
    let (logical, placements) = (st.clone_htod(&g.logical)?, st.clone_htod(&g.placements)?);
    // Empty trees upload one unused record (a level with a tree always has nodes and items).
    let (no_node, no_item) = ([BvhNodeRecord::default()], [0u32]);
    let bvh_nodes = st.clone_htod(if g.bvh_nodes.is_empty() { &no_node[..] } else { &g.bvh_nodes })?;
    let bvh_items = st.clone_htod(if g.bvh_items.is_empty() { &no_item[..] } else { &g.bvh_items })?;
    let bvh_root = st.clone_htod(&g.bvh_root)?;
    let (p, d) = (st.clone_htod(&flat(starts))?, st.clone_htod(&flat(dirs))?);
    let mut start_code = st.alloc_zeros::<i32>(n.max(1))?;
    let mut start_safety = st.alloc_zeros::<f64>(n.max(1))?;
    let mut steps = st.alloc_zeros::<u32>(n.max(1))?;
    let mut moved = st.alloc_zeros::<f64>((n * max_steps).max(1))?;
    let mut codes = st.alloc_zeros::<i32>((n * max_steps).max(1))?;
    let mut ends = st.alloc_zeros::<f64>((3 * n).max(1))?;
    let (n32, ms32) = (n as u32, max_steps as u32);
    let mut l = st.launch_builder(&f);
    l.arg(&solids)
        .arg(&pool)
        .arg(&logical)
        .arg(&placements)
        .arg(&g.world)
        .arg(&bvh_nodes)
        .arg(&bvh_items)
        .arg(&bvh_root)
        .arg(&p)
        .arg(&d)
        .arg(&n32)
        .arg(&ms32);
    l.arg(&mut start_code)
        .arg(&mut start_safety)
        .arg(&mut steps)
        .arg(&mut moved)
        .arg(&mut codes)
        .arg(&mut ends);
    // SAFETY: every array is sized for n rays and max_steps steps; the records are DeviceGeometry's.
    unsafe { l.launch(grid(n)) }?;
    let (sc, ss, sn) = (st.clone_dtoh(&start_code)?, st.clone_dtoh(&start_safety)?, st.clone_dtoh(&steps)?);
    let (mv, cd, en) = (st.clone_dtoh(&moved)?, st.clone_dtoh(&codes)?, st.clone_dtoh(&ends)?);
    Ok((0..n)
        .map(|i| {
            let k = sn[i] as usize;
            Trace {
                start: sc[i],
                safety: ss[i],
                steps: (0..k).map(|j| (mv[i * max_steps + j], cd[i * max_steps + j])).collect(),
                end: Vec3::new(en[3 * i], en[3 * i + 1], en[3 * i + 2]),
            }
        })
        .collect())
}

/// The CPU's answer for the same rays (for comparisons).
#[must_use]
pub fn trace_rays_cpu(tree: &VolumeTree, starts: &[Vec3], dirs: &[Vec3], max_steps: usize) -> Vec<Trace> {
    trace_rays_with(&Navigator::new(tree), starts, dirs, max_steps)
}

/// [`trace_rays_cpu`] with a given navigator (e.g. [`Navigator::linear`]).
#[must_use]
pub fn trace_rays_with(nav: &Navigator, starts: &[Vec3], dirs: &[Vec3], max_steps: usize) -> Vec<Trace> {
    use rayon::prelude::*;
    starts
        .par_iter()
        .zip(dirs)
        .map(|(&p, &d)| trace_ray(nav, p, d, max_steps))
        .collect()
}

/// Per point of solid `id`: the distance to out (inside) or in (outside) along `dirs[i]`, the
/// matching safety, and whether the point is inside.
pub type Distances = (Vec<f64>, Vec<f64>, Vec<bool>);

/// [`Distances`] on GPU `ordinal`.
pub fn solid_distances(solids: &Solids, id: SolidId, points: &[Vec3], dirs: &[Vec3], ordinal: usize) -> Result<Distances, Error> {
    check_sizes(points, dirs, 0)?;
    let (records, numbers) = flatten_solids(&solids.solids).map_err(|e| ParamError::new("device", e.to_string()))?;
    let n = points.len();
    let gpu = open(ordinal, numbers.len() * 8 + n * 68)?;
    let (_m, f) = cuda::load(&gpu, GEO_NAME, GEO_SRC, "solid_distances", true, &[])?;
    let st = gpu.stream.clone();
    let (rec, pool) = (st.clone_htod(&records)?, st.clone_htod(&numbers)?);
    let (p, d) = (st.clone_htod(&flat(points))?, st.clone_htod(&flat(dirs))?);
    let mut dist = st.alloc_zeros::<f64>(n.max(1))?;
    let mut safe = st.alloc_zeros::<f64>(n.max(1))?;
    let mut inside = st.alloc_zeros::<i32>(n.max(1))?;
    let n32 = n as u32;
    let mut l = st.launch_builder(&f);
    l.arg(&rec)
        .arg(&pool)
        .arg(&id)
        .arg(&p)
        .arg(&d)
        .arg(&n32)
        .arg(&mut dist)
        .arg(&mut safe)
        .arg(&mut inside);
    // SAFETY: the arrays hold n points; the records are flatten_solids'.
    unsafe { l.launch(grid(n)) }?;
    let inside: Vec<bool> = st.clone_dtoh(&inside)?.into_iter().take(n).map(|v| v != 0).collect();
    let mut dist = st.clone_dtoh(&dist)?;
    let mut safe = st.clone_dtoh(&safe)?;
    dist.truncate(n);
    safe.truncate(n);
    Ok((dist, safe, inside))
}

/// [`Distances`] on the CPU.
#[must_use]
pub fn solid_distances_cpu(solids: &Solids, id: SolidId, points: &[Vec3], dirs: &[Vec3]) -> Distances {
    use rayon::prelude::*;
    let v: Vec<(f64, f64, bool)> = points
        .par_iter()
        .zip(dirs)
        .map(|(&p, &d)| {
            if solids.contains(id, p) {
                (solids.distance_to_out(id, p, d), solids.safety_to_out(id, p), true)
            } else {
                (solids.distance_to_in(id, p, d), solids.safety_to_in(id, p), false)
            }
        })
        .collect();
    (
        v.iter().map(|x| x.0).collect(),
        v.iter().map(|x| x.1).collect(),
        v.iter().map(|x| x.2).collect(),
    )
}

/// The builds `warpdrive doctor` checks.
pub fn kernel_sets() -> Vec<warpdrive_core::doctor::KernelSet> {
    warpdrive_core::doctor::KernelSet::fixed(KERNELS, &[], false)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_device_source_holds_every_twin_once() {
        for f in [
            "V3 along(",
            "void push(",
            "void quadratic(",
            "void cylinder(",
            "void theta_cone(",
            "bool contains(Solids S, unsigned id, V3 p) {",
            "double signed_distance(",
            "double first_segment(",
            "void descend(",
            "bool relocate(",
            "double find_next_step(",
            "double safety(",
            "unsigned first_holding(",
            "unsigned next_closer(",
            "double step(",
            "void trace_ray(",
            "void solid_distances(",
        ] {
            assert_eq!(super::GEO_SRC.matches(f).count(), 1, "{f}");
        }
        assert!(!super::GEO_SRC.contains("#include"), "the pieces are concatenated, not included");
    }
}
