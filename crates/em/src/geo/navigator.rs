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
//! Per-level search: levels with at most [`LINEAR_MAX`](super::bvh::LINEAR_MAX) daughters loop over them in order with
//! bounding-box rejection (calorimeter layers, an assembly's parts); larger levels search a
//! bounding-volume hierarchy over the daughters' boxes in the mother's frame ([`super::bvh`]:
//! median-split binary trees, one per logical volume). The tree changes the candidates, not the
//! answers: locate keeps the least daughter index that holds the point, the next step the least
//! (distance, index), and safety repeats the linear loop in placement order (the `bvh` module
//! docs give the argument). [`Navigator::linear`] keeps the loop on every level (the reference
//! of the property tests and the benchmark's baseline).

use super::bvh::{Bvh, MAX_BVH_DEPTH, NO_BVH};
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
    /// Search the levels' trees (`false`: the linear loop everywhere).
    pub use_bvh: bool,
}

/// A traversal stack (a balanced tree of `2³²` daughters is 31 levels deep).
struct Stack {
    node: [u32; MAX_BVH_DEPTH + 1],
    len: usize,
}

impl Stack {
    fn new(root: u32) -> Stack {
        let mut s = Stack {
            node: [0; MAX_BVH_DEPTH + 1],
            len: 0,
        };
        s.push(root);
        s
    }
    fn push(&mut self, n: u32) {
        self.node[self.len] = n;
        self.len += 1;
    }
    fn pop(&mut self) -> Option<u32> {
        (self.len > 0).then(|| {
            self.len -= 1;
            self.node[self.len]
        })
    }
}

impl<'g> Navigator<'g> {
    /// The navigator with the per-level trees.
    #[must_use]
    pub fn new(tree: &'g VolumeTree) -> Navigator<'g> {
        Navigator { tree, use_bvh: true }
    }

    /// The navigator with the linear loop on every level.
    #[must_use]
    pub fn linear(tree: &'g VolumeTree) -> Navigator<'g> {
        Navigator { tree, use_bvh: false }
    }

    fn bvh(&self) -> &Bvh {
        &self.tree.bvh
    }

    /// The level's root node, `None` where it keeps the linear loop.
    fn root(&self, logical: u32) -> Option<u32> {
        let r = self.bvh().root[logical as usize];
        (self.use_bvh && r != NO_BVH).then_some(r)
    }

    /// Daughter `k` holds `local` (box, then solid): the point in its frame.
    fn holds(&self, k: u32, local: Vec3) -> Option<Vec3> {
        let pl = &self.tree.placements[k as usize];
        if !pl.bbox.contains(local) {
            return None;
        }
        let q = pl.transform.to_local(local);
        self.solids().contains(self.tree.logical[pl.logical as usize].solid, q).then_some(q)
    }

    /// The first daughter of `logical` (least placement index) that holds `local`.
    fn first_holding(&self, logical: u32, local: Vec3) -> Option<(u32, Vec3)> {
        let Some(root) = self.root(logical) else {
            return self.tree.daughters(logical).find_map(|k| self.holds(k, local).map(|q| (k, q)));
        };
        let bvh = self.bvh();
        let mut best: Option<(u32, Vec3)> = None;
        let mut stack = Stack::new(root);
        while let Some(i) = stack.pop() {
            let node = &bvh.nodes[i as usize];
            if best.is_some_and(|(b, _)| node.min_index >= b) || !node.bbox.contains(local) {
                continue;
            }
            if node.is_leaf() {
                // Items in increasing order: the first that holds the point is the leaf's least.
                for &k in &bvh.items[node.a as usize..(node.a + node.count) as usize] {
                    if best.is_some_and(|(b, _)| k >= b) {
                        break;
                    }
                    if let Some(q) = self.holds(k, local) {
                        best = Some((k, q));
                        break;
                    }
                }
            } else {
                // The child with the lower indices first (it may prune the other).
                let (l, r) = (i + 1, node.a);
                if bvh.nodes[l as usize].min_index <= bvh.nodes[r as usize].min_index {
                    stack.push(r);
                    stack.push(l);
                } else {
                    stack.push(l);
                    stack.push(r);
                }
            }
        }
        best
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
            if let Some((k, q)) = self.first_holding(logical, local) {
                let pl = &self.tree.placements[k as usize];
                let global = path.transforms.last().map_or(pl.transform, |t| t.compose(&pl.transform));
                path.placements.push(k);
                path.transforms.push(global);
                local = q;
                continue 'levels;
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
        let din = |k: u32| {
            let pl = &self.tree.placements[k as usize];
            let solid = self.tree.logical[pl.logical as usize].solid;
            solids.distance_to_in(solid, pl.transform.to_local(lp), pl.transform.dir_to_local(ld))
        };
        let Some(root) = self.root(logical) else {
            for k in self.tree.daughters(logical) {
                if self.tree.placements[k as usize].bbox.ray_entry(lp, ld) >= best {
                    continue;
                }
                let d = din(k);
                if d < best {
                    best = d;
                    what = Boundary::Enter(k);
                }
            }
            return (best, what);
        };
        // The least (distance, index), the exit and the step limit winning ties: the linear
        // loop's answer (bvh module docs).
        let beats = |t: f64, k: u32, best: f64, what: Boundary| t < best || (t == best && matches!(what, Boundary::Enter(j) if k < j));
        let bvh = self.bvh();
        let mut stack = Stack::new(root);
        while let Some(i) = stack.pop() {
            let node = &bvh.nodes[i as usize];
            let entry = node.bbox.ray_entry(lp, ld);
            if entry > best || (entry == best && !matches!(what, Boundary::Enter(_))) {
                continue;
            }
            if node.is_leaf() {
                for &k in &bvh.items[node.a as usize..(node.a + node.count) as usize] {
                    if !beats(self.tree.placements[k as usize].bbox.ray_entry(lp, ld), k, best, what) {
                        continue;
                    }
                    let d = din(k);
                    if beats(d, k, best, what) {
                        best = d;
                        what = Boundary::Enter(k);
                    }
                }
            } else {
                // The nearer child first.
                let (l, r) = (i + 1, node.a);
                let el = bvh.nodes[l as usize].bbox.ray_entry(lp, ld);
                let er = bvh.nodes[r as usize].bbox.ray_entry(lp, ld);
                if el <= er {
                    stack.push(r);
                    stack.push(l);
                } else {
                    stack.push(l);
                    stack.push(r);
                }
            }
        }
        (best, what)
    }

    /// The least daughter index of the level above `after` (`None`: from the first) whose box
    /// lies closer to `lp` than `s`.
    fn next_closer(&self, root: u32, lp: Vec3, s: f64, after: Option<u32>) -> Option<u32> {
        let bvh = self.bvh();
        let past = |k: u32| after.is_none_or(|a| k > a);
        let mut best: Option<u32> = None;
        let mut stack = Stack::new(root);
        while let Some(i) = stack.pop() {
            let node = &bvh.nodes[i as usize];
            if !past(node.max_index) || best.is_some_and(|b| node.min_index >= b) || node.bbox.distance(lp) >= s {
                continue;
            }
            if node.is_leaf() {
                for &k in &bvh.items[node.a as usize..(node.a + node.count) as usize] {
                    if best.is_some_and(|b| k >= b) {
                        break;
                    }
                    if past(k) && self.tree.placements[k as usize].bbox.distance(lp) < s {
                        best = Some(k);
                        break;
                    }
                }
            } else {
                let (l, r) = (i + 1, node.a);
                if bvh.nodes[l as usize].min_index <= bvh.nodes[r as usize].min_index {
                    stack.push(r);
                    stack.push(l);
                } else {
                    stack.push(l);
                    stack.push(r);
                }
            }
        }
        best
    }

    /// An isotropic safe distance: no boundary lies closer to `p` than this.
    #[must_use]
    pub fn safety(&self, path: &VolumePath, p: Vec3) -> f64 {
        let lp = Self::global_to_local(path, p);
        let logical = self.logical(path);
        let solids = self.solids();
        let mut s = solids.safety_to_out(self.tree.logical[logical as usize].solid, lp);
        if let Some(root) = self.root(logical) {
            // The linear loop's daughters, in its order: each the next one whose box is closer
            // than the safety so far.
            let mut after = None;
            while let Some(k) = self.next_closer(root, lp, s, after) {
                let pl = &self.tree.placements[k as usize];
                let solid = self.tree.logical[pl.logical as usize].solid;
                s = s.min(solids.safety_to_in(solid, pl.transform.to_local(lp)));
                after = Some(k);
            }
            return (s - SURFACE_TOLERANCE).max(0.0);
        }
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
