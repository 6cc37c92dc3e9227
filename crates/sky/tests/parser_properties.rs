//! Property tests of the event-list readers (DESIGN.md §6): random mutations of an IceCube text
//! release, a CSV list and a Parquet list never panic or hang; they read or fail with an
//! `InputError` naming the file.

use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::time::Duration;
use warpdrive_core::mutate::{apply, config, strategy, within};
use warpdrive_core::table::{Column, Table};
use warpdrive_sky::events::{read_events, ColumnNames};

const TEXT: &str = "MJD\tlog10(E)\tang_err\tRA\tDec\n   55694      3.0      1.0    275.1     39.1\n   55695      2.9      0.5     92.5      4.7\n   55695      2.9      0.5     58.0     -3.0\n   55695      3.1      1.2    223.8     21.6\n";
const CSV: &str = "ra,dec,logE\n10.5,-20.25,3.1\n200,45,2.5\n359.9,-89.9,4.0\n0,0,3\n";

fn scratch() -> PathBuf {
    let d = std::env::temp_dir().join(format!("wd-sky-props-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn parquet() -> Vec<u8> {
    let p = scratch().join("valid.parquet");
    let mut t = Table::default();
    t.push("ra", Column::F64(vec![10.5, 200.0, 359.9]));
    t.push("dec", Column::F64(vec![-20.25, 45.0, -89.9]));
    t.push("logE", Column::F64(vec![3.1, 2.5, 4.0]));
    t.write_parquet(&p).unwrap();
    std::fs::read(&p).unwrap()
}

fn check(name: &str, original: &[u8], m: &[warpdrive_core::mutate::Mutation]) -> Result<(), String> {
    let p: PathBuf = scratch().join(name);
    std::fs::write(&p, apply(original, m)).unwrap();
    within(Duration::from_secs(20), move || {
        read_events(Path::new(&p), &ColumnNames::default())
            .map(drop)
            .map_err(|e| e.to_string())
    })
    .map(|_| ())
}

proptest! {
    #![proptest_config(config(150))]

    #[test]
    fn text_release_mutations_never_panic_or_hang(m in strategy(6)) {
        let r = check("m.txt", TEXT.as_bytes(), &m);
        prop_assert!(r.is_ok(), "{:?}: {}", m, r.unwrap_err());
    }

    #[test]
    fn csv_mutations_never_panic_or_hang(m in strategy(6)) {
        let r = check("m.csv", CSV.as_bytes(), &m);
        prop_assert!(r.is_ok(), "{:?}: {}", m, r.unwrap_err());
    }

    #[test]
    fn parquet_mutations_never_panic_or_hang(m in strategy(4)) {
        let r = check("m.parquet", &parquet(), &m);
        prop_assert!(r.is_ok(), "{:?}: {}", m, r.unwrap_err());
    }
}
