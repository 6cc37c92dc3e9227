//! Charged tracks through the volume tree along their helix in a uniform field: the boundary
//! is found along the curved path.
//!
//! The arc is followed in stretches whose chord's sagitta is at most `delta_chord` (Geant4's
//! parameter of that name, default 0.25 mm). A stretch is accepted when its end is still in the
//! current volume and its chord, a straight segment for the navigator's `find_next_step`, meets
//! no boundary. Otherwise it is halved and the halves are examined in order, down to
//! `delta_intersection` (default 1e-6 mm): the first stretch whose end lies in another volume
//! gives the crossing, and the track is put at that end — past the boundary by at most
//! `delta_intersection` — and located. A volume the arc enters and leaves within one stretch is
//! found as long as the chords of the halved stretches meet it; one that only the arc (not the
//! chord) grazes, within the sagitta, can be missed — the accuracy parameters bound that, as in
//! Geant4.
//!
//! In a field map ([`propagate_in_map`]) the path is integrated with the Dormand–Prince 5(4)
//! pair ([`super::rk`], error per unit length ≤ `epsilon`). A stretch's length comes from the
//! local radius of curvature R = p/(0.299792458 |q| |Ω × B|) as for the helix, and is halved
//! until the curve's midpoint lies within `delta_chord` of the chord (Geant4's
//! `G4ChordFinder` criterion); the boundary search along the stretch is the helix's. A stretch
//! is integrated once, to its midpoint and on to its end, and those two points serve the
//! sagitta check and the boundary search; only a bisection towards a crossing integrates
//! further points, each from the stretch's start ([`propagate_in_field`]).

use super::helix::{Helix, UniformField, C_LIGHT};
use super::map::FieldMap;
use super::rk::{integrate, State};
use crate::geo::navigator::{Boundary, Navigator, VolumePath};
use crate::geo::Vec3;

/// Accuracy parameters of curved-path navigation [mm].
///
/// Defaults: `delta_chord` 0.25 mm, Geant4's (`G4ChordFinder`); `delta_intersection` 1e-6 mm
/// and `epsilon` 1e-9, tighter than Geant4's 1e-3 mm and 5e-5…1e-3 (they make the helix tests
/// of issue #31 hold: 1e-6 relative over 100 turns, crossings to 1e-6 mm). Loosen them for
/// speed; [`FieldAccuracy::check`] gives the accepted ranges.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FieldAccuracy {
    /// Largest sagitta of a chord of the curved path [mm] (the stretches the navigator checks
    /// for boundaries are its chords).
    pub delta_chord: f64,
    /// How far past a boundary the crossing point may lie [mm].
    pub delta_intersection: f64,
    /// The Runge–Kutta integrator's error per unit path length in field maps (dimensionless:
    /// |Δx|/h and |ΔΩ| per step). Geant4's default ε is 1e-3…5e-5 with a 0.01 mm bound per
    /// step; 1e-9 keeps a 1 GeV/c track on its circle to 1e-6 over 100 turns.
    pub epsilon: f64,
}

/// Smallest `delta_intersection` [mm]: the navigator's push past a boundary
/// ([`crate::geo::navigator::PUSH`]); a finer crossing is not resolved.
pub const MIN_DELTA_INTERSECTION: f64 = crate::geo::navigator::PUSH;
/// Range of `epsilon`: below 1e-12 the Dormand–Prince error estimate (differences of O(1)
/// numbers) meets f64 rounding and steps shrink without gaining accuracy; above 1e-2 a track
/// is off its path by a percent per unit length.
pub const MIN_EPSILON: f64 = 1e-12;
pub const MAX_EPSILON: f64 = 1e-2;

impl FieldAccuracy {
    /// The defaults with the given parameters replaced (a front end's optional arguments);
    /// not checked ([`Self::check`]).
    #[must_use]
    pub fn with(delta_chord: Option<f64>, delta_intersection: Option<f64>, epsilon: Option<f64>) -> Self {
        let d = Self::default();
        Self {
            delta_chord: delta_chord.unwrap_or(d.delta_chord),
            delta_intersection: delta_intersection.unwrap_or(d.delta_intersection),
            epsilon: epsilon.unwrap_or(d.epsilon),
        }
    }

    /// Check the parameters: `delta_chord` finite and positive; `delta_intersection` in
    /// [[`MIN_DELTA_INTERSECTION`], `delta_chord`]; `epsilon` in [[`MIN_EPSILON`],
    /// [`MAX_EPSILON`]]. The error names the parameter (`delta_chord`, `delta_intersection`,
    /// `field_epsilon`: the request's field names).
    pub fn check(&self) -> Result<(), warpdrive_core::engine::ParamError> {
        use warpdrive_core::engine::ParamError;
        let (c, i, e) = (self.delta_chord, self.delta_intersection, self.epsilon);
        if !(c.is_finite() && c > 0.0) {
            return Err(ParamError::new("delta_chord", format!("{c} mm: must be finite and positive")));
        }
        if !(i.is_finite() && (MIN_DELTA_INTERSECTION..=c).contains(&i)) {
            return Err(ParamError::new(
                "delta_intersection",
                format!("{i} mm: must be at least {MIN_DELTA_INTERSECTION:e} mm and at most {{delta_chord}} ({c} mm)"),
            ));
        }
        if !(e.is_finite() && (MIN_EPSILON..=MAX_EPSILON).contains(&e)) {
            return Err(ParamError::new(
                "field_epsilon",
                format!("{e}: must be in [{MIN_EPSILON:e}, {MAX_EPSILON:e}]"),
            ));
        }
        Ok(())
    }
}

impl Default for FieldAccuracy {
    fn default() -> FieldAccuracy {
        FieldAccuracy {
            delta_chord: 0.25,
            delta_intersection: 1e-6,
            epsilon: 1e-9,
        }
    }
}

/// A charged track: position, unit direction, charge (units of e), momentum [MeV/c].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChargedTrack {
    pub pos: Vec3,
    pub dir: Vec3,
    pub charge: f64,
    pub momentum: f64,
}

/// What a field step ended on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldStepEnd {
    /// The path length asked for was travelled.
    Limit,
    /// A boundary was crossed (the track is now in the next volume).
    Crossed,
    /// The track left the world.
    LeftWorld,
}

/// Is the straight chord from the helix point at `lo` to the one at `hi` free of boundaries?
fn chord_clear(nav: &Navigator, path: &VolumePath, a: Vec3, b: Vec3) -> bool {
    let chord = b - a;
    let len = chord.norm();
    if len == 0.0 {
        return true;
    }
    let (dist, what) = nav.find_next_step(path, a, chord * (1.0 / len), len);
    what == Boundary::None || dist >= len
}

/// The arc length in `[lo, hi]` at which the helix first leaves the volume of `path` (the point
/// at `lo` being in it), to `delta_intersection`; `None` if it stays. A stretch is accepted
/// when its end is in the volume and its chord meets no boundary; otherwise it is halved, the
/// first half searched first.
fn exit_on_arc(
    nav: &Navigator,
    path: &VolumePath,
    at: &dyn Fn(f64) -> Vec3,
    lo: f64,
    hi: f64,
    acc: &FieldAccuracy,
    depth: u32,
) -> Option<f64> {
    let (a, b) = (at(lo), at(hi));
    let end_inside = nav.locate(b).as_ref() == Some(path);
    if end_inside && chord_clear(nav, path, a, b) {
        return None;
    }
    if hi - lo <= acc.delta_intersection || depth >= 64 {
        // A chord grazing a boundary with both ends inside, thinner than delta_intersection:
        // the arc stays.
        return if end_inside { None } else { Some(hi) };
    }
    let mid = 0.5 * (lo + hi);
    exit_on_arc(nav, path, at, lo, mid, acc, depth + 1).or_else(|| exit_on_arc(nav, path, at, mid, hi, acc, depth + 1))
}

/// The part of a safety distance [`propagate`] trusts: a relative margin far above the
/// rounding of the helix's points (|chord| ≤ arc holds to a few ulps) and of the safety itself.
pub const SAFETY_MARGIN: f64 = 1.0 - 1e-9;

/// After a step that ended just past a boundary at `pos`: the volume path relocated there
/// (`Crossed`), or emptied when `pos` is outside the world (`LeftWorld`).
fn enter_next_volume(nav: &Navigator, path: &mut VolumePath, pos: Vec3) -> FieldStepEnd {
    if nav.relocate(path, pos) {
        FieldStepEnd::Crossed
    } else {
        path.placements.clear();
        path.transforms.clear();
        FieldStepEnd::LeftWorld
    }
}

/// Move the track along its helix by at most `s_max` [mm], stopping just past the first
/// boundary (within `delta_intersection`, in the next volume). Returns the path length
/// travelled and why the step ended.
///
/// `safety` [mm] is a distance from the track's start within which no boundary lies (the
/// navigator's safety there; 0 when none is known). A stretch that cannot leave that sphere
/// cannot leave the volume: its end and its chord lie inside, where no boundary is. The helix
/// stays within `min(t, 2R + t |cos λ|)` of a point it passed an arc length t before (|chord|
/// ≤ arc; across the field it keeps to its circle of diameter 2R, along it it drifts by
/// t |cos λ|). Such stretches skip the boundary search (a locate and a chord's `find_next_step`)
/// whose answer is known: the result is the same, bit for bit. When a stretch reaches past the
/// sphere, the safety is computed afresh at the stretch's start (once per point), so a track
/// curling inside a volume — a looper in a vacuum gap — pays one safety instead of a boundary
/// search per chord. On the GPU the boundary searches were most of a curved step's time
/// (issue #31).
pub fn propagate(
    nav: &Navigator,
    path: &mut VolumePath,
    track: &mut ChargedTrack,
    field: &UniformField,
    s_max: f64,
    safety: f64,
    acc: &FieldAccuracy,
) -> (f64, FieldStepEnd) {
    let mut done = 0.0;
    // Where the safety sphere was centred (arc length) and its radius.
    let mut sphere = (0.0, safety);
    // Enough chords for any sensible step; a cap so that no input loops for ever.
    for _ in 0..10_000_000 {
        let h = Helix::new(track.pos, track.dir, track.charge, track.momentum, field);
        let s = (s_max - done).min(h.max_step_for_sagitta(acc.delta_chord));
        let (diameter, drift) = (2.0 * h.radius(), h.parallel.norm());
        let within = |(at, radius): (f64, f64)| {
            let t = done + s - at;
            t.min(diameter + t * drift) < radius * SAFETY_MARGIN
        };
        let mut inside = within(sphere);
        if !inside && sphere.0 != done {
            sphere = (done, nav.safety(path, track.pos));
            inside = within(sphere);
        }
        let exit = if inside {
            None
        } else {
            exit_on_arc(nav, path, &|t| h.at(t).0, 0.0, s, acc, 0)
        };
        match exit {
            None => {
                (track.pos, track.dir) = h.at(s);
                done += s;
                if done >= s_max {
                    return (done, FieldStepEnd::Limit);
                }
            }
            Some(t) => {
                (track.pos, track.dir) = h.at(t);
                done += t;
                return (done, enter_next_volume(nav, path, track.pos));
            }
        }
    }
    (done, FieldStepEnd::Limit)
}

/// [`propagate`] in a field map: the path integrated by Dormand–Prince (see the module doc).
pub fn propagate_in_map(
    nav: &Navigator,
    path: &mut VolumePath,
    track: &mut ChargedTrack,
    map: &FieldMap,
    s_max: f64,
    acc: &FieldAccuracy,
) -> (f64, FieldStepEnd) {
    propagate_in_field(nav, path, track, &|x: Vec3| map.at(x), s_max, acc)
}

/// [`propagate_in_map`] for any static field `field` (B [T] at a point [mm]); the map's
/// propagator, open to tests that count the field evaluations.
///
/// Each stretch of length s is integrated once: from its start to s/2 (the midpoint the
/// sagitta is checked at) and on to s; a stretch halved for its sagitta keeps its old midpoint
/// as its new end. The boundary search reuses both points (its first chord is the whole
/// stretch's, its first half the midpoint's); only the points of a bisection towards a
/// crossing are integrated afresh from the stretch's start.
pub fn propagate_in_field(
    nav: &Navigator,
    path: &mut VolumePath,
    track: &mut ChargedTrack,
    field: &dyn Fn(Vec3) -> Vec3,
    s_max: f64,
    acc: &FieldAccuracy,
) -> (f64, FieldStepEnd) {
    let k = C_LIGHT * track.charge / track.momentum;
    let h_rk = std::cell::Cell::new(1.0f64);
    let mut done = 0.0;
    for _ in 0..10_000_000 {
        let start: State = (track.pos, track.dir);
        // The stretch: the helix's for the local curvature, halved until the sagitta holds.
        let b_perp = track.dir.cross(field(track.pos)).norm();
        let mut s = s_max - done;
        if b_perp > 0.0 {
            let r = track.momentum / (C_LIGHT * track.charge.abs() * b_perp);
            let theta = (8.0 * acc.delta_chord / r).sqrt().min(std::f64::consts::FRAC_PI_2);
            s = s.min(theta * r);
        }
        let mut h = h_rk.get();
        let mut mid = integrate(start, 0.5 * s, k, field, acc.epsilon, &mut h);
        let mut end = integrate(mid, 0.5 * s, k, field, acc.epsilon, &mut h);
        for _ in 0..60 {
            let chord = end.0 - start.0;
            let len = chord.norm();
            let off = mid.0 - start.0;
            let sagitta = if len > 0.0 {
                let along = off.dot(chord) / len;
                (off.dot(off) - along * along).max(0.0).sqrt()
            } else {
                off.norm()
            };
            if sagitta <= acc.delta_chord {
                break;
            }
            s *= 0.5;
            end = mid;
            mid = integrate(start, 0.5 * s, k, field, acc.epsilon, &mut h);
        }
        h_rk.set(h);
        let at = |t: f64| -> State {
            if t == 0.0 {
                start
            } else if t == s {
                end
            } else if t == 0.5 * s {
                mid
            } else {
                let mut h = h_rk.get();
                let y = integrate(start, t, k, field, acc.epsilon, &mut h);
                h_rk.set(h);
                y
            }
        };
        match exit_on_arc(nav, path, &|t| at(t).0, 0.0, s, acc, 0) {
            None => {
                (track.pos, track.dir) = end;
                done += s;
                if done >= s_max {
                    return (done, FieldStepEnd::Limit);
                }
            }
            Some(t) => {
                (track.pos, track.dir) = at(t);
                done += t;
                return (done, enter_next_volume(nav, path, track.pos));
            }
        }
    }
    (done, FieldStepEnd::Limit)
}
