//! `<structure>` and `<setup>` (GDML manual §3.5–3.6): logical volumes (`<volume>` with
//! `materialref`, `solidref`, `physvol`s and `auxiliary` pairs), physical volumes (`<physvol
//! name copynumber>` with `volumeref` and a position/rotation inline or by reference) and
//! assemblies. Volumes must be defined before they are placed (as GDML requires).
//!
//! An assembly is not a volume: placing it places each of its physical volumes directly in the
//! mother, with the assembly's transform composed with the daughter's, named
//! `assemblyPV/daughterPV` and keeping the daughter's copy number (assemblies nest).
//! `replicavol`, `paramvol`, `divisionvol`, `loop`, `bordersurface`, `skinsurface` and
//! `<physvol><file>` are refused by name.

use super::define::{transform_of, State};
use super::materials::Materials;
use super::solids::SolidTable;
use super::Cx;
use crate::geo::{SolidId, Transform, TreeBuilder, VolumeTree};
use roxmltree::{Node, NodeId};
use std::collections::HashMap;
use warpdrive_core::error::InputError;

/// A physical volume as written: what it places (a volume or an assembly), name, copy, transform.
#[derive(Clone, Debug)]
struct Pv {
    target: Target,
    name: String,
    copy: i32,
    transform: Transform,
}

#[derive(Clone, Copy, Debug)]
enum Target {
    Volume(u32),
    Assembly(u32),
}

/// A logical volume as written.
/// At most this many placements after assemblies are expanded, and this assembly nesting.
pub const MAX_PLACEMENTS: usize = 10_000_000;
pub const MAX_ASSEMBLY_DEPTH: u32 = 64;

#[derive(Clone, Debug)]
struct Volume {
    name: String,
    solid: SolidId,
    material: u32,
    auxiliary: Vec<(String, String)>,
    daughters: Vec<Pv>,
}

/// Volumes and assemblies read so far.
#[derive(Clone, Debug, Default)]
pub struct Structure {
    volumes: Vec<Volume>,
    assemblies: Vec<Vec<Pv>>,
    by_name: HashMap<String, Target>,
}

/// The `<world ref>` of a `<setup>` and its node.
pub fn setup_world(cx: &Cx, sec: Node) -> Result<(String, NodeId), InputError> {
    let w = sec
        .children()
        .find(|c| c.has_tag_name("world"))
        .ok_or_else(|| cx.at(sec, "needs a <world ref=…/>"))?;
    Ok((cx.attr(w, "ref")?.to_string(), w.id()))
}

impl Structure {
    /// Read one `<structure>` section.
    pub fn read(&mut self, cx: &Cx, sec: Node, st: &State, solids: &SolidTable, mats: &mut Materials) -> Result<(), InputError> {
        for n in sec.children().filter(Node::is_element) {
            match n.tag_name().name() {
                "volume" => self.volume(cx, n, st, solids, mats)?,
                "assembly" => {
                    let name = cx.name(n)?;
                    self.check_new(cx, n, name)?;
                    let mut pvs = Vec::new();
                    for c in n.children().filter(Node::is_element) {
                        if !c.has_tag_name("physvol") {
                            return Err(cx.at(c, "is not supported in <assembly> (only physvol)"));
                        }
                        pvs.push(self.physvol(cx, c, st)?);
                    }
                    self.assemblies.push(pvs);
                    self.by_name
                        .insert(name.to_string(), Target::Assembly((self.assemblies.len() - 1) as u32));
                }
                "bordersurface" | "skinsurface" => return Err(cx.at(n, "optical surfaces are not supported")),
                "loop" => return Err(cx.at(n, "loops are not supported")),
                _ => return Err(cx.at(n, "is not supported in <structure> (supported: volume, assembly)")),
            }
        }
        Ok(())
    }

    fn check_new(&self, cx: &Cx, n: Node, name: &str) -> Result<(), InputError> {
        if self.by_name.contains_key(name) {
            return Err(cx.attr_err(n, "name", format!("volume or assembly '{name}' is defined twice")));
        }
        Ok(())
    }

    fn volume(&mut self, cx: &Cx, n: Node, st: &State, solids: &SolidTable, mats: &mut Materials) -> Result<(), InputError> {
        let name = cx.name(n)?;
        self.check_new(cx, n, name)?;
        let mut solid = None;
        let mut material = None;
        let mut auxiliary = Vec::new();
        let mut daughters = Vec::new();
        for c in n.children().filter(Node::is_element) {
            match c.tag_name().name() {
                "solidref" => solid = Some(solids.id(cx, c, cx.attr(c, "ref")?)?),
                "materialref" => {
                    let r = cx.attr(c, "ref")?;
                    material = Some(mats.use_material(r).ok_or_else(|| {
                        cx.attr_err(
                            c,
                            "ref",
                            format!(
                                "no material named '{r}' in the file, and it is not a built-in name ({})",
                                crate::nist::NAMES
                            ),
                        )
                    })?);
                }
                "physvol" => daughters.push(self.physvol(cx, c, st)?),
                "auxiliary" => auxiliary.push((cx.attr(c, "auxtype")?.to_string(), cx.attr(c, "auxvalue")?.to_string())),
                "replicavol" | "paramvol" | "divisionvol" => {
                    return Err(cx.at(c, "is not supported (yet): place the copies with <physvol>s"))
                }
                _ => {
                    return Err(cx.at(
                        c,
                        "is not supported in <volume> (supported: materialref, solidref, physvol, auxiliary)",
                    ))
                }
            }
        }
        let solid = solid.ok_or_else(|| cx.at(n, format!("volume '{name}' has no <solidref>")))?;
        let material = material.ok_or_else(|| cx.at(n, format!("volume '{name}' has no <materialref>")))?;
        self.volumes.push(Volume {
            name: name.to_string(),
            solid,
            material,
            auxiliary,
            daughters,
        });
        self.by_name
            .insert(name.to_string(), Target::Volume((self.volumes.len() - 1) as u32));
        Ok(())
    }

    fn physvol(&self, cx: &Cx, n: Node, st: &State) -> Result<Pv, InputError> {
        if let Some(f) = n.children().find(|c| c.has_tag_name("file")) {
            return Err(cx.at(f, "physical volumes from other files are not supported"));
        }
        let r = n
            .children()
            .find(|c| c.has_tag_name("volumeref"))
            .ok_or_else(|| cx.at(n, "needs a <volumeref ref=…/>"))?;
        let target_name = cx.attr(r, "ref")?;
        let target = *self.by_name.get(target_name).ok_or_else(|| {
            cx.attr_err(
                r,
                "ref",
                format!("no volume or assembly named '{target_name}' defined before this point"),
            )
        })?;
        for c in n.children().filter(Node::is_element) {
            let t = c.tag_name().name();
            if !matches!(
                t,
                "volumeref" | "position" | "positionref" | "rotation" | "rotationref" | "scale" | "scaleref"
            ) {
                return Err(cx.at(c, "is not supported in <physvol>"));
            }
        }
        let copy = match n.attribute("copynumber") {
            None => 0,
            Some(t) => {
                let v = st.scope.eval(t).map_err(|e| cx.attr_err(n, "copynumber", e))?;
                if v.fract() != 0.0 || v.abs() > f64::from(i32::MAX) {
                    return Err(cx.attr_err(n, "copynumber", format!("expected an integer, found {v}")));
                }
                v as i32
            }
        };
        let name = n.attribute("name").map_or_else(|| format!("{target_name}_PV"), str::to_string);
        Ok(Pv {
            target,
            name,
            copy,
            transform: transform_of(cx, n, st, "position", "rotation")?,
        })
    }

    /// Flatten into a [`VolumeTree`] rooted at the named world volume.
    pub fn build(self, cx: &Cx, world_node: NodeId, world: &str, solids: SolidTable) -> Result<VolumeTree, InputError> {
        let node = cx.doc.get_node(world_node).unwrap_or_else(|| cx.doc.root_element());
        let world = match self.by_name.get(world) {
            Some(Target::Volume(v)) => *v,
            Some(Target::Assembly(_)) => return Err(cx.attr_err(node, "ref", format!("the world '{world}' is an assembly, not a volume"))),
            None => return Err(cx.attr_err(node, "ref", format!("no volume named '{world}'"))),
        };
        let mut b = TreeBuilder::with_solids(solids.solids);
        for v in &self.volumes {
            b.add_volume(&v.name, v.solid, v.material, v.auxiliary.clone());
        }
        let mut count = 0usize;
        for (i, v) in self.volumes.iter().enumerate() {
            for pv in &v.daughters {
                self.place(cx, node, &mut b, i as u32, pv, &Transform::IDENTITY, "", 0, &mut count)?;
            }
        }
        Ok(b.build(world))
    }

    #[allow(clippy::too_many_arguments)]
    fn place(
        &self,
        cx: &Cx,
        node: Node,
        b: &mut TreeBuilder,
        mother: u32,
        pv: &Pv,
        outer: &Transform,
        prefix: &str,
        depth: u32,
        count: &mut usize,
    ) -> Result<(), InputError> {
        let t = outer.compose(&pv.transform);
        let name = format!("{prefix}{}", pv.name);
        match pv.target {
            Target::Volume(v) => {
                *count += 1;
                if *count > MAX_PLACEMENTS {
                    return Err(cx.at(node, format!("more than {MAX_PLACEMENTS} placements once assemblies are expanded")));
                }
                b.place(mother, v, &name, pv.copy, t);
            }
            Target::Assembly(a) => {
                // Assemblies can only refer to earlier ones, so this recursion ends; its depth
                // and the placements it makes are bounded all the same.
                if depth >= MAX_ASSEMBLY_DEPTH {
                    return Err(cx.at(node, format!("assemblies nest deeper than {MAX_ASSEMBLY_DEPTH} levels")));
                }
                for d in &self.assemblies[a as usize] {
                    self.place(cx, node, b, mother, d, &t, &format!("{name}/"), depth + 1, count)?;
                }
            }
        }
        Ok(())
    }
}
