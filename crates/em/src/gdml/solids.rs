//! `<solids>` (GDML manual §3.4) into [`crate::geo::Solids`]. Lengths take `lunit` (default
//! mm) and angles `aunit` (default rad); GDML's full lengths (box x, y, z; tube, cone, trd,
//! trap and para z and the trd/trap/para transverse sizes) are halved as Geant4's reader does.
//! Supported: box, orb, tube, cone, sphere, trd, trap, para, polycone, genericPolycone,
//! polyhedra, union, subtraction, intersection. Anything else is refused by name.

use super::define::{transform_of, State};
use super::Cx;
use crate::geo::shapes::{self, ShapeError};
use crate::geo::{BoolOp, Solid, SolidId, Solids};
use roxmltree::Node;
use std::collections::HashMap;
use std::f64::consts::{PI, TAU};
use warpdrive_core::error::InputError;

/// The solids read so far, by name.
#[derive(Clone, Debug, Default)]
pub struct SolidTable {
    pub solids: Solids,
    pub by_name: HashMap<String, SolidId>,
    /// Boolean nesting depth per solid (0 for primitives).
    depth: Vec<u32>,
}

/// Booleans may nest this deep (the solid functions recurse through them).
pub const MAX_BOOLEAN_DEPTH: u32 = 64;

/// Lengths and angles of one solid element.
struct Attrs<'c, 'a, 'd, 'n, 'i> {
    cx: &'c Cx<'a, 'd>,
    node: Node<'n, 'i>,
    st: &'c State,
    lunit: f64,
    aunit: f64,
}

impl Attrs<'_, '_, '_, '_, '_> {
    fn len(&self, name: &str, default: Option<f64>) -> Result<f64, InputError> {
        self.cx.number(self.node, name, &self.st.scope, self.lunit, default)
    }
    fn angle(&self, name: &str, default: Option<f64>) -> Result<f64, InputError> {
        self.cx.number(self.node, name, &self.st.scope, self.aunit, default)
    }
    /// Lengths of `<zplane z rmin rmax>` children.
    fn zplanes(&self) -> Result<Vec<(f64, f64, f64)>, InputError> {
        let mut out = Vec::new();
        for c in self.node.children().filter(Node::is_element) {
            if !c.has_tag_name("zplane") {
                return Err(self
                    .cx
                    .at(c, format!("is not allowed in <{}> (only zplane)", self.node.tag_name().name())));
            }
            let f = |n: &str, d: Option<f64>| self.cx.number(c, n, &self.st.scope, self.lunit, d);
            out.push((f("z", None)?, f("rmin", Some(0.0))?, f("rmax", None)?));
        }
        Ok(out)
    }
}

impl SolidTable {
    /// The id of a named solid.
    pub fn id(&self, cx: &Cx, node: Node, name: &str) -> Result<SolidId, InputError> {
        self.by_name
            .get(name)
            .copied()
            .ok_or_else(|| cx.attr_err(node, "ref", format!("no solid named '{name}'")))
    }

    /// Read one `<solids>` section.
    pub fn read(&mut self, cx: &Cx, sec: Node, st: &State) -> Result<(), InputError> {
        for n in sec.children().filter(Node::is_element) {
            let name = cx.name(n)?;
            if self.by_name.contains_key(name) {
                return Err(cx.attr_err(n, "name", format!("solid '{name}' is defined twice")));
            }
            let a = Attrs {
                cx,
                node: n,
                st,
                lunit: cx.unit(n, "lunit", &st.scope, "mm")?,
                aunit: cx.unit(n, "aunit", &st.scope, "rad")?,
            };
            let solid = self.solid(&a)?;
            let depth = match &solid {
                Solid::Boolean { a: x, b: y, .. } => 1 + self.depth[*x as usize].max(self.depth[*y as usize]),
                _ => 0,
            };
            if depth > MAX_BOOLEAN_DEPTH {
                return Err(cx.at(n, format!("booleans nest deeper than {MAX_BOOLEAN_DEPTH} levels")));
            }
            self.depth.push(depth);
            let id = self.solids.push(solid);
            self.by_name.insert(name.to_string(), id);
        }
        Ok(())
    }

    fn solid(&mut self, a: &Attrs) -> Result<Solid, InputError> {
        let (cx, n) = (a.cx, a.node);
        let shape = |r: Result<Solid, ShapeError>| r.map_err(|(attr, msg)| cx.attr_err(n, attr, msg));
        let tag = n.tag_name().name();
        match tag {
            "box" => shape(shapes::make_box(0.5 * a.len("x", None)?, 0.5 * a.len("y", None)?, 0.5 * a.len("z", None)?)),
            "orb" => shape(shapes::make_sphere(0.0, a.len("r", None)?, 0.0, TAU, 0.0, PI)),
            "tube" => shape(shapes::make_tube(
                a.len("rmin", Some(0.0))?,
                a.len("rmax", None)?,
                0.5 * a.len("z", None)?,
                a.angle("startphi", Some(0.0))?,
                a.angle("deltaphi", None)?,
            )),
            "cone" => shape(shapes::make_cone(
                a.len("rmin1", Some(0.0))?,
                a.len("rmax1", None)?,
                a.len("rmin2", Some(0.0))?,
                a.len("rmax2", None)?,
                0.5 * a.len("z", None)?,
                a.angle("startphi", Some(0.0))?,
                a.angle("deltaphi", None)?,
            )),
            "sphere" => shape(shapes::make_sphere(
                a.len("rmin", Some(0.0))?,
                a.len("rmax", None)?,
                a.angle("startphi", Some(0.0))?,
                a.angle("deltaphi", None)?,
                a.angle("starttheta", Some(0.0))?,
                a.angle("deltatheta", None)?,
            )),
            "trd" => shape(shapes::make_trd(
                0.5 * a.len("x1", None)?,
                0.5 * a.len("x2", None)?,
                0.5 * a.len("y1", None)?,
                0.5 * a.len("y2", None)?,
                0.5 * a.len("z", None)?,
            )),
            "trap" => shape(shapes::make_trap(
                0.5 * a.len("z", None)?,
                a.angle("theta", Some(0.0))?,
                a.angle("phi", Some(0.0))?,
                0.5 * a.len("y1", None)?,
                0.5 * a.len("x1", None)?,
                0.5 * a.len("x2", None)?,
                a.angle("alpha1", Some(0.0))?,
                0.5 * a.len("y2", None)?,
                0.5 * a.len("x3", None)?,
                0.5 * a.len("x4", None)?,
                a.angle("alpha2", Some(0.0))?,
            )),
            "para" => shape(shapes::make_para(
                0.5 * a.len("x", None)?,
                0.5 * a.len("y", None)?,
                0.5 * a.len("z", None)?,
                a.angle("alpha", Some(0.0))?,
                a.angle("theta", Some(0.0))?,
                a.angle("phi", Some(0.0))?,
            )),
            "polycone" => {
                let planes = a.zplanes()?;
                shape(shapes::make_revolved_zplanes(&planes, a.angle("startphi", Some(0.0))?, a.angle("deltaphi", None)?))
            }
            "genericPolycone" => {
                let mut rz = Vec::new();
                for c in n.children().filter(Node::is_element) {
                    if !c.has_tag_name("rzpoint") {
                        return Err(cx.at(c, "is not allowed in <genericPolycone> (only rzpoint)"));
                    }
                    let f = |k: &str| cx.number(c, k, &a.st.scope, a.lunit, None);
                    rz.push((f("r")?, f("z")?));
                }
                shape(shapes::make_revolved_contour(&rz, a.angle("startphi", Some(0.0))?, a.angle("deltaphi", None)?))
            }
            "polyhedra" => {
                let sides = cx.number(n, "numsides", &a.st.scope, 1.0, None)?;
                if !((1.0..=100_000.0).contains(&sides) && sides.fract() == 0.0) {
                    return Err(cx.attr_err(n, "numsides", format!("expected a whole number of sides, found {sides}")));
                }
                let planes = a.zplanes()?;
                shape(shapes::make_polyhedra(sides as u32, a.angle("startphi", Some(0.0))?, a.angle("deltaphi", None)?, &planes))
            }
            "union" | "subtraction" | "intersection" => {
                let op = match tag {
                    "union" => BoolOp::Union,
                    "subtraction" => BoolOp::Subtraction,
                    _ => BoolOp::Intersection,
                };
                let operand = |which: &str| -> Result<SolidId, InputError> {
                    let c = n.children().find(|c| c.has_tag_name(which)).ok_or_else(|| cx.at(n, format!("needs a <{which} ref=…/>")))?;
                    self.id(cx, c, cx.attr(c, "ref")?)
                };
                let (first, second) = (operand("first")?, operand("second")?);
                Ok(Solid::Boolean {
                    op,
                    a: first,
                    b: second,
                    a_placement: transform_of(cx, n, a.st, "firstposition", "firstrotation")?,
                    b_placement: transform_of(cx, n, a.st, "position", "rotation")?,
                })
            }
            _ => Err(cx.at(
                n,
                "is not a supported solid (supported: box, orb, tube, cone, sphere, trd, trap, para, polycone, genericPolycone, polyhedra, union, subtraction, intersection)",
            )),
        }
    }
}
