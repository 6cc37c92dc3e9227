//! Materials for showers: density, elements by mass fraction, mean excitation energy I, and
//! what follows from them — atom and electron densities, the radiation length (Tsai) and the
//! Sternheimer density-effect parameters.
//!
//! Built in: TestEm3's `Lead` (Z = 82, A = 207.19 g/mol, 11.35 g/cm³, I = 823 eV) and
//! `liquidArgon` (Z = 18, A = 39.95 g/mol, 1.390 g/cm³, I = 188 eV), and the NIST materials of
//! [`crate::nist`] (`G4_Pb`, `G4_lAr`, `G4_WATER`, …). Others from TOML:
//!
//! ```toml
//! name = "water"
//! density = 1.0          # g/cm³
//! I_eV = 78.0            # mean excitation energy [eV]
//! state = "liquid"       # optional: solid | liquid | gas (default: gas below 10 mg/cm³)
//! [[elements]]
//! Z = 1
//! A = 1.008              # g/mol
//! fraction = 0.111894    # by mass
//! [[elements]]
//! Z = 8
//! A = 15.999
//! fraction = 0.888106
//! # optional: Sternheimer–Berger–Seltzer (1984) parameters instead of the general formula
//! # [density_effect]
//! # C = 3.5017           # C̄ = −C > 0
//! # x0 = 0.24
//! # x1 = 2.8004
//! # a = 0.09116
//! # m = 3.4773
//! # delta0 = 0.0
//! ```

use super::density_effect::{DensityEffect, State};
use super::{ELECTRON_RADIUS, EV, FINE_STRUCTURE, HBAR_C};
use crate::material::{Component, AVOGADRO};
use std::path::Path;
use warpdrive_core::error::InputError;

/// A material as written in a TOML file.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MaterialSpec {
    pub name: String,
    /// Density [g/cm³].
    pub density: f64,
    /// Mean excitation energy [eV].
    #[serde(rename = "I_eV")]
    pub i_ev: f64,
    #[serde(default)]
    pub state: Option<State>,
    pub elements: Vec<Component>,
    #[serde(default)]
    pub density_effect: Option<DensityEffect>,
}

/// A shower material with its derived quantities.
#[derive(Clone, Debug, PartialEq)]
pub struct ShowerMaterial {
    pub name: String,
    /// Density [g/cm³].
    pub density: f64,
    /// Mean excitation energy I [MeV].
    pub mean_excitation: f64,
    pub state: State,
    pub elements: Vec<Component>,
    /// Atoms per cm³, one per element.
    pub atom_density: Vec<f64>,
    /// Electrons per cm³.
    pub electron_density: f64,
    /// Radiation length X₀ [cm].
    pub radiation_length: f64,
    /// Plasma energy ħω_p [MeV].
    pub plasma_energy: f64,
    pub density_effect: DensityEffect,
}

impl ShowerMaterial {
    /// Check a spec and derive everything. The error names the field at fault.
    pub fn new(spec: MaterialSpec) -> Result<ShowerMaterial, (&'static str, String)> {
        crate::material::Material {
            name: spec.name.clone(),
            density: spec.density,
            elements: spec.elements.clone(),
        }
        .check()?;
        if !(spec.i_ev.is_finite() && spec.i_ev > 0.0) {
            return Err(("I_eV", format!("mean excitation energy {} eV must be positive", spec.i_ev)));
        }
        let state = spec.state.unwrap_or_else(|| State::from_density(spec.density));
        let atom_density: Vec<f64> = spec.elements.iter().map(|e| spec.density * e.fraction * AVOGADRO / e.a).collect();
        let electron_density: f64 = spec.elements.iter().zip(&atom_density).map(|(e, n)| e.z * n).sum();
        let plasma_energy = plasma_energy(electron_density);
        let mean_excitation = spec.i_ev * EV;
        let density_effect = match spec.density_effect {
            Some(d) => {
                d.check()?;
                d
            }
            None => DensityEffect::sternheimer_peierls(mean_excitation, plasma_energy, state),
        };
        let inv_x0: f64 = spec
            .elements
            .iter()
            .zip(&atom_density)
            .map(|(e, n)| n * radiation_cross_section(e.z))
            .sum();
        Ok(ShowerMaterial {
            name: spec.name,
            density: spec.density,
            mean_excitation,
            state,
            elements: spec.elements,
            atom_density,
            electron_density,
            radiation_length: 1.0 / inv_x0,
            plasma_energy,
            density_effect,
        })
    }

    /// TestEm3's lead (Geant4 10.3 `DetectorConstruction`: Z = 82, A = 207.19 g/mol,
    /// 11.35 g/cm³, I = 823 eV), with the Sternheimer 1984 density-effect parameters of lead,
    /// which Geant4 10.3 also uses for it (a one-element solid at lead's nominal density).
    #[must_use]
    pub fn lead() -> ShowerMaterial {
        Self::single("Lead", 82.0, 207.19, 11.35, 823.0, State::Solid, Some(DensityEffect::lead_1984()))
    }

    /// TestEm3's liquid argon (Z = 18, A = 39.95 g/mol, 1.390 g/cm³, I = 188 eV). Sternheimer's
    /// 1984 table has argon only as a gas, so the general (condensed-matter) formula applies, as
    /// in Geant4 10.3.
    #[must_use]
    pub fn liquid_argon() -> ShowerMaterial {
        Self::single("liquidArgon", 18.0, 39.95, 1.390, 188.0, State::Liquid, None)
    }

    /// A one-element material.
    #[must_use]
    pub fn single(name: &str, z: f64, a: f64, density: f64, i_ev: f64, state: State, de: Option<DensityEffect>) -> ShowerMaterial {
        Self::new(MaterialSpec {
            name: name.into(),
            density,
            i_ev,
            state: Some(state),
            elements: vec![Component { z, a, fraction: 1.0 }],
            density_effect: de,
        })
        .expect("built-in material")
    }

    /// A built-in material by name — TestEm3's `Lead`/`Pb` and `liquidArgon`/`lAr`, or a Geant4
    /// NIST name of [`crate::nist`] (`G4_Pb`, `G4_lAr`, `G4_WATER`, …) — else a TOML file.
    pub fn from_name_or_file(spec: &str) -> Result<ShowerMaterial, InputError> {
        if let Some(m) = crate::nist::find(spec) {
            return Ok(m.shower_material());
        }
        match spec {
            "Lead" | "lead" | "Pb" => Ok(Self::lead()),
            "liquidArgon" | "lAr" | "LAr" | "liquid_argon" => Ok(Self::liquid_argon()),
            _ if spec.ends_with(".toml") || Path::new(spec).is_file() => Self::from_toml(Path::new(spec)),
            _ => Err(InputError::file(
                spec,
                format!(
                    "unknown shower material: built in are TestEm3's 'Lead' and 'liquidArgon' and {}; others are given as a TOML file",
                    crate::nist::NAMES
                ),
            )),
        }
    }

    /// Read a TOML material file; errors name the file, the line when known, and the field.
    pub fn from_toml(path: &Path) -> Result<ShowerMaterial, InputError> {
        let text = warpdrive_core::error::read_text(path)?;
        Self::from_toml_str(&text, path)
    }

    /// Parse TOML text; `path` is only used in error messages.
    pub fn from_toml_str(text: &str, path: &Path) -> Result<ShowerMaterial, InputError> {
        let spec: MaterialSpec = toml::from_str(text).map_err(|e| toml_error(text, path, &e))?;
        Self::new(spec).map_err(|(field, msg)| InputError::file(path, msg).field(field))
    }

    /// Atoms per cm³ of all elements together.
    #[must_use]
    pub fn total_atom_density(&self) -> f64 {
        self.atom_density.iter().sum()
    }

    /// Effective Z as electrons per atom (n_e / n_atoms).
    #[must_use]
    pub fn z_effective(&self) -> f64 {
        self.electron_density / self.total_atom_density()
    }

    /// Density-effect correction δ at kinetic energy `t` [MeV] of an electron or positron:
    /// x = log₁₀(βγ) = ½ log₁₀(τ(τ + 2)), τ = T/mc².
    #[must_use]
    pub fn delta(&self, t: f64) -> f64 {
        let tau = t / super::ELECTRON_MASS;
        self.density_effect.delta(0.5 * (tau * (tau + 2.0)).log10())
    }
}

/// A TOML syntax or schema error as an [`InputError`] with the line and, when the parser names
/// it, the field.
pub(crate) fn toml_error(text: &str, path: &Path, e: &toml::de::Error) -> InputError {
    let line = e.span().map_or(0, |s| text[..s.start.min(text.len())].matches('\n').count() + 1);
    let msg = e.message().to_string();
    let field = msg
        .split('`')
        .nth(1)
        .filter(|_| msg.contains("missing field") || msg.contains("unknown field"))
        .map(str::to_string);
    let err = InputError::new(path, line, msg);
    match field {
        Some(f) => err.field(f),
        None => err,
    }
}

/// Plasma energy ħω_p = ħc √(4π n_e r_e) [MeV] for `n_e` electrons per cm³ (PDG Review
/// "Passage of particles through matter", Table 34.1: ħω_p = √(ρ⟨Z/A⟩) × 28.816 eV).
#[must_use]
pub fn plasma_energy(n_e: f64) -> f64 {
    HBAR_C * (4.0 * std::f64::consts::PI * n_e * ELECTRON_RADIUS).sqrt()
}

/// Tsai's radiation logarithms (L_rad, L'_rad): PDG Review "Passage of particles through
/// matter" Table 34.2 for Z ≤ 4, else L_rad = ln(184.15 Z^{-1/3}), L'_rad = ln(1194 Z^{-2/3}).
#[must_use]
pub fn radiation_logs(z: f64) -> (f64, f64) {
    match z.round() as i32 {
        1 => (5.31, 6.144),
        2 => (4.79, 5.621),
        3 => (4.74, 5.805),
        4 => (4.71, 5.924),
        _ => ((184.15f64).ln() - z.ln() / 3.0, (1194f64).ln() - 2.0 * z.ln() / 3.0),
    }
}

/// Coulomb correction f(Z) = a²[(1 + a²)⁻¹ + 0.20206 − 0.0369 a² + 0.0083 a⁴ − 0.002 a⁶],
/// a = αZ (Davies, Bethe & Maximon 1954; PDG Review eq. 34.27).
#[must_use]
pub fn coulomb_correction(z: f64) -> f64 {
    let a2 = (FINE_STRUCTURE * z).powi(2);
    a2 * (1.0 / (1.0 + a2) + 0.20206 - 0.0369 * a2 + 0.0083 * a2 * a2 - 0.002 * a2 * a2 * a2)
}

/// Tsai's radiation cross section per atom [cm²], the atom's share of 1/X₀
/// (Y.-S. Tsai, Rev. Mod. Phys. 46 (1974) 815; PDG Review eq. 34.26):
/// 1/X₀ = Σ_i n_i · 4 α r_e² {Z_i² [L_rad − f(Z_i)] + Z_i L'_rad}, n_i atoms per cm³.
#[must_use]
pub fn radiation_cross_section(z: f64) -> f64 {
    let (lrad, lprad) = radiation_logs(z);
    4.0 * FINE_STRUCTURE * ELECTRON_RADIUS * ELECTRON_RADIUS * (z * z * (lrad - coulomb_correction(z)) + z * lprad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn radiation_lengths_match_the_pdg_tables() {
        // PDG atomic and nuclear properties: Pb 6.37 g/cm² (0.5612 cm), Ar 19.55 g/cm²
        // (14.0 cm at 1.396 g/cm³; TestEm3's 1.390 g/cm³ gives 14.06 cm).
        let pb = ShowerMaterial::lead();
        assert!(
            (pb.radiation_length * pb.density / 6.37 - 1.0).abs() < 3e-3,
            "{}",
            pb.radiation_length
        );
        let ar = ShowerMaterial::liquid_argon();
        assert!(
            (ar.radiation_length * ar.density / 19.55 - 1.0).abs() < 3e-3,
            "{}",
            ar.radiation_length
        );
        // Aluminium 24.01 g/cm² (spec §2.1: X0 = 24.011 g/cm², f_c = 0.010735).
        assert!((coulomb_correction(13.0) - 0.010735).abs() < 2e-6);
        let al = ShowerMaterial::single("Al", 13.0, 26.9815385, 2.699, 166.0, State::Solid, None);
        assert!((al.radiation_length * al.density / 24.011 - 1.0).abs() < 1e-4);
    }

    #[test]
    fn densities_and_plasma_energies() {
        let pb = ShowerMaterial::lead();
        // n_e = ρ Z N_A / A.
        assert!((pb.electron_density / (11.35 * 82.0 * AVOGADRO / 207.19) - 1.0).abs() < 1e-12);
        // 28.816 √(ρ Z/A) eV: 61.07 eV for lead (Sternheimer 1984: 61.072 eV).
        assert!((pb.plasma_energy / 61.072e-6 - 1.0).abs() < 2e-4, "{}", pb.plasma_energy);
        let ar = ShowerMaterial::liquid_argon();
        assert!((ar.plasma_energy / (28.816e-6 * (1.39f64 * 18.0 / 39.95).sqrt()) - 1.0).abs() < 2e-4);
        // Condensed argon, I = 188 eV ≥ 100 eV: C̄ = 1 + 2 ln(188/22.8) = 5.219 > 5.215.
        let d = ar.density_effect;
        assert!((d.c - 5.219).abs() < 2e-3 && (d.x0 - (0.326 * d.c - 1.5)).abs() < 1e-12, "{d:?}");
        assert_eq!(pb.z_effective(), 82.0);
    }

    #[test]
    fn toml_materials_and_errors_name_file_and_field() {
        let p = Path::new("water.toml");
        let good = "name = \"water\"\ndensity = 1.0\nI_eV = 78\n[[elements]]\nZ = 1\nA = 1.008\nfraction = 0.111894\n[[elements]]\nZ = 8\nA = 15.999\nfraction = 0.888106\n";
        let w = ShowerMaterial::from_toml_str(good, p).unwrap();
        assert_eq!(w.state, State::Solid);
        assert!((w.radiation_length / 36.08 - 1.0).abs() < 3e-3, "{}", w.radiation_length);
        assert!((w.mean_excitation - 78e-6).abs() < 1e-15);
        let with_de = format!("{good}[density_effect]\nC = 3.5017\nx0 = 0.24\nx1 = 2.8004\na = 0.09116\nm = 3.4773\n");
        let w2 = ShowerMaterial::from_toml_str(&with_de, p).unwrap();
        assert_eq!(w2.density_effect.x1, 2.8004);

        let err = |t: &str| ShowerMaterial::from_toml_str(t, p).unwrap_err().to_string();
        let e = err(&good.replace("I_eV = 78", "I_eV = -1"));
        assert!(e.starts_with("water.toml") && e.contains("field 'I_eV'"), "{e}");
        let e = err(&good.replace("I_eV = 78\n", ""));
        assert!(e.contains("water.toml") && e.contains("field 'I_eV'"), "{e}");
        let e = err(&good.replace("density = 1.0", "density = 0"));
        assert!(e.contains("field 'density'"), "{e}");
        let e = err(&good.replace("fraction = 0.888106", "fraction = 0.5"));
        assert!(e.contains("field 'fraction'") && e.contains("sum to"), "{e}");
        let e = err(&good.replace("Z = 8", "Z = 0"));
        assert!(e.contains("field 'Z'"), "{e}");
        let e = err(&good.replace("density = 1.0", "densty = 1.0"));
        assert!(e.contains("water.toml:2") && e.contains("densty"), "{e}");
        let e = err(&with_de.replace("x1 = 2.8004", "x1 = 0.1"));
        assert!(e.contains("field 'x1'"), "{e}");
        let e = err(&good.replace("I_eV = 78", "I_eV = 78\nstate = \"plasma\""));
        assert!(e.contains("water.toml:4"), "{e}");
        assert!(ShowerMaterial::from_name_or_file("unobtainium")
            .unwrap_err()
            .to_string()
            .contains("unknown shower material"));
        assert_eq!(ShowerMaterial::from_name_or_file("Pb").unwrap(), ShowerMaterial::lead());
    }
}
