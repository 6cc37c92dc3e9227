//! The volume tree as the GPU reads it (`kernels/geo/*.cuh`): every solid one fixed-size record
//! with its numbers in one f64 pool, logical volumes and placements as flat records. Nothing is
//! recomputed on the way: the pool holds the CPU's own values (the φ planes' cos/sin, the
//! polyhedra's side normals, the θ cones' sin/cos computed here once with the host's libm), so
//! the device's arithmetic starts from the same bits as [`super::Solids`].
//!
//! Pool layout per kind (offsets from [`SolidRecord::offset`]):
//! * box: `hx hy hz`;
//! * convex: `count` planes `nx ny nz c`;
//! * revolved: the φ block (7), then `count` vertices `r z`;
//! * sphere: the φ block, then `rmin rmax θ_start θ_end sin θ_start cos θ_start sin θ_end cos θ_end`;
//! * polyhedra: the φ block, `start delta`, `aux` side normals `nx ny`, then `count` vertices `u z`;
//! * boolean: `aux` = the operation, `a`, `b`; the two placements, 12 numbers each (rotation rows,
//!   translation).
//!
//! The φ block: `present start delta cos_start sin_start cos_end sin_end` (present 0 = full circle).
//!
//! The per-level trees ([`super::bvh`]) as three arrays: the nodes ([`BvhNodeRecord`]), the leaves'
//! items (placement indices) and per logical volume its root node (`u32::MAX`: the linear loop).

use super::bvh::MAX_BVH_DEPTH;
use super::solid::{BoolOp, PhiSegment, Polygon, Solid};
use super::vec3::Transform;
use super::volumes::VolumeTree;

/// Kinds of [`SolidRecord::kind`] (twins of `SOLID_*` in `kernels/geo/solid.cuh`).
pub const SOLID_BOX: u32 = 0;
pub const SOLID_CONVEX: u32 = 1;
pub const SOLID_REVOLVED: u32 = 2;
pub const SOLID_SPHERE: u32 = 3;
pub const SOLID_POLYHEDRA: u32 = 4;
pub const SOLID_BOOLEAN: u32 = 5;

/// Deepest volume path the device navigator holds (`GEO_MAX_DEPTH` in navigator.cuh).
pub const MAX_DEPTH: usize = 16;
/// Deepest nesting of boolean solids the device evaluates (recursion on the GPU's stack).
pub const MAX_BOOLEAN_DEPTH: usize = 8;

/// One solid (twin of `SolidRecord` in solid.cuh).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SolidRecord {
    pub kind: u32,
    /// Planes (convex), vertices (revolved, polyhedra).
    pub count: u32,
    /// Sides (polyhedra), the operation (boolean: 0 union, 1 subtraction, 2 intersection).
    pub aux: u32,
    /// Operands (boolean).
    pub a: u32,
    pub b: u32,
    pub pad: u32,
    /// First number in the pool.
    pub offset: u64,
}

/// One logical volume (twin of `LogicalRecord` in navigator.cuh).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogicalRecord {
    pub solid: u32,
    pub first_daughter: u32,
    pub daughter_count: u32,
    pub material: u32,
}

/// One placement (twin of `PlacementRecord` in navigator.cuh): the daughter → mother transform
/// (rotation rows, translation) and the bounding box in the mother's frame.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PlacementRecord {
    pub transform: [f64; 12],
    pub bbox_min: [f64; 3],
    pub bbox_max: [f64; 3],
    pub logical: u32,
    pub copy: i32,
}

/// One node of a level's tree (twin of `BvhNodeRecord` in navigator.cuh; [`super::bvh::BvhNode`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BvhNodeRecord {
    pub bbox_min: [f64; 3],
    pub bbox_max: [f64; 3],
    /// Leaf: first item; inner node: the right child (the left one is the next node).
    pub a: u32,
    /// Items of a leaf, 0 for an inner node.
    pub count: u32,
    pub min_index: u32,
    pub max_index: u32,
}

/// The flattened geometry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceGeometry {
    pub solids: Vec<SolidRecord>,
    pub pool: Vec<f64>,
    pub logical: Vec<LogicalRecord>,
    pub placements: Vec<PlacementRecord>,
    /// The per-level trees: nodes, leaf items, per logical volume the root (`u32::MAX`: none).
    pub bvh_nodes: Vec<BvhNodeRecord>,
    pub bvh_items: Vec<u32>,
    pub bvh_root: Vec<u32>,
    pub world: u32,
    /// The deepest volume path of the tree (levels below the world).
    pub depth: usize,
}

/// Why a tree does not fit the device navigator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LayoutError {
    TooDeep { depth: usize },
    BooleanTooDeep { solid: u32, depth: usize },
    BvhTooDeep { depth: usize },
}

impl std::fmt::Display for LayoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LayoutError::TooDeep { depth } => write!(
                f,
                "the volume tree is {depth} levels deep; the GPU navigator holds at most {MAX_DEPTH} (run on the CPU)"
            ),
            LayoutError::BooleanTooDeep { solid, depth } => write!(
                f,
                "boolean solid {solid} nests {depth} booleans; the GPU evaluates at most {MAX_BOOLEAN_DEPTH} (run on the CPU)"
            ),
            LayoutError::BvhTooDeep { depth } => write!(
                f,
                "a level's bounding-volume tree is {depth} nodes deep; the GPU navigator holds at most {MAX_BVH_DEPTH} (run on the CPU)"
            ),
        }
    }
}

fn transform_numbers(t: &Transform) -> [f64; 12] {
    let r = &t.rot.r;
    [
        r[0][0],
        r[0][1],
        r[0][2],
        r[1][0],
        r[1][1],
        r[1][2],
        r[2][0],
        r[2][1],
        r[2][2],
        t.translation.x,
        t.translation.y,
        t.translation.z,
    ]
}

fn push_phi(pool: &mut Vec<f64>, phi: Option<&PhiSegment>) {
    match phi {
        None => pool.extend([0.0; 7]),
        Some(w) => {
            let ((cs, ss), (ce, se)) = w.cos_sin();
            pool.extend([1.0, w.start, w.delta, cs, ss, ce, se]);
        }
    }
}

fn push_polygon(pool: &mut Vec<f64>, p: &Polygon) {
    for &(r, z) in &p.vertices {
        pool.extend([r, z]);
    }
}

/// Nesting depth of booleans under `id` (0 for a primitive).
fn boolean_depth(solids: &[Solid], id: u32) -> usize {
    match &solids[id as usize] {
        Solid::Boolean { a, b, .. } => 1 + boolean_depth(solids, *a).max(boolean_depth(solids, *b)),
        _ => 0,
    }
}

fn tree_depth(tree: &VolumeTree, logical: u32) -> usize {
    tree.daughters(logical)
        .map(|k| 1 + tree_depth(tree, tree.placements[k as usize].logical))
        .max()
        .unwrap_or(0)
}

/// The solids as records and their numbers as one pool (the module docs give the layout).
pub fn flatten_solids(all: &[Solid]) -> Result<(Vec<SolidRecord>, Vec<f64>), LayoutError> {
    let (mut records, mut numbers) = (Vec::with_capacity(all.len()), Vec::new());
    for (i, s) in all.iter().enumerate() {
        let bd = boolean_depth(all, i as u32);
        if bd > MAX_BOOLEAN_DEPTH {
            return Err(LayoutError::BooleanTooDeep {
                solid: i as u32,
                depth: bd,
            });
        }
        let mut rec = SolidRecord {
            offset: numbers.len() as u64,
            ..SolidRecord::default()
        };
        let pool = &mut numbers;
        match s {
            Solid::Box { half } => {
                rec.kind = SOLID_BOX;
                pool.extend([half.x, half.y, half.z]);
            }
            Solid::Convex(c) => {
                rec.kind = SOLID_CONVEX;
                rec.count = c.planes.len() as u32;
                for &(n, k) in &c.planes {
                    pool.extend([n.x, n.y, n.z, k]);
                }
            }
            Solid::Revolved { polygon, phi } => {
                rec.kind = SOLID_REVOLVED;
                rec.count = polygon.vertices.len() as u32;
                push_phi(pool, phi.as_ref());
                push_polygon(pool, polygon);
            }
            Solid::Sphere {
                rmin,
                rmax,
                phi,
                theta_start,
                theta_end,
            } => {
                rec.kind = SOLID_SPHERE;
                push_phi(pool, phi.as_ref());
                let (s0, c0) = theta_start.sin_cos();
                let (s1, c1) = theta_end.sin_cos();
                pool.extend([*rmin, *rmax, *theta_start, *theta_end, s0, c0, s1, c1]);
            }
            Solid::Polyhedra { polygon, sides, phi, .. } => {
                rec.kind = SOLID_POLYHEDRA;
                rec.count = polygon.vertices.len() as u32;
                rec.aux = sides.normals.len() as u32;
                push_phi(pool, phi.as_ref());
                pool.extend([sides.start, sides.delta]);
                for &(nx, ny) in &sides.normals {
                    pool.extend([nx, ny]);
                }
                push_polygon(pool, polygon);
            }
            Solid::Boolean {
                op,
                a,
                b,
                a_placement,
                b_placement,
            } => {
                rec.kind = SOLID_BOOLEAN;
                rec.aux = match op {
                    BoolOp::Union => 0,
                    BoolOp::Subtraction => 1,
                    BoolOp::Intersection => 2,
                };
                (rec.a, rec.b) = (*a, *b);
                pool.extend(transform_numbers(a_placement));
                pool.extend(transform_numbers(b_placement));
            }
        }
        records.push(rec);
    }
    Ok((records, numbers))
}

impl DeviceGeometry {
    /// Flatten `tree`; refused when it is deeper than the device navigator holds.
    pub fn new(tree: &VolumeTree) -> Result<DeviceGeometry, LayoutError> {
        let depth = tree_depth(tree, tree.world);
        if depth > MAX_DEPTH {
            return Err(LayoutError::TooDeep { depth });
        }
        if tree.bvh.depth > MAX_BVH_DEPTH {
            return Err(LayoutError::BvhTooDeep { depth: tree.bvh.depth });
        }
        let (solids, pool) = flatten_solids(&tree.solids.solids)?;
        let mut g = DeviceGeometry {
            solids,
            pool,
            world: tree.world,
            depth,
            ..DeviceGeometry::default()
        };
        g.logical = tree
            .logical
            .iter()
            .map(|l| LogicalRecord {
                solid: l.solid,
                first_daughter: l.first_daughter,
                daughter_count: l.daughter_count,
                material: l.material,
            })
            .collect();
        g.placements = tree
            .placements
            .iter()
            .map(|p| PlacementRecord {
                transform: transform_numbers(&p.transform),
                bbox_min: [p.bbox.min.x, p.bbox.min.y, p.bbox.min.z],
                bbox_max: [p.bbox.max.x, p.bbox.max.y, p.bbox.max.z],
                logical: p.logical,
                copy: p.copy,
            })
            .collect();
        g.bvh_nodes = tree
            .bvh
            .nodes
            .iter()
            .map(|n| BvhNodeRecord {
                bbox_min: [n.bbox.min.x, n.bbox.min.y, n.bbox.min.z],
                bbox_max: [n.bbox.max.x, n.bbox.max.y, n.bbox.max.z],
                a: n.a,
                count: n.count,
                min_index: n.min_index,
                max_index: n.max_index,
            })
            .collect();
        g.bvh_items.clone_from(&tree.bvh.items);
        g.bvh_root.clone_from(&tree.bvh.root);
        Ok(g)
    }

    /// Bytes the geometry takes on the device.
    #[must_use]
    pub fn bytes(&self) -> usize {
        use std::mem::size_of;
        self.solids.len() * size_of::<SolidRecord>()
            + self.pool.len() * 8
            + self.logical.len() * size_of::<LogicalRecord>()
            + self.placements.len() * size_of::<PlacementRecord>()
            + self.bvh_nodes.len() * size_of::<BvhNodeRecord>()
            + (self.bvh_items.len() + self.bvh_root.len()) * 4
    }
}

const _: () = assert!(std::mem::size_of::<SolidRecord>() == 32);
const _: () = assert!(std::mem::size_of::<LogicalRecord>() == 16);
const _: () = assert!(std::mem::size_of::<PlacementRecord>() == 152);
const _: () = assert!(std::mem::size_of::<BvhNodeRecord>() == 64);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geo::shapes::{make_box, make_polyhedra, make_sphere, make_tube};
    use crate::geo::{Rot3, Solids, TreeBuilder, Vec3};

    #[test]
    fn records_hold_the_cpu_numbers() {
        let mut s = Solids::default();
        let world = s.push(make_box(100.0, 100.0, 100.0).unwrap());
        let tube = s.push(make_tube(1.0, 5.0, 10.0, 0.25, 1.5).unwrap());
        let hex = s.push(make_polyhedra(6, 0.0, std::f64::consts::TAU, &[(-5.0, 0.0, 3.0), (5.0, 0.0, 3.0)]).unwrap());
        let sph = s.push(make_sphere(1.0, 4.0, 0.0, std::f64::consts::TAU, 0.3, 1.0).unwrap());
        let t = Transform {
            rot: Rot3::about_z(0.3),
            translation: Vec3::new(1.0, 2.0, 3.0),
        };
        let un = s.push(Solid::Boolean {
            op: BoolOp::Subtraction,
            a: tube,
            b: hex,
            a_placement: Transform::IDENTITY,
            b_placement: t,
        });
        let mut b = TreeBuilder::with_solids(s);
        let w = b.add_volume("world", world, 0, vec![]);
        let l1 = b.add_volume("tube", un, 1, vec![]);
        let l2 = b.add_volume("ball", sph, 2, vec![]);
        b.place(w, l1, "tube_pv", 3, t);
        b.place(l1, l2, "ball_pv", 0, Transform::IDENTITY);
        let tree = b.build(w);
        let g = DeviceGeometry::new(&tree).unwrap();
        assert_eq!(g.depth, 2);
        assert_eq!(g.solids.len(), 5);
        // The tube: φ block (present, start 0.25, delta 1.5, cos/sin), then its polygon.
        let r = g.solids[1];
        assert_eq!((r.kind, r.count), (SOLID_REVOLVED, 4));
        let o = r.offset as usize;
        assert_eq!(&g.pool[o..o + 3], &[1.0, 0.25, 1.5]);
        assert_eq!(g.pool[o + 3], 0.25f64.cos());
        assert_eq!(g.pool[o + 6], 1.75f64.sin());
        // The polyhedra's six normals.
        let h = g.solids[2];
        assert_eq!((h.kind, h.aux), (SOLID_POLYHEDRA, 6));
        assert_eq!(g.pool[h.offset as usize], 0.0, "full circle");
        // The sphere's θ sines and cosines.
        let sp = g.solids[3];
        let o = sp.offset as usize + 7;
        assert_eq!(&g.pool[o..o + 4], &[1.0, 4.0, 0.3, 1.3]);
        assert_eq!(g.pool[o + 4], 0.3f64.sin());
        assert_eq!(g.pool[o + 7], 1.3f64.cos());
        // The boolean's second placement.
        let bo = g.solids[4];
        assert_eq!((bo.kind, bo.aux, bo.a, bo.b), (SOLID_BOOLEAN, 1, tube, hex));
        let o = bo.offset as usize + 12;
        assert_eq!(&g.pool[o + 9..o + 12], &[1.0, 2.0, 3.0]);
        assert_eq!(g.placements[0].transform[1], t.rot.r[0][1]);
        assert_eq!((g.placements[0].logical, g.placements[0].copy), (l1, 3));
        assert_eq!(g.logical[l1 as usize].daughter_count, 1);
    }

    #[test]
    fn too_deep_trees_are_refused() {
        let mut s = Solids::default();
        let boxes: Vec<u32> = (0..=MAX_DEPTH + 1)
            .map(|i| s.push(make_box(100.0 - i as f64, 100.0 - i as f64, 100.0 - i as f64).unwrap()))
            .collect();
        let mut b = TreeBuilder::with_solids(s);
        let vols: Vec<u32> = boxes.iter().map(|&id| b.add_volume("v", id, 0, vec![])).collect();
        for w in vols.windows(2) {
            b.place(w[0], w[1], "pv", 0, Transform::IDENTITY);
        }
        let tree = b.build(vols[0]);
        let e = DeviceGeometry::new(&tree).unwrap_err();
        assert_eq!(e, LayoutError::TooDeep { depth: MAX_DEPTH + 1 });
        assert!(e.to_string().contains("at most 16"), "{e}");
    }
}
