//! End-to-end tests of `warpdrive beam track`: outputs (final particles, watch files, moments,
//! plot), Parquet beams in, one and two threads identical, losses flagged, and bad input failing
//! with file and line.

mod common;
use common::{bin, run_ok, scratch};

use warpdrive_core::table::{read_parquet, Column, Table};

const LATTICE: &str = "! FODO with a watch point and space charge\n\
Q1: QUAD, L=0.2, K1=1.5\nQ2: Q1, K1=-1.5\nD: DRIF, L=0.8\n\
W1: WATCH, FILENAME=\"%s-w1.sdds\"\nC: CHARGE, TOTAL=2e-10\n\
L1: LSCDRIFT, L=0.5, BINS=128\nCELL: LINE=(Q1, D, Q2, D)\nALL: LINE=(C, 2*CELL, W1, L1, CELL)\n";

fn col(t: &Table, name: &str) -> Vec<f64> {
    t.column(name).unwrap_or_else(|| panic!("column {name}")).to_f64()
}

#[test]
fn track_writes_outputs_and_is_thread_independent() {
    let d = scratch("beam", "track");
    let lte = d.join("fodo.lte");
    std::fs::write(&lte, LATTICE).unwrap();
    let mut outs = Vec::new();
    for threads in ["1", "2"] {
        let out = d.join(format!("out{threads}"));
        let o = run_ok(
            bin()
                .args(["beam", "track"])
                .arg(&lte)
                .args([
                    "--device",
                    "cpu",
                    "--particles",
                    "3000",
                    "--passes",
                    "2",
                    "--p-central",
                    "50",
                    "--threads",
                    threads,
                    "-o",
                ])
                .arg(&out),
        );
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(text.contains("lost: none") && text.contains("LSC kick"), "{text}");
        for f in [
            "final.parquet",
            "moments.parquet",
            "sizes.png",
            "fodo-w1-pass00000.parquet",
            "fodo-w1-pass00001.parquet",
        ] {
            assert!(out.join(f).exists(), "{f} missing");
        }
        outs.push(read_parquet(&out.join("final.parquet")).unwrap());
    }
    for c in ["x", "xp", "y", "yp", "s", "delta"] {
        assert_eq!(col(&outs[0], c), col(&outs[1], c), "{c}: one and two threads differ");
    }
    let m = read_parquet(&d.join("out1/moments.parquet")).unwrap();
    assert_eq!(col(&m, "pass"), vec![0.0, 1.0]);
    assert!((col(&m, "s")[0] - 4.0).abs() < 1e-12, "watch after two 2 m cells");
}

#[test]
fn parquet_beam_in_and_losses_flagged() {
    let d = scratch("beam", "parquet");
    let lte = d.join("fodo.lte");
    std::fs::write(&lte, LATTICE).unwrap();
    let n = 5;
    let mut t = Table::default();
    t.push("x", Column::F64(vec![0.0, 1e-3, -2e-3, 0.02, 0.0]));
    t.push("xp", Column::F64(vec![0.0; n]));
    t.push("y", Column::F64(vec![0.0; n]));
    t.push("yp", Column::F64(vec![0.0, 0.0, 0.0, 0.0, 0.05]));
    t.push("s", Column::F64(vec![0.0; n]));
    t.push("delta", Column::F64(vec![0.0, 1e-3, 0.0, 0.0, 0.0]));
    let beam = d.join("beam.parquet");
    t.write_parquet(&beam).unwrap();
    let out = d.join("out");
    let o = run_ok(
        bin()
            .args(["beam", "track"])
            .arg(&lte)
            .arg("--beam")
            .arg(&beam)
            .args(["--device", "cpu", "--aperture", "0.01", "--no-plot", "-o"])
            .arg(&out),
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("lost: 2 particles"), "{text}");
    let f = read_parquet(&out.join("final.parquet")).unwrap();
    // Element 0 is CHARGE, 1 is Q1: x = 2 cm is outside after it; y' = 0.05 reaches
    // y = 0.05 · 0.2 m · sinh(kL)/(kL) = 1.01 cm > 1 cm inside the (y-defocusing) Q1 as well.
    assert_eq!(col(&f, "lost_at"), vec![0.0, 0.0, 0.0, 2.0, 2.0]);
    assert_eq!(col(&f, "x")[0], 0.0, "the reference particle stays on axis");
    // A NaN row is refused with its row number.
    t.push("delta", Column::F64(vec![0.0, f64::NAN, 0.0, 0.0, 0.0]));
    let mut bad = Table::default();
    for c in ["x", "xp", "y", "yp", "s"] {
        bad.push(c, t.column(c).unwrap().clone());
    }
    bad.push("delta", Column::F64(vec![0.0, f64::NAN, 0.0, 0.0, 0.0]));
    let badp = d.join("bad.parquet");
    bad.write_parquet(&badp).unwrap();
    let o = bin()
        .args(["beam", "track"])
        .arg(&lte)
        .arg("--beam")
        .arg(&badp)
        .args(["--device", "cpu", "-o"])
        .arg(d.join("o2"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("bad.parquet") && err.contains("row 1"), "{err}");
}

#[test]
fn bad_lattices_name_file_and_line() {
    let d = scratch("beam", "bad");
    let cases = [
        ("Q: QUAD, L=0.2, K1=1\nB: SBEN, L=1\nA: LINE=(Q,B)\n", ":2:", "SBEN"),
        ("Q: QUAD, K1=1\nA: LINE=(Q)\n", ":1:", "zero or missing length"),
        ("Q: QUAD, L=0.2, K1=1\nA: LINE=(Q, 2*(Q)\n", ":2:", "line A"),
        ("Q: QUAD, L=0.2, K1=x1\nA: LINE=(Q)\n", ":1:", "parameter K1"),
    ];
    for (k, (text, at, what)) in cases.iter().enumerate() {
        let lte = d.join(format!("bad{k}.lte"));
        std::fs::write(&lte, text).unwrap();
        let o = bin()
            .args(["beam", "track"])
            .arg(&lte)
            .args(["--device", "cpu", "--particles", "10", "-o"])
            .arg(d.join("o"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains(&format!("bad{k}.lte{at}")) && err.contains(what), "{err}");
    }
}
