// Device entry points of the geometry (issue #31): whole rays walked by the navigator
// (`trace_ray`, twin of crates/em/src/geo/trace.rs) and one solid's primitives at many points
// (`solid_distances`, for `warpdrive gpu-check` against Solids on the CPU). Always built
// precise: the CPU and the GPU must give the same distances.
// (after navigator.cuh)

#define TRACE_OUTSIDE (-2)
#define TRACE_WORLD (-1)

__device__ __forceinline__ int volume_code(const VolumePath& path) { return path.depth == 0 ? TRACE_WORLD : (int)path.placement[path.depth - 1]; }

/// trace::trace_ray for ray i: start volume and safety, then up to max_steps (moved, volume) and
/// the end point.
extern "C" __global__ void trace_ray(const SolidRecord* solids, const double* pool, const LogicalRecord* logical, const PlacementRecord* placements,
                                     unsigned world, const BvhNodeRecord* bvh_nodes, const unsigned* bvh_items, const unsigned* bvh_root,
                                     const double* starts, const double* dirs, unsigned n, unsigned max_steps, int* start_code,
                                     double* start_safety, unsigned* steps, double* moved, int* codes, double* ends) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Geometry g{Solids{solids, pool}, logical, placements, world, bvh_nodes, bvh_items, bvh_root};
    V3 p = v3(starts[3 * i], starts[3 * i + 1], starts[3 * i + 2]);
    V3 d = v3(dirs[3 * i], dirs[3 * i + 1], dirs[3 * i + 2]);
    VolumePath path;
    unsigned made = 0;
    if (!locate(g, p, path)) {
        start_code[i] = TRACE_OUTSIDE;
        start_safety[i] = 0.0;
    } else {
        start_code[i] = volume_code(path);
        start_safety[i] = safety(g, path, p);
        for (; made < max_steps;) {
            bool inside;
            double m = step(g, path, p, d, GEO_INF, inside);
            moved[(unsigned long long)i * max_steps + made] = m;
            codes[(unsigned long long)i * max_steps + made] = inside ? volume_code(path) : TRACE_OUTSIDE;
            made += 1;
            if (!inside) break;
        }
    }
    steps[i] = made;
    ends[3 * i] = p.x;
    ends[3 * i + 1] = p.y;
    ends[3 * i + 2] = p.z;
}

/// For point i: distance_to_in (if outside) or distance_to_out (if inside) of solid `id`, the
/// matching safety, and the membership.
extern "C" __global__ void solid_distances(const SolidRecord* solids, const double* pool, unsigned id, const double* points, const double* dirs,
                                           unsigned n, double* distance, double* safe, int* inside) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Solids S{solids, pool};
    V3 p = v3(points[3 * i], points[3 * i + 1], points[3 * i + 2]);
    V3 d = v3(dirs[3 * i], dirs[3 * i + 1], dirs[3 * i + 2]);
    bool in = contains(S, id, p);
    inside[i] = in ? 1 : 0;
    distance[i] = in ? distance_to_out(S, id, p, d) : distance_to_in(S, id, p, d);
    safe[i] = in ? safety_to_out(S, id, p) : safety_to_in(S, id, p);
}
