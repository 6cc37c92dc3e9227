// Twin of crates/em/src/field/propagate.rs (the uniform field): a charged track along its helix
// through the volume tree, the boundary found along the curved path by chords of bounded
// sagitta, halved down to delta_intersection (see the Rust module doc). The recursion of
// exit_on_arc is a depth-first walk over an explicit stack that visits the stretches in the
// CPU's order (first half first), so the first stretch found is the CPU's.
// (after helix.cuh and geo/navigator.cuh)

/// FieldAccuracy (the uniform field's two parameters) [mm].
struct FieldAccuracy {
    double delta_chord, delta_intersection;
};

/// ChargedTrack: position [mm], unit direction, charge [e], momentum [MeV/c].
struct ChargedTrack {
    V3 pos, dir;
    double charge, momentum;
};

/// FieldStepEnd.
#define FIELD_LIMIT 0
#define FIELD_CROSSED 1
#define FIELD_LEFT_WORLD 2

/// exit_on_arc's recursion bound (its `depth >= 64`).
#define FIELD_MAX_DEPTH 64u

/// VolumePath == (the transforms are composed from the placements: equal placements, equal paths).
__device__ __forceinline__ bool same_path(const VolumePath& a, const VolumePath& b) {
    if (a.depth != b.depth) return false;
    for (int i = 0; i < a.depth; ++i)
        if (a.placement[i] != b.placement[i]) return false;
    return true;
}

/// chord_clear: is the straight chord from `a` to `b` free of boundaries?
__device__ __forceinline__ bool chord_clear(const Geometry& g, const VolumePath& path, V3 a, V3 b) {
    V3 chord = sub(b, a);
    double len = norm(chord);
    if (len == 0.0) return true;
    int what;
    double dist = find_next_step(g, path, a, scale(chord, 1.0 / len), len, what);
    return what == GEO_NONE || dist >= len;
}

/// exit_on_arc from depth 0: the arc length in [lo, hi] at which the helix first leaves the
/// volume of `path` (true, in `t_exit`), or false if it stays.
__device__ __noinline__ bool exit_on_arc(const Geometry& g, const VolumePath& path, const Helix& h, double lo0, double hi0,
                                         const FieldAccuracy& acc, double& t_exit) {
    // Pending stretches: at most one second half per level below the current one.
    double lo_s[FIELD_MAX_DEPTH + 2], hi_s[FIELD_MAX_DEPTH + 2];
    unsigned depth_s[FIELD_MAX_DEPTH + 2];
    int n = 0;
    lo_s[0] = lo0;
    hi_s[0] = hi0;
    depth_s[0] = 0u;
    n = 1;
    while (n > 0) {
        n -= 1;
        double lo = lo_s[n], hi = hi_s[n];
        unsigned depth = depth_s[n];
        V3 a, b, d;
        helix_at(h, lo, a, d);
        helix_at(h, hi, b, d);
        VolumePath here;
        bool end_inside = locate(g, b, here) && same_path(here, path);
        if (end_inside && chord_clear(g, path, a, b)) continue;
        if (hi - lo <= acc.delta_intersection || depth >= FIELD_MAX_DEPTH) {
            if (end_inside) continue;
            t_exit = hi;
            return true;
        }
        double mid = 0.5 * (lo + hi);
        // Second half below, first half on top: searched first.
        lo_s[n] = mid;
        hi_s[n] = hi;
        depth_s[n] = depth + 1u;
        lo_s[n + 1] = lo;
        hi_s[n + 1] = mid;
        depth_s[n + 1] = depth + 1u;
        n += 2;
    }
    return false;
}

/// enter_next_volume: the path relocated at `pos` (FIELD_CROSSED), or emptied outside the world.
__device__ __forceinline__ int enter_next_volume(const Geometry& g, VolumePath& path, V3 pos) {
    if (relocate(g, path, pos)) return FIELD_CROSSED;
    path.depth = 0;
    return FIELD_LEFT_WORLD;
}

/// SAFETY_MARGIN.
#define FIELD_SAFETY_MARGIN (1.0 - 1e-9)

/// propagate: move the track along its helix by at most `s_max` [mm], stopping just past the
/// first boundary; the path length travelled in `done`, the FieldStepEnd returned. Stretches
/// that stay inside a safety sphere skip the boundary search (see the Rust function).
__device__ __noinline__ int propagate(const Geometry& g, VolumePath& path, ChargedTrack& track, const UniformField& field, double s_max,
                                      double safety0, const FieldAccuracy& acc, double& done) {
    done = 0.0;
    // The safety sphere: its centre's arc length and its radius.
    double sphere_at = 0.0, sphere_r = safety0;
    for (unsigned it = 0u; it < 10000000u; ++it) {
        Helix h = helix_new(track.pos, track.dir, track.charge, track.momentum, field);
        double s = fmin(s_max - done, helix_max_step_for_sagitta(h, acc.delta_chord));
        double diameter = 2.0 * helix_radius(h), drift = norm(h.parallel);
        double reach = done + s - sphere_at;
        bool inside = fmin(reach, diameter + reach * drift) < sphere_r * FIELD_SAFETY_MARGIN;
        if (!inside && sphere_at != done) {
            sphere_at = done;
            sphere_r = safety(g, path, track.pos);
            reach = done + s - sphere_at;
            inside = fmin(reach, diameter + reach * drift) < sphere_r * FIELD_SAFETY_MARGIN;
        }
        double t;
        if (inside || !exit_on_arc(g, path, h, 0.0, s, acc, t)) {
            helix_at(h, s, track.pos, track.dir);
            done += s;
            if (done >= s_max) return FIELD_LIMIT;
        } else {
            helix_at(h, t, track.pos, track.dir);
            done += t;
            return enter_next_volume(g, path, track.pos);
        }
    }
    return FIELD_LIMIT;
}
