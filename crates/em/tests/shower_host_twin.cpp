// Host build of kernels/shower.cu (tests/shower_host_twin.rs): the kernel's device functions
// compiled for the CPU with the host's C++ compiler and libm, the CUDA intrinsics it uses
// replaced by sequential equivalents, driven generation by generation as shower/gpu.rs drives
// the GPU. With the host's libm the transcendentals are the ones the Rust CPU loop calls, so
// this checks the translation of the loop and of every interactor, bit for bit, without a GPU.
// With MODE `queue` it runs the one-launch kernel `showers` instead, with one thread (its
// queues, claims, publication flags and live count; not the concurrency); with MODE `phases`
// the six phase kernels over a few slots per kind, launch after launch, as gpu.rs
// run_batch_phases does (slots, claims, process lists).
//
//   shower_host_twin TABLES PRIMARIES OUT [generations|queue|phases]
// TABLES: u64 counts (data, materials, elements, photo, rayleigh, planes, slabs), u32 n_materials,
// u32 stride, f64 transverse, twopi_mc2_rcl2, alpha_re2, pi_re2, u64 seed, u64 events, then the
// arrays as raw bytes; the GDML build (WD_GEOMETRY_GDML, shower_gdml_host_twin.cpp) then reads
// u64 counts (solids, pool, logical, placements, slot offsets), u64 world and those arrays
// (`planes` is empty there), then u64 field_on (0 none, 1 uniform, 2 map) and f64 Bx, By, Bz
// [T], delta_chord, delta_intersection [mm] (the uniform field), then u64 counts (bvh nodes,
// items, roots) and those arrays, then the field map: u64 nr, u64 nz, f64 b_max [T], f64
// epsilon, r[nr], z[nz] [mm], (B_r, B_z)[nr nz] [T] (nr = nz = 0: none), then the hits: u64
// hit capacity (0: no sensitive volume), u8 per volume slot (sensitive or not).
// PRIMARIES: WdTrack records (10 u64 words; GDML 19). OUT: events × stride u64; the GDML build
// writes the hits (WdHit records, in the order the kernels made them) to OUT.hits.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#define __device__
#define __forceinline__ inline
#define __noinline__
#define __global__
#define __launch_bounds__(...)
// One thread per block: a block's shared variable is a function's static one.
#define __shared__ static
static inline void __syncthreads() {}

static inline unsigned int __umulhi(unsigned int a, unsigned int b) {
    return (unsigned int)(((unsigned long long)a * b) >> 32);
}
static inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
    unsigned long long o = *p;
    *p = o + v;
    return o;
}
static inline unsigned int atomicAdd(unsigned int* p, unsigned int v) {
    unsigned int o = *p;
    *p = o + v;
    return o;
}
static inline unsigned int atomicCAS(unsigned int* p, unsigned int expected, unsigned int v) {
    unsigned int o = *p;
    if (o == expected) *p = v;
    return o;
}
static inline unsigned int atomicSub(unsigned int* p, unsigned int v) {
    unsigned int o = *p;
    *p = o - v;
    return o;
}
// One thread is one warp of one lane; memory is coherent.
static inline unsigned int __ballot_sync(unsigned int, bool p) { return p ? 1u : 0u; }
static inline unsigned int __shfl_sync(unsigned int, unsigned int v, unsigned int) { return v; }
static inline int __ffs(unsigned int x) { return x == 0u ? 0 : __builtin_ctz(x) + 1; }
static inline int __popc(unsigned int x) { return __builtin_popcount(x); }
static inline void __nanosleep(unsigned int) {}
static inline void __threadfence() {}
static inline unsigned long long __ldcg(const unsigned long long* p) { return *p; }
static inline unsigned int min(unsigned int a, unsigned int b) { return a < b ? a : b; }
// The grid lookup's estimate of the bin (any log will do; the comparisons decide the bin).
static inline float wd_log_estimate(float x) { return std::log(x); }
static inline float __fdividef(float a, float b) { return a / b; }
#define WD_HOST_TWIN 1
static inline unsigned int atomicExch(unsigned int* p, unsigned int v) {
    unsigned int o = *p;
    *p = v;
    return o;
}
// cvt.rni.u64.f64: round to nearest even, saturating, NaN → 0.
static inline unsigned long long __double2ull_rn(double x) {
    if (!(x > 0.0)) return 0ull;
    if (x >= 18446744073709551616.0) return ~0ull;
    return (unsigned long long)std::nearbyint(x);
}
static inline double __longlong_as_double(long long x) {
    double d;
    std::memcpy(&d, &x, 8);
    return d;
}
static inline long long __double_as_longlong(double d) {
    long long x;
    std::memcpy(&x, &d, 8);
    return x;
}

struct WdDim3 {
    unsigned int x, y, z;
};
static WdDim3 blockIdx, blockDim, threadIdx, gridDim;

#ifdef WD_GEOMETRY_GDML
// The GDML build (shower_gdml_host_twin.cpp): the navigator's and the uniform field's twins
// first, as shower/gpu.rs GDML_SRC prepends them.
using std::copysign;
using std::fma;
using std::isfinite;
#include "geo/vec3.cuh"
#include "geo/roots.cuh"
#include "geo/solid.cuh"
#include "geo/navigator.cuh"
#include "field/helix.cuh"
#include "field/map.cuh"
#include "field/rk.cuh"
#include "field/propagate.cuh"
#endif
#include "shower.cu"

// A zeroed buffer of plain records from calloc: the same zero bytes as std::vector<T>(n), but
// the pages stay the kernel's zero pages until written. The output lists and the hit buffer are
// sized for the worst case (2 × 4 Mi tracks and 4 Mi hits: ≈ 1.5 GB in the GDML build), and a
// run writes a small part of them; filling them with zeros took most of a short case's run.
template <typename T>
struct ZeroBuf {
    static_assert(std::is_trivially_copyable<T>::value && std::is_trivially_default_constructible<T>::value,
                  "plain records only");
    T* p;
    explicit ZeroBuf(size_t n) : p(static_cast<T*>(std::calloc(n, sizeof(T)))) {
        if (!p) {
            fprintf(stderr, "out of memory\n");
            exit(2);
        }
    }
    ZeroBuf(const ZeroBuf&) = delete;
    ZeroBuf& operator=(const ZeroBuf&) = delete;
    ~ZeroBuf() { std::free(p); }
    T* data() const { return p; }
    T* begin() const { return p; }
};

template <typename T>
static std::vector<T> read_array(FILE* f, unsigned long long n) {
    std::vector<T> v(n > 0 ? n : 1);
    if (n > 0 && fread(v.data(), sizeof(T), n, f) != n) {
        fprintf(stderr, "short read\n");
        exit(2);
    }
    return v;
}

int main(int argc, char** argv) {
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: shower_host_twin TABLES PRIMARIES OUT [generations|queue|phases]\n");
        return 2;
    }
    const bool queue = argc == 5 && strcmp(argv[4], "queue") == 0;
    const bool phases = argc == 5 && strcmp(argv[4], "phases") == 0;
    FILE* f = fopen(argv[1], "rb");
    if (!f) return 2;
    unsigned long long c[7];
    unsigned int nm_stride[2];
    double consts[4];
    unsigned long long seed_events[2];
    if (fread(c, 8, 7, f) != 7 || fread(nm_stride, 4, 2, f) != 2 || fread(consts, 8, 4, f) != 4 || fread(seed_events, 8, 2, f) != 2) return 2;
    std::vector<double> data = read_array<double>(f, c[0]);
    std::vector<WdMaterial> materials = read_array<WdMaterial>(f, c[1]);
    std::vector<WdElement> elements = read_array<WdElement>(f, c[2]);
    std::vector<WdPhoto> photo = read_array<WdPhoto>(f, c[3]);
    std::vector<WdRayleigh> rayleigh = read_array<WdRayleigh>(f, c[4]);
    std::vector<double> planes = read_array<double>(f, c[5]);
    std::vector<unsigned int> slab_material = read_array<unsigned int>(f, c[6]);
#ifdef WD_GEOMETRY_GDML
    unsigned long long gc[6];
    if (fread(gc, 8, 6, f) != 6) return 2;
    std::vector<SolidRecord> solids = read_array<SolidRecord>(f, gc[0]);
    std::vector<double> pool = read_array<double>(f, gc[1]);
    std::vector<LogicalRecord> logical = read_array<LogicalRecord>(f, gc[2]);
    std::vector<PlacementRecord> placements = read_array<PlacementRecord>(f, gc[3]);
    std::vector<unsigned int> slot_offset = read_array<unsigned int>(f, gc[4]);
    // The uniform field: u64 field_on, then B [T] (3 f64), delta_chord, delta_intersection [mm].
    unsigned long long field_on;
    double field[5];
    if (fread(&field_on, 8, 1, f) != 1 || fread(field, 8, 5, f) != 5) return 2;
    // The per-level trees: u64 counts (nodes, items, roots), then the arrays.
    unsigned long long bc[3];
    if (fread(bc, 8, 3, f) != 3) return 2;
    std::vector<BvhNodeRecord> bvh_nodes = read_array<BvhNodeRecord>(f, bc[0]);
    std::vector<unsigned int> bvh_items = read_array<unsigned int>(f, bc[1]);
    std::vector<unsigned int> bvh_root = read_array<unsigned int>(f, bc[2]);
    unsigned long long map_n[2];
    double map_c[2];
    if (fread(map_n, 8, 2, f) != 2 || fread(map_c, 8, 2, f) != 2) return 2;
    std::vector<double> map_r = read_array<double>(f, map_n[0]);
    std::vector<double> map_z = read_array<double>(f, map_n[1]);
    std::vector<double> map_b = read_array<double>(f, 2 * map_n[0] * map_n[1]);
    unsigned long long hit_capacity;
    if (fread(&hit_capacity, 8, 1, f) != 1) return 2;
    std::vector<unsigned char> sensitive = read_array<unsigned char>(f, c[6]);
    ZeroBuf<WdHit> hits(hit_capacity > 0 ? hit_capacity : 1);
    unsigned int hit_count = 0u;
    WdGdml gdml{solids.data(),
                pool.data(),
                logical.data(),
                placements.data(),
                slot_offset.data(),
                (unsigned int)gc[5],
                (unsigned int)field_on,
                {field[0], field[1], field[2]},
                field[3],
                field[4],
                bvh_nodes.data(),
                bvh_items.data(),
                bvh_root.data(),
                map_r.data(),
                map_z.data(),
                map_b.data(),
                (unsigned int)map_n[0],
                (unsigned int)map_n[1],
                map_c[0],
                map_c[1],
                sensitive.data(),
                hits.data(),
                &hit_count,
                (unsigned int)hit_capacity,
                0u};
#endif
    fclose(f);
    unsigned long long events = seed_events[1];
    unsigned int stride = nm_stride[1];
    std::vector<unsigned long long> tally(events * stride, 0ull);

    f = fopen(argv[2], "rb");
    if (!f) return 2;
    std::vector<WdTrack> lists[2];  // γ, e±
    WdTrack t;
    while (fread(&t, sizeof(WdTrack), 1, f) == 1) lists[t.particle == WD_GAMMA ? 0 : 1].push_back(t);
    fclose(f);

    const size_t capacity = 1 << 22;
    ZeroBuf<WdTrack> out[2] = {ZeroBuf<WdTrack>(capacity), ZeroBuf<WdTrack>(capacity)};
    unsigned int counters[3] = {0, 0, 0};
    ShowerParams P;
    P.data = data.data();
    P.materials = materials.data();
    P.elements = elements.data();
    P.photo = photo.data();
    P.rayleigh = rayleigh.data();
#ifdef WD_GEOMETRY_GDML
    P.gdml = &gdml;
#else
    P.planes = planes.data();
#endif
    P.slab_material = slab_material.data();
    P.slabs = (unsigned int)c[6];
    P.n_materials = nm_stride[0];
    P.transverse = consts[0];
    P.twopi_mc2_rcl2 = consts[1];
    P.alpha_re2 = consts[2];
    P.pi_re2 = consts[3];
    P.seed = seed_events[0];
    P.tally = tally.data();
    P.stride = stride;
    P.capacity = (unsigned int)capacity;
    P.out_gamma = out[0].data();
    P.out_charged = out[1].data();
    P.out_size = counters;
    P.overflow = counters + 2;
    P.queue_ctl = nullptr;
    P.ready = nullptr;
    P.first[0] = P.first[1] = 0u;
    unsigned long long generations = 0;
    // Queue and phases (gpu.rs run_batch_queue, run_batch_phases): the primaries at the queues'
    // fronts, published by the host.
    ZeroBuf<unsigned int> ready(queue || phases ? 2 * capacity : 1);
    unsigned int ctl[96] = {0u};
    if (queue || phases) {
        ctl[WD_Q_LIVE] = (unsigned int)(lists[0].size() + lists[1].size());
        for (int k = 0; k < 2; ++k) {
            std::copy(lists[k].begin(), lists[k].end(), out[k].begin());
            counters[k] = P.first[k] = (unsigned int)lists[k].size();
            lists[k].clear();
        }
        P.queue_ctl = ctl;
        P.ready = ready.data();
    }
    if (queue) {
        gridDim = {1, 1, 1};
        blockDim = {1, 1, 1};
        blockIdx = {0, 0, 0};
        threadIdx = {0, 0, 0};
        showers(P);
        if (counters[2] || ctl[WD_Q_LIVE] != 0u) {
            fprintf(stderr, "queue overflow or tracks left live: %u\n", ctl[WD_Q_LIVE]);
            return 3;
        }
        printf("queue: %u γ and %u e± tracks\n", counters[0], counters[1]);
    }
    if (phases) {
        // Few slots (so that tracks wait in the queues and slots are reused), and each launch's
        // "threads" one after the other.
        const unsigned int n = 7;
        std::vector<WdPhotonState> gamma(n);
        std::vector<WdChargedState> charged_slots(n);
        std::vector<WdChargedMid> mid(n);
        std::vector<unsigned int> alive(2 * n, 0u), list(8 * n, 0u), count(8, 0u);
        WdPhaseParams Q;
        Q.gamma = gamma.data();
        Q.charged = charged_slots.data();
        Q.mid = mid.data();
        Q.alive = alive.data();
        Q.list = list.data();
        Q.count = count.data();
        Q.n_slots[0] = Q.n_slots[1] = n;
        Q.list_stride = n;
        Q.pad = 0u;
        gridDim = {n, 1, 1};
        blockDim = {1, 1, 1};
        threadIdx = {0, 0, 0};
        unsigned long long iterations = 0;
        while (ctl[WD_Q_LIVE] != 0u && !counters[2]) {
            std::fill(count.begin(), count.end(), 0u);
            for (int k = 0; k < 6; ++k) {
                for (unsigned int i = 0; i < (k == 3 ? 1u : n); ++i) {
                    blockIdx = {i, 0, 0};
                    if (k == 0) along_charged(P, Q);
                    if (k == 1) cross_charged(P, Q);
                    if (k == 2) along_gamma(P, Q);
                    if (k == 3) phase_clamp(P);
                    if (k == 4) interact_gamma(P, Q);
                    if (k == 5) interact_charged(P, Q);
                }
            }
            iterations += 1;
        }
        if (counters[2]) {
            fprintf(stderr, "queue overflow\n");
            return 3;
        }
        printf("phases: %u γ and %u e± tracks, %llu iterations\n", counters[0], counters[1], iterations);
    }
    while (!lists[0].empty() || !lists[1].empty()) {
        counters[0] = counters[1] = 0;
        // The kernels themselves, their "threads" run one after the other: 3 blocks of 2, each
        // taking its grid-stride share of the list track after track (as on the device).
        gridDim = {3, 1, 1};
        blockDim = {2, 1, 1};
        for (unsigned int b = 0; b < gridDim.x; ++b) {
            for (unsigned int t = 0; t < blockDim.x; ++t) {
                blockIdx = {b, 0, 0};
                threadIdx = {t, 0, 0};
                photons(P, lists[0].data(), (unsigned int)lists[0].size());
                charged(P, lists[1].data(), (unsigned int)lists[1].size());
            }
        }
        if (counters[2]) {
            fprintf(stderr, "list overflow\n");
            return 3;
        }
        for (int k = 0; k < 2; ++k) lists[k].assign(out[k].begin(), out[k].begin() + counters[k]);
        generations += 1;
    }
    f = fopen(argv[3], "wb");
    if (!f || fwrite(tally.data(), 8, tally.size(), f) != tally.size()) return 2;
    fclose(f);
#ifdef WD_GEOMETRY_GDML
    std::string hits_path = std::string(argv[3]) + ".hits";
    f = fopen(hits_path.c_str(), "wb");
    if (!f || fwrite(hits.data(), sizeof(WdHit), hit_count, f) != hit_count) return 2;
    fclose(f);
    printf("%u hits\n", hit_count);
#endif
    printf("%llu events, %llu generations\n", events, generations);
    return 0;
}
