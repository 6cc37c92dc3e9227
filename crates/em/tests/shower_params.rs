//! Shower params against external references (issue #15): TestEm3's production thresholds
//! against Geant4 10.3, collision stopping powers, density-effect corrections and CSDA ranges
//! against NIST ESTAR.
//!
//! ESTAR numbers (M. J. Berger et al., NIST Standard Reference Database 124, ESTAR; ICRU 37
//! method), collision stopping power [MeV cm²/g] and δ, as ESTAR tabulates them for its
//! built-in materials (read from the ESTAR tables of the `clanElectrons` R package's
//! `df.NIST.estar.SP` data set, downloaded from NIST in February 2026):
//!
//! | T [MeV] | lead S_col | lead δ | argon (gas) S_col | argon δ |
//! |---|---|---|---|---|
//! | 1   | 0.9939 | 0.1809 | 1.376 | 0      |
//! | 10  | 1.2010 | 1.523  | 1.678 | 0      |
//! | 100 | 1.4230 | 4.699  | 2.105 | 0.6589 |
//!
//! ESTAR's lead: ρ = 11.35 g/cm³, I = 823 eV; argon: gas, ρ = 1.66201e-3 g/cm³, I = 188 eV.

use warpdrive_em::shower::density_effect::State;
use warpdrive_em::shower::ionisation::restricted_dedx;
use warpdrive_em::shower::material::ShowerMaterial;
use warpdrive_em::shower::tables::{IonisationTables, TableOptions};
use warpdrive_em::shower::transport::ShowerPhysics;
use warpdrive_em::shower::Particle;

const ESTAR_LEAD: [(f64, f64, f64); 3] = [(1.0, 0.9939, 0.1809), (10.0, 1.2010, 1.523), (100.0, 1.4230, 4.699)];
const ESTAR_ARGON: [(f64, f64, f64); 3] = [(1.0, 1.376, 0.0), (10.0, 1.678, 0.0), (100.0, 2.105, 0.6589)];

fn gaseous_argon() -> ShowerMaterial {
    ShowerMaterial::single("argon", 18.0, 39.948, 1.662_01e-3, 188.0, State::Gas, None)
}

fn compare(m: &ShowerMaterial, table: &[(f64, f64, f64)], delta_tol: f64) {
    for &(t, s_col, delta) in table {
        let got = restricted_dedx(m, Particle::Electron, t, f64::INFINITY) / m.density;
        let rel = got / s_col - 1.0;
        eprintln!(
            "{} {t} MeV: S_col {got:.4} vs ESTAR {s_col} MeV cm²/g ({:+.2} %), δ {:.4} vs {delta}",
            m.name,
            100.0 * rel,
            m.delta(t)
        );
        assert!(rel.abs() < 0.03, "{} {t} MeV: {got} vs {s_col}", m.name);
        assert!(
            (m.delta(t) - delta).abs() < delta_tol,
            "{} {t} MeV δ: {} vs {delta}",
            m.name,
            m.delta(t)
        );
    }
}

#[test]
fn lead_collision_stopping_power_matches_estar() {
    // Sternheimer 1984 parameters: δ within the fit's quoted error (0.019) plus rounding.
    compare(&ShowerMaterial::lead(), &ESTAR_LEAD, 0.03);
}

#[test]
fn argon_collision_stopping_power_matches_estar() {
    // General Sternheimer–Peierls formula for the gas: δ(100 MeV) 0.3 below ESTAR's.
    compare(&gaseous_argon(), &ESTAR_ARGON, 0.4);
}

#[test]
fn lead_with_the_general_formula_is_still_within_3_percent() {
    // Without the 1984 table the general formula's δ is 0.48 low at 10 MeV: +2.4 % (1.2301 vs
    // 1.201), +1.3 % at 1 MeV, +1.1 % at 100 MeV — why the built-in lead takes the table.
    let m = ShowerMaterial::single("Pb-general", 82.0, 207.19, 11.35, 823.0, State::Solid, None);
    for &(t, s_col, _) in &ESTAR_LEAD {
        let got = restricted_dedx(&m, Particle::Electron, t, f64::INFINITY) / m.density;
        assert!(got / s_col - 1.0 < 0.03 && got > s_col, "{t}: {got} vs {s_col}");
    }
}

#[test]
fn argon_with_sternheimer_1984_parameters_from_toml() {
    // Sternheimer, Berger & Seltzer (1984) Table 1, argon (gas): −C = 11.9480, x0 = 1.7635,
    // x1 = 4.4855, a = 0.19714, m = 2.9618: δ(100 MeV) and S_col then agree with ESTAR closely.
    let text = "name = \"argon-1984\"\ndensity = 1.66201e-3\nI_eV = 188\nstate = \"gas\"\n\
                [[elements]]\nZ = 18\nA = 39.948\nfraction = 1\n\
                [density_effect]\nC = 11.9480\nx0 = 1.7635\nx1 = 4.4855\na = 0.19714\nm = 2.9618\n";
    let m = ShowerMaterial::from_toml_str(text, std::path::Path::new("argon.toml")).unwrap();
    compare(&m, &ESTAR_ARGON, 0.04); // the fit's quoted δ error for argon is 0.037
    let got = restricted_dedx(&m, Particle::Electron, 100.0, f64::INFINITY) / m.density;
    assert!((got / 2.105 - 1.0).abs() < 0.003, "{got}");
}

#[test]
fn argon_csda_range_matches_estar() {
    // ESTAR CSDA ranges of argon: 0.1175 g/cm² at 0.3 MeV, 0.5939 g/cm² at 1 MeV. ESTAR's
    // include bremsstrahlung (0.7 % and 2 % of the loss there), these tables not yet (no cut:
    // unrestricted collision loss), so they come out slightly longer.
    let m = gaseous_argon();
    let t = IonisationTables::build(&m, Particle::Electron, f64::INFINITY, &TableOptions::default());
    for (e, estar) in [(0.3, 0.1175), (1.0, 0.5939)] {
        let r = t.range(e) * m.density;
        eprintln!(
            "argon CSDA {e} MeV: {r:.4} vs ESTAR {estar} g/cm² ({:+.2} %)",
            100.0 * (r / estar - 1.0)
        );
        assert!(r > estar && r / estar - 1.0 < 0.03, "{e}: {r} vs {estar}");
    }
}

#[test]
fn testem3_params_carry_geant4_thresholds_per_slab() {
    // Geant4 10.3 TestEm3.out, 1 mm cuts: lead γ 101.843 keV, e⁻ 1.36749 MeV, e⁺ 1.27862 MeV;
    // liquid argon γ 6.19986 keV, e⁻ 344.855 keV, e⁺ 333.46 keV.
    let p = ShowerPhysics::testem3();
    let want = [[101.843e-3, 1.36749, 1.27862], [6.19986e-3, 344.855e-3, 333.46e-3]];
    for slab in [0, 1, 98, 99] {
        let t = p.physics(slab);
        let w = want[slab % 2];
        for (got, w) in [t.cuts.gamma, t.cuts.electron, t.cuts.positron].into_iter().zip(w) {
            assert!((got / w - 1.0).abs() < 0.01, "slab {slab}: {got} vs {w}");
        }
        // The δ-ray cut of both e⁻ and e⁺ tables is the electron threshold.
        assert_eq!(t.electron.eloss.cut, t.cuts.electron);
        assert_eq!(t.positron.eloss.cut, t.cuts.electron);
    }
    // A 10 MeV electron loses more per cm in lead than in liquid argon, and its restricted
    // range is shorter there.
    let (pb, ar) = (&p.physics(0).electron.eloss, &p.physics(1).electron.eloss);
    assert!(pb.dedx(10.0) > 3.0 * ar.dedx(10.0));
    assert!(pb.range(10.0) < ar.range(10.0));
}
