//! Per-level bounding-volume hierarchies over the daughters of each logical volume (issue #31):
//! the navigator's candidate search for levels with thousands of daughters.
//!
//! ## Structure
//!
//! One binary tree per logical volume with more than [`LINEAR_MAX`] daughters, over the
//! daughters' bounding boxes in the mother's frame ([`super::Placement::bbox`]). All trees share
//! one node array and one item array ([`Bvh`]); `root[logical]` is the volume's root node or
//! [`NO_BVH`] (levels with few daughters keep the linear loop). A node holds the union of its
//! items' boxes, the least and greatest placement index below it, and either two children
//! (`left` = the next node, `right` = `a`) or a leaf's items `items[a .. a + count]`, placement
//! indices in increasing order.
//!
//! ## Build
//!
//! Top-down object-median split: the items are sorted by their box centres along the axis on
//! which the centres spread most (ties by placement index), the lower half goes left. Leaves
//! hold at most [`LEAF_SIZE`] items. The median split (rather than the surface-area heuristic)
//! keeps every tree balanced, so its depth is ⌈log₂(n / LEAF_SIZE)⌉ and the GPU's fixed
//! traversal stack ([`MAX_BVH_DEPTH`]) always suffices; it is deterministic (the same tree on
//! every machine) and builds in O(n log² n). For the regular arrays of detectors (crystals,
//! cells, tiles) the median and SAH splits are nearly the same planes.
//!
//! ## Why the answers do not change
//!
//! The navigator's linear loop defines the answers; the traversals in
//! [`super::navigator`] reproduce them with fewer candidates:
//! * locate keeps the least placement index whose box and solid hold the point (the linear
//!   loop's first), pruning nodes whose box does not hold the point or whose least index is not
//!   below the best found;
//! * next step keeps the least (distance, placement index) with the linear loop's ties (the
//!   exit and the step limit win ties); nodes are visited nearest first and skipped when their
//!   box is entered beyond the best distance. This equals the linear loop whenever a daughter's
//!   distance to in is not below its box's entry distance (a solid lies inside its box; a rounding
//!   of the last bit can break it only where two overlapping or touching daughters are entered
//!   within an ulp of each other: then either is entered, at the same distance within 4 ulps);
//! * safety repeats the linear loop exactly: the linear loop's pruning (`box distance ≥ s`)
//!   depends on the order because a solid's safety may be below its box's distance (a box's
//!   safety is the largest face distance), so the daughters are visited in placement order —
//!   each query finds the least index after the last one whose box lies closer than `s`. It
//!   evaluates the same safeties as the linear loop, so it is no faster (docs/em-geometry.md).
//!
//! A node's box is the exact union of its items' boxes, so its ray entry, distance and
//! membership bound its items' without rounding.

use super::solid::Aabb;
use super::vec3::Vec3;
use super::volumes::{Placement, VolumeTree};

/// Levels with at most this many daughters keep the linear loop (a tree costs more than it saves
/// there: a slab calorimeter's 2–3 absorbers, an assembly of a few parts).
pub const LINEAR_MAX: u32 = 8;
/// Most items in a leaf.
pub const LEAF_SIZE: usize = 4;
/// Deepest tree the traversals hold (their fixed stack, `GEO_BVH_STACK` in navigator.cuh).
pub const MAX_BVH_DEPTH: usize = 48;
/// `root[logical]` of a level without a tree.
pub const NO_BVH: u32 = u32::MAX;

/// One node (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BvhNode {
    pub bbox: Aabb,
    /// Leaf: first item; inner node: the right child.
    pub a: u32,
    /// Items of a leaf; 0 for an inner node.
    pub count: u32,
    /// Least and greatest placement index below the node.
    pub min_index: u32,
    pub max_index: u32,
}

impl BvhNode {
    #[must_use]
    pub fn is_leaf(&self) -> bool {
        self.count > 0
    }
}

/// The trees of all levels.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bvh {
    pub nodes: Vec<BvhNode>,
    pub items: Vec<u32>,
    /// Per logical volume: its root node or [`NO_BVH`].
    pub root: Vec<u32>,
    /// The deepest tree (nodes from the root to a leaf, the root counted 1).
    pub depth: usize,
}

fn centre(b: &Aabb, axis: usize) -> f64 {
    let (lo, hi) = match axis {
        0 => (b.min.x, b.max.x),
        1 => (b.min.y, b.max.y),
        _ => (b.min.z, b.max.z),
    };
    0.5 * lo + 0.5 * hi
}

impl Bvh {
    /// The trees of every logical volume with more than [`LINEAR_MAX`] daughters.
    #[must_use]
    pub fn build(logical_daughters: &[(u32, u32)], placements: &[Placement]) -> Bvh {
        let mut bvh = Bvh {
            root: vec![NO_BVH; logical_daughters.len()],
            ..Bvh::default()
        };
        // At most 2n/LEAF_SIZE·2 nodes and n items per level: reserve once.
        let total: usize = logical_daughters
            .iter()
            .filter(|(_, n)| *n > LINEAR_MAX)
            .map(|(_, n)| *n as usize)
            .sum();
        bvh.items.reserve(total);
        bvh.nodes.reserve(2 * total.div_ceil(LEAF_SIZE) + 1);
        for (l, &(first, count)) in logical_daughters.iter().enumerate() {
            if count <= LINEAR_MAX {
                continue;
            }
            let mut ids: Vec<u32> = (first..first + count).collect();
            bvh.root[l] = bvh.nodes.len() as u32;
            let d = bvh.split(&mut ids, placements);
            bvh.depth = bvh.depth.max(d);
        }
        debug_assert!(
            bvh.depth <= MAX_BVH_DEPTH,
            "a median-split tree of u32 items is at most 31 levels deep"
        );
        bvh
    }

    /// The tree of a volume tree.
    #[must_use]
    pub fn of(tree: &VolumeTree) -> Bvh {
        let levels: Vec<(u32, u32)> = tree.logical.iter().map(|l| (l.first_daughter, l.daughter_count)).collect();
        Bvh::build(&levels, &tree.placements)
    }

    /// Append the subtree over `ids` (depth first, left child next); its depth.
    fn split(&mut self, ids: &mut [u32], placements: &[Placement]) -> usize {
        let bbox = ids
            .iter()
            .map(|&k| placements[k as usize].bbox)
            .reduce(|a, b| a.union(&b))
            .expect("a node has items");
        let (min_index, max_index) = (*ids.iter().min().expect("items"), *ids.iter().max().expect("items"));
        let me = self.nodes.len();
        self.nodes.push(BvhNode {
            bbox,
            a: 0,
            count: 0,
            min_index,
            max_index,
        });
        if ids.len() <= LEAF_SIZE {
            ids.sort_unstable();
            self.nodes[me].a = self.items.len() as u32;
            self.nodes[me].count = ids.len() as u32;
            self.items.extend_from_slice(ids);
            return 1;
        }
        // The axis on which the centres spread most.
        let mut lo = Vec3::new(f64::INFINITY, f64::INFINITY, f64::INFINITY);
        let mut hi = -lo;
        for &k in ids.iter() {
            let b = &placements[k as usize].bbox;
            let c = Vec3::new(centre(b, 0), centre(b, 1), centre(b, 2));
            lo = lo.min(c);
            hi = hi.max(c);
        }
        let spread = hi - lo;
        let axis = if spread.x >= spread.y && spread.x >= spread.z {
            0
        } else if spread.y >= spread.z {
            1
        } else {
            2
        };
        ids.sort_by(|&a, &b| {
            centre(&placements[a as usize].bbox, axis)
                .total_cmp(&centre(&placements[b as usize].bbox, axis))
                .then(a.cmp(&b))
        });
        let mid = ids.len() / 2;
        let (left, right) = ids.split_at_mut(mid);
        let dl = self.split(left, placements);
        self.nodes[me].a = self.nodes.len() as u32;
        let dr = self.split(right, placements);
        1 + dl.max(dr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geo::shapes::make_box;
    use crate::geo::{Solids, Transform, TreeBuilder};

    fn grid(n: usize) -> VolumeTree {
        let mut s = Solids::default();
        let w = s.push(make_box(1000.0, 1000.0, 1000.0).unwrap());
        let c = s.push(make_box(0.4, 0.4, 0.4).unwrap());
        let mut b = TreeBuilder::with_solids(s);
        let lw = b.add_volume("w", w, 0, vec![]);
        let lc = b.add_volume("c", c, 0, vec![]);
        for i in 0..n {
            let t = Transform {
                translation: Vec3::new(i as f64, (i % 7) as f64, (i % 3) as f64),
                ..Transform::IDENTITY
            };
            b.place(lw, lc, "c_pv", i as i32, t);
        }
        b.build(lw)
    }

    #[test]
    fn every_daughter_is_in_one_leaf_and_nodes_hold_their_items() {
        for n in [9usize, 10, 33, 1000] {
            let tree = grid(n);
            let bvh = &tree.bvh;
            assert_eq!(bvh.root[1], NO_BVH, "no daughters, no tree");
            let root = bvh.root[0] as usize;
            assert_ne!(root as u32, NO_BVH);
            let mut seen = vec![0u32; n];
            let mut stack = vec![(root, 1usize)];
            let mut deepest = 0;
            while let Some((i, d)) = stack.pop() {
                deepest = deepest.max(d);
                let node = bvh.nodes[i];
                let below: Vec<u32> = if node.is_leaf() {
                    let it = &bvh.items[node.a as usize..(node.a + node.count) as usize];
                    assert!(it.windows(2).all(|w| w[0] < w[1]), "leaf items in order");
                    assert!(it.len() <= LEAF_SIZE);
                    for &k in it {
                        seen[k as usize] += 1;
                    }
                    it.to_vec()
                } else {
                    stack.push((i + 1, d + 1));
                    stack.push((node.a as usize, d + 1));
                    let (l, r) = (bvh.nodes[i + 1], bvh.nodes[node.a as usize]);
                    assert_eq!(node.bbox, l.bbox.union(&r.bbox));
                    assert_eq!(node.min_index, l.min_index.min(r.min_index));
                    assert_eq!(node.max_index, l.max_index.max(r.max_index));
                    vec![]
                };
                for k in below {
                    let b = tree.placements[k as usize].bbox;
                    assert_eq!(node.bbox.union(&b), node.bbox);
                    assert!(node.min_index <= k && k <= node.max_index);
                }
            }
            assert!(seen.iter().all(|&c| c == 1), "n = {n}");
            assert_eq!(deepest, bvh.depth);
            // Balanced: ⌈log₂(n / LEAF_SIZE)⌉ + 1 levels.
            let bound = 1 + (n as f64 / LEAF_SIZE as f64).log2().ceil().max(0.0) as usize;
            assert!(bvh.depth <= bound, "n = {n}: depth {} > {bound}", bvh.depth);
        }
    }

    #[test]
    fn small_levels_keep_the_linear_loop() {
        let tree = grid(LINEAR_MAX as usize);
        assert!(tree.bvh.nodes.is_empty());
        assert_eq!(tree.bvh.root, vec![NO_BVH, NO_BVH]);
    }
}
