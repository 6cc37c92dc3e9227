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

use super::helix::{Helix, UniformField};
use crate::geo::navigator::{Boundary, Navigator, VolumePath};
use crate::geo::Vec3;

/// Accuracy parameters of curved-path navigation [mm].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FieldAccuracy {
    pub delta_chord: f64,
    pub delta_intersection: f64,
}

impl Default for FieldAccuracy {
    fn default() -> FieldAccuracy {
        FieldAccuracy {
            delta_chord: 0.25,
            delta_intersection: 1e-6,
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
fn exit_on_arc(nav: &Navigator, path: &VolumePath, h: &Helix, lo: f64, hi: f64, acc: &FieldAccuracy, depth: u32) -> Option<f64> {
    let (a, b) = (h.at(lo).0, h.at(hi).0);
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
    exit_on_arc(nav, path, h, lo, mid, acc, depth + 1).or_else(|| exit_on_arc(nav, path, h, mid, hi, acc, depth + 1))
}

/// Move the track along its helix by at most `s_max` [mm], stopping just past the first
/// boundary (within `delta_intersection`, in the next volume). Returns the path length
/// travelled and why the step ended.
pub fn propagate(
    nav: &Navigator,
    path: &mut VolumePath,
    track: &mut ChargedTrack,
    field: &UniformField,
    s_max: f64,
    acc: &FieldAccuracy,
) -> (f64, FieldStepEnd) {
    let mut done = 0.0;
    // Enough chords for any sensible step; a cap so that no input loops for ever.
    for _ in 0..10_000_000 {
        let h = Helix::new(track.pos, track.dir, track.charge, track.momentum, field);
        let s = (s_max - done).min(h.max_step_for_sagitta(acc.delta_chord));
        match exit_on_arc(nav, path, &h, 0.0, s, acc, 0) {
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
                return if nav.relocate(path, track.pos) {
                    (done, FieldStepEnd::Crossed)
                } else {
                    path.placements.clear();
                    path.transforms.clear();
                    (done, FieldStepEnd::LeftWorld)
                };
            }
        }
    }
    (done, FieldStepEnd::Limit)
}
