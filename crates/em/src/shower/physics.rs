//! The shower physics of one material, built once on the host (params): the process list of
//! Geant4 10.3's `emstandard_opt0` as far as warpdrive has it, with the tables the stepping loop
//! reads.
//!
//! | particle | continuous | discrete |
//! |---|---|---|
//! | γ | — | Compton (Klein–Nishina), photoelectric (+ fluorescence), conversion (Bethe–Heitler), Rayleigh |
//! | e⁻ | ionisation + bremsstrahlung below the cuts, MSC | Møller δ rays, bremsstrahlung photons |
//! | e⁺ | the same | Bhabha δ rays, bremsstrahlung photons, annihilation in flight |
//!
//! Smooth cross sections are tabulated on the [`TableOptions`] log grid; the photoelectric cross
//! section has absorption edges and is evaluated from its per-element data at every use.

use super::cuts::EnergyCuts;
use super::grid::LogGrid;
use super::material::ShowerMaterial;
use super::msc::MscTables;
use super::tables::{IonisationTables, TableOptions};
use super::{annihilation, brems, pair, photoelectric, rayleigh, Particle};
use crate::xs::{cross_section_per_atom as compton_per_atom, BARN};
use rayon::prelude::*;
use std::collections::HashMap;

/// Tables of e⁻ or e⁺ in one material.
#[derive(Clone, Debug, PartialEq)]
pub struct ChargedPhysics {
    /// Total restricted dE/dx (ionisation + bremsstrahlung below the cuts), range, inverse
    /// range and the δ-ray cross section.
    pub eloss: IonisationTables,
    /// Bremsstrahlung photons above the γ cut: Σ [1/cm] from the cut up (0 below).
    pub brems_xs: Option<LogGrid>,
}

/// Photon cross sections of one material.
#[derive(Clone, Debug, PartialEq)]
pub struct GammaPhysics {
    pub compton: LogGrid,
    pub pair: LogGrid,
    pub rayleigh: LogGrid,
}

/// Everything the loop needs for one material.
#[derive(Clone, Debug)]
pub struct MaterialPhysics {
    pub material: ShowerMaterial,
    pub cuts: EnergyCuts,
    pub electron: ChargedPhysics,
    pub positron: ChargedPhysics,
    pub gamma: GammaPhysics,
    pub msc: MscTables,
}

/// The photon processes, in the order the loop selects them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GammaProcess {
    Compton,
    Photoelectric,
    Conversion,
    Rayleigh,
}

/// The discrete processes of e±.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChargedProcess {
    DeltaRay,
    Brems,
    Annihilation,
}

impl MaterialPhysics {
    #[must_use]
    pub fn build(material: &ShowerMaterial, cuts: EnergyCuts, opts: &TableOptions) -> Self {
        let k_cut = cuts.gamma;
        // The restricted bremsstrahlung loss below the γ cut is the same function for e⁻ and e⁺
        // (and the costliest part of their tables): evaluated once at every energy the two table
        // builds ask for, keyed by the energy's bits, and looked up there — the same values, bit
        // for bit, as evaluating it in each build (any energy not in the list is evaluated).
        let mut energies = super::tables::radiative_energies(opts);
        energies.sort_unstable_by_key(|e| e.to_bits());
        energies.dedup_by_key(|e| e.to_bits());
        let loss: HashMap<u64, f64> = energies
            .par_iter()
            .map(|&e| (e.to_bits(), brems::restricted_loss(material, e, k_cut)))
            .collect();
        let radiative = |e: f64| match loss.get(&e.to_bits()) {
            Some(&v) => v,
            None => brems::restricted_loss(material, e, k_cut),
        };
        // Photons above the cut: one table for e⁻ and e⁺ alike (the same function again).
        let brems_xs =
            (k_cut < opts.e_max).then(|| LogGrid::new(k_cut, opts.e_max, opts.bins_per_decade, |e| brems::macro_xs(material, e, k_cut)));
        let charged = |p: Particle| {
            let eloss = IonisationTables::build_with_radiative(material, p, cuts.electron, opts, &radiative);
            ChargedPhysics {
                eloss,
                brems_xs: brems_xs.clone(),
            }
        };
        let grid = |f: &(dyn Fn(f64) -> f64 + Sync)| LogGrid::new(opts.e_min, opts.e_max, opts.bins_per_decade, f);
        let gamma = GammaPhysics {
            compton: grid(&|e| compton_macro_xs(material, e)),
            pair: grid(&|e| pair::macro_xs(material, e)),
            rayleigh: grid(&|e| rayleigh::macro_xs(material, e)),
        };
        // The tables are pure functions of the material: build e⁻ and e⁺ side by side.
        let (electron, positron) = rayon::join(|| charged(Particle::Electron), || charged(Particle::Positron));
        MaterialPhysics {
            material: material.clone(),
            cuts,
            electron,
            positron,
            gamma,
            msc: MscTables::build(material, opts),
        }
    }

    #[must_use]
    pub fn charged(&self, p: Particle) -> &ChargedPhysics {
        match p {
            Particle::Positron => &self.positron,
            _ => &self.electron,
        }
    }

    /// Σ [1/cm] of one photon process at energy `e` [MeV].
    #[must_use]
    pub fn gamma_xs(&self, process: GammaProcess, e: f64) -> f64 {
        match process {
            GammaProcess::Compton => self.gamma.compton.eval(e),
            GammaProcess::Photoelectric => photoelectric::macro_xs(&self.material, e),
            GammaProcess::Conversion => {
                if e <= 2.0 * super::ELECTRON_MASS {
                    0.0
                } else {
                    self.gamma.pair.eval(e)
                }
            }
            GammaProcess::Rayleigh => self.gamma.rayleigh.eval(e),
        }
    }

    /// Σ [1/cm] of one discrete process of e± of kinetic energy `e` [MeV].
    #[must_use]
    pub fn charged_xs(&self, p: Particle, process: ChargedProcess, e: f64) -> f64 {
        let c = self.charged(p);
        match process {
            ChargedProcess::DeltaRay => c.eloss.macro_xs(e),
            ChargedProcess::Brems => match &c.brems_xs {
                Some(g) if e > g.front() => g.eval(e),
                _ => 0.0,
            },
            ChargedProcess::Annihilation => {
                if p == Particle::Positron {
                    annihilation::macro_xs(&self.material, e)
                } else {
                    0.0
                }
            }
        }
    }

    /// The total discrete Σ of e± at `e`.
    #[must_use]
    pub fn charged_total_xs(&self, p: Particle, e: f64) -> f64 {
        [ChargedProcess::DeltaRay, ChargedProcess::Brems, ChargedProcess::Annihilation]
            .iter()
            .map(|&q| self.charged_xs(p, q, e))
            .sum()
    }

    /// An upper bound of the total discrete Σ of e± over energies [e_lo, e_hi] — the majorant of
    /// the integral approach (Geant4 PRM "Integral approach"): the tables are linear between
    /// their points, so the maximum is at an end or at a grid point inside; annihilation
    /// (monotonically falling) is bounded by its value at e_lo.
    #[must_use]
    pub fn charged_max_xs(&self, p: Particle, e_lo: f64, e_hi: f64) -> f64 {
        let c = self.charged(p);
        let table_max = |g: Option<&LogGrid>| -> f64 {
            let Some(g) = g else { return 0.0 };
            let at = |e: f64| if e > g.front() { g.eval(e) } else { 0.0 };
            let mut m = at(e_lo).max(at(e_hi));
            let i0 = g.energy.partition_point(|&x| x <= e_lo);
            for i in i0..g.len() {
                if g.energy[i] >= e_hi {
                    break;
                }
                m = m.max(g.value[i]);
            }
            m
        };
        let annih = if p == Particle::Positron {
            annihilation::macro_xs(&self.material, e_lo)
        } else {
            0.0
        };
        table_max(c.eloss.xs.as_ref()) + table_max(c.brems_xs.as_ref()) + annih
    }
}

/// Compton Σ = Σ_i n_i σ_KN(E, Z_i) [1/cm] with Geant4's empirical per-atom fit ([`crate::xs`]).
#[must_use]
pub fn compton_macro_xs(m: &ShowerMaterial, e: f64) -> f64 {
    m.elements
        .iter()
        .zip(&m.atom_density)
        .map(|(el, n)| n * compton_per_atom(e, el.z) * BARN)
        .sum()
}
