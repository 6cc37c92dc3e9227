//! End-to-end tests of `warpdrive em`: outputs, thread independence and bad input.

mod common;
use common::bin;

#[test]
fn em_writes_profile_plot_and_summary_independent_of_threads() {
    let dir = std::env::temp_dir().join(format!("warpdrive-em-{}", std::process::id()));
    let mut profiles = Vec::new();
    for t in ["1", "2"] {
        let out = dir.join(format!("t{t}"));
        let o = bin()
            .args([
                "em",
                "--device",
                "cpu",
                "--tracks",
                "2000",
                "--threads",
                t,
                "--stack-capacity",
                "300",
                "-o",
            ])
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(out.join("edep.png").is_file());
        let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
        assert_eq!(s["tracks"], 2000);
        assert!(s["steps_per_track"].as_f64().unwrap() > 50.0);
        profiles.push(warpdrive_core::table::read_parquet(&out.join("edep.parquet")).unwrap().columns);
    }
    assert_eq!(profiles[0], profiles[1]);
}

#[test]
fn bad_inputs_fail_cleanly() {
    let dir = std::env::temp_dir().join(format!("warpdrive-em-bad-{}", std::process::id()));
    let cases: [(&[&str], &str); 5] = [
        (&["--material", "unobtainium"], "unknown material"),
        (&["--energy", "-5"], "must be positive"),
        (&["--tally-bins", "0"], "tally grid is empty"),
        (&["--tracks", "0"], "zero tracks"),
        (&["--tally-width", "0"], "bin width"),
    ];
    for (args, needle) in cases {
        let out = dir.join("out");
        let o = bin()
            .args(["em", "--device", "cpu"])
            .args(args)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{needle}");
        assert!(err.contains(needle), "expected '{needle}' in: {err}");
        assert!(!out.join("edep.parquet").exists());
    }
}
