//! `<define>`: constants, variables, quantities, expressions, positions and rotations
//! (GDML manual §3.2). Names are visible from their definition on; values are in internal
//! units (mm, rad, MeV, g/mole).

use super::expr::Scope;
use super::Cx;
use crate::geo::{Rot3, Transform, Vec3};
use roxmltree::Node;
use std::collections::HashMap;
use warpdrive_core::error::InputError;

/// What `<define>` sections have defined so far.
#[derive(Clone, Debug, Default)]
pub struct State {
    pub scope: Scope,
    pub positions: HashMap<String, Vec3>,
    /// Rotation angles (x, y, z) [rad] as written.
    pub rotations: HashMap<String, Vec3>,
    /// Scale factors (only (1, 1, 1) is accepted where they are used).
    pub scales: HashMap<String, Vec3>,
}

/// The matrix M = Rz(z)·Ry(y)·Rx(x) of GDML rotation angles (CLHEP's `rotateX`, `rotateY`,
/// `rotateZ` in that order, each multiplying from the left).
#[must_use]
pub fn rotation_matrix(angles: Vec3) -> Rot3 {
    Rot3::about_z(angles.z)
        .then_after(&Rot3::about_y(angles.y))
        .then_after(&Rot3::about_x(angles.x))
}

/// The placement of a GDML position and rotation: the daughter frame is rotated by M⁻¹ = Mᵀ
/// (Geant4's GDML convention) and translated by the position.
#[must_use]
pub fn placement(position: Vec3, angles: Vec3) -> Transform {
    Transform {
        rot: rotation_matrix(angles).transpose(),
        translation: position,
    }
}

/// The (x, y, z) of a `<position>`, `<rotation>` or `<scale>` element with its unit.
pub fn triple(cx: &Cx, node: Node, st: &State, unit_attr: &str, default_unit: &str, default: f64) -> Result<Vec3, InputError> {
    let u = cx.unit(node, unit_attr, &st.scope, default_unit)?;
    Ok(Vec3::new(
        cx.number(node, "x", &st.scope, u, Some(default))?,
        cx.number(node, "y", &st.scope, u, Some(default))?,
        cx.number(node, "z", &st.scope, u, Some(default))?,
    ))
}

fn check_new(cx: &Cx, node: Node, st: &State, name: &str) -> Result<(), InputError> {
    if st.scope.get(name).is_some() || st.positions.contains_key(name) || st.rotations.contains_key(name) {
        // Geant4 refuses redefinitions; builtin unit names included.
        return Err(cx.attr_err(node, "name", format!("'{name}' is already defined")));
    }
    Ok(())
}

/// Read one `<define>` section.
pub fn read(cx: &Cx, sec: Node, st: &mut State) -> Result<(), InputError> {
    for n in sec.children().filter(Node::is_element) {
        let tag = n.tag_name().name();
        match tag {
            "constant" | "variable" => {
                let name = cx.name(n)?;
                check_new(cx, n, st, name)?;
                let v = cx.number(n, "value", &st.scope, 1.0, None)?;
                st.scope.set(name, v);
            }
            "quantity" => {
                let name = cx.name(n)?;
                check_new(cx, n, st, name)?;
                let u = cx.unit(n, "unit", &st.scope, "1")?;
                let v = cx.number(n, "value", &st.scope, u, None)?;
                st.scope.set(name, v);
            }
            "expression" => {
                let name = cx.name(n)?;
                check_new(cx, n, st, name)?;
                let text = n.text().unwrap_or("");
                let v = st.scope.eval(text).map_err(|e| cx.at(n, e))?;
                st.scope.set(name, v);
            }
            "position" => {
                let name = cx.name(n)?;
                check_new(cx, n, st, name)?;
                let v = triple(cx, n, st, "unit", "mm", 0.0)?;
                st.positions.insert(name.to_string(), v);
            }
            "rotation" => {
                let name = cx.name(n)?;
                check_new(cx, n, st, name)?;
                let v = triple(cx, n, st, "unit", "rad", 0.0)?;
                st.rotations.insert(name.to_string(), v);
            }
            "scale" => {
                let name = cx.name(n)?;
                let v = triple(cx, n, st, "unit", "1", 1.0)?;
                st.scales.insert(name.to_string(), v);
            }
            _ => {
                return Err(cx.at(
                    n,
                    "is not supported in <define> (supported: constant, variable, quantity, expression, position, rotation, scale)",
                ))
            }
        }
    }
    Ok(())
}

/// The transform given by a node's position/rotation children (inline or by reference), with
/// the tag names used for them (`position`/`rotation` or `firstposition`/`firstrotation`).
pub fn transform_of(cx: &Cx, node: Node, st: &State, pos_tag: &str, rot_tag: &str) -> Result<Transform, InputError> {
    let mut position = Vec3::ZERO;
    let mut angles = Vec3::ZERO;
    let pos_ref = format!("{pos_tag}ref");
    let rot_ref = format!("{rot_tag}ref");
    for c in node.children().filter(Node::is_element) {
        let t = c.tag_name().name();
        if t == pos_tag {
            position = triple(cx, c, st, "unit", "mm", 0.0)?;
        } else if t == rot_tag {
            angles = triple(cx, c, st, "unit", "rad", 0.0)?;
        } else if t == pos_ref {
            let r = cx.attr(c, "ref")?;
            position = *st
                .positions
                .get(r)
                .ok_or_else(|| cx.attr_err(c, "ref", format!("no position named '{r}'")))?;
        } else if t == rot_ref {
            let r = cx.attr(c, "ref")?;
            angles = *st
                .rotations
                .get(r)
                .ok_or_else(|| cx.attr_err(c, "ref", format!("no rotation named '{r}'")))?;
        } else if t == "scale" || t == "scaleref" {
            let s = if t == "scale" {
                triple(cx, c, st, "unit", "1", 1.0)?
            } else {
                let r = cx.attr(c, "ref")?;
                *st.scales
                    .get(r)
                    .ok_or_else(|| cx.attr_err(c, "ref", format!("no scale named '{r}'")))?
            };
            if s != Vec3::new(1.0, 1.0, 1.0) {
                return Err(cx.at(c, "reflections and scaling are not supported"));
            }
        }
    }
    Ok(placement(position, angles))
}
