//! `warpdrive photon tabulate` end to end: the tables are the same bytes for any `--threads`,
//! `spline fit` reads them (amplitude 3-D, timing 4-D, a depth stack 4-D) and the fitted table
//! evaluates at the bins; an existing output is refused without `--force`.

mod common;
use common::{bin, run_ok, scratch};

fn tabulate(dir: &std::path::Path, out: &str, extra: &[&str]) {
    let mut c = bin();
    c.current_dir(dir).args([
        "photon",
        "tabulate",
        "--device",
        "cpu",
        "--photons",
        "4000",
        "--radial-bins",
        "0:100:10",
        "--azimuth-bins",
        "0:180:3",
        "--polar-bins",
        "-1:1:6",
        "--delay-bins",
        "-10:490:10",
        "-o",
        out,
    ]);
    c.args(extra);
    run_ok(&mut c);
}

#[test]
fn tables_are_reproducible_and_fit() {
    let d = scratch("tabulate", "fit");
    tabulate(&d, "t1", &["--threads", "1"]);
    tabulate(&d, "t2", &["--threads", "2"]);
    for f in ["amplitude.parquet", "time.parquet", "summary.json"] {
        assert_eq!(
            std::fs::read(d.join("t1").join(f)).unwrap(),
            std::fs::read(d.join("t2").join(f)).unwrap(),
            "{f} differs between 1 and 2 threads"
        );
    }
    let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(d.join("t1/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["photons_propagated"], 4000);
    assert_eq!(summary["photons_tabulated"], 4000);
    // The amplitude (3-D) and timing (4-D) histograms fit.
    let fit = |hist: &str, out: &str, knots: &[&str], order: &str, penalty: &str| {
        let mut c = bin();
        c.current_dir(&d).args([
            "spline",
            "fit",
            "--device",
            "cpu",
            hist,
            "--order",
            order,
            "--penalty-order",
            penalty,
            "--smooth",
            "1e-2",
            "-o",
            out,
        ]);
        for k in knots {
            c.args(["--knots", k]);
        }
        let o = run_ok(&mut c);
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    let a = fit("t1/amplitude.parquet", "amp.fits", &["0:100:6", "0:180:3", "-1:1:4"], "2", "2");
    assert!(a.contains("coefficients fitted"), "{a}");
    let t = fit(
        "t1/time.parquet",
        "time.fits",
        &["0:100:4", "0:180:2", "-1:1:3", "-10:490:6"],
        "2,2,2,3",
        "2",
    );
    assert!(t.contains("coefficients fitted"), "{t}");
    let o = run_ok(bin().current_dir(&d).args(["spline", "info", "amp.fits"]));
    assert!(String::from_utf8_lossy(&o.stdout).contains("3-D photospline table"));
    // An existing output is refused without --force, and nothing is written.
    let o = bin()
        .current_dir(&d)
        .args(["photon", "tabulate", "--device", "cpu", "--photons", "10", "-o", "t1"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("exists"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // A depth stack: 4-D amplitude with a depth column.
    tabulate(&d, "stack", &["--depth", "1800,2200", "--no-time"]);
    assert!(!d.join("stack/time.parquet").exists());
    let s = fit(
        "stack/amplitude.parquet",
        "stack.fits",
        &["0:100:6", "0:180:3", "-1:1:4", "1800,1800,2200,2200"],
        "2,2,2,1",
        "2,2,2,1",
    );
    assert!(s.contains("coefficients fitted"), "{s}");
    let o = run_ok(bin().current_dir(&d).args(["spline", "info", "stack.fits"]));
    assert!(String::from_utf8_lossy(&o.stdout).contains("4-D photospline table"));
}
