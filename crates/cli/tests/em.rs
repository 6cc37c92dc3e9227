//! End-to-end tests of `warpdrive em`: outputs, thread independence and bad input.

mod common;
use common::{bin, run_ok, scratch};

/// The files of an output directory that hold only what the request determines.
fn data_files(dir: &std::path::Path, names: &[&str]) -> Vec<Vec<u8>> {
    names.iter().map(|n| std::fs::read(dir.join(n)).unwrap()).collect()
}

#[test]
fn em_writes_profile_plot_and_summary_independent_of_threads() {
    let dir = scratch("em", "threads");
    let mut files = Vec::new();
    // The same command in two directories (run metadata holds the command line, which leaves
    // out --threads).
    for t in ["1", "2"] {
        let cwd = dir.join(format!("t{t}"));
        std::fs::create_dir(&cwd).unwrap();
        let out = cwd.join("out");
        run_ok(bin().current_dir(&cwd).args([
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
            "out",
        ]));
        assert!(out.join("edep.png").is_file());
        let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
        assert_eq!(s["tracks"], 2000);
        assert!(s["steps_per_track"].as_f64().unwrap() > 50.0);
        let env: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
        assert_eq!(env["device"], format!("cpu ({t} threads)"));
        files.push(data_files(&out, &["summary.json", "edep.parquet"]));
    }
    assert!(files[0] == files[1], "summary.json or edep.parquet differ between 1 and 2 threads");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue #36 item 12: `em testem3`'s summary.json held timings and thread counts, so identical
/// runs differed; the machine facts are in run.json now.
#[test]
fn testem3_data_files_are_identical_for_any_thread_count() {
    let dir = scratch("em", "testem3-threads");
    let mut files = Vec::new();
    for t in ["1", "2"] {
        let cwd = dir.join(format!("t{t}"));
        std::fs::create_dir(&cwd).unwrap();
        let out = cwd.join("out");
        run_ok(bin().current_dir(&cwd).args([
            "em",
            "testem3",
            "--device",
            "cpu",
            "--events",
            "3",
            "--energy",
            "100",
            "--threads",
            t,
            "-o",
            "out",
        ]));
        let env: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
        assert_eq!(env["device"], format!("cpu ({t} threads)"));
        assert!(env["transport_seconds"].as_f64().is_some() && env["tables_seconds"].as_f64().is_some());
        files.push(data_files(&out, &["summary.json", "profile.parquet", "events.parquet"]));
    }
    assert!(
        files[0] == files[1],
        "summary.json or a Parquet file differs between 1 and 2 threads"
    );
    let s: serde_json::Value = serde_json::from_slice(&files[0][0]).unwrap();
    assert!(s.get("timings").is_none() && s.get("command").is_none(), "{s}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue #36 item 8: a 1e308 cm bin made the plot's axis infinite and plotters spun forever.
/// The run ends, says the plot was skipped, and writes the rest.
#[test]
fn an_infinite_plot_axis_is_skipped_with_a_warning() {
    let dir = scratch("em", "inf-axis");
    let out = dir.join("out");
    let o = run_ok(
        bin()
            .args(["em", "--device", "cpu", "--tracks", "500", "--tally-width", "1e308", "-o"])
            .arg(&out),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("warning: edep.png not drawn: the z axis would run from 0 to inf"),
        "{err}"
    );
    assert!(out.join("edep.parquet").is_file() && out.join("summary.json").is_file());
    assert!(!out.join("edep.png").exists());
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("out")], "temporaries left");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn nist_materials_by_name() {
    let dir = scratch("em", "nist");
    let out = dir.join("pb");
    let o = run_ok(
        bin()
            .args(["em", "--device", "cpu", "--tracks", "500", "--material", "G4_Pb", "-o"])
            .arg(&out),
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("in G4_Pb (ρ = 11.35 g/cm³)"));
    let cal = dir.join("c.toml");
    std::fs::write(
        &cal,
        "repeat = 3\ntransverse = 10.0\n[[layers]]\nmaterial = \"G4_W\"\nthickness = 0.35\n[[layers]]\nmaterial = \"G4_PLASTIC_SC_VINYLTOLUENE\"\nthickness = 0.5\n",
    )
    .unwrap();
    let out = dir.join("cal");
    run_ok(
        bin()
            .args(["em", "calorimeter"])
            .arg(&cal)
            .args(["--device", "cpu", "--events", "2", "--energy", "50", "-o"])
            .arg(&out),
    );
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let names: Vec<&String> = s["materials"].as_object().unwrap().keys().collect();
    assert_eq!(names, ["G4_PLASTIC_SC_VINYLTOLUENE", "G4_W"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_inputs_fail_cleanly() {
    let dir = scratch("em", "bad");
    let cases: [(&[&str], &str); 5] = [
        (
            &["--material", "unobtainium"],
            "--material 'unobtainium': neither a built-in material",
        ),
        (&["--energy", "-5"], "--energy -5 MeV: must be positive"),
        (&["--tally-bins", "0"], "--tally-bins must be at least 1"),
        (&["--tracks", "0"], "--tracks must be at least 1"),
        (&["--tally-width", "0"], "--tally-width 0 cm: must be at least 1e-6 cm"),
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
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `em detector`: TestEm3 as GDML; the data files are the same for 1 and 2 threads, the summary
/// has the materials and a closed energy balance.
#[test]
fn detector_data_files_are_identical_for_any_thread_count() {
    let dir = scratch("em", "detector-threads");
    let gdml = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../em/tests/data/testem3.gdml");
    let mut files = Vec::new();
    for t in ["1", "2"] {
        let cwd = dir.join(format!("t{t}"));
        std::fs::create_dir(&cwd).unwrap();
        let out = cwd.join("out");
        run_ok(bin().current_dir(&cwd).args([
            "em",
            "detector",
            gdml.to_str().unwrap(),
            "--device",
            "cpu",
            "--events",
            "4",
            "--energy",
            "100",
            "--position",
            "0,0,-10",
            "--threads",
            t,
            "-o",
            "out",
        ]));
        let env: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
        assert_eq!(env["device"], format!("cpu ({t} threads)"));
        files.push(data_files(&out, &["summary.json", "volumes.parquet"]));
    }
    assert!(
        files[0] == files[1],
        "summary.json or volumes.parquet differs between 1 and 2 threads"
    );
    let s: serde_json::Value = serde_json::from_slice(&files[0][0]).unwrap();
    assert_eq!(s["volume_count"], 152);
    assert_eq!(s["volumes"].as_object().unwrap().len(), 152);
    assert_eq!(s["events"], 4);
    assert!(s["materials"]["Lead"]["edep_mev"].as_f64().unwrap() > 100.0, "{s}");
    assert!(s["materials"]["Lead"]["edep_rms_mev"].as_f64().unwrap() > 0.0, "{s}");
    assert_eq!(s["materials"]["G4_Galactic"]["vacuum"], true);
    assert_eq!(s["volumes"]["Layer[7]/Lead[0]"]["material"], "Lead");
    assert!(s["energy_balance_worst"].as_f64().unwrap() < 1e-9);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `em run` (alias `em detector`): `--field 0,0,0` writes the same data files as no field and as
/// the `em detector` alias; `--field` and `--sensitive` give hits.parquet, a summary with the
/// field and hits, and hits that add up to the sensitive volumes' deposits.
#[test]
fn em_run_field_and_sensitive_volumes() {
    let dir = scratch("em", "run-field");
    let gdml = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../em/tests/data/testem3.gdml");
    let g = gdml.to_str().unwrap();
    let common = ["--device", "cpu", "--events", "3", "--energy", "100", "--position", "0,0,-10"];
    let mut files = Vec::new();
    for (k, (cmd, extra)) in [("run", vec![]), ("run", vec!["--field", "0,0,0"]), ("detector", vec![])]
        .into_iter()
        .enumerate()
    {
        let out = dir.join(format!("o{k}"));
        let mut args = vec!["em", cmd, g];
        args.extend(common);
        args.extend(extra);
        args.extend(["-o", out.to_str().unwrap()]);
        run_ok(bin().args(&args));
        assert!(!out.join("hits.parquet").exists());
        files.push(data_files(&out, &["volumes.parquet"]));
    }
    assert!(
        files[0] == files[1] && files[0] == files[2],
        "B = 0 or the alias changed volumes.parquet"
    );
    let out = dir.join("field");
    let mut args = vec!["em", "run", g];
    args.extend(common);
    args.extend(["--field", "0,4,0", "--sensitive", "ArgonV,LeadV", "-o", out.to_str().unwrap()]);
    run_ok(bin().args(&args));
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["field"]["b_t"], serde_json::json!([0.0, 4.0, 0.0]));
    assert_eq!(s["hits"]["sensitive"], serde_json::json!(["LeadV", "ArgonV"]));
    let hits = s["hits"]["count"].as_u64().unwrap();
    assert!(hits > 100, "{s}");
    // Lead and argon hold all the deposits but the vacuum's (none): the hits' sum is the total.
    let by_volume: f64 = ["LeadV", "ArgonV"]
        .iter()
        .map(|v| s["hits"]["volumes"][v]["edep_sum_mev"].as_f64().unwrap())
        .sum();
    let total = s["edep_sum_mev"].as_f64().unwrap();
    assert!((by_volume - total).abs() <= 1e-9 * total, "{by_volume} vs {total}");
    assert!(std::fs::metadata(out.join("hits.parquet")).unwrap().len() > 1000);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `em run --delta-chord/--delta-intersection/--field-epsilon`: the values reach the run (the
/// summary's `field`) and bad ones are refused by the library with the option's name, before
/// any output; `--plot` draws volumes.png.
#[test]
fn em_run_accuracy_options_and_plot() {
    let dir = scratch("em", "run-accuracy");
    let gdml = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../em/tests/data/testem3.gdml");
    let g = gdml.to_str().unwrap();
    let common = [
        "--device",
        "cpu",
        "--events",
        "2",
        "--energy",
        "100",
        "--position",
        "0,0,-10",
        "--field",
        "0,4,0",
    ];
    let out = dir.join("ok");
    let mut args = vec!["em", "run", g];
    args.extend(common);
    args.extend([
        "--delta-chord",
        "0.5",
        "--delta-intersection",
        "0.001",
        "--plot",
        "-o",
        out.to_str().unwrap(),
    ]);
    run_ok(bin().args(&args));
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["field"]["delta_chord_mm"], 0.5);
    assert_eq!(s["field"]["delta_intersection_mm"], 0.001);
    assert!(std::fs::metadata(out.join("volumes.png")).unwrap().len() > 1000);
    for (extra, needle) in [
        (["--delta-chord", "-1"], "--delta-chord -1 mm: must be finite and positive"),
        (
            ["--delta-intersection", "2"],
            "--delta-intersection 2 mm: must be at least 1e-9 mm and at most --delta-chord (0.25 mm)",
        ),
        (["--field-epsilon", "0.1"], "--field-epsilon 0.1: must be in [1e-12, 1e-2]"),
    ] {
        let bad = dir.join("bad");
        let mut args = vec!["em", "run", g];
        args.extend(common);
        args.extend(extra);
        args.extend(["-o", bad.to_str().unwrap()]);
        let o = bin().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains(needle), "expected '{needle}' in: {err}");
        assert!(!bad.exists());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
