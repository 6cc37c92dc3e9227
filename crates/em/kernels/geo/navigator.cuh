// Twin of crates/em/src/geo/navigator.rs: locate a point in the volume tree, the next boundary
// along a ray, the isotropic safety, and the crossing (PUSH past the boundary, then located
// again: up while the volume does not hold the point, then down). Per-level search: brute force
// over the daughters with bounding-box rejection, in the CPU's order.
// (after solid.cuh)

#define GEO_MAX_DEPTH 16
#define GEO_PUSH 1e-9

struct LogicalRecord {
    unsigned solid, first_daughter, daughter_count, material;
};
struct PlacementRecord {
    double transform[12];
    double bbox_min[3];
    double bbox_max[3];
    unsigned logical;
    int copy;
};
static_assert(sizeof(LogicalRecord) == 16, "LogicalRecord layout");
static_assert(sizeof(PlacementRecord) == 152, "PlacementRecord layout");

struct Geometry {
    Solids solids;
    const LogicalRecord* logical;
    const PlacementRecord* placements;
    unsigned world;
};

/// VolumePath: the placements from the world down and, per level, the local → global transform.
struct VolumePath {
    int depth;
    unsigned placement[GEO_MAX_DEPTH];
    Xf transform[GEO_MAX_DEPTH];
};

/// Boundary codes of find_next_step: ≥ 0 enters that placement.
#define GEO_NONE (-1)
#define GEO_EXIT (-2)

// ---- Aabb ----

/// Aabb::contains (inclusive).
__device__ __forceinline__ bool aabb_contains(const PlacementRecord& pl, V3 p) {
    return p.x >= pl.bbox_min[0] && p.x <= pl.bbox_max[0] && p.y >= pl.bbox_min[1] && p.y <= pl.bbox_max[1] && p.z >= pl.bbox_min[2] &&
           p.z <= pl.bbox_max[2];
}

/// Aabb::ray_entry (slab method): 0 inside, ∞ on a miss.
__device__ __forceinline__ double aabb_ray_entry(const PlacementRecord& pl, V3 p, V3 d) {
    double t0 = 0.0, t1 = GEO_INF;
    double ps[3] = {p.x, p.y, p.z}, ds[3] = {d.x, d.y, d.z};
    for (int i = 0; i < 3; ++i) {
        double lo = pl.bbox_min[i], hi = pl.bbox_max[i];
        if (ds[i] == 0.0) {
            if (ps[i] < lo || ps[i] > hi) return GEO_INF;
        } else {
            double inv = 1.0 / ds[i];
            double a = (lo - ps[i]) * inv, b = (hi - ps[i]) * inv;
            if (!(a < b)) {
                double t = a;
                a = b;
                b = t;
            }
            t0 = fmax(t0, a);
            t1 = fmin(t1, b);
            if (t0 > t1) return GEO_INF;
        }
    }
    return t0;
}

/// Aabb::distance: a lower bound of the distance to the box (0 inside).
__device__ __forceinline__ double aabb_distance(const PlacementRecord& pl, V3 p) {
    double dx = fmax(fmax(pl.bbox_min[0] - p.x, p.x - pl.bbox_max[0]), 0.0);
    double dy = fmax(fmax(pl.bbox_min[1] - p.y, p.y - pl.bbox_max[1]), 0.0);
    double dz = fmax(fmax(pl.bbox_min[2] - p.z, p.z - pl.bbox_max[2]), 0.0);
    return sqrt(dx * dx + dy * dy + dz * dz);
}

// ---- Navigator ----

/// Navigator::logical: the logical volume a path ends in.
__device__ __forceinline__ unsigned logical_of(const Geometry& g, const VolumePath& path) {
    return path.depth == 0 ? g.world : g.placements[path.placement[path.depth - 1]].logical;
}

/// Navigator::global_to_local.
__device__ __forceinline__ V3 global_to_local(const VolumePath& path, V3 p) {
    return path.depth == 0 ? p : to_local(path.transform[path.depth - 1], p);
}

/// Navigator::descend: down while a daughter holds the point (`local` in the path's frame).
__device__ __noinline__ void descend(const Geometry& g, VolumePath& path, V3 local) {
    for (;;) {
        LogicalRecord l = g.logical[logical_of(g, path)];
        bool found = false;
        for (unsigned k = l.first_daughter; k < l.first_daughter + l.daughter_count; ++k) {
            const PlacementRecord& pl = g.placements[k];
            if (!aabb_contains(pl, local)) continue;
            Xf x = xf_load(pl.transform);
            V3 q = to_local(x, local);
            if (contains(g.solids, g.logical[pl.logical].solid, q)) {
                Xf global = path.depth == 0 ? x : compose(path.transform[path.depth - 1], x);
                path.placement[path.depth] = k;
                path.transform[path.depth] = global;
                path.depth += 1;
                local = q;
                found = true;
                break;
            }
        }
        if (!found) return;
    }
}

/// Navigator::locate: false outside the world.
__device__ bool locate(const Geometry& g, V3 p, VolumePath& path) {
    path.depth = 0;
    if (!contains(g.solids, g.logical[g.world].solid, p)) return false;
    descend(g, path, p);
    return true;
}

/// Navigator::relocate: up while the volume does not hold the point, then down; false if the
/// point left the world.
__device__ bool relocate(const Geometry& g, VolumePath& path, V3 p) {
    while (path.depth > 0) {
        unsigned solid = g.logical[g.placements[path.placement[path.depth - 1]].logical].solid;
        if (contains(g.solids, solid, global_to_local(path, p))) break;
        path.depth -= 1;
    }
    if (path.depth == 0 && !contains(g.solids, g.logical[g.world].solid, p)) return false;
    descend(g, path, global_to_local(path, p));
    return true;
}

/// Navigator::find_next_step: the distance to the next boundary along `d` (or max_step) and what
/// it is (GEO_NONE, GEO_EXIT, or the placement entered).
__device__ __noinline__ double find_next_step(const Geometry& g, const VolumePath& path, V3 p, V3 d, double max_step, int& what) {
    Xf t = path.depth == 0 ? xf_identity() : path.transform[path.depth - 1];
    V3 lp = to_local(t, p), ld = dir_to_local(t, d);
    LogicalRecord l = g.logical[logical_of(g, path)];
    double out = distance_to_out(g.solids, l.solid, lp, ld);
    double best;
    if (out < max_step) {
        best = out;
        what = GEO_EXIT;
    } else {
        best = max_step;
        what = GEO_NONE;
    }
    for (unsigned k = l.first_daughter; k < l.first_daughter + l.daughter_count; ++k) {
        const PlacementRecord& pl = g.placements[k];
        if (aabb_ray_entry(pl, lp, ld) >= best) continue;
        Xf x = xf_load(pl.transform);
        double din = distance_to_in(g.solids, g.logical[pl.logical].solid, to_local(x, lp), dir_to_local(x, ld));
        if (din < best) {
            best = din;
            what = (int)k;
        }
    }
    return best;
}

/// Navigator::safety: no boundary lies closer to `p`.
__device__ __noinline__ double safety(const Geometry& g, const VolumePath& path, V3 p) {
    V3 lp = global_to_local(path, p);
    LogicalRecord l = g.logical[logical_of(g, path)];
    double s = safety_to_out(g.solids, l.solid, lp);
    for (unsigned k = l.first_daughter; k < l.first_daughter + l.daughter_count; ++k) {
        const PlacementRecord& pl = g.placements[k];
        if (aabb_distance(pl, lp) >= s) continue;
        Xf x = xf_load(pl.transform);
        s = fmin(s, safety_to_in(g.solids, g.logical[pl.logical].solid, to_local(x, lp)));
    }
    return fmax(s - GEO_SURFACE_TOLERANCE, 0.0);
}

/// Navigator::step: to the next boundary (then PUSH beyond it, located again) or by max_step.
/// Returns the distance moved; `inside` false (and the path emptied) when the track left the world.
__device__ double step(const Geometry& g, VolumePath& path, V3& p, V3 d, double max_step, bool& inside) {
    int what;
    double dist = find_next_step(g, path, p, d, max_step, what);
    if (what == GEO_NONE) {
        p = along(p, d, dist);
        inside = true;
        return dist;
    }
    double moved = dist + GEO_PUSH;
    p = along(p, d, moved);
    inside = relocate(g, path, p);
    if (!inside) path.depth = 0;
    return moved;
}
