//! CPU navigation in a [`VolumeTree`]: where a point is (a path of placements from the world
//! down), how far a track may go before it crosses a boundary, and the crossing itself.
//!
//! ## Algorithm
//!
//! * **Locate**: from the world down; at each level the daughters are tried in order, first
//!   against their bounding boxes in the mother's frame, then with the solid's strict
//!   `contains` in the daughter's frame. The first daughter that holds the point wins
//!   (overlapping daughters are an error of the geometry, as in Geant4).
//! * **Next step**: in the deepest volume, the least of the distance to out of its solid, the
//!   distance to in of each daughter whose bounding box the ray meets before the best distance
//!   so far, and the step limit.
//! * **Crossing**: the point moves by that distance plus [`PUSH`] along the direction and is
//!   located again — up the path while the volume does not hold it, then down. A point is thus
//!   never left on a surface: after a crossing it lies [`PUSH`] inside the next volume, every
//!   step advances by at least [`PUSH`], and touching or coincident surfaces (a daughter's face
//!   on its mother's, two siblings sharing a face) are resolved by the same strict `contains`
//!   that defines the solids, so a track is neither stuck nor lost.
//!
//! Per-level search: brute force over the daughters with bounding-box rejection. It is the
//! right choice for the levels of calorimeters and of Celeritas' test geometries (tens of
//! daughters); a per-level bounding-volume hierarchy is the planned upgrade for levels with
//! thousands of daughters (it changes only the candidate loop, not the results).

use super::solid::{Solids, SURFACE_TOLERANCE};
use super::vec3::{Transform, Vec3};
use super::volumes::VolumeTree;

/// How far past a boundary a crossing track is placed [mm] (Geant4's `kCarTolerance` scale).
pub const PUSH: f64 = 1e-9;

/// A located point: the placements from the world's first daughter level down (empty = in
/// the world volume itself) and, per level, the local → global transform.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VolumePath {
    pub placements: Vec<u32>,
    pub transforms: Vec<Transform>,
}

impl VolumePath {
    /// The deepest placement, `None` for the world.
    #[must_use]
    pub fn top(&self) -> Option<u32> {
        self.placements.last().copied()
    }
}

/// What limits a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Boundary {
    /// The step limit came first.
    None,
    /// The track leaves the current volume.
    Exit,
    /// The track enters this daughter placement.
    Enter(u32),
}

/// The navigator over a volume tree.
pub struct Navigator<'g> {
    pub tree: &'g VolumeTree,
}

impl<'g> Navigator<'g> {
    #[must_use]
    pub fn new(tree: &'g VolumeTree) -> Navigator<'g> {
        Navigator { tree }
    }

    fn solids(&self) -> &Solids {
        &self.tree.solids
    }

    /// The logical volume a path ends in.
    #[must_use]
    pub fn logical(&self, path: &VolumePath) -> u32 {
        path.top().map_or(self.tree.world, |p| self.tree.placements[p as usize].logical)
    }

    fn global_to_local(path: &VolumePath, p: Vec3) -> Vec3 {
        path.transforms.last().map_or(p, |t| t.to_local(p))
    }

    /// Descend from the path's deepest volume while a daughter holds the point (`local` is the
    /// point in that volume's frame).
    fn descend(&self, path: &mut VolumePath, mut local: Vec3) {
        'levels: loop {
            let logical = self.logical(path);
            for k in self.tree.daughters(logical) {
                let pl = &self.tree.placements[k as usize];
                if !pl.bbox.contains(local) {
                    continue;
                }
                let q = pl.transform.to_local(local);
                if self.solids().contains(self.tree.logical[pl.logical as usize].solid, q) {
                    let global = path.transforms.last().map_or(pl.transform, |t| t.compose(&pl.transform));
                    path.placements.push(k);
                    path.transforms.push(global);
                    local = q;
                    continue 'levels;
                }
            }
            return;
        }
    }

    /// The path of the volume holding the global point; `None` outside the world.
    #[must_use]
    pub fn locate(&self, p: Vec3) -> Option<VolumePath> {
        let world_solid = self.tree.logical[self.tree.world as usize].solid;
        if !self.solids().contains(world_solid, p) {
            return None;
        }
        let mut path = VolumePath::default();
        self.descend(&mut path, p);
        Some(path)
    }

    /// Locate again after a move: up while the volume does not hold the point, then down.
    /// `false` if the point left the world.
    pub fn relocate(&self, path: &mut VolumePath, p: Vec3) -> bool {
        while let Some(k) = path.top() {
            let solid = self.tree.logical[self.tree.placements[k as usize].logical as usize].solid;
            let local = Self::global_to_local(path, p);
            if self.solids().contains(solid, local) {
                break;
            }
            path.placements.pop();
            path.transforms.pop();
        }
        if path.placements.is_empty() && !self.solids().contains(self.tree.logical[self.tree.world as usize].solid, p) {
            return false;
        }
        let local = Self::global_to_local(path, p);
        self.descend(path, local);
        true
    }

    /// The distance to the next boundary along the unit direction `d` (or `max_step` if that
    /// comes first) and what the boundary is.
    #[must_use]
    pub fn find_next_step(&self, path: &VolumePath, p: Vec3, d: Vec3, max_step: f64) -> (f64, Boundary) {
        let t = path.transforms.last().copied().unwrap_or(Transform::IDENTITY);
        let (lp, ld) = (t.to_local(p), t.dir_to_local(d));
        let logical = self.logical(path);
        let solids = self.solids();
        let out = solids.distance_to_out(self.tree.logical[logical as usize].solid, lp, ld);
        let (mut best, mut what) = if out < max_step {
            (out, Boundary::Exit)
        } else {
            (max_step, Boundary::None)
        };
        for k in self.tree.daughters(logical) {
            let pl = &self.tree.placements[k as usize];
            if pl.bbox.ray_entry(lp, ld) >= best {
                continue;
            }
            let solid = self.tree.logical[pl.logical as usize].solid;
            let din = solids.distance_to_in(solid, pl.transform.to_local(lp), pl.transform.dir_to_local(ld));
            if din < best {
                best = din;
                what = Boundary::Enter(k);
            }
        }
        (best, what)
    }

    /// An isotropic safe distance: no boundary lies closer to `p` than this.
    #[must_use]
    pub fn safety(&self, path: &VolumePath, p: Vec3) -> f64 {
        let lp = Self::global_to_local(path, p);
        let logical = self.logical(path);
        let solids = self.solids();
        let mut s = solids.safety_to_out(self.tree.logical[logical as usize].solid, lp);
        for k in self.tree.daughters(logical) {
            let pl = &self.tree.placements[k as usize];
            if pl.bbox.distance(lp) >= s {
                continue;
            }
            let solid = self.tree.logical[pl.logical as usize].solid;
            s = s.min(solids.safety_to_in(solid, pl.transform.to_local(lp)));
        }
        (s - SURFACE_TOLERANCE).max(0.0)
    }

    /// Move a track by one step: to the next boundary (then [`PUSH`] beyond it and located
    /// again) or by `max_step`. Returns the distance moved; `path` is emptied and `false`
    /// returned with it when the track left the world.
    pub fn step(&self, path: &mut VolumePath, p: &mut Vec3, d: Vec3, max_step: f64) -> (f64, bool) {
        let (dist, what) = self.find_next_step(path, *p, d, max_step);
        if what == Boundary::None {
            *p = p.along(d, dist);
            return (dist, true);
        }
        let moved = dist + PUSH;
        *p = p.along(d, moved);
        let inside = self.relocate(path, *p);
        if !inside {
            path.placements.clear();
            path.transforms.clear();
        }
        (moved, inside)
    }
}
