//! A straight ray walked through the volume tree from boundary to boundary: the navigator's
//! whole cycle (locate, safety, next step, crossing, relocation) in one function, so the CPU and
//! the GPU (`trace_ray` in `kernels/geo/trace.cu`) can be compared ray by ray.

use super::navigator::Navigator;
use super::vec3::Vec3;

/// The volume code of a point outside the world.
pub const OUTSIDE: i32 = -2;
/// The volume code of the world volume itself.
pub const WORLD: i32 = -1;

/// One ray's walk.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    /// Placement the ray starts in ([`WORLD`], [`OUTSIDE`] or a placement index).
    pub start: i32,
    /// The navigator's safety at the start (0 outside the world).
    pub safety: f64,
    /// Per step: the distance moved and the volume code after the step.
    pub steps: Vec<(f64, i32)>,
    /// Where the walk ended.
    pub end: Vec3,
}

fn code(top: Option<u32>) -> i32 {
    top.map_or(WORLD, |k| k as i32)
}

/// Walk the ray from `p` along the unit `d` until it leaves the world or `max_steps` steps
/// were made (unbounded steps: each one ends on a boundary).
#[must_use]
pub fn trace_ray(nav: &Navigator, p: Vec3, d: Vec3, max_steps: usize) -> Trace {
    let Some(mut path) = nav.locate(p) else {
        return Trace {
            start: OUTSIDE,
            end: p,
            ..Trace::default()
        };
    };
    let mut t = Trace {
        start: code(path.top()),
        safety: nav.safety(&path, p),
        steps: Vec::with_capacity(max_steps),
        end: p,
    };
    let mut q = p;
    for _ in 0..max_steps {
        let (moved, inside) = nav.step(&mut path, &mut q, d, f64::INFINITY);
        t.steps.push((moved, if inside { code(path.top()) } else { OUTSIDE }));
        if !inside {
            break;
        }
    }
    t.end = q;
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geo::shapes::make_box;
    use crate::geo::{Solids, Transform, TreeBuilder};

    #[test]
    fn a_ray_crosses_a_box_in_a_box() {
        let mut s = Solids::default();
        let (w, inner) = (
            s.push(make_box(10.0, 10.0, 10.0).unwrap()),
            s.push(make_box(2.0, 2.0, 2.0).unwrap()),
        );
        let mut b = TreeBuilder::with_solids(s);
        let (lw, li) = (b.add_volume("w", w, 0, vec![]), b.add_volume("i", inner, 1, vec![]));
        b.place(lw, li, "i_pv", 0, Transform::IDENTITY);
        let tree = b.build(lw);
        let nav = Navigator::new(&tree);
        let t = trace_ray(&nav, Vec3::new(0.0, 0.0, -5.0), Vec3::new(0.0, 0.0, 1.0), 10);
        assert_eq!(t.start, WORLD);
        assert!((t.safety - 3.0).abs() < 1e-9, "{}", t.safety);
        let codes: Vec<i32> = t.steps.iter().map(|s| s.1).collect();
        assert_eq!(codes, vec![0, WORLD, OUTSIDE]);
        let total: f64 = t.steps.iter().map(|s| s.0).sum();
        assert!((total - 15.0).abs() < 1e-8, "{total}");
        assert!((t.end.z - 10.0).abs() < 1e-8);
        assert_eq!(
            trace_ray(&nav, Vec3::new(0.0, 0.0, 50.0), Vec3::new(0.0, 0.0, 1.0), 10).start,
            OUTSIDE
        );
    }
}
