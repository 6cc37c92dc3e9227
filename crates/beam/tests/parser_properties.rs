//! Property test of the ELEGANT `.lte` parser (DESIGN.md §6): random mutations of a valid lattice
//! (byte flips, truncation, duplicated/removed lines, numbers replaced by huge, negative or
//! non-finite values, which also hits repetition counts) never panic or hang: they parse, with
//! the lattice compiled, or fail with an error naming the file and line.

use proptest::prelude::*;
use std::time::Duration;
use warpdrive_beam::lattice::parse;
use warpdrive_beam::program::Program;
use warpdrive_core::mutate::{apply, config, strategy, within};

const FODO: &str = include_str!("../../../examples/beam/fodo.lte");

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn lattice_mutations_never_panic_or_hang(m in strategy(6)) {
        let text = String::from_utf8_lossy(&apply(FODO.as_bytes(), &m)).into_owned();
        let r = within(Duration::from_secs(20), move || {
            parse(&text, "m.lte", None).map(|l| Program::compile(&l).length).map_err(|e| e.to_string())
        });
        prop_assert!(r.is_ok(), "{:?}: {}", m, r.unwrap_err());
    }
}

/// An ASCII and a binary SDDS particle file and the example `.ele` run file.
fn sdds_files() -> (Vec<u8>, Vec<u8>) {
    use warpdrive_beam::sdds::{to_bytes, ColumnData, Data, Page, Parameter, Sdds, Value};
    let ascii = b"SDDS1\n! comment\n&description text=\"t\", &end\n&parameter name=pCentral, type=double, &end\n\
                  &column name=x, type=double, units=m, &end\n&column name=xp, type=double, &end\n\
                  &column name=name, type=string, &end\n&data mode=ascii, &end\n100.5\n3\n1e-3 0 \"Q 1\"\n-2e-3 1e-4 D\n0 0 E\n"
        .to_vec();
    let binary = to_bytes(&Sdds {
        description: "d".into(),
        contents: "c".into(),
        pages: vec![Page {
            parameters: vec![Parameter {
                name: "Pass".into(),
                units: String::new(),
                value: Value::Long(3),
            }],
            columns: vec![
                ColumnData {
                    name: "x".into(),
                    units: "m".into(),
                    data: Data::Double(vec![1e-3, 2e-3, -1e-3]),
                },
                ColumnData {
                    name: "ElementName".into(),
                    units: String::new(),
                    data: Data::Str(vec!["A".into(), "BB".into(), String::new()]),
                },
            ],
        }],
    })
    .unwrap();
    (ascii, binary)
}

const ELE: &str = include_str!("../../../examples/beam/ring.ele");

proptest! {
    #![proptest_config(config(300))]

    /// SDDS files (ASCII and binary), mutated, never panic or hang the reader: a page or an
    /// error naming the file.
    #[test]
    fn sdds_mutations_never_panic_or_hang(m in strategy(6), which in 0..2usize) {
        let (ascii, binary) = sdds_files();
        let bytes = apply(if which == 0 { &ascii } else { &binary }, &m);
        let r = within(Duration::from_secs(20), move || {
            warpdrive_beam::sdds::read_first_page(std::path::Path::new("m.sdds"), &bytes)
                .map(|(_, p)| p.rows())
                .map_err(|e| e.to_string())
        });
        prop_assert!(r.is_ok(), "{:?}: {}", m, r.unwrap_err());
        if let Ok(Err(e)) = &r {
            prop_assert!(e.starts_with("m.sdds"), "{}", e);
        }
    }

    /// Mutated `.ele` run files never panic or hang the namelist parser.
    #[test]
    fn ele_mutations_never_panic_or_hang(m in strategy(6)) {
        let text = String::from_utf8_lossy(&apply(ELE.as_bytes(), &m)).into_owned();
        let r = within(Duration::from_secs(20), move || {
            warpdrive_beam::ele::parse(&text, std::path::Path::new("m.ele")).map(|c| c.len()).map_err(|e| e.to_string())
        });
        prop_assert!(r.is_ok(), "{:?}: {}", m, r.unwrap_err());
        if let Ok(Err(e)) = &r {
            prop_assert!(e.starts_with("m.ele:"), "{}", e);
        }
    }
}
