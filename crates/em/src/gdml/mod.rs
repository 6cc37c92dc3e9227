//! The GDML reader (issue #31): a geometry description as Geant4, VecGeom and Celeritas read it
//! (GDML manual, R. Chytracek et al., "Geometry Description Markup Language for Physics
//! Simulation and Analysis Applications", IEEE TNS 53 (2006) 2892, and the GDML user's guide
//! v2.x) into the flat [`crate::geo::VolumeTree`] and a material list.
//!
//! The file is read through the bounded reader and parsed by `roxmltree`; the sections are
//! handled in document order: [`define`] (constants, variables, quantities, expressions,
//! positions, rotations; [`expr`] evaluates every number), [`materials`] (isotopes, elements by Z and
//! atomic mass, `fraction`/`composite` mixtures, the built-in `G4_…` names), [`solids`] and
//! [`structure`] (volumes, physical volumes, assemblies, `setup`). Every error names the file,
//! the line and the tag or attribute: `det.gdml:42: <tube> 'rmax': expected a number, found
//! "abc"`. Constructs outside the supported subset (`replicavol`, `paramvol`, loops,
//! optical surfaces and property matrices, reflections, tessellated and other solids) are
//! refused with such an error; docs/em-geometry.md lists the subset.
//!
//! Rotations follow Geant4's GDML reader: `<rotation x y z>` is the matrix M = Rz(z)·Ry(y)·Rx(x)
//! of active right-handed rotations, and a daughter (or a boolean's operand) is placed with the
//! *inverse* of M — a point of the daughter's frame is at `Mᵀ·p + position` in the mother. So a
//! volume given `z = 90 deg` appears turned by −90° about z. ([`define::rotation_matrix`],
//! tested in `tests/gdml.rs`.)

pub mod define;
pub mod expr;
pub mod materials;
pub mod solids;
pub mod structure;

use crate::geo::VolumeTree;
use materials::GdmlMaterial;
use roxmltree::{Document, Node};
use std::path::{Path, PathBuf};
use warpdrive_core::error::InputError;

/// A geometry read from GDML.
#[derive(Clone, Debug)]
pub struct Gdml {
    pub path: PathBuf,
    pub tree: VolumeTree,
    /// The materials the volumes use (`LogicalVolume::material` indexes this).
    pub materials: Vec<GdmlMaterial>,
}

impl Gdml {
    /// Geant4-style overlap check ([`crate::geo::overlaps`]) with `points` surface points per
    /// placement: an error naming the file and (up to ten of) the overlaps found deeper than
    /// [`crate::geo::solid::SURFACE_TOLERANCE`].
    pub fn check_overlaps(&self, points: usize) -> Result<(), InputError> {
        let found = crate::geo::overlaps::check_overlaps(&self.tree, points, crate::geo::solid::SURFACE_TOLERANCE);
        if found.is_empty() {
            return Ok(());
        }
        let mut msg = format!("{} overlapping placement(s):", found.len());
        for o in found.iter().take(10) {
            msg.push_str("\n  ");
            msg.push_str(&o.describe(&self.tree));
        }
        Err(InputError::file(&self.path, msg))
    }
}

/// At most this many XML nodes (a guard against absurd inputs before anything is built).
pub const MAX_NODES: u32 = 20_000_000;

/// Read a GDML file.
pub fn read(path: &Path) -> Result<Gdml, InputError> {
    let text = warpdrive_core::error::read_text(path)?;
    parse(&text, path)
}

/// Parse GDML text; `path` names the file in errors.
pub fn parse(text: &str, path: &Path) -> Result<Gdml, InputError> {
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        nodes_limit: MAX_NODES,
    };
    let doc = Document::parse_with_options(text, opts).map_err(|e| {
        let pos = e.pos();
        InputError::new(path, pos.row as usize, format!("not well-formed XML: {e}"))
    })?;
    let cx = Cx { path, doc: &doc };
    let root = doc.root_element();
    if root.tag_name().name() != "gdml" {
        return Err(cx.at(root, "the root element must be <gdml>"));
    }
    let mut st = define::State::default();
    let mut mats = materials::Materials::default();
    let mut sol = solids::SolidTable::default();
    let mut stru = structure::Structure::default();
    let mut world = None;
    for sec in root.children().filter(Node::is_element) {
        match sec.tag_name().name() {
            "define" => define::read(&cx, sec, &mut st)?,
            "materials" => mats.read(&cx, sec, &st)?,
            "solids" => sol.read(&cx, sec, &st)?,
            "structure" => stru.read(&cx, sec, &st, &sol, &mut mats)?,
            "setup" => {
                if world.is_none() {
                    world = Some(structure::setup_world(&cx, sec)?);
                }
            }
            other => return Err(cx.at(sec, format!("unsupported section <{other}>"))),
        }
    }
    let (world_name, world_node) = world.ok_or_else(|| InputError::file(path, "no <setup> with a <world ref=…/>"))?;
    let tree = stru.build(&cx, world_node, &world_name, sol)?;
    Ok(Gdml {
        path: path.to_path_buf(),
        tree,
        materials: mats.used,
    })
}

/// The parsing context: the file name and the document, for errors with lines.
pub struct Cx<'a, 'd> {
    pub path: &'a Path,
    pub doc: &'a Document<'d>,
}

impl Cx<'_, '_> {
    fn line(&self, pos: usize) -> usize {
        self.doc.text_pos_at(pos).row as usize
    }

    /// An error at an element: `file:line: <tag> message`.
    pub fn at(&self, node: Node, msg: impl std::fmt::Display) -> InputError {
        InputError::new(
            self.path,
            self.line(node.range().start),
            format!("<{}> {msg}", node.tag_name().name()),
        )
    }

    /// An error at an attribute: `file:line: <tag> 'attr': message`.
    pub fn attr_err(&self, node: Node, attr: &str, msg: impl std::fmt::Display) -> InputError {
        let pos = node
            .attributes()
            .find(|a| a.name() == attr)
            .map_or(node.range().start, |a| a.range().start);
        InputError::new(self.path, self.line(pos), format!("<{}> '{attr}': {msg}", node.tag_name().name()))
    }

    /// A required attribute's text.
    pub fn attr<'n>(&self, node: Node<'n, '_>, name: &str) -> Result<&'n str, InputError> {
        node.attribute(name).ok_or_else(|| self.attr_err(node, name, "missing"))
    }

    /// A required `name` attribute.
    pub fn name<'n>(&self, node: Node<'n, '_>) -> Result<&'n str, InputError> {
        let n = self.attr(node, "name")?;
        if n.is_empty() {
            return Err(self.attr_err(node, "name", "must not be empty"));
        }
        Ok(n)
    }

    /// An attribute evaluated as an expression times `unit`, `default` when absent.
    pub fn number(&self, node: Node, name: &str, scope: &expr::Scope, unit: f64, default: Option<f64>) -> Result<f64, InputError> {
        match node.attribute(name) {
            Some(t) => scope
                .eval(t)
                .map(|v| v * unit)
                .map_err(|e| self.attr_err(node, name, format!("expected a number, found \"{t}\" ({e})"))),
            None => default.ok_or_else(|| self.attr_err(node, name, "missing")),
        }
    }

    /// The value of a unit attribute (`lunit`, `aunit`, `unit`), `default` (a unit name) when absent.
    pub fn unit(&self, node: Node, name: &str, scope: &expr::Scope, default: &str) -> Result<f64, InputError> {
        let t = node.attribute(name).unwrap_or(default);
        match scope.eval(t) {
            Ok(v) if v > 0.0 => Ok(v),
            Ok(v) => Err(self.attr_err(node, name, format!("unit \"{t}\" must be positive, is {v}"))),
            Err(e) => Err(self.attr_err(node, name, format!("unknown unit: {e}"))),
        }
    }
}
