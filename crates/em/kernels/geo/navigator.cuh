// Twin of crates/em/src/geo/navigator.rs: locate a point in the volume tree, the next boundary
// along a ray, the isotropic safety, and the crossing (PUSH past the boundary, then located
// again: up while the volume does not hold the point, then down). Per-level search: the linear
// loop over the daughters with bounding-box rejection, in the CPU's order, or the level's
// bounding-volume tree (crates/em/src/geo/bvh.rs) with the CPU's traversals.
// (after solid.cuh)

#define GEO_MAX_DEPTH 16
#define GEO_PUSH 1e-9
// bvh.rs MAX_BVH_DEPTH: the traversal stack (device.rs refuses deeper trees).
#define GEO_BVH_STACK 49
#define GEO_NO_BVH 0xffffffffu

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
/// device.rs BvhNodeRecord: leaf (count > 0) items[a .. a + count]; inner node: children
/// this + 1 and a.
struct BvhNodeRecord {
    double bbox_min[3];
    double bbox_max[3];
    unsigned a, count, min_index, max_index;
};
static_assert(sizeof(LogicalRecord) == 16, "LogicalRecord layout");
static_assert(sizeof(PlacementRecord) == 152, "PlacementRecord layout");
static_assert(sizeof(BvhNodeRecord) == 64, "BvhNodeRecord layout");

/// The trees may be absent (null `bvh_root`): every level then keeps the linear loop.
struct Geometry {
    Solids solids;
    const LogicalRecord* logical;
    const PlacementRecord* placements;
    unsigned world;
    const BvhNodeRecord* bvh_nodes;
    const unsigned* bvh_items;
    const unsigned* bvh_root;
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
__device__ __forceinline__ bool aabb_contains(const double* bmin, const double* bmax, V3 p) {
    return p.x >= bmin[0] && p.x <= bmax[0] && p.y >= bmin[1] && p.y <= bmax[1] && p.z >= bmin[2] && p.z <= bmax[2];
}
__device__ __forceinline__ bool aabb_contains(const PlacementRecord& pl, V3 p) { return aabb_contains(pl.bbox_min, pl.bbox_max, p); }

/// Aabb::ray_entry (slab method): 0 inside, ∞ on a miss.
__device__ __forceinline__ double aabb_ray_entry(const double* bmin, const double* bmax, V3 p, V3 d) {
    double t0 = 0.0, t1 = GEO_INF;
    double ps[3] = {p.x, p.y, p.z}, ds[3] = {d.x, d.y, d.z};
    for (int i = 0; i < 3; ++i) {
        double lo = bmin[i], hi = bmax[i];
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
__device__ __forceinline__ double aabb_ray_entry(const PlacementRecord& pl, V3 p, V3 d) { return aabb_ray_entry(pl.bbox_min, pl.bbox_max, p, d); }

/// Aabb::distance: a lower bound of the distance to the box (0 inside).
__device__ __forceinline__ double aabb_distance(const double* bmin, const double* bmax, V3 p) {
    double dx = fmax(fmax(bmin[0] - p.x, p.x - bmax[0]), 0.0);
    double dy = fmax(fmax(bmin[1] - p.y, p.y - bmax[1]), 0.0);
    double dz = fmax(fmax(bmin[2] - p.z, p.z - bmax[2]), 0.0);
    return sqrt(dx * dx + dy * dy + dz * dz);
}
__device__ __forceinline__ double aabb_distance(const PlacementRecord& pl, V3 p) { return aabb_distance(pl.bbox_min, pl.bbox_max, p); }

// ---- Navigator ----

/// Navigator::logical: the logical volume a path ends in.
__device__ __forceinline__ unsigned logical_of(const Geometry& g, const VolumePath& path) {
    return path.depth == 0 ? g.world : g.placements[path.placement[path.depth - 1]].logical;
}

/// Navigator::global_to_local.
__device__ __forceinline__ V3 global_to_local(const VolumePath& path, V3 p) {
    return path.depth == 0 ? p : to_local(path.transform[path.depth - 1], p);
}

/// Navigator::root: the level's tree, GEO_NO_BVH where it keeps the linear loop.
__device__ __forceinline__ unsigned bvh_root_of(const Geometry& g, unsigned logical) { return g.bvh_root ? g.bvh_root[logical] : GEO_NO_BVH; }

/// Navigator::holds: daughter k holds `local` (box, then solid); `q` the point in its frame.
__device__ __forceinline__ bool holds(const Geometry& g, unsigned k, V3 local, V3& q) {
    const PlacementRecord& pl = g.placements[k];
    if (!aabb_contains(pl, local)) return false;
    q = to_local(xf_load(pl.transform), local);
    return contains(g.solids, g.logical[pl.logical].solid, q);
}

/// Navigator::first_holding: the least daughter index of `logical` that holds `local`, or
/// GEO_NO_BVH; `q` the point in its frame.
__device__ __noinline__ unsigned first_holding(const Geometry& g, unsigned logical, V3 local, V3& q) {
    unsigned root = bvh_root_of(g, logical);
    if (root == GEO_NO_BVH) {
        LogicalRecord l = g.logical[logical];
        for (unsigned k = l.first_daughter; k < l.first_daughter + l.daughter_count; ++k)
            if (holds(g, k, local, q)) return k;
        return GEO_NO_BVH;
    }
    unsigned best = GEO_NO_BVH;
    V3 bq = local;
    unsigned stack[GEO_BVH_STACK];
    int top = 0;
    stack[top++] = root;
    while (top > 0) {
        unsigned i = stack[--top];
        const BvhNodeRecord& node = g.bvh_nodes[i];
        if ((best != GEO_NO_BVH && node.min_index >= best) || !aabb_contains(node.bbox_min, node.bbox_max, local)) continue;
        if (node.count > 0) {
            for (unsigned j = node.a; j < node.a + node.count; ++j) {
                unsigned k = g.bvh_items[j];
                if (best != GEO_NO_BVH && k >= best) break;
                V3 t;
                if (holds(g, k, local, t)) {
                    best = k;
                    bq = t;
                    break;
                }
            }
        } else {
            unsigned l = i + 1, r = node.a;
            if (g.bvh_nodes[l].min_index <= g.bvh_nodes[r].min_index) {
                stack[top++] = r;
                stack[top++] = l;
            } else {
                stack[top++] = l;
                stack[top++] = r;
            }
        }
    }
    q = bq;
    return best;
}

/// Navigator::descend: down while a daughter holds the point (`local` in the path's frame).
__device__ __noinline__ void descend(const Geometry& g, VolumePath& path, V3 local) {
    for (;;) {
        V3 q;
        unsigned k = first_holding(g, logical_of(g, path), local, q);
        if (k == GEO_NO_BVH) return;
        Xf x = xf_load(g.placements[k].transform);
        Xf global = path.depth == 0 ? x : compose(path.transform[path.depth - 1], x);
        path.placement[path.depth] = k;
        path.transform[path.depth] = global;
        path.depth += 1;
        local = q;
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

/// The distance to in of daughter k along the ray in the mother's frame.
__device__ __forceinline__ double daughter_distance_to_in(const Geometry& g, unsigned k, V3 lp, V3 ld) {
    const PlacementRecord& pl = g.placements[k];
    Xf x = xf_load(pl.transform);
    return distance_to_in(g.solids, g.logical[pl.logical].solid, to_local(x, lp), dir_to_local(x, ld));
}

/// find_next_step's order: `t` for daughter k beats (best, what) if it is less, or equal and
/// best is a daughter of greater index.
__device__ __forceinline__ bool beats(double t, unsigned k, double best, int what) { return t < best || (t == best && what >= 0 && k < (unsigned)what); }

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
    unsigned root = bvh_root_of(g, logical_of(g, path));
    if (root == GEO_NO_BVH) {
        for (unsigned k = l.first_daughter; k < l.first_daughter + l.daughter_count; ++k) {
            const PlacementRecord& pl = g.placements[k];
            if (aabb_ray_entry(pl, lp, ld) >= best) continue;
            double din = daughter_distance_to_in(g, k, lp, ld);
            if (din < best) {
                best = din;
                what = (int)k;
            }
        }
        return best;
    }
    // The least (distance, index), the exit and the step limit winning ties (bvh.rs).
    unsigned stack[GEO_BVH_STACK];
    int top = 0;
    stack[top++] = root;
    while (top > 0) {
        unsigned i = stack[--top];
        const BvhNodeRecord& node = g.bvh_nodes[i];
        double entry = aabb_ray_entry(node.bbox_min, node.bbox_max, lp, ld);
        if (entry > best || (entry == best && what < 0)) continue;
        if (node.count > 0) {
            for (unsigned j = node.a; j < node.a + node.count; ++j) {
                unsigned k = g.bvh_items[j];
                if (!beats(aabb_ray_entry(g.placements[k], lp, ld), k, best, what)) continue;
                double din = daughter_distance_to_in(g, k, lp, ld);
                if (beats(din, k, best, what)) {
                    best = din;
                    what = (int)k;
                }
            }
        } else {
            unsigned l = i + 1, r = node.a;
            double el = aabb_ray_entry(g.bvh_nodes[l].bbox_min, g.bvh_nodes[l].bbox_max, lp, ld);
            double er = aabb_ray_entry(g.bvh_nodes[r].bbox_min, g.bvh_nodes[r].bbox_max, lp, ld);
            if (el <= er) {
                stack[top++] = r;
                stack[top++] = l;
            } else {
                stack[top++] = l;
                stack[top++] = r;
            }
        }
    }
    return best;
}

/// Navigator::next_closer: the least daughter index above `after` (`first` true: from the
/// first) whose box lies closer to `lp` than `s`, or GEO_NO_BVH.
__device__ __forceinline__ unsigned next_closer(const Geometry& g, unsigned root, V3 lp, double s, bool first, unsigned after) {
    unsigned best = GEO_NO_BVH;
    unsigned stack[GEO_BVH_STACK];
    int top = 0;
    stack[top++] = root;
    while (top > 0) {
        unsigned i = stack[--top];
        const BvhNodeRecord& node = g.bvh_nodes[i];
        if (!(first || node.max_index > after) || (best != GEO_NO_BVH && node.min_index >= best) ||
            aabb_distance(node.bbox_min, node.bbox_max, lp) >= s)
            continue;
        if (node.count > 0) {
            for (unsigned j = node.a; j < node.a + node.count; ++j) {
                unsigned k = g.bvh_items[j];
                if (best != GEO_NO_BVH && k >= best) break;
                if ((first || k > after) && aabb_distance(g.placements[k], lp) < s) {
                    best = k;
                    break;
                }
            }
        } else {
            unsigned l = i + 1, r = node.a;
            if (g.bvh_nodes[l].min_index <= g.bvh_nodes[r].min_index) {
                stack[top++] = r;
                stack[top++] = l;
            } else {
                stack[top++] = l;
                stack[top++] = r;
            }
        }
    }
    return best;
}

/// Navigator::safety: no boundary lies closer to `p`.
__device__ __noinline__ double safety(const Geometry& g, const VolumePath& path, V3 p) {
    V3 lp = global_to_local(path, p);
    unsigned logical = logical_of(g, path);
    LogicalRecord l = g.logical[logical];
    double s = safety_to_out(g.solids, l.solid, lp);
    unsigned root = bvh_root_of(g, logical);
    if (root != GEO_NO_BVH) {
        // The linear loop's daughters, in its order.
        bool first = true;
        unsigned after = 0;
        for (;;) {
            unsigned k = next_closer(g, root, lp, s, first, after);
            if (k == GEO_NO_BVH) break;
            const PlacementRecord& pl = g.placements[k];
            s = fmin(s, safety_to_in(g.solids, g.logical[pl.logical].solid, to_local(xf_load(pl.transform), lp)));
            first = false;
            after = k;
        }
        return fmax(s - GEO_SURFACE_TOLERANCE, 0.0);
    }
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
