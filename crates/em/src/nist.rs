//! Built-in materials under their Geant4 NIST names (`G4_Pb`, `G4_lAr`, `G4_WATER`, …), for the
//! Klein–Nishina mini-app (`--material` / `material=`) and the shower code (calorimeter layers).
//!
//! The numbers are data, not code: density, mean excitation energy I and composition by mass
//! fraction as NIST publishes them for its ESTAR/XCOM materials (M. J. Berger et al., "ESTAR,
//! PSTAR and ASTAR", NIST Standard Reference Database 124, material composition tables; ICRU
//! Report 37 (1984) for the I values), which is also where Geant4's `G4NistMaterialBuilder`
//! takes the materials of these names from. Two I values follow Geant4's choice where it departs
//! from ESTAR: water 78 eV (ICRU Report 73; ESTAR 75 eV) and graphite `G4_C` 81 eV at 2.0 g/cm³.
//! Molar masses are the standard atomic weights (aluminium as the mini-app's G4_Al has always
//! used, 26.9815385 g/mol), so `G4_Al` here is the same material as before bit for bit.
//!
//! Density effect: `G4_Pb` takes the Sternheimer–Berger–Seltzer (1984) parameters of lead (as
//! TestEm3's `Lead` and Geant4 do); every other material the Sternheimer–Peierls general formula
//! for its state.
//!
//! The list ([`NAMES`]) is documented in docs/em.md ("Built-in materials").

use crate::material::{Component, Material};
use crate::shower::density_effect::{DensityEffect, State};
use crate::shower::material::{MaterialSpec, ShowerMaterial};

/// One built-in material.
#[derive(Clone, Copy, Debug)]
pub struct NistMaterial {
    pub name: &'static str,
    /// Density [g/cm³].
    pub density: f64,
    /// Mean excitation energy [eV].
    pub i_ev: f64,
    pub state: State,
    /// (Z, A [g/mol], mass fraction).
    pub elements: &'static [(f64, f64, f64)],
}

// Standard atomic weights [g/mol] (IUPAC; the NIST tables' values).
const H: (f64, f64) = (1.0, 1.00794);
const BE: (f64, f64) = (4.0, 9.012182);
const C: (f64, f64) = (6.0, 12.0107);
const N: (f64, f64) = (7.0, 14.0067);
const O: (f64, f64) = (8.0, 15.9994);
const NA: (f64, f64) = (11.0, 22.98977);
const AL: (f64, f64) = (13.0, 26.981_538_5);
const SI: (f64, f64) = (14.0, 28.0855);
const AR: (f64, f64) = (18.0, 39.948);
const TI: (f64, f64) = (22.0, 47.867);
const FE: (f64, f64) = (26.0, 55.845);
const NI: (f64, f64) = (28.0, 58.6934);
const CU: (f64, f64) = (29.0, 63.546);
const GE: (f64, f64) = (32.0, 72.64);
const AG: (f64, f64) = (47.0, 107.8682);
const SN: (f64, f64) = (50.0, 118.71);
const I: (f64, f64) = (53.0, 126.90447);
const CS: (f64, f64) = (55.0, 132.90545);
const W: (f64, f64) = (74.0, 183.84);
const AU: (f64, f64) = (79.0, 196.96655);
const PB: (f64, f64) = (82.0, 207.2);
const BI: (f64, f64) = (83.0, 208.98038);
const U: (f64, f64) = (92.0, 238.02891);

const fn el(e: (f64, f64), fraction: f64) -> (f64, f64, f64) {
    (e.0, e.1, fraction)
}

/// A one-element material.
const fn element(name: &'static str, elements: &'static [(f64, f64, f64)], density: f64, i_ev: f64, state: State) -> NistMaterial {
    NistMaterial {
        name,
        density,
        i_ev,
        state,
        elements,
    }
}

use State::{Gas, Liquid, Solid};

/// Every built-in material, in the order docs/em.md lists them.
pub const MATERIALS: &[NistMaterial] = &[
    element("G4_Be", &[el(BE, 1.0)], 1.848, 63.7, Solid),
    element("G4_C", &[el(C, 1.0)], 2.0, 81.0, Solid),
    element("G4_Al", &[el(AL, 1.0)], 2.699, 166.0, Solid),
    element("G4_Si", &[el(SI, 1.0)], 2.33, 173.0, Solid),
    element("G4_Ar", &[el(AR, 1.0)], 0.001_662_01, 188.0, Gas),
    element("G4_lAr", &[el(AR, 1.0)], 1.396, 188.0, Liquid),
    element("G4_Ti", &[el(TI, 1.0)], 4.54, 233.0, Solid),
    element("G4_Fe", &[el(FE, 1.0)], 7.874, 286.0, Solid),
    element("G4_Ni", &[el(NI, 1.0)], 8.902, 311.0, Solid),
    element("G4_Cu", &[el(CU, 1.0)], 8.96, 322.0, Solid),
    element("G4_Ge", &[el(GE, 1.0)], 5.323, 350.0, Solid),
    element("G4_Ag", &[el(AG, 1.0)], 10.5, 470.0, Solid),
    element("G4_Sn", &[el(SN, 1.0)], 7.31, 488.0, Solid),
    element("G4_W", &[el(W, 1.0)], 19.3, 727.0, Solid),
    element("G4_Au", &[el(AU, 1.0)], 19.32, 790.0, Solid),
    element("G4_Pb", &[el(PB, 1.0)], 11.35, 823.0, Solid),
    element("G4_U", &[el(U, 1.0)], 18.95, 890.0, Solid),
    NistMaterial {
        name: "G4_WATER",
        density: 1.0,
        i_ev: 78.0,
        state: Liquid,
        elements: &[el(H, 0.111_894), el(O, 0.888_106)],
    },
    NistMaterial {
        name: "G4_AIR",
        density: 0.001_204_79,
        i_ev: 85.7,
        state: Gas,
        elements: &[el(C, 0.000_124), el(N, 0.755_268), el(O, 0.231_781), el(AR, 0.012_827)],
    },
    NistMaterial {
        name: "G4_POLYSTYRENE",
        density: 1.06,
        i_ev: 68.7,
        state: Solid,
        elements: &[el(H, 0.077_418), el(C, 0.922_582)],
    },
    NistMaterial {
        name: "G4_PLASTIC_SC_VINYLTOLUENE",
        density: 1.032,
        i_ev: 64.7,
        state: Solid,
        elements: &[el(H, 0.085), el(C, 0.915)],
    },
    NistMaterial {
        name: "G4_SODIUM_IODIDE",
        density: 3.667,
        i_ev: 452.0,
        state: Solid,
        elements: &[el(NA, 0.153_373), el(I, 0.846_627)],
    },
    NistMaterial {
        name: "G4_CESIUM_IODIDE",
        density: 4.51,
        i_ev: 553.1,
        state: Solid,
        elements: &[el(CS, 0.511_549), el(I, 0.488_451)],
    },
    NistMaterial {
        name: "G4_BGO",
        density: 7.13,
        i_ev: 534.1,
        state: Solid,
        elements: &[el(O, 0.154_126), el(GE, 0.174_820), el(BI, 0.671_054)],
    },
    // Lead tungstate (CMS ECAL): PbWO₄ at 8.28 g/cm³ (as Geant4's G4_PbWO4); NIST's ESTAR has no
    // I for it, so I follows Bragg's additivity rule over the electrons,
    // ln I = Σ wᵢ (Zᵢ/Aᵢ) ln Iᵢ / Σ wᵢ (Zᵢ/Aᵢ), with the elements' ICRU 37 values (O 95 eV,
    // W 727 eV, Pb 823 eV): 542.7 eV.
    NistMaterial {
        name: "G4_PbWO4",
        density: 8.28,
        i_ev: 542.7,
        state: Solid,
        elements: &[el(O, 0.140_642), el(W, 0.404_011), el(PB, 0.455_347)],
    },
    // Geant4's "vacuum": hydrogen gas at the mean density of the universe, 1e-25 g/cm³, with
    // hydrogen's I of 21.8 eV (as Geant4's G4_Galactic).
    NistMaterial {
        name: "G4_Galactic",
        density: 1e-25,
        i_ev: 21.8,
        state: Gas,
        elements: &[el(H, 1.0)],
    },
];

/// The names of [`MATERIALS`], comma-separated (for messages and documentation).
pub const NAMES: &str = "G4_Be, G4_C, G4_Al, G4_Si, G4_Ar, G4_lAr, G4_Ti, G4_Fe, G4_Ni, G4_Cu, G4_Ge, G4_Ag, G4_Sn, \
G4_W, G4_Au, G4_Pb, G4_U, G4_WATER, G4_AIR, G4_POLYSTYRENE, G4_PLASTIC_SC_VINYLTOLUENE, G4_SODIUM_IODIDE, \
G4_CESIUM_IODIDE, G4_BGO, G4_PbWO4, G4_Galactic";

/// The built-in material of this name (exact, as Geant4 spells it).
#[must_use]
pub fn find(name: &str) -> Option<&'static NistMaterial> {
    MATERIALS.iter().find(|m| m.name == name)
}

impl NistMaterial {
    fn components(&self) -> Vec<Component> {
        self.elements.iter().map(|&(z, a, fraction)| Component { z, a, fraction }).collect()
    }

    /// The material of the Klein–Nishina mini-app (density and composition).
    #[must_use]
    pub fn material(&self) -> Material {
        Material {
            name: self.name.to_string(),
            density: self.density,
            elements: self.components(),
        }
    }

    /// The shower material (with I, state and the density effect).
    #[must_use]
    pub fn shower_material(&self) -> ShowerMaterial {
        let density_effect = (self.name == "G4_Pb").then(DensityEffect::lead_1984);
        ShowerMaterial::new(MaterialSpec {
            name: self.name.to_string(),
            density: self.density,
            i_ev: self.i_ev,
            state: Some(self.state),
            elements: self.components(),
            density_effect,
        })
        .expect("built-in NIST material passes the material checks (tested)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_material_is_valid_and_listed() {
        let names: Vec<&str> = NAMES.split(", ").collect();
        assert_eq!(names, MATERIALS.iter().map(|m| m.name).collect::<Vec<_>>());
        for m in MATERIALS {
            assert!(!m.elements.is_empty(), "{}", m.name);
            m.material().check().unwrap_or_else(|e| panic!("{}: {e:?}", m.name));
            let s = m.shower_material();
            assert_eq!(s.state, m.state);
        }
        assert_eq!(find("G4_Al").unwrap().material(), Material::aluminium());
        assert!(find("G4_XX").is_none());
    }

    /// Radiation lengths against the PDG's "Atomic and nuclear properties of materials" tables
    /// (X₀ in g/cm²), an independent check of densities, compositions and molar masses.
    #[test]
    fn radiation_lengths_match_the_pdg_tables() {
        let pdg = [
            ("G4_Pb", 6.37),
            ("G4_W", 6.76),
            ("G4_Cu", 12.86),
            ("G4_Fe", 13.84),
            ("G4_Si", 21.82),
            ("G4_lAr", 19.55),
            ("G4_WATER", 36.08),
            ("G4_AIR", 36.62),
            ("G4_POLYSTYRENE", 43.79),
            ("G4_CESIUM_IODIDE", 8.39),
            ("G4_BGO", 7.97),
            ("G4_PbWO4", 7.39),
        ];
        for (name, x0) in pdg {
            let m = find(name).unwrap().shower_material();
            let got = m.radiation_length * m.density;
            assert!((got / x0 - 1.0).abs() < 5e-3, "{name}: X0 {got} g/cm² vs PDG {x0}");
        }
    }
}
