//! Constructors of the solids from the parameters Geant4 users know (half-lengths here; the
//! GDML reader halves GDML's full lengths). Each checks its parameters; an error names the
//! parameter (as GDML spells it) and says what is wrong.

use super::solid::{Convex, PhiSegment, Polygon, Sides, Solid};
use super::vec3::Vec3;
use std::f64::consts::{PI, TAU};

/// A parameter error: (GDML attribute, message).
pub type ShapeError = (&'static str, String);

fn positive(name: &'static str, v: f64) -> Result<f64, ShapeError> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err((name, format!("must be positive, found {v}")))
    }
}

fn non_negative(name: &'static str, v: f64) -> Result<f64, ShapeError> {
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err((name, format!("must be ≥ 0, found {v}")))
    }
}

fn phi(start: f64, delta: f64) -> Result<Option<PhiSegment>, ShapeError> {
    if !start.is_finite() {
        return Err(("startphi", format!("must be finite, found {start}")));
    }
    if !(delta.is_finite() && delta > 0.0) {
        return Err(("deltaphi", format!("must be positive, found {delta}")));
    }
    Ok(PhiSegment::new(start, delta.min(TAU)))
}

/// A box of half-lengths.
pub fn make_box(hx: f64, hy: f64, hz: f64) -> Result<Solid, ShapeError> {
    Ok(Solid::Box {
        half: Vec3::new(positive("x", hx)?, positive("y", hy)?, positive("z", hz)?),
    })
}

/// A cone section (G4Cons): radii at −dz and +dz, φ segment. A tube is the cone with equal radii.
pub fn make_cone(rmin1: f64, rmax1: f64, rmin2: f64, rmax2: f64, dz: f64, start: f64, delta: f64) -> Result<Solid, ShapeError> {
    let dz = positive("z", dz)?;
    non_negative("rmin1", rmin1)?;
    non_negative("rmin2", rmin2)?;
    non_negative("rmax1", rmax1)?;
    non_negative("rmax2", rmax2)?;
    if rmax1 < rmin1 || rmax2 < rmin2 || (rmax1 == 0.0 && rmax2 == 0.0) || (rmax1 == rmin1 && rmax2 == rmin2) {
        return Err((
            "rmax",
            format!("outer radii ({rmax1}, {rmax2}) must exceed the inner ({rmin1}, {rmin2})"),
        ));
    }
    make_revolved_zplanes(&[(-dz, rmin1, rmax1), (dz, rmin2, rmax2)], start, delta)
}

/// A tube (G4Tubs).
pub fn make_tube(rmin: f64, rmax: f64, dz: f64, start: f64, delta: f64) -> Result<Solid, ShapeError> {
    make_cone(rmin, rmax, rmin, rmax, dz, start, delta)
}

fn zplanes_polygon(planes: &[(f64, f64, f64)]) -> Result<Polygon, ShapeError> {
    if planes.len() < 2 {
        return Err(("zplane", format!("needs at least 2 z planes, found {}", planes.len())));
    }
    // Planes may be listed from the top down (Geant4 accepts both orders).
    if planes[0].0 > planes[planes.len() - 1].0 {
        let reversed: Vec<_> = planes.iter().rev().copied().collect();
        return zplanes_polygon(&reversed);
    }
    for (i, &(z, rmin, rmax)) in planes.iter().enumerate() {
        if !z.is_finite() {
            return Err(("z", format!("z plane {i}: z must be finite")));
        }
        non_negative("rmin", rmin)?;
        non_negative("rmax", rmax)?;
        if rmax < rmin {
            return Err(("rmax", format!("z plane {i}: rmax {rmax} < rmin {rmin}")));
        }
        if i > 0 && z < planes[i - 1].0 {
            return Err((
                "z",
                format!("z planes must not decrease: plane {i} at z = {z} after {}", planes[i - 1].0),
            ));
        }
    }
    if planes.first().map(|p| p.0) == planes.last().map(|p| p.0) {
        return Err(("z", "the z planes span no length".into()));
    }
    let mut v: Vec<(f64, f64)> = planes.iter().map(|&(z, _, rmax)| (rmax, z)).collect();
    v.extend(planes.iter().rev().map(|&(z, rmin, _)| (rmin, z)));
    Ok(Polygon { vertices: v })
}

/// A polycone (G4Polycone): z planes (z, rmin, rmax) in increasing z.
pub fn make_revolved_zplanes(planes: &[(f64, f64, f64)], start: f64, delta: f64) -> Result<Solid, ShapeError> {
    Ok(Solid::Revolved {
        polygon: zplanes_polygon(planes)?,
        phi: phi(start, delta)?,
    })
}

/// A generic polycone (G4GenericPolycone): its (r, z) contour.
pub fn make_revolved_contour(rz: &[(f64, f64)], start: f64, delta: f64) -> Result<Solid, ShapeError> {
    if rz.len() < 3 {
        return Err(("rzpoint", format!("needs at least 3 points, found {}", rz.len())));
    }
    for &(r, z) in rz {
        non_negative("r", r)?;
        if !z.is_finite() {
            return Err(("z", "must be finite".into()));
        }
    }
    Ok(Solid::Revolved {
        polygon: Polygon { vertices: rz.to_vec() },
        phi: phi(start, delta)?,
    })
}

/// A spherical shell (G4Sphere).
pub fn make_sphere(rmin: f64, rmax: f64, start_phi: f64, delta_phi: f64, start_theta: f64, delta_theta: f64) -> Result<Solid, ShapeError> {
    let rmax = positive("rmax", rmax)?;
    let rmin = non_negative("rmin", rmin)?;
    if rmin >= rmax {
        return Err(("rmin", format!("{rmin} must be below rmax {rmax}")));
    }
    if !(start_theta.is_finite() && (0.0..PI).contains(&start_theta)) {
        return Err(("starttheta", format!("must be in [0, π), found {start_theta}")));
    }
    if !(delta_theta.is_finite() && delta_theta > 0.0) {
        return Err(("deltatheta", format!("must be positive, found {delta_theta}")));
    }
    Ok(Solid::Sphere {
        rmin,
        rmax,
        phi: phi(start_phi, delta_phi)?,
        theta_start: start_theta,
        theta_end: (start_theta + delta_theta).min(PI),
    })
}

/// A polyhedra (G4Polyhedra): `numsides` flat sides over the φ range; the radii of the z planes
/// are distances from the axis to the sides (tangent distances, as Geant4's constructor takes).
pub fn make_polyhedra(numsides: u32, start: f64, delta: f64, planes: &[(f64, f64, f64)]) -> Result<Solid, ShapeError> {
    if numsides == 0 {
        return Err(("numsides", "must be at least 1".into()));
    }
    let seg = phi(start, delta)?;
    let delta = delta.min(TAU);
    let step = delta / f64::from(numsides);
    if step >= PI {
        return Err((
            "numsides",
            format!("{numsides} sides over {delta} rad: each side must span less than π"),
        ));
    }
    let polygon = zplanes_polygon(planes)?;
    let normals = (0..numsides)
        .map(|k| {
            let a = start + (f64::from(k) + 0.5) * step;
            (a.cos(), a.sin())
        })
        .collect();
    let rmax = planes.iter().map(|p| p.2).fold(0.0, f64::max);
    Ok(Solid::Polyhedra {
        polygon,
        sides: Sides { start, delta, normals },
        phi: seg,
        rmax_corner: rmax / (0.5 * step).cos(),
    })
}

/// A hexahedron from its eight vertices, ordered as (−x, −y), (+x, −y), (−x, +y), (+x, +y) at
/// −dz then at +dz. Faces must be planar (a twisted solid is refused).
fn hexahedron(v: [Vec3; 8]) -> Result<Solid, ShapeError> {
    const FACES: [[usize; 4]; 6] = [[0, 1, 3, 2], [4, 5, 7, 6], [0, 1, 5, 4], [2, 3, 7, 6], [0, 2, 6, 4], [1, 3, 7, 5]];
    let centre = v.iter().fold(Vec3::ZERO, |a, &b| a + b) * 0.125;
    let size = v.iter().map(|&x| (x - centre).norm()).fold(0.0, f64::max);
    let mut planes = Vec::with_capacity(6);
    for f in FACES {
        // Newell's normal of the quadrilateral (robust when one edge has zero length).
        let mut n = Vec3::ZERO;
        for i in 0..4 {
            let (a, b) = (v[f[i]], v[f[(i + 1) % 4]]);
            n = n + Vec3::new((a.y - b.y) * (a.z + b.z), (a.z - b.z) * (a.x + b.x), (a.x - b.x) * (a.y + b.y));
        }
        if n.norm() <= 1e-12 * size * size {
            continue; // a face collapsed to a line or point bounds nothing
        }
        let mut n = n.unit();
        let mut c = f.iter().map(|&i| n.dot(v[i])).sum::<f64>() * 0.25;
        if n.dot(centre) > c {
            n = -n;
            c = -c;
        }
        // Planarity to 1e-6 mm (1e-10 of the size for solids above 10 m): files written with
        // rounded angles stay readable, a twisted face does not.
        if f.iter().any(|&i| (n.dot(v[i]) - c).abs() > (1e-10 * size).max(1e-6)) {
            return Err(("x", "a side face is not planar (twisted trapezoids are not supported)".into()));
        }
        planes.push((n, c));
    }
    Ok(Solid::Convex(Convex {
        planes,
        vertices: v.to_vec(),
    }))
}

/// A trd (G4Trd): half-lengths x1, y1 at −dz and x2, y2 at +dz.
pub fn make_trd(x1: f64, x2: f64, y1: f64, y2: f64, dz: f64) -> Result<Solid, ShapeError> {
    let dz = positive("z", dz)?;
    non_negative("x1", x1)?;
    non_negative("x2", x2)?;
    non_negative("y1", y1)?;
    non_negative("y2", y2)?;
    if (x1 == 0.0 && x2 == 0.0) || (y1 == 0.0 && y2 == 0.0) {
        return Err(("x1", "the trd has no volume".into()));
    }
    let v = |x: f64, y: f64, z: f64| Vec3::new(x, y, z);
    hexahedron([
        v(-x1, -y1, -dz),
        v(x1, -y1, -dz),
        v(-x1, y1, -dz),
        v(x1, y1, -dz),
        v(-x2, -y2, dz),
        v(x2, -y2, dz),
        v(-x2, y2, dz),
        v(x2, y2, dz),
    ])
}

/// A general trapezoid (G4Trap) in Geant4's parameters (half-lengths): the faces at ∓dz have
/// half-heights y1, y2, half-widths x1 | x2 (at −y1 | +y1) and x3 | x4 (at −y2 | +y2), tilted
/// by α1, α2; the line joining the face centres has polar angle θ and azimuth φ.
#[allow(clippy::too_many_arguments)]
pub fn make_trap(
    dz: f64,
    theta: f64,
    phi: f64,
    y1: f64,
    x1: f64,
    x2: f64,
    alpha1: f64,
    y2: f64,
    x3: f64,
    x4: f64,
    alpha2: f64,
) -> Result<Solid, ShapeError> {
    let dz = positive("z", dz)?;
    positive("y1", y1)?;
    positive("y2", y2)?;
    non_negative("x1", x1)?;
    non_negative("x2", x2)?;
    non_negative("x3", x3)?;
    non_negative("x4", x4)?;
    for (n, a) in [("theta", theta), ("phi", phi), ("alpha1", alpha1), ("alpha2", alpha2)] {
        if !a.is_finite() || (n != "phi" && a.abs() >= PI / 2.0) {
            return Err((n, format!("must be finite and within (−π/2, π/2), found {a}")));
        }
    }
    let (tx, ty) = (theta.tan() * phi.cos(), theta.tan() * phi.sin());
    let face = |z: f64, y: f64, xlo: f64, xhi: f64, ta: f64| {
        let (cx, cy) = (z * tx, z * ty);
        [
            Vec3::new(cx - y * ta - xlo, cy - y, z),
            Vec3::new(cx - y * ta + xlo, cy - y, z),
            Vec3::new(cx + y * ta - xhi, cy + y, z),
            Vec3::new(cx + y * ta + xhi, cy + y, z),
        ]
    };
    let lo = face(-dz, y1, x1, x2, alpha1.tan());
    let hi = face(dz, y2, x3, x4, alpha2.tan());
    hexahedron([lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]])
}

/// A parallelepiped (G4Para): half-lengths, α (the y axis' tilt in x), θ and φ of the z axis.
pub fn make_para(dx: f64, dy: f64, dz: f64, alpha: f64, theta: f64, phi: f64) -> Result<Solid, ShapeError> {
    let dx = positive("x", dx)?;
    let dy = positive("y", dy)?;
    let dz = positive("z", dz)?;
    make_trap(dz, theta, phi, dy, dx, dx, alpha, dy, dx, dx, alpha).map_err(|(n, m)| (if n == "alpha1" { "alpha" } else { n }, m))
}
