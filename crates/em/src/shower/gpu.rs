//! The CUDA path of showers (`kernels/shower.cu`): each track runs to its end as
//! [`super::transport`] runs it on the CPU (same operations in the same order, same random
//! draws), so that in precise mode every event's tallies can be bit-identical to the CPU's.
//!
//! **Phase schedule (default, [`Schedule::Phases`]).** The host uploads the primaries of a
//! batch of events to the fronts of two queues (γ and e±); every secondary is appended to the
//! queue of its kind (ids = [`super::transport::child_id`] of the parent id and ordinal, the
//! event index carried along). Tracks are stepped in fixed slots ([`PHASE_SLOTS`] per kind),
//! six launches per step: `along_charged` and `along_gamma` take a new track from the queue
//! into each empty slot and run the first part of a step (limits, geometry, continuous loss,
//! scattering, the choice of the discrete interaction) for every slot, appending the slots that
//! interact to one list per process; an e± step that crosses a boundary is set aside before its
//! true length (a bisection) and finished by `cross_charged`, all lanes bisecting together;
//! `phase_clamp` settles the queues' heads; `interact_gamma` and `interact_charged` run the
//! interactions list after list, so that a warp runs one interactor with all its lanes. The
//! host repeats this until no track is live. Against the queue schedule on an H100 (1 GeV and
//! 10 GeV e⁻ in TestEm3, precise mode, b39db8f): 3.1 × and 3.3 × the events per second — the
//! one-launch kernel's warps spent most cycles waiting for instruction fetch across its 280 kB
//! of code, with 10 of 32 lanes active (docs/performance/em.md).
//!
//! **Queue schedule ([`Schedule::Queue`], `WARPDRIVE_EM_SCHEDULE=queue`).** One launch of
//! `showers` per batch, with no more blocks than are resident; each thread steps its track one
//! step per loop iteration, publishes its secondaries, and takes another published track as
//! soon as its own ends, until no track is live. Each queue holds every track of its kind of
//! the batch (in the phase schedule too).
//!
//! **Generation schedule ([`Schedule::Generations`], `WARPDRIVE_EM_SCHEDULE=generations`).**
//! `photons` and `charged` run over the current γ and e± lists (two streams), appending the
//! secondaries to two output lists; the outputs become the next inputs until both are empty.
//!
//! In all three, processing order differs from the CPU's LIFO stack, but a track's history
//! depends only on its own start (energy, position, direction, slab, id → random stream), and
//! the tallies are integers ([`super::transport::FIXED_SCALE`]) summed with integer atomics, so
//! the result does not depend on the order.
//!
//! **Overflow.** The lists are sized from the free device memory ([`GpuShowerOptions`]); when a
//! queue or a generation would overflow them the kernel raises a flag, and the host re-runs the batch with
//! half the events (tallies cleared first): the result is the same by construction. Re-runs are
//! counted in [`GpuShowerStats::reruns`].
//!
//! **Data.** Per material the log-E grids the CPU reads (Compton, pair, Rayleigh, dE/dx,
//! range, δ-ray Σ, bremsstrahlung Σ and MSC λ₁ for e⁻ and e⁺), the cuts, the elements (Z,
//! atom density, and ln Z, Z^{1/3}, f_c(Z) computed here with the host's libm, as the CPU
//! computes them), and the photoelectric and Rayleigh per-element tables of the elements used —
//! all flattened into one `f64` array with offsets. The GPU evaluates the same numbers; it
//! derives none of them.
//!
//! **Precision.** Compiled in precise mode (IEEE division and square root, no FMA contraction).
//! The transcendentals (ln, exp, pow, sin, cos, cbrt, ln_1p, exp_m1) are CUDA's, which can
//! differ from the host's libm in the last bit; such a difference changes a track's history
//! from there on, so before the portable `pmath` functions are used on both sides a few events
//! per hundred may differ from the CPU (statistically equivalent, not bit-identical).

use super::detector::DetectorPhysics;
use super::geometry::Calorimeter;
use super::grid::LogGrid;
use super::material::coulomb_correction;
use super::photoelectric::{sauter_shape, PhotoData, N_SHELLS};
use super::physics::MaterialPhysics;
use super::rayleigh::RayleighData;
use super::run::ShowerRun;
use super::transport::{primary_id, primary_start, to_fixed, EventTally, Hit, Primary, ShowerPhysics, MAX_PRIMARY_ENERGY};
use super::{brems, Particle, ELECTRON_RADIUS, TWOPI_MC2_RCL2};
use crate::geo::device::{BvhNodeRecord, DeviceGeometry, LogicalRecord, PlacementRecord, SolidRecord};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg};
use std::mem::size_of;
use std::sync::Arc;
use warpdrive_core::cuda::{self, GpuError};
use warpdrive_core::pmath::Portable;
use warpdrive_core::progress::Progress;

pub const KERNEL_NAME: &str = "shower.cu";
pub const KERNEL_SRC: &str = include_str!("../../kernels/shower.cu");
/// The build for GDML detectors ([`run_detector_range`]): the same kernel with its geometry hooks
/// switched to the volume tree (`WD_GEOMETRY_GDML`: detector.rs next_boundary, cross, safety,
/// curved_step, the slot's material), after the navigator's twins (`kernels/geo/*.cuh`) and the
/// fields' (`kernels/field/helix.cuh`, `map.cuh`, `rk.cuh`, `propagate.cuh`: the helix, the
/// (r, z) map, its Dormand–Prince stepping and the boundary search along the curved path). The slab build's source is untouched by the switch (its preprocessed text
/// is the same).
pub const GDML_NAME: &str = "shower_gdml.cu";
pub const GDML_SRC: &str = concat!(
    "#define WD_GEOMETRY_GDML 1\n",
    include_str!("../../kernels/geo/vec3.cuh"),
    include_str!("../../kernels/geo/roots.cuh"),
    include_str!("../../kernels/geo/solid.cuh"),
    include_str!("../../kernels/geo/navigator.cuh"),
    include_str!("../../kernels/field/helix.cuh"),
    include_str!("../../kernels/field/map.cuh"),
    include_str!("../../kernels/field/rk.cuh"),
    include_str!("../../kernels/field/propagate.cuh"),
    include_str!("../../kernels/shower.cu"),
);
pub const KERNELS: &[(&str, &str, &[&str])] = &[
    (KERNEL_NAME, KERNEL_SRC, &["photons", "charged", "showers"]),
    (
        GDML_NAME,
        GDML_SRC,
        &[
            "photons",
            "charged",
            "showers",
            "along_charged",
            "cross_charged",
            "along_gamma",
            "phase_clamp",
            "interact_gamma",
            "interact_charged",
        ],
    ),
];
/// Kernel switches: `WD_INLINE` inlines the device functions (the build before 13a2467; for
/// comparisons through `WARPDRIVE_EM_KERNEL_DEFINES=WD_INLINE`, same results); `WD_FAST` is
/// the fast mode (CUDA's libm instead of the portable functions; [`GpuShowerOptions::precise`]).
pub const SWITCHES: &[&str] = &["WD_INLINE", "WD_FAST"];
/// Threads per block (the kernels' `__launch_bounds__`).
const BLOCK: u32 = 128;
/// Most elements per material the kernel's fixed arrays hold (`WD_MAX_ELEMENTS`).
pub const MAX_ELEMENTS: usize = 16;
/// Words (u64) per track in the lists: energy, pos, dir, id, event | slab << 32, particle.
pub const TRACK_WORDS: usize = 10;
/// Words per track of the GDML build: then `particle | depth << 32`, the time [ns] and the
/// volume path's 16 placements (`WdTrack::time`, `path`: 88 + 4 × 16 bytes).
pub const GDML_TRACK_WORDS: usize = 19;
/// Words (u64) per hit of the GDML build (`WdHit`): track id, deposit, time, pos, event | slot
/// << 32, ordinal.
pub const HIT_WORDS: usize = 8;
/// Per-thread stack of the GDML build [bytes]: the navigator's boolean solids recurse (the
/// geometry kernels take 4 KiB), and a hook holds a volume path with its transforms (1.6 kB).
const GDML_STACK_BYTES: usize = 8192;
/// Largest list capacity (tracks): keeps the 32-bit counters far from wrapping.
const MAX_CAPACITY: usize = 1 << 27;
/// Queue mode's control words (kernel WD_Q_HEAD(k) = 32 k, WD_Q_LIVE = 64: one cache line each).
const QUEUE_CTL_WORDS: usize = 96;
const QUEUE_LIVE: usize = 64;
/// Generations after which a batch is declared stuck (a bug guard).
const MAX_GENERATIONS: u64 = 100_000;

/// Twin of `WdGrid`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GpuGrid {
    pub off: u32,
    pub n: u32,
    pub log_front: f64,
    pub log_delta: f64,
}
const _: () = assert!(size_of::<GpuGrid>() == 24);

/// Twin of `WdElement`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GpuElement {
    pub z: f64,
    pub atom_density: f64,
    pub ln_z: f64,
    pub cbrt_z: f64,
    pub coulomb: f64,
    pub photo: i32,
    pub rayleigh: i32,
}
const _: () = assert!(size_of::<GpuElement>() == 48);

/// Twin of `WdPhoto`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GpuPhoto {
    pub binding: [f64; N_SHELLS],
    pub omega_k: f64,
    pub ka_energy: f64,
    pub ka_rate: f64,
    pub kb_energy: f64,
    pub kb_rate: f64,
    pub sauter_end: f64,
    pub off: u32,
    pub n: u32,
}
const _: () = assert!(size_of::<GpuPhoto>() == 128);

/// Twin of `WdRayleigh`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GpuRayleigh {
    pub off: u32,
    pub nxs: u32,
    pub nff: u32,
    pub pad: u32,
}
const _: () = assert!(size_of::<GpuRayleigh>() == 16);

/// Twin of `WdMaterial` (`[0]` e⁻, `[1]` e⁺).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GpuMaterial {
    pub compton: GpuGrid,
    pub pair: GpuGrid,
    pub rayleigh: GpuGrid,
    pub dedx: [GpuGrid; 2],
    pub range: [GpuGrid; 2],
    pub delta_xs: [GpuGrid; 2],
    pub brems_xs: [GpuGrid; 2],
    pub msc: [GpuGrid; 2],
    pub cut_gamma: f64,
    pub cut_electron: f64,
    pub electron_density: f64,
    pub plasma_energy: f64,
    pub radiation_length: f64,
    pub elem_off: u32,
    pub n_elem: u32,
}
const _: () = assert!(size_of::<GpuMaterial>() == 24 * 13 + 48);

/// Twin of `ShowerParams` (device pointers as u64).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct ShowerParams {
    data: u64,
    materials: u64,
    elements: u64,
    photo: u64,
    rayleigh: u64,
    planes: u64,
    slab_material: u64,
    slabs: u32,
    n_materials: u32,
    transverse: f64,
    twopi_mc2_rcl2: f64,
    alpha_re2: f64,
    pi_re2: f64,
    seed: u64,
    tally: u64,
    stride: u32,
    capacity: u32,
    out_gamma: u64,
    out_charged: u64,
    out_size: u64,
    overflow: u64,
    queue_ctl: u64,
    ready: u64,
    first: [u32; 2],
}
const _: () = assert!(size_of::<ShowerParams>() == 176);
const _: () = assert!(std::mem::offset_of!(ShowerParams, tally) == 104);
const _: () = assert!(std::mem::offset_of!(ShowerParams, overflow) == 144);

/// Twin of `WdPhaseParams` (phase schedule).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct PhaseParams {
    gamma: u64,
    charged: u64,
    mid: u64,
    alive: u64,
    list: u64,
    count: u64,
    n_slots: [u32; 2],
    list_stride: u32,
    pad: u32,
}
const _: () = assert!(size_of::<PhaseParams>() == 64);
/// Bytes of the kernel's `WdPhotonState` and `WdChargedState` (one per slot; the host only
/// allocates them), checked against the kernel by the `static_assert`s in shower.cu.
const PHOTON_STATE_BYTES: usize = 192;
const CHARGED_STATE_BYTES: usize = 224;
/// Bytes of the kernel's `WdChargedMid` (a crossing e± step's first half, one per e± slot).
const CHARGED_MID_BYTES: usize = 72;
/// The same three of the GDML build (a track holds its volume path, an event the parent's
/// track, a track its time, a boundary the navigator's distance in mm too, an e± its path length
/// in vacuum, a step's first half its start's slot and point and the end of its curved step).
const GDML_PHOTON_STATE_BYTES: usize = 272;
const GDML_CHARGED_STATE_BYTES: usize = 312;
const GDML_CHARGED_MID_BYTES: usize = 112;
/// Lists of the phase schedule: one per process, 4 for γ (Compton, photoelectric, conversion,
/// Rayleigh) and 3 for e± (δ-ray, bremsstrahlung, annihilation), then the e± steps that cross a
/// boundary (kernel WD_LIST_CROSSING).
const PHASE_LISTS: usize = 8;
/// Slots per kind of the phase schedule (`WARPDRIVE_EM_SLOTS` overrides, for comparisons):
/// H100, `bench em --problem testem3`, same call: 2¹⁸ 22 438 / 2 675 events/s (1 / 10 GeV),
/// 2¹⁹ 24 222 / 3 165; 2²⁰ was slower at 1 GeV than 2¹⁸ (docs/performance/em.md). 256 MB of
/// states.
const PHASE_SLOTS: usize = 1 << 19;
/// Iterations between two reads of the live-track count (each read waits for the device), at
/// most: fewer while a poll takes longer than [`POLL_SECONDS`].
const PHASE_POLL: u64 = 16;
/// The longest a poll of the phase schedule should take: the stop flag is read between polls,
/// so Ctrl-C waits for at most about this (and at least one iteration). Halved polls while
/// slower, doubled back while under a fifth of it.
const POLL_SECONDS: f64 = 0.25;

// SAFETY: plain old data with the kernel's layouts (checked above and by static_assert in
// shower.cu).
unsafe impl DeviceRepr for ShowerParams {}
unsafe impl DeviceRepr for PhaseParams {}
unsafe impl DeviceRepr for GpuMaterial {}
unsafe impl DeviceRepr for GpuElement {}
unsafe impl DeviceRepr for GpuPhoto {}
unsafe impl DeviceRepr for GpuRayleigh {}
unsafe impl DeviceRepr for GdmlRecord {}

/// Twin of `WdGdml` (the GDML build's volume tree: device pointers as u64), the one record
/// `ShowerParams::gdml` points to.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct GdmlRecord {
    solids: u64,
    pool: u64,
    logical: u64,
    placements: u64,
    slot_offset: u64,
    world: u32,
    /// The field (kernel `WD_FIELD_NONE`, `WD_FIELD_UNIFORM` with B [T], `WD_FIELD_MAP`) and the
    /// accuracy of the curved path [mm].
    field_on: u32,
    field: [f64; 3],
    delta_chord: f64,
    delta_intersection: f64,
    /// The per-level trees (`DeviceGeometry::bvh_*`).
    bvh_nodes: u64,
    bvh_items: u64,
    bvh_root: u64,
    /// The field map on the device (kernel `FieldMap`): node radii, node z, (B_r, B_z) per node.
    map_r: u64,
    map_z: u64,
    map_b: u64,
    map_nr: u32,
    map_nz: u32,
    map_b_max: f64,
    epsilon: f64,
    /// Hits: per volume slot whether it is sensitive (u8), the hit buffer (`WdHit`), its
    /// counter and capacity (0: no sensitive volume, no hits recorded).
    sensitive: u64,
    hits: u64,
    hit_count: u64,
    hit_capacity: u32,
    pad: u32,
}
const _: () = assert!(size_of::<GdmlRecord>() == 192);

/// The geometry a GPU run tracks in: the slab calorimeter (`shower.cu`) or a GDML detector
/// (`shower_gdml.cu`, its volume tree flattened by [`DeviceGeometry`]).
#[derive(Clone, Copy)]
pub enum GpuGeometry<'a> {
    Slabs(&'a ShowerPhysics),
    Gdml(&'a DetectorPhysics),
}

impl GpuGeometry<'_> {
    /// Tally slots: slabs or volume instances.
    #[must_use]
    pub fn slots(&self) -> usize {
        match self {
            Self::Slabs(p) => p.calorimeter.slabs(),
            Self::Gdml(d) => d.volumes(),
        }
    }

    /// Shower materials (track-length words).
    #[must_use]
    pub fn n_materials(&self) -> usize {
        match self {
            Self::Slabs(p) => p.calorimeter.materials.len(),
            Self::Gdml(d) => d.materials.len(),
        }
    }

    fn transverse(&self) -> f64 {
        match self {
            Self::Slabs(p) => p.calorimeter.transverse,
            Self::Gdml(_) => 0.0,
        }
    }

    /// The kernel build (name, source).
    #[must_use]
    pub fn kernel(&self) -> (&'static str, &'static str) {
        match self {
            Self::Slabs(_) => (KERNEL_NAME, KERNEL_SRC),
            Self::Gdml(_) => (GDML_NAME, GDML_SRC),
        }
    }

    /// Words per track in the lists.
    #[must_use]
    pub fn track_words(&self) -> usize {
        match self {
            Self::Slabs(_) => TRACK_WORDS,
            Self::Gdml(_) => GDML_TRACK_WORDS,
        }
    }

    /// Bytes of a photon state, a charged state and a crossing step's first half.
    fn state_bytes(&self) -> [usize; 3] {
        match self {
            Self::Slabs(_) => [PHOTON_STATE_BYTES, CHARGED_STATE_BYTES, CHARGED_MID_BYTES],
            Self::Gdml(_) => [GDML_PHOTON_STATE_BYTES, GDML_CHARGED_STATE_BYTES, GDML_CHARGED_MID_BYTES],
        }
    }

    /// The primaries of events `lo..hi` as list words, and which events' primaries miss.
    #[must_use]
    pub fn primaries(&self, primary: &Primary, lo: u64, hi: u64) -> ([Vec<u64>; 2], Vec<bool>) {
        match self {
            Self::Slabs(p) => batch_primaries(p, primary, lo, hi),
            Self::Gdml(d) => detector_primaries(d, primary, lo, hi),
        }
    }
}

/// Everything the kernel reads, flattened on the host (no device needed: unit-testable).
#[derive(Clone, Debug, Default)]
pub struct HostTables {
    /// The constants the kernel takes from the host: 2π r_e² mc², α r_e², π r_e².
    pub constants: [f64; 3],
    pub data: Vec<f64>,
    pub materials: Vec<GpuMaterial>,
    pub elements: Vec<GpuElement>,
    pub photo: Vec<GpuPhoto>,
    pub rayleigh: Vec<GpuRayleigh>,
    /// z of every slab boundary (slabs + 1).
    pub planes: Vec<f64>,
    /// Per slab (GDML: per volume slot) the material's index, [`VACUUM_SLOT`] for vacuum.
    pub slab_material: Vec<u32>,
    /// The GDML build's volume tree and per placement its slot offset.
    pub gdml: Option<(DeviceGeometry, Vec<u32>)>,
    /// The GDML build's uniform field (`WdGdml::field_on`, `field`, `delta_chord`,
    /// `delta_intersection`); `None`: no uniform field.
    pub field: Option<UniformFieldRecord>,
    /// The GDML build's field map (`WdGdml::map_*`, `epsilon`); `None`: no map.
    pub field_map: Option<FieldMapRecord>,
    /// The GDML build: per volume slot 1 where it records hits (`WdGdml::sensitive`); empty
    /// when no volume does.
    pub sensitive: Vec<u8>,
}

/// A GDML detector's field map as the kernel reads it (`kernels/field/map.cuh` `FieldMap`):
/// the node coordinates [mm], (B_r, B_z) [T] per node `i * nz + j` flattened, the largest |B|
/// [T], and the curved path's accuracy (detector.rs `accuracy`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FieldMapRecord {
    pub r: Vec<f64>,
    pub z: Vec<f64>,
    pub b: Vec<f64>,
    pub b_max: f64,
    pub delta_chord: f64,
    pub delta_intersection: f64,
    pub epsilon: f64,
}

impl FieldMapRecord {
    /// Bytes the map takes on the device.
    #[must_use]
    pub fn bytes(&self) -> usize {
        8 * (self.r.len() + self.z.len() + self.b.len())
    }
}

/// A GDML detector's uniform field as the kernel reads it: B [T] in the world's frame and the
/// curved path's accuracy [mm] (detector.rs `field`, `accuracy`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct UniformFieldRecord {
    pub b: [f64; 3],
    pub delta_chord: f64,
    pub delta_intersection: f64,
}

/// `WdGdml::field_on` of a uniform field and of a field map (kernel `WD_FIELD_UNIFORM`,
/// `WD_FIELD_MAP`).
pub const FIELD_UNIFORM: u32 = 1;
pub const FIELD_MAP: u32 = 2;

/// The material index of a vacuum slot (kernel `WD_VACUUM`).
pub const VACUUM_SLOT: u32 = u32::MAX;

impl HostTables {
    fn grid(&mut self, g: &LogGrid) -> GpuGrid {
        let off = self.data.len() as u32;
        self.data.extend_from_slice(&g.energy);
        self.data.extend_from_slice(&g.value);
        GpuGrid {
            off,
            n: g.len() as u32,
            log_front: g.log_front,
            log_delta: g.log_delta,
        }
    }

    fn opt_grid(&mut self, g: Option<&LogGrid>) -> GpuGrid {
        g.map_or_else(GpuGrid::default, |g| self.grid(g))
    }

    /// Flatten the physics of `phys`. Errors name what the kernel cannot hold.
    pub fn build(phys: &ShowerPhysics) -> Result<HostTables, String> {
        let mut t = Self::build_materials(&phys.materials)?;
        let cal = &phys.calorimeter;
        t.planes = planes(cal);
        t.slab_material = (0..cal.slabs()).map(|s| cal.material_index(s) as u32).collect();
        Ok(t)
    }

    /// Flatten the physics and the volume tree of a GDML detector: per volume slot its material
    /// (detector.rs `material`), per placement its slot offset. Errors name what the kernel
    /// cannot hold (a tree deeper than the device navigator's paths).
    pub fn build_detector(det: &DetectorPhysics) -> Result<HostTables, String> {
        let mut t = Self::build_materials(&det.materials)?;
        let volumes = det.volume_list();
        t.slab_material = volumes
            .iter()
            .map(|v| det.material_of[v.material].map_or(VACUUM_SLOT, |i| i as u32))
            .collect();
        if det.any_sensitive() {
            t.sensitive = volumes.iter().map(|v| u8::from(det.sensitive[v.logical as usize])).collect();
        }
        let g = DeviceGeometry::new(&det.gdml.tree).map_err(|e| format!("{}: {e}", det.gdml.path.display()))?;
        let offsets = det.offsets.iter().map(|&o| o as u32).collect();
        t.gdml = Some((g, offsets));
        t.field = match &det.field {
            None => None,
            Some(crate::field::Field::Uniform(u)) => Some(UniformFieldRecord {
                b: [u.b.x, u.b.y, u.b.z],
                delta_chord: det.accuracy.delta_chord,
                delta_intersection: det.accuracy.delta_intersection,
            }),
            Some(crate::field::Field::Map(_)) => None,
        };
        t.field_map = match &det.field {
            Some(crate::field::Field::Map(m)) => Some(FieldMapRecord {
                r: m.r.clone(),
                z: m.z.clone(),
                b: m.b.iter().flatten().copied().collect(),
                b_max: m.b_max,
                delta_chord: det.accuracy.delta_chord,
                delta_intersection: det.accuracy.delta_intersection,
                epsilon: det.accuracy.epsilon,
            }),
            _ => None,
        };
        Ok(t)
    }

    fn build_materials(materials: &[MaterialPhysics]) -> Result<HostTables, String> {
        let mut t = HostTables {
            constants: [
                TWOPI_MC2_RCL2,
                brems::ALPHA_RE2,
                std::f64::consts::PI * ELECTRON_RADIUS * ELECTRON_RADIUS,
            ],
            ..HostTables::default()
        };
        let photo_data = PhotoData::builtin();
        let rayleigh_data = RayleighData::builtin();
        // Per-Z tables, once per element used.
        let mut photo_of: Vec<(u32, i32)> = Vec::new();
        let mut rayleigh_of: Vec<(u32, i32)> = Vec::new();
        for m in materials {
            if m.material.elements.len() > MAX_ELEMENTS {
                return Err(format!(
                    "material '{}' has {} elements; the GPU path holds at most {MAX_ELEMENTS}",
                    m.material.name,
                    m.material.elements.len()
                ));
            }
            let elem_off = t.elements.len() as u32;
            for (c, &n) in m.material.elements.iter().zip(&m.material.atom_density) {
                let zi = c.z.round() as u32;
                let photo = match photo_of.iter().find(|(z, _)| *z == zi) {
                    Some(&(_, k)) => k,
                    None => {
                        let k = photo_data.element(zi).map_or(-1, |el| {
                            let off = t.data.len() as u32;
                            t.data.extend_from_slice(&el.energy);
                            t.data.extend_from_slice(&el.sigma);
                            for s in &el.shares {
                                t.data.extend_from_slice(s);
                            }
                            let last = el.energy[el.energy.len() - 1];
                            t.photo.push(GpuPhoto {
                                binding: el.binding,
                                omega_k: el.omega_k,
                                ka_energy: el.k_alpha.0,
                                ka_rate: el.k_alpha.1,
                                kb_energy: el.k_beta.0,
                                kb_rate: el.k_beta.1,
                                sauter_end: sauter_shape(last, el.binding[0]),
                                off,
                                n: el.energy.len() as u32,
                            });
                            (t.photo.len() - 1) as i32
                        });
                        photo_of.push((zi, k));
                        k
                    }
                };
                let rayleigh = match rayleigh_of.iter().find(|(z, _)| *z == zi) {
                    Some(&(_, k)) => k,
                    None => {
                        let k = rayleigh_data.element(zi).map_or(-1, |el| {
                            let off = t.data.len() as u32;
                            for v in [&el.energy, &el.sigma, &el.x, &el.f2, &el.cum] {
                                t.data.extend_from_slice(v);
                            }
                            t.rayleigh.push(GpuRayleigh {
                                off,
                                nxs: el.energy.len() as u32,
                                nff: el.x.len() as u32,
                                pad: 0,
                            });
                            (t.rayleigh.len() - 1) as i32
                        });
                        rayleigh_of.push((zi, k));
                        k
                    }
                };
                t.elements.push(GpuElement {
                    z: c.z,
                    atom_density: n,
                    ln_z: c.z.pln(),
                    cbrt_z: c.z.pcbrt(),
                    coulomb: coulomb_correction(c.z),
                    photo,
                    rayleigh,
                });
            }
            let mut g = GpuMaterial {
                compton: t.grid(&m.gamma.compton),
                pair: t.grid(&m.gamma.pair),
                rayleigh: t.grid(&m.gamma.rayleigh),
                cut_gamma: m.cuts.gamma,
                cut_electron: m.cuts.electron,
                electron_density: m.material.electron_density,
                plasma_energy: m.material.plasma_energy,
                radiation_length: m.msc.radiation_length,
                elem_off,
                n_elem: m.material.elements.len() as u32,
                ..GpuMaterial::default()
            };
            for (k, c) in [&m.electron, &m.positron].into_iter().enumerate() {
                g.dedx[k] = t.grid(&c.eloss.dedx);
                g.range[k] = t.grid(&c.eloss.range);
                g.delta_xs[k] = t.opt_grid(c.eloss.xs.as_ref());
                g.brems_xs[k] = t.opt_grid(c.brems_xs.as_ref());
            }
            g.msc[0] = t.grid(&m.msc.electron);
            g.msc[1] = t.grid(&m.msc.positron);
            t.materials.push(g);
        }
        if t.data.len() >= u32::MAX as usize {
            return Err("the physics tables exceed 2³² values".into());
        }
        Ok(t)
    }
}

fn planes(cal: &Calorimeter) -> Vec<f64> {
    let n = cal.slabs();
    let mut p: Vec<f64> = (0..n).map(|s| cal.slab_z(s).0).collect();
    p.push(cal.slab_z(n - 1).1);
    p
}

/// Words per event in the tally (run.rs `event_words`).
#[must_use]
pub fn tally_stride(slabs: usize, materials: usize) -> usize {
    slabs + 14 + materials + 1
}

/// The event tally from its words (inverse of run.rs `event_words`).
#[must_use]
pub fn tally_from_words(w: &[u64], slabs: usize, materials: usize, primary_energy: f64) -> EventTally {
    let mut e = EventTally::new(slabs, materials, primary_energy);
    e.edep.copy_from_slice(&w[..slabs]);
    e.escaped = w[slabs];
    e.rest_mass = w[slabs + 1] as i64;
    e.created.copy_from_slice(&w[slabs + 2..slabs + 5]);
    e.created_by.copy_from_slice(&w[slabs + 5..slabs + 12]);
    e.charged_steps = w[slabs + 12];
    e.neutral_steps = w[slabs + 13];
    e.track_length.copy_from_slice(&w[slabs + 14..slabs + 14 + materials]);
    e.killed = w[slabs + 14 + materials];
    e
}

/// The list words of one track (layout of `WdTrack`).
#[must_use]
pub fn track_words(particle: Particle, energy: f64, pos: [f64; 3], dir: [f64; 3], id: u64, event: u32, slab: u32) -> [u64; TRACK_WORDS] {
    let p = match particle {
        Particle::Gamma => 0u64,
        Particle::Electron => 1,
        Particle::Positron => 2,
    };
    [
        energy.to_bits(),
        pos[0].to_bits(),
        pos[1].to_bits(),
        pos[2].to_bits(),
        dir[0].to_bits(),
        dir[1].to_bits(),
        dir[2].to_bits(),
        id,
        u64::from(event) | (u64::from(slab) << 32),
        p,
    ]
}

/// The list words of one track of the GDML build (layout of its `WdTrack`): [`track_words`]
/// with the volume path's depth beside the particle and its placements (16, two per word).
#[must_use]
#[allow(clippy::too_many_arguments)]
pub fn gdml_track_words(
    particle: Particle,
    energy: f64,
    pos: [f64; 3],
    dir: [f64; 3],
    id: u64,
    event: u32,
    slot: u32,
    path: &[u32],
) -> [u64; GDML_TRACK_WORDS] {
    let mut w = [0u64; GDML_TRACK_WORDS];
    w[..TRACK_WORDS].copy_from_slice(&track_words(particle, energy, pos, dir, id, event, slot));
    w[9] |= (path.len() as u64) << 32;
    // w[10]: the time, 0 ns at the start.
    for (i, &k) in path.iter().enumerate() {
        w[11 + i / 2] |= u64::from(k) << (32 * (i % 2));
    }
    w
}

/// The hits of a batch of events `lo..` from the kernel's `WdHit` records ([`HIT_WORDS`] each,
/// in the order the kernel made them), with their event numbers, in the canonical order
/// ([`Hit`]: by event, then track id, then ordinal along the track).
#[must_use]
pub fn hits_from_words(words: &[u64], lo: u64) -> Vec<(u64, Hit)> {
    let mut hits: Vec<(u64, Hit)> = words
        .chunks_exact(HIT_WORDS)
        .map(|w| {
            (
                lo + (w[6] & 0xffff_ffff),
                Hit {
                    track: w[0],
                    ordinal: (w[7] & 0xffff_ffff) as u32,
                    slot: (w[6] >> 32) as u32,
                    edep: w[1],
                    time_ns: f64::from_bits(w[2]),
                    pos: [f64::from_bits(w[3]), f64::from_bits(w[4]), f64::from_bits(w[5])],
                },
            )
        })
        .collect();
    hits.sort_unstable_by_key(|(e, h)| (*e, h.track, h.ordinal));
    hits
}

/// The primaries of events `lo..hi` in a GDML detector as list words (as [`batch_primaries`]):
/// each starts where detector.rs starts it (located at the source; outside the world it
/// escapes).
#[must_use]
pub fn detector_primaries(det: &DetectorPhysics, primary: &Primary, lo: u64, hi: u64) -> ([Vec<u64>; 2], Vec<bool>) {
    let start = det.locate(primary.pos);
    let mut missed = vec![false; (hi - lo) as usize];
    let mut first: [Vec<u64>; 2] = [Vec::new(), Vec::new()];
    let list = usize::from(primary.particle != Particle::Gamma);
    for (k, ev) in (lo..hi).enumerate() {
        match &start {
            None => missed[k] = true,
            Some(path) => first[list].extend_from_slice(&gdml_track_words(
                primary.particle,
                primary.energy,
                primary.pos,
                primary.dir,
                primary_id(ev),
                k as u32,
                det.slot(path) as u32,
                &path.placements,
            )),
        }
    }
    (first, missed)
}

/// The primaries of events `lo..hi` as list words (γ list, e± list; event index relative to
/// `lo`), and which events' primaries miss the calorimeter (their energy escapes, as on the CPU).
#[must_use]
pub fn batch_primaries(phys: &ShowerPhysics, primary: &Primary, lo: u64, hi: u64) -> ([Vec<u64>; 2], Vec<bool>) {
    let mut missed = vec![false; (hi - lo) as usize];
    let mut first: [Vec<u64>; 2] = [Vec::new(), Vec::new()];
    for (k, ev) in (lo..hi).enumerate() {
        let (id, start) = primary_start(phys, primary, ev);
        match start {
            None => missed[k] = true,
            Some((pos, slab)) => {
                let list = usize::from(primary.particle != Particle::Gamma);
                first[list].extend_from_slice(&track_words(
                    primary.particle,
                    primary.energy,
                    pos,
                    primary.dir,
                    id,
                    k as u32,
                    slab as u32,
                ));
            }
        }
    }
    (first, missed)
}

/// How the tracks of a batch reach the kernels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Schedule {
    /// One launch per batch (`showers`): the kernel fills two queues (γ, e±) with the batch's
    /// secondaries and drains them itself, so no lane waits for a generation to end.
    Queue,
    /// A launch of `photons` and `charged` per generation of secondaries (the first GPU loop).
    Generations,
    /// Six launches per step over slots of tracks (`along_charged`, `cross_charged`,
    /// `along_gamma`, `phase_clamp`, `interact_gamma`, `interact_charged`): a step's first part
    /// for every track, then its interactions grouped by process, fed from the same two queues
    /// as `Queue` (the default).
    #[default]
    Phases,
}

impl Schedule {
    /// `WARPDRIVE_EM_SCHEDULE=queue|generations|phases` (for comparisons); otherwise the default.
    pub fn from_env() -> Result<Self, GpuError> {
        match std::env::var("WARPDRIVE_EM_SCHEDULE").as_deref() {
            Err(_) | Ok("" | "phases") => Ok(Self::Phases),
            Ok("queue") => Ok(Self::Queue),
            Ok("generations") => Ok(Self::Generations),
            Ok(other) => Err(GpuError::Other(format!(
                "WARPDRIVE_EM_SCHEDULE: '{other}' is none of 'queue', 'generations', 'phases'"
            ))),
        }
    }
}

/// Sizes of a GPU run; `None` picks them from the device.
#[derive(Clone, Copy, Debug, Default)]
pub struct GpuShowerOptions {
    /// Tracks per list (generations: four lists, γ and e± in and out; queue: two queues that
    /// hold every track of a batch). Default: a quarter of the free device memory, at most 2²⁷.
    pub stack_capacity: Option<usize>,
    /// Events per batch before any re-run. Default: from the capacity and the primary energy.
    pub batch_events: Option<u64>,
    /// Default: [`Schedule::from_env`].
    pub schedule: Option<Schedule>,
    /// Precise mode: the portable transcendentals and IEEE arithmetic without FMA contraction,
    /// so that every event is bit-identical to the CPU's. Default (false): fast mode, CUDA's
    /// libm with contraction — the same physics, histories that part from the CPU's at the first
    /// last-bit difference (statistically equivalent; `gpu-check em` holds it to the Geant4 bounds).
    pub precise: bool,
    /// GDML detectors with sensitive volumes: hits the device buffer holds per batch (a batch
    /// that makes more is re-run in halves). Default: an eighth of the free device memory, at
    /// most 2²⁷ hits.
    pub hit_capacity: Option<usize>,
}

/// Timing and bookkeeping of a GPU run.
#[derive(Clone, Debug, Default)]
pub struct GpuShowerStats {
    pub device: String,
    pub seconds: f64,
    /// Batches run to the end, and re-runs of a batch in halves after an overflow.
    pub batches: u64,
    pub reruns: u64,
    /// Generations (pairs of launches) over all batches; 0 in queue mode.
    pub generations: u64,
    pub stack_capacity: usize,
    /// Registers per thread of `photons` and `charged` (queue mode: of `showers`, twice).
    pub registers: (i32, i32),
    pub schedule: Schedule,
    pub precise: bool,
}

impl GpuShowerStats {
    fn merge(&mut self, o: &GpuShowerStats) {
        if !self.device.is_empty() {
            self.device.push_str(", ");
        }
        self.device.push_str(&o.device);
        self.seconds = self.seconds.max(o.seconds);
        self.batches += o.batches;
        self.reruns += o.reruns;
        self.generations += o.generations;
        self.stack_capacity = o.stack_capacity;
        self.registers = o.registers;
        self.schedule = o.schedule;
        self.precise = o.precise;
    }
}

fn ptr<T>(s: &CudaSlice<T>, st: &Arc<CudaStream>) -> u64 {
    let (p, _sync) = s.device_ptr(st);
    p
}

/// Run `events` events on GPU `ordinal` (same events as [`super::run::run`] on the CPU).
pub fn run(
    phys: &ShowerPhysics,
    primary: &Primary,
    events: u64,
    seed: u64,
    ordinal: usize,
    progress: &Progress,
) -> Result<(ShowerRun, GpuShowerStats), GpuError> {
    run_devices(phys, primary, events, seed, &[ordinal], progress, &GpuShowerOptions::default())
}

/// Run on several GPUs: contiguous shares of the event numbers, one host thread per GPU,
/// events concatenated in order (the result equals one GPU's).
pub fn run_devices(
    phys: &ShowerPhysics,
    primary: &Primary,
    events: u64,
    seed: u64,
    devices: &[usize],
    progress: &Progress,
    opts: &GpuShowerOptions,
) -> Result<(ShowerRun, GpuShowerStats), GpuError> {
    run_devices_range(phys, primary, 0..events, seed, devices, progress, opts)
}

/// [`run_devices`] for the events numbered `events` (one job of a split run): each event is the
/// one the whole run computes.
pub fn run_devices_range(
    phys: &ShowerPhysics,
    primary: &Primary,
    events: std::ops::Range<u64>,
    seed: u64,
    devices: &[usize],
    progress: &Progress,
    opts: &GpuShowerOptions,
) -> Result<(ShowerRun, GpuShowerStats), GpuError> {
    if !(primary.energy > 0.0 && primary.energy <= MAX_PRIMARY_ENERGY) {
        return Err(GpuError::Other(format!(
            "primary energy {} MeV outside (0, {MAX_PRIMARY_ENERGY}] MeV",
            primary.energy
        )));
    }
    let tables = HostTables::build(phys).map_err(GpuError::Other)?;
    let first = events.start;
    let (events, _hits, stats) = run_geometry(GpuGeometry::Slabs(phys), &tables, primary, events, seed, devices, progress, opts)?;
    Ok((
        ShowerRun {
            primary: *primary,
            seed,
            first,
            events,
        },
        stats,
    ))
}

/// Events `events` of a shower in a GDML detector on the GPUs `devices` (contiguous shares, as
/// [`run_devices_range`]): every event's tally as detector.rs `run_event` makes it (bit for bit
/// in precise mode), in event order; in a uniform field along the helix
/// (`kernels/field/propagate.cuh` `propagate`), in a field map along the Dormand–Prince path
/// (`propagate_in_map`). With sensitive volumes also the hits, `(event, hit)` in the canonical
/// order ([`Hit`]) — in precise mode those of detector.rs `run_event_with_hits`, hit for hit. A
/// device share stops once its hits pass detector.rs `MAX_HITS`, at the end of the CPU's batch
/// of events (detector.rs `BATCH`) where that happened, so that `run_from_events` ends the run
/// where `run_range` would.
pub fn run_detector_range(
    det: &DetectorPhysics,
    primary: &Primary,
    events: std::ops::Range<u64>,
    seed: u64,
    devices: &[usize],
    progress: &Progress,
    opts: &GpuShowerOptions,
) -> Result<DetectorEvents, GpuError> {
    if !(primary.energy > 0.0 && primary.energy <= MAX_PRIMARY_ENERGY) {
        return Err(GpuError::Other(format!(
            "primary energy {} MeV outside (0, {MAX_PRIMARY_ENERGY}] MeV",
            primary.energy
        )));
    }
    let tables = HostTables::build_detector(det).map_err(GpuError::Other)?;
    run_geometry(GpuGeometry::Gdml(det), &tables, primary, events, seed, devices, progress, opts)
}

/// A GDML run's events: every event's tally in event order, the hits (`(event, hit)`, in the
/// canonical order), the run's statistics.
pub type DetectorEvents = (Vec<EventTally>, Vec<(u64, Hit)>, GpuShowerStats);

/// Events `events` in `geo` on `devices`, in event order.
#[allow(clippy::too_many_arguments)]
fn run_geometry(
    geo: GpuGeometry,
    tables: &HostTables,
    primary: &Primary,
    events: std::ops::Range<u64>,
    seed: u64,
    devices: &[usize],
    progress: &Progress,
    opts: &GpuShowerOptions,
) -> Result<DetectorEvents, GpuError> {
    let first = events.start;
    let parts = cuda::split_across(devices, events.end - first, |&d, share| {
        run_share(
            geo,
            tables,
            primary,
            seed,
            d,
            first,
            first + share.start..first + share.end,
            progress,
            opts,
        )
    });
    let mut all = Vec::with_capacity((events.end - first) as usize);
    let mut hits = Vec::new();
    let mut stats = GpuShowerStats::default();
    for p in parts {
        let (ev, h, st) = p?;
        all.extend(ev);
        hits.extend(h);
        stats.merge(&st);
    }
    Ok((all, hits, stats))
}

/// Device buffers of one run.
struct Buffers {
    data: CudaSlice<f64>,
    materials: CudaSlice<GpuMaterial>,
    elements: CudaSlice<GpuElement>,
    photo: CudaSlice<GpuPhoto>,
    rayleigh: CudaSlice<GpuRayleigh>,
    planes: CudaSlice<f64>,
    slab_material: CudaSlice<u32>,
    tally: CudaSlice<u64>,
    /// Generations: [γ in, e± in, γ out, e± out]; queue: [γ queue, e± queue].
    lists: Vec<CudaSlice<u64>>,
    /// [γ, e±] list sizes (queue: tails), overflow flag.
    counters: CudaSlice<u32>,
    /// Queue mode: head γ, head e±, live tracks at words 0, 32, 64 (separate cache lines;
    /// kernel WD_Q_HEAD, WD_Q_LIVE) and 2 × capacity publication flags.
    queue_ctl: CudaSlice<u32>,
    ready: CudaSlice<u32>,
    /// Blocks of the (photons, charged | showers) kernels that are resident at once on the
    /// device: the grid of a launch, whose threads take track after track (see the kernels).
    resident: [u32; 2],
    /// A second stream for the charged kernel: a generation's γ and e± lists are independent,
    /// so each kernel's tail (its last long tracks) runs beside the other kernel's work.
    side: Arc<CudaStream>,
    /// Phase schedule only: the slots and the process lists.
    phase: Option<PhaseBuffers>,
    /// The GDML build only: the volume tree and the record that points to it.
    gdml: Option<GdmlBuffers>,
}

/// The volume tree on the device (`WdGdml`): kept alive while `record` points to it.
struct GdmlBuffers {
    _map: Option<[CudaSlice<f64>; 3]>,
    _solids: CudaSlice<SolidRecord>,
    _pool: CudaSlice<f64>,
    _logical: CudaSlice<LogicalRecord>,
    _placements: CudaSlice<PlacementRecord>,
    _slot_offset: CudaSlice<u32>,
    _bvh_nodes: CudaSlice<BvhNodeRecord>,
    _bvh_items: CudaSlice<u32>,
    _bvh_root: CudaSlice<u32>,
    _sensitive: CudaSlice<u8>,
    /// The batch's hits (`WdHit`, [`HIT_WORDS`] each) and their counter; capacity 0 without
    /// sensitive volumes.
    hits: CudaSlice<u64>,
    hit_count: CudaSlice<u32>,
    hit_capacity: usize,
    record: CudaSlice<GdmlRecord>,
}

impl GdmlBuffers {
    /// Upload the tree and the field (a map's size checked by the caller, [`run_share`]) and
    /// allocate the hit buffer (`hit_capacity` hits, checked by the caller).
    fn new(
        st: &Arc<CudaStream>,
        g: &DeviceGeometry,
        offsets: &[u32],
        field: Option<&UniformFieldRecord>,
        map: Option<&FieldMapRecord>,
        sensitive: &[u8],
        hit_capacity: usize,
    ) -> Result<Self, GpuError> {
        let solids = st.clone_htod(&nonempty(&g.solids))?;
        let pool = st.clone_htod(&nonempty(&g.pool))?;
        let logical = st.clone_htod(&nonempty(&g.logical))?;
        let placements = st.clone_htod(&nonempty(&g.placements))?;
        let slot_offset = st.clone_htod(&nonempty(offsets))?;
        let bvh_nodes = st.clone_htod(&nonempty(&g.bvh_nodes))?;
        let bvh_items = st.clone_htod(&nonempty(&g.bvh_items))?;
        let bvh_root = st.clone_htod(&nonempty(&g.bvh_root))?;
        let map_buffers = match map {
            Some(m) => Some([st.clone_htod(&m.r)?, st.clone_htod(&m.z)?, st.clone_htod(&m.b)?]),
            None => None,
        };
        let sensitive_flags = st.clone_htod(&nonempty(sensitive))?;
        let hits = st.alloc_zeros::<u64>(hit_capacity.max(1) * HIT_WORDS)?;
        let hit_count = st.alloc_zeros::<u32>(1)?;
        let r = GdmlRecord {
            solids: ptr(&solids, st),
            pool: ptr(&pool, st),
            logical: ptr(&logical, st),
            placements: ptr(&placements, st),
            slot_offset: ptr(&slot_offset, st),
            world: g.world,
            field_on: match (field, map) {
                (_, Some(_)) => FIELD_MAP,
                (Some(_), None) => FIELD_UNIFORM,
                (None, None) => 0,
            },
            field: field.map_or([0.0; 3], |f| f.b),
            delta_chord: map.map_or(field.map_or(0.0, |f| f.delta_chord), |m| m.delta_chord),
            delta_intersection: map.map_or(field.map_or(0.0, |f| f.delta_intersection), |m| m.delta_intersection),
            map_r: map_buffers.as_ref().map_or(0, |b| ptr(&b[0], st)),
            map_z: map_buffers.as_ref().map_or(0, |b| ptr(&b[1], st)),
            map_b: map_buffers.as_ref().map_or(0, |b| ptr(&b[2], st)),
            map_nr: map.map_or(0, |m| m.r.len() as u32),
            map_nz: map.map_or(0, |m| m.z.len() as u32),
            map_b_max: map.map_or(0.0, |m| m.b_max),
            epsilon: map.map_or(0.0, |m| m.epsilon),
            bvh_nodes: ptr(&bvh_nodes, st),
            bvh_items: ptr(&bvh_items, st),
            bvh_root: ptr(&bvh_root, st),
            sensitive: ptr(&sensitive_flags, st),
            hits: ptr(&hits, st),
            hit_count: ptr(&hit_count, st),
            hit_capacity: hit_capacity as u32,
            pad: 0,
        };
        Ok(Self {
            _map: map_buffers,
            record: st.clone_htod(&[r])?,
            _solids: solids,
            _pool: pool,
            _logical: logical,
            _placements: placements,
            _slot_offset: slot_offset,
            _bvh_nodes: bvh_nodes,
            _bvh_items: bvh_items,
            _bvh_root: bvh_root,
            _sensitive: sensitive_flags,
            hits,
            hit_count,
            hit_capacity,
        })
    }
}

/// The slots of the phase schedule (`WdPhaseParams`): a state per slot, live flags, and per
/// process a list of the slots that interact this iteration.
struct PhaseBuffers {
    gamma: CudaSlice<u8>,
    charged: CudaSlice<u8>,
    mid: CudaSlice<u8>,
    alive: CudaSlice<u32>,
    list: CudaSlice<u32>,
    count: CudaSlice<u32>,
    n_slots: [usize; 2],
}

impl PhaseBuffers {
    /// `bytes`: of a photon state, a charged state and a crossing step's first half.
    fn new(st: &Arc<CudaStream>, bytes: [usize; 3]) -> Result<Self, GpuError> {
        let n = match std::env::var("WARPDRIVE_EM_SLOTS") {
            Ok(v) if !v.trim().is_empty() => v
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=1 << 24).contains(n))
                .ok_or_else(|| GpuError::Other(format!("WARPDRIVE_EM_SLOTS={v}: expected 1 to 16777216 slots")))?,
            _ => PHASE_SLOTS,
        };
        Ok(Self {
            gamma: st.alloc_zeros::<u8>(n * bytes[0])?,
            charged: st.alloc_zeros::<u8>(n * bytes[1])?,
            mid: st.alloc_zeros::<u8>(n * bytes[2])?,
            alive: st.alloc_zeros::<u32>(2 * n)?,
            list: st.alloc_zeros::<u32>(PHASE_LISTS * n)?,
            count: st.alloc_zeros::<u32>(PHASE_LISTS)?,
            n_slots: [n, n],
        })
    }

    fn params(&self, st: &Arc<CudaStream>) -> PhaseParams {
        PhaseParams {
            gamma: ptr(&self.gamma, st),
            charged: ptr(&self.charged, st),
            mid: ptr(&self.mid, st),
            alive: ptr(&self.alive, st),
            list: ptr(&self.list, st),
            count: ptr(&self.count, st),
            n_slots: [self.n_slots[0] as u32, self.n_slots[1] as u32],
            list_stride: self.n_slots[0].max(self.n_slots[1]) as u32,
            pad: 0,
        }
    }
}

impl Buffers {
    /// The kernel's parameters; secondaries go to lists `output` (γ) and `output + 1` (e±).
    fn params(&self, job: &Job, output: usize) -> ShowerParams {
        let Job {
            geo,
            tables,
            seed,
            capacity,
            st,
            ..
        } = *job;
        ShowerParams {
            data: ptr(&self.data, st),
            materials: ptr(&self.materials, st),
            elements: ptr(&self.elements, st),
            photo: ptr(&self.photo, st),
            rayleigh: ptr(&self.rayleigh, st),
            // The GDML build reads its volume tree's record here (`ShowerParams::gdml`).
            planes: match &self.gdml {
                Some(g) => ptr(&g.record, st),
                None => ptr(&self.planes, st),
            },
            slab_material: ptr(&self.slab_material, st),
            slabs: geo.slots() as u32,
            n_materials: geo.n_materials() as u32,
            transverse: geo.transverse(),
            twopi_mc2_rcl2: tables.constants[0],
            alpha_re2: tables.constants[1],
            pi_re2: tables.constants[2],
            seed,
            tally: ptr(&self.tally, st),
            stride: tally_stride(geo.slots(), geo.n_materials()) as u32,
            capacity: capacity as u32,
            out_gamma: ptr(&self.lists[output], st),
            out_charged: ptr(&self.lists[output + 1], st),
            out_size: ptr(&self.counters, st),
            overflow: ptr(&self.counters, st) + 8,
            queue_ctl: 0,
            ready: 0,
            first: [0, 0],
        }
    }
}

/// Blocks of `f` resident at once on `gpu`: its SMs × the blocks of `BLOCK` threads that fit
/// the 64 K registers and 2 048 threads of an SM (no shared memory is used).
fn resident_blocks(gpu: &cuda::Gpu, f: &cudarc::driver::CudaFunction) -> u32 {
    let regs = f.num_regs().unwrap_or(128).max(1) as u32;
    let per_sm = (65_536 / (regs.div_ceil(8) * 8 * BLOCK)).clamp(1, 2048 / BLOCK);
    gpu.multiprocessors.max(1) as u32 * per_sm
}

/// An empty slice is not allocatable: upload at least one (default) element.
fn nonempty<T: Clone + Default>(v: &[T]) -> Vec<T> {
    if v.is_empty() {
        vec![T::default()]
    } else {
        v.to_vec()
    }
}

#[allow(clippy::too_many_arguments)]
fn run_share(
    geo: GpuGeometry,
    tables: &HostTables,
    primary: &Primary,
    seed: u64,
    ordinal: usize,
    first: u64,
    share: std::ops::Range<u64>,
    progress: &Progress,
    opts: &GpuShowerOptions,
) -> Result<DetectorEvents, GpuError> {
    let stride = tally_stride(geo.slots(), geo.n_materials());
    let track_words = geo.track_words();
    let gpu = cuda::open(ordinal)?;
    gpu.ctx.bind_to_thread()?;
    if let GpuGeometry::Gdml(_) = geo {
        gpu.ctx
            .set_limit(cudarc::driver::sys::CUlimit::CU_LIMIT_STACK_SIZE, GDML_STACK_BYTES)?;
    }
    let schedule = match opts.schedule {
        Some(s) => s,
        None => Schedule::from_env()?,
    };
    // Queue and phases: two queues hold every track of a batch.
    let queue = schedule != Schedule::Generations;
    // WARPDRIVE_EM_KERNEL_DEFINES='A;B=y': extra defines, for kernel comparisons on a device
    // (e.g. the switch WD_INLINE); results are the same by construction.
    let extra: Vec<String> = std::env::var("WARPDRIVE_EM_KERNEL_DEFINES")
        .map(|v| v.split(';').filter(|d| !d.is_empty()).map(str::to_string).collect())
        .unwrap_or_default();
    let defines = kernel_defines(opts.precise, extra);
    let (kernel_name, kernel_src) = geo.kernel();
    let (module, photons) = cuda::load(&gpu, kernel_name, kernel_src, "photons", opts.precise, &defines)?;
    let charged = module.load_function("charged")?;
    let showers = module.load_function("showers")?;
    // In launch order (run_batch_phases).
    let phase_fns = [
        module.load_function("along_charged")?,
        module.load_function("cross_charged")?,
        module.load_function("along_gamma")?,
        module.load_function("phase_clamp")?,
        module.load_function("interact_gamma")?,
        module.load_function("interact_charged")?,
    ];
    let st = gpu.stream.clone();
    let (mut free, _total) = gpu.ctx.mem_get_info()?;
    // A field map (at most map.rs MAX_NODES nodes, 160 MB) is checked against the device's
    // free memory before it is uploaded: it may take a quarter; the lists and tallies are
    // budgeted from what it leaves.
    if let Some(m) = &tables.field_map {
        if m.bytes() > free / 4 {
            return Err(GpuError::Other(format!(
                "the field map ({} × {} nodes, {} MB) does not fit in a quarter of the {} MB free on the device: use a coarser map",
                m.r.len(),
                m.z.len(),
                m.bytes() / 1_000_000,
                free / 1_000_000
            )));
        }
        free -= m.bytes();
    }
    // Hits (sensitive volumes only): an eighth of the free memory, at most MAX_CAPACITY hits,
    // checked before the buffer is allocated; it is taken from what the lists are budgeted from.
    let hit_capacity = if tables.sensitive.is_empty() {
        0
    } else {
        let n = opts.hit_capacity.unwrap_or(free / 8 / (HIT_WORDS * 8)).clamp(1, MAX_CAPACITY);
        let bytes = n * HIT_WORDS * 8;
        if bytes > free / 4 {
            return Err(GpuError::Other(format!(
                "a hit buffer of {n} hits ({} MB) does not fit in a quarter of the {} MB free on the device",
                bytes / 1_000_000,
                free / 1_000_000
            )));
        }
        free -= bytes;
        n
    };
    // A quarter of the free memory for the lists (queue: each track also has a 4-byte flag).
    let (n_lists, track_bytes) = if queue { (2, track_words * 8 + 4) } else { (4, track_words * 8) };
    let capacity = opts
        .stack_capacity
        .unwrap_or(free / 4 / (n_lists * track_bytes))
        .clamp(1, MAX_CAPACITY);
    // Tracks per event to budget. Generations: a generation of one 1 GeV event in TestEm3 holds
    // a few hundred tracks, 2 per MeV. Queue: a queue holds all of an event's tracks of one
    // kind — TestEm3 makes 0.92 e± and 0.50 γ per MeV of primary energy — 1.25 per MeV.
    let per_event = if queue {
        (1.25 * primary.energy).max(64.0)
    } else {
        (2.0 * primary.energy).max(64.0)
    } as u64;
    let batch = opts
        .batch_events
        .unwrap_or((capacity as u64 / per_event).max(1))
        .min(capacity as u64)
        .min((free / 8 / (stride * 8)).max(1) as u64)
        .max(1);
    let mut b = Buffers {
        data: st.clone_htod(&nonempty(&tables.data))?,
        materials: st.clone_htod(&nonempty(&tables.materials))?,
        elements: st.clone_htod(&nonempty(&tables.elements))?,
        photo: st.clone_htod(&nonempty(&tables.photo))?,
        rayleigh: st.clone_htod(&nonempty(&tables.rayleigh))?,
        planes: st.clone_htod(&nonempty(&tables.planes))?,
        slab_material: st.clone_htod(&nonempty(&tables.slab_material))?,
        tally: st.alloc_zeros::<u64>(stride * batch as usize)?,
        lists: (0..n_lists)
            .map(|_| st.alloc_zeros::<u64>(capacity * track_words))
            .collect::<Result<_, _>>()?,
        counters: st.alloc_zeros::<u32>(3)?,
        queue_ctl: st.alloc_zeros::<u32>(QUEUE_CTL_WORDS)?,
        ready: st.alloc_zeros::<u32>(if queue { 2 * capacity } else { 1 })?,
        resident: if queue {
            [resident_blocks(&gpu, &showers); 2]
        } else {
            [resident_blocks(&gpu, &photons), resident_blocks(&gpu, &charged)]
        },
        side: st.fork()?,
        phase: if schedule == Schedule::Phases {
            Some(PhaseBuffers::new(&st, geo.state_bytes())?)
        } else {
            None
        },
        gdml: match &tables.gdml {
            Some((g, offsets)) => Some(GdmlBuffers::new(
                &st,
                g,
                offsets,
                tables.field.as_ref(),
                tables.field_map.as_ref(),
                &tables.sensitive,
                hit_capacity,
            )?),
            None => None,
        },
    };
    let registers = if schedule == Schedule::Phases {
        (phase_fns[2].num_regs().unwrap_or(0), phase_fns[0].num_regs().unwrap_or(0))
    } else if queue {
        (showers.num_regs().unwrap_or(0), showers.num_regs().unwrap_or(0))
    } else {
        (photons.num_regs().unwrap_or(0), charged.num_regs().unwrap_or(0))
    };
    let mut stats = GpuShowerStats {
        device: format!("cuda:{ordinal} {}", gpu.name),
        stack_capacity: capacity,
        registers,
        schedule,
        precise: opts.precise,
        ..Default::default()
    };
    let t0 = std::time::Instant::now();
    let mut out: Vec<EventTally> = Vec::with_capacity((share.end - share.start) as usize);
    let mut hits: Vec<(u64, Hit)> = Vec::new();
    let mut todo: Vec<(u64, u64)> = Vec::new();
    let mut a = share.start;
    while a < share.end {
        let e = (a + batch).min(share.end);
        todo.push((a, e));
        a = e;
    }
    todo.reverse();
    while let Some((lo, hi)) = todo.pop() {
        // Asked to stop: the remaining batches are skipped; the caller discards the result.
        if progress.should_stop() {
            break;
        }
        let job = Job {
            geo,
            tables,
            primary,
            seed,
            capacity,
            st: &st,
            progress,
        };
        let done = if schedule == Schedule::Phases {
            run_batch_phases(&job, lo, hi, &mut b, &phase_fns, &mut stats)?
        } else if queue {
            run_batch_queue(&job, lo, hi, &mut b, &showers)?
        } else {
            run_batch(&job, lo, hi, &mut b, &photons, &charged, &mut stats)?
        };
        // Stopped inside the batch: it was abandoned part-way (the caller discards the run).
        if progress.should_stop() {
            break;
        }
        match done {
            Some((ev, h)) => {
                progress.add(hi - lo);
                stats.batches += 1;
                out.extend(ev);
                hits.extend(h);
                if hits.len() > super::detector::MAX_HITS {
                    // detector.rs run_range stops after its batch of BATCH events (from the
                    // run's first) in which the hits passed MAX_HITS: run up to that batch's
                    // end and no further (run_from_events ends the run there too).
                    let b = super::detector::BATCH;
                    let end = (first + (hi - first).div_ceil(b) * b).min(share.end);
                    todo.clear();
                    if hi < end {
                        todo.push((hi, end));
                    }
                }
            }
            None => {
                if hi - lo < 2 {
                    let hit_capacity = b.gdml.as_ref().map_or(0, |g| g.hit_capacity);
                    return Err(GpuError::Other(if hit_capacity > 0 {
                        format!(
                            "one event needs more than {capacity} tracks in one generation (the shower list capacity) \
                             or makes more than {hit_capacity} hits (the hit buffer's capacity); free more device memory, \
                             lower the primary energy or mark fewer volumes sensitive"
                        )
                    } else {
                        format!(
                            "one event needs more than {capacity} tracks in one generation (the shower list capacity); \
                             free more device memory or lower the primary energy"
                        )
                    }));
                }
                let mid = lo + (hi - lo) / 2;
                todo.push((mid, hi));
                todo.push((lo, mid));
                stats.reruns += 1;
            }
        }
    }
    stats.seconds = t0.elapsed().as_secs_f64();
    Ok((out, hits, stats))
}

/// What a finished batch gives: its events' tallies and its hits (`(event, hit)`, canonical order).
type BatchOut = (Vec<EventTally>, Vec<(u64, Hit)>);

/// What the batches of a run share.
#[derive(Clone, Copy)]
struct Job<'a> {
    geo: GpuGeometry<'a>,
    tables: &'a HostTables,
    primary: &'a Primary,
    seed: u64,
    /// Tracks per list.
    capacity: usize,
    st: &'a Arc<CudaStream>,
    /// The run's stop flag, polled between generations (a batch of 10 GeV showers takes about a
    /// second; Ctrl-C must not wait for it).
    progress: &'a Progress,
}

/// Primaries uploaded per list (γ, e±), and which events' primaries missed the calorimeter.
type Uploaded = ([usize; 2], Vec<bool>);

/// Clears the tallies of events `lo..hi` and uploads their primaries to the fronts of lists 0
/// (γ) and 1 (e±): how many of each, and which events' primaries missed the calorimeter; `None`
/// when a list cannot hold them.
fn upload_batch(job: &Job, lo: u64, hi: u64, b: &mut Buffers) -> Result<Option<Uploaded>, GpuError> {
    let Job {
        geo,
        primary,
        capacity,
        st,
        ..
    } = *job;
    let stride = tally_stride(geo.slots(), geo.n_materials());
    st.memset_zeros(&mut b.tally.slice_mut(0..stride * (hi - lo) as usize))?;
    if let Some(g) = b.gdml.as_mut() {
        st.memset_zeros(&mut g.hit_count)?;
    }
    let (first, missed) = geo.primaries(primary, lo, hi);
    let count = [first[0].len() / geo.track_words(), first[1].len() / geo.track_words()];
    if count[0] > capacity || count[1] > capacity {
        return Ok(None);
    }
    for (k, f) in first.iter().enumerate() {
        if !f.is_empty() {
            st.memcpy_htod(f, &mut b.lists[k].slice_mut(0..f.len()))?;
        }
    }
    Ok(Some((count, missed)))
}

/// Events `lo..hi` from their primaries to the end; `None` when a list overflowed.
fn run_batch(
    job: &Job,
    lo: u64,
    hi: u64,
    b: &mut Buffers,
    photons: &cudarc::driver::CudaFunction,
    charged: &cudarc::driver::CudaFunction,
    stats: &mut GpuShowerStats,
) -> Result<Option<BatchOut>, GpuError> {
    let Job { geo, primary, st, .. } = *job;
    let Some((mut count, missed)) = upload_batch(job, lo, hi, b)? else {
        return Ok(None);
    };
    // Lists: `input` holds the index of the γ input list (0 or 2); the e± list follows it.
    let mut input = 0usize;
    let mut generations = 0u64;
    // WARPDRIVE_EM_TRACE=1: one line per generation on stderr (list sizes, wall time), to see
    // where a batch spends its time.
    let trace = std::env::var_os("WARPDRIVE_EM_TRACE").is_some_and(|v| v != "0");
    let mut t_gen = std::time::Instant::now();
    while count[0] + count[1] > 0 {
        // Stopped: the batch is abandoned (its events are not reported; the run is discarded).
        if job.progress.should_stop() {
            return Ok(Some(BatchOut::default()));
        }
        generations += 1;
        if generations > MAX_GENERATIONS {
            return Err(GpuError::Other(format!(
                "a shower batch did not finish within {MAX_GENERATIONS} generations"
            )));
        }
        st.memset_zeros(&mut b.counters.slice_mut(0..2))?;
        let output = 2 - input;
        let p = b.params(job, output);
        for (k, f) in [photons, charged].into_iter().enumerate() {
            let m = count[k] as u32;
            if m == 0 {
                continue;
            }
            let input_ptr = ptr(&b.lists[input + k], st);
            // No more blocks than are resident: each thread runs track after track, a lane whose
            // track ended taking the next at once (the kernels' grid-stride loop).
            let cfg = LaunchConfig {
                grid_dim: (m.div_ceil(BLOCK).min(b.resident[k]), 1, 1),
                block_dim: (BLOCK, 1, 1),
                shared_mem_bytes: 0,
            };
            // γ on the main stream, e± on the side stream after everything queued on the main one.
            let s = if k == 1 {
                b.side.join(st)?;
                &b.side
            } else {
                st
            };
            let mut l = s.launch_builder(f);
            l.arg(&p).arg(&input_ptr).arg(&m);
            // SAFETY: `p` points at live allocations of `b`; the input list holds `m` tracks;
            // the kernel writes at most `capacity` tracks per output list and one event record
            // of `stride` words per event index < n. The two kernels share only atomically
            // updated words (output counters and lists, tallies, the overflow flag).
            unsafe { l.launch(cfg) }?;
        }
        // The counters are read after both kernels.
        st.join(&b.side)?;
        let c = st.clone_dtoh(&b.counters)?;
        if c[2] != 0 {
            // The overflow flag is word 2 (byte 8); clear it for the next batch.
            st.memset_zeros(&mut b.counters)?;
            stats.generations += generations;
            return Ok(None);
        }
        if trace {
            eprintln!(
                "em trace: events {lo}..{hi} generation {generations}: {} γ + {} e± in, {:.3} ms",
                count[0],
                count[1],
                t_gen.elapsed().as_secs_f64() * 1e3
            );
            t_gen = std::time::Instant::now();
        }
        count = [c[0] as usize, c[1] as usize];
        input = output;
    }
    stats.generations += generations;
    Ok(Some(read_events(b, st, geo, primary, lo, &missed)?))
}

/// The tallies of a finished batch of `missed.len()` events `lo..` (an event whose primary
/// missed the calorimeter escaped whole) and its hits.
fn read_events(
    b: &Buffers,
    st: &Arc<CudaStream>,
    geo: GpuGeometry,
    primary: &Primary,
    lo: u64,
    missed: &[bool],
) -> Result<BatchOut, GpuError> {
    let (slabs, n_mat) = (geo.slots(), geo.n_materials());
    let stride = tally_stride(slabs, n_mat);
    let words = st.clone_dtoh(&b.tally.slice(0..stride * missed.len()))?;
    // The hits (the overflow flag was clear, so the counter is within the buffer).
    let hits = match &b.gdml {
        Some(g) if g.hit_capacity > 0 => {
            let n = (st.clone_dtoh(&g.hit_count)?[0] as usize).min(g.hit_capacity);
            let w = if n > 0 {
                st.clone_dtoh(&g.hits.slice(0..n * HIT_WORDS))?
            } else {
                Vec::new()
            };
            hits_from_words(&w, lo)
        }
        _ => Vec::new(),
    };
    let events: Vec<EventTally> = missed
        .iter()
        .enumerate()
        .map(|(k, &m)| {
            let mut e = tally_from_words(&words[k * stride..(k + 1) * stride], slabs, n_mat, primary.energy);
            if m {
                e.escaped = to_fixed(primary.energy);
            }
            e
        })
        .collect();
    Ok((events, hits))
}

/// Events `lo..hi` in one launch of `showers` (queue mode, see the kernel); `None` when a
/// queue overflowed.
fn run_batch_queue(
    job: &Job,
    lo: u64,
    hi: u64,
    b: &mut Buffers,
    showers: &cudarc::driver::CudaFunction,
) -> Result<Option<BatchOut>, GpuError> {
    let Job { geo, primary, st, .. } = *job;
    let Some((count, missed)) = upload_batch(job, lo, hi, b)? else {
        return Ok(None);
    };
    let p = start_queues(job, b, count)?;
    if count[0] + count[1] > 0 {
        // Every block resident at once: lanes wait for tracks other lanes publish.
        let cfg = LaunchConfig {
            grid_dim: (b.resident[0], 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut l = st.launch_builder(showers);
        l.arg(&p);
        // SAFETY: `p` points at live allocations of `b`; the queues hold `capacity` tracks and
        // `ready` 2 × capacity flags; the kernel writes tracks and flags below `capacity`
        // only, and one event record of `stride` words per event index < n.
        unsafe { l.launch(cfg) }?;
    }
    let c = st.clone_dtoh(&b.counters)?;
    if c[2] != 0 {
        st.memset_zeros(&mut b.counters)?;
        return Ok(None);
    }
    Ok(Some(read_events(b, st, geo, primary, lo, &missed)?))
}

/// The queues of a batch whose primaries [`upload_batch`] put at their fronts (`count` γ and
/// e±): tails after the primaries, heads at 0, every primary live, no track published yet; the
/// kernels' parameters for the queue and phase schedules.
fn start_queues(job: &Job, b: &mut Buffers, count: [usize; 2]) -> Result<ShowerParams, GpuError> {
    let st = job.st;
    st.memset_zeros(&mut b.ready)?;
    st.memcpy_htod(&[count[0] as u32, count[1] as u32, 0], &mut b.counters)?;
    let mut ctl = [0u32; QUEUE_CTL_WORDS];
    ctl[QUEUE_LIVE] = (count[0] + count[1]) as u32;
    st.memcpy_htod(&ctl, &mut b.queue_ctl)?;
    let mut p = b.params(job, 0);
    p.queue_ctl = ptr(&b.queue_ctl, st);
    p.ready = ptr(&b.ready, st);
    p.first = [count[0] as u32, count[1] as u32];
    Ok(p)
}

/// Events `lo..hi` in the phase schedule: the queues as in [`run_batch_queue`], then iterations
/// of six launches (`along_charged`, `cross_charged`, `along_gamma`, `phase_clamp`,
/// `interact_gamma`, `interact_charged`; the order matters, see the kernels) until no track is
/// live (read every [`PHASE_POLL`] iterations); `None` when a queue overflowed.
fn run_batch_phases(
    job: &Job,
    lo: u64,
    hi: u64,
    b: &mut Buffers,
    fns: &[cudarc::driver::CudaFunction; 6],
    stats: &mut GpuShowerStats,
) -> Result<Option<BatchOut>, GpuError> {
    let Job { geo, primary, st, .. } = *job;
    let Some((count, missed)) = upload_batch(job, lo, hi, b)? else {
        return Ok(None);
    };
    let p = start_queues(job, b, count)?;
    let Some(ph) = b.phase.as_mut() else {
        return Err(GpuError::Other("phase schedule without its slots".into()));
    };
    // A batch after an overflow may have left slots live.
    st.memset_zeros(&mut ph.alive)?;
    let q = ph.params(st);
    let grid = |n: usize| LaunchConfig {
        grid_dim: ((n as u32).div_ceil(BLOCK), 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    let cfgs = [
        grid(ph.n_slots[1]),
        grid(ph.n_slots[1]),
        grid(ph.n_slots[0]),
        grid(1),
        grid(ph.n_slots[0]),
        grid(ph.n_slots[1]),
    ];
    let live_word = b.queue_ctl.slice(QUEUE_LIVE..QUEUE_LIVE + 1);
    let mut iterations = 0u64;
    // WARPDRIVE_EM_TRACE=1 (diagnosis; it synchronises after every launch): the live tracks and
    // the wall time every 1024 iterations; each poll whose six kernels took more than 50 ms, and
    // the first 16 polls with at most 4 live tracks, with the seconds per kernel and (up to 64
    // live) the live charged tracks — how a pathological step (issue #31: a NaN step length)
    // and a batch's long tail were found.
    let trace = std::env::var_os("WARPDRIVE_EM_TRACE").is_some_and(|v| v != "0");
    let t_batch = std::time::Instant::now();
    let mut tail = false;
    let mut tail_polls = 0u32;
    let mut per_kernel = [0f64; 6];
    let mut poll = PHASE_POLL;
    loop {
        let t_poll = std::time::Instant::now();
        for _ in 0..poll {
            st.memset_zeros(&mut ph.count)?;
            for (k, (f, cfg)) in fns.iter().zip(cfgs).enumerate() {
                let t_launch = std::time::Instant::now();
                let mut l = st.launch_builder(f);
                l.arg(&p);
                // phase_clamp takes the queues' parameters only.
                if k != 3 {
                    l.arg(&q);
                }
                // SAFETY: `p` and `q` point at live allocations of `b`; slot indices stay below
                // n_slots, list entries below list_stride per process (one per slot), queue
                // slots below `capacity`, event records below the batch's events.
                unsafe { l.launch(cfg) }?;
                if trace {
                    st.synchronize()?;
                    per_kernel[k] += t_launch.elapsed().as_secs_f64();
                }
            }
        }
        iterations += poll;
        let live = st.clone_dtoh(&live_word)?[0];
        let poll_seconds = t_poll.elapsed().as_secs_f64();
        poll = if poll_seconds > POLL_SECONDS {
            (poll / 2).max(1)
        } else if poll_seconds < 0.2 * POLL_SECONDS {
            (poll * 2).min(PHASE_POLL)
        } else {
            poll
        };
        if trace && iterations % 1024 < poll {
            eprintln!(
                "em phases: events {lo}..{hi}: iteration {iterations}, {live} live, {:.3} s",
                t_batch.elapsed().as_secs_f64()
            );
        }
        let slow = per_kernel.iter().sum::<f64>() > 0.05;
        if trace && ((tail && tail_polls < 16) || slow) {
            tail_polls += u32::from(tail);
            eprintln!(
                "em phases tail: iteration {iterations}, {live} live, {:.3} s; seconds per kernel over the poll {per_kernel:.4?}",
                t_batch.elapsed().as_secs_f64()
            );
            if tail || (slow && live <= 64) {
                trace_live_charged(ph, st)?;
            }
        }
        per_kernel = [0.0; 6];
        tail = trace && live <= 4;
        // Stopped: the batch is abandoned (its events are not reported; the run is discarded).
        if job.progress.should_stop() {
            stats.generations += iterations;
            return Ok(Some(BatchOut::default()));
        }
        let c = st.clone_dtoh(&b.counters)?;
        if c[2] != 0 {
            st.memset_zeros(&mut b.counters)?;
            return Ok(None);
        }
        if live == 0 {
            break;
        }
        if iterations > MAX_GENERATIONS * PHASE_POLL {
            return Err(GpuError::Other(format!(
                "phase schedule: {live} tracks still live after {iterations} iterations"
            )));
        }
    }
    stats.generations += iterations;
    Ok(Some(read_events(b, st, geo, primary, lo, &missed)?))
}

/// WARPDRIVE_EM_TRACE: the live charged slots' tracks (`WdTrack`'s first words: energy,
/// position, direction, id, event, volume slot, particle).
fn trace_live_charged(ph: &PhaseBuffers, st: &Arc<CudaStream>) -> Result<(), GpuError> {
    let alive = st.clone_dtoh(&ph.alive)?;
    let n = ph.n_slots[0];
    let bytes = ph.charged.len() / ph.n_slots[1].max(1);
    for (i, _) in alive[n..].iter().enumerate().filter(|(_, &a)| a != 0).take(64) {
        let w = st.clone_dtoh(&ph.charged.slice(i * bytes..i * bytes + 80))?;
        let f = |k: usize| f64::from_le_bytes(w[8 * k..8 * k + 8].try_into().unwrap_or([0; 8]));
        let u = |k: usize| u32::from_le_bytes(w[4 * k..4 * k + 4].try_into().unwrap_or([0; 4]));
        eprintln!(
            "  slot {i}: E {:.6e} MeV, pos [{:.4}, {:.4}, {:.4}] cm, dir [{:.5}, {:.5}, {:.5}], id {:#x}, event {}, volume slot {}, particle {}",
            f(0),
            f(1),
            f(2),
            f(3),
            f(4),
            f(5),
            f(6),
            u64::from_le_bytes(w[56..64].try_into().unwrap_or([0; 8])),
            u(16),
            u(17),
            u(18)
        );
    }
    Ok(())
}

/// The builds `warpdrive doctor` checks (fast and precise): the slab kernel with each switch,
/// the GDML build as runs ask for it (`WD_FAST` in fast mode; the `WD_INLINE` comparison build is
/// the slab kernel's only).
pub fn kernel_sets() -> Vec<warpdrive_core::doctor::KernelSet> {
    let mut sets = warpdrive_core::doctor::KernelSet::fixed(&KERNELS[..1], SWITCHES, true);
    sets.extend(warpdrive_core::doctor::KernelSet::fixed(&KERNELS[1..], &["WD_FAST"], true));
    sets
}

/// The kernel's switches: `extra` (comparisons) and `WD_FAST` outside precise mode.
fn kernel_defines(precise: bool, mut extra: Vec<String>) -> Vec<String> {
    if !precise {
        extra.push("WD_FAST".into());
    }
    extra
}

/// The builds runs ask for (slabs and GDML, fast and precise, no extra switches), for
/// `doctor --prebuild`.
#[must_use]
pub fn prebuilt_builds() -> Vec<warpdrive_core::kernels::Build> {
    [(KERNEL_NAME, KERNEL_SRC), (GDML_NAME, GDML_SRC)]
        .into_iter()
        .flat_map(|(name, src)| {
            [false, true]
                .into_iter()
                .map(move |precise| warpdrive_core::kernels::Build::new(name, src, precise, kernel_defines(precise, Vec::new())))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shower::run::event_words;
    use warpdrive_core::progress::Progress;

    /// TestEm3's physics, built once for the tests of this module (they only read it).
    fn testem3() -> &'static ShowerPhysics {
        static BUILT: std::sync::OnceLock<ShowerPhysics> = std::sync::OnceLock::new();
        BUILT.get_or_init(ShowerPhysics::testem3)
    }

    fn grid_back(t: &HostTables, g: &GpuGrid) -> (Vec<f64>, Vec<f64>) {
        let (o, n) = (g.off as usize, g.n as usize);
        (t.data[o..o + n].to_vec(), t.data[o + n..o + 2 * n].to_vec())
    }

    #[test]
    fn flattened_tables_hold_the_cpu_numbers() {
        let phys = testem3();
        let t = HostTables::build(phys).unwrap();
        assert_eq!(t.materials.len(), 2);
        assert_eq!(t.planes.len(), 101);
        assert_eq!(t.planes[100], phys.calorimeter.thickness());
        assert_eq!(t.slab_material[..4], [0, 1, 0, 1]);
        for (g, m) in t.materials.iter().zip(&phys.materials) {
            assert_eq!(
                grid_back(&t, &g.compton),
                (m.gamma.compton.energy.clone(), m.gamma.compton.value.clone())
            );
            assert_eq!(g.compton.log_front, m.gamma.compton.log_front);
            for (k, c) in [&m.electron, &m.positron].into_iter().enumerate() {
                assert_eq!(grid_back(&t, &g.range[k]).1, c.eloss.range.value);
                assert_eq!(grid_back(&t, &g.dedx[k]).1, c.eloss.dedx.value);
                let xs = c.eloss.xs.as_ref().unwrap();
                assert_eq!(grid_back(&t, &g.delta_xs[k]), (xs.energy.clone(), xs.value.clone()));
                let br = c.brems_xs.as_ref().unwrap();
                assert_eq!(grid_back(&t, &g.brems_xs[k]).0, br.energy);
            }
            assert_eq!(grid_back(&t, &g.msc[1]).1, m.msc.positron.value);
            assert_eq!(g.n_elem, 1);
            let el = t.elements[g.elem_off as usize];
            let p = t.photo[el.photo as usize];
            let src = PhotoData::builtin().element(el.z as u32).unwrap();
            let (o, n) = (p.off as usize, p.n as usize);
            assert_eq!(t.data[o..o + n], src.energy[..]);
            assert_eq!(t.data[o + n..o + 2 * n], src.sigma[..]);
            assert_eq!(t.data[o + 2 * n + 9 * (n - 1)..o + 11 * n], src.shares[n - 1][..]);
            let r = t.rayleigh[el.rayleigh as usize];
            let rs = RayleighData::builtin().element(el.z as u32).unwrap();
            let o = r.off as usize + 2 * r.nxs as usize + 2 * r.nff as usize;
            assert_eq!(t.data[o..o + r.nff as usize], rs.cum[..]);
        }
    }

    /// The kernel's constants are the Rust ones (parsed from its `#define`s).
    #[test]
    fn kernel_constants_match() {
        use crate::shower::{msc, rayleigh, transport as tr};
        let def = |name: &str| -> f64 {
            let line = KERNEL_SRC
                .lines()
                .find(|l| l.split_whitespace().nth(1) == Some(name) && l.starts_with("#define"))
                .unwrap_or_else(|| panic!("{name} not defined"));
            let v = line
                .split_whitespace()
                .nth(2)
                .unwrap()
                .trim_end_matches("ull")
                .trim_end_matches('u');
            if let Some(h) = v.strip_prefix("0x") {
                u64::from_str_radix(h, 16).unwrap() as f64
            } else {
                v.parse().unwrap()
            }
        };
        let want: [(&str, f64); 20] = [
            ("WD_TAG_SHOWER", f64::from(tr::TAG_SHOWER)),
            ("WD_ME", crate::shower::ELECTRON_MASS),
            ("WD_PI", std::f64::consts::PI),
            ("WD_TAU", std::f64::consts::TAU),
            ("WD_FIXED_SCALE", tr::FIXED_SCALE),
            ("WD_LOWEST_ELECTRON_ENERGY", tr::LOWEST_ELECTRON_ENERGY),
            ("WD_LOWEST_PHOTON_ENERGY", tr::LOWEST_PHOTON_ENERGY),
            ("WD_DR_OVER_RANGE", tr::DR_OVER_RANGE),
            ("WD_FINAL_RANGE", tr::FINAL_RANGE),
            ("WD_LINEAR_LOSS_LIMIT", tr::LINEAR_LOSS_LIMIT),
            ("WD_MAX_STEPS", tr::MAX_STEPS_PER_TRACK as f64),
            ("WD_PUSH", crate::shower::geometry::PUSH),
            ("WD_SECONDARY_CUTOFF", crate::klein_nishina::SECONDARY_CUTOFF),
            ("WD_F_RANGE", msc::F_RANGE),
            ("WD_F_SAFETY", msc::F_SAFETY),
            ("WD_T_LIMIT_MIN", msc::T_LIMIT_MIN),
            ("WD_TAIL_SCALE", msc::TAIL_SCALE),
            ("WD_FOURTH_ROOT_2", 2f64.powf(0.25)),
            ("WD_HC_KEV_ANGSTROM", rayleigh::HC_KEV_ANGSTROM),
            ("WD_COULOMB_CORRECTION_MIN", brems::COULOMB_CORRECTION_MIN),
        ];
        for (name, v) in want {
            assert_eq!(def(name), v, "{name}");
        }
        assert_eq!(def("WD_K_LEWIS"), msc::K_LEWIS);
        assert_eq!(def("WD_N_SHELLS") as usize, N_SHELLS);
        assert_eq!(def("WD_MAX_ELEMENTS") as usize, MAX_ELEMENTS);
        assert_eq!(msc::FOURTH_ROOT_2, 2f64.powf(0.25));
        assert_eq!(def("WD_FIELD_UNIFORM"), f64::from(FIELD_UNIFORM));
        assert_eq!(def("WD_FIELD_MAP"), f64::from(FIELD_MAP));
    }

    #[test]
    fn tally_words_round_trip() {
        let phys = testem3();
        let r = crate::shower::run::run(phys, &Primary::testem3(Particle::Positron, 30.0), 3, 5, &Progress::hidden());
        for e in &r.events {
            let w = event_words(e);
            assert_eq!(w.len(), tally_stride(100, 2));
            assert_eq!(&tally_from_words(&w, 100, 2, e.primary_energy), e);
        }
    }

    /// The kernel's hit records (`WdHit`) read back into the canonical order: by event, track id,
    /// ordinal, whatever order the device wrote them in; every field decoded.
    #[test]
    fn hits_from_words_decode_and_sort() {
        let rec = |event: u64, slot: u64, track: u64, ordinal: u64, edep: u64, t: f64| {
            [
                track,
                edep,
                t.to_bits(),
                1.5f64.to_bits(),
                (-2.0f64).to_bits(),
                0.25f64.to_bits(),
                event | (slot << 32),
                ordinal,
            ]
        };
        let words: Vec<u64> = [
            rec(1, 7, 5, 0, 10, 0.5),
            rec(0, 3, 9, 1, 11, 0.75),
            rec(0, 3, 9, 0, 12, 0.25),
            rec(0, 4, 2, 0, 13, 1.0),
        ]
        .concat();
        let h = hits_from_words(&words, 100);
        let key: Vec<(u64, u64, u32, u64)> = h.iter().map(|(e, x)| (*e, x.track, x.ordinal, x.edep)).collect();
        assert_eq!(key, vec![(100, 2, 0, 13), (100, 9, 0, 12), (100, 9, 1, 11), (101, 5, 0, 10)]);
        assert_eq!(h[3].1.slot, 7);
        assert_eq!(h[1].1.time_ns, 0.25);
        assert_eq!(h[1].1.pos, [1.5, -2.0, 0.25]);
    }

    /// The GDML tables: per slot its material (vacuum marked), per placement its slot offset, the
    /// device tree; the primaries' words carry the located path and its slot.
    #[test]
    fn detector_tables_and_primaries_hold_the_cpu_geometry() {
        use crate::shower::cuts::RangeCuts;
        use crate::shower::tables::TableOptions;
        let g = crate::gdml::parse(include_str!("../../tests/data/testem3.gdml"), std::path::Path::new("testem3.gdml")).unwrap();
        let det = DetectorPhysics::build(g, RangeCuts::default(), TableOptions::default()).unwrap();
        let t = HostTables::build_detector(&det).unwrap();
        let vols = det.volume_list();
        assert_eq!(t.slab_material.len(), det.volumes());
        for (slot, v) in vols.iter().enumerate() {
            let want = det.material_of[v.material].map_or(VACUUM_SLOT, |i| i as u32);
            assert_eq!(t.slab_material[slot], want, "{}", v.path);
        }
        // World, Calorimeter and the layers are G4_Galactic; lead and argon are not.
        assert_eq!(t.slab_material[0], VACUUM_SLOT);
        assert!(t.slab_material.iter().filter(|&&m| m != VACUUM_SLOT).count() == 100);
        let (tree, offsets) = t.gdml.as_ref().unwrap();
        assert_eq!(tree.placements.len(), det.gdml.tree.placements.len());
        assert_eq!(offsets, &det.offsets.iter().map(|&o| o as u32).collect::<Vec<_>>());
        assert_eq!(t.materials.len(), det.materials.len());
        let primary = Primary {
            particle: Particle::Electron,
            energy: 100.0,
            pos: [0.0, 0.0, 0.1],
            dir: [0.0, 0.0, 1.0],
        };
        // Inside a layer at the calorimeter's middle: World/Calorimeter/Layer/Lead or argon.
        let path = det.locate(primary.pos).unwrap();
        assert_eq!(path.placements.len(), 3);
        let (first, missed) = GpuGeometry::Gdml(&det).primaries(&primary, 5, 8);
        assert_eq!(missed, vec![false; 3]);
        assert!(first[0].is_empty());
        assert_eq!(first[1].len(), 3 * GDML_TRACK_WORDS);
        for (k, w) in first[1].chunks(GDML_TRACK_WORDS).enumerate() {
            assert_eq!(w[7], super::super::transport::primary_id(5 + k as u64));
            assert_eq!(w[8], k as u64 | ((det.slot(&path) as u64) << 32));
            assert_eq!(w[9], 1 | ((path.placements.len() as u64) << 32));
            assert_eq!(f64::from_bits(w[10]), 0.0, "a primary starts at t = 0");
            for (i, &p) in path.placements.iter().enumerate() {
                assert_eq!((w[11 + i / 2] >> (32 * (i % 2))) as u32, p);
            }
        }
        // Outside the world: every event's primary escapes.
        let out = Primary {
            pos: [1e4, 0.0, 0.0],
            ..primary
        };
        let (first, missed) = detector_primaries(&det, &out, 0, 2);
        assert_eq!(missed, vec![true; 2]);
        assert!(first.iter().all(Vec::is_empty));
    }

    /// The GDML build is the slab kernel with the switch on, after the navigator's and the
    /// uniform field's twins (one copy each, no includes of them), and its track holds a path as
    /// deep as the navigator's.
    #[test]
    fn the_gdml_build_is_the_switched_kernel() {
        assert!(GDML_SRC.starts_with("#define WD_GEOMETRY_GDML 1\n"));
        assert!(GDML_SRC.ends_with(KERNEL_SRC));
        for f in [
            "double find_next_step(",
            "bool relocate(",
            "WdBoundary wd_next_boundary(",
            "bool wd_fly(",
            "Helix helix_new(",
            "int propagate(",
            "int propagate_in_field(",
            "V3 field_map_at(",
            "double dormand_prince_step(",
            "int wd_curved_step(",
            "bool wd_fly_curved(",
        ] {
            assert_eq!(GDML_SRC.matches(f).count(), 1, "{f}");
        }
        assert!(!GDML_SRC.contains("#include \"geo/") && !GDML_SRC.contains("#include \"field/"));
        // The slab track, its time, its path.
        assert_eq!(GDML_TRACK_WORDS, TRACK_WORDS + 1 + crate::geo::device::MAX_DEPTH / 2);
    }
}
