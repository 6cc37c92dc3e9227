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
        ("Q: QUAD, L=0.2, K1=1\nB: CCBEND, L=1\nA: LINE=(Q,B)\n", ":2:", "CCBEND"),
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

/// Issue #36 item 13: a CSV beam read through the bounded reader — a UTF-8 byte-order mark is
/// not part of the first column's name — gives the same particles as the same beam in Parquet.
#[test]
fn csv_beam_with_a_byte_order_mark_equals_parquet() {
    let d = scratch("beam", "csv-bom");
    let lte = d.join("fodo.lte");
    std::fs::write(&lte, LATTICE).unwrap();
    let rows = [[1e-3, 0.0, -2e-4, 1e-5, 0.0, 1956.951], [0.0, 2e-5, 0.0, 0.0, 1e-12, 1958.0]];
    let mut csv = b"\xEF\xBB\xBFx,xp,y,yp,t,p\n".to_vec();
    for r in rows {
        let line: Vec<String> = r.iter().map(|v| format!("{v:e}")).collect();
        csv.extend_from_slice((line.join(",") + "\n").as_bytes());
    }
    let csv_path = d.join("beam.csv");
    std::fs::write(&csv_path, csv).unwrap();
    let mut t = Table::default();
    for (k, c) in ["x", "xp", "y", "yp", "t", "p"].iter().enumerate() {
        t.push(c, Column::F64(rows.iter().map(|r| r[k]).collect()));
    }
    let pq_path = d.join("beam.parquet");
    t.write_parquet(&pq_path).unwrap();
    let mut finals = Vec::new();
    for (src, out) in [(&csv_path, "out-csv"), (&pq_path, "out-pq")] {
        let out = d.join(out);
        run_ok(
            bin()
                .args(["beam", "track"])
                .arg(&lte)
                .arg("--beam")
                .arg(src)
                .args(["--device", "cpu", "--no-plot", "-o"])
                .arg(&out),
        );
        finals.push(std::fs::read(out.join("final.parquet")).unwrap());
    }
    assert_eq!(finals[0], finals[1], "CSV and Parquet beams give different bytes");
}

/// Issue #28: watch points streamed to one Parquet file per watch point (a row group per
/// record) hold exactly the records of the one-file-per-record layout; `--watch off` writes
/// none; `--watch-every`, `--watch-passes` and `--watch-particles` choose what is recorded.
#[test]
fn watch_modes_and_selections() {
    let d = scratch("beam", "watch");
    let lte = d.join("fodo.lte");
    std::fs::write(&lte, LATTICE).unwrap();
    let track = |out: &str, extra: &[&str]| {
        let out = d.join(out);
        run_ok(
            bin()
                .args(["beam", "track"])
                .arg(&lte)
                .args([
                    "--device",
                    "cpu",
                    "--particles",
                    "300",
                    "--passes",
                    "4",
                    "--p-central",
                    "50",
                    "--no-plot",
                ])
                .args(extra)
                .arg("-o")
                .arg(&out),
        );
        out
    };
    let files = track("files", &[]);
    let stream = track("stream", &["--watch", "stream"]);
    let s = read_parquet(&stream.join("fodo-w1.parquet")).unwrap();
    assert_eq!(s.rows(), 4 * 300);
    for pass in 0..4 {
        let f = read_parquet(&files.join(format!("fodo-w1-pass{pass:05}.parquet"))).unwrap();
        let rows: Vec<usize> = (0..s.rows()).filter(|&i| col(&s, "pass")[i] == pass as f64).collect();
        for c in ["particle", "x", "xp", "y", "yp", "s", "delta", "t", "p", "lost_at", "lost_pass"] {
            let want = col(&f, c);
            let got: Vec<f64> = rows.iter().map(|&i| col(&s, c)[i]).collect();
            assert_eq!(got, want, "pass {pass}, column {c}");
        }
    }
    assert_eq!(
        std::fs::read(files.join("final.parquet")).unwrap(),
        std::fs::read(stream.join("final.parquet")).unwrap()
    );
    let off = track("off", &["--watch", "off"]);
    let mut names: Vec<String> = std::fs::read_dir(&off)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["final.parquet", "lost.parquet", "run.json"]);
    let some = track(
        "some",
        &["--watch", "stream", "--watch-passes", "3,1", "--watch-particles", "7,2,7"],
    );
    let t = read_parquet(&some.join("fodo-w1.parquet")).unwrap();
    assert_eq!(col(&t, "pass"), vec![1.0, 1.0, 3.0, 3.0]);
    assert_eq!(col(&t, "particle"), vec![2.0, 7.0, 2.0, 7.0]);
    let m = read_parquet(&some.join("moments.parquet")).unwrap();
    assert_eq!(col(&m, "pass"), vec![1.0, 3.0]);
    let every = track("every", &["--watch-every", "3"]);
    assert!(every.join("fodo-w1-pass00003.parquet").exists() && !every.join("fodo-w1-pass00001.parquet").exists());
}

/// Batch jobs (`--jobs N --job-index I`) merged by `warpdrive merge` are the unsplit run's
/// files byte for byte: final particles, moments (block partials folded in block order) and
/// every watch file, for 2 and 3 jobs; missing jobs, space charge and too many jobs are refused.
#[test]
fn track_jobs_merge_into_the_single_run() {
    let d = scratch("beam", "jobs");
    let lte = d.join("ring.lte");
    std::fs::write(
        &lte,
        "Q1: QUAD, L=0.2, K1=1.5\nQ2: Q1, K1=-1.5\nS1: SEXT, L=0.1, K2=40\nD: DRIF, L=0.8\n\
         W1: WATCH, FILENAME=\"%s-w1.sdds\"\nCELL: LINE=(Q1, D, S1, Q2, D, W1)\nRING: LINE=(3*CELL)\n",
    )
    .unwrap();
    let track = |out: &std::path::Path, extra: &[&str]| {
        let mut c = bin();
        c.args(["beam", "track"]).arg(&lte).args([
            "--device",
            "cpu",
            "--particles",
            "1001",
            "--passes",
            "3",
            "--p-central",
            "50",
            "--aperture",
            "2e-4",
            "--emit-x",
            "1e-8",
            "--watch-particles",
            "0,5,500,1000",
            "--no-plot",
            "-o",
        ]);
        c.arg(out).args(extra);
        c.output().unwrap()
    };
    let single = d.join("single");
    let o = track(&single, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let data = |dir: &std::path::Path| -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
            .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
            .collect();
        v.sort();
        v
    };
    let want = data(&single);
    // The aperture loses particles (so survivors differ per block); the watch files (3 watch points
    // × 3 passes) hold chosen rows.
    let lost = col(&read_parquet(&single.join("final.parquet")).unwrap(), "lost_at")
        .iter()
        .filter(|&&l| l > 0.0)
        .count();
    assert!(lost > 10 && lost < 900, "{lost} lost");
    // final, moments and lost particles (lost.parquet: the jobs' rows concatenate to it) + 9.
    assert_eq!(want.len(), 3 + 3 * 3, "{:?}", want.iter().map(|(n, _)| n).collect::<Vec<_>>());
    for jobs in [2u32, 3] {
        let dirs: Vec<_> = (0..jobs)
            .map(|i| {
                let j = d.join(format!("job{jobs}-{i}"));
                let o = track(&j, &["--jobs", &jobs.to_string(), "--job-index", &i.to_string()]);
                assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
                assert!(j.join("blocks.parquet").is_file());
                j
            })
            .collect();
        let merged = d.join(format!("merged{jobs}"));
        let o = bin().arg("merge").arg("-o").arg(&merged).args(dirs.iter().rev()).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let got = data(&merged);
        assert_eq!(
            got.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            want.iter().map(|(n, _)| n).collect::<Vec<_>>()
        );
        for ((n, a), (_, b)) in want.iter().zip(&got) {
            assert!(a == b, "{n}: {jobs} jobs merged differ from the single run");
        }
        if jobs == 3 {
            let o = bin()
                .arg("merge")
                .arg("-o")
                .arg(d.join("partial"))
                .args(&dirs[..2])
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(err.contains("lack job 2"), "{err}");
        }
    }
    // Refusals before any work.
    let lsc = d.join("lsc.lte");
    std::fs::write(&lsc, LATTICE).unwrap();
    let o = bin()
        .args(["beam", "track"])
        .arg(&lsc)
        .args(["--device", "cpu", "--particles", "100", "--jobs", "2", "-o"])
        .arg(d.join("lsc-out"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("space charge (LSCDRIFT) couples the particles"));
    let o = bin()
        .args(["beam", "track"])
        .arg(&lte)
        .args(["--device", "cpu", "--particles", "10", "--jobs", "11", "--job-index", "0", "-o"])
        .arg(d.join("many"))
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("give at most 10 jobs"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `--sdds` writes final.sdds (survivors) and lost.sdds beside the Parquet files; final.sdds read
/// back as `--beam` gives the same particles (SDDS in: x, xp, y, yp, t, p); lost.parquet holds
/// every lost particle with its element and pass.
#[test]
fn sdds_out_and_in_and_lost_particles() {
    let d = scratch("beam", "sdds");
    let lte = d.join("col.lte");
    std::fs::write(
        &lte,
        "Q1: QUAD, L=0.2, K1=1.5\nQ2: Q1, K1=-1.5\nD: DRIF, L=0.8\nC: RCOL, L=0.1, X_MAX=3e-4, Y_MAX=1\n\
         M: MAXAMP, X_MAX=1, Y_MAX=2e-4, ELLIPTICAL=1\nW: WATCH, FILENAME=\"%s-w.sdds\"\n\
         CELL: LINE=(Q1, D, C, Q2, D)\nRING: LINE=(M, 3*CELL, W)\n",
    )
    .unwrap();
    let out = d.join("out");
    let o = run_ok(
        bin()
            .args(["beam", "track"])
            .arg(&lte)
            .args(["--device", "cpu", "--particles", "2000", "--passes", "4", "--p-central", "50"])
            .args(["--emit-x", "1e-8", "--emit-y", "1e-8", "--no-plot", "--sdds", "-o"])
            .arg(&out),
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("lost per pass: 0: "), "{text}");
    let fin = read_parquet(&out.join("final.parquet")).unwrap();
    let lost = read_parquet(&out.join("lost.parquet")).unwrap();
    let lost_at = col(&fin, "lost_at");
    let n_lost = lost_at.iter().filter(|&&l| l > 0.0).count();
    assert!(n_lost > 50 && n_lost < 1900, "{n_lost} lost");
    assert_eq!(lost.rows(), n_lost);
    // lost.parquet: the same particles, elements and passes as final.parquet's flags.
    let rows: Vec<usize> = col(&lost, "particle").iter().map(|&p| p as usize).collect();
    let pass = col(&fin, "lost_pass");
    for (k, &r) in rows.iter().enumerate() {
        assert_eq!(col(&lost, "element")[k], lost_at[r] - 1.0);
        assert_eq!(col(&lost, "pass")[k], pass[r]);
        assert_eq!(col(&lost, "x")[k], col(&fin, "x")[r]);
    }
    // The watch point as SDDS: one page per pass with the particles alive there (ELEGANT's
    // layout), the last page = final.sdds's particles.
    let bytes = std::fs::read(out.join("col-w.sdds")).unwrap();
    let pages = warpdrive_beam::sdds::read_binary_pages(std::path::Path::new("col-w.sdds"), &bytes).unwrap();
    assert_eq!(pages.len(), 4);
    let lost_pass = col(&fin, "lost_pass");
    let alive_after = |pass: f64| (0..lost_at.len()).filter(|&i| lost_at[i] == 0.0 || lost_pass[i] > pass).count();
    for (k, page) in pages.iter().enumerate() {
        assert_eq!(page.rows(), alive_after(k as f64), "page {k}");
        assert_eq!(page.parameter("Pass").unwrap().value, warpdrive_beam::sdds::Value::Double(k as f64));
    }
    let fin_sdds = std::fs::read(out.join("final.sdds")).unwrap();
    let (_, last) = warpdrive_beam::sdds::read_first_page(std::path::Path::new("final.sdds"), &fin_sdds).unwrap();
    assert_eq!(pages[3].column("x").unwrap().data, last.column("x").unwrap().data);
    let passes: std::collections::BTreeSet<u64> = col(&lost, "pass").iter().map(|&p| p as u64).collect();
    assert!(passes.len() > 1, "losses in several passes: {passes:?}");
    // The collimator (C, elements 3, 8, 13) and the MAXAMP in y both lose particles.
    let elements: std::collections::BTreeSet<u64> = col(&lost, "element").iter().map(|&e| e as u64).collect();
    assert!(
        elements.contains(&3) && elements.iter().any(|e| ![3, 8, 13].contains(e)),
        "{elements:?}"
    );
    // final.sdds → --beam: a zero-length line (one marker) returns the same coordinates.
    let marker = d.join("m.lte");
    std::fs::write(&marker, "M: MARK\nL: LINE=(M)\n").unwrap();
    let again = d.join("again");
    run_ok(
        bin()
            .args(["beam", "track"])
            .arg(&marker)
            .args(["--device", "cpu", "--p-central", "50", "--watch", "off", "--no-plot", "--beam"])
            .arg(out.join("final.sdds"))
            .arg("-o")
            .arg(&again),
    );
    let back = read_parquet(&again.join("final.parquet")).unwrap();
    let alive: Vec<usize> = (0..lost_at.len()).filter(|&i| lost_at[i] == 0.0).collect();
    assert_eq!(back.rows(), alive.len());
    for c in ["x", "xp", "y", "yp", "p"] {
        let (a, b) = (col(&fin, c), col(&back, c));
        for (k, &i) in alive.iter().enumerate() {
            assert_eq!(a[i], b[k], "{c} of particle {i} after the SDDS round trip");
        }
    }
    // t → s → t with the particle's β: equal to rounding.
    let (a, b) = (col(&fin, "t"), col(&back, "t"));
    for (k, &i) in alive.iter().enumerate() {
        assert!(
            (a[i] - b[k]).abs() <= 1e-15 * a[i].abs().max(1e-12),
            "t of particle {i}: {} vs {}",
            a[i],
            b[k]
        );
    }
}

/// `beam run` runs the example .ele: Twiss, tracking with losses at the collimator, the files
/// it names (SDDS) and the tracking's Parquet files in one directory.
#[test]
fn ele_run_of_the_example_ring() {
    let d = scratch("beam", "ele");
    let out = d.join("ring-out");
    let ele = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/beam/ring.ele");
    let o = run_ok(bin().args(["beam", "run"]).arg(&ele).args(["--device", "cpu", "-o"]).arg(&out));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("twiss: Qx = 2.257715"), "{text}");
    assert!(text.contains("lost per pass: "), "{text}");
    for f in [
        "ring.twi",
        "ring.out",
        "ring.lost",
        "ring.fin",
        "final.parquet",
        "lost.parquet",
        "run.json",
    ] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    for f in ["ring.twi", "ring.out", "ring.lost", "ring.fin"] {
        assert!(std::fs::read(out.join(f)).unwrap().starts_with(b"SDDS1\n"), "{f}");
    }
    let lost = read_parquet(&out.join("lost.parquet")).unwrap();
    assert!(lost.rows() > 0 && lost.rows() < 2000, "{} lost", lost.rows());
    // The survivors read back with sdds_beam and tracked one more pass; a transfer-line Twiss
    // (matched = 0) from given values; rootname names the files.
    let lte = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/beam/ring.lte");
    let again = d.join("again.ele");
    std::fs::write(
        &again,
        format!(
            "&run_setup lattice=\"{}\", p_central_mev=3000, rootname=\"second\", output=\"%s.out\" &end\n\
             &run_control n_passes=1 &end\n\
             &twiss_output filename=\"%s.twi\", matched=0, beta_x=11.678, alpha_x=-1.4907, beta_y=5.1114, alpha_y=0.66847, eta_x=3.5391 &end\n\
             &sdds_beam input=\"{}\" &end\n&track &end\n",
            lte.display(),
            out.join("ring.out").display()
        ),
    )
    .unwrap();
    let out2 = d.join("again-out");
    let o = run_ok(bin().args(["beam", "run"]).arg(&again).args(["--device", "cpu", "-o"]).arg(&out2));
    let text = String::from_utf8_lossy(&o.stdout);
    let survivors = 2000 - lost.rows();
    assert!(text.contains(&format!("tracked {survivors} particles")), "{text}");
    // From the ring's own periodic values the line repeats the ring's tunes (to the 5 digits given).
    assert!(text.contains("twiss: Qx = 2.2577"), "{text}");
    assert!(out2.join("second.out").is_file() && out2.join("second.twi").is_file());
}

/// `beam run` with matrix_output, run_control n_steps = 3 and a second run_setup + track: the
/// matrix files, one SDDS page per step (Step = 1, 2, 3) with fresh particles each step, the
/// Parquet files of each tracking in its own subdirectory, lost.parquet with element names.
#[test]
fn ele_run_with_matrices_steps_and_two_tracks() {
    let d = scratch("beam", "ele-steps");
    let lte = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/beam/ring.lte");
    let ele = d.join("st.ele");
    let beam = "emit_x=2e-8, emit_y=1e-8, beta_x=11.678, alpha_x=-1.4907, beta_y=5.1114, alpha_y=0.66847, sigma_dp=3e-4";
    std::fs::write(
        &ele,
        format!(
            "&run_setup lattice=\"{l}\", p_central_mev=3000, output=\"%s.out\", losses=\"%s.lost\", final=\"%s.fin\", random_number_seed=7 &end\n\
             &run_control n_steps=3, n_passes=40 &end\n\
             &matrix_output printout=\"%s.mat\", printout_order=2, SDDS_output=\"%s.msdds\", SDDS_output_order=2 &end\n\
             &bunched_beam n_particles_per_bunch=300, {beam}, bunch=\"%s.bun\" &end\n\
             &track &end\n\
             &run_setup lattice=\"{l}\", p_central_mev=3000, rootname=\"second\", output=\"%s.out\" &end\n\
             &run_control n_passes=1 &end\n\
             &bunched_beam n_particles_per_bunch=100, {beam} &end\n\
             &track &end\n",
            l = lte.display()
        ),
    )
    .unwrap();
    let out = d.join("st-out");
    let o = run_ok(
        bin()
            .args(["beam", "run"])
            .arg(&ele)
            .args(["--device", "cpu", "--sdds", "-o"])
            .arg(&out),
    );
    let text = String::from_utf8_lossy(&o.stdout);
    for at in ["[step1]", "[step2]", "[step3]", "[track2]"] {
        assert!(text.contains(at), "{at} missing: {text}");
    }
    assert!(text.contains("matrix: R11 = "), "{text}");
    for sub in ["step1", "step2", "step3", "track2"] {
        for f in ["final.parquet", "lost.parquet", "run.json", "final.sdds", "lost.sdds"] {
            assert!(out.join(sub).join(f).is_file(), "{sub}/{f} missing");
        }
    }
    // One page per step, Step = 1, 2, 3; the bunches differ from step to step.
    let pages = |name: &str| {
        let bytes = std::fs::read(out.join(name)).unwrap();
        warpdrive_beam::sdds::read_binary_pages(std::path::Path::new(name), &bytes).unwrap()
    };
    let num = |v: &warpdrive_beam::sdds::Value| match v {
        warpdrive_beam::sdds::Value::Double(x) => *x,
        warpdrive_beam::sdds::Value::Long(x) => f64::from(*x),
        warpdrive_beam::sdds::Value::Str(s) => panic!("text {s}"),
    };
    for name in ["st.out", "st.lost", "st.fin", "st.bun"] {
        let p = pages(name);
        assert_eq!(p.len(), 3, "{name}");
        let steps: Vec<f64> = p.iter().map(|q| num(&q.parameter("Step").unwrap().value)).collect();
        assert_eq!(steps, [1.0, 2.0, 3.0], "{name}");
    }
    let bun = pages("st.bun");
    let x = |k: usize| bun[k].column("x").unwrap().data.clone();
    assert_ne!(x(0), x(1));
    assert_ne!(x(1), x(2));
    assert_eq!(pages("second.out").len(), 1);
    // Step k's lost.parquet = the k-th page of st.lost; element names as in the lattice.
    let names: Vec<String> = std::fs::read_to_string(&lte)
        .unwrap()
        .lines()
        .filter_map(|l| {
            l.split(':')
                .next()
                .filter(|n| !n.contains(' ') && !n.is_empty() && !n.starts_with('!'))
                .map(str::to_string)
        })
        .collect();
    let lost_pages = pages("st.lost");
    for (k, page) in lost_pages.iter().enumerate() {
        let lost = read_parquet(&out.join(format!("step{}", k + 1)).join("lost.parquet")).unwrap();
        let Some(Column::Str(en)) = lost.column("element_name") else {
            panic!("element_name")
        };
        assert_eq!(lost.rows(), page.rows(), "step {}", k + 1);
        assert!(en.iter().all(|n| names.contains(n)), "{en:?} not in {names:?}");
        if let warpdrive_beam::sdds::Data::Str(sn) = &page.column("ElementName").unwrap().data {
            assert_eq!(sn, en);
        } else {
            panic!("ElementName is not text");
        }
    }
    assert!(lost_pages.iter().any(|p| p.rows() > 0), "no losses in 3 × 40 turns");
    // The matrix files: text with C, R, T; SDDS with a row per element and T columns.
    let mat = std::fs::read_to_string(out.join("st.mat")).unwrap();
    assert!(
        mat.starts_with("matrix of line RING: ") && mat.contains("\nR:\n") && mat.contains("\nT66: "),
        "{mat}"
    );
    let m = pages("st.msdds");
    assert_eq!(m.len(), 1);
    assert!(m[0].rows() > 10 && m[0].column("T166").is_some() && m[0].column("R56").is_some());
}
