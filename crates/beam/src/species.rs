//! Particle species: rest energy and charge of the tracked particles, by name or given.
//!
//! The transfer maps use the normalised strengths of the lattice (K1 = (1/Bρ) ∂B_y/∂x for the
//! reference particle, ELEGANT's convention), so the species enters the maps only through β0γ0.
//! It matters for the reference momentum given in MeV/c and for collective effects: a particle
//! of charge q·e in the field of its own bunch (total charge Q) gains the energy q·V, with V ∝ Q.
//!
//! Rest energies: CODATA 2018 (electron, proton, muon; P. J. Mohr et al., Rev. Mod. Phys. 93,
//! 025010 (2021)) and the Review of Particle Physics (charged pion, deuteron; R. L. Workman et
//! al. (Particle Data Group), PTEP 2022, 083C01).

use std::fmt;
use std::str::FromStr;

/// Electron rest energy [eV] (CODATA 2018).
pub const ELECTRON_MASS_EV: f64 = 0.510_998_950_00e6;
/// Proton rest energy [eV] (CODATA 2018).
pub const PROTON_MASS_EV: f64 = 938.272_088_16e6;
/// Muon rest energy [eV] (CODATA 2018).
pub const MUON_MASS_EV: f64 = 105.658_375_5e6;
/// Charged pion rest energy [eV] (PDG 2022).
pub const PION_MASS_EV: f64 = 139.570_39e6;
/// Deuteron rest energy [eV] (CODATA 2018).
pub const DEUTERON_MASS_EV: f64 = 1_875.612_942_57e6;

/// The named species: (names accepted, rest energy [eV], charge [e]). The first name is the
/// one shown.
pub const NAMED: [(&[&str], f64, f64); 9] = [
    (&["electron", "e-", "e"], ELECTRON_MASS_EV, -1.0),
    (&["positron", "e+"], ELECTRON_MASS_EV, 1.0),
    (&["proton", "p"], PROTON_MASS_EV, 1.0),
    (&["antiproton", "pbar", "p-"], PROTON_MASS_EV, -1.0),
    (&["muon", "mu-"], MUON_MASS_EV, -1.0),
    (&["antimuon", "mu+"], MUON_MASS_EV, 1.0),
    (&["pi+", "pion+"], PION_MASS_EV, 1.0),
    (&["pi-", "pion-"], PION_MASS_EV, -1.0),
    (&["deuteron", "d"], DEUTERON_MASS_EV, 1.0),
];

/// The lightest and heaviest rest energy accepted for a custom species [eV]: from a tenth of
/// the electron's to well above any nucleus (uranium: 2.2e11 eV).
pub const MASS_RANGE_EV: (f64, f64) = (5e4, 1e13);
/// The largest charge number accepted (fully stripped uranium has 92).
pub const MAX_CHARGE: f64 = 128.0;

/// The tracked particle kind.
#[derive(Clone, Debug, PartialEq)]
pub struct Species {
    /// The name it was chosen by (`custom` for a given mass and charge).
    pub name: String,
    /// Rest energy m c² [eV].
    pub mass_ev: f64,
    /// Charge in units of the elementary charge (signed).
    pub charge: f64,
}

impl Default for Species {
    fn default() -> Self {
        Self::electron()
    }
}

impl Species {
    pub fn electron() -> Self {
        Self {
            name: "electron".into(),
            mass_ev: ELECTRON_MASS_EV,
            charge: -1.0,
        }
    }

    /// The names that [`FromStr`] accepts, as a list for messages.
    pub fn names() -> String {
        let names: Vec<&str> = NAMED.iter().map(|(n, _, _)| n[0]).collect();
        names.join(", ")
    }

    /// A species given by its rest energy [eV] and charge [e]; `Err` says which is out of range.
    pub fn custom(mass_ev: f64, charge: f64) -> Result<Self, (&'static str, String)> {
        let (lo, hi) = MASS_RANGE_EV;
        if !(mass_ev.is_finite() && (lo..=hi).contains(&mass_ev)) {
            return Err((
                "mass",
                format!("{} MeV: must be between {} and {} MeV/c²", mass_ev / 1e6, lo / 1e6, hi / 1e6),
            ));
        }
        if !(charge.is_finite() && charge != 0.0 && charge.abs() <= MAX_CHARGE) {
            return Err((
                "particle_charge",
                format!("{charge}: must be a non-zero charge number of at most {MAX_CHARGE} in magnitude (units of e)"),
            ));
        }
        Ok(Self {
            name: "custom".into(),
            mass_ev,
            charge,
        })
    }
}

impl FromStr for Species {
    type Err = String;

    /// A species by name (case-insensitive): electron, positron, proton, antiproton, muon,
    /// antimuon, pi+, pi-, deuteron and their short names.
    fn from_str(s: &str) -> Result<Self, String> {
        let key = s.trim().to_ascii_lowercase();
        NAMED
            .iter()
            .find(|(names, _, _)| names.contains(&key.as_str()))
            .map(|(names, mass_ev, charge)| Species {
                name: names[0].to_string(),
                mass_ev: *mass_ev,
                charge: *charge,
            })
            .ok_or_else(|| format!("{s}: expected {} (or a custom mass and charge)", Self::names()))
    }
}

impl fmt::Display for Species {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (m = {} MeV/c², q = {:+} e)", self.name, self.mass_ev / 1e6, self.charge)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_masses_and_charges() {
        let p: Species = "Proton".parse().unwrap();
        assert_eq!((p.name.as_str(), p.mass_ev, p.charge), ("proton", PROTON_MASS_EV, 1.0));
        let e: Species = "e+".parse().unwrap();
        assert_eq!((e.name.as_str(), e.charge), ("positron", 1.0));
        assert_eq!("mu-".parse::<Species>().unwrap().mass_ev, 105.658_375_5e6);
        assert_eq!("pbar".parse::<Species>().unwrap().charge, -1.0);
        let err = "kaon".parse::<Species>().unwrap_err();
        assert!(
            err.starts_with("kaon: expected electron, positron, proton, antiproton, muon"),
            "{err}"
        );
    }

    #[test]
    fn custom_species_are_range_checked() {
        let c = Species::custom(931.494e6 * 12.0, 6.0).unwrap();
        assert_eq!((c.name.as_str(), c.charge), ("custom", 6.0));
        assert_eq!(Species::custom(0.0, 1.0).unwrap_err().0, "mass");
        assert_eq!(Species::custom(f64::NAN, 1.0).unwrap_err().0, "mass");
        assert_eq!(Species::custom(1e9, 0.0).unwrap_err().0, "particle_charge");
        assert_eq!(Species::custom(1e9, 1e3).unwrap_err().0, "particle_charge");
    }
}
