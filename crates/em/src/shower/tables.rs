//! Ionisation tables of one material for e⁻ and e⁺ on uniform ln E grids: restricted dE/dx below
//! the e⁻ production threshold, the range R(E) = ∫ dE/(dE/dx) and its inverse, and the
//! macroscopic Møller/Bhabha cross section Σ above the threshold (mean free path λ = 1/Σ).
//!
//! Grid choice: Geant4's energy span, 100 eV to 100 TeV, with [`DEFAULT_BINS_PER_DECADE`] = 56
//! bins per decade by default. Geant4 itself uses 7 per decade but interpolates with cubic
//! splines; these tables are read by linear interpolation in E (as Celeritas ≤ 0.5, whose
//! regression runs use 56 per decade for that reason, spec §1.4/§2.3). With 56 the tabulated
//! dE/dx of lead is within 0.03 % of the formula at mid-bin above 10 keV and within 0.11 % in the
//! bins holding the formula's kinks (the δ-ray threshold; 0.25 √Z keV); with 7 within 1.7 %
//! (tests).
//! [`TableOptions::geant4`] gives Geant4's 7-per-decade layout (85 points).
//!
//! The δ-ray cut of both e⁻ and e⁺ ionisation is the *electron* production threshold (a δ ray
//! is an electron), as in Geant4.

use super::cuts::EnergyCuts;
use super::grid::LogGrid;
use super::ionisation::{delta_ray_macro_xs, restricted_dedx, threshold_energy};
use super::material::ShowerMaterial;
use super::Particle;
use rayon::prelude::*;
use warpdrive_core::pmath::Portable;

/// Default bins per decade (see the module doc).
pub const DEFAULT_BINS_PER_DECADE: usize = 56;

/// Energy span and density of the tables.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TableOptions {
    /// Lowest tabulated energy [MeV].
    pub e_min: f64,
    /// Highest tabulated energy [MeV].
    pub e_max: f64,
    pub bins_per_decade: usize,
}

impl Default for TableOptions {
    /// 100 eV – 100 TeV, 56 bins per decade (672 bins).
    fn default() -> Self {
        Self {
            e_min: 1e-4,
            e_max: 1e8,
            bins_per_decade: DEFAULT_BINS_PER_DECADE,
        }
    }
}

impl TableOptions {
    /// Geant4's defaults (G4EmParameters): 100 eV – 100 TeV, 7 bins per decade (84 bins).
    #[must_use]
    pub fn geant4() -> Self {
        Self {
            bins_per_decade: 7,
            ..Self::default()
        }
    }
}

/// Tables of one particle (e⁻ or e⁺) in one material.
#[derive(Clone, Debug, PartialEq)]
pub struct IonisationTables {
    pub particle: Particle,
    /// δ-ray production threshold [MeV].
    pub cut: f64,
    /// Restricted dE/dx [MeV/cm].
    pub dedx: LogGrid,
    /// Range [cm] on the same energies.
    pub range: LogGrid,
    /// Σ [1/cm] from the δ-ray threshold ([`threshold_energy`]) to `e_max`; `None` when the
    /// threshold is not below `e_max`.
    pub xs: Option<LogGrid>,
}

impl IonisationTables {
    /// Build the tables of `particle` in `material` for δ-ray threshold `cut` [MeV].
    #[must_use]
    pub fn build(material: &ShowerMaterial, particle: Particle, cut: f64, opts: &TableOptions) -> Self {
        Self::build_with_radiative(material, particle, cut, opts, &|_| 0.0)
    }

    /// As [`Self::build`], with `radiative(E)` [MeV/cm] (the restricted bremsstrahlung loss
    /// below the photon cut) added to dE/dx: the range and inverse range are then those of the
    /// total restricted loss, as Geant4 builds them for stepping.
    #[must_use]
    pub fn build_with_radiative(
        material: &ShowerMaterial,
        particle: Particle,
        cut: f64,
        opts: &TableOptions,
        radiative: &(dyn Fn(f64) -> f64 + Sync),
    ) -> Self {
        assert!(particle != Particle::Gamma, "ionisation tables of a photon");
        let f = |e: f64| restricted_dedx(material, particle, e, cut) + radiative(e);
        let dedx = LogGrid::new(opts.e_min, opts.e_max, opts.bins_per_decade, f);
        let range = range_grid(&dedx, f);
        let e_th = threshold_energy(particle, cut);
        let xs = (e_th < opts.e_max).then(|| {
            LogGrid::new(e_th, opts.e_max, opts.bins_per_decade, |e| {
                delta_ray_macro_xs(material, particle, e, cut)
            })
        });
        IonisationTables {
            particle,
            cut,
            dedx,
            range,
            xs,
        }
    }

    /// Restricted dE/dx [MeV/cm] at kinetic energy `e` [MeV]: the table, and below its first
    /// point dE/dx(E₀)·√(E/E₀) (dE/dx ∝ β at the lowest energies, as the range assumes).
    #[must_use]
    pub fn dedx(&self, e: f64) -> f64 {
        let e0 = self.dedx.front();
        if e < e0 {
            return self.dedx.value[0] * (e.max(0.0) / e0).sqrt();
        }
        self.dedx.eval(e)
    }

    /// Range [cm]: the table, and below its first point R(E₀)·√(E/E₀).
    #[must_use]
    pub fn range(&self, e: f64) -> f64 {
        let e0 = self.range.front();
        if e < e0 {
            return self.range.value[0] * (e.max(0.0) / e0).sqrt();
        }
        self.range.eval(e)
    }

    /// Inverse range: the energy [MeV] with range `r` [cm], the exact inverse of [`Self::range`]
    /// (binary search for the bin, then the inverse of the linear-in-E interpolation;
    /// E₀(r/R₀)² below the first point; the last energy beyond the last range).
    #[must_use]
    pub fn energy_from_range(&self, r: f64) -> f64 {
        let rv = &self.range.value;
        let ev = &self.range.energy;
        if r <= rv[0] {
            return ev[0] * (r.max(0.0) / rv[0]).powi(2);
        }
        let n = rv.len();
        if r >= rv[n - 1] {
            return ev[n - 1];
        }
        // rv is strictly increasing: the bin with rv[i] ≤ r < rv[i + 1].
        let i = rv.partition_point(|&x| x <= r) - 1;
        ev[i] + (r - rv[i]) * (ev[i + 1] - ev[i]) / (rv[i + 1] - rv[i])
    }

    /// Macroscopic δ-ray cross section Σ [1/cm] (0 below the threshold).
    #[must_use]
    pub fn macro_xs(&self, e: f64) -> f64 {
        match &self.xs {
            Some(g) if e > g.front() => g.eval(e),
            _ => 0.0,
        }
    }

    /// Mean free path λ = 1/Σ [cm] for a δ ray above the cut (infinite below the threshold).
    #[must_use]
    pub fn lambda(&self, e: f64) -> f64 {
        1.0 / self.macro_xs(e)
    }
}

/// Simpson intervals per bin of the range integral ([`range_grid`]).
const SIMPSON_N: usize = 16;

/// The Simpson nodes of the range integral over the bin `e_lo`..`e_hi`: (the energies, the step
/// in ln E). [`range_grid`] and [`radiative_energies`] both take them from here.
fn simpson_nodes(e_lo: f64, e_hi: f64) -> ([f64; SIMPSON_N + 1], f64) {
    let (u0, u1) = (e_lo.pln(), e_hi.pln());
    let h = (u1 - u0) / SIMPSON_N as f64;
    (std::array::from_fn(|k| (u0 + k as f64 * h).pexp()), h)
}

/// Every energy at which [`IonisationTables::build_with_radiative`] evaluates its `radiative`
/// loss with options `opts`: the dE/dx grid's points and the range integral's Simpson nodes
/// (repeats included). The loss does not depend on the particle, so a caller can evaluate it
/// once at these energies for both e⁻ and e⁺ (`physics::MaterialPhysics::build`).
#[must_use]
pub fn radiative_energies(opts: &TableOptions) -> Vec<f64> {
    let grid = LogGrid::new(opts.e_min, opts.e_max, opts.bins_per_decade, |_| 0.0);
    let mut energies = grid.energy.clone();
    for w in grid.energy.windows(2) {
        energies.extend(simpson_nodes(w[0], w[1]).0);
    }
    energies
}

/// Range on the energies of `dedx`: R(E₀) = 2E₀/S(E₀) (S ∝ √E below E₀, as Geant4's range
/// builder assumes), then R(E_{i+1}) = R(E_i) + ∫ E/S(E) d(ln E) over the bin by Simpson's rule
/// with 16 intervals, S evaluated by the formula `s` itself rather than the interpolated table.
fn range_grid(dedx: &LogGrid, s: impl Fn(f64) -> f64 + Sync) -> LogGrid {
    const N: usize = SIMPSON_N;
    let e0 = dedx.front();
    // Simpson's rule in ln E over each bin, the bins in parallel (independent), then summed in
    // order: the same values as one sequential loop.
    let integrals: Vec<f64> = (0..dedx.len() - 1)
        .into_par_iter()
        .map(|i| {
            let (nodes, h) = simpson_nodes(dedx.energy[i], dedx.energy[i + 1]);
            (0..=N)
                .map(|k| {
                    let e = nodes[k];
                    let w = if k == 0 || k == N {
                        1.0
                    } else if k % 2 == 1 {
                        4.0
                    } else {
                        2.0
                    };
                    w * e / s(e)
                })
                .sum::<f64>()
                * h
                / 3.0
        })
        .collect();
    let mut value = Vec::with_capacity(dedx.len());
    value.push(2.0 * e0 / dedx.value[0]);
    for (i, integral) in integrals.iter().enumerate() {
        value.push(value[i] + integral);
    }
    LogGrid { value, ..dedx.clone() }
}

/// The ionisation tables of one material: its production thresholds and the e⁻ and e⁺ tables.
#[derive(Clone, Debug, PartialEq)]
pub struct MaterialTables {
    pub cuts: EnergyCuts,
    pub electron: IonisationTables,
    pub positron: IonisationTables,
}

impl MaterialTables {
    /// Tables for `material` with production thresholds `cuts` (δ-ray cut = e⁻ threshold).
    #[must_use]
    pub fn build(material: &ShowerMaterial, cuts: EnergyCuts, opts: &TableOptions) -> Self {
        MaterialTables {
            cuts,
            electron: IonisationTables::build(material, Particle::Electron, cuts.electron, opts),
            positron: IonisationTables::build(material, Particle::Positron, cuts.electron, opts),
        }
    }

    #[must_use]
    pub fn get(&self, p: Particle) -> &IonisationTables {
        match p {
            Particle::Electron => &self.electron,
            Particle::Positron => &self.positron,
            Particle::Gamma => panic!("ionisation tables of a photon"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shower::cuts::RangeCuts;

    fn lead_tables(opts: &TableOptions) -> MaterialTables {
        let pb = ShowerMaterial::lead();
        MaterialTables::build(&pb, EnergyCuts::new(&pb, &RangeCuts::default()), opts)
    }

    /// Largest relative difference between table and formula at the bin midpoints (geometric)
    /// above `e_low` [MeV], leaving out the bin where the restriction sets in (a kink of the
    /// formula at the δ-ray threshold, which linear interpolation cannot follow); and the
    /// difference in that bin.
    fn worst_midbin(t: &IonisationTables, m: &ShowerMaterial, e_low: f64) -> (f64, f64) {
        let g = &t.dedx;
        let kink = threshold_energy(t.particle, t.cut);
        let err = |e: f64| (t.dedx(e) / restricted_dedx(m, t.particle, e, t.cut) - 1.0).abs();
        let mut worst = (0.0f64, 0.0);
        for i in 0..g.len() - 1 {
            let e = (g.energy[i] * g.energy[i + 1]).sqrt();
            if e <= e_low {
                continue;
            }
            if g.energy[i] < kink && kink < g.energy[i + 1] {
                worst.1 = err(e);
            } else {
                worst.0 = worst.0.max(err(e));
            }
        }
        worst
    }

    #[test]
    fn dedx_tables_follow_the_formula() {
        let pb = ShowerMaterial::lead();
        let fine = lead_tables(&TableOptions::default());
        assert_eq!(fine.electron.dedx.len(), 12 * 56 + 1);
        let coarse = lead_tables(&TableOptions::geant4());
        assert_eq!(coarse.electron.dedx.len(), 85);
        for p in [Particle::Electron, Particle::Positron] {
            // From 10 keV up (the smooth part) and from 1 keV up (including the kink of the
            // low-energy extrapolation at 0.25 √Z keV = 2.26 keV in lead).
            let (wf, kf) = worst_midbin(fine.get(p), &pb, 1e-2);
            let (wc, kc) = worst_midbin(coarse.get(p), &pb, 1e-2);
            let (wf_all, _) = worst_midbin(fine.get(p), &pb, 1e-3);
            eprintln!(
                "{p:?}: worst mid-bin dE/dx error above 10 keV {wf:.2e} (56/decade), {wc:.2e} (7/decade); \
                 above 1 keV {wf_all:.2e}; in the bin of the δ-ray threshold {kf:.2e} / {kc:.2e}"
            );
            assert!(wf < 3e-4, "{wf}");
            assert!(wc < 0.02, "{wc}");
            assert!(wf_all < 2e-3, "{wf_all}");
            assert!(kf < 2e-3, "{kf}");
        }
        // Below 2·cut (e⁻) and below the cut (e⁺) nothing is restricted.
        let t = &fine.electron;
        let e = 1.9 * t.cut;
        assert!(
            (restricted_dedx(&pb, Particle::Electron, e, t.cut) / restricted_dedx(&pb, Particle::Electron, e, f64::INFINITY) - 1.0).abs()
                < 1e-12
        );
        let e = 100.0;
        assert!(t.dedx(e) < restricted_dedx(&pb, Particle::Electron, e, f64::INFINITY));
        // Below the grid: ∝ √E.
        assert!((t.dedx(0.25e-4) / t.dedx.value[0] - 0.5).abs() < 1e-12);
    }

    #[test]
    fn range_integrates_and_inverts() {
        let pb = ShowerMaterial::lead();
        let t = &lead_tables(&TableOptions::default()).electron;
        assert!(t.range.value.windows(2).all(|w| w[1] > w[0]));
        // Against an independent fine integration from 100 eV (+ the same R(E₀)).
        let e0 = t.range.front();
        for &e in &[0.01, 1.0, 100.0] {
            let n = 200_000;
            let (u0, u1) = (e0.ln(), f64::ln(e));
            let h = (u1 - u0) / n as f64;
            let r: f64 = (0..n)
                .map(|k| {
                    let x = (u0 + (k as f64 + 0.5) * h).exp();
                    x / restricted_dedx(&pb, Particle::Electron, x, t.cut)
                })
                .sum::<f64>()
                * h
                + t.range.value[0];
            assert!((t.range(e) / r - 1.0).abs() < 1e-4, "{e}: {} vs {r}", t.range(e));
        }
        // Inverse range is the exact inverse, inside and below the grid.
        for &e in &[3e-5, 1.3e-4, 0.0172, 1.0, 5.5, 777.0, 3e7] {
            let back = t.energy_from_range(t.range(e));
            assert!((back / e - 1.0).abs() < 1e-10, "{e}: {back}");
        }
        // A 1 MeV electron in lead (1.37 MeV cut ⇒ unrestricted here): longer than ESTAR's CSDA
        // range 0.7843 g/cm² = 0.69 mm, which has bremsstrahlung (11 % of the loss) too.
        let r1 = t.range(1.0);
        eprintln!("1 MeV e- in lead, collision-only range {r1} cm");
        assert!(r1 > 0.069 && r1 < 0.09, "{r1}");
    }

    #[test]
    fn delta_ray_cross_section_tables() {
        let pb = ShowerMaterial::lead();
        let tabs = lead_tables(&TableOptions::default());
        for (p, t) in [(Particle::Electron, &tabs.electron), (Particle::Positron, &tabs.positron)] {
            let g = t.xs.as_ref().unwrap();
            assert!((g.front() / threshold_energy(p, t.cut) - 1.0).abs() < 1e-12);
            assert_eq!(g.value[0], 0.0);
            assert_eq!(t.macro_xs(0.99 * g.front()), 0.0);
            assert!(t.lambda(0.5 * g.front()).is_infinite());
            for &e in &[10.0, 1e3, 1e6] {
                let want = delta_ray_macro_xs(&pb, p, e, t.cut);
                assert!((t.macro_xs(e) / want - 1.0).abs() < 1e-3, "{p:?} {e}");
                assert!((t.lambda(e) * want - 1.0).abs() < 1e-3);
            }
        }
        // At high energy Møller and Bhabha agree (both → 2π r_e² mc² n_e/cut).
        let (e, c) = (1e6, tabs.cuts.electron);
        let asym = crate::shower::TWOPI_MC2_RCL2 * pb.electron_density / c;
        assert!((tabs.electron.macro_xs(e) / asym - 1.0).abs() < 0.01);
        assert!((tabs.positron.macro_xs(e) / asym - 1.0).abs() < 0.01);
    }
}
