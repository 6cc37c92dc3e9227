//! Property test of the points reader of `warpdrive spline eval` (CSV and Parquet): random
//! mutations of valid point files end in values or in a clean error (exit 1, `error:` first),
//! never a crash (exit 101/134), a hang, or a partial output.

mod common;
use common::{bin, scratch};

use proptest::prelude::*;
use warpdrive_core::mutate::{apply, config, strategy};

const CSV: &str = "x,y\n0.1,0.2\n0.5,0.5\n-0.3,0.9\n1,0\n";

proptest! {
    #![proptest_config(config(48))]

    #[test]
    fn points_mutations_fail_cleanly(m in strategy(5)) {
        let Some(data) = common::data() else { return Ok(()) };
        let table = data.join("splines/photospline_test/test_spline_2d.fits");
        let d = scratch("props", "points");
        let points = d.join("p.csv");
        std::fs::write(&points, apply(CSV.as_bytes(), &m)).unwrap();
        let out = d.join("v.parquet");
        let o = bin()
            .args(["spline", "eval", "--device", "cpu"])
            .arg(&table)
            .arg("--points")
            .arg(&points)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        match o.status.code() {
            Some(0) => prop_assert!(out.is_file()),
            Some(1) => {
                prop_assert!(err.starts_with("error:"), "{:?}: {}", m, err);
                prop_assert!(!out.exists(), "partial output");
            }
            c => prop_assert!(false, "{:?}: exit {:?}: {}", m, c, err),
        }
    }
}
