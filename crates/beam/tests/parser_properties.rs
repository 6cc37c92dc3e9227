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
