//! Every solid's navigation primitives against brute force (issue #31): 10⁶ random rays per
//! solid type (fixed seed), each started at a random point of a box 20 % larger than the
//! solid's bounding box in a random direction. The reference distance to the first boundary is
//! found with the solid's strict `contains` alone — marching through the bounding box in steps
//! of 1/128 of its diagonal until the membership flips, then bisecting to 1e-13 mm — an
//! algorithm that shares nothing with the solid's root finding. Checked per ray:
//! * `distance_to_out` (start inside) / `distance_to_in` (start outside) equals the reference
//!   within 1e-9 mm; where the solid's answer is earlier (a chord thinner than the march step),
//!   the membership must really flip within ±1e-8 mm of it, and the reference is bisected there
//!   (such rays are counted and reported, and must stay below 1 %);
//! * the safety (to out / to in) never exceeds the reference distance, and 8 random points at
//!   that distance from the start are on the start's side;
//! * `inside()` agrees with `contains` away from the surface.

use rayon::prelude::*;
use std::f64::consts::PI;
use warpdrive_core::RandomStream;
use warpdrive_em::geo::shapes::*;
use warpdrive_em::geo::zoo;
use warpdrive_em::geo::{Aabb, Inside, Solid, SolidId, Solids, Vec3};

/// Philox tag of this test's random numbers: one stream per (solid's seed, ray index).
const TAG_TEST: u32 = 0x534f_4c44;

/// An isotropic unit vector.
fn direction(rng: &mut RandomStream) -> Vec3 {
    let cz = 2.0 * rng.uniform_f64() - 1.0;
    let phi = 2.0 * PI * rng.uniform_f64();
    let s = (1.0 - cz * cz).sqrt();
    Vec3::new(s * phi.cos(), s * phi.sin(), cz)
}

const RAYS: u64 = 1_000_000;
const TOLERANCE: f64 = 1e-9;

/// The reference distance along the ray to where `contains` flips, by marching and bisection;
/// ∞ if it never flips. The march covers the ray's stretch inside `b`, the solid's bounding box
/// grown by 1e-6 of its size (no point outside it can be inside the solid).
fn reference(s: &Solids, id: SolidId, b: &Aabb, p: Vec3, d: Vec3, h: f64) -> f64 {
    let start = s.contains(id, p);
    let (mut t0, mut t1) = (0.0f64, f64::INFINITY);
    for (q, v, lo, hi) in [
        (p.x, d.x, b.min.x, b.max.x),
        (p.y, d.y, b.min.y, b.max.y),
        (p.z, d.z, b.min.z, b.max.z),
    ] {
        if v == 0.0 {
            if q < lo || q > hi {
                return f64::INFINITY;
            }
        } else {
            let (a, c) = ((lo - q) / v, (hi - q) / v);
            t0 = t0.max(a.min(c));
            t1 = t1.min(a.max(c));
        }
    }
    if t0 > t1 {
        return f64::INFINITY;
    }
    let mut prev = t0;
    loop {
        let t = (prev + h).min(t1);
        if s.contains(id, p.along(d, t)) != start {
            let (mut lo, mut hi) = (prev, t);
            while hi - lo > 1e-13 {
                let mid = 0.5 * (lo + hi);
                if s.contains(id, p.along(d, mid)) == start {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            return 0.5 * (lo + hi);
        }
        if t >= t1 {
            return f64::INFINITY;
        }
        prev = t;
    }
}

#[derive(Default, Debug, Clone, Copy)]
struct Stats {
    rays: u64,
    inside_starts: u64,
    hits: u64,
    max_diff: f64,
    bad: u64,
    thin: u64,
    safety_over: u64,
    inside_mismatch: u64,
}

impl Stats {
    fn merge(mut self, o: Stats) -> Stats {
        self.rays += o.rays;
        self.inside_starts += o.inside_starts;
        self.hits += o.hits;
        self.max_diff = self.max_diff.max(o.max_diff);
        self.bad += o.bad;
        self.thin += o.thin;
        self.safety_over += o.safety_over;
        self.inside_mismatch += o.inside_mismatch;
        self
    }
}

fn check_ray(s: &Solids, id: SolidId, e: &Aabb, b: &Aabb, h: f64, seed: u64, ray: u64) -> Stats {
    let mut rng = RandomStream::new(seed, TAG_TEST, ray);
    let size = e.max - e.min;
    let p = e.min + Vec3::new(size.x * rng.uniform_f64(), size.y * rng.uniform_f64(), size.z * rng.uniform_f64());
    let d = direction(&mut rng);
    let mut st = Stats {
        rays: 1,
        ..Stats::default()
    };
    let start = s.contains(id, p);
    st.inside_starts = u64::from(start);
    let ours = if start {
        s.distance_to_out(id, p, d)
    } else {
        s.distance_to_in(id, p, d)
    };
    let truth = reference(s, id, b, p, d, h);
    if truth.is_finite() {
        st.hits = 1;
    }
    let mut diff = if ours == truth { 0.0 } else { (ours - truth).abs() };
    if (diff.is_nan() || diff > TOLERANCE) && ours < truth {
        // The solid found an earlier crossing the march stepped over (a chord thinner than the
        // step): if the membership really flips within ±1e-8 mm of it, bisect there for the
        // reference instead.
        let (mut lo, mut hi) = ((ours - 1e-8).max(0.0), ours + 1e-8);
        if s.contains(id, p.along(d, lo)) == start && s.contains(id, p.along(d, hi)) != start {
            while hi - lo > 1e-13 {
                let mid = 0.5 * (lo + hi);
                if s.contains(id, p.along(d, mid)) == start {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            st.thin = 1;
            diff = (ours - 0.5 * (lo + hi)).abs();
        }
    }
    if diff.is_nan() || diff > TOLERANCE {
        st.bad = 1;
        if std::env::var_os("GEO_DEBUG").is_some() {
            eprintln!("p {p:?} d {d:?} start {start} ours {ours} truth {truth}");
        }
    } else {
        st.max_diff = diff;
    }
    let safety = if start { s.safety_to_out(id, p) } else { s.safety_to_in(id, p) };
    if safety > truth.min(ours) + TOLERANCE {
        st.safety_over = 1;
    }
    // Stronger: the whole ball of that radius is on the start's side (8 random points on its
    // surface, shrunk by the surface tolerance).
    let r = (safety - TOLERANCE).max(0.0);
    if r > 0.0 && (0..8).any(|_| s.contains(id, p.along(direction(&mut rng), r)) != start) {
        st.safety_over = 1;
    }
    match s.inside(id, p) {
        Inside::Inside if !start => st.inside_mismatch = 1,
        Inside::Outside if start => st.inside_mismatch = 1,
        _ => {}
    }
    st
}

fn check_solid(name: &str, s: &Solids, id: SolidId, seed: u64) {
    let b = s.bounding_box(id);
    let grow = (b.max - b.min) * 0.2;
    let e = Aabb {
        min: b.min - grow,
        max: b.max + grow,
    };
    let h = (b.max - b.min).norm() / 128.0;
    let pad = (b.max - b.min) * 1e-6;
    let bb = Aabb {
        min: b.min - pad,
        max: b.max + pad,
    };
    let st = (0..RAYS)
        .into_par_iter()
        .map(|i| check_ray(s, id, &e, &bb, h, seed, i))
        .reduce(Stats::default, Stats::merge);
    eprintln!(
        "{name}: {} rays ({} from inside, {} crossing), max |distance − brute force| = {:.2e} mm, {} thin chords confirmed, {} wrong, {} safeties too large, {} inside() mismatches",
        st.rays, st.inside_starts, st.hits, st.max_diff, st.thin, st.bad, st.safety_over, st.inside_mismatch
    );
    assert_eq!(st.bad, 0, "{name}: distances off the brute force by more than {TOLERANCE} mm");
    assert!(st.max_diff <= TOLERANCE, "{name}");
    assert_eq!(st.safety_over, 0, "{name}: safety larger than the distance");
    assert_eq!(st.inside_mismatch, 0, "{name}: inside() disagrees with contains");
    assert!(
        st.inside_starts > RAYS / 50 && st.hits > RAYS / 10,
        "{name}: the rays must exercise the solid"
    );
    // Chords thinner than the march step are rare (rays clipping an edge or a corner): a share
    // above 1 % would mean the reference missed structure.
    assert!(st.thin * 100 < st.rays, "{name}: too many thin chords ({})", st.thin);
}

/// Run the shared specimen `name` (geo::zoo) with `seed`.
fn specimen(name: &str, seed: u64) {
    let s = zoo::specimens()
        .into_iter()
        .find(|s| s.name == name)
        .expect("a specimen of that name");
    check_solid(s.name, &s.solids, s.id, seed);
}

#[test]
fn box_rays() {
    specimen("box", 1);
}

#[test]
fn tube_rays() {
    specimen("tube (rmin, φ segment > π)", 2);
    specimen("tube (solid, φ segment < π)", 3);
}

#[test]
fn cone_rays() {
    specimen("cone (rmin, φ segment)", 4);
    specimen("cone (apex)", 5);
}

#[test]
fn polycone_rays() {
    specimen("polycone (steps, rmin, φ segment)", 6);
    // The same z planes from the top down make the same solid.
    let rev: Vec<_> = zoo::POLYCONE_PLANES.iter().rev().copied().collect();
    assert_eq!(
        make_revolved_zplanes(&rev, 0.5, 5.0).unwrap(),
        make_revolved_zplanes(&zoo::POLYCONE_PLANES, 0.5, 5.0).unwrap()
    );
    assert!(make_revolved_zplanes(&[(0.0, 0.0, 1.0), (5.0, 0.0, 1.0), (2.0, 0.0, 1.0)], 0.0, 1.0).is_err());
    specimen("generic polycone", 7);
}

#[test]
fn sphere_rays() {
    specimen("sphere shell (φ and θ ranges)", 8);
    specimen("full sphere", 9);
}

#[test]
fn trd_trap_para_rays() {
    specimen("trd", 10);
    specimen("trap", 11);
    specimen("para", 12);
}

#[test]
fn polyhedra_rays() {
    specimen("polyhedra (6 sides, rmin)", 13);
    specimen("polyhedra (3 sides, φ segment)", 14);
}

#[test]
fn boolean_rays() {
    specimen("union (box ∪ rotated tube)", 15);
    specimen("subtraction (box − rotated tube)", 16);
    specimen("intersection (box ∩ rotated tube)", 17);
}

#[test]
fn every_specimen_is_tested() {
    assert_eq!(zoo::specimens().len(), 17, "a new specimen needs a test above (and a seed)");
}

fn one(s: Solid) -> (Solids, SolidId) {
    let mut all = Solids::default();
    let id = all.push(s);
    (all, id)
}

/// Known answers, worked by hand.
#[test]
fn hand_worked_distances() {
    let (s, id) = one(make_box(10.0, 20.0, 30.0).unwrap());
    let x = Vec3::new(1.0, 0.0, 0.0);
    assert_eq!(s.distance_to_in(id, Vec3::new(-25.0, 0.0, 0.0), x), 15.0);
    assert_eq!(s.distance_to_out(id, Vec3::new(-5.0, 0.0, 0.0), x), 15.0);
    assert_eq!(s.distance_to_in(id, Vec3::new(-25.0, 0.0, 0.0), -x), f64::INFINITY);
    assert_eq!(s.safety_to_in(id, Vec3::new(13.0, 24.0, 0.0)), 5.0);
    assert_eq!(s.safety_to_out(id, Vec3::new(0.0, 15.0, 0.0)), 5.0);
    assert_eq!(s.inside(id, Vec3::new(10.0, 0.0, 0.0)), Inside::Surface);
    // A tube of rmin 20, rmax 50: along x from the axis the ray is in the hole first.
    let (s, id) = one(make_tube(20.0, 50.0, 40.0, 0.0, 2.0 * PI).unwrap());
    assert!((s.distance_to_in(id, Vec3::ZERO, x) - 20.0).abs() < 1e-12);
    assert!((s.distance_to_out(id, Vec3::new(30.0, 0.0, 0.0), x) - 20.0).abs() < 1e-12);
    assert!((s.distance_to_out(id, Vec3::new(30.0, 0.0, 0.0), -x) - 10.0).abs() < 1e-12);
    // A sphere shell's hole.
    let (s, id) = one(make_sphere(10.0, 20.0, 0.0, 2.0 * PI, 0.0, PI).unwrap());
    assert!((s.distance_to_in(id, Vec3::new(-30.0, 0.0, 0.0), x) - 10.0).abs() < 1e-12);
    assert!((s.distance_to_out(id, Vec3::new(-15.0, 0.0, 0.0), x) - 5.0).abs() < 1e-12);
    assert!(s.inside(id, Vec3::ZERO) == Inside::Outside);
    // A hexagonal prism of apothem 10: along a side normal the face is 10 away, to a corner 10/cos 30°.
    let (s, id) = one(make_polyhedra(6, 0.0, 2.0 * PI, &[(-5.0, 0.0, 10.0), (5.0, 0.0, 10.0)]).unwrap());
    let n = Vec3::new((PI / 6.0).cos(), (PI / 6.0).sin(), 0.0);
    assert!((s.distance_to_out(id, Vec3::ZERO, n) - 10.0).abs() < 1e-12);
    assert!((s.distance_to_out(id, Vec3::ZERO, x) - 10.0 / (PI / 6.0).cos()).abs() < 1e-12);
}
