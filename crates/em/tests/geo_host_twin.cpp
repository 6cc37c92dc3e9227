// Host build of kernels/geo (tests/geo_host_twin.rs): the navigator's device functions compiled
// for the CPU with the host's C++ compiler and libm (so atan2 and sin are the ones Rust calls),
// the two kernels run as loops over their thread index. Checks the translation of every solid,
// the root scan and the navigator bit for bit without a GPU.
//
//   geo_host_twin GEOMETRY RAYS OUT
// GEOMETRY: u64 counts (solids, pool, logical, placements), u64 world, u64 counts (bvh nodes,
// bvh items, bvh roots), then the arrays as raw bytes. RAYS: u64 mode (0 trace_ray, 1 solid_distances), u64 n, u64 max_steps or solid id,
// then n starts and n directions (3 f64 each). OUT: trace_ray: per ray i32 start, f64 safety,
// u32 steps, f64 end[3], then max_steps (f64 moved, i32 code); solid_distances: per point f64
// distance, f64 safety, i32 inside.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define __device__
#define __forceinline__ inline
#define __noinline__
#define __global__
using std::copysign;
using std::fma;
using std::isfinite;
static inline double __longlong_as_double(long long v) {
    double d;
    std::memcpy(&d, &v, 8);
    return d;
}
struct Dim3 {
    unsigned x;
};
static Dim3 blockIdx{0}, blockDim{1}, threadIdx{0};

#include "geo/vec3.cuh"
#include "geo/roots.cuh"
#include "geo/solid.cuh"
#include "geo/navigator.cuh"
#include "geo/trace.cu"

template <class T>
static std::vector<T> take(FILE* f, uint64_t n) {
    std::vector<T> v(n ? n : 1);
    if (n && fread(v.data(), sizeof(T), n, f) != n) {
        fprintf(stderr, "short read\n");
        exit(2);
    }
    return v;
}

int main(int argc, char** argv) {
    if (argc != 4) return 2;
    FILE* g = fopen(argv[1], "rb");
    uint64_t c[8];
    if (fread(c, 8, 8, g) != 8) return 2;
    auto solids = take<SolidRecord>(g, c[0]);
    auto pool = take<double>(g, c[1]);
    auto logical = take<LogicalRecord>(g, c[2]);
    auto placements = take<PlacementRecord>(g, c[3]);
    auto bvh_nodes = take<BvhNodeRecord>(g, c[5]);
    auto bvh_items = take<unsigned>(g, c[6]);
    auto bvh_root = take<unsigned>(g, c[7]);
    fclose(g);
    FILE* r = fopen(argv[2], "rb");
    uint64_t h[3];
    if (fread(h, 8, 3, r) != 3) return 2;
    uint64_t n = h[1];
    auto starts = take<double>(r, 3 * n);
    auto dirs = take<double>(r, 3 * n);
    fclose(r);
    FILE* o = fopen(argv[3], "wb");
    blockDim.x = 1u << 30;
    if (h[0] == 0) {
        unsigned ms = (unsigned)h[2];
        std::vector<int> sc(1), codes(ms ? ms : 1);
        std::vector<unsigned> steps(1);
        std::vector<double> ss(1), moved(ms ? ms : 1), ends(3);
        for (uint64_t i = 0; i < n; ++i) {
            // One ray per launch of one thread: the outputs of ray i at index 0.
            threadIdx.x = 0;
            trace_ray(solids.data(), pool.data(), logical.data(), placements.data(), (unsigned)c[4], bvh_nodes.data(), bvh_items.data(),
                      c[7] ? bvh_root.data() : nullptr, &starts[3 * i], &dirs[3 * i], 1, ms,
                      sc.data(), ss.data(), steps.data(), moved.data(), codes.data(), ends.data());
            fwrite(sc.data(), 4, 1, o);
            fwrite(ss.data(), 8, 1, o);
            fwrite(steps.data(), 4, 1, o);
            fwrite(ends.data(), 8, 3, o);
            for (unsigned k = 0; k < ms; ++k) {
                double m = k < steps[0] ? moved[k] : 0.0;
                int cd = k < steps[0] ? codes[k] : 0;
                fwrite(&m, 8, 1, o);
                fwrite(&cd, 4, 1, o);
            }
        }
    } else {
        for (uint64_t i = 0; i < n; ++i) {
            double dist, safe;
            int inside;
            threadIdx.x = 0;
            solid_distances(solids.data(), pool.data(), (unsigned)h[2], &starts[3 * i], &dirs[3 * i], 1, &dist, &safe, &inside);
            fwrite(&dist, 8, 1, o);
            fwrite(&safe, 8, 1, o);
            fwrite(&inside, 4, 1, o);
        }
    }
    fclose(o);
    return 0;
}
