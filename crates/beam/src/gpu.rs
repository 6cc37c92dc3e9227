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

/// The define that selects the maps' fast form (grouped by first index, fused multiply-adds) in
/// the generated source; precise builds keep the CPU's order of operations (program.rs `Row::eval`).
pub const FAST_MAPS: &str = "WD_FAST_MAPS";

/// The defines of a map build.
fn map_defines(precise: bool) -> Vec<String> {
    if precise {
        Vec::new()
    } else {
        vec![FAST_MAPS.to_string()]
    }
}

/// Literal index expression into the constant array.
fn kc(i: usize) -> String {
    format!("K[{i}]")
}

/// How [`generate`] lays out the map kernels.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Blocks of 256 threads per multiprocessor to compile for (0: the compiler's choice).
    pub min_blocks: u32,
    /// One kernel per element of every run besides the fused ones.
    pub per_element: bool,
    /// Tracking without an aperture of its own (+∞): the open form of eligible runs.
    pub open_aperture: bool,
    /// Fold repeated cells of a run into loops ([`roll`]): the same operations in the same
    /// order, in a fraction of the code (the ring of issue #30: one loop of its 12-element cell
    /// instead of 192 inlined maps). `beam track` and `bench beam`: `WARPDRIVE_BEAM_ROLL=1` ([`roll_from_env`]).
    pub roll: bool,
}

impl Shape {
    /// The default shape of a run's kernels: [`DEFAULT_MIN_BLOCKS`], fused runs only, the
    /// open form when there is no aperture.
    pub fn new(open_aperture: bool) -> Self {
        Self {
            min_blocks: DEFAULT_MIN_BLOCKS,
            per_element: false,
            open_aperture,
            roll: false,
        }
    }
}

/// A piece of a run's body: one item, or `reps` repetitions of the `period` items from `start`
/// whose element numbers advance by `stride` per repetition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Block {
    One(usize),
    Loop {
        start: usize,
        period: usize,
        reps: usize,
        stride: usize,
    },
}

/// Longest cell [`roll`] looks for, and the fewest items a loop must cover.
const ROLL_MAX_PERIOD: usize = 64;
const ROLL_MIN_ITEMS: usize = 8;

/// Split a run's body — (generated call, element number) per item — into single items and
/// loops over repeated cells: greedily from the front, the period (≤ [`ROLL_MAX_PERIOD`]) whose
/// repetitions (identical calls, element numbers advancing by one stride) cover the most items,
/// if at least [`ROLL_MIN_ITEMS`].
pub fn roll(body: &[(String, usize)]) -> Vec<Block> {
    let n = body.len();
    let mut out = Vec::new();
    let mut a = 0;
    while a < n {
        let mut best: Option<Block> = None;
        let mut covered = 0;
        for p in 1..=ROLL_MAX_PERIOD.min((n - a) / 2) {
            let Some(stride) = body[a + p].1.checked_sub(body[a].1).filter(|&s| s > 0) else {
                continue;
            };
            let same =
                |r: usize| (0..p).all(|q| body[a + r * p + q].0 == body[a + q].0 && body[a + r * p + q].1 == body[a + q].1 + r * stride);
            let mut reps = 1;
            while a + (reps + 1) * p <= n && same(reps) {
                reps += 1;
            }
            if reps >= 2 && p * reps >= ROLL_MIN_ITEMS && p * reps > covered {
                covered = p * reps;
                best = Some(Block::Loop {
                    start: a,
                    period: p,
                    reps,
                    stride,
                });
            }
        }
        match best {
            Some(b) => {
                out.push(b);
                a += covered;
            }
            None => {
                out.push(Block::One(a));
                a += 1;
            }
        }
    }
    out
}

/// Generate the map kernels of `program`; `min_blocks` > 0 asks the compiler to fit that many
/// 256-thread blocks per multiprocessor (`__launch_bounds__(256, min_blocks)`: fewer registers,
/// more warps in flight). `per_element` adds one kernel per element of every run (for
/// `--launch-per-element`); without it the module holds the fused run kernels only, which is what
/// NVRTC spends its time on (a ring of 193 elements with 96 kick integrators: 2 s instead of 12 s).
///
/// `open_aperture` (the tracking has no aperture of its own, `aperture` = +∞): a run whose items
/// all keep a non-finite coordinate non-finite ([`keeps_non_finite`]) gets the open form of its
/// kernel: the passes without the test after every element — with an infinite aperture that
/// test only catches a non-finite x or y, and such a particle is still non-finite at the end of
/// the pass — and one test of all six coordinates per pass; a particle that fails it is tracked
/// again from its coordinates at the launch's start with the test after every element (the
/// checked form, the same operations in the same order), so that it is lost at the element and
/// pass, and with the coordinates, of the checked kernel and the CPU. The checked form's test
/// and early exit cost, per element, two FP64 compares, two branches and the moves that bring
/// the six coordinates into the exit's registers: on the ring of issue #30 (193 elements) 8 373
/// instructions per pass against 5 666 without them (sm_90 SASS, docs/performance/beam.md).
pub fn generate(program: &Program, shape: Shape) -> Result<MapSource, String> {
    let Shape {
        min_blocks,
        per_element,
        open_aperture,
        ..
    } = shape;
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
            // The CPU's order (precise builds): c, then every R term, then every T term;
            // the constants are laid out in that order, and the fast form (`Row::groups`,
            // built when `WD_FAST_MAPS` is defined) uses the same ones.
            let mut terms: Vec<String> = Vec::new();
            let c = (row.c != 0.0).then(|| {
                constants.push(row.c);
                kc(constants.len() - 1)
            });
            terms.extend(c.clone());
            let mut r_k: Vec<String> = Vec::new();
            for &(j, v) in &row.r {
                if v == 1.0 {
                    terms.push(format!("z{j}"));
                    r_k.push("1.0".into());
                } else {
                    terms.push(format!("{} * z{j}", kc(constants.len())));
                    r_k.push(kc(constants.len()));
                    constants.push(v);
                }
            }
            let mut t_k: Vec<String> = Vec::new();
            for &(j, kk, v) in &row.t {
                terms.push(format!("{} * z{j} * z{kk}", kc(constants.len())));
                t_k.push(format!("{} * z{kk}", kc(constants.len())));
                constants.push(v);
            }
            let expr = if terms.is_empty() { "0.0".to_string() } else { terms.join(" + ") };
            let mut horner: Vec<String> = c.into_iter().collect();
            for g in row.groups() {
                let j = g.j;
                let r = g.r.map(|n| r_k[n].clone());
                horner.push(match (r, g.t.is_empty()) {
                    (Some(r), true) if r == "1.0" => format!("z{j}"),
                    (Some(r), true) => format!("{r} * z{j}"),
                    (r, _) => {
                        let bracket: Vec<String> = r.into_iter().chain(g.t.iter().map(|&n| t_k[n].clone())).collect();
                        format!("z{j} * ({})", bracket.join(" + "))
                    }
                });
            }
            let fast = if horner.is_empty() { "0.0".to_string() } else { horner.join(" + ") };
            if fast == expr {
                let _ = writeln!(functions, "    const double n{i} = {expr};");
            } else {
                let _ = writeln!(
                    functions,
                    "#ifdef {FAST_MAPS}\n    const double n{i} = {fast};\n#else\n    const double n{i} = {expr};\n#endif"
                );
            }
            assigns.push(format!("z{i} = n{i};"));
        }
        let _ = writeln!(functions, "    {}\n}}", assigns.join(" "));
        k
    };
    // Constants of the kick–drift elements, shared by equal elements.
    let mut kick_offsets: HashMap<Vec<u64>, usize> = HashMap::new();
    let mut drift_offsets: HashMap<u64, usize> = HashMap::new();
    let mut kernels = String::new();
    let mut run_kernels = HashMap::new();
    let mut element_kernels = HashMap::new();
    // Runs of map elements, and the half drifts of LSC steps (one-element runs), by step.
    let runs: Vec<(usize, &[RunItem])> = program
        .steps
        .iter()
        .enumerate()
        .filter_map(|(k, s)| match s {
            Step::Run(items) | Step::Lsc { half_drift: items, .. } => Some((k, items.as_slice())),
            _ => None,
        })
        .collect();
    for (step, items) in runs {
        let body: Vec<(String, usize)> = items
            .iter()
            .map(|it| {
                let call = match it {
                    RunItem::Map { map, .. } => format!("map_{}(z0, z1, z2, z3, z4, z5);", map_id(map, &mut functions, &mut constants)),
                    RunItem::ExactDrift { l, .. } => {
                        // One constant per length (equal drifts then have equal calls, which
                        // `roll` folds into loops).
                        let k = *drift_offsets.entry(l.to_bits()).or_insert_with(|| {
                            constants.push(*l);
                            constants.len() - 1
                        });
                        format!("exact_drift(z0, z1, z2, z3, z4, {});", kc(k))
                    }
                    RunItem::Kick { kick, element } => {
                        let (kind, k) = kick
                            .constants()
                            .ok_or_else(|| format!("element {}: no kick–drift integrator for this element", element + 1))?;
                        let tilted = k[0] != 0.0;
                        let k0 = *kick_offsets.entry(k.iter().map(|v| v.to_bits()).collect()).or_insert_with(|| {
                            let k0 = constants.len();
                            constants.extend(&k);
                            k0
                        });
                        // TILT: into the element's frame and back (program.rs `KickItem::track`).
                        let (into, back) = if tilted {
                            (
                                format!("elements::rotate(z0, z1, z2, z3, K[{}], K[{}]); ", k0 + 1, k0 + 2),
                                format!(" elements::rotate(z0, z1, z2, z3, K[{}], K[{}]);", k0 + 3, k0 + 4),
                            )
                        } else {
                            (String::new(), String::new())
                        };
                        format!("{into}{kind}::track(z0, z1, z2, z3, z4, z5, K + {});{back}", k0 + 5)
                    }
                    RunItem::Rf { rf, element } => {
                        let k0 = constants.len();
                        constants.extend(
                            rf_constants(rf)
                                .ok_or_else(|| format!("element {}: RFCA compiled without a reference momentum", element + 1))?,
                        );
                        format!("rf_item_track(z0, z1, z2, z3, z4, z5, pass, K + {k0});")
                    }
                    RunItem::Check { aperture, element } => {
                        format!(
                            "if (!{}) {{ lost = {}; lpass = pass; goto done; }}",
                            aperture.cuda_inside(),
                            element + 1
                        )
                    }
                };
                Ok((call, it.element() + 1))
            })
            .collect::<Result<_, String>>()?;
        let open = open_aperture && items.iter().all(keeps_non_finite);
        let checked: Vec<String> = body.iter().map(|(call, e)| format!("{call} CHECK({e});")).collect();
        let last = items.last().map_or(0, |it| it.element() + 1);
        let name = format!("run_{step}");
        // The body of one pass, with or without the test after every element; repeated cells
        // folded into loops when asked (`roll`).
        let lines = |check: bool| -> Vec<String> {
            let line = |k: usize, e: String| {
                if check {
                    format!("{} CHECK({e});", body[k].0)
                } else {
                    body[k].0.clone()
                }
            };
            if !shape.roll {
                return (0..body.len()).map(|k| line(k, body[k].1.to_string())).collect();
            }
            let mut out = Vec::new();
            for block in roll(&body) {
                match block {
                    Block::One(k) => out.push(line(k, body[k].1.to_string())),
                    Block::Loop {
                        start,
                        period,
                        reps,
                        stride,
                    } => {
                        out.push(format!("#pragma unroll 1\n      for (unsigned c = 0; c < {reps}; ++c) {{"));
                        out.extend((start..start + period).map(|k| format!("  {}", line(k, format!("{} + {stride} * c", body[k].1)))));
                        out.push("}".into());
                    }
                }
            }
            out
        };
        let passes = |body: &[String], end: &str| {
            format!(
                "for (unsigned pass = pass0; pass < pass0 + npass; ++pass) {{\n      {}\n      {end}\n    }}",
                body.join("\n      ")
            )
        };
        let checked_passes = passes(&lines(true), &format!("FINITE({last});"));
        let tracking = if open {
            format!(
                "{}\n    goto done;\n  recheck:\n    RELOAD;\n    {checked_passes}",
                passes(&lines(false), "if (!ALL_FINITE) goto recheck;")
            )
        } else {
            checked_passes
        };
        let _ = writeln!(
            kernels,
            "extern \"C\" __global__ void __launch_bounds__({bounds}) {name}(PARTICLE_ARGS, unsigned pass0, unsigned npass, double aperture) {{\n  FOR_PARTICLES {{\n    LOAD;\n    {tracking}\n    STORE;\n  }}\n}}"
        );
        let body = checked;
        run_kernels.insert(step, name);
        if !per_element {
            continue;
        }
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
    let source =
        format!("{MAP_PRELUDE}\n{ELEMENTS_SRC}\n{BEND_SRC}\n{MULTIPOLE_SRC}\n__constant__ double K[{nk}];\n\n{functions}\n{kernels}");
    Ok(MapSource {
        source,
        constants,
        run_kernels,
        element_kernels,
    })
}

/// Does a particle that enters `item` with a non-finite coordinate (NaN or ±∞) leave it with
/// one? Then a particle whose six coordinates are finite after a pass of such items had finite
/// coordinates after every element of it, and with an infinite aperture (lost iff x or y is not
/// finite) was lost nowhere in it: what the open form of a run kernel ([`generate`]) relies on.
/// Maps: when every input coordinate is kept (identity row) or appears in a computed row (with a
/// non-zero coefficient, as every stored term has: ±∞ times a non-zero number or 0 · ±∞ and any
/// sum with a non-finite term are not finite). Exact drifts: x, y and s add a multiple of
/// themselves, x', y', δ are kept. RF cavities (`rf_item_track`): x, y as the drifts; x', y'
/// become NaN through p_x = x' · (1+δ)/√(1+x'²+y'²) (∞ · 0 or NaN); s and δ through the
/// arrival time and the sine. Kick integrators (arcsines, divisions) and aperture tests: no.
pub fn keeps_non_finite(item: &RunItem) -> bool {
    match item {
        RunItem::Map { map, .. } => map.keeps_non_finite(),
        RunItem::ExactDrift { .. } | RunItem::Rf { .. } => true,
        RunItem::Kick { .. } | RunItem::Check { .. } => false,
    }
}

/// CUDA twins of `elements/mod.rs`, `elements/bend.rs` and `elements/multipole.rs` (the
/// kick–drift integrators), included in every generated map kernel.
pub const ELEMENTS_SRC: &str = include_str!("../kernels/elements.cu");
pub const BEND_SRC: &str = include_str!("../kernels/bend.cu");
pub const MULTIPOLE_SRC: &str = include_str!("../kernels/multipole.cu");

/// Shared text of every generated map kernel.
const MAP_PRELUDE: &str = r#"// Generated by warpdrive-beam (src/gpu.rs): second-order maps of one lattice.
#define PARTICLE_ARGS double* __restrict__ px, double* __restrict__ pxp, double* __restrict__ py, double* __restrict__ pyp, \
    double* __restrict__ ps, double* __restrict__ pd, unsigned* __restrict__ lost_at, unsigned* __restrict__ lost_pass, unsigned n
#define FOR_PARTICLES for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
#define LOAD if (lost_at[i]) continue; \
    double z0 = px[i], z1 = pxp[i], z2 = py[i], z3 = pyp[i], z4 = ps[i], z5 = pd[i]; unsigned lost = 0, lpass = 0
#define CHECK(e) if (!(fabs(z0) < aperture && fabs(z2) < aperture)) { lost = (e); lpass = pass; goto done; }
#define ALL_FINITE (isfinite(z0) && isfinite(z1) && isfinite(z2) && isfinite(z3) && isfinite(z4) && isfinite(z5))
#define FINITE(e) if (!ALL_FINITE) { lost = (e); lpass = pass; goto done; }
#define RELOAD z0 = px[i]; z1 = pxp[i]; z2 = py[i]; z3 = pyp[i]; z4 = ps[i]; z5 = pd[i]
#define STORE done: px[i] = z0; pxp[i] = z1; py[i] = z2; pyp[i] = z3; ps[i] = z4; pd[i] = z5; \
    if (lost) { lost_at[i] = lost; lost_pass[i] = lpass; }

__device__ __forceinline__ void exact_drift(double& z0, double z1, double& z2, double z3, double& z4, double l) {
    const double path = sqrt(1.0 + z1 * z1 + z3 * z3);
    z0 = z0 + l * z1;
    z2 = z2 + l * z3;
    z4 = z4 + l * path;
}

// RFCA: twin of program.rs `RfItem::track` (elements/rf.rs `Cavity::kick`, elements/mod.rs
// `to_canonical`/`from_canonical`), the same operations in the same order. k: L/2, p0 c, m c²,
// (m c²)², p0 c after, |q| VOLT, PHASE [rad], 2π FREQ, t_ref, period, p0/p0_after, c. The
// sine is CUDA's (within an ulp or two of the CPU's libm), the rest IEEE as on the CPU.
__device__ __forceinline__ void rf_item_track(double& z0, double& z1, double& z2, double& z3, double& z4, double& z5,
                                              unsigned pass, const double* k) {
    if (k[0] > 0.0) exact_drift(z0, z1, z2, z3, z4, k[0]);
    const double f = (1.0 + z5) / sqrt(1.0 + z1 * z1 + z3 * z3);
    const double px = z1 * f, py = z3 * f;
    const double p = k[1] * (1.0 + z5);
    const double t = z4 / (p / sqrt(p * p + k[3]) * k[11]);
    const double dt = t - (k[8] + (double)pass * k[9]);
    const double e = sqrt(p * p + k[3]) + k[5] * sin(k[6] + k[7] * dt);
    const double p1 = sqrt(e * e - k[3]);
    const double delta = p1 / k[4] - 1.0;
    z5 = delta;
    const double qx = px * k[10], qy = py * k[10];
    const double d1 = 1.0 + delta;
    const double ps = sqrt(d1 * d1 - qx * qx - qy * qy);
    z1 = qx / ps;
    z3 = qy / ps;
    const double pa = k[4] * (1.0 + delta);
    z4 = t * (pa / sqrt(pa * pa + k[3])) * k[11];
    if (k[0] > 0.0) exact_drift(z0, z1, z2, z3, z4, k[0]);
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
    /// Repeated cells of a run as loops ([`Shape::roll`]).
    pub roll: bool,
}

/// `WARPDRIVE_BEAM_ROLL=1`: the map kernels with repeated cells as loops ([`Shape::roll`]), for
/// measuring what the smaller code gains against the loops' cost.
pub fn roll_from_env() -> bool {
    std::env::var("WARPDRIVE_BEAM_ROLL").is_ok_and(|v| v == "1")
}

/// Measured on an H100 (docs/performance/beam.md): the fused benchmark line ran at 17.2 TFLOP/s
/// with the compiler's choice, 17.8 with 2 blocks/SM, 16.9 with 3, 14.6 with 4.
pub const DEFAULT_MIN_BLOCKS: u32 = 2;

/// Particles on one GPU.
pub struct GpuBackend {
    gpu: Gpu,
    opts: GpuOptions,
    reference: Reference,
    n: usize,
    z: [CudaSlice<f64>; 6],
    lost_at: CudaSlice<u32>,
    lost_pass: CudaSlice<u32>,
    /// The generated map module (absent when the line has no map element).
    _maps: Option<Arc<CudaModule>>,
    run_fns: HashMap<usize, CudaFunction>,
    elem_fns: HashMap<usize, Vec<CudaFunction>>,
    /// LSC kernels and buffers, made on first use.
    lsc: Option<LscState>,
    /// Kernel time per step kind (ms), accumulated with events.
    pub timing: Timing,
}

/// Accumulated device time [ms].
#[derive(Clone, Debug, Default)]
pub struct Timing {
    pub maps_ms: f64,
    pub lsc_ms: f64,
    pub launches: u64,
}

/// What every LSC kick reuses: the kernels, per-particle times, the reduction slots, the sort
/// keys (sort strategy) and, per bin count, the spectrum buffers and cuFFT plans.
struct LscState {
    module: Arc<CudaModule>,
    t: CudaSlice<f64>,
    red: CudaSlice<f64>,
    ordered: CudaSlice<u64>,
    keys: Option<CudaSlice<u32>>,
    spectra: HashMap<usize, Spectrum>,
}

/// Buffers of one bin count: counts, zero-padded current (M = 2·bins), its half spectrum, the
/// raw voltage, and the D2Z/Z2D plans (or why cuFFT could not be used: the host FFT then).
struct Spectrum {
    counts: CudaSlice<u32>,
    current: CudaSlice<f64>,
    spec: CudaSlice<cudarc::cufft::sys::double2>,
    volts: CudaSlice<f64>,
    fft: Result<(cudarc::cufft::safe::CudaFft, cudarc::cufft::safe::CudaFft), String>,
}

fn grid(n: usize, gpu: &Gpu) -> u32 {
    let max_blocks = (gpu.multiprocessors as u32) * (gpu.max_threads_per_sm as u32 / BLOCK).max(1) * 8;
    (n as u32).div_ceil(BLOCK).clamp(1, max_blocks)
}

fn cfg(gpu: &Gpu, n: usize, shared: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (grid(n, gpu), 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: shared,
    }
}

impl GpuBackend {
    pub fn new(program: &Program, particles: &Particles, reference: Reference, opts: GpuOptions) -> Result<Self, GpuError> {
        let gpu = cuda::open(opts.device)?;
        let shape = Shape {
            min_blocks: opts.min_blocks,
            per_element: opts.per_element,
            open_aperture: opts.aperture == f64::INFINITY,
            roll: opts.roll,
        };
        let src = generate(program, shape).map_err(GpuError::Other)?;
        let mut run_fns = HashMap::new();
        let mut elem_fns = HashMap::new();
        let mut maps = None;
        if let Some(first) = src.run_kernels.values().next() {
            let (module, _) = cuda::load(&gpu, MAPS_NAME, &src.source, first, opts.precise, &map_defines(opts.precise))?;
            if !src.constants.is_empty() {
                let mut sym = module.get_global("K", &gpu.stream)?;
                // SAFETY: `K` is a __constant__ double array of at least constants.len() elements.
                let mut view = unsafe { sym.transmute_mut::<f64>(src.constants.len()) }
                    .ok_or_else(|| GpuError::Other("constant array K is smaller than the coefficients".into()))?;
                gpu.stream.memcpy_htod(&src.constants, &mut view)?;
            }
            for (step, name) in &src.run_kernels {
                run_fns.insert(*step, module.load_function(name)?);
            }
            for (step, names) in &src.element_kernels {
                let f: Result<Vec<_>, _> = names.iter().map(|nm| module.load_function(nm)).collect();
                elem_fns.insert(*step, f?);
            }
            maps = Some(module);
        }
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
            _maps: maps,
            run_fns,
            elem_fns,
            lsc: None,
            timing: Timing::default(),
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
        self.lsc
            .as_ref()
            .and_then(|l| l.spectra.values().find_map(|sp| sp.fft.as_ref().err()))
            .map(String::as_str)
    }

    fn launch_map(&mut self, f: &CudaFunction, pass0: u32, npass: u32) -> Result<(), GpuError> {
        let cfg = cfg(&self.gpu, self.n, 0);
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

    /// The LSC state, made on first use (compiles lsc.cu, allocates the per-particle times).
    fn take_lsc(&mut self) -> Result<LscState, GpuError> {
        if let Some(l) = self.lsc.take() {
            return Ok(l);
        }
        let (module, _) = cuda::load(&self.gpu, LSC_NAME, LSC_SRC, "lsc_kick", self.opts.precise, &[])?;
        let s = &self.gpu.stream;
        Ok(LscState {
            module,
            t: s.alloc_zeros::<f64>(self.n)?,
            red: s.alloc_zeros::<f64>(RED_SLOTS)?,
            ordered: s.alloc_zeros::<u64>(2)?,
            keys: None,
            spectra: HashMap::new(),
        })
    }

    /// Run `f` with the LSC state taken out of `self` (so both can be borrowed), then put it back.
    fn with_lsc<T>(&mut self, f: impl FnOnce(&mut Self, &mut LscState) -> Result<T, GpuError>) -> Result<T, GpuError> {
        let mut l = self.take_lsc()?;
        let out = f(self, &mut l);
        self.lsc = Some(l);
        out
    }

    /// Steps 1, 2, 6 on the device: t of every particle, t_min/t_max and the sums for σx, σy
    /// in `l.red`; returns the slots.
    fn times(&mut self, l: &mut LscState) -> Result<Vec<f64>, GpuError> {
        let s = self.gpu.stream.clone();
        s.memset_zeros(&mut l.red)?;
        s.memcpy_htod(&[u64::MAX, 0u64], &mut l.ordered)?;
        let n = self.n as u32;
        let p0 = self.reference.p_central;
        let f = l.module.load_function("lsc_times")?;
        let mut b = s.launch_builder(&f);
        b.arg(&self.z[0]).arg(&self.z[2]).arg(&self.z[4]).arg(&self.z[5]).arg(&self.lost_at);
        b.arg(&n).arg(&p0).arg(&mut l.t).arg(&mut l.ordered).arg(&mut l.red);
        // SAFETY: matches lsc_times (256 threads: its shared arrays).
        unsafe { b.launch(cfg(&self.gpu, self.n, 0)) }?;
        let f = l.module.load_function("lsc_minmax")?;
        let mut b = s.launch_builder(&f);
        b.arg(&l.ordered).arg(&mut l.red);
        // SAFETY: one thread decodes two values.
        unsafe { b.launch(LaunchConfig::for_num_elems(1)) }?;
        Ok(s.clone_dtoh(&l.red)?)
    }

    /// The spectrum buffers and plans for `bins`, made once per bin count.
    fn spectrum<'a>(&self, l: &'a mut LscState, bins: usize) -> Result<&'a mut Spectrum, GpuError> {
        use cudarc::cufft::{safe::CudaFft, sys::cufftType};
        use std::collections::hash_map::Entry;
        match l.spectra.entry(bins) {
            Entry::Occupied(o) => Ok(o.into_mut()),
            Entry::Vacant(slot) => {
                let s = &self.gpu.stream;
                let m = 2 * bins;
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
                let sp = Spectrum {
                    counts: s.alloc_zeros::<u32>(bins)?,
                    current: s.alloc_zeros::<f64>(m)?,
                    spec: s.alloc_zeros::<cudarc::cufft::sys::double2>(m / 2 + 1)?,
                    volts: s.alloc_zeros::<f64>(m)?,
                    fft: plans,
                };
                Ok(slot.insert(sp))
            }
        }
    }

    /// Step 3: the integer charge histogram of the particles (after [`Self::times`]) into
    /// `counts`, with the configured strategy.
    fn histogram(&self, l: &mut LscState, bins: usize) -> Result<(), GpuError> {
        let s = self.gpu.stream.clone();
        let n = self.n as u32;
        let b32 = bins as u32;
        let keys_len = self.n.max(2).next_power_of_two();
        if self.opts.histogram == Histogram::Sort && l.keys.as_ref().is_none_or(|k| k.len() != keys_len) {
            l.keys = Some(s.alloc_zeros::<u32>(keys_len)?);
        }
        let module = l.module.clone();
        let (t, red) = (&l.t, &l.red);
        let sp = l.spectra.get_mut(&bins).ok_or_else(|| GpuError::Other("spectrum buffers".into()))?;
        s.memset_zeros(&mut sp.counts)?;
        let counts = &mut sp.counts;
        match self.opts.histogram {
            Histogram::BlockAtomic => {
                let f = module.load_function("hist_block_atomic")?;
                if bins * 4 > 48 * 1024 {
                    f.set_attribute(
                        cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                        (bins * 4) as i32,
                    )?;
                }
                let mut b = s.launch_builder(&f);
                b.arg(t).arg(&self.lost_at).arg(&n).arg(red).arg(&b32).arg(counts);
                // SAFETY: matches hist_block_atomic; shared memory holds `bins` counters.
                unsafe { b.launch(cfg(&self.gpu, self.n, b32 * 4)) }?;
            }
            Histogram::BlockSortScan => {
                let f = module.load_function("hist_block_sort_scan")?;
                let blocks = n.div_ceil(1024).clamp(1, self.gpu.multiprocessors as u32 * 8);
                let launch = LaunchConfig {
                    grid_dim: (blocks, 1, 1),
                    block_dim: (512, 1, 1),
                    shared_mem_bytes: 0,
                };
                let mut b = s.launch_builder(&f);
                b.arg(t).arg(&self.lost_at).arg(&n).arg(red).arg(&b32).arg(counts);
                // SAFETY: matches hist_block_sort_scan (512 threads, 1024 keys per block).
                unsafe { b.launch(launch) }?;
            }
            Histogram::Sort => {
                let keys = l.keys.as_mut().ok_or_else(|| GpuError::Other("sort keys".into()))?;
                let p32 = keys_len as u32;
                let all = cfg(&self.gpu, keys_len, 0);
                let f = module.load_function("hist_keys")?;
                let mut b = s.launch_builder(&f);
                b.arg(t).arg(&self.lost_at).arg(&n).arg(&p32).arg(red).arg(&b32).arg(&mut *keys);
                // SAFETY: matches hist_keys.
                unsafe { b.launch(all) }?;
                let step = module.load_function("bitonic_step")?;
                let mut k = 2u32;
                while k <= p32 {
                    let mut j = k / 2;
                    while j > 0 {
                        let mut b = s.launch_builder(&step);
                        b.arg(&mut *keys).arg(&p32).arg(&k).arg(&j);
                        // SAFETY: matches bitonic_step.
                        unsafe { b.launch(all) }?;
                        j /= 2;
                    }
                    k *= 2;
                }
                let f = module.load_function("hist_bounds")?;
                let mut b = s.launch_builder(&f);
                b.arg(&*keys).arg(&p32).arg(&b32).arg(counts);
                let launch = LaunchConfig {
                    grid_dim: (b32.div_ceil(BLOCK), 1, 1),
                    block_dim: (BLOCK, 1, 1),
                    shared_mem_bytes: 0,
                };
                // SAFETY: matches hist_bounds.
                unsafe { b.launch(launch) }?;
            }
        }
        Ok(())
    }

    /// Histogram only (for the strategy checks): counts with the current strategy.
    pub fn charge_histogram(&mut self, bins: usize) -> Result<Vec<u32>, GpuError> {
        self.with_lsc(|me, l| {
            me.times(l)?;
            me.spectrum(l, bins)?;
            me.histogram(l, bins)?;
            Ok(me.gpu.stream.clone_dtoh(&l.spectra[&bins].counts)?)
        })
    }

    /// Steps 1–10 of one kick (the half drifts around it are the caller's).
    fn kick(&mut self, l: &mut LscState, params: &LscParams, charge: f64) -> Result<LscStats, GpuError> {
        let s = self.gpu.stream.clone();
        let r = self.times(l)?;
        let (tmin, tmax) = (r[RED_TMIN], r[RED_TMAX]);
        let mut stats = LscStats {
            tmin,
            tmax,
            ..Default::default()
        };
        if !params.acts_on(tmin, tmax, charge) {
            return Ok(stats);
        }
        stats.sigma_x = crate::lsc::rms_from_sums(r[RED_N], r[RED_SX], r[RED_SXX]);
        stats.sigma_y = crate::lsc::rms_from_sums(r[RED_N], r[RED_SY], r[RED_SYY]);
        stats.radius = params.beam_radius(stats.sigma_x, stats.sigma_y);
        if stats.radius <= 0.0 {
            return Ok(stats);
        }
        let bins = params.bins;
        let (b32, m) = (bins as u32, 2 * bins);
        self.spectrum(l, bins)?;
        self.histogram(l, bins)?;
        let q = charge / self.n as f64;
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
            // m c²/|q|: the kernel's ΔE = −V/mass_ev is then the kick of a particle of charge q
            // (for |q| = 1 the same value, so GPU = CPU bit for bit as before).
            mass_ev: self.reference.mass_per_charge(),
            bins: b32,
            interpolate: u32::from(params.interpolate),
        };
        let module = l.module.clone();
        let red = &mut l.red;
        let sp = l.spectra.get_mut(&bins).ok_or_else(|| GpuError::Other("spectrum buffers".into()))?;
        // Steps 4, 5: maximum count and the zero-padded current.
        let f = module.load_function("lsc_current")?;
        let mut b = s.launch_builder(&f);
        b.arg(&sp.counts).arg(&b32).arg(&q).arg(&mut *red).arg(&mut sp.current);
        // SAFETY: matches lsc_current.
        unsafe { b.launch(cfg(&self.gpu, m, 0)) }?;
        // Steps 5, 7, 8: cuFFT D2Z, impedance, Z2D (unnormalised); the host FFT without cuFFT.
        match &sp.fft {
            Ok((fwd, inv)) => {
                fwd.exec_d2z(&sp.current, &mut sp.spec)
                    .map_err(|e| GpuError::Other(format!("cuFFT D2Z: {e:?}")))?;
                let f = module.load_function("lsc_impedance")?;
                let mut b = s.launch_builder(&f);
                b.arg(&mut sp.spec).arg(&*red).arg(&dev);
                // SAFETY: matches lsc_impedance (one thread per frequency 0..=m/2).
                unsafe { b.launch(LaunchConfig::for_num_elems((m / 2 + 1) as u32)) }?;
                inv.exec_z2d(&mut sp.spec, &mut sp.volts)
                    .map_err(|e| GpuError::Other(format!("cuFFT Z2D: {e:?}")))?;
            }
            Err(_) => {
                let cur = s.clone_dtoh(&sp.current)?;
                let dt = (tmax - tmin) / bins as f64;
                let v = crate::lsc::raw_voltage(&cur, dt, stats.radius, params, &self.reference);
                s.memcpy_htod(&v, &mut sp.volts)?;
            }
        }
        // Steps 9, 10.
        let f = module.load_function("lsc_kick")?;
        let n = self.n as u32;
        let launch = cfg(&self.gpu, self.n, 0);
        let [_, _, _, _, z4, z5] = &mut self.z;
        let mut b = s.launch_builder(&f);
        b.arg(z4)
            .arg(z5)
            .arg(&self.lost_at)
            .arg(&l.t)
            .arg(&n)
            .arg(&sp.volts)
            .arg(&*red)
            .arg(&dev);
        // SAFETY: matches lsc_kick.
        unsafe { b.launch(launch) }?;
        let r = s.clone_dtoh(&*red)?;
        let raw = s.clone_dtoh(&sp.volts)?;
        stats.voltage = raw[..bins].iter().map(|v| v / m as f64).collect();
        stats.max_count = r[RED_MAXCOUNT].to_bits();
        stats.peak_current = stats.max_count as f64 * q / ((tmax - tmin) / bins as f64);
        Ok(stats)
    }
}

/// Reduction slots of lsc.cu (`enum RED_*`).
const RED_TMIN: usize = 0;
const RED_TMAX: usize = 1;
const RED_SX: usize = 2;
const RED_SXX: usize = 3;
const RED_SY: usize = 4;
const RED_SYY: usize = 5;
const RED_N: usize = 6;
const RED_MAXCOUNT: usize = 7;
const RED_SLOTS: usize = 8;

impl Backend for GpuBackend {
    fn run(&mut self, step: usize, _items: &[RunItem], passes: std::ops::Range<u32>) -> Result<(), String> {
        self.run_step(step, passes).map_err(|e| e.to_string())
    }

    fn lsc(&mut self, step: usize, params: &LscParams, _half: &[RunItem], charge: f64, pass: u32) -> Result<LscStats, String> {
        (|| -> Result<LscStats, GpuError> {
            self.run_step(step, pass..pass + 1)?;
            let start = self.event()?;
            let st = self.with_lsc(|me, l| me.kick(l, params, charge))?;
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

/// The constants of `rf_item_track` (the CUDA twin of `program::RfItem::track`), computed here
/// as the CPU computes them: L/2, p0 c, m c², (m c²)², p0 c after the cavity, |q|·VOLT, PHASE
/// [rad], 2π·FREQ, the reference's arrival time and period, p0/p0_after, c. `None` without a
/// reference particle.
fn rf_constants(rf: &crate::program::RfItem) -> Option<[f64; RF_CONSTANTS]> {
    let r = rf.reference.as_ref()?;
    let c = &rf.cavity;
    let p0_after = c.p0_after(r);
    Some([
        0.5 * c.l,
        r.p0_ev,
        r.mass_ev,
        r.mass_ev * r.mass_ev,
        p0_after,
        r.charge.abs() * c.volt,
        c.phase.to_radians(),
        2.0 * std::f64::consts::PI * c.freq,
        rf.t_ref,
        rf.period,
        r.p0_ev / p0_after,
        crate::elements::rf::C_LIGHT,
    ])
}

/// Number of constants of one RF cavity in the generated kernels.
const RF_CONSTANTS: usize = 12;

/// File name the generated map kernels are compiled under.
pub const MAPS_NAME: &str = "beam_maps.cu";

/// Generated map sources that `warpdrive doctor` compiles: the benchmark line (maps only and
/// with LSCDRIFT), a line with every element kind, the aperture line, the RF ring and the
/// open-aperture loss line (also with its cells as loops), as tracked without an aperture (the
/// open form where a run has it; compiled with the RF checks' reference particle; lines without
/// a cavity do not use it). (name, source, run-kernel names)
pub fn doctor_sources() -> Vec<(String, String, Vec<String>)> {
    let lines = [
        ("beam_maps_bench.cu", crate::lattice::bench_lte(false)),
        ("beam_maps_bench_lsc.cu", crate::lattice::bench_lte(true)),
        ("beam_maps_all_kinds.cu", crate::gpu_check::ALL_KINDS.to_string()),
        ("beam_maps_apertures.cu", crate::gpu_check::APERTURE_LINE.to_string()),
        ("beam_maps_open_apertures.cu", crate::gpu_check::OPEN_APERTURE_LINE.to_string()),
        ("beam_maps_rf.cu", crate::gpu_check::RF_LINE.to_string()),
        ("beam_maps_kicks.cu", crate::gpu_check::KICK_LINE.to_string()),
        ("beam_maps_open_loss.cu", crate::gpu_check::OPEN_LOSS_LINE.to_string()),
        ("beam_maps_open_loss_rolled.cu", crate::gpu_check::OPEN_LOSS_LINE.to_string()),
    ];
    let reference = crate::gpu_check::rf_reference();
    lines
        .into_iter()
        .filter_map(|(name, text)| {
            let lattice = crate::lattice::parse(&text, name, None).ok()?;
            let shape = Shape {
                roll: name.ends_with("_rolled.cu"),
                ..Shape::new(true)
            };
            let src = generate(&Program::compile_with(&lattice, Some(&reference)), shape).ok()?;
            let mut fns: Vec<String> = src.run_kernels.values().cloned().collect();
            fns.sort();
            Some((name.to_string(), src.source, fns))
        })
        .collect()
}

/// The builds runs ask for, for `doctor --prebuild`: the LSC kernel and the map kernels of the
/// benchmark line (maps only and with LSCDRIFT), fast and precise. The map kernels of other
/// lattices are generated from them: compiled at their first run, then cached on disk.
#[must_use]
pub fn prebuilt_builds() -> Vec<warpdrive_core::kernels::Build> {
    use warpdrive_core::kernels::Build;
    let mut out = Vec::new();
    for precise in [false, true] {
        out.push(Build::new(LSC_NAME, LSC_SRC, precise, Vec::new()));
        for (name, src, _) in doctor_sources() {
            if name.starts_with("beam_maps_bench") {
                out.push(Build::new(MAPS_NAME, &src, precise, map_defines(precise)));
            }
        }
    }
    out
}

/// The builds `warpdrive doctor` checks: the LSC kernels, then the map kernels generated for
/// the lines of [`doctor_sources`] (fast and precise).
pub fn kernel_sets() -> Vec<warpdrive_core::doctor::KernelSet> {
    let mut sets = warpdrive_core::doctor::KernelSet::fixed(KERNELS, SWITCHES, true);
    sets.extend(doctor_sources().into_iter().map(|(file, src, functions)| {
        let mut set = warpdrive_core::doctor::KernelSet::generated(file, src, functions);
        set.variants.push(vec![FAST_MAPS.to_string()]);
        set
    }));
    sets
}
