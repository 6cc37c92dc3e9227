//! Property tests of the spline-side parsers (DESIGN.md §6): random mutations of real
//! photospline FITS files (header cards and the start of the data) and of Millipede event
//! Parquet files never panic or hang; they read or fail with an `InputError`.

use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::time::Duration;
use warpdrive_core::mutate::{apply, config, strategy, within};
use warpdrive_core::table::{Column, Table};
use warpdrive_spline::table::SplineTable;

const LIMIT: Duration = Duration::from_secs(20);
/// The mutations go into the first header blocks (cards are text); the rest is kept.
const HEAD: usize = 2 * 2880;

fn tables() -> Vec<(String, Vec<u8>)> {
    let Some(data) = warpdrive_core::data::test_data_dir(env!("CARGO_MANIFEST_DIR")) else {
        return Vec::new();
    };
    [
        "photospline_test/test_spline_1d.fits",
        "photospline_test/test_spline_3d.fits",
        "nuflux/H3a_SIBYLL23C_conv_numu.fits",
    ]
    .iter()
    .map(|f| (f.to_string(), std::fs::read(data.join("splines").join(f)).unwrap()))
    .collect()
}

proptest! {
    #![proptest_config(config(150))]

    #[test]
    fn fits_table_mutations_never_panic_or_hang(which in 0usize..3, m in strategy(5)) {
        let all = tables();
        if all.is_empty() { return Ok(()); }
        let (name, bytes) = &all[which % all.len()];
        let cut = HEAD.min(bytes.len());
        let mut mutated = apply(&bytes[..cut], &m);
        mutated.extend_from_slice(&bytes[cut..]);
        let r = within(LIMIT, move || SplineTable::from_bytes(Path::new("m.fits"), &mutated).map(drop).map_err(|e| e.to_string()));
        prop_assert!(r.is_ok(), "{name} {:?}: {}", m, r.unwrap_err());
    }
}

fn event_file() -> Vec<u8> {
    let dir = std::env::temp_dir().join(format!("wd-event-props-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p: PathBuf = dir.join("event.parquet");
    let mut t = Table::default();
    t.push("string", Column::I32(vec![36, 36, 79]));
    t.push("om", Column::I32(vec![30, 31, 6]));
    t.push("time", Column::F64(vec![10.5, 30.0, 250.0]));
    t.push("charge", Column::F64(vec![1.2, 0.8, 3.0]));
    t.meta("window_start", "-1000");
    t.meta("window_end", "9000");
    t.write_parquet(&p).unwrap();
    let b = std::fs::read(&p).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    b
}

#[test]
fn event_parquet_mutations_never_panic_or_hang() {
    let original = event_file();
    let dir = std::env::temp_dir().join(format!("wd-event-props-m-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut runner = proptest::test_runner::TestRunner::new(config(150));
    runner
        .run(&strategy(4), |m| {
            let p = dir.join("m.parquet");
            std::fs::write(&p, apply(&original, &m)).unwrap();
            let r = within(LIMIT, move || {
                warpdrive_spline::millipede::event::Event::read(&p)
                    .map(drop)
                    .map_err(|e| e.to_string())
            });
            prop_assert!(r.is_ok(), "{:?}: {}", m, r.unwrap_err());
            Ok(())
        })
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}
