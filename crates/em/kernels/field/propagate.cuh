// Twin of crates/em/src/field/propagate.rs (the uniform field): a charged track along its helix
// through the volume tree, the boundary found along the curved path by chords of bounded
// sagitta, halved down to delta_intersection (see the Rust module doc). The recursion of
// exit_on_arc is a depth-first walk over an explicit stack that visits the stretches in the
// CPU's order (first half first), so the first stretch found is the CPU's. In a field map
// (propagate_in_map, propagate_in_field) the path is integrated by the Dormand–Prince twin
// (rk.cuh) in stretches whose sagitta is checked at their midpoint, as in the Rust module.
// (after helix.cuh, map.cuh, rk.cuh and geo/navigator.cuh)

/// FieldAccuracy: delta_chord, delta_intersection [mm]; epsilon (the Runge–Kutta error per unit
/// length, field maps only).
struct FieldAccuracy {
    double delta_chord, delta_intersection, epsilon;
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

/// A stretch of the Runge–Kutta path in a map (the state of propagate_in_field's `at` closure):
/// its start, midpoint and end after a path length s, and the integrator's step size h_rk
/// (the Rust `Cell`), which every fresh integration reads and updates.
struct RkArc {
    const FieldMap* map;
    RkState start, mid, end;
    double s, k, epsilon, h_rk;
};

/// propagate_in_field's `at`: the state after a path length t of the stretch (its start, end and
/// midpoint as integrated; any other point integrated afresh from the start).
__device__ __forceinline__ RkState rk_arc_at(RkArc& arc, double t) {
    if (t == 0.0) return arc.start;
    if (t == arc.s) return arc.end;
    if (t == 0.5 * arc.s) return arc.mid;
    double h = arc.h_rk;
    RkState y = integrate(*arc.map, arc.start, t, arc.k, arc.epsilon, h);
    arc.h_rk = h;
    return y;
}

/// exit_on_arc from depth 0 along a stretch of the Runge–Kutta path (the Rust function with
/// propagate_in_field's `at`): the arc length in [lo, hi] at which the path first leaves the
/// volume of `path` (true, in `t_exit`), or false if it stays. The stretches are visited in the
/// Rust recursion's order and each evaluates at(lo) before at(hi), so the integrator's step size
/// evolves as on the CPU.
__device__ __noinline__ bool exit_on_arc_in_field(const Geometry& g, const VolumePath& path, RkArc& arc, double lo0, double hi0,
                                                  const FieldAccuracy& acc, double& t_exit) {
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
        V3 a = rk_arc_at(arc, lo).x;
        V3 b = rk_arc_at(arc, hi).x;
        VolumePath here;
        bool end_inside = locate(g, b, here) && same_path(here, path);
        if (end_inside && chord_clear(g, path, a, b)) continue;
        if (hi - lo <= acc.delta_intersection || depth >= FIELD_MAX_DEPTH) {
            if (end_inside) continue;
            t_exit = hi;
            return true;
        }
        double mid = 0.5 * (lo + hi);
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

/// propagate_in_field (with the map's field: propagate_in_map): move the track along its
/// Runge–Kutta path by at most `s_max` [mm], stopping just past the first boundary; the path
/// length travelled in `done`, the FieldStepEnd returned. Each stretch's length comes from the
/// local radius of curvature and is halved until its midpoint lies within delta_chord of its
/// chord (Geant4's G4ChordFinder criterion).
__device__ __noinline__ int propagate_in_field(const Geometry& g, VolumePath& path, ChargedTrack& track, const FieldMap& map, double s_max,
                                               const FieldAccuracy& acc, double& done) {
    RkArc arc;
    arc.map = &map;
    arc.k = FIELD_C_LIGHT * track.charge / track.momentum;
    arc.epsilon = acc.epsilon;
    arc.h_rk = 1.0;
    done = 0.0;
    for (unsigned it = 0u; it < 10000000u; ++it) {
        arc.start.x = track.pos;
        arc.start.d = track.dir;
        double b_perp = norm(cross(track.dir, field_map_at(map, track.pos)));
        double s = s_max - done;
        if (b_perp > 0.0) {
            double r = track.momentum / (FIELD_C_LIGHT * fabs(track.charge) * b_perp);
            double theta = fmin(sqrt(8.0 * acc.delta_chord / r), 1.5707963267948966);
            s = fmin(s, theta * r);
        }
        double h = arc.h_rk;
        arc.mid = integrate(map, arc.start, 0.5 * s, arc.k, acc.epsilon, h);
        arc.end = integrate(map, arc.mid, 0.5 * s, arc.k, acc.epsilon, h);
        for (int i = 0; i < 60; ++i) {
            V3 chord = sub(arc.end.x, arc.start.x);
            double len = norm(chord);
            V3 off = sub(arc.mid.x, arc.start.x);
            double sagitta;
            if (len > 0.0) {
                double al = dot(off, chord) / len;
                sagitta = sqrt(fmax(dot(off, off) - al * al, 0.0));
            } else {
                sagitta = norm(off);
            }
            if (sagitta <= acc.delta_chord) break;
            s *= 0.5;
            arc.end = arc.mid;
            arc.mid = integrate(map, arc.start, 0.5 * s, arc.k, acc.epsilon, h);
        }
        arc.h_rk = h;
        arc.s = s;
        double t;
        if (!exit_on_arc_in_field(g, path, arc, 0.0, s, acc, t)) {
            track.pos = arc.end.x;
            track.dir = arc.end.d;
            done += s;
            if (done >= s_max) return FIELD_LIMIT;
        } else {
            RkState y = rk_arc_at(arc, t);
            track.pos = y.x;
            track.dir = y.d;
            done += t;
            return enter_next_volume(g, path, track.pos);
        }
    }
    return FIELD_LIMIT;
}

/// propagate_in_map: propagate_in_field in the map's field.
__device__ __forceinline__ int propagate_in_map(const Geometry& g, VolumePath& path, ChargedTrack& track, const FieldMap& map, double s_max,
                                                const FieldAccuracy& acc, double& done) {
    return propagate_in_field(g, path, track, map, s_max, acc, done);
}
