//! The per-level bounding-volume trees (`geo::bvh`) change the navigator's candidates, not its
//! answers: on generated detectors with hundreds to thousands of daughters in one level (boxes,
//! tubes, spheres and shells on a grid and jittered and rotated in their cells, containers with
//! their own crowded level inside), the navigator with the trees and the linear loop locate every
//! point in the same volume and give the same next step, boundary and safety bit for bit, and
//! walk every ray through the same volumes.

use warpdrive_em::geo::bvh::NO_BVH;
use warpdrive_em::geo::crowd::{self, Crowd, Layout};
use warpdrive_em::geo::gpu::trace_rays_with;
use warpdrive_em::geo::{zoo, Aabb, Navigator, Vec3, VolumeTree};

fn crowds() -> Vec<(&'static str, Crowd)> {
    vec![
        (
            "grid of 1000, containers of 27",
            Crowd {
                daughters: 1000,
                layout: Layout::Grid,
                nested: 27,
                seed: 1,
            },
        ),
        (
            "jittered 3000, containers of 64",
            Crowd {
                daughters: 3000,
                layout: Layout::Jittered,
                nested: 64,
                seed: 2,
            },
        ),
        (
            "jittered 343, no containers",
            Crowd {
                daughters: 343,
                layout: Layout::Jittered,
                nested: 0,
                seed: 3,
            },
        ),
    ]
}

fn levels_with_trees(tree: &VolumeTree) -> usize {
    tree.bvh.root.iter().filter(|&&r| r != NO_BVH).count()
}

/// Random points (in the hall's box, some in the world outside it) and directions: locate, next
/// step (unbounded and with a random step limit) and safety with and without the trees.
#[test]
fn the_trees_give_the_linear_loops_answers_at_random_points() {
    for (name, c) in crowds() {
        let g = crowd::build(&c).unwrap();
        let tree = &g.tree;
        assert!(
            levels_with_trees(tree) > usize::from(c.nested > 8),
            "{name}: the crowded levels have trees"
        );
        let (fast, slow) = (Navigator::new(tree), Navigator::linear(tree));
        let hall = tree.placements[tree.daughters(tree.world).start as usize].bbox;
        let grow = (hall.max - hall.min) * 0.05;
        let b = Aabb {
            min: hall.min - grow,
            max: hall.max + grow,
        };
        let n = 40_000;
        let (pts, dirs) = zoo::rays_in_box(&b, n, 11);
        let (mut in_daughters, mut entered, mut deep) = (0, 0, 0);
        for i in 0..n {
            let (p, d) = (pts[i], dirs[i]);
            let path = fast.locate(p);
            assert_eq!(path, slow.locate(p), "{name}: locate {p:?}");
            let Some(path) = path else { continue };
            in_daughters += usize::from(path.placements.len() >= 2);
            deep += usize::from(path.placements.len() >= 3);
            let max_step = if i % 3 == 0 { f64::INFINITY } else { 20.0 * (i % 7) as f64 / 7.0 };
            let (a, b) = (
                fast.find_next_step(&path, p, d, max_step),
                slow.find_next_step(&path, p, d, max_step),
            );
            assert_eq!(
                a.0.to_bits(),
                b.0.to_bits(),
                "{name}: next step from {p:?} along {d:?}: {a:?} vs {b:?}"
            );
            assert_eq!(a.1, b.1, "{name}: boundary from {p:?} along {d:?}");
            entered += usize::from(matches!(a.1, warpdrive_em::geo::Boundary::Enter(_)));
            let (sa, sb) = (fast.safety(&path, p), slow.safety(&path, p));
            assert_eq!(sa.to_bits(), sb.to_bits(), "{name}: safety at {p:?}: {sa} vs {sb}");
        }
        eprintln!(
            "{name}: {n} points, {in_daughters} in daughters ({deep} in a container's daughters), {entered} steps end entering a daughter"
        );
        assert!(
            in_daughters > n / 20 && entered > n / 5,
            "{name}: the points must exercise the daughters"
        );
        assert!(c.nested == 0 || deep > 0, "{name}: and the nested level");
    }
}

/// Whole walks (locate, safety, steps, crossings, relocation) of rays aimed at placed volumes.
#[test]
fn the_trees_walk_rays_through_the_same_volumes() {
    for (name, c) in crowds() {
        let g = crowd::build(&c).unwrap();
        let tree = &g.tree;
        let (p, d) = zoo::rays_at_placements(tree, 4000, 12);
        let max_steps = 256;
        let fast = trace_rays_with(&Navigator::new(tree), &p, &d, max_steps);
        let slow = trace_rays_with(&Navigator::linear(tree), &p, &d, max_steps);
        let mut crossings = 0;
        for i in 0..p.len() {
            assert_eq!(fast[i], slow[i], "{name}: ray {i} from {:?} along {:?}", p[i], d[i]);
            crossings += fast[i].steps.len();
        }
        eprintln!(
            "{name}: {} rays, {crossings} crossings, the same with and without the trees",
            p.len()
        );
        assert!(crossings > 4 * p.len(), "{name}: the rays cross daughters ({crossings})");
    }
}

/// Overlapping daughters (an error of the geometry, but they must not break the navigator): balls
/// every 1 mm along x overlap, and rotated slabs overlap and share their z faces. Locate keeps the
/// linear loop's first (least index) and safety its value, bit for bit. The next step may enter
/// either of two daughters entered at the same distance within a rounding error (the tree keeps the
/// least (distance, index), the linear loop may skip the lesser by its box's entry, which can lie an
/// ulp beyond the solid's distance): its distance is the linear loop's within 4 ulps and the daughter
/// it enters is really entered at that distance.
#[test]
fn overlapping_daughters_keep_the_first_and_the_distance() {
    use warpdrive_em::geo::shapes::{make_box, make_sphere};
    use warpdrive_em::geo::{Boundary, Rot3, Solids, Transform, TreeBuilder};
    let mut s = Solids::default();
    let w = s.push(make_box(100.0, 100.0, 100.0).unwrap());
    let ball = s.push(make_sphere(0.0, 1.0, 0.0, std::f64::consts::TAU, 0.0, std::f64::consts::PI).unwrap());
    let slab = s.push(make_box(1.0, 0.2, 0.2).unwrap());
    let mut b = TreeBuilder::with_solids(s);
    let lw = b.add_volume("w", w, 0, vec![]);
    let lb = b.add_volume("ball", ball, 1, vec![]);
    let ls = b.add_volume("slab", slab, 1, vec![]);
    for i in 0..200 {
        let x = 99.0 - i as f64;
        b.place(
            lw,
            lb,
            "b",
            i,
            Transform {
                translation: Vec3::new(x, 0.0, 0.0),
                ..Transform::IDENTITY
            },
        );
        b.place(
            lw,
            ls,
            "s",
            i,
            Transform {
                rot: Rot3::about_z(0.1 * f64::from(i)),
                translation: Vec3::new(x, 3.0, 0.0),
            },
        );
    }
    let tree = b.build(lw);
    let (fast, slow) = (Navigator::new(&tree), Navigator::linear(&tree));
    let region = Aabb {
        min: Vec3::new(-100.0, -1.5, -1.5),
        max: Vec3::new(100.0, 4.5, 1.5),
    };
    let din = |k: u32, p: Vec3, d: Vec3| {
        let pl = &tree.placements[k as usize];
        tree.solids.distance_to_in(
            tree.logical[pl.logical as usize].solid,
            pl.transform.to_local(p),
            pl.transform.dir_to_local(d),
        )
    };
    let ulps = |a: f64, b: f64| (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs();
    let n = 20_000;
    let (pts, dirs) = zoo::rays_in_box(&region, n, 3);
    let (mut in_daughters, mut other_daughter) = (0, 0);
    for (p, d) in pts.iter().zip(&dirs) {
        let path = fast.locate(*p);
        assert_eq!(path, slow.locate(*p), "locate {p:?}");
        let path = path.unwrap();
        in_daughters += usize::from(!path.placements.is_empty());
        assert_eq!(
            fast.safety(&path, *p).to_bits(),
            slow.safety(&path, *p).to_bits(),
            "safety at {p:?}"
        );
        let (a, b) = (fast.find_next_step(&path, *p, *d, 5.0), slow.find_next_step(&path, *p, *d, 5.0));
        if a == b {
            continue;
        }
        other_daughter += 1;
        let (Boundary::Enter(ka), Boundary::Enter(kb)) = (a.1, b.1) else {
            panic!("from {p:?} along {d:?}: {a:?} vs {b:?}");
        };
        assert!(ulps(a.0, b.0) <= 4, "from {p:?} along {d:?}: {a:?} vs {b:?}");
        assert_eq!(din(ka, *p, *d).to_bits(), a.0.to_bits());
        assert_eq!(din(kb, *p, *d).to_bits(), b.0.to_bits());
    }
    eprintln!("{n} points, {in_daughters} in overlapping daughters; {other_daughter} next steps enter the other of two daughters entered within 4 ulps");
    assert!(in_daughters > n / 20);
    assert!(other_daughter < n / 100, "{other_daughter}");
}
