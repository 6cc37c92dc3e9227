// EM showers in a layered calorimeter on the GPU: the CUDA twin of crates/em/src/shower/
// (transport.rs, physics.rs, grid.rs, tables.rs, geometry.rs, interaction.rs, pair.rs,
// photoelectric.rs, rayleigh.rs, brems.rs, msc.rs, delta_ray.rs, annihilation.rs,
// fluctuations.rs) and crate::klein_nishina.
//
// Each track is run to its end exactly as `Event::photon` / `Event::charged` do on the CPU —
// the same operations in the same order, the same random draws from the track's Philox stream
// (seed, TAG_SHOWER, id) — one step per loop iteration, a lane taking another track when its
// own ends. Secondaries get the CPU's ids (a hash of the parent id and the ordinal). Two
// schedules (shower/gpu.rs `Schedule`): `showers` runs a whole batch of events in one launch
// through two queues it fills itself (section "queue mode" below; the default); `photons` and
// `charged` run one generation of secondaries per launch, appending the next generation to
// output lists. A full list or queue sets `overflow`, and the host re-runs the batch with half
// the events.
//
// Tallies per event are integers (fixed point, 2^-40 MeV or cm per unit, every addition rounded
// as transport.rs `to_fixed` does), in the order of run.rs `event_words`, so that sums do not
// depend on the order of the atomics.
//
// Compiled in precise mode (IEEE, no FMA contraction). Every function below names its Rust
// twin; expressions keep the Rust association order, and no expression draws two random
// numbers (C leaves the order of operands unspecified). Transcendentals go through the wd_*
// wrappers at the top: plain CUDA math, whose last bit can differ from the host's libm.
// Every larger device function is compiled once and called (`__noinline__`), not inlined at
// each call site: with everything inlined the one-launch kernel was 884 kB of SASS and its warps,
// whose lanes run different branches, spent 66 % of their cycles waiting for instruction fetch
// (ncu, H100; docs/performance/em.md). The switch WD_INLINE restores the inlined build for
// comparisons (same results).
#ifdef WD_INLINE
#define WD_FN __device__
#else
#define WD_FN __device__ __noinline__
#define PM_FN __device__ __noinline__
#define WD_PHILOX_FN __device__ __noinline__
#endif
#include "philox.cuh"
#include "pmath.cuh"

#define WD_TAG_SHOWER 0x454d0002u
// Queue mode: word offsets of the heads and of the live count in ShowerParams::queue_ctl.
#define WD_Q_HEAD(k) (32u * (k))
#define WD_Q_LIVE 64u
#define WD_ME 0.5109989461
#define WD_PI 3.141592653589793
#define WD_TAU 6.283185307179586
#define WD_FIXED_SCALE 1099511627776.0
#define WD_LOWEST_ELECTRON_ENERGY 1e-3
#define WD_LOWEST_PHOTON_ENERGY 1e-3
#define WD_DR_OVER_RANGE 0.2
#define WD_FINAL_RANGE 0.1
#define WD_LINEAR_LOSS_LIMIT 0.01
#define WD_MAX_STEPS 1000000ull
#define WD_PUSH 1e-8
#define WD_SECONDARY_CUTOFF 1e-4
#define WD_F_RANGE 0.04
#define WD_F_SAFETY 0.6
#define WD_T_LIMIT_MIN 1e-6
#define WD_TAIL_SCALE 3.0
#define WD_K_LEWIS 3.0
#define WD_FOURTH_ROOT_2 1.189207115002721
#define WD_TSAI_A 0.625
#define WD_TSAI_D 27.0
#define WD_PAIR_E_LOW 1.5
#define WD_MICROBARN 1e-30
#define WD_KEV 1e-3
#define WD_HC_KEV_ANGSTROM 12.39841984
#define WD_COULOMB_CORRECTION_MIN 50.0
#define WD_N_SHELLS 9
#define WD_INF __longlong_as_double(0x7ff0000000000000ll)
#define WD_MIN_POSITIVE 2.2250738585072014e-308
#define WD_C_CM_PER_NS 29.9792458

// Particles and the processes that create secondaries (transport.rs `CREATORS`).
#define WD_GAMMA 0u
#define WD_ELECTRON 1u
#define WD_POSITRON 2u
#define WD_BY_COMPTON 0
#define WD_BY_PHOTOELECTRIC 1
#define WD_BY_FLUORESCENCE 2
#define WD_BY_CONVERSION 3
#define WD_BY_DELTA_RAY 4
#define WD_BY_BREMS 5
#define WD_BY_ANNIHILATION 6

// ---- transcendentals (one place to switch) ----
#ifdef WD_FAST
// Fast mode (the default of `warpdrive em testem3|calorimeter --device cuda`; compiled with FMA
// contraction): CUDA's double-precision libm, which can differ from the host's in the last bit —
// a track's history then differs from the CPU's from there on (statistically equivalent).
__device__ __forceinline__ double wd_ln(double x) { return log(x); }
__device__ __forceinline__ double wd_exp(double x) { return exp(x); }
__device__ __forceinline__ double wd_pow(double x, double y) { return pow(x, y); }
__device__ __forceinline__ double wd_sin(double x) { return sin(x); }
__device__ __forceinline__ double wd_cos(double x) { return cos(x); }
__device__ __forceinline__ double wd_cbrt(double x) { return cbrt(x); }
__device__ __forceinline__ double wd_ln_1p(double x) { return log1p(x); }
__device__ __forceinline__ double wd_exp_m1(double x) { return expm1(x); }
#else
// Precise mode (`--precise`): the portable functions (pmath.cuh), the same bits as
// warpdrive_core::pmath on the host, so that every event equals the CPU's.
__device__ __forceinline__ double wd_ln(double x) { return pm_ln(x); }
__device__ __forceinline__ double wd_exp(double x) { return pm_exp(x); }
__device__ __forceinline__ double wd_pow(double x, double y) { return pm_pow(x, y); }
__device__ __forceinline__ double wd_sin(double x) { return pm_sin(x); }
__device__ __forceinline__ double wd_cos(double x) { return pm_cos(x); }
__device__ __forceinline__ double wd_cbrt(double x) { return pm_cbrt(x); }
__device__ __forceinline__ double wd_ln_1p(double x) { return pm_ln_1p(x); }
__device__ __forceinline__ double wd_exp_m1(double x) { return pm_exp_m1(x); }
#endif

// ---- data (twins of the #[repr(C)] structs in crates/em/src/shower/gpu.rs) ----

// grid.rs LogGrid: energies at data[off .. off + n], values at data[off + n .. off + 2n]; n = 0: none.
struct WdGrid {
    unsigned int off;
    unsigned int n;
    double log_front;
    double log_delta;
};
static_assert(sizeof(WdGrid) == 24, "WdGrid size");

// One element of a material (material.rs Component + atom density), with the per-Z numbers
// the CPU derives from Z computed on the host: ln Z, Z^(1/3), f_c(Z).
struct WdElement {
    double z;
    double atom_density;
    double ln_z;
    double cbrt_z;
    double coulomb;
    int photo;     // index into photo (-1: no data)
    int rayleigh;  // index into rayleigh (-1: no data)
};
static_assert(sizeof(WdElement) == 48, "WdElement size");

// photoelectric.rs ElementPhoto: energy data[off..off+n], sigma data[off+n..off+2n], shares
// data[off+2n .. off+11n] (9 per row). sauter_end = sauter_shape(E_last, B_K).
struct WdPhoto {
    double binding[WD_N_SHELLS];
    double omega_k;
    double ka_energy, ka_rate, kb_energy, kb_rate;
    double sauter_end;
    unsigned int off;
    unsigned int n;
};
static_assert(sizeof(WdPhoto) == 128, "WdPhoto size");

// rayleigh.rs ElementRayleigh: energy, sigma (nxs each), then x, f2, cum (nff each) from off.
struct WdRayleigh {
    unsigned int off;
    unsigned int nxs;
    unsigned int nff;
    unsigned int pad;
};
static_assert(sizeof(WdRayleigh) == 16, "WdRayleigh size");

// physics.rs MaterialPhysics: [0] e-, [1] e+.
struct WdMaterial {
    WdGrid compton, pair, rayleigh;
    WdGrid dedx[2], range[2], delta_xs[2], brems_xs[2], msc[2];
    double cut_gamma;
    double cut_electron;
    double electron_density;
    double plasma_energy;
    double radiation_length;
    unsigned int elem_off;
    unsigned int n_elem;
};
static_assert(sizeof(WdMaterial) == 24 * 13 + 48, "WdMaterial size");

// A track waiting to be transported.
struct WdTrack {
    double energy;
    double pos[3];
    double dir[3];
    unsigned long long id;
    unsigned int event;    // index in the batch
    unsigned int slab;     // GDML: the volume slot (tally word) of the path below
    unsigned int particle;
    unsigned int pad;      // GDML: the path's depth
#ifdef WD_GEOMETRY_GDML
    double time;           // transport.rs Track::time: since the primary started [ns] (for hits)
    unsigned int path[GEO_MAX_DEPTH];  // detector.rs VolumePath: the placements from the world down
#endif
};
#ifdef WD_GEOMETRY_GDML
static_assert(sizeof(WdTrack) == 88 + 4 * GEO_MAX_DEPTH, "WdTrack size");
#else
static_assert(sizeof(WdTrack) == 80, "WdTrack size");
#endif

struct ShowerParams {
    const double* data;
    const WdMaterial* materials;
    const WdElement* elements;
    const WdPhoto* photo;
    const WdRayleigh* rayleigh;
#ifdef WD_GEOMETRY_GDML
    const struct WdGdml* gdml;         // the volume tree (one record)
    const unsigned int* slab_material; // per volume slot: the material, WD_VACUUM for vacuum
#else
    const double* planes;              // slabs + 1
    const unsigned int* slab_material; // per slab
#endif
    unsigned int slabs;
    unsigned int n_materials;
    double transverse;
    // Constants derived on the host (mod.rs, brems.rs, annihilation.rs).
    double twopi_mc2_rcl2;
    double alpha_re2;
    double pi_re2;
    unsigned long long seed;
    // Per event of the batch: `stride` words in the order of run.rs event_words.
    unsigned long long* tally;
    unsigned int stride;
    unsigned int capacity;             // of each output list
    WdTrack* out_gamma;
    WdTrack* out_charged;
    unsigned int* out_size;            // [0] γ, [1] e± (queue mode: the queues' tails)
    unsigned int* overflow;
    // Queue mode (kernel `showers`; null in generation mode): out_gamma/out_charged are the two
    // queues of the whole batch, `queue_ctl` = [head γ, head e±, live tracks], `ready` = 2 ×
    // capacity publication flags (γ then e±); the first `first[k]` tracks of queue k are the
    // primaries, published by the host. The three counters sit on separate 128-byte lines
    // (WD_Q_HEAD, WD_Q_LIVE): thousands of warps poll them.
    unsigned int* queue_ctl;
    unsigned int* ready;
    unsigned int first[2];
};
static_assert(sizeof(ShowerParams) == 176, "ShowerParams size");

// ---- small helpers ----

// Rust f64::clamp (NaN passes through).
__device__ __forceinline__ double wd_clamp(double x, double lo, double hi) {
    if (x < lo) x = lo;
    if (x > hi) x = hi;
    return x;
}

// transport.rs to_fixed.
__device__ __forceinline__ unsigned long long wd_fixed(double x) { return __double2ull_rn(x * WD_FIXED_SCALE); }

// transport.rs mix (SplitMix64 finaliser) and child_id.
__device__ __forceinline__ unsigned long long wd_mix(unsigned long long z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
__device__ __forceinline__ unsigned long long wd_child_id(unsigned long long parent, unsigned long long ordinal) {
    return wd_mix(parent ^ wd_mix(ordinal));
}

// slice::partition_point(|&x| x <= v) on a sorted array.
__device__ __forceinline__ unsigned int wd_count_le(const double* a, unsigned int n, double v) {
    unsigned int lo = 0, hi = n;
    while (lo < hi) {
        unsigned int mid = lo + (hi - lo) / 2;
        if (a[mid] <= v) lo = mid + 1; else hi = mid;
    }
    return lo;
}
// partition_point(|&x| x < v).
__device__ __forceinline__ unsigned int wd_count_lt(const double* a, unsigned int n, double v) {
    unsigned int lo = 0, hi = n;
    while (lo < hi) {
        unsigned int mid = lo + (hi - lo) / 2;
        if (a[mid] < v) lo = mid + 1; else hi = mid;
    }
    return lo;
}

// ---- grid.rs ----

#ifndef WD_HOST_TWIN
// A single-precision hardware log (MUFU.LG2): only ever an estimate (wd_grid_find).
__device__ __forceinline__ float wd_log_estimate(float x) { return __logf(x); }
#endif

__device__ __forceinline__ unsigned int wd_grid_find(const double* en, const WdGrid& g, double e) {
    // LogGrid::find: the log only estimates the bin, the comparisons decide it (any log will
    // do), so a single-precision hardware log (MUFU) replaces the double one: ~15 grid lookups
    // per charged step, whose double log was a quarter of the kernel's instructions (ncu).
    unsigned int n = g.n;
    float x = __fdividef(wd_log_estimate((float)e) - (float)g.log_front, (float)g.log_delta);
    x = fmaxf(x, 0.0f);
    unsigned int i = x >= (float)(n - 2) ? n - 2 : (unsigned int)x;
    while (i > 0 && e < en[i]) i -= 1;
    while (i + 2 < n && e >= en[i + 1]) i += 1;
    return i;
}

// LogGrid::eval.
WD_FN double wd_grid_eval(const ShowerParams& P, const WdGrid& g, double e) {
    const double* en = P.data + g.off;
    const double* va = en + g.n;
    unsigned int n = g.n;
    if (e <= en[0]) return va[0];
    if (e >= en[n - 1]) return va[n - 1];
    unsigned int i = wd_grid_find(en, g, e);
    double e0 = en[i], e1 = en[i + 1];
    return va[i] + (va[i + 1] - va[i]) * (e - e0) / (e1 - e0);
}

// LogGrid::front.
__device__ __forceinline__ double wd_grid_front(const ShowerParams& P, const WdGrid& g) { return P.data[g.off]; }

// ---- tables.rs IonisationTables ----

WD_FN double wd_dedx(const ShowerParams& P, const WdGrid& g, double e) {
    double e0 = P.data[g.off];
    if (e < e0) return P.data[g.off + g.n] * sqrt(fmax(e, 0.0) / e0);
    return wd_grid_eval(P, g, e);
}

WD_FN double wd_range(const ShowerParams& P, const WdGrid& g, double e) {
    double e0 = P.data[g.off];
    if (e < e0) return P.data[g.off + g.n] * sqrt(fmax(e, 0.0) / e0);
    return wd_grid_eval(P, g, e);
}

WD_FN double wd_energy_from_range(const ShowerParams& P, const WdGrid& g, double r) {
    const double* ev = P.data + g.off;
    const double* rv = ev + g.n;
    unsigned int n = g.n;
    if (r <= rv[0]) {
        double q = fmax(r, 0.0) / rv[0];
        return ev[0] * (q * q);
    }
    if (r >= rv[n - 1]) return ev[n - 1];
    unsigned int i = wd_count_le(rv, n, r) - 1;
    return ev[i] + (r - rv[i]) * (ev[i + 1] - ev[i]) / (rv[i + 1] - rv[i]);
}

// IonisationTables::macro_xs and the brems table of physics.rs charged_xs: 0 up to the front.
WD_FN double wd_table_xs(const ShowerParams& P, const WdGrid& g, double e) {
    if (g.n == 0) return 0.0;
    if (e > wd_grid_front(P, g)) return wd_grid_eval(P, g, e);
    return 0.0;
}

#ifdef WD_GEOMETRY_GDML
// ---- detector.rs: the geometry hooks of a GDML detector (WD_GEOMETRY_GDML) ----
//
// The volume tree of crates/em/src/geo/device.rs, walked by the navigator twins of
// kernels/geo/navigator.cuh (prepended to this file by shower/gpu.rs GDML_SRC). A track holds
// its path as placements only (WdTrack::path, depth in `pad`); the per-level transforms are
// composed again from the world down when a hook needs them, with the operations of the
// navigator's descend, so they are the CPU path's transforms bit for bit. `slab` is the path's
// volume slot (detector.rs slot: the sum of its placements' offsets), the tally word of its
// deposits. Positions are converted cm → mm → cm as detector.rs converts them.

struct WdGdml {
    const SolidRecord* solids;
    const double* pool;
    const LogicalRecord* logical;
    const PlacementRecord* placements;
    const unsigned int* slot_offset;  // per placement: detector.rs slot_offsets
    unsigned int world;
    unsigned int field_on;            // detector.rs field_on: WD_FIELD_NONE, WD_FIELD_UNIFORM or WD_FIELD_MAP
    double field[3];                  // the uniform field's B [T] (UniformField::b)
    double delta_chord;               // FieldAccuracy [mm]
    double delta_intersection;
    const BvhNodeRecord* bvh_nodes;   // device.rs: the per-level trees (bvh.rs)
    const unsigned int* bvh_items;
    const unsigned int* bvh_root;
    // The field map (field/map.cuh FieldMap; null and 0 without one).
    const double* map_r;              // nr node radii [mm]
    const double* map_z;              // nz node z [mm]
    const double* map_b;              // 2 nr nz: (B_r, B_z) [T] per node i·nz + j
    unsigned int map_nr, map_nz;
    double map_b_max;                 // FieldMap::b_max [T] (field_strength)
    double epsilon;                   // FieldAccuracy::epsilon (the Runge–Kutta error per unit length)
    // Hits (transport.rs Event::deposit_in): per volume slot whether it is sensitive, the
    // batch's hit buffer and its counter (a full buffer raises ShowerParams::overflow).
    const unsigned char* sensitive;
    struct WdHit* hits;
    unsigned int* hit_count;
    unsigned int hit_capacity;
    unsigned int pad;
};
static_assert(sizeof(WdGdml) == 192, "WdGdml size");

// transport.rs Hit with its event (index in the batch); shower/gpu.rs hits_from_words reads it.
struct WdHit {
    unsigned long long track;  // Hit::track
    unsigned long long edep;   // fixed point
    double time;               // [ns]
    double pos[3];             // [cm]
    unsigned int event;
    unsigned int slot;
    unsigned int ordinal;
    unsigned int pad;
};
static_assert(sizeof(WdHit) == 64, "WdHit size");

// detector.rs `field`: none, Field::Uniform, Field::Map.
#define WD_FIELD_NONE 0u
#define WD_FIELD_UNIFORM 1u
#define WD_FIELD_MAP 2u

// The material index of a vacuum slot (detector.rs material: None).
#define WD_VACUUM 0xffffffffu

// The distance to the next boundary [cm], the navigator's distance [mm] and what lies behind
// (find_next_step's code).
struct WdBoundary {
    double distance;
    double step;
    int next;
    int pad;
};

__device__ __forceinline__ Geometry wd_geometry(const ShowerParams& P) {
    const WdGdml& G = *P.gdml;
    return Geometry{Solids{G.solids, G.pool}, G.logical, G.placements, G.world, G.bvh_nodes, G.bvh_items, G.bvh_root};
}

// The track's path with its transforms (descend's compose, level by level).
WD_FN void wd_path_load(const Geometry& g, const WdTrack& t, VolumePath& path) {
    path.depth = (int)t.pad;
    for (int i = 0; i < path.depth; ++i) {
        unsigned k = t.path[i];
        Xf x = xf_load(g.placements[k].transform);
        path.placement[i] = k;
        path.transform[i] = i == 0 ? x : compose(path.transform[i - 1], x);
    }
}

// The path back into the track, with its slot (DetectorPhysics::slot).
WD_FN void wd_path_store(const ShowerParams& P, const VolumePath& path, WdTrack& t) {
    unsigned int slot = 0u;
    t.pad = (unsigned int)path.depth;
    for (int i = 0; i < path.depth; ++i) {
        t.path[i] = path.placement[i];
        slot += P.gdml->slot_offset[path.placement[i]];
    }
    t.slab = slot;
}

// detector.rs to_mm.
__device__ __forceinline__ V3 wd_to_mm(const double p[3]) { return v3(p[0] * 10.0, p[1] * 10.0, p[2] * 10.0); }

// detector.rs next_boundary.
WD_FN WdBoundary wd_next_boundary(const ShowerParams& P, const WdTrack& t) {
    Geometry g = wd_geometry(P);
    VolumePath path;
    wd_path_load(g, t, path);
    int what;
    double d = find_next_step(g, path, wd_to_mm(t.pos), v3(t.dir[0], t.dir[1], t.dir[2]), GEO_INF, what);
    WdBoundary b;
    b.distance = d / 10.0;
    b.step = d;
    b.next = what;
    b.pad = 0;
    return b;
}

// detector.rs cross: onto the boundary plus PUSH [mm], located again from the current path; false
// when the point left the world (the track escapes).
WD_FN bool wd_cross(const ShowerParams& P, WdTrack& t, const WdBoundary& b) {
    Geometry g = wd_geometry(P);
    V3 p = along(wd_to_mm(t.pos), v3(t.dir[0], t.dir[1], t.dir[2]), b.step + GEO_PUSH);
    t.pos[0] = p.x / 10.0;
    t.pos[1] = p.y / 10.0;
    t.pos[2] = p.z / 10.0;
    VolumePath path;
    wd_path_load(g, t, path);
    bool inside = relocate(g, path, p);
    if (inside) wd_path_store(P, path, t);
    return inside;
}

// detector.rs safety [cm].
WD_FN double wd_safety(const ShowerParams& P, const WdTrack& t) {
    Geometry g = wd_geometry(P);
    VolumePath path;
    wd_path_load(g, t, path);
    return safety(g, path, wd_to_mm(t.pos)) / 10.0;
}

// detector.rs field_strength (Field::b_max): |B| [T] of the uniform field, the map's largest
// node value.
__device__ __forceinline__ double wd_field_strength(const ShowerParams& P) {
    const WdGdml& G = *P.gdml;
    if (G.field_on == WD_FIELD_MAP) return G.map_b_max;
    return norm(v3(G.field[0], G.field[1], G.field[2]));
}

// detector.rs curved_step: along the helix through the volume tree (field/propagate.cuh
// propagate; no boundary search within `safety` [cm] of the start), or in a field map along the
// Runge–Kutta path (propagate_in_map), by at most `s_max` [cm]; the track's position, direction,
// path and slot become the end's (the world's, depth 0, when it left the world). The path length
// [cm] in `moved`, the FieldStepEnd returned.
WD_FN int wd_curved_step(const ShowerParams& P, WdTrack& t, double charge, double momentum, double s_max, double safety, double& moved) {
    Geometry g = wd_geometry(P);
    const WdGdml& G = *P.gdml;
    VolumePath path;
    wd_path_load(g, t, path);
    ChargedTrack track;
    track.pos = wd_to_mm(t.pos);
    track.dir = v3(t.dir[0], t.dir[1], t.dir[2]);
    track.charge = charge;
    track.momentum = momentum;
    FieldAccuracy acc;
    acc.delta_chord = G.delta_chord;
    acc.delta_intersection = G.delta_intersection;
    acc.epsilon = G.epsilon;
    double s;
    int end;
    if (G.field_on == WD_FIELD_MAP) {
        FieldMap map;
        map.r = G.map_r;
        map.z = G.map_z;
        map.b = G.map_b;
        map.nr = G.map_nr;
        map.nz = G.map_nz;
        map.b_max = G.map_b_max;
        end = propagate_in_map(g, path, track, map, s_max * 10.0, acc, s);
    } else {
        UniformField field;
        field.b = v3(G.field[0], G.field[1], G.field[2]);
        end = propagate(g, path, track, field, s_max * 10.0, safety * 10.0, acc, s);
    }
    t.pos[0] = track.pos.x / 10.0;
    t.pos[1] = track.pos.y / 10.0;
    t.pos[2] = track.pos.z / 10.0;
    t.dir[0] = track.dir.x;
    t.dir[1] = track.dir.y;
    t.dir[2] = track.dir.z;
    wd_path_store(P, path, t);
    moved = s / 10.0;
    return end;
}
#else
// ---- geometry.rs ----

struct WdBoundary {
    double distance;
    int next;  // slab index, -1 outside
};

WD_FN WdBoundary wd_distance_to_boundary(const ShowerParams& P, const double pos[3], const double dir[3], unsigned int slab) {
    double z_lo = P.planes[slab], z_hi = P.planes[slab + 1];
    WdBoundary best;
    best.distance = WD_INF;
    best.next = -1;
    if (dir[2] > 0.0) {
        best.distance = fmax((z_hi - pos[2]) / dir[2], 0.0);
        best.next = slab + 1 < P.slabs ? (int)(slab + 1) : -1;
    } else if (dir[2] < 0.0) {
        best.distance = fmax((pos[2] - z_lo) / -dir[2], 0.0);
        best.next = slab > 0 ? (int)(slab - 1) : -1;
    }
    double h = 0.5 * P.transverse;
    for (int axis = 0; axis < 2; ++axis) {
        double d;
        if (dir[axis] > 0.0) {
            d = (h - pos[axis]) / dir[axis];
        } else if (dir[axis] < 0.0) {
            d = (pos[axis] + h) / -dir[axis];
        } else {
            d = WD_INF;
        }
        d = fmax(d, 0.0);
        if (d < best.distance) {
            best.distance = d;
            best.next = -1;
        }
    }
    return best;
}

// Calorimeter::cross (position only; the next slab is b.next).
__device__ __forceinline__ void wd_cross(double pos[3], const double dir[3], const WdBoundary& b) {
    double s = b.distance + WD_PUSH;
    pos[0] = pos[0] + s * dir[0];
    pos[1] = pos[1] + s * dir[1];
    pos[2] = pos[2] + s * dir[2];
}

// Calorimeter::safety.
WD_FN double wd_safety(const ShowerParams& P, const double pos[3], unsigned int slab) {
    double z_lo = P.planes[slab], z_hi = P.planes[slab + 1];
    double h = 0.5 * P.transverse;
    double s = fmin(pos[2] - z_lo, z_hi - pos[2]);
    s = fmin(s, h - fabs(pos[0]));
    s = fmin(s, h - fabs(pos[1]));
    return fmax(s, 0.0);
}
#endif

// ---- klein_nishina.rs rotate, interaction.rs deflect / isotropic ----

WD_FN void wd_rotate(double ux, double uy, double uz, const double axis[3], double out[3]) {
    double dx = axis[0], dy = axis[1], dz = axis[2];
    double rho2 = dx * dx + dy * dy;
    double ox, oy, oz;
    if (rho2 > 1e-20) {
        double rho = sqrt(rho2);
        ox = (dx * dz * ux - dy * uy) / rho + dx * uz;
        oy = (dy * dz * ux + dx * uy) / rho + dy * uz;
        oz = -rho * ux + dz * uz;
    } else if (dz > 0.0) {
        ox = ux; oy = uy; oz = uz;
    } else {
        ox = -ux; oy = uy; oz = -uz;
    }
    double norm = sqrt(ox * ox + oy * oy + oz * oz);
    out[0] = ox / norm; out[1] = oy / norm; out[2] = oz / norm;
}

WD_FN void wd_deflect(const double axis[3], double cos_theta, double phi, double out[3]) {
    double sin_theta = sqrt(fmax(1.0 - cos_theta * cos_theta, 0.0));
    wd_rotate(sin_theta * wd_cos(phi), sin_theta * wd_sin(phi), cos_theta, axis, out);
}

WD_FN void wd_isotropic(WdRng& rng, double out[3]) {
    double cos_theta = 2.0 * wd_uniform_f64(rng) - 1.0;
    double phi = WD_TAU * wd_uniform_f64(rng);
    double sin_theta = sqrt(fmax(1.0 - cos_theta * cos_theta, 0.0));
    out[0] = sin_theta * wd_cos(phi);
    out[1] = sin_theta * wd_sin(phi);
    out[2] = cos_theta;
}

// ---- the event: tallies and secondaries ----

struct WdEvent {
    const ShowerParams* P;
    unsigned long long* tally;  // this event's words
    unsigned long long children;
    unsigned long long id;
    unsigned int event;
    unsigned int hits;          // the track's hits so far (transport.rs Event::track_hits)
#ifdef WD_GEOMETRY_GDML
    const WdTrack* parent;      // the track whose secondaries are pushed (its path, its time)
#endif
};

#ifdef WD_GEOMETRY_GDML
// The time of a track [ns] (the slab build keeps none: it records no hits).
#define WD_TIME(t) ((t).time)

// transport.rs Event::deposit_in's hit: the deposit in a sensitive slot, where and when, by
// which track and its ordinal along it; a full buffer raises the overflow flag.
WD_FN void wd_hit(WdEvent& ev, unsigned int slot, const double pos[3], double time, unsigned long long q) {
    const WdGdml& G = *ev.P->gdml;
    unsigned int k = atomicAdd(G.hit_count, 1u);
    unsigned int ordinal = ev.hits;
    ev.hits += 1u;
    if (k >= G.hit_capacity) {
        atomicExch(ev.P->overflow, 1u);
        return;
    }
    WdHit& h = G.hits[k];
    h.track = ev.id;
    h.edep = q;
    h.time = time;
    h.pos[0] = pos[0]; h.pos[1] = pos[1]; h.pos[2] = pos[2];
    h.event = ev.event;
    h.slot = slot;
    h.ordinal = ordinal;
    h.pad = 0u;
}
#else
#define WD_TIME(t) 0.0
#endif

// transport.rs Event::deposit / deposit_in: `e` [MeV] to the slot's tally word, and in a
// sensitive volume (GDML) a hit at `pos` [cm] and `time` [ns].
__device__ __forceinline__ void wd_deposit(WdEvent& ev, unsigned int slab, const double pos[3], double time, double e) {
    unsigned long long q = wd_fixed(e);
    if (q != 0ull) {
        atomicAdd(ev.tally + slab, q);
#ifdef WD_GEOMETRY_GDML
        if (ev.P->gdml->hit_capacity != 0u && ev.P->gdml->sensitive[slab] != 0u) wd_hit(ev, slab, pos, time, q);
#endif
    }
}

__device__ __forceinline__ void wd_tally_add(WdEvent& ev, unsigned int word, unsigned long long v) {
    if (v != 0ull) atomicAdd(ev.tally + word, v);
}

// Word offsets in the event record (run.rs event_words).
__device__ __forceinline__ unsigned int wd_w_escaped(const ShowerParams& P) { return P.slabs; }
__device__ __forceinline__ unsigned int wd_w_rest(const ShowerParams& P) { return P.slabs + 1; }
__device__ __forceinline__ unsigned int wd_w_created(const ShowerParams& P) { return P.slabs + 2; }
__device__ __forceinline__ unsigned int wd_w_by(const ShowerParams& P) { return P.slabs + 5; }
__device__ __forceinline__ unsigned int wd_w_charged_steps(const ShowerParams& P) { return P.slabs + 12; }
__device__ __forceinline__ unsigned int wd_w_neutral_steps(const ShowerParams& P) { return P.slabs + 13; }
__device__ __forceinline__ unsigned int wd_w_length(const ShowerParams& P) { return P.slabs + 14; }
__device__ __forceinline__ unsigned int wd_w_killed(const ShowerParams& P) { return P.slabs + 14 + P.n_materials; }

// Event::push: count, derive the id, append to the next generation's list.
WD_FN void wd_push(WdEvent& ev, const double pos[3], unsigned int slab, unsigned int particle, double energy, const double dir[3], int by) {
    const ShowerParams& P = *ev.P;
    wd_tally_add(ev, wd_w_by(P) + by, 1ull);
    ev.children += 1ull;
    unsigned long long id = wd_child_id(ev.id, ev.children);
    wd_tally_add(ev, wd_w_created(P) + particle, 1ull);
    unsigned int list = particle == WD_GAMMA ? 0u : 1u;
    unsigned int slot = atomicAdd(P.out_size + list, 1u);
    if (slot >= P.capacity) {
        atomicExch(P.overflow, 1u);
        return;
    }
    WdTrack t;
    t.energy = energy;
    t.pos[0] = pos[0]; t.pos[1] = pos[1]; t.pos[2] = pos[2];
    t.dir[0] = dir[0]; t.dir[1] = dir[1]; t.dir[2] = dir[2];
    t.id = id;
    t.event = ev.event;
    t.slab = slab;
    t.particle = particle;
#ifdef WD_GEOMETRY_GDML
    t.time = ev.parent->time;
    t.pad = ev.parent->pad;
    for (unsigned int i = 0; i < GEO_MAX_DEPTH; ++i) t.path[i] = i < t.pad ? ev.parent->path[i] : 0u;
#else
    t.pad = 0u;
#endif
    (list == 0u ? P.out_gamma : P.out_charged)[slot] = t;
    if (P.ready) {
        // Queue mode: count the track as live before its parent can end, then publish it.
        atomicAdd(P.queue_ctl + WD_Q_LIVE, 1u);
        __threadfence();
        atomicExch(P.ready + list * P.capacity + slot, 1u);
    }
}

#ifdef WD_GEOMETRY_GDML
// transport.rs speed [cm/ns]: c for a photon, βc = c·p/(E + m) for an e± of kinetic energy e.
__device__ __forceinline__ double wd_speed(unsigned int particle, double e) {
    if (particle == WD_GAMMA) return WD_C_CM_PER_NS;
    return WD_C_CM_PER_NS * sqrt(e * (e + 2.0 * WD_ME)) / (e + WD_ME);
}
#endif

// transport.rs exp1: −ln u.
__device__ __forceinline__ double wd_exp1(WdRng& rng) { return -wd_ln(wd_uniform_f64(rng)); }

// ---- photoelectric.rs ----

WD_FN double wd_sauter_shape(double e, double b_k) {
    double k = e / WD_ME;
    double g = 1.0 + fmax(e - b_k, 1e-9) / WD_ME;
    double p = sqrt(g * g - 1.0);
    double l = wd_ln((g + p) / (g - p));
    double p3 = p * (p * p);
    double k2 = k * k;
    double k5 = k * (k2 * k2);
    return p3 / k5 * (4.0 / 3.0 + g * (g - 2.0) / (g + 1.0) * (1.0 - l / (2.0 * g * p)));
}

// ElementPhoto::xs.
WD_FN double wd_photo_xs(const ShowerParams& P, const WdPhoto& el, double e) {
    const double* en = P.data + el.off;
    const double* sg = en + el.n;
    unsigned int n = el.n;
    double e0 = en[0], el_ = en[n - 1];
    if (e < e0) {
        double q = e0 / e;
        return sg[0] * (q * (q * q));
    }
    if (e >= el_) return sg[n - 1] * wd_sauter_shape(e, el.binding[0]) / el.sauter_end;
    unsigned int i = wd_count_le(en, n, e) - 1;
    double x0 = en[i], x1 = en[i + 1];
    double y0 = sg[i], y1 = sg[i + 1];
    double t = wd_ln(e / x0) / wd_ln(x1 / x0);
    return y0 * wd_pow(y1 / y0, t);
}

// PhotoData::xs_per_atom (0 without data).
WD_FN double wd_photo_xs_atom(const ShowerParams& P, const WdElement& c, double e) {
    if (c.photo < 0) return 0.0;
    return wd_photo_xs(P, P.photo[c.photo], e);
}

// photoelectric::macro_xs.
WD_FN double wd_photo_macro_xs(const ShowerParams& P, const WdMaterial& m, double e) {
    double s = 0.0;
    for (unsigned int i = 0; i < m.n_elem; ++i) {
        const WdElement& c = P.elements[m.elem_off + i];
        s = s + c.atom_density * wd_photo_xs_atom(P, c, e);
    }
    return s;
}

// ElementPhoto::shares_at.
WD_FN void wd_shares_at(const ShowerParams& P, const WdPhoto& el, double e, double s[WD_N_SHELLS]) {
    const double* en = P.data + el.off;
    const double* sh = en + 2 * el.n;
    unsigned int n = el.n;
    if (e < en[0]) {
        for (int k = 0; k < WD_N_SHELLS; ++k) s[k] = sh[k];
    } else if (e >= en[n - 1]) {
        for (int k = 0; k < WD_N_SHELLS; ++k) s[k] = sh[(n - 1) * WD_N_SHELLS + k];
    } else {
        unsigned int i = wd_count_le(en, n, e) - 1;
        double t = (e - en[i]) / (en[i + 1] - en[i]);
        const double* lo = sh + i * WD_N_SHELLS;
        const double* hi = lo + WD_N_SHELLS;
        for (int k = 0; k < WD_N_SHELLS; ++k) s[k] = lo[k] + t * (hi[k] - lo[k]);
    }
    for (int k = 0; k < WD_N_SHELLS; ++k) {
        double b = el.binding[k];
        if (b <= 0.0 || b > e) s[k] = 0.0;
    }
}

// sample_sauter_cos.
WD_FN double wd_sample_sauter_cos(double t, WdRng& rng) {
    double g = 1.0 + t / WD_ME;
    double beta = sqrt(t * (t + 2.0 * WD_ME)) / (t + WD_ME);
    if (beta < 1e-6) {
        for (;;) {
            double mu = 2.0 * wd_uniform_f64(rng) - 1.0;
            if (wd_uniform_f64(rng) < 1.0 - mu * mu) return mu;
        }
    }
    double b = 0.5 * g * (g - 1.0) * (g - 2.0);
    double a = 1.0 - beta, c = 1.0 + beta;
    if (t >= WD_ME) {
        // SauterEnvelope::high_ratio over the envelope ∝ (x − a)/x³.
        double v_max = 1.0 - a / c;
        double bound = (c - a) * (1.0 / a + b);
        for (;;) {
            double x = a / (1.0 - v_max * sqrt(wd_uniform_f64(rng)));
            if (wd_uniform_f64(rng) < (c - x) * (1.0 / x + b) / bound) return wd_clamp((1.0 - x) / beta, -1.0, 1.0);
        }
    }
    double ia2 = 1.0 / (a * a), ic2 = 1.0 / (c * c);
    double gmax = b >= 0.0 ? 1.0 + b * c : 1.0 + b * a;
    double norm = g / (2.0 * (t / WD_ME));
    for (;;) {
        double x = 1.0 / sqrt(ia2 - wd_uniform_f64(rng) * (ia2 - ic2));
        double acc = (x - a) * (c - x) / x * norm * (1.0 + b * x) / gmax;
        if (wd_uniform_f64(rng) < acc) return wd_clamp((1.0 - x) / beta, -1.0, 1.0);
    }
}

// close_sum: (a', b', r) with (a' + b') + r == total exactly.
WD_FN void wd_close_sum(double total, double a, double b, double& ao, double& bo, double& ro) {
    double u = nextafter(total, WD_INF) - total;
    b = wd_clamp(b, 0.0, total);
    b = round(b / u) * u;
    a = wd_clamp(a, 0.0, total);
    a = round(a / u) * u;
    if (a + b > total) a = fmax(a - u, 0.0);
    ao = a;
    bo = b;
    ro = total - (a + b);
}

// photoelectric.rs pick over n weights (returns -1 for None).
WD_FN int wd_pick(const double* w, int n, WdRng& rng) {
    double sum = 0.0;
    for (int i = 0; i < n; ++i) sum = sum + w[i];
    if (sum <= 0.0) return -1;
    double u = wd_uniform_f64(rng) * sum;
    for (int i = 0; i < n; ++i) {
        if (u < w[i]) return i;
        u -= w[i];
    }
    for (int i = n - 1; i >= 0; --i) {
        if (w[i] > 0.0) return i;
    }
    return -1;
}

#define WD_MAX_ELEMENTS 16

// photoelectric::sample, with the loop's use of its products (Event::photon).
WD_FN void wd_photoelectric(WdEvent& ev, const WdMaterial& m, double e, const double dir[3], const double pos[3], unsigned int slab, WdRng& rng) {
    const ShowerParams& P = *ev.P;
    double w[WD_MAX_ELEMENTS];
    for (unsigned int i = 0; i < m.n_elem; ++i) {
        const WdElement& c = P.elements[m.elem_off + i];
        w[i] = c.atom_density * wd_photo_xs_atom(P, c, e);
    }
    int idx = wd_pick(w, (int)m.n_elem, rng);
    if (idx < 0 || P.elements[m.elem_off + idx].photo < 0) {
        wd_deposit(ev, slab, pos, WD_TIME(*ev.parent), e);
        return;
    }
    const WdPhoto& el = P.photo[P.elements[m.elem_off + idx].photo];
    double shares[WD_N_SHELLS];
    wd_shares_at(P, el, e, shares);
    double ssum = 0.0;
    for (int k = 0; k < WD_N_SHELLS; ++k) ssum = ssum + shares[k];
    double ws[WD_N_SHELLS + 1];
    for (int k = 0; k < WD_N_SHELLS; ++k) ws[k] = shares[k];
    ws[WD_N_SHELLS] = fmax(1.0 - ssum, 0.0);
    int shell = wd_pick(ws, WD_N_SHELLS + 1, rng);
    if (shell < 0) shell = WD_N_SHELLS;
    double binding = shell < WD_N_SHELLS ? el.binding[shell] : 0.0;
    double t = e - binding;
    bool has_electron = t > 0.0;
    double el_dir[3] = {0.0, 0.0, 0.0};
    double el_e = 0.0;
    if (has_electron) {
        double cos_t = wd_sample_sauter_cos(t, rng);
        double phi = WD_TAU * wd_uniform_f64(rng);
        wd_deflect(dir, cos_t, phi, el_dir);
        el_e = t;
    }
    bool has_fluo = false;
    double fl_dir[3] = {0.0, 0.0, 0.0};
    double fl_e = 0.0;
    if (shell == 0 && wd_uniform_f64(rng) < el.omega_k) {
        double ra = el.ka_rate, rb = el.kb_rate;
        double line = wd_uniform_f64(rng) * (ra + rb) < ra ? el.ka_energy : el.kb_energy;
        if (line >= m.cut_gamma && line > 0.0 && line < binding) {
            has_fluo = true;
            fl_e = line;
            wd_isotropic(rng, fl_dir);
        }
    }
    double a, b, local;
    wd_close_sum(e, el_e, fl_e, a, b, local);
    wd_deposit(ev, slab, pos, WD_TIME(*ev.parent), local);
    if (has_electron) wd_push(ev, pos, slab, WD_ELECTRON, a, el_dir, WD_BY_PHOTOELECTRIC);
    if (has_fluo) wd_push(ev, pos, slab, WD_GAMMA, b, fl_dir, WD_BY_FLUORESCENCE);
}

// ---- rayleigh.rs ----

WD_FN double wd_rayleigh_xs(const ShowerParams& P, const WdRayleigh& el, double e) {
    const double* en = P.data + el.off;
    const double* sg = en + el.nxs;
    unsigned int n = el.nxs;
    double e0 = en[0], el_ = en[n - 1];
    if (e <= e0) return sg[0];
    if (e >= el_) {
        double q = el_ / e;
        return sg[n - 1] * (q * q);
    }
    unsigned int i = wd_count_le(en, n, e) - 1;
    double x0 = en[i], x1 = en[i + 1];
    double y0 = sg[i], y1 = sg[i + 1];
    double t = wd_ln(e / x0) / wd_ln(x1 / x0);
    return y0 * wd_pow(y1 / y0, t);
}

__device__ __forceinline__ bool wd_is_power_law(double x0, double y0, double y1) {
    return x0 > 0.0 && y0 > 1e-300 && y1 > 1e-300;
}

WD_FN double wd_segment_integral(double x0, double y0, double x1, double y1, double x) {
    if (x <= x0) return 0.0;
    if (wd_is_power_law(x0, y0, y1)) {
        double b1 = wd_ln(y1 / y0) / wd_ln(x1 / x0) + 1.0;
        double l = wd_ln(x / x0);
        if (fabs(b1) < 1e-9) return y0 * x0 * l;
        return y0 * x0 * wd_exp_m1(b1 * l) / b1;
    }
    double s = (y1 - y0) / (x1 - x0);
    double d = x - x0;
    return y0 * d + 0.5 * s * d * d;
}

WD_FN double wd_segment_invert(double x0, double y0, double x1, double y1, double r) {
    if (r <= 0.0) return x0;
    double x;
    if (wd_is_power_law(x0, y0, y1)) {
        double b1 = wd_ln(y1 / y0) / wd_ln(x1 / x0) + 1.0;
        double t = r / (y0 * x0);
        if (fabs(b1) < 1e-9) {
            x = x0 * wd_exp(t);
        } else {
            x = x0 * wd_exp(wd_ln_1p(b1 * t) / b1);
        }
    } else {
        double s = (y1 - y0) / (x1 - x0);
        double disc = fmax(y0 * y0 + 2.0 * s * r, 0.0);
        x = x0 + 2.0 * r / (y0 + sqrt(disc));
    }
    return wd_clamp(x, x0, x1);
}

// ElementRayleigh::cumulative.
WD_FN double wd_rayleigh_cumulative(const double* xv, const double* f2, const double* cum, unsigned int n, double x) {
    if (x >= xv[n - 1]) return cum[n - 1];
    unsigned int i = wd_count_le(xv, n, x) - 1;
    return cum[i] + wd_segment_integral(xv[i], f2[i], xv[i + 1], f2[i + 1], x);
}

// ElementRayleigh::invert_cumulative.
WD_FN double wd_rayleigh_invert(const double* xv, const double* f2, const double* cum, unsigned int n, double c) {
    unsigned int k = wd_count_le(cum, n, c);
    if (k < 1) k = 1;
    if (k > n - 1) k = n - 1;
    unsigned int i = k - 1;
    return wd_segment_invert(xv[i], f2[i], xv[i + 1], f2[i + 1], c - cum[i]);
}

// ElementRayleigh::sample_cos.
WD_FN double wd_rayleigh_cos(const ShowerParams& P, const WdRayleigh& el, double e, WdRng& rng) {
    const double* xv = P.data + el.off + 2 * el.nxs;
    const double* f2 = xv + el.nff;
    const double* cum = f2 + el.nff;
    unsigned int n = el.nff;
    double k = e / WD_KEV / WD_HC_KEV_ANGSTROM;
    double k2 = k * k;
    double c_max = wd_rayleigh_cumulative(xv, f2, cum, n, k2);
    for (;;) {
        double x = fmin(wd_rayleigh_invert(xv, f2, cum, n, wd_uniform_f64(rng) * c_max), k2);
        double cos_t = wd_clamp(1.0 - 2.0 * x / k2, -1.0, 1.0);
        if (2.0 * wd_uniform_f64(rng) < 1.0 + cos_t * cos_t) return cos_t;
    }
}

// rayleigh::sample (the photon keeps its energy).
WD_FN void wd_rayleigh(const ShowerParams& P, const WdMaterial& m, double e, double dir[3], WdRng& rng) {
    double w[WD_MAX_ELEMENTS];
    double sum = 0.0;
    for (unsigned int i = 0; i < m.n_elem; ++i) {
        const WdElement& c = P.elements[m.elem_off + i];
        w[i] = c.rayleigh < 0 ? 0.0 : c.atom_density * wd_rayleigh_xs(P, P.rayleigh[c.rayleigh], e);
        sum = sum + w[i];
    }
    if (sum <= 0.0) return;
    double u = wd_uniform_f64(rng) * sum;
    int idx = 0;
    for (int i = (int)m.n_elem - 1; i >= 0; --i) {
        if (w[i] > 0.0) { idx = i; break; }
    }
    for (unsigned int i = 0; i < m.n_elem; ++i) {
        if (u < w[i]) { idx = (int)i; break; }
        u -= w[i];
    }
    const WdElement& c = P.elements[m.elem_off + idx];
    if (c.rayleigh < 0) return;
    double cos_t = wd_rayleigh_cos(P, P.rayleigh[c.rayleigh], e, rng);
    double phi = WD_TAU * wd_uniform_f64(rng);
    double out[3];
    wd_deflect(dir, cos_t, phi, out);
    dir[0] = out[0]; dir[1] = out[1]; dir[2] = out[2];
}

// ---- pair.rs ----

__device__ __forceinline__ double wd_pair_poly(const double c[6], double x) {
    double acc = 0.0;
    for (int i = 5; i >= 0; --i) acc = acc * x + c[i];
    return acc;
}

WD_FN double wd_pair_xs_atom(double z, double e) {
    const double A[6] = {8.7842e2, -1.9625e3, 1.2949e3, -2.0028e2, 1.2575e1, -2.8333e-1};
    const double B[6] = {-1.0342e1, 1.7692e1, -8.2381, 1.3063, -9.0815e-2, 2.3586e-3};
    const double C[6] = {-4.5263e2, 1.1161e3, -8.6749e2, 2.1773e2, -2.0467e1, 6.5372e-1};
    double two_mc2 = 2.0 * WD_ME;
    if (e <= two_mc2) return 0.0;
    double x = wd_ln(fmax(e, WD_PAIR_E_LOW) / WD_ME);
    double f1 = wd_pair_poly(A, x), f2 = wd_pair_poly(B, x), f3 = wd_pair_poly(C, x);
    double sigma = (z + 1.0) * (f1 * z + f2 * z * z + f3) * WD_MICROBARN;
    if (e < WD_PAIR_E_LOW) {
        double r = (e - two_mc2) / (WD_PAIR_E_LOW - two_mc2);
        sigma *= r * r;
    }
    return fmax(sigma, 0.0);
}

__device__ __forceinline__ double wd_screen1(double d) {
    if (d > 1.4) return 42.038 - 8.29 * wd_ln(d + 0.958);
    return 42.184 - d * (7.444 - 1.623 * d);
}
__device__ __forceinline__ double wd_screen2(double d) {
    if (d > 1.4) return 42.038 - 8.29 * wd_ln(d + 0.958);
    return 41.326 - d * (5.848 - 0.902 * d);
}

// f_z: (8/3) ln Z (+ 8 f_c above 50 MeV).
__device__ __forceinline__ double wd_f_z(const WdElement& c, double e) {
    double f = 8.0 / 3.0 * c.ln_z;
    if (e > 50.0) return f + 8.0 * c.coulomb;
    return f;
}

WD_FN double wd_epsilon_min(const WdElement& c, double e) {
    double eps0 = WD_ME / e;
    double dmin = 4.0 * 136.0 * eps0 / c.cbrt_z;
    double dmax = wd_exp((42.038 - wd_f_z(c, e)) / 8.29) - 0.958;
    double eps1 = 0.5 - 0.5 * sqrt(1.0 - fmin(dmin / dmax, 1.0));
    return fmax(eps0, eps1);
}

WD_FN double wd_pair_epsilon(const WdElement& c, double e, WdRng& rng) {
    double eps0 = WD_ME / e;
    if (e < 2.0) return eps0 + (0.5 - eps0) * wd_uniform_f64(rng);
    double f = wd_f_z(c, e);
    double screen = 136.0 * eps0 / c.cbrt_z;
    double dmin = 4.0 * screen;
    double eps_min = wd_epsilon_min(c, e);
    double range = 0.5 - eps_min;
    double f10 = wd_screen1(dmin) - f, f20 = wd_screen2(dmin) - f;
    double n1 = fmax(f10 * range * range, 0.0);
    double n2 = fmax(1.5 * f20, 0.0);
    for (;;) {
        bool branch1 = n1 > (n1 + n2) * wd_uniform_f64(rng);
        double u = wd_uniform_f64(rng);
        double eps = branch1 ? 0.5 - range * wd_cbrt(u) : eps_min + range * u;
        double delta = screen / (eps * (1.0 - eps));
        double g = branch1 ? (wd_screen1(delta) - f) / f10 : (wd_screen2(delta) - f) / f20;
        if (wd_uniform_f64(rng) < g) return eps;
    }
}

// pair.rs sample_tsai_theta.
WD_FN double wd_pair_tsai_theta(double e_total, WdRng& rng) {
    double a = wd_uniform_f64(rng) < 9.0 / (9.0 + WD_TSAI_D) ? WD_TSAI_A : 3.0 * WD_TSAI_A;
    double u1 = wd_uniform_f64(rng);
    double u2 = wd_uniform_f64(rng);
    double u = -wd_ln(fmax(u1 * u2, WD_MIN_POSITIVE)) / a;
    return fmin(u * WD_ME / e_total, WD_PI);
}

// pair::sample with the loop's use (Event::photon, conversion).
WD_FN void wd_conversion(WdEvent& ev, const WdMaterial& m, double e, const double dir[3], const double pos[3], unsigned int slab, WdRng& rng) {
    const ShowerParams& P = *ev.P;
    // pick_z
    double w[WD_MAX_ELEMENTS];
    double sum = 0.0;
    for (unsigned int i = 0; i < m.n_elem; ++i) {
        const WdElement& c = P.elements[m.elem_off + i];
        w[i] = c.atom_density * wd_pair_xs_atom(c.z, e);
        sum = sum + w[i];
    }
    double u = wd_uniform_f64(rng) * sum;
    unsigned int idx = m.n_elem - 1;
    for (unsigned int i = 0; i < m.n_elem; ++i) {
        if (u < w[i]) { idx = i; break; }
        u -= w[i];
    }
    const WdElement& c = P.elements[m.elem_off + idx];
    double eps = wd_pair_epsilon(c, e, rng);
    if (!(wd_uniform_f64(rng) < 0.5)) eps = 1.0 - eps;
    double k = fmax(e - 2.0 * WD_ME, 0.0);
    double t_minus, t_mid, t_plus;
    wd_close_sum(k, eps * e - WD_ME, 0.0, t_minus, t_mid, t_plus);
    double th_minus = wd_pair_tsai_theta(t_minus + WD_ME, rng);
    double th_plus = wd_pair_tsai_theta(t_plus + WD_ME, rng);
    double phi = WD_TAU * wd_uniform_f64(rng);
    double d_minus[3], d_plus[3];
    wd_deflect(dir, wd_cos(th_minus), phi, d_minus);
    wd_deflect(dir, wd_cos(th_plus), phi + WD_PI, d_plus);
    atomicAdd(ev.tally + wd_w_rest(P), wd_fixed(2.0 * WD_ME));
    wd_push(ev, pos, slab, WD_ELECTRON, t_minus, d_minus, WD_BY_CONVERSION);
    wd_push(ev, pos, slab, WD_POSITRON, t_plus, d_plus, WD_BY_CONVERSION);
}

// ---- klein_nishina.rs ----

WD_FN double wd_kn_epsilon(double energy, WdRng& rng, double& t_out) {
    double k = energy / WD_ME;
    double eps0 = 1.0 / (1.0 + 2.0 * k);
    double eps0_sq = eps0 * eps0;
    double alpha1 = -wd_ln(eps0);
    double alpha2 = 0.5 * (1.0 - eps0_sq);
    for (;;) {
        double eps, eps_sq;
        if (wd_uniform_f64(rng) * (alpha1 + alpha2) < alpha1) {
            eps = wd_exp(-alpha1 * wd_uniform_f64(rng));
            eps_sq = eps * eps;
        } else {
            eps_sq = eps0_sq + (1.0 - eps0_sq) * wd_uniform_f64(rng);
            eps = sqrt(eps_sq);
        }
        double t = (1.0 - eps) / (eps * k);
        double sin2 = t * (2.0 - t);
        if (wd_uniform_f64(rng) * (1.0 + eps_sq) >= eps * sin2) {
            t_out = t;
            return eps;
        }
    }
}

// klein_nishina::interact with the loop's use (Event::photon, Compton).
WD_FN void wd_compton(WdEvent& ev, double& energy, double dir[3], const double pos[3], unsigned int slab, WdRng& rng) {
    double t;
    double eps = wd_kn_epsilon(energy, rng, t);
    double phi = WD_TAU * wd_uniform_f64(rng);
    double cos_theta = 1.0 - t;
    double sin_theta = sqrt(fmax(t * (2.0 - t), 0.0));
    double nd[3];
    wd_rotate(sin_theta * wd_cos(phi), sin_theta * wd_sin(phi), cos_theta, dir, nd);
    double new_energy = eps * energy;
    double electron = energy - new_energy;
    if (electron < WD_SECONDARY_CUTOFF) {
        wd_deposit(ev, slab, pos, WD_TIME(*ev.parent), electron);
    } else {
        double p0 = energy * dir[0] - new_energy * nd[0];
        double p1 = energy * dir[1] - new_energy * nd[1];
        double p2 = energy * dir[2] - new_energy * nd[2];
        double norm = sqrt(p0 * p0 + p1 * p1 + p2 * p2);
        double ed[3] = {p0 / norm, p1 / norm, p2 / norm};
        wd_deposit(ev, slab, pos, WD_TIME(*ev.parent), 0.0);
        wd_push(ev, pos, slab, WD_ELECTRON, electron, ed, WD_BY_COMPTON);
    }
    energy = new_energy;
    dir[0] = nd[0]; dir[1] = nd[1]; dir[2] = nd[2];
}

// ---- physics.rs gamma_xs ----

WD_FN double wd_gamma_xs(const ShowerParams& P, const WdMaterial& m, int process, double e) {
    switch (process) {
    case 0: return wd_grid_eval(P, m.compton, e);
    case 1: return wd_photo_macro_xs(P, m, e);
    case 2: return e <= 2.0 * WD_ME ? 0.0 : wd_grid_eval(P, m.pair, e);
    default: return wd_grid_eval(P, m.rayleigh, e);
    }
}

// ---- Event::photon ----

// A photon's transport as a state and one step at a time, so that a kernel can give a lane whose
// track ended the next track at once (WD_REFILL) instead of idling until the warp's longest
// track ends; wd_photon runs one track to its end (the host twin's entry point). Same
// operations in the same order either way.
// The event record a track tallies into, its children's ordinals counted from 0.
__device__ __forceinline__ WdEvent wd_event_of(const ShowerParams& P, const WdTrack& t) {
    WdEvent ev;
    ev.P = &P;
    ev.tally = P.tally + (unsigned long long)t.event * P.stride;
    ev.children = 0ull;
    ev.id = t.id;
    ev.event = t.event;
    ev.hits = 0u;
#ifdef WD_GEOMETRY_GDML
    ev.parent = nullptr;
#endif
    return ev;
}

struct WdPhotonState {
    WdTrack t;
    WdEvent ev;
    WdRng rng;
    double n_left;
    unsigned long long steps, neutral;
};

// `t` may be `s.t` itself (the kernels load a track straight into its state).
WD_FN void wd_photon_start(const ShowerParams& P, const WdTrack& t, WdPhotonState& s) {
    if (&t != &s.t) s.t = t;
    s.ev = wd_event_of(P, t);
    s.rng = wd_rng(P.seed, WD_TAG_SHOWER, t.id);
    s.n_left = wd_exp1(s.rng);
    s.steps = 0ull;
    s.neutral = 0ull;
}

__device__ __forceinline__ bool wd_photon_end(WdPhotonState& s) {
    wd_tally_add(s.ev, wd_w_neutral_steps(*s.ev.P), s.neutral);
    return false;
}

// What the first part of a step (`*_along`) leaves to do: nothing more this step, the track
// has ended, or the discrete interaction of that process index (photons: 0 Compton,
// 1 photoelectric, 2 conversion, 3 Rayleigh; e±: 0 δ-ray, 1 bremsstrahlung, 2 annihilation).
#define WD_ACT_NONE -1
#define WD_ACT_END -2
#ifdef WD_GEOMETRY_GDML
// wd_charged_limits: the step went through vacuum to the next volume (nothing more this step).
#define WD_ACT_FLEW -3

// transport.rs Event::fly: straight through vacuum to the next boundary; false when the track
// escaped (its energy tallied).
WD_FN bool wd_fly(WdEvent& ev, WdTrack& t) {
    const ShowerParams& P = *ev.P;
    WdBoundary b = wd_next_boundary(P, t);
    t.time += b.distance / wd_speed(t.particle, t.energy);
    if (wd_cross(P, t, b)) return true;
    wd_tally_add(ev, wd_w_escaped(P), wd_fixed(t.energy));
    return false;
}
#endif

// A photon's step up to the choice of its interaction (transport.rs Event::photon): the
// material's cross sections, the boundary or the interaction point, the choice.
__device__ int wd_photon_along(const ShowerParams& P, WdPhotonState& s) {
    if (s.t.energy < WD_LOWEST_PHOTON_ENERGY) {
        wd_deposit(s.ev, s.t.slab, s.t.pos, WD_TIME(s.t), s.t.energy);
        wd_photon_end(s);
        return WD_ACT_END;
    }
    s.steps += 1ull;
    if (s.steps > WD_MAX_STEPS) {
        wd_tally_add(s.ev, wd_w_killed(P), 1ull);
        wd_deposit(s.ev, s.t.slab, s.t.pos, WD_TIME(s.t), s.t.energy);
        wd_photon_end(s);
        return WD_ACT_END;
    }
    s.neutral += 1ull;
#ifdef WD_GEOMETRY_GDML
    // Vacuum: straight to the next boundary (transport.rs Event::fly).
    if (P.slab_material[s.t.slab] == WD_VACUUM) {
        if (wd_fly(s.ev, s.t)) return WD_ACT_NONE;
        wd_photon_end(s);
        return WD_ACT_END;
    }
#endif
    const WdMaterial& m = P.materials[P.slab_material[s.t.slab]];
    double xs[4];
    for (int p = 0; p < 4; ++p) xs[p] = wd_gamma_xs(P, m, p, s.t.energy);
    double total = ((xs[0] + xs[1]) + xs[2]) + xs[3];
#ifdef WD_GEOMETRY_GDML
    WdBoundary b = wd_next_boundary(P, s.t);
#else
    WdBoundary b = wd_distance_to_boundary(P, s.t.pos, s.t.dir, s.t.slab);
#endif
    double d_int = total > 0.0 ? s.n_left / total : WD_INF;
    if (d_int >= b.distance) {
        s.n_left -= b.distance * total;
#ifdef WD_GEOMETRY_GDML
        s.t.time += b.distance / WD_C_CM_PER_NS;
        if (wd_cross(P, s.t, b)) return WD_ACT_NONE;
#else
        wd_cross(s.t.pos, s.t.dir, b);
        if (b.next >= 0) {
            s.t.slab = (unsigned int)b.next;
            return WD_ACT_NONE;
        }
#endif
        wd_tally_add(s.ev, wd_w_escaped(P), wd_fixed(s.t.energy));
        wd_photon_end(s);
        return WD_ACT_END;
    }
    for (int k = 0; k < 3; ++k) s.t.pos[k] += d_int * s.t.dir[k];
#ifdef WD_GEOMETRY_GDML
    s.t.time += d_int / WD_C_CM_PER_NS;
#endif
    s.n_left = wd_exp1(s.rng);
    double u = wd_uniform_f64(s.rng) * total;
    int chosen = 3;
    for (int p = 0; p < 4; ++p) {
        if (u < xs[p]) { chosen = p; break; }
        u -= xs[p];
    }
    return chosen;
}

// The interaction `chosen` of wd_photon_along; false when the photon has ended.
__device__ bool wd_photon_interact(const ShowerParams& P, WdPhotonState& s, int chosen) {
#ifdef WD_GEOMETRY_GDML
    s.ev.parent = &s.t;
#endif
    const WdMaterial& m = P.materials[P.slab_material[s.t.slab]];
    if (chosen == 0) {
        wd_compton(s.ev, s.t.energy, s.t.dir, s.t.pos, s.t.slab, s.rng);
    } else if (chosen == 1) {
        wd_photoelectric(s.ev, m, s.t.energy, s.t.dir, s.t.pos, s.t.slab, s.rng);
        return wd_photon_end(s);
    } else if (chosen == 2) {
        wd_conversion(s.ev, m, s.t.energy, s.t.dir, s.t.pos, s.t.slab, s.rng);
        return wd_photon_end(s);
    } else {
        wd_rayleigh(P, m, s.t.energy, s.t.dir, s.rng);
    }
    return true;
}

// One step of a photon; false when its track has ended (its step count tallied).
__device__ bool wd_photon_step(const ShowerParams& P, WdPhotonState& s) {
    int act = wd_photon_along(P, s);
    if (act == WD_ACT_END) return false;
    if (act == WD_ACT_NONE) return true;
    return wd_photon_interact(P, s, act);
}

__device__ void wd_photon(const ShowerParams& P, WdTrack t) {
    WdPhotonState s;
    wd_photon_start(P, t, s);
    while (wd_photon_step(P, s)) {}
}

// ---- annihilation.rs ----

WD_FN double wd_annihilation_xs(const ShowerParams& P, const WdMaterial& m, double t) {
    double tau = fmax(t, 1e-6) / WD_ME;
    double s = sqrt(tau * (tau + 2.0));
    double x = (tau * tau + 6.0 * tau + 6.0) * wd_ln(tau + 1.0 + s) - (tau + 4.0) * s;
    return m.electron_density * (P.pi_re2 * x / (tau * (tau + 2.0) * (tau + 2.0)));
}

WD_FN void wd_annihilate_at_rest(WdEvent& ev, const double pos[3], unsigned int slab, WdRng& rng) {
    const ShowerParams& P = *ev.P;
    atomicAdd(ev.tally + wd_w_rest(P), (unsigned long long)(-(long long)wd_fixed(2.0 * WD_ME)));
    double d[3];
    wd_isotropic(rng, d);
    double back[3] = {-d[0], -d[1], -d[2]};
    wd_push(ev, pos, slab, WD_GAMMA, WD_ME, d, WD_BY_ANNIHILATION);
    wd_push(ev, pos, slab, WD_GAMMA, WD_ME, back, WD_BY_ANNIHILATION);
}

WD_FN void wd_annihilate_in_flight(WdEvent& ev, double t, const double dir[3], const double pos[3], unsigned int slab, WdRng& rng) {
    const ShowerParams& P = *ev.P;
    atomicAdd(ev.tally + wd_w_rest(P), (unsigned long long)(-(long long)wd_fixed(2.0 * WD_ME)));
    double tau = t / WD_ME;
    double tau2 = tau + 2.0;
    double gamma = tau + 1.0;
    double root = sqrt(tau / tau2);
    double e_min = 0.5 * (1.0 - root), e_max = 0.5 * (1.0 + root);
    double ratio = e_max / e_min;
    double eps;
    for (;;) {
        double e = e_min * wd_pow(ratio, wd_uniform_f64(rng));
        double accept = 1.0 - e + (2.0 * gamma * e - 1.0) / (e * tau2 * tau2);
        if (wd_uniform_f64(rng) <= accept) { eps = e; break; }
    }
    double total = t + 2.0 * WD_ME;
    double e1 = eps * total;
    double cos1 = wd_clamp((eps * tau2 - 1.0) / (eps * sqrt(tau * tau2)), -1.0, 1.0);
    double phi = WD_TAU * wd_uniform_f64(rng);
    double d1[3];
    wd_deflect(dir, cos1, phi, d1);
    double p = sqrt(t * (t + 2.0 * WD_ME));
    double v0 = p * dir[0] - e1 * d1[0], v1 = p * dir[1] - e1 * d1[1], v2 = p * dir[2] - e1 * d1[2];
    double n = sqrt(v0 * v0 + v1 * v1 + v2 * v2);
    double d2[3] = {v0 / n, v1 / n, v2 / n};
    wd_push(ev, pos, slab, WD_GAMMA, e1, d1, WD_BY_ANNIHILATION);
    wd_push(ev, pos, slab, WD_GAMMA, total - e1, d2, WD_BY_ANNIHILATION);
}

// ---- fluctuations.rs ----

WD_FN double wd_bohr_variance(const ShowerParams& P, const WdMaterial& m, double t, double t_cut, double s) {
    double gamma = t / WD_ME + 1.0;
    double beta2 = 1.0 - 1.0 / (gamma * gamma);
    return P.twopi_mc2_rcl2 * m.electron_density * s * t_cut * (1.0 - 0.5 * beta2) / beta2;
}

WD_FN double wd_standard_normal(WdRng& rng) {
    double u1 = wd_uniform_f64(rng);
    double u2 = wd_uniform_f64(rng);
    return sqrt(-2.0 * wd_ln(u1)) * wd_cos(WD_TAU * u2);
}

// standard_gamma for k ≥ 1 (Marsaglia–Tsang).
WD_FN double wd_standard_gamma1(double k, WdRng& rng) {
    double d = k - 1.0 / 3.0;
    double c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x = wd_standard_normal(rng);
        double v = 1.0 + c * x;
        if (v <= 0.0) continue;
        v = v * v * v;
        double u = wd_uniform_f64(rng);
        if (wd_ln(u) < 0.5 * x * x + d - d * v + d * wd_ln(v)) return d * v;
    }
}

// standard_gamma: for k < 1 Gamma(k + 1) first, then U^(1/k).
WD_FN double wd_standard_gamma(double k, WdRng& rng) {
    if (k < 1.0) {
        double g = wd_standard_gamma1(k + 1.0, rng);
        return g * wd_pow(wd_uniform_f64(rng), 1.0 / k);
    }
    return wd_standard_gamma1(k, rng);
}

WD_FN double wd_sample_loss(double mean, double var, WdRng& rng) {
    if (mean <= 0.0 || var <= 0.0) return fmax(mean, 0.0);
    double sigma = sqrt(var);
    if (mean >= 2.0 * sigma) {
        for (;;) {
            double x = mean + sigma * wd_standard_normal(rng);
            if (0.0 <= x && x <= 2.0 * mean) return x;
        }
    }
    double shape = mean * mean / var;
    double scale = var / mean;
    return scale * wd_standard_gamma(shape, rng);
}

// ---- msc.rs ----

__device__ __forceinline__ double wd_lambda1(const ShowerParams& P, const WdMaterial& m, int q, double t) {
    return wd_grid_eval(P, m.msc[q], t);
}

__device__ __forceinline__ void wd_momentum2_beta2(double t, double& p2, double& b2) {
    p2 = t * (t + 2.0 * WD_ME);
    double e = t + WD_ME;
    b2 = p2 / (e * e);
}

struct WdMscState {
    double range_init;
    double t_limit;
    bool initialised;
};

WD_FN double wd_msc_limit_step(const ShowerParams& P, const WdMaterial& m, WdMscState& s, int q, double t, double range, double safety, bool entered) {
    if (entered || !s.initialised) {
        double l1 = wd_lambda1(P, m, q, t);
        s.range_init = fmax(range, l1);
        s.t_limit = fmax(fmax(WD_F_RANGE * s.range_init, WD_F_SAFETY * safety), WD_T_LIMIT_MIN);
        s.initialised = true;
    }
    if (range < safety) return range;
    return fmin(s.t_limit, range);
}

WD_FN void wd_linear_lambda(const ShowerParams& P, const WdMaterial& m, int q, double t_start, double t_end, double true_len, double& l0, double& alpha) {
    l0 = wd_lambda1(P, m, q, t_start);
    double l1 = wd_lambda1(P, m, q, fmax(t_end, 0.0));
    alpha = (true_len > 0.0 && l1 < l0) ? (l0 - l1) / (true_len * l0) : 0.0;
}

WD_FN double wd_mean_cos_linear(double l0, double alpha, double true_len) {
    if (alpha * true_len < 1e-12) return wd_exp(-true_len / l0);
    return wd_exp(wd_ln_1p(-alpha * true_len) / (alpha * l0));
}

WD_FN double wd_geom_linear(double l0, double alpha, double true_len) {
    double aw = alpha + 1.0 / l0;
    if (alpha * true_len < 1e-12) return -wd_exp_m1(-true_len / l0) * l0;
    double w = aw / alpha;
    return -wd_exp_m1(w * wd_ln_1p(-alpha * true_len)) / aw;
}

__device__ __forceinline__ double wd_end_energy(double t, double true_len, double range) {
    if (range > 0.0) return t * fmax(1.0 - true_len / range, 0.0);
    return t;
}

WD_FN double wd_true_to_geom(const ShowerParams& P, const WdMaterial& m, int q, double t, double true_len, double range) {
    if (true_len <= 0.0) return 0.0;
    double l0, alpha;
    wd_linear_lambda(P, m, q, t, wd_end_energy(t, true_len, range), true_len, l0, alpha);
    return wd_geom_linear(l0, alpha, true_len);
}

WD_FN double wd_geom_to_true(const ShowerParams& P, const WdMaterial& m, int q, double t, double geom_len, double range) {
    if (geom_len <= 0.0) return 0.0;
    double t_cap = range > 0.0 ? range : 1e30;
    if (geom_len >= t_cap) return t_cap;
    double lo = geom_len;
    double zlo = wd_true_to_geom(P, m, q, t, lo, range);
    if (zlo >= geom_len) return lo;
    double best_t = lo, best_z = zlo;
    double hi = lo;
    for (;;) {
        double next = fmin(hi * WD_FOURTH_ROOT_2, t_cap);
        double zn = wd_true_to_geom(P, m, q, t, next, range);
        if (zn >= geom_len) {
            lo = hi;
            hi = next;
            break;
        }
        if (zn > best_z) {
            best_t = next;
            best_z = zn;
        }
        if (next >= t_cap) return best_t;
        hi = next;
    }
    for (int k = 0; k < 200; ++k) {
        double mid = 0.5 * (lo + hi);
        if (mid <= lo || mid >= hi) break;
        if (wd_true_to_geom(P, m, q, t, mid, range) < geom_len) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return 0.5 * (lo + hi);
}

WD_FN double wd_highland_theta0(double t_start, double t_end, double true_len, double radiation_length) {
    double p2s, b2s, p2e, b2e;
    wd_momentum2_beta2(t_start, p2s, b2s);
    wd_momentum2_beta2(t_end, p2e, b2e);
    double bcp_s = sqrt(p2s * b2s), bcp_e = sqrt(p2e * b2e);
    double beta2 = sqrt(b2s * b2e);
    double y = true_len / radiation_length;
    double c = fmax(1.0 + 0.038 * wd_ln(y / beta2), 0.0);
    return 13.6 / sqrt(bcp_s * bcp_e) * sqrt(y) * c;
}

WD_FN double wd_core_mean(double a) {
    if (a < 0.1) {
        double a2 = a * a;
        return 1.0 - a * (1.0 / 3.0 - a2 * (1.0 / 45.0 - a2 * (2.0 / 945.0 - a2 * (1.0 / 4725.0 - a2 * (2.0 / 93555.0)))));
    }
    if (a > 300.0) return 1.0 / a;
    return 1.0 / a - 2.0 / wd_exp_m1(2.0 * a);
}

// msc.rs core_mean_slope.
WD_FN double wd_core_mean_slope(double a) {
    if (a < 0.1) {
        double a2 = a * a;
        return -1.0 / 3.0 + a2 * (1.0 / 15.0 - a2 * (2.0 / 189.0 - a2 * (1.0 / 675.0)));
    }
    if (a > 300.0) return -1.0 / (a * a);
    double m = wd_exp_m1(-2.0 * a);
    return 4.0 * wd_exp(-2.0 * a) / (m * m) - 1.0 / (a * a);
}

WD_FN double wd_tail_mean(double c) {
    double a = 0.5 * c;
    return c * ((1.0 + a) * wd_ln_1p(1.0 / a) - 1.0);
}

// msc.rs core_a_from_mean: Cohen's inverse-Langevin start, then Newton.
#define WD_CORE_A_MIN 9.357622968840175e-14
#define WD_CORE_A_MAX 1.1420073898156842e26
WD_FN double wd_core_a_from_mean(double d) {
    if (!(d < wd_core_mean(WD_CORE_A_MIN))) return WD_CORE_A_MIN;
    if (!(d > 1.0 / WD_CORE_A_MAX)) return WD_CORE_A_MAX;
    if (d <= 1.0 / 300.0) return 1.0 / d;
    double y = 1.0 - d;
    double a = y * (3.0 - y * y) / (1.0 - y * y);
    for (int k = 0; k < 12; ++k) {
        double step = (wd_core_mean(a) - d) / wd_core_mean_slope(a);
        double next = wd_clamp(a - step, 0.5 * a, 2.0 * a);
        bool done = fabs(next - a) <= 4.0 * 2.220446049250313e-16 * a;
        a = next;
        if (done) break;
    }
    return wd_clamp(a, WD_CORE_A_MIN, WD_CORE_A_MAX);
}

struct WdAngular {
    double p, a, c;
};

WD_FN WdAngular wd_angular_params(double d, double theta0) {
    WdAngular r;
    if (!(theta0 > 0.0 && theta0 < 0.5 * WD_PI)) {
        r.p = 1.0; r.a = wd_core_a_from_mean(d); r.c = 1.0;
        return r;
    }
    double a = 0.5 / (1.0 - wd_cos(theta0));
    double s = WD_TAIL_SCALE * theta0;
    double c = 0.5 * (s * s);
    double m1 = wd_core_mean(a), m2 = wd_tail_mean(c);
    if (m1 <= d && d <= m2 && m2 > m1) {
        r.p = (m2 - d) / (m2 - m1); r.a = a; r.c = c;
        return r;
    }
    r.p = 1.0; r.a = wd_core_a_from_mean(d); r.c = 1.0;
    return r;
}

WD_FN double wd_core_mean2(double a) {
    if (a < 1e-3) return 4.0 / 3.0 - 2.0 * a / 3.0;
    double e = wd_exp(-2.0 * a);
    return (2.0 / (a * a * a) - e * (4.0 / a + 4.0 / (a * a) + 2.0 / (a * a * a))) * a / -wd_exp_m1(-2.0 * a);
}

WD_FN double wd_tail_mean2(double c) {
    return (2.0 - 2.0 * c * wd_ln_1p(2.0 / c) + 2.0 * c / (2.0 + c)) * c * (2.0 + c) / 2.0;
}

WD_FN double wd_mean_sin2(const WdAngular& q) {
    double m1 = wd_core_mean(q.a);
    double m2 = q.p < 1.0 ? wd_tail_mean(q.c) : 0.0;
    double q1 = wd_core_mean2(q.a);
    double q2 = q.p < 1.0 ? wd_tail_mean2(q.c) : 0.0;
    double mean = q.p * m1 + (1.0 - q.p) * m2;
    double mean2 = q.p * q1 + (1.0 - q.p) * q2;
    return fmax(2.0 * mean - mean2, 0.0);
}

WD_FN double wd_msc_sample_cos(const WdAngular& q, WdRng& rng) {
    double xi = wd_uniform_f64(rng);
    double x;
    if (q.p >= 1.0 || wd_uniform_f64(rng) <= q.p) {
        x = -wd_ln_1p(-xi * -wd_exp_m1(-2.0 * q.a)) / q.a;
    } else {
        x = 2.0 * q.c * xi / (2.0 + q.c - 2.0 * xi);
    }
    return wd_clamp(1.0 - x, -1.0, 1.0);
}

WD_FN double wd_lateral_r2(double l1, double k, double true_len) {
    double tau = true_len / l1;
    if (tau < 1e-3) return 2.0 * k / 9.0 * true_len * true_len * tau * (1.0 - (k + 1.0) / 4.0 * tau);
    double r2 = 4.0 * l1 * l1 / 3.0 * (tau - (k + 1.0) / k + k / (k - 1.0) * wd_exp(-tau) - wd_exp(-k * tau) / (k * (k - 1.0)));
    return fmax(r2, 0.0);
}

WD_FN void wd_perpendicular_basis(const double d[3], double e1[3], double e2[3]) {
    double a[3];
    if (fabs(d[0]) < 0.6) { a[0] = 1.0; a[1] = 0.0; a[2] = 0.0; } else { a[0] = 0.0; a[1] = 1.0; a[2] = 0.0; }
    double dot = a[0] * d[0] + a[1] * d[1] + a[2] * d[2];
    e1[0] = a[0] - dot * d[0]; e1[1] = a[1] - dot * d[1]; e1[2] = a[2] - dot * d[2];
    double n = sqrt(e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2]);
    e1[0] /= n; e1[1] /= n; e1[2] /= n;
    e2[0] = d[1] * e1[2] - d[2] * e1[1];
    e2[1] = d[2] * e1[0] - d[0] * e1[2];
    e2[2] = d[0] * e1[1] - d[1] * e1[0];
}

// msc::sample: the new direction into `dir`, the displacement into `disp`.
WD_FN void wd_msc_sample(const ShowerParams& P, const WdMaterial& m, int q, double t_start, double t_end, double true_len, double dir[3], double safety, double disp[3], WdRng& rng) {
    disp[0] = 0.0; disp[1] = 0.0; disp[2] = 0.0;
    if (true_len <= 0.0) return;
    double l0, alpha;
    wd_linear_lambda(P, m, q, t_start, t_end, true_len, l0, alpha);
    double mc = wd_mean_cos_linear(l0, alpha, true_len);
    double d = 1.0 - mc;
    if (d <= 1e-14) return;
    double theta0 = wd_highland_theta0(t_start, fmax(t_end, 1e-9 * t_start), true_len, m.radiation_length);
    WdAngular params = wd_angular_params(d, theta0);
    double u = wd_msc_sample_cos(params, rng);
    double phi = WD_TAU * wd_uniform_f64(rng);
    double nd[3];
    wd_deflect(dir, u, phi, nd);
    if (safety > 0.0) {
        double tau = -wd_ln(mc);
        double l_eff = true_len / tau;
        double r2 = wd_lateral_r2(l_eff, WD_K_LEWIS, true_len);
        double sin2 = wd_mean_sin2(params);
        double corr = sin2 > 0.0 ? sqrt(0.75 * r2 / sin2) : 0.0;
        double sigma = sqrt(r2 / 8.0);
        double rho = sigma * sqrt(-2.0 * wd_ln(wd_uniform_f64(rng)));
        double psi = WD_TAU * wd_uniform_f64(rng);
        double e1[3], e2[3];
        wd_perpendicular_basis(dir, e1, e2);
        double dot = nd[0] * dir[0] + nd[1] * dir[1] + nd[2] * dir[2];
        double cp = wd_cos(psi), sp = wd_sin(psi);
        for (int k = 0; k < 3; ++k) {
            double w = nd[k] - dot * dir[k];
            disp[k] = corr * w + rho * (cp * e1[k] + sp * e2[k]);
        }
        double r = sqrt(disp[0] * disp[0] + disp[1] * disp[1] + disp[2] * disp[2]);
        double r_max = 0.99 * safety;
        if (r > r_max) {
            double s = r_max / r;
            for (int k = 0; k < 3; ++k) disp[k] *= s;
        }
    }
    dir[0] = nd[0]; dir[1] = nd[1]; dir[2] = nd[2];
}

// ---- delta_ray.rs ----

__device__ __forceinline__ double wd_moller_g(double gamma, double eps) {
    double q = (gamma - 1.0) / gamma;
    double a = q * q;
    double b = (2.0 * gamma - 1.0) / (gamma * gamma);
    double r = eps / (1.0 - eps);
    return 1.0 + a * eps * eps - b * r + r * r;
}

__device__ __forceinline__ double wd_bhabha_g(double gamma, double eps) {
    double beta2 = 1.0 - 1.0 / (gamma * gamma);
    double y = 1.0 / (gamma + 1.0);
    double y12 = 1.0 - 2.0 * y;
    double b1 = 2.0 - y * y;
    double b2 = y12 * (3.0 + y * y);
    double b4 = y12 * y12 * y12;
    double b3 = b4 + y12 * y12;
    return 1.0 / beta2 - eps * (b1 - eps * (b2 - eps * (b3 - eps * b4)));
}

WD_FN void wd_delta_ray(WdEvent& ev, unsigned int particle, double& t_io, double dir[3], double cut, const double pos[3], unsigned int slab, WdRng& rng) {
    double t = t_io;
    bool positron = particle == WD_POSITRON;
    double gamma = t / WD_ME + 1.0;
    double x_min = cut / t;
    double x_max = positron ? 1.0 : 0.5;
    double g_lo = positron ? wd_bhabha_g(gamma, x_min) : wd_moller_g(gamma, x_min);
    double g_hi = positron ? wd_bhabha_g(gamma, x_max) : wd_moller_g(gamma, x_max);
    double g_max = fmax(g_lo, g_hi);
    double eps;
    for (;;) {
        double xi = wd_uniform_f64(rng);
        double e = x_min * x_max / (x_min * (1.0 - xi) + x_max * xi);
        double g = positron ? wd_bhabha_g(gamma, e) : wd_moller_g(gamma, e);
        if (wd_uniform_f64(rng) * g_max <= g) { eps = e; break; }
    }
    double t_delta = eps * t;
    double two_m = 2.0 * WD_ME;
    double cos_delta = fmin(sqrt(t_delta * (t + two_m) / (t * (t_delta + two_m))), 1.0);
    double phi = WD_TAU * wd_uniform_f64(rng);
    double dd[3];
    wd_deflect(dir, cos_delta, phi, dd);
    double p = sqrt(t * (t + two_m));
    double pd = sqrt(t_delta * (t_delta + two_m));
    double v0 = p * dir[0] - pd * dd[0], v1 = p * dir[1] - pd * dd[1], v2 = p * dir[2] - pd * dd[2];
    double n = sqrt(v0 * v0 + v1 * v1 + v2 * v2);
    t_io = t - t_delta;
    dir[0] = v0 / n; dir[1] = v1 / n; dir[2] = v2 / n;
    wd_push(ev, pos, slab, WD_ELECTRON, t_delta, dd, WD_BY_DELTA_RAY);
}

// ---- brems.rs ----

__device__ __forceinline__ double wd_phi1(double g) {
    double q = 0.55846 * g;
    return 20.863 - 2.0 * wd_ln(1.0 + q * q) - 4.0 * (1.0 - 0.6 * wd_exp(-0.9 * g) - 0.4 * wd_exp(-1.5 * g));
}
__device__ __forceinline__ double wd_phi1_minus_phi2(double g) { return (2.0 / 3.0) / (1.0 + 6.5 * g + 6.0 * g * g); }
__device__ __forceinline__ double wd_psi1(double e) {
    double q = 3.621 * e;
    return 28.340 - 2.0 * wd_ln(1.0 + q * q) - 4.0 * (1.0 - 0.7 * wd_exp(-8.0 * e) - 0.3 * wd_exp(-29.2 * e));
}
__device__ __forceinline__ double wd_psi1_minus_psi2(double e) { return (2.0 / 3.0) / (1.0 + 40.0 * e + 400.0 * e * e); }

__device__ __forceinline__ double wd_coulomb_term(const WdElement& c, double t) {
    return t > WD_COULOMB_CORRECTION_MIN ? c.coulomb : 0.0;
}

WD_FN void wd_brackets(const WdElement& c, double g, double e, double fc, double& a, double& b) {
    double z = c.z;
    double lnz = c.ln_z;
    a = z * z * (wd_phi1(g) - 4.0 / 3.0 * lnz - 4.0 * fc) + z * (wd_psi1(e) - 8.0 / 3.0 * lnz);
    b = z * z * wd_phi1_minus_phi2(g) + z * wd_psi1_minus_psi2(e);
}

__device__ __forceinline__ double wd_screening_gamma(const WdElement& c, double e_tot, double k) {
    return 100.0 * WD_ME * k / (e_tot * (e_tot - k) * c.cbrt_z);
}

WD_FN double wd_k_dxs_dk(const ShowerParams& P, const WdElement& c, double t, double k, double k_p2) {
    if (!(k > 0.0 && k <= t && t > 0.0)) return 0.0;
    double e_tot = t + WD_ME;
    double y = k / e_tot;
    double g = wd_screening_gamma(c, e_tot, k);
    double a, b;
    wd_brackets(c, g, g / c.cbrt_z, wd_coulomb_term(c, t), a, b);
    double braces = (4.0 / 3.0 - 4.0 / 3.0 * y + y * y) * a + 2.0 / 3.0 * (1.0 - y) * b;
    return P.alpha_re2 * fmax(braces, 0.0) * k * k / (k * k + k_p2);
}

WD_FN double wd_brems_majorant(const ShowerParams& P, const WdElement& c, double t, double k_cut) {
    double e_tot = t + WD_ME;
    double k0 = wd_clamp(k_cut, 0.0, t);
    double g0 = wd_screening_gamma(c, e_tot, k0);
    double a0, b0;
    wd_brackets(c, g0, g0 / c.cbrt_z, wd_coulomb_term(c, t), a0, b0);
    double y0 = k0 / e_tot, y1 = t / e_tot;
    double c0 = 4.0 / 3.0 - 4.0 / 3.0 * y0 + y0 * y0;
    double c1 = 4.0 / 3.0 - 4.0 / 3.0 * y1 + y1 * y1;
    return P.alpha_re2 * (fmax(c0, c1) * fmax(a0, 0.0) + 2.0 / 3.0 * (1.0 - y0) * b0);
}

// brems.rs integrate (composite 8-point Gauss–Legendre); `moment` 0 or 1, `high` selects the
// integrand in ln(E − k) instead of ln k.
WD_FN double wd_brems_integrand(const ShowerParams& P, const WdElement& c, double t, double k_p2, int moment, bool high, double e_tot, double v) {
    if (!high) {
        double k = wd_exp(v);
        double kp = moment == 1 ? k : 1.0;
        return kp * wd_k_dxs_dk(P, c, t, k, k_p2);
    }
    double ep = wd_exp(v);
    double k = e_tot - ep;
    double kp = moment == 1 ? k : 1.0;
    return kp * wd_k_dxs_dk(P, c, t, k, k_p2) / k * ep;
}

WD_FN double wd_brems_integrate(const ShowerParams& P, const WdElement& c, double t, double k_p2, int moment, bool high, double e_tot, double a, double b) {
    const double X[4] = {0.18343464249565, 0.525532409916329, 0.796666477413627, 0.960289856497536};
    const double W[4] = {0.362683783378362, 0.313706645877887, 0.222381034453374, 0.101228536290376};
    if (b <= a) return 0.0;
    double nf = fmax(ceil((b - a) / 0.2), 1.0);
    unsigned long long n = (unsigned long long)nf;
    double h = (b - a) / (double)n;
    double total = 0.0;
    for (unsigned long long i = 0; i < n; ++i) {
        double mid = a + ((double)i + 0.5) * h;
        double s = 0.0;
        for (int j = 0; j < 4; ++j) {
            double f1 = wd_brems_integrand(P, c, t, k_p2, moment, high, e_tot, mid - 0.5 * h * X[j]);
            double f2 = wd_brems_integrand(P, c, t, k_p2, moment, high, e_tot, mid + 0.5 * h * X[j]);
            s = s + W[j] * (f1 + f2);
        }
        total = total + s * 0.5 * h;
    }
    return total;
}

// brems.rs xs_per_atom (integrate_spectrum, moment 0, from k_cut to t).
WD_FN double wd_brems_xs_atom(const ShowerParams& P, const WdElement& c, double t, double k_cut, double k_p2) {
    double k_lo = k_cut;
    double k_hi = t;
    if (!(k_hi > k_lo && k_lo > 0.0)) return 0.0;
    double e_tot = t + WD_ME;
    double split = wd_clamp(0.5 * t, k_lo, k_hi);
    double low = wd_brems_integrate(P, c, t, k_p2, 0, false, e_tot, wd_ln(k_lo), wd_ln(split));
    double high = wd_brems_integrate(P, c, t, k_p2, 0, true, e_tot, wd_ln(e_tot - k_hi), wd_ln(e_tot - split));
    return low + high;
}

__device__ __forceinline__ double wd_dielectric_k2(const WdMaterial& m, double t) {
    double kp = m.plasma_energy * (t + WD_ME) / WD_ME;
    return kp * kp;
}

WD_FN double wd_brems_tsai_angle(double e_tot, WdRng& rng) {
    for (;;) {
        double rate = wd_uniform_f64(rng) < 9.0 / (9.0 + WD_TSAI_D) ? WD_TSAI_A : 3.0 * WD_TSAI_A;
        double r1 = 1.0 - wd_uniform_f64(rng);
        double r2 = 1.0 - wd_uniform_f64(rng);
        double u = -wd_ln(r1 * r2) / rate;
        double theta = u * WD_ME / e_tot;
        if (theta <= WD_PI) return theta;
    }
}

// brems::sample with the loop's use: the photon is pushed, the e± loses k.
WD_FN void wd_brems(WdEvent& ev, const WdMaterial& m, double& t_io, const double dir[3], double k_cut, const double pos[3], unsigned int slab, WdRng& rng) {
    const ShowerParams& P = *ev.P;
    double t = t_io;
    unsigned int idx = 0;
    if (m.n_elem > 1) {
        double k_p2 = wd_dielectric_k2(m, t);
        double w[WD_MAX_ELEMENTS];
        double sum = 0.0;
        for (unsigned int i = 0; i < m.n_elem; ++i) {
            const WdElement& c = P.elements[m.elem_off + i];
            w[i] = c.atom_density * wd_brems_xs_atom(P, c, t, k_cut, k_p2);
            sum = sum + w[i];
        }
        double r = wd_uniform_f64(rng) * sum;
        idx = m.n_elem - 1;
        for (unsigned int i = 0; i < m.n_elem; ++i) {
            if (r < w[i]) { idx = i; break; }
            r -= w[i];
        }
    }
    const WdElement& c = P.elements[m.elem_off + idx];
    double k_p2 = wd_dielectric_k2(m, t);
    double bound = wd_brems_majorant(P, c, t, k_cut);
    double log_range = wd_ln(t / k_cut);
    double k;
    for (;;) {
        double kk = k_cut * wd_exp(log_range * wd_uniform_f64(rng));
        if (wd_uniform_f64(rng) * bound <= wd_k_dxs_dk(P, c, t, kk, k_p2)) { k = kk; break; }
    }
    double theta = wd_brems_tsai_angle(t + WD_ME, rng);
    double phi = WD_TAU * wd_uniform_f64(rng);
    double gd[3];
    wd_deflect(dir, wd_cos(theta), phi, gd);
    t_io = t - k;
    wd_push(ev, pos, slab, WD_GAMMA, k, gd, WD_BY_BREMS);
}

// ---- physics.rs charged_xs / charged_max_xs ----

WD_FN double wd_charged_xs(const ShowerParams& P, const WdMaterial& m, int q, int process, double e) {
    if (process == 0) return wd_table_xs(P, m.delta_xs[q], e);
    if (process == 1) return wd_table_xs(P, m.brems_xs[q], e);
    return q == 1 ? wd_annihilation_xs(P, m, e) : 0.0;
}

WD_FN double wd_table_max(const ShowerParams& P, const WdGrid& g, double e_lo, double e_hi) {
    if (g.n == 0) return 0.0;
    const double* en = P.data + g.off;
    const double* va = en + g.n;
    double front = en[0];
    double a = e_lo > front ? wd_grid_eval(P, g, e_lo) : 0.0;
    double b = e_hi > front ? wd_grid_eval(P, g, e_hi) : 0.0;
    double mx = fmax(a, b);
    unsigned int i0 = wd_count_le(en, g.n, e_lo);
    for (unsigned int i = i0; i < g.n; ++i) {
        if (en[i] >= e_hi) break;
        mx = fmax(mx, va[i]);
    }
    return mx;
}

WD_FN double wd_charged_max_xs(const ShowerParams& P, const WdMaterial& m, int q, double e_lo, double e_hi) {
    double annih = q == 1 ? wd_annihilation_xs(P, m, e_lo) : 0.0;
    return wd_table_max(P, m.delta_xs[q], e_lo, e_hi) + wd_table_max(P, m.brems_xs[q], e_lo, e_hi) + annih;
}

// ---- Event::charged ----

// Event::stop: deposit what is left; a positron annihilates at rest.
WD_FN void wd_stop(WdEvent& ev, WdTrack& t, WdRng& rng) {
#ifdef WD_GEOMETRY_GDML
    ev.parent = &t;
#endif
    wd_deposit(ev, t.slab, t.pos, WD_TIME(t), t.energy);
    t.energy = 0.0;
    if (t.particle == WD_POSITRON) wd_annihilate_at_rest(ev, t.pos, t.slab, rng);
}

// A charged track as a state and one step at a time (see WdPhotonState).
struct WdChargedState {
    WdTrack t;
    WdEvent ev;
    WdRng rng;
    int q;
    double n_left;
    WdMscState msc;
    bool entered;
    unsigned long long steps, charged_steps;
#ifdef WD_GEOMETRY_GDML
    double vacuum_path;  // transport.rs Event::charged vacuum_path [cm]
#endif
};

// `t` may be `s.t` itself (see wd_photon_start).
WD_FN void wd_charged_start(const ShowerParams& P, const WdTrack& t, WdChargedState& s) {
    if (&t != &s.t) s.t = t;
    s.ev = wd_event_of(P, t);
    s.rng = wd_rng(P.seed, WD_TAG_SHOWER, t.id);
    s.q = t.particle == WD_POSITRON ? 1 : 0;
    s.n_left = wd_exp1(s.rng);
    s.msc.range_init = 0.0;
    s.msc.t_limit = 0.0;
    s.msc.initialised = false;
    s.entered = true;
    s.steps = 0ull;
    s.charged_steps = 0ull;
#ifdef WD_GEOMETRY_GDML
    s.vacuum_path = 0.0;
#endif
}

__device__ __forceinline__ bool wd_charged_end(WdChargedState& s) {
    wd_tally_add(s.ev, wd_w_charged_steps(*s.ev.P), s.charged_steps);
    return false;
}

#ifdef WD_GEOMETRY_GDML
// transport.rs LOOPER_TURNS.
#define WD_LOOPER_TURNS 1000.0

// transport.rs Event::fly_curved: a charged track through vacuum in the field, along its curved
// path to the next boundary, at most one turn per call (a phase waits for its longest step);
// false when it escaped (its energy tallied) or was a looper (WD_LOOPER_TURNS turns in vacuum:
// killed and stopped).
WD_FN bool wd_fly_curved(WdChargedState& s) {
    const ShowerParams& P = *s.ev.P;
    double e = s.t.energy;
    double q = s.t.particle == WD_POSITRON ? 1.0 : -1.0;
    double p = sqrt(e * (e + 2.0 * WD_ME));
    double turn = WD_TAU * p / (FIELD_C_LIGHT * wd_field_strength(P) * 10.0);
    double budget = WD_LOOPER_TURNS * turn - s.vacuum_path;
    bool last = budget <= turn;
    double s_max = last ? fmax(budget, 0.0) : turn;
    double moved;
    int end = wd_curved_step(P, s.t, q, p, s_max, 0.0, moved);
    s.vacuum_path += moved;
    s.t.time += moved / wd_speed(s.t.particle, s.t.energy);
    if (end == FIELD_CROSSED) return true;
    if (end == FIELD_LIMIT && !last) return true;
    if (end == FIELD_LEFT_WORLD) {
        wd_tally_add(s.ev, wd_w_escaped(P), wd_fixed(s.t.energy));
        return false;
    }
    wd_tally_add(s.ev, wd_w_killed(P), 1ull);
    wd_stop(s.ev, s.t, s.rng);
    return false;
}
#endif

// What the two halves of wd_charged_along pass on (the phase schedule keeps it per slot while
// a step that crosses a boundary waits for its true length, wd_geom_to_true).
struct WdChargedMid {
    double e0, range, t_step, z, sig_max;
    WdBoundary b;
    unsigned int mat;
    int crossing, discrete;
#ifdef WD_GEOMETRY_GDML
    unsigned int slot;  // the volume slot the step started in (its deposit's)
    int curved;         // in a field: the FieldStepEnd of the curved step (the track has moved); else -1
    double pos[3];      // the pre-step point (its deposit's hit; the curved step has moved the track)
#endif
};

// A charged track's step up to the choice of its discrete interaction (transport.rs
// Event::charged): limits, geometry, continuous loss, move and scatter, the choice. Its first
// half ends where a step that crosses a boundary needs its true length.
__device__ int wd_charged_limits(const ShowerParams& P, WdChargedState& s, WdChargedMid& mid) {
    if (s.t.energy < WD_LOWEST_ELECTRON_ENERGY) {
        wd_stop(s.ev, s.t, s.rng);
        wd_charged_end(s);
        return WD_ACT_END;
    }
    s.steps += 1ull;
    if (s.steps > WD_MAX_STEPS) {
        wd_tally_add(s.ev, wd_w_killed(P), 1ull);
        wd_stop(s.ev, s.t, s.rng);
        wd_charged_end(s);
        return WD_ACT_END;
    }
    s.charged_steps += 1ull;
    unsigned int mat = P.slab_material[s.t.slab];
#ifdef WD_GEOMETRY_GDML
    // Vacuum: straight to the next boundary (transport.rs Event::fly), or in a field along the
    // curved path (Event::fly_curved).
    const bool field = P.gdml->field_on != 0u;
    if (mat == WD_VACUUM) {
        if (field ? wd_fly_curved(s) : wd_fly(s.ev, s.t)) {
            s.entered = true;
            return WD_ACT_FLEW;
        }
        wd_charged_end(s);
        return WD_ACT_END;
    }
    s.vacuum_path = 0.0;
#endif
    const WdMaterial& m = P.materials[mat];
    double e0 = s.t.energy;
    double range = wd_range(P, m.range[s.q], e0);
    // 1. Limits.
    double s_range = range > WD_FINAL_RANGE
        ? WD_DR_OVER_RANGE * range + WD_FINAL_RANGE * (1.0 - WD_DR_OVER_RANGE) * (2.0 - WD_FINAL_RANGE / range)
        : range;
#ifdef WD_GEOMETRY_GDML
    double safety = wd_safety(P, s.t);
#else
    double safety = wd_safety(P, s.t.pos, s.t.slab);
#endif
    double t_msc = wd_msc_limit_step(P, m, s.msc, s.q, e0, range, safety, s.entered);
    s.entered = false;
    double t_step = fmin(s_range, t_msc);
    double e_lo = wd_energy_from_range(P, m.range[s.q], fmax(range - t_step, 0.0));
    double sig_max = wd_charged_max_xs(P, m, s.q, e_lo, e0);
    double t_disc = sig_max > 0.0 ? s.n_left / sig_max : WD_INF;
    bool discrete = t_disc < t_step;
    if (discrete) t_step = t_disc;
    // 2. Geometry.
    double z = wd_true_to_geom(P, m, s.q, e0, t_step, range);
#ifdef WD_GEOMETRY_GDML
    // In a field the track moves now, along its curved path by the geometric length, and the
    // deposit goes to the volume it started in; a step that ended on its length limit did not
    // cross (its "boundary" lies beyond).
    WdBoundary b;
    mid.slot = s.t.slab;
    mid.curved = -1;
    for (int k = 0; k < 3; ++k) mid.pos[k] = s.t.pos[k];
    if (field) {
        double q = s.q == 1 ? 1.0 : -1.0;
        double mom = sqrt(e0 * (e0 + 2.0 * WD_ME));
        double moved;
        mid.curved = wd_curved_step(P, s.t, q, mom, z, safety, moved);
        b.distance = mid.curved == FIELD_LIMIT ? WD_INF : moved;
        b.step = moved * 10.0;
        b.next = mid.curved;
        b.pad = 0;
    } else {
        b = wd_next_boundary(P, s.t);
    }
#else
    WdBoundary b = wd_distance_to_boundary(P, s.t.pos, s.t.dir, s.t.slab);
#endif
    mid.e0 = e0;
    mid.range = range;
    mid.t_step = t_step;
    mid.z = z;
    mid.sig_max = sig_max;
    mid.b = b;
    mid.mat = mat;
    mid.crossing = z >= b.distance;
    mid.discrete = discrete;
    return WD_ACT_NONE;
}

// The true length of a step that crosses a boundary (capped by the step), else the step.
__device__ __forceinline__ double wd_charged_true_length(const ShowerParams& P, const WdChargedState& s, const WdChargedMid& mid) {
    return mid.crossing ? fmin(wd_geom_to_true(P, P.materials[mid.mat], s.q, mid.e0, mid.b.distance, mid.range), mid.t_step) : mid.t_step;
}

// The second half: continuous loss over the true length, move and scatter, the choice.
__device__ int wd_charged_finish(const ShowerParams& P, WdChargedState& s, const WdChargedMid& mid, double t_true) {
    const unsigned int mat = mid.mat;
    const WdMaterial& m = P.materials[mat];
    const double e0 = mid.e0, range = mid.range, z = mid.z, sig_max = mid.sig_max;
    const WdBoundary b = mid.b;
    const bool crossing = mid.crossing != 0, discrete = mid.discrete != 0;
    // 3. Continuous loss.
    double loss;
    if (t_true >= range) {
        loss = e0;
    } else {
        double linear = t_true * wd_dedx(P, m.dedx[s.q], e0);
        double mean = linear < WD_LINEAR_LOSS_LIMIT * e0 ? linear : e0 - wd_energy_from_range(P, m.range[s.q], range - t_true);
        double max_sec = s.q == 1 ? e0 : 0.5 * e0;
        double t_cut = fmin(m.cut_electron, max_sec);
        loss = fmin(wd_sample_loss(mean, wd_bohr_variance(P, m, e0, t_cut, t_true), s.rng), e0);
    }
    double e1 = e0 - loss;
#ifdef WD_GEOMETRY_GDML
    wd_deposit(s.ev, mid.slot, mid.pos, s.t.time, loss);
#else
    wd_deposit(s.ev, s.t.slab, s.t.pos, 0.0, loss);
#endif
    wd_tally_add(s.ev, wd_w_length(P) + mat, wd_fixed(t_true));
#ifdef WD_GEOMETRY_GDML
    s.t.time += t_true / wd_speed(s.t.particle, e0);
#endif
    // 4. Move and scatter.
#ifdef WD_GEOMETRY_GDML
    bool inside = true;
    if (mid.curved >= 0) {
        inside = mid.curved != FIELD_LEFT_WORLD;
    } else if (crossing) {
        inside = wd_cross(P, s.t, b);
    } else {
#else
    int next = (int)s.t.slab;
    if (crossing) {
        wd_cross(s.t.pos, s.t.dir, b);
        next = b.next;
    } else {
#endif
        for (int k = 0; k < 3; ++k) s.t.pos[k] += z * s.t.dir[k];
    }
    s.t.energy = e1;
    s.n_left -= t_true * sig_max;
    if (e1 > 0.0 && t_true > 0.0) {
#ifdef WD_GEOMETRY_GDML
        double safety_end = crossing ? 0.0 : wd_safety(P, s.t);
#else
        double safety_end = crossing ? 0.0 : wd_safety(P, s.t.pos, s.t.slab);
#endif
        double disp[3];
        wd_msc_sample(P, m, s.q, e0, e1, t_true, s.t.dir, safety_end, disp, s.rng);
        if (!crossing) {
            for (int k = 0; k < 3; ++k) s.t.pos[k] += disp[k];
        }
    }
    if (crossing) {
#ifdef WD_GEOMETRY_GDML
        if (inside) {
            s.entered = true;
            return WD_ACT_NONE;
        }
#else
        if (next >= 0) {
            s.t.slab = (unsigned int)next;
            s.entered = true;
            return WD_ACT_NONE;
        }
#endif
        wd_tally_add(s.ev, wd_w_escaped(P), wd_fixed(s.t.energy));
        wd_charged_end(s);
        return WD_ACT_END;
    }
    if (!discrete || s.t.energy < WD_LOWEST_ELECTRON_ENERGY) return WD_ACT_NONE;
    // 5. Discrete interaction (integral approach).
    s.n_left = wd_exp1(s.rng);
    double e = s.t.energy;
    double xs[3];
    for (int p = 0; p < 3; ++p) xs[p] = wd_charged_xs(P, m, s.q, p, e);
    double total = (xs[0] + xs[1]) + xs[2];
    double u = wd_uniform_f64(s.rng) * sig_max;
    if (u >= total) return WD_ACT_NONE;  // a fictitious interaction
    int chosen = 0;
    for (int p = 0; p < 3; ++p) {
        if (u < xs[p]) { chosen = p; break; }
        u -= xs[p];
    }
    return chosen;
}

__device__ int wd_charged_along(const ShowerParams& P, WdChargedState& s) {
    WdChargedMid mid;
#ifdef WD_GEOMETRY_GDML
    const int limits = wd_charged_limits(P, s, mid);
    if (limits == WD_ACT_END) return WD_ACT_END;
    if (limits == WD_ACT_FLEW) return WD_ACT_NONE;
#else
    if (wd_charged_limits(P, s, mid) == WD_ACT_END) return WD_ACT_END;
#endif
    return wd_charged_finish(P, s, mid, wd_charged_true_length(P, s, mid));
}

// The interaction `chosen` of wd_charged_along; false when the track has ended.
__device__ bool wd_charged_interact(const ShowerParams& P, WdChargedState& s, int chosen) {
#ifdef WD_GEOMETRY_GDML
    s.ev.parent = &s.t;
#endif
    const WdMaterial& m = P.materials[P.slab_material[s.t.slab]];
    double e = s.t.energy;
    if (chosen == 0) {
        double cut = m.cut_electron;
        double threshold = s.q == 1 ? cut : 2.0 * cut;
        if (e > threshold) wd_delta_ray(s.ev, s.t.particle, s.t.energy, s.t.dir, cut, s.t.pos, s.t.slab, s.rng);
    } else if (chosen == 1) {
        double k_cut = m.cut_gamma;
        if (e > k_cut) wd_brems(s.ev, m, s.t.energy, s.t.dir, k_cut, s.t.pos, s.t.slab, s.rng);
    } else {
        wd_annihilate_in_flight(s.ev, e, s.t.dir, s.t.pos, s.t.slab, s.rng);
        return wd_charged_end(s);
    }
    return true;
}

// One step of a charged track; false when it has ended (its step count tallied).
__device__ bool wd_charged_step(const ShowerParams& P, WdChargedState& s) {
    int act = wd_charged_along(P, s);
    if (act == WD_ACT_END) return false;
    if (act == WD_ACT_NONE) return true;
    return wd_charged_interact(P, s, act);
}

__device__ void wd_charged(const ShowerParams& P, WdTrack t) {
    WdChargedState s;
    wd_charged_start(P, t, s);
    while (wd_charged_step(P, s)) {}
}

// ---- kernels ----

// The kernel's parameters, copied once per block into shared memory. Every device function takes
// them by reference, and a reference to a kernel parameter makes each thread copy all 176 bytes
// to its local stack (ptxas: the `showers` frame 848 → 672 bytes with this copy), local memory
// that competes with the tables for L1.
__device__ __forceinline__ const ShowerParams& wd_block_params(const ShowerParams& Pk) {
    __shared__ ShowerParams shared_params;
    if (threadIdx.x == 0) shared_params = Pk;
    __syncthreads();
    return shared_params;
}


// The same names for both particle kinds, for wd_run_tracks.
__device__ __forceinline__ void wd_start(const ShowerParams& P, const WdTrack& t, WdPhotonState& s) { wd_photon_start(P, t, s); }
__device__ __forceinline__ bool wd_step(const ShowerParams& P, WdPhotonState& s) { return wd_photon_step(P, s); }
__device__ __forceinline__ void wd_start(const ShowerParams& P, const WdTrack& t, WdChargedState& s) { wd_charged_start(P, t, s); }
__device__ __forceinline__ bool wd_step(const ShowerParams& P, WdChargedState& s) { return wd_charged_step(P, s); }

// One step per iteration; a lane whose track ended starts the next track of its grid-stride
// share at once, so the lanes of a warp keep stepping together instead of idling until the
// warp's longest track ends (one track per thread ran at 1.5–4 active lanes of 32). The host
// launches no more blocks than are resident (gpu.rs resident_blocks).
template <typename State>
__device__ __forceinline__ void wd_run_tracks(const ShowerParams& P, const WdTrack* in, unsigned int n) {
    const unsigned int stride = gridDim.x * blockDim.x;
    unsigned int next = blockIdx.x * blockDim.x + threadIdx.x;
    State s;
    bool alive = false;
    for (;;) {
        if (!alive) {
            if (next >= n) break;
            s.t = in[next];
            wd_start(P, s.t, s);
            next += stride;
            alive = true;
        }
        alive = wd_step(P, s);
    }
}

extern "C" __global__ void __launch_bounds__(128) photons(const ShowerParams P, const WdTrack* in, unsigned int n) {
    wd_run_tracks<WdPhotonState>(wd_block_params(P), in, n);
}

extern "C" __global__ void __launch_bounds__(128) charged(const ShowerParams P, const WdTrack* in, unsigned int n) {
    wd_run_tracks<WdChargedState>(wd_block_params(P), in, n);
}

// ---- queue mode: the whole batch in one launch ----
//
// The generation loop (kernels above) ends every generation with its longest tracks while the
// rest of the GPU idles (ncu: 4.4 of 32 lanes active, 19–25 launches per batch). Here every
// track of a batch goes through two queues (γ, e±) that the kernel itself fills: a lane whose
// track ended claims the next published track at once, whatever its generation. Tracks, ids,
// draws and integer tallies are those of the generation loop — only the order differs, which
// changes no result (ids hash the parent's id, tallies are integers).
//
// A warp holds tracks of one kind (its `kind`, uniform across the warp, so the γ and e± steps
// never diverge); when all its lanes are idle it turns to the queue with more unclaimed tracks,
// and it leaves when no track is live any more. Claims: the idle lanes of a warp take slot
// indices together (one atomicAdd on the head, no more than head < tail showed), and a lane
// waits for its slot's `ready` flag (the producer writes the track, fences, then sets the flag);
// a slot claimed past the last track is never filled, and its lane leaves with the others
// when `live` reaches 0 (every pushed track counts as live
// from before its parent ends until it ends itself). Tracks are read through L2 (__ldcg): an
// SM's L1 may hold a stale copy of a neighbouring slot's line. Needs every block resident at
// once (the host launches no more): a waiting lane relies on other lanes to make progress.
__device__ __forceinline__ unsigned int wd_vload(const unsigned int* p) { return *(const volatile unsigned int*)p; }

__device__ __forceinline__ void wd_load_track(const WdTrack* src, WdTrack& t) {
    const unsigned long long* w = (const unsigned long long*)src;
    unsigned long long* o = (unsigned long long*)&t;
    for (int k = 0; k < (int)(sizeof(WdTrack) / 8); ++k) o[k] = __ldcg(w + k);
}

// Unclaimed published-or-reserved tracks of queue k.
__device__ __forceinline__ unsigned int wd_queue_available(const ShowerParams& P, unsigned int k) {
    unsigned int tail = min(wd_vload(P.out_size + k), P.capacity);
    unsigned int head = wd_vload(P.queue_ctl + WD_Q_HEAD(k));
    return tail > head ? tail - head : 0u;
}

union WdAnyState {
    WdPhotonState p;
    WdChargedState c;
};

// Blocks of 128 threads each SM must hold at once (caps the registers: 65 536 / (128 · n));
// 1 leaves the compiler free (≈ 160 registers, 3 blocks per SM).
#ifndef WD_SHOWER_MIN_BLOCKS
#define WD_SHOWER_MIN_BLOCKS 1
#endif
extern "C" __global__ void __launch_bounds__(128, WD_SHOWER_MIN_BLOCKS) showers(const ShowerParams Pk) {
    const ShowerParams& P = wd_block_params(Pk);
    const unsigned int full = 0xffffffffu;
    const unsigned int lane = threadIdx.x & 31u;
    WdAnyState s;
    bool alive = false, pending = false;
    unsigned int slot = 0u;
    unsigned int kind = 1u;
    for (;;) {
        // A lane with a claimed slot starts its track once the slot is published.
        if (pending && slot < P.capacity && (slot < P.first[kind] || wd_vload(P.ready + kind * P.capacity + slot) != 0u)) {
            __threadfence();
            // Straight into the state's track (both states begin with it): no copy in local memory.
            WdTrack& t = kind == 0u ? s.p.t : s.c.t;
            wd_load_track((kind == 0u ? P.out_gamma : P.out_charged) + slot, t);
            if (kind == 0u) wd_photon_start(P, t, s.p); else wd_charged_start(P, t, s.c);
            alive = true;
            pending = false;
        }
        // The warp's idle lanes claim slots together: one lane reads the queue and takes as many
        // as it holds, up to one per idle lane, with one atomicAdd (the counters are hot).
        const unsigned int idle = __ballot_sync(full, !alive && !pending);
        if (idle != 0u) {
            const unsigned int leader = __ffs(idle) - 1u;
            unsigned int base = 0u, got = 0u;
            if (lane == leader) {
                got = min(wd_queue_available(P, kind), (unsigned int)__popc(idle));
                if (got > 0u) base = atomicAdd(P.queue_ctl + WD_Q_HEAD(kind), got);
            }
            base = __shfl_sync(full, base, leader);
            got = __shfl_sync(full, got, leader);
            const unsigned int rank = __popc(idle & ((1u << lane) - 1u));
            if (!alive && !pending && rank < got) {
                slot = base + rank;
                pending = true;
            }
        }
        if (__ballot_sync(full, alive) == 0u) {
            // No lane has a track: leave when nothing is live any more (a slot still claimed is
            // past the last track); else, with nothing claimed, turn to the fuller queue; wait.
            const bool claimed = __ballot_sync(full, pending) != 0u;
            unsigned int next = kind;
            if (lane == 0u) {
                if (wd_vload(P.queue_ctl + WD_Q_LIVE) == 0u) {
                    next = 2u;
                } else if (!claimed) {
                    unsigned int a0 = wd_queue_available(P, 0u), a1 = wd_queue_available(P, 1u);
                    if (a0 > a1) next = 0u;
                    else if (a1 > a0) next = 1u;
                    else __nanosleep(200);
                } else {
                    __nanosleep(100);
                }
            }
            next = __shfl_sync(full, next, 0);
            if (next == 2u) break;
            kind = next;
            continue;
        }
        if (alive) {
            alive = kind == 0u ? wd_photon_step(P, s.p) : wd_charged_step(P, s.c);
            if (!alive) atomicSub(P.queue_ctl + WD_Q_LIVE, 1u);
        }
    }
}

// ---- phase mode: a launch per step phase over slots of tracks ----
//
// The one-launch kernel runs every part of a step in every warp: its lanes' tracks are in
// different states, so a warp executes the union of their paths, and across the SM the warps
// fetch instructions from all over a kernel of 280 kB (ncu, H100: 21.5 of 34 cycles per
// issued instruction stalled on instruction fetch, 10 active lanes per instruction). Here a
// step is split where the tracks' paths part (Celeritas' step actions): `along_gamma` /
// `along_charged` run the first part of a step (wd_*_along: limits, geometry, loss, scattering,
// the choice of the interaction) for every slot of their kind, and append each slot that must
// interact to its process' list; an e± step that crosses a boundary stops before its true
// length and `cross_charged` finishes those steps together; `interact_gamma` /
// `interact_charged` then run the interactions list by list, so that a warp's lanes run one
// interactor together. A slot whose track ended takes the next queued track of its kind at
// the start of `along_*`. The
// operations and draws of every track are those of wd_*_step, in the same order; only their
// interleaving across tracks differs, which changes no result (see queue mode).
struct WdPhaseParams {
    WdPhotonState* gamma;     // n_slots[0] states
    WdChargedState* charged;  // n_slots[1] states
    WdChargedMid* mid;        // n_slots[1]: a crossing step's first half (cross_charged)
    unsigned int* alive;      // n_slots[0] + n_slots[1] flags (γ slots, then e± slots)
    unsigned int* list;       // per process (4 γ, 3 e±, then the crossing e± steps): `list_stride` slots
    unsigned int* count;      // per list: its entries (zeroed before each iteration)
    unsigned int n_slots[2];
    unsigned int list_stride; // max(n_slots)
    unsigned int pad;
};
static_assert(sizeof(WdPhaseParams) == 64, "WdPhaseParams size");
// shower/gpu.rs PHOTON_STATE_BYTES, CHARGED_STATE_BYTES, CHARGED_MID_BYTES (GDML_*): the host
// allocates the slots.
#ifdef WD_GEOMETRY_GDML
static_assert(sizeof(WdChargedMid) == 112, "WdChargedMid size");
static_assert(sizeof(WdPhotonState) == 272, "WdPhotonState size");
static_assert(sizeof(WdChargedState) == 312, "WdChargedState size");
#else
static_assert(sizeof(WdChargedMid) == 72, "WdChargedMid size");
static_assert(sizeof(WdPhotonState) == 192, "WdPhotonState size");
static_assert(sizeof(WdChargedState) == 224, "WdChargedState size");
#endif
#define WD_PROCESSES_GAMMA 4
#define WD_PROCESSES_CHARGED 3
// The list of e± slots whose step crosses a boundary (after the 7 process lists).
#define WD_LIST_CROSSING 7u

// Claims for the lanes in `need` (one warp) the next tracks of queue k: queue slot or ~0u.
// One atomicAdd per warp takes as many slots as lanes ask for; those at or past the tail stay
// unfilled, and `phase_clamp` moves the head back to the tail before anything is pushed to
// the queue again. The tail does not move while kind k claims: no kernel that claims kind k
// pushes kind k (along_charged pushes γ only, along_gamma nothing). A compare-and-swap that
// took only what the queue held serialised thousands of warps on the head (3 × slower).
__device__ __forceinline__ unsigned int wd_phase_claim(const ShowerParams& P, unsigned int k, bool need) {
    const unsigned int full = 0xffffffffu;
    const unsigned int lane = threadIdx.x & 31u;
    const unsigned int want = __ballot_sync(full, need);
    if (want == 0u) return ~0u;
    const unsigned int leader = __ffs(want) - 1u;
    unsigned int base = 0u, got = 0u;
    if (lane == leader) {
        unsigned int tail = min(wd_vload(P.out_size + k), P.capacity);
        if (wd_vload(P.queue_ctl + WD_Q_HEAD(k)) < tail) {
            base = atomicAdd(P.queue_ctl + WD_Q_HEAD(k), (unsigned int)__popc(want));
            got = base < tail ? min(tail - base, (unsigned int)__popc(want)) : 0u;
        }
    }
    base = __shfl_sync(full, base, leader);
    got = __shfl_sync(full, got, leader);
    const unsigned int rank = __popc(want & ((1u << lane) - 1u));
    return need && rank < got ? base + rank : ~0u;
}

// Tracks that ended in this warp leave the live count with one atomic per warp.
__device__ __forceinline__ void wd_phase_ended(const ShowerParams& P, bool ended) {
    const unsigned int n = __popc(__ballot_sync(0xffffffffu, ended));
    if (n != 0u && (threadIdx.x & 31u) == 0u) atomicSub(P.queue_ctl + WD_Q_LIVE, n);
}

// Appends slot i to the list of process `act` (if act ≥ 0) with one atomic per warp and process.
__device__ __forceinline__ void wd_phase_list(const WdPhaseParams& Q, unsigned int first_process, unsigned int n_processes, int act, unsigned int i) {
    const unsigned int lane = threadIdx.x & 31u;
    for (unsigned int p = 0u; p < n_processes; ++p) {
        const unsigned int mine = __ballot_sync(0xffffffffu, act == (int)p);
        if (mine == 0u) continue;
        const unsigned int leader = __ffs(mine) - 1u;
        unsigned int base = 0u;
        if (lane == leader) base = atomicAdd(Q.count + first_process + p, (unsigned int)__popc(mine));
        base = __shfl_sync(0xffffffffu, base, leader);
        if (act == (int)p) Q.list[(first_process + p) * Q.list_stride + base + __popc(mine & ((1u << lane) - 1u))] = i;
    }
}

// The first part of a step for every slot of one kind (State: WdPhotonState or WdChargedState).
// (Every lane of a warp reaches the ballots: the grid is whole blocks, lanes past the slots
// take part with nothing to do.)
template <typename State>
__device__ __forceinline__ void wd_phase_along(const ShowerParams& P, const WdPhaseParams& Q, unsigned int k, State* states, unsigned int first_process, unsigned int n_processes) {
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    const bool in_range = i < Q.n_slots[k];
    unsigned int* alive = Q.alive + (k == 0u ? 0u : Q.n_slots[0]) + i;
    bool live = in_range && *alive != 0u;
    const unsigned int slot = wd_phase_claim(P, k, in_range && !live);
    State s;
    if (slot != ~0u) {
        wd_load_track((k == 0u ? P.out_gamma : P.out_charged) + slot, s.t);
        wd_start(P, s.t, s);
        *alive = 1u;
        live = true;
    } else if (live) {
        s = states[i];
    }
    int act = WD_ACT_NONE;
    bool crossing = false;
    if (live) {
        act = wd_along_slot(P, Q, s, i, crossing);
        if (act == WD_ACT_END) {
            *alive = 0u;
        } else {
            states[i] = s;
        }
    }
    wd_phase_ended(P, live && act == WD_ACT_END);
    wd_phase_list(Q, first_process, n_processes, live ? act : WD_ACT_NONE, i);
    wd_phase_list(Q, WD_LIST_CROSSING, 1u, crossing ? 0 : WD_ACT_NONE, i);
}

// The e± steps that cross a boundary, set aside by along_charged: the true length of each
// (a bisection of wd_geom_to_true, ~50 evaluations, which in along_charged ran with a few
// lanes of a warp while the others waited), then the rest of the step.
__device__ __forceinline__ void wd_phase_cross(const ShowerParams& P, const WdPhaseParams& Q) {
    const unsigned int j = blockIdx.x * blockDim.x + threadIdx.x;
    const bool mine = j < Q.count[WD_LIST_CROSSING];
    int act = WD_ACT_NONE;
    unsigned int i = 0u;
    if (mine) {
        i = Q.list[WD_LIST_CROSSING * Q.list_stride + j];
        WdChargedState s = Q.charged[i];
        const WdChargedMid mid = Q.mid[i];
        act = wd_charged_finish(P, s, mid, wd_charged_true_length(P, s, mid));
        if (act == WD_ACT_END) {
            Q.alive[Q.n_slots[0] + i] = 0u;
        } else {
            Q.charged[i] = s;
        }
    }
    wd_phase_ended(P, mine && act == WD_ACT_END);
    wd_phase_list(Q, WD_PROCESSES_GAMMA, WD_PROCESSES_CHARGED, mine ? act : WD_ACT_NONE, i);
}

// The interactions of one kind, list after list: thread j takes the j-th entry of the lists
// laid end to end, so a warp holds one process but at the lists' joins.
template <typename State>
__device__ __forceinline__ void wd_phase_interact(const ShowerParams& P, const WdPhaseParams& Q, unsigned int k, State* states, unsigned int first_process, unsigned int n_processes) {
    unsigned int j = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int p = 0u;
    for (; p < n_processes; ++p) {
        unsigned int c = Q.count[first_process + p];
        if (j < c) break;
        j -= c;
    }
    bool ended = false;
    if (p < n_processes) {
        const unsigned int i = Q.list[(first_process + p) * Q.list_stride + j];
        State s = states[i];
        if (wd_interact(P, s, (int)p)) {
            states[i] = s;
        } else {
            Q.alive[(k == 0u ? 0u : Q.n_slots[0]) + i] = 0u;
            ended = true;
        }
    }
    wd_phase_ended(P, ended);
}

// The first part of a slot's step; an e± step that crosses a boundary stops before its true
// length (its first half kept in Q.mid, `crossing` set) and is finished by cross_charged.
__device__ __forceinline__ int wd_along_slot(const ShowerParams& P, const WdPhaseParams& Q, WdPhotonState& s, unsigned int, bool&) {
    return wd_photon_along(P, s);
}
__device__ __forceinline__ int wd_along_slot(const ShowerParams& P, const WdPhaseParams& Q, WdChargedState& s, unsigned int i, bool& crossing) {
    WdChargedMid mid;
#ifdef WD_GEOMETRY_GDML
    const int limits = wd_charged_limits(P, s, mid);
    if (limits == WD_ACT_END) return WD_ACT_END;
    if (limits == WD_ACT_FLEW) return WD_ACT_NONE;
#else
    if (wd_charged_limits(P, s, mid) == WD_ACT_END) return WD_ACT_END;
#endif
    if (mid.crossing) {
        Q.mid[i] = mid;
        crossing = true;
        return WD_ACT_NONE;
    }
    return wd_charged_finish(P, s, mid, mid.t_step);
}
__device__ __forceinline__ bool wd_interact(const ShowerParams& P, WdPhotonState& s, int p) { return wd_photon_interact(P, s, p); }
__device__ __forceinline__ bool wd_interact(const ShowerParams& P, WdChargedState& s, int p) { return wd_charged_interact(P, s, p); }

// Launch order per iteration (gpu.rs run_batch_phases): along_charged, cross_charged,
// along_gamma, phase_clamp, interact_gamma, interact_charged.
extern "C" __global__ void __launch_bounds__(128) along_gamma(const ShowerParams Pk, const WdPhaseParams Q) {
    wd_phase_along<WdPhotonState>(wd_block_params(Pk), Q, 0u, Q.gamma, 0u, WD_PROCESSES_GAMMA);
}
extern "C" __global__ void __launch_bounds__(128) along_charged(const ShowerParams Pk, const WdPhaseParams Q) {
    wd_phase_along<WdChargedState>(wd_block_params(Pk), Q, 1u, Q.charged, WD_PROCESSES_GAMMA, WD_PROCESSES_CHARGED);
}
extern "C" __global__ void __launch_bounds__(128) cross_charged(const ShowerParams Pk, const WdPhaseParams Q) {
    wd_phase_cross(wd_block_params(Pk), Q);
}
// One thread, after both along kernels: each queue's head back to its tail where the claims
// went past it (wd_phase_claim), before the interactions push to the queues again.
extern "C" __global__ void phase_clamp(const ShowerParams P) {
    for (unsigned int k = 0u; k < 2u; ++k) {
        unsigned int tail = min(P.out_size[k], P.capacity);
        if (P.queue_ctl[WD_Q_HEAD(k)] > tail) P.queue_ctl[WD_Q_HEAD(k)] = tail;
    }
}
extern "C" __global__ void __launch_bounds__(128) interact_gamma(const ShowerParams Pk, const WdPhaseParams Q) {
    wd_phase_interact<WdPhotonState>(wd_block_params(Pk), Q, 0u, Q.gamma, 0u, WD_PROCESSES_GAMMA);
}
extern "C" __global__ void __launch_bounds__(128) interact_charged(const ShowerParams Pk, const WdPhaseParams Q) {
    wd_phase_interact<WdChargedState>(wd_block_params(Pk), Q, 1u, Q.charged, WD_PROCESSES_GAMMA, WD_PROCESSES_CHARGED);
}

// warpdrive_core::pmath::evaluate_all on the device: 8 results per argument, compared bit for
// bit with the host by gpu-check (em: "portable math").
extern "C" __global__ void twin_pmath(int n, const double* in, double* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double x = in[i];
    double a = fmax(fabs(x), 2.2250738585072014e-308);
    double* o = out + 8 * (long long)i;
    o[0] = pm_ln(a);
    o[1] = pm_exp(x);
    o[2] = pm_exp_m1(x);
    o[3] = pm_ln_1p(a);
    o[4] = pm_pow(a, 0.37);
    o[5] = pm_sin(x);
    o[6] = pm_cos(x);
    o[7] = pm_cbrt(x);
}
