//! Materials: density and elements by mass fraction (spec §2.1). The NIST materials of
//! [`crate::nist`] are built in (`G4_Al`, the spec's aluminium, `G4_Pb`, `G4_WATER`, …); others come
//! from a small TOML file:
//!
//! ```toml
//! name = "water"
//! density = 1.0            # g/cm³
//! [[elements]]
//! Z = 1
//! A = 1.008                # g/mol
//! fraction = 0.111894      # by mass
//! [[elements]]
//! Z = 8
//! A = 15.999
//! fraction = 0.888106
//! ```

use std::path::Path;
use warpdrive_core::error::InputError;

/// Avogadro's number [1/mol] (CODATA 2018, exact).
pub const AVOGADRO: f64 = 6.022_140_76e23;

/// One element of a material.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
pub struct Component {
    /// Atomic number.
    #[serde(rename = "Z")]
    pub z: f64,
    /// Molar mass [g/mol].
    #[serde(rename = "A")]
    pub a: f64,
    /// Mass fraction.
    pub fraction: f64,
}

#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
pub struct Material {
    pub name: String,
    /// Density [g/cm³].
    pub density: f64,
    pub elements: Vec<Component>,
}

/// Accepted densities [g/cm³] and molar masses [g/mol] of material files (see [`Material::check`]).
pub const MIN_DENSITY: f64 = 1e-30;
pub const MAX_DENSITY: f64 = 1000.0;
pub const MIN_MOLAR_MASS: f64 = 0.5;
pub const MAX_MOLAR_MASS: f64 = 1000.0;

impl Material {
    /// G4_Al: Z = 13, A = 26.9815385 g/mol, ρ = 2.699 g/cm³ (spec §2.1, Geant4 material table).
    #[must_use]
    pub fn aluminium() -> Material {
        Material {
            name: "G4_Al".into(),
            density: 2.699,
            elements: vec![Component {
                z: 13.0,
                a: 26.981_538_5,
                fraction: 1.0,
            }],
        }
    }

    /// A built-in material by its Geant4 NIST name ([`crate::nist`]: `G4_Al`, `G4_Pb`,
    /// `G4_WATER`, …; `aluminium`/`Al` are G4_Al), else a TOML file.
    pub fn from_name_or_file(spec: &str) -> Result<Material, InputError> {
        if let Some(m) = Self::builtin(spec) {
            return Ok(m);
        }
        if spec.ends_with(".toml") || Path::new(spec).is_file() {
            return Self::from_toml(Path::new(spec));
        }
        Err(InputError::file(
            spec,
            format!(
                "unknown material: built in are {} ('aluminium' is G4_Al); others are given as a TOML file (see docs/em.md)",
                crate::nist::NAMES
            ),
        ))
    }

    /// The built-in material of this name, if there is one.
    #[must_use]
    pub fn builtin(name: &str) -> Option<Material> {
        match name {
            "aluminium" | "aluminum" | "Al" => Some(Self::aluminium()),
            _ => crate::nist::find(name).map(crate::nist::NistMaterial::material),
        }
    }

    /// Read and check a TOML material file.
    pub fn from_toml(path: &Path) -> Result<Material, InputError> {
        let text = warpdrive_core::error::read_text(path)?;
        let m: Material = toml::from_str(&text).map_err(|e| {
            let line = e.span().map_or(0, |s| text[..s.start.min(text.len())].lines().count().max(1));
            InputError::new(path, line, e.message().to_string())
        })?;
        m.check().map_err(|(field, msg)| InputError::file(path, msg).field(field))?;
        Ok(m)
    }

    /// Densities and fractions positive, fractions summing to 1 (to 1e-6), Z in 1..=100.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if !(self.density.is_finite() && self.density > 0.0) {
            return Err(("density", format!("density {} g/cm³ must be positive", self.density)));
        }
        // Beyond these the tables overflow or underflow (found by the EM property tests); real
        // materials lie far inside (Geant4's G4_Galactic 1e-25, osmium 22.6 g/cm³).
        if !(MIN_DENSITY..=MAX_DENSITY).contains(&self.density) {
            return Err((
                "density",
                format!(
                    "density {:e} g/cm³ is outside {MIN_DENSITY:e} to {MAX_DENSITY:e} g/cm³",
                    self.density
                ),
            ));
        }
        if self.elements.is_empty() {
            return Err(("elements", "a material needs at least one element".into()));
        }
        for e in &self.elements {
            if !(e.z >= 1.0 && e.z <= 100.0) {
                return Err(("Z", format!("Z = {} is outside 1..100", e.z)));
            }
            if !(e.a.is_finite() && e.a > 0.0) {
                return Err(("A", format!("A = {} g/mol must be positive", e.a)));
            }
            if !(MIN_MOLAR_MASS..=MAX_MOLAR_MASS).contains(&e.a) {
                return Err((
                    "A",
                    format!("A = {:e} g/mol is outside {MIN_MOLAR_MASS} to {MAX_MOLAR_MASS} g/mol", e.a),
                ));
            }
            if !(e.fraction.is_finite() && e.fraction > 0.0) {
                return Err(("fraction", format!("mass fraction {} must be positive", e.fraction)));
            }
        }
        let sum: f64 = self.elements.iter().map(|e| e.fraction).sum();
        if (sum - 1.0).abs() > 1e-6 {
            return Err(("fraction", format!("mass fractions sum to {sum}, not 1")));
        }
        Ok(())
    }

    /// Atoms per cm³ of each element: ρ w_i N_A / A_i.
    #[must_use]
    pub fn atom_densities(&self) -> Vec<(f64, f64)> {
        self.elements
            .iter()
            .map(|e| (e.z, self.density * e.fraction * AVOGADRO / e.a))
            .collect()
    }

    /// Electrons per cm³.
    #[must_use]
    pub fn electron_density(&self) -> f64 {
        self.atom_densities().iter().map(|(z, n)| z * n).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aluminium_numbers_of_the_spec() {
        let al = Material::aluminium();
        let n = al.atom_densities()[0].1;
        assert!((n / 6.0240e22 - 1.0).abs() < 1e-4, "{n}");
        assert!((al.electron_density() / 7.8312e23 - 1.0).abs() < 1e-4);
    }

    #[test]
    fn toml_materials_and_errors() {
        let dir = std::env::temp_dir().join(format!("wd-em-mat-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("water.toml");
        std::fs::write(&good, "name = \"water\"\ndensity = 1.0\n[[elements]]\nZ = 1\nA = 1.008\nfraction = 0.111894\n[[elements]]\nZ = 8\nA = 15.999\nfraction = 0.888106\n").unwrap();
        let w = Material::from_name_or_file(good.to_str().unwrap()).unwrap();
        assert!((w.electron_density() / 3.343e23 - 1.0).abs() < 2e-3, "{}", w.electron_density());
        let bad = dir.join("bad.toml");
        std::fs::write(&bad, "name = \"x\"\ndensity = -1\n[[elements]]\nZ = 1\nA = 1\nfraction = 1\n").unwrap();
        assert!(Material::from_toml(&bad).unwrap_err().to_string().contains("field 'density'"));
        std::fs::write(&bad, "name = \"x\"\ndensity = 1\n[[elements]]\nZ = 1\nA = 1\nfraction = 0.5\n").unwrap();
        assert!(Material::from_toml(&bad).unwrap_err().to_string().contains("sum to 0.5"));
        std::fs::write(&bad, "name = \"x\"\ndensity = 1\nelements = 3\n").unwrap();
        assert!(Material::from_toml(&bad).unwrap_err().to_string().contains("bad.toml:3"));
        assert!(Material::from_name_or_file("unobtainium")
            .unwrap_err()
            .to_string()
            .contains("unknown material"));
    }
}
