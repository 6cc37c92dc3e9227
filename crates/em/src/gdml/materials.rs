//! `<materials>`: elements, materials and their mixtures (GDML manual §3.3), and the built-in
//! Geant4 NIST names of [`crate::nist`] (`G4_Pb`, `G4_WATER`, …) wherever a material is
//! referred to without being defined in the file.
//!
//! * `<element name Z><atom value unit="g/mole"/></element>`: an element by Z and molar mass;
//! * `<material Z state><D/><atom/></material>`: a one-element material;
//! * `<material><D/><fraction n ref/>…</material>`: mass fractions of elements or materials
//!   (materials are expanded into their elements; the fractions must add up to 1 within 10⁻³
//!   and are then normalised);
//! * `<material><D/><composite n ref/>…</material>`: atom counts of elements, turned into
//!   mass fractions w_i = n_i A_i / Σ_j n_j A_j;
//! * `<D value unit="g/cm3"/>` (or `<Dref ref/>` to a quantity), `<MEE value unit="eV"/>`
//!   (mean excitation energy), `<T>`, `<P>` (read and not used).
//!
//! Isotopes: `<isotope name Z N><atom value/></isotope>` and `<element><fraction n ref=isotope/>…`
//! (how Geant4 writes every element when it exports GDML) are read, and the element becomes one of
//! its Z with the abundance-weighted molar mass A = Σ nᵢAᵢ / Σ nᵢ (nᵢ: atom abundances). The EM
//! physics depends on the isotopes only through that mass (the atom density); isotopes of
//! different Z in one element are refused.

use super::define::State;
use super::Cx;
use crate::material::{Component, MAX_MOLAR_MASS, MIN_MOLAR_MASS};
use crate::shower::density_effect::State as Phase;
use crate::shower::material::{MaterialSpec, ShowerMaterial};
use roxmltree::Node;
use std::collections::HashMap;
use warpdrive_core::error::InputError;

/// A material of a GDML geometry.
#[derive(Clone, Debug, PartialEq)]
pub struct GdmlMaterial {
    pub name: String,
    /// Density [g/cm³].
    pub density: f64,
    /// `state` attribute (absent or "undefined": `None`).
    pub state: Option<Phase>,
    /// Elements by mass fraction.
    pub elements: Vec<Component>,
    /// `<MEE>` [eV], or the NIST value for a built-in name.
    pub mean_excitation_ev: Option<f64>,
    /// The built-in NIST material this is, if it is one.
    pub nist: Option<&'static str>,
}

impl GdmlMaterial {
    /// The material of the Klein–Nishina mini-app (density and composition).
    #[must_use]
    pub fn material(&self) -> crate::material::Material {
        crate::material::Material {
            name: self.name.clone(),
            density: self.density,
            elements: self.elements.clone(),
        }
    }

    /// The shower material: a built-in name's own (with its density-effect choice), else one
    /// built from the file's density, elements, state and `<MEE>`. A material without `<MEE>`
    /// that is not a built-in name has no mean excitation energy: the error says so.
    pub fn shower_material(&self) -> Result<ShowerMaterial, String> {
        if let Some(m) = self.nist.and_then(crate::nist::find) {
            return Ok(m.shower_material());
        }
        let i_ev = self.mean_excitation_ev.ok_or_else(|| {
            format!(
                "material '{}' has no mean excitation energy: give it <MEE unit=\"eV\" value=…/> or use a built-in G4_ name",
                self.name
            )
        })?;
        ShowerMaterial::new(MaterialSpec {
            name: self.name.clone(),
            density: self.density,
            i_ev,
            state: self.state,
            elements: self.elements.clone(),
            density_effect: None,
        })
        .map_err(|(field, msg)| format!("material '{}': {field}: {msg}", self.name))
    }

    fn from_nist(m: &crate::nist::NistMaterial) -> GdmlMaterial {
        GdmlMaterial {
            name: m.name.to_string(),
            density: m.density,
            state: Some(m.state),
            elements: m.material().elements,
            mean_excitation_ev: Some(m.i_ev),
            nist: Some(m.name),
        }
    }
}

/// Elements and materials defined so far; `used` lists the materials volumes refer to.
#[derive(Clone, Debug, Default)]
pub struct Materials {
    isotopes: HashMap<String, (f64, f64)>,
    elements: HashMap<String, (f64, f64)>,
    defined: HashMap<String, GdmlMaterial>,
    pub used: Vec<GdmlMaterial>,
    used_index: HashMap<String, u32>,
}

/// g/cm³ in internal units (g/mm³).
const G_PER_CM3: f64 = 1e-3;

impl Materials {
    /// A material by name: defined in the file, else a built-in NIST name.
    fn lookup(&self, name: &str) -> Option<GdmlMaterial> {
        self.defined
            .get(name)
            .cloned()
            .or_else(|| crate::nist::find(name).map(GdmlMaterial::from_nist))
    }

    /// The index of a material in `used` (added on first use); `None` if unknown.
    pub fn use_material(&mut self, name: &str) -> Option<u32> {
        if let Some(&i) = self.used_index.get(name) {
            return Some(i);
        }
        let m = self.lookup(name)?;
        self.used.push(m);
        let i = (self.used.len() - 1) as u32;
        self.used_index.insert(name.to_string(), i);
        Some(i)
    }

    /// Read one `<materials>` section.
    pub fn read(&mut self, cx: &Cx, sec: Node, st: &State) -> Result<(), InputError> {
        for n in sec.children().filter(Node::is_element) {
            match n.tag_name().name() {
                "element" => self.element(cx, n, st)?,
                "material" => {
                    let m = self.material(cx, n, st)?;
                    if self.defined.contains_key(&m.name) {
                        return Err(cx.attr_err(n, "name", format!("material '{}' is defined twice", m.name)));
                    }
                    self.defined.insert(m.name.clone(), m);
                }
                "isotope" => {
                    let name = cx.name(n)?;
                    let z = cx.number(n, "Z", &st.scope, 1.0, None)?;
                    if !(1.0..=120.0).contains(&z) {
                        return Err(cx.attr_err(n, "Z", format!("must be in [1, 120], found {z}")));
                    }
                    let atom = n
                        .children()
                        .find(|c| c.has_tag_name("atom"))
                        .ok_or_else(|| cx.at(n, format!("isotope '{name}' has no <atom value=…/>")))?;
                    let a = molar_mass(cx, atom, st)?;
                    self.isotopes.insert(name.to_string(), (z, a));
                }
                _ => return Err(cx.at(n, "is not supported in <materials> (supported: isotope, element, material)")),
            }
        }
        Ok(())
    }

    fn element(&mut self, cx: &Cx, n: Node, st: &State) -> Result<(), InputError> {
        let name = cx.name(n)?;
        let fractions: Vec<Node> = n.children().filter(|c| c.has_tag_name("fraction")).collect();
        if !fractions.is_empty() {
            // Isotope abundances: Z in common, A weighted by the atom abundances.
            let (mut z_all, mut sum_n, mut sum_na) = (None, 0.0, 0.0);
            for c in fractions {
                let k = cx.number(c, "n", &st.scope, 1.0, None)?;
                if k.is_nan() || k <= 0.0 {
                    return Err(cx.attr_err(c, "n", format!("an abundance must be positive, found {k}")));
                }
                let r = cx.attr(c, "ref")?;
                let &(z, a) = self
                    .isotopes
                    .get(r)
                    .ok_or_else(|| cx.attr_err(c, "ref", format!("no isotope named '{r}'")))?;
                if z_all.is_some_and(|z0| z0 != z) {
                    return Err(cx.attr_err(c, "ref", format!("element '{name}' mixes isotopes of different Z")));
                }
                z_all = Some(z);
                sum_n += k;
                sum_na += k * a;
            }
            let z = z_all.unwrap_or(0.0);
            self.elements.insert(name.to_string(), (z, sum_na / sum_n));
            return Ok(());
        }
        let z = cx.number(n, "Z", &st.scope, 1.0, None)?;
        if !(1.0..=120.0).contains(&z) {
            return Err(cx.attr_err(n, "Z", format!("must be in [1, 120], found {z}")));
        }
        let atom = n
            .children()
            .find(|c| c.has_tag_name("atom"))
            .ok_or_else(|| cx.at(n, format!("element '{name}' has no <atom value=…/>")))?;
        let a = molar_mass(cx, atom, st)?;
        self.elements.insert(name.to_string(), (z, a));
        Ok(())
    }

    fn material(&self, cx: &Cx, n: Node, st: &State) -> Result<GdmlMaterial, InputError> {
        let name = cx.name(n)?.to_string();
        let state = match n.attribute("state") {
            None | Some("undefined") => None,
            Some("solid") => Some(Phase::Solid),
            Some("liquid") => Some(Phase::Liquid),
            Some("gas") => Some(Phase::Gas),
            Some(s) => return Err(cx.attr_err(n, "state", format!("expected solid, liquid, gas or undefined, found \"{s}\""))),
        };
        let mut density = None;
        let mut mee = None;
        let mut atom = None;
        let mut fractions: Vec<(f64, Vec<Component>)> = Vec::new();
        let mut composite: Vec<(f64, f64, f64)> = Vec::new();
        for c in n.children().filter(Node::is_element) {
            match c.tag_name().name() {
                "D" => {
                    let u = cx.unit(c, "unit", &st.scope, "g/cm3")?;
                    density = Some(cx.number(c, "value", &st.scope, u, None)? / G_PER_CM3);
                }
                "Dref" => {
                    let r = cx.attr(c, "ref")?;
                    let v = st
                        .scope
                        .get(r)
                        .ok_or_else(|| cx.attr_err(c, "ref", format!("no quantity named '{r}'")))?;
                    density = Some(v / G_PER_CM3);
                }
                "MEE" => {
                    let u = cx.unit(c, "unit", &st.scope, "eV")?;
                    mee = Some(cx.number(c, "value", &st.scope, u, None)? / 1e-6);
                }
                "atom" => atom = Some(molar_mass(cx, c, st)?),
                "T" | "P" | "Tref" | "Pref" => {}
                "fraction" => {
                    let f = cx.number(c, "n", &st.scope, 1.0, None)?;
                    if !(f > 0.0 && f <= 1.0) {
                        return Err(cx.attr_err(c, "n", format!("a mass fraction must be in (0, 1], found {f}")));
                    }
                    let r = cx.attr(c, "ref")?;
                    let parts = if let Some(&(z, a)) = self.elements.get(r) {
                        vec![Component { z, a, fraction: 1.0 }]
                    } else if let Some(m) = self.lookup(r) {
                        m.elements
                    } else {
                        return Err(cx.attr_err(c, "ref", format!("no element or material named '{r}'")));
                    };
                    fractions.push((f, parts));
                }
                "composite" => {
                    let k = cx.number(c, "n", &st.scope, 1.0, None)?;
                    if k.is_nan() || k <= 0.0 {
                        return Err(cx.attr_err(c, "n", format!("an atom count must be positive, found {k}")));
                    }
                    let r = cx.attr(c, "ref")?;
                    let &(z, a) = self
                        .elements
                        .get(r)
                        .ok_or_else(|| cx.attr_err(c, "ref", format!("no element named '{r}'")))?;
                    composite.push((k, z, a));
                }
                _ => {
                    return Err(cx.at(
                        c,
                        "is not supported in <material> (supported: D, Dref, MEE, atom, fraction, composite, T, P)",
                    ))
                }
            }
        }
        let density = density.ok_or_else(|| cx.at(n, format!("material '{name}' has no density <D value=…/>")))?;
        if !(density > 0.0 && density <= crate::material::MAX_DENSITY) {
            return Err(cx.at(
                n,
                format!(
                    "material '{name}': density {density} g/cm³ out of (0, {}]",
                    crate::material::MAX_DENSITY
                ),
            ));
        }
        if let Some(i) = mee {
            if i.is_nan() || i <= 0.0 {
                return Err(cx.at(n, format!("material '{name}': <MEE> must be positive")));
            }
        }
        let kinds = usize::from(atom.is_some()) + usize::from(!fractions.is_empty()) + usize::from(!composite.is_empty());
        if kinds != 1 {
            return Err(cx.at(
                n,
                format!("material '{name}' needs exactly one of: Z with <atom>, <fraction>s, <composite>s"),
            ));
        }
        let elements = if let Some(a) = atom {
            let z = cx.number(n, "Z", &st.scope, 1.0, None)?;
            if !(1.0..=120.0).contains(&z) {
                return Err(cx.attr_err(n, "Z", format!("must be in [1, 120], found {z}")));
            }
            vec![Component { z, a, fraction: 1.0 }]
        } else if !fractions.is_empty() {
            let sum: f64 = fractions.iter().map(|f| f.0).sum();
            if (sum - 1.0).abs() > 1e-3 {
                return Err(cx.at(n, format!("material '{name}': mass fractions add up to {sum}, not 1")));
            }
            let mut out: Vec<Component> = Vec::new();
            for (f, parts) in fractions {
                for p in parts {
                    add_component(&mut out, p.z, p.a, f * p.fraction / sum);
                }
            }
            out
        } else {
            let total: f64 = composite.iter().map(|&(k, _, a)| k * a).sum();
            let mut out = Vec::new();
            for (k, z, a) in composite {
                add_component(&mut out, z, a, k * a / total);
            }
            out
        };
        Ok(GdmlMaterial {
            name,
            density,
            state,
            elements,
            mean_excitation_ev: mee,
            nist: None,
        })
    }
}

/// Merge a component into a list (same Z and A: fractions added).
fn add_component(out: &mut Vec<Component>, z: f64, a: f64, fraction: f64) {
    match out.iter_mut().find(|c| c.z == z && c.a == a) {
        Some(c) => c.fraction += fraction,
        None => out.push(Component { z, a, fraction }),
    }
}

/// `<atom value unit="g/mole">` as g/mol.
fn molar_mass(cx: &Cx, atom: Node, st: &State) -> Result<f64, InputError> {
    let u = cx.unit(atom, "unit", &st.scope, "g/mole")?;
    let a = cx.number(atom, "value", &st.scope, u, None)?;
    if !(MIN_MOLAR_MASS..=MAX_MOLAR_MASS).contains(&a) {
        return Err(cx.attr_err(
            atom,
            "value",
            format!("molar mass {a} g/mol out of [{MIN_MOLAR_MASS}, {MAX_MOLAR_MASS}]"),
        ));
    }
    Ok(a)
}
