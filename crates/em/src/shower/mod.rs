//! Electromagnetic showers (γ, e⁻, e⁺) in a layered sampling calorimeter (issue #15; spec
//! `specs/em.md` §2.6–2.7), validated against Geant4 10.3 TestEm3 (docs/em.md).
//!
//! Params (built once on the host):
//! * [`material`]: density, elements, mean excitation energy; electron density, radiation
//!   length (Tsai), Sternheimer density-effect parameters ([`density_effect`]);
//! * [`cuts`]: production cuts given as a range, converted to energy thresholds per material
//!   and particle the way Geant4 10.3 converts them;
//! * [`geometry`]: a stack of slabs (TestEm3: 50 × [2.3 mm Pb + 5.7 mm lAr]), locating a point
//!   and the distance to the next boundary;
//! * [`ionisation`]: Berger–Seltzer restricted dE/dx and the Møller/Bhabha δ-ray cross sections
//!   above the cut; [`grid`] + [`tables`]: those on uniform-in-ln E grids, with range and
//!   inverse range;
//! * [`brems`]: e± bremsstrahlung (Tsai's screened Bethe–Heitler cross section, Coulomb and
//!   dielectric corrections): cross sections, restricted radiative loss, photon sampling;
//! * [`interaction`]: the [`interaction::Secondary`] an interactor returns, direction helpers;
//! * [`delta_ray`] (Møller/Bhabha δ rays) and [`annihilation`] (e⁺e⁻ → γγ): interactors;
//! * [`pair`] (Bethe–Heitler γ → e⁻e⁺), [`photoelectric`] (photo-absorption with edges and K
//!   fluorescence, xraylib data), [`rayleigh`] (coherent scattering, xraylib form factors);
//! * [`msc`]: Urban-type multiple scattering of e± (transport mean free path, true ↔ geometric
//!   path, angular distribution, lateral displacement, UseSafety step limit);
//! * [`physics`]: the process list and tables per material.
//!
//! Transport (CPU): [`transport`] — [`transport::ShowerPhysics`] (a calorimeter with the physics
//! of its materials, [`transport::ShowerPhysics::testem3`]) and the stepping loop of one event;
//! [`fluctuations`]: restricted-loss straggling; [`run`]: many events and their summary;
//! [`output`]: profile Parquet and PNG; [`volume_plot`]: `em run`'s deposit per volume (PNG); [`reference`]: Geant4 10.3's TestEm3 numbers (its analogue
//! and its secondary-biased run) and the bounds.
//!
//! Transport (GPU): [`gpu`] + `kernels/shower.cu` — the same loop, one thread per track, the
//! tracks of a batch of events generation by generation, integer tallies.
//!
//! Units: cm, g, MeV (as the rest of the crate).

pub mod annihilation;
pub mod brems;
pub mod cuts;
pub mod delta_ray;
pub mod density_effect;
pub mod detector;
pub mod fluctuations;
pub mod geometry;
pub mod gpu;
pub mod grid;
pub mod interaction;
pub mod ionisation;
pub mod material;
pub mod msc;
pub mod output;
pub mod pair;
pub mod photoelectric;
pub mod physics;
pub mod rayleigh;
pub mod reference;
pub mod run;
pub mod tables;
pub mod transport;
pub mod volume_plot;

pub use crate::xs::ELECTRON_MASS;

/// Classical electron radius r_e [cm] (CODATA 2018).
pub const ELECTRON_RADIUS: f64 = 2.817_940_326_2e-13;
/// Fine-structure constant α (CODATA 2018).
pub const FINE_STRUCTURE: f64 = 1.0 / 137.035_999_084;
/// ħc [MeV·cm] (CODATA 2018).
pub const HBAR_C: f64 = 197.326_980_4e-13;
/// 2π r_e² m_e c² [MeV·cm²]: the prefactor of the Bethe and Møller/Bhabha formulas.
pub const TWOPI_MC2_RCL2: f64 = 2.0 * std::f64::consts::PI * ELECTRON_MASS * ELECTRON_RADIUS * ELECTRON_RADIUS;
/// 1 eV and 1 keV in MeV.
pub const EV: f64 = 1e-6;
pub const KEV: f64 = 1e-3;

/// Particles of a shower.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Particle {
    Gamma,
    Electron,
    Positron,
}

impl Particle {
    pub const ALL: [Particle; 3] = [Particle::Gamma, Particle::Electron, Particle::Positron];

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Particle::Gamma => "gamma",
            Particle::Electron => "e-",
            Particle::Positron => "e+",
        }
    }
}
