//! The volume tree in flat arrays: logical volumes (a solid, a material, a contiguous range of
//! daughter placements) and placements (a logical volume, a copy number, a transform, the
//! placed solid's bounding box in the mother's frame), and the per-level bounding-volume
//! hierarchies over those boxes ([`super::bvh`]). Indices, no pointers: the layout a CUDA twin
//! can copy as it is.

use super::bvh::Bvh;
use super::solid::{Aabb, SolidId, Solids};
use super::vec3::Transform;

/// A logical volume.
#[derive(Clone, Debug, PartialEq)]
pub struct LogicalVolume {
    pub name: String,
    pub solid: SolidId,
    /// Index into the geometry's material list.
    pub material: u32,
    /// Daughters: `placements[first_daughter .. first_daughter + daughter_count]`.
    pub first_daughter: u32,
    pub daughter_count: u32,
    /// GDML `<auxiliary auxtype auxvalue>` pairs (e.g. `SensDet`).
    pub auxiliary: Vec<(String, String)>,
}

/// A placement of a logical volume inside its mother.
#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    pub name: String,
    pub logical: u32,
    pub copy: i32,
    /// Daughter frame → mother frame.
    pub transform: Transform,
    /// The placed solid's bounding box in the mother's frame.
    pub bbox: Aabb,
}

/// A whole geometry: solids, volumes, placements, the world volume.
#[derive(Clone, Debug, PartialEq)]
pub struct VolumeTree {
    pub solids: Solids,
    pub logical: Vec<LogicalVolume>,
    pub placements: Vec<Placement>,
    /// The world's logical volume.
    pub world: u32,
    /// The per-level bounding-volume hierarchies over the daughters' boxes (built with the
    /// tree; [`super::bvh`]).
    pub bvh: Bvh,
}

/// A volume as added to the builder: name, solid, material, auxiliary pairs.
type VolumeEntry = (String, SolidId, u32, Vec<(String, String)>);

/// Builds a [`VolumeTree`]: volumes added with their daughters listed as (logical, name, copy,
/// transform), then flattened so that each volume's daughters are contiguous.
#[derive(Default)]
pub struct TreeBuilder {
    pub solids: Solids,
    volumes: Vec<VolumeEntry>,
    daughters: Vec<Vec<(u32, String, i32, Transform)>>,
}

impl TreeBuilder {
    /// A builder over these solids.
    #[must_use]
    pub fn with_solids(solids: Solids) -> TreeBuilder {
        TreeBuilder {
            solids,
            ..TreeBuilder::default()
        }
    }

    /// Add a logical volume without daughters; its index.
    pub fn add_volume(&mut self, name: &str, solid: SolidId, material: u32, auxiliary: Vec<(String, String)>) -> u32 {
        self.volumes.push((name.to_string(), solid, material, auxiliary));
        self.daughters.push(Vec::new());
        (self.volumes.len() - 1) as u32
    }

    /// Place `logical` inside `mother`.
    pub fn place(&mut self, mother: u32, logical: u32, name: &str, copy: i32, transform: Transform) {
        self.daughters[mother as usize].push((logical, name.to_string(), copy, transform));
    }

    /// The flat tree with `world` as its root.
    #[must_use]
    pub fn build(self, world: u32) -> VolumeTree {
        let mut logical = Vec::with_capacity(self.volumes.len());
        let mut placements = Vec::new();
        for ((name, solid, material, auxiliary), ds) in self.volumes.into_iter().zip(&self.daughters) {
            let first = placements.len() as u32;
            for (l, pname, copy, t) in ds {
                placements.push(Placement {
                    name: pname.clone(),
                    logical: *l,
                    copy: *copy,
                    transform: *t,
                    bbox: Aabb {
                        min: super::vec3::Vec3::ZERO,
                        max: super::vec3::Vec3::ZERO,
                    },
                });
            }
            logical.push(LogicalVolume {
                name,
                solid,
                material,
                first_daughter: first,
                daughter_count: ds.len() as u32,
                auxiliary,
            });
        }
        for p in &mut placements {
            let solid = logical[p.logical as usize].solid;
            p.bbox = self.solids.bounding_box(solid).transformed(&p.transform);
        }
        let levels: Vec<(u32, u32)> = logical.iter().map(|l| (l.first_daughter, l.daughter_count)).collect();
        let bvh = Bvh::build(&levels, &placements);
        VolumeTree {
            solids: self.solids,
            logical,
            placements,
            world,
            bvh,
        }
    }
}

impl VolumeTree {
    /// The daughters of a logical volume, as placement indices.
    #[must_use]
    pub fn daughters(&self, logical: u32) -> std::ops::Range<u32> {
        let l = &self.logical[logical as usize];
        l.first_daughter..l.first_daughter + l.daughter_count
    }
}
