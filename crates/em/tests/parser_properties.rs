//! Property tests of the EM input files (DESIGN.md §6): random mutations of a valid material
//! TOML and of a valid calorimeter TOML never panic or hang. A mutated file either fails with an
//! `InputError` or gives a material/calorimeter whose physics tables build and through which a
//! 100 MeV e⁻ event runs to its end (a degenerate but accepted value, e.g. a density of 1e-320
//! or a layer 1e-30 cm thick, must not hang the cut conversion, the tables or the transport).
//! Fixed seed, a fixed number of cases, each under a time limit.

use proptest::prelude::*;
use std::path::Path;
use std::time::Duration;
use warpdrive_core::mutate::{apply, config, strategy, within};
use warpdrive_em::shower::cuts::RangeCuts;
use warpdrive_em::shower::geometry::Calorimeter;
use warpdrive_em::shower::material::ShowerMaterial;
use warpdrive_em::shower::tables::TableOptions;
use warpdrive_em::shower::transport::{run_event, Primary, ShowerPhysics};
use warpdrive_em::shower::Particle;

const LIMIT: Duration = Duration::from_secs(60);

const WATER: &str = "name = \"water\"\ndensity = 1.0\nI_eV = 78\nstate = \"liquid\"\n\
[[elements]]\nZ = 1\nA = 1.008\nfraction = 0.111894\n[[elements]]\nZ = 8\nA = 15.999\nfraction = 0.888106\n";

const CALORIMETER: &str = "name = \"sandwich\"\nrepeat = 4\ntransverse = 20.0\n\
[[layers]]\nmaterial = \"Lead\"\nthickness = 0.5\n[[layers]]\nmaterial = \"liquidArgon\"\nthickness = 1.5\n";

/// Tables with Geant4's 7 bins per decade (the default has 56): the same code paths, 8× faster.
fn coarse() -> TableOptions {
    TableOptions::geant4()
}

/// Build the physics of `cal` and run one 100 MeV e⁻ event through it.
fn exercise(cal: Calorimeter) {
    let phys = ShowerPhysics::build(cal, RangeCuts::default(), coarse());
    let t = run_event(&phys, &Primary::testem3(Particle::Electron, 100.0), 7, 0);
    // Energy conservation holds for any accepted input (deposits + escaping + rest mass = E₀).
    assert!(t.balance().abs() < 1e-9 * 100.0, "energy balance {} MeV", t.balance());
}

proptest! {
    #![proptest_config(config(40))]

    #[test]
    fn material_mutations_never_panic_or_hang(m in strategy(4)) {
        let text = String::from_utf8_lossy(&apply(WATER.as_bytes(), &m)).into_owned();
        let r = within(LIMIT, move || {
            match ShowerMaterial::from_toml_str(&text, Path::new("water.toml")) {
                Ok(mat) => {
                    let cal = Calorimeter::new("one", vec![(mat, 1.0)], 3, 10.0).map_err(|(f, e)| format!("{f}: {e}"))?;
                    exercise(cal);
                    Ok(())
                }
                Err(e) => Err(e.to_string()),
            }
        });
        // An error message (inner Err) is a clean end; only a panic or a time-out fails.
        prop_assert!(r.is_ok(), "{:?}: {}", m, r.unwrap_err());
    }

    #[test]
    fn calorimeter_mutations_never_panic_or_hang(m in strategy(4)) {
        let text = String::from_utf8_lossy(&apply(CALORIMETER.as_bytes(), &m)).into_owned();
        let r = within(LIMIT, move || match Calorimeter::from_toml_str(&text, Path::new("sandwich.toml")) {
            Ok(cal) => {
                exercise(cal);
                Ok(())
            }
            Err(e) => Err(e.to_string()),
        });
        prop_assert!(r.is_ok(), "{:?}: {}", m, r.unwrap_err());
    }
}

/// Run `text` through `parse` and, when it is accepted, through [`exercise`]: a panic or a
/// time-out fails the test with the input; an error message is a clean end.
fn check_value_case(text: String, parse: fn(&str) -> Result<Calorimeter, String>) {
    let shown = text.clone();
    let r = within(LIMIT, move || parse(&text).map(exercise));
    assert!(r.is_ok(), "{shown}: {}", r.unwrap_err());
}

/// Valid TOML with one extreme value in one of the material's fields (the others valid), every
/// field × every value: what a byte mutation rarely reaches (most break the TOML syntax or a
/// field's type).
#[test]
fn material_values_never_panic_or_hang() {
    for field in 0..6 {
        let values: &[&str] = if field == 2 { &Z_VALUES } else { &VALUES };
        for v in values {
            let mut f = ["1.0", "78", "1", "1.008", "0.111894", "0.888106"];
            f[field] = v;
            let text = format!(
                "name = \"m\"\ndensity = {}\nI_eV = {}\n[[elements]]\nZ = {}\nA = {}\nfraction = {}\n[[elements]]\nZ = 8\nA = 15.999\nfraction = {}\n",
                f[0], f[1], f[2], f[3], f[4], f[5]
            );
            check_value_case(text, |t| {
                let mat = ShowerMaterial::from_toml_str(t, Path::new("m.toml")).map_err(|e| e.to_string())?;
                Calorimeter::new("one", vec![(mat, 1.0)], 3, 10.0).map_err(|(f, e)| format!("{f}: {e}"))
            });
        }
    }
}

/// The same for the calorimeter's repeat, transverse size and layer thicknesses.
#[test]
fn calorimeter_values_never_panic_or_hang() {
    for field in 0..4 {
        let values: &[&str] = if field == 0 { &REPEATS } else { &VALUES };
        for v in values {
            let mut f = ["4", "20.0", "0.5", "1.5"];
            f[field] = v;
            let text = format!(
                "repeat = {}\ntransverse = {}\n[[layers]]\nmaterial = \"Lead\"\nthickness = {}\n[[layers]]\nmaterial = \"liquidArgon\"\nthickness = {}\n",
                f[0], f[1], f[2], f[3]
            );
            check_value_case(text, |t| {
                Calorimeter::from_toml_str(t, Path::new("c.toml")).map_err(|e| e.to_string())
            });
        }
    }
}

/// Float field values: ordinary ones and the extremes (TOML spells them as floats).
const VALUES: [&str; 18] = [
    "1.0", "0.5", "2.7", "11.35", "1e30", "-1e30", "1e308", "1e-320", "nan", "inf", "-inf", "0.0", "-1.0", "1e-30", "1000.0", "1e-25",
    "300.0", "1e4",
];
const Z_VALUES: [&str; 8] = ["1", "8", "82", "0", "-1", "200", "1000000", "9223372036854775807"];
const REPEATS: [&str; 6] = ["1", "50", "0", "-1", "10000000000", "18446744073709551615"];
