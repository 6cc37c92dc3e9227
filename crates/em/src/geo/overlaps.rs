//! Overlap check (the idea of Geant4's `CheckOverlaps`, implemented here from the geometry):
//! points are sampled on the surface of every placed daughter and tested against its mother
//! (the point must not lie outside it) and against every sibling (the point must not lie inside
//! one). Depths come from the solids' safeties, which never overestimate: a reported overlap is
//! at least that deep, and touching volumes (depth 0) are never reported.
//!
//! Surface points: a random point of the daughter's bounding box and a random direction; the
//! ray's first boundary crossing (distance to out from inside, to in from outside) is a point of
//! the surface. Siblings are searched by brute force with bounding boxes, as the navigator does.

use super::solid::Solids;
use super::vec3::Vec3;
use super::volumes::VolumeTree;
use warpdrive_core::RandomStream;

/// One overlap found.
#[derive(Clone, Debug, PartialEq)]
pub struct Overlap {
    /// The mother's logical volume.
    pub mother: u32,
    /// The placement whose surface point is at fault.
    pub placement: u32,
    /// The sibling placement it enters; `None`: it sticks out of the mother.
    pub other: Option<u32>,
    /// The point, in the mother's frame [mm].
    pub point: Vec3,
    /// A lower bound of the overlap's depth [mm].
    pub depth: f64,
}

impl Overlap {
    /// "placement 'a' (copy 1) in 'World' overlaps 'b' (copy 0) by ≥ 1.2 mm at (x, y, z) mm".
    #[must_use]
    pub fn describe(&self, tree: &VolumeTree) -> String {
        let pl = |k: u32| {
            let p = &tree.placements[k as usize];
            format!("'{}' (copy {}, volume '{}')", p.name, p.copy, tree.logical[p.logical as usize].name)
        };
        let what = match self.other {
            Some(o) => format!("overlaps {}", pl(o)),
            None => "sticks out of its mother".to_string(),
        };
        format!(
            "placement {} in '{}' {what} by at least {:.3e} mm at ({:.6}, {:.6}, {:.6}) mm (mother's frame)",
            pl(self.placement),
            tree.logical[self.mother as usize].name,
            self.depth,
            self.point.x,
            self.point.y,
            self.point.z
        )
    }
}

/// Philox tag of the overlap check's sampling (one stream per placement, reproducible).
pub const TAG_OVERLAPS: u32 = 0x454d_0003;

/// A point on the surface of `solid` (its own frame), from `tries` random rays at most.
fn surface_point(solids: &Solids, solid: u32, rng: &mut RandomStream) -> Option<Vec3> {
    let b = solids.bounding_box(solid);
    for _ in 0..64 {
        let q = b.min
            + Vec3::new(
                (b.max.x - b.min.x) * rng.uniform_f64(),
                (b.max.y - b.min.y) * rng.uniform_f64(),
                (b.max.z - b.min.z) * rng.uniform_f64(),
            );
        let cz = 2.0 * rng.uniform_f64() - 1.0;
        let ph = std::f64::consts::TAU * rng.uniform_f64();
        let s = (1.0 - cz * cz).sqrt();
        let d = Vec3::new(s * ph.cos(), s * ph.sin(), cz);
        let t = if solids.contains(solid, q) {
            solids.distance_to_out(solid, q, d)
        } else {
            solids.distance_to_in(solid, q, d)
        };
        if t.is_finite() {
            return Some(q.along(d, t));
        }
    }
    None
}

/// Check every placement with `points` surface points; overlaps deeper than `tolerance` [mm]
/// are returned (at most one per pair of placements, the deepest found).
#[must_use]
pub fn check_overlaps(tree: &VolumeTree, points: usize, tolerance: f64) -> Vec<Overlap> {
    let solids = &tree.solids;
    let mut found: Vec<Overlap> = Vec::new();
    let mut record = |o: Overlap| match found.iter_mut().find(|f| f.placement == o.placement && f.other == o.other) {
        Some(f) if f.depth < o.depth => *f = o,
        Some(_) => {}
        None => found.push(o),
    };
    for (mother, lv) in tree.logical.iter().enumerate() {
        let range = tree.daughters(mother as u32);
        for k in range.clone() {
            let pl = &tree.placements[k as usize];
            let solid = tree.logical[pl.logical as usize].solid;
            let mut rng = RandomStream::new(0x5EED, TAG_OVERLAPS, u64::from(k));
            for _ in 0..points {
                let Some(s) = surface_point(solids, solid, &mut rng) else { break };
                let m = pl.transform.to_mother(s);
                if !solids.contains(lv.solid, m) {
                    let depth = solids.safety_to_in(lv.solid, m);
                    if depth > tolerance {
                        record(Overlap {
                            mother: mother as u32,
                            placement: k,
                            other: None,
                            point: m,
                            depth,
                        });
                    }
                }
                for j in range.clone() {
                    if j == k {
                        continue;
                    }
                    let other = &tree.placements[j as usize];
                    if !other.bbox.contains(m) {
                        continue;
                    }
                    let osolid = tree.logical[other.logical as usize].solid;
                    let depth = solids.safety_to_out(osolid, other.transform.to_local(m));
                    if depth > tolerance {
                        record(Overlap {
                            mother: mother as u32,
                            placement: k,
                            other: Some(j),
                            point: m,
                            depth,
                        });
                    }
                }
            }
        }
    }
    found
}
