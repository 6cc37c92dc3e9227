//! One solid of every kind and variant the navigator handles (φ segments below and above π,
//! inner radii, θ ranges, apexes, steps, the three booleans of a box and a rotated tube): the
//! set the brute-force ray tests (`tests/geo_solids.rs`) and the GPU check (`gpu-check`, em)
//! both run.

use super::shapes::*;
use super::solid::{BoolOp, Solid, SolidId, Solids};
use super::vec3::{Rot3, Transform, Vec3};
use std::f64::consts::PI;

/// A named solid in its own arena.
pub struct Specimen {
    pub name: &'static str,
    pub solids: Solids,
    pub id: SolidId,
}

fn one(name: &'static str, s: Solid) -> Specimen {
    let mut solids = Solids::default();
    let id = solids.push(s);
    Specimen { name, solids, id }
}

/// The z planes of the stepped polycone (z, rmin, rmax).
pub const POLYCONE_PLANES: [(f64, f64, f64); 5] = [
    (-50.0, 0.0, 20.0),
    (-10.0, 5.0, 40.0),
    (-10.0, 10.0, 60.0),
    (20.0, 15.0, 60.0),
    (60.0, 0.0, 10.0),
];

fn boolean(name: &'static str, op: BoolOp) -> Specimen {
    let mut solids = Solids::default();
    let a = solids.push(make_box(30.0, 30.0, 30.0).expect("valid box"));
    let b = solids.push(make_tube(0.0, 15.0, 45.0, 0.0, 2.0 * PI).expect("valid tube"));
    let rot = Rot3::about_x(0.6).then_after(&Rot3::about_z(0.3));
    let id = solids.push(Solid::Boolean {
        op,
        a,
        b,
        a_placement: Transform::IDENTITY,
        b_placement: Transform {
            rot,
            translation: Vec3::new(10.0, 25.0, -5.0),
        },
    });
    Specimen { name, solids, id }
}

/// Every specimen, in a fixed order.
#[must_use]
pub fn specimens() -> Vec<Specimen> {
    let ok = |r: Result<Solid, super::shapes::ShapeError>| r.expect("valid specimen");
    vec![
        one("box", ok(make_box(10.0, 20.0, 30.0))),
        one("tube (rmin, φ segment > π)", ok(make_tube(20.0, 50.0, 40.0, 0.3, 4.5))),
        one("tube (solid, φ segment < π)", ok(make_tube(0.0, 50.0, 40.0, -0.5, 1.2))),
        one("cone (rmin, φ segment)", ok(make_cone(10.0, 30.0, 5.0, 60.0, 40.0, 0.2, 5.0))),
        one("cone (apex)", ok(make_cone(0.0, 0.0, 0.0, 50.0, 30.0, 0.0, 2.0 * PI))),
        one(
            "polycone (steps, rmin, φ segment)",
            ok(make_revolved_zplanes(&POLYCONE_PLANES, 0.5, 5.0)),
        ),
        one(
            "generic polycone",
            ok(make_revolved_contour(
                &[(10.0, -30.0), (50.0, -20.0), (20.0, 0.0), (50.0, 30.0), (5.0, 30.0)],
                0.0,
                2.0 * PI,
            )),
        ),
        one("sphere shell (φ and θ ranges)", ok(make_sphere(20.0, 50.0, 0.3, 4.0, 0.4, 1.9))),
        one("full sphere", ok(make_sphere(0.0, 50.0, 0.0, 2.0 * PI, 0.0, PI))),
        one("trd", ok(make_trd(30.0, 10.0, 20.0, 40.0, 25.0))),
        one("trap", ok(make_trap(30.0, 0.2, 0.7, 20.0, 15.0, 25.0, 0.1, 30.0, 22.5, 37.5, 0.1))),
        one("para", ok(make_para(20.0, 15.0, 25.0, 0.3, 0.25, 1.0))),
        one(
            "polyhedra (6 sides, rmin)",
            ok(make_polyhedra(
                6,
                0.2,
                2.0 * PI,
                &[(-40.0, 10.0, 30.0), (0.0, 15.0, 50.0), (40.0, 10.0, 30.0)],
            )),
        ),
        one(
            "polyhedra (3 sides, φ segment)",
            ok(make_polyhedra(3, 0.0, 4.0, &[(-30.0, 0.0, 40.0), (30.0, 0.0, 40.0)])),
        ),
        boolean("union (box ∪ rotated tube)", BoolOp::Union),
        boolean("subtraction (box − rotated tube)", BoolOp::Subtraction),
        boolean("intersection (box ∩ rotated tube)", BoolOp::Intersection),
    ]
}

/// An isotropic unit vector and a point uniform in `b`, from one random stream.
fn ray_in_box(rng: &mut warpdrive_core::RandomStream, b: &super::Aabb) -> (Vec3, Vec3) {
    let u = |rng: &mut warpdrive_core::RandomStream, lo: f64, hi: f64| lo + (hi - lo) * rng.uniform_f64();
    let p = Vec3::new(u(rng, b.min.x, b.max.x), u(rng, b.min.y, b.max.y), u(rng, b.min.z, b.max.z));
    let cz = 2.0 * rng.uniform_f64() - 1.0;
    let phi = 2.0 * PI * rng.uniform_f64();
    let s = (1.0 - cz * cz).sqrt();
    (p, Vec3::new(s * phi.cos(), s * phi.sin(), cz))
}

/// Philox tag of the test rays.
const TAG_RAYS: u32 = 0x5241_5953;

/// `n` rays from points uniform in `b` in isotropic directions (ray i from stream (seed, i)).
#[must_use]
pub fn rays_in_box(b: &super::Aabb, n: usize, seed: u64) -> (Vec<Vec3>, Vec<Vec3>) {
    (0..n as u64)
        .map(|i| ray_in_box(&mut warpdrive_core::RandomStream::new(seed, TAG_RAYS, i), b))
        .unzip()
}

/// `n` rays through a volume tree: each starts at a point uniform in the world's bounding box
/// (shrunk to 90 %) and is aimed at a point uniform in the bounding box of a placement drawn at
/// random, so that most rays cross placed volumes whatever their size.
#[must_use]
pub fn rays_at_placements(tree: &super::VolumeTree, n: usize, seed: u64) -> (Vec<Vec3>, Vec<Vec3>) {
    let w = tree.solids.bounding_box(tree.logical[tree.world as usize].solid);
    let shrink = (w.max - w.min) * 0.05;
    let start_box = super::Aabb {
        min: w.min + shrink,
        max: w.max - shrink,
    };
    (0..n as u64)
        .map(|i| {
            let mut rng = warpdrive_core::RandomStream::new(seed, TAG_RAYS + 1, i);
            let (p, d) = ray_in_box(&mut rng, &start_box);
            if tree.placements.is_empty() {
                return (p, d);
            }
            let k = ((rng.uniform_f64() * tree.placements.len() as f64) as usize).min(tree.placements.len() - 1);
            let (target, _) = ray_in_box(&mut rng, &tree.placements[k].bbox);
            let v = target - p;
            (p, if v.norm() > 0.0 { v.unit() } else { d })
        })
        .unzip()
}
