//! The physics list: processes with their cross sections and interactors (Celeritas'
//! params/interactor split). The stepping loop only asks the list for the total macroscopic
//! cross section and for an interaction; adding the spec's phase-2 processes (pair production,
//! photoelectric effect, annihilation, ionisation, bremsstrahlung) means adding a [`Process`]
//! to the list, not touching the loop.

use crate::klein_nishina;
use crate::material::Material;
use crate::xs::{XsGrid, ELECTRON_MASS};
use warpdrive_core::RandomStream;

/// A secondary particle created by an interaction (the Compton electron).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Secondary {
    /// Kinetic energy [MeV].
    pub energy: f64,
    pub direction: [f64; 3],
}

impl Secondary {
    /// Momentum of the electron [MeV/c]: √(T(T + 2m)).
    #[must_use]
    pub fn energy_momentum(&self) -> f64 {
        (self.energy * (self.energy + 2.0 * ELECTRON_MASS)).sqrt()
    }
}

/// What an interaction did to the photon.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Interaction {
    /// Photon energy after the interaction [MeV] (0: absorbed).
    pub energy: f64,
    pub direction: [f64; 3],
    /// Energy deposited at the interaction point [MeV].
    pub energy_deposition: f64,
    pub secondary: Option<Secondary>,
}

/// A discrete process: its macroscopic cross section and its interactor.
pub trait Process: Send + Sync {
    fn name(&self) -> &str;
    /// Σ(E) [1/cm].
    fn macro_xs(&self, energy: f64) -> f64;
    fn interact(&self, energy: f64, dir: [f64; 3], rng: &mut RandomStream) -> Interaction;
    /// The tabulated cross section, for device code that evaluates it itself.
    fn xs_grid(&self) -> Option<&XsGrid> {
        None
    }
}

/// Compton scattering with the tabulated Geant4 cross section and Klein–Nishina sampling.
pub struct Compton {
    pub xs: XsGrid,
}

impl Process for Compton {
    fn name(&self) -> &str {
        "compt"
    }
    fn macro_xs(&self, energy: f64) -> f64 {
        self.xs.eval(energy)
    }
    fn interact(&self, energy: f64, dir: [f64; 3], rng: &mut RandomStream) -> Interaction {
        klein_nishina::interact(energy, dir, rng)
    }
    fn xs_grid(&self) -> Option<&XsGrid> {
        Some(&self.xs)
    }
}

/// The processes of a photon in one material.
pub struct PhysicsList {
    pub processes: Vec<Box<dyn Process>>,
}

impl PhysicsList {
    /// The mini-app: Compton only, Geant4 binning (7 bins per decade).
    #[must_use]
    pub fn compton_only(material: &Material) -> PhysicsList {
        PhysicsList {
            processes: vec![Box::new(Compton {
                xs: XsGrid::build(material, 7),
            })],
        }
    }

    /// Total macroscopic cross section [1/cm].
    #[inline]
    #[must_use]
    pub fn total_xs(&self, energy: f64) -> f64 {
        self.processes.iter().map(|p| p.macro_xs(energy)).sum()
    }

    /// Interact with the process chosen in proportion to its cross section. With a single
    /// process no draw is spent on the choice (so the mini-app's random sequence is the
    /// Compton sampling alone).
    #[inline]
    pub fn interact(&self, energy: f64, dir: [f64; 3], rng: &mut RandomStream) -> Interaction {
        if self.processes.len() == 1 {
            return self.processes[0].interact(energy, dir, rng);
        }
        let total = self.total_xs(energy);
        let mut x = rng.uniform_f64() * total;
        for p in &self.processes {
            let s = p.macro_xs(energy);
            if x < s {
                return p.interact(energy, dir, rng);
            }
            x -= s;
        }
        self.processes[self.processes.len() - 1].interact(energy, dir, rng)
    }
}
