//! End-to-end tests of `warpdrive sky autocorr` and `warpdrive merge`: thread-count
//! independence, batch jobs merged into the result of one run, and bad input.

mod common;
use common::{bin, scratch};

use std::path::Path;
use std::process::Output;
use warpdrive_core::table::read_parquet;

fn run(args: &[&str], out: &Path) -> Output {
    let o = bin()
        .args(["sky", "autocorr", "--device", "cpu"])
        .args(args)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    o
}

/// The columns of a Parquet file as bit patterns (NaN = NaN; metadata such as the command line
/// excluded).
fn columns(p: &Path) -> Vec<(String, Vec<u64>)> {
    use warpdrive_core::table::Column;
    read_parquet(p)
        .unwrap()
        .columns
        .into_iter()
        .map(|(n, c)| {
            let bits = match c {
                Column::I32(v) => v.iter().map(|&x| x as u64).collect(),
                Column::I64(v) => v.iter().map(|&x| x as u64).collect(),
                Column::F32(v) => v.iter().map(|x| u64::from(x.to_bits())).collect(),
                Column::F64(v) => v.iter().map(|x| x.to_bits()).collect(),
                Column::Str(v) => v.iter().map(|x| x.len() as u64).collect(),
            };
            (n, bits)
        })
        .collect()
}

#[test]
fn jobs_merge_into_one_run_and_threads_do_not_matter() {
    let dir = scratch("sky", "merge");
    let common = ["--synthetic-events", "3000", "--trials", "30", "--seed", "4", "--no-plot"];
    let single = dir.join("single");
    run(&[&common[..], &["--threads", "1"]].concat(), &single);
    let two = dir.join("two-threads");
    run(&[&common[..], &["--threads", "2"]].concat(), &two);
    for f in ["counts.parquet", "background.parquet"] {
        assert_eq!(columns(&single.join(f)), columns(&two.join(f)), "{f}: 1 vs 2 threads");
    }
    let mut jobs = Vec::new();
    for i in 0..3 {
        let j = dir.join(format!("job{i}"));
        run(&[&common[..], &["--jobs", "3", "--job-index", &i.to_string()]].concat(), &j);
        jobs.push(j);
    }
    let merged = dir.join("merged");
    // Incomplete sets are refused unless asked for.
    let o = bin().arg("merge").arg("-o").arg(&merged).args(&jobs[..2]).output().unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--partial"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The same job twice overlaps.
    let o = bin()
        .arg("merge")
        .arg("-o")
        .arg(&merged)
        .args([&jobs[0], &jobs[0]])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("overlap"));
    let o = bin().arg("merge").arg("-o").arg(&merged).args(&jobs).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for f in ["counts.parquet", "background.parquet"] {
        assert_eq!(columns(&single.join(f)), columns(&merged.join(f)), "{f}: merged jobs vs one run");
    }
    assert!(merged.join("autocorr.png").is_file() && merged.join("summary.json").is_file());
    // The post-trial p-value comes from the jobs' per-trial counts: as in the single run.
    let post = |d: &Path| -> serde_json::Value {
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(d.join("summary.json")).unwrap()).unwrap();
        v["post_trial"].clone()
    };
    assert!(post(&single)["p"].is_number(), "{}", post(&single));
    assert_eq!(post(&single), post(&merged));
    assert!(jobs.iter().all(|j| j.join("trials.parquet").is_file()));
    assert!(!single.join("trials.parquet").exists() && !merged.join("trials.parquet").exists());
    // A job whose per-trial counts do not match its background is refused.
    let swapped = dir.join("swapped");
    std::fs::create_dir_all(&swapped).unwrap();
    for f in ["counts.parquet", "background.parquet", "summary.json"] {
        std::fs::copy(jobs[1].join(f), swapped.join(f)).unwrap();
    }
    let mut t = read_parquet(&jobs[1].join("trials.parquet")).unwrap();
    if let Some((_, warpdrive_core::table::Column::I64(c))) = t.columns.iter_mut().find(|(n, _)| n == "count") {
        c[0] += 1;
    }
    t.write_parquet(&swapped.join("trials.parquet")).unwrap();
    let o = bin()
        .arg("merge")
        .arg("-o")
        .arg(dir.join("merged-swapped"))
        .args([&jobs[0], &swapped, &jobs[2]])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("trials.parquet do not match their background.parquet"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // A job of a different analysis (other seed) is refused.
    let other = dir.join("other");
    run(
        &[
            "--synthetic-events",
            "3000",
            "--trials",
            "30",
            "--seed",
            "5",
            "--no-plot",
            "--jobs",
            "3",
            "--job-index",
            "2",
        ],
        &other,
    );
    let o = bin()
        .arg("merge")
        .arg("-o")
        .arg(dir.join("merged-other"))
        .args([&jobs[0], &jobs[1], &other])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("a different analysis than"));
}

#[test]
fn bad_inputs_fail_cleanly() {
    let dir = scratch("sky", "bad");
    let f = dir.join("ev.txt");
    let cases: [(&str, Vec<&str>, &str); 7] = [
        ("MJD log10(E) RA Dec\n1 2 3 95\n", vec![], "ev.txt:2: field 'Dec': declination 95"),
        ("MJD log10(E) RA\n1 2 3\n", vec![], "no declination column"),
        ("MJD log10(E) RA Dec\n1 2 nan 5\n", vec![], "field 'RA': right ascension NaN"),
        (
            "MJD log10(E) RA Dec\n1 2 3 5\n1 2 4 6\n",
            vec!["--hemisphere", "south"],
            "no events in the selected region",
        ),
        (
            "MJD log10(E) RA Dec\n1 2 3 5\n1 2 4 6\n",
            vec!["--edges", "1,0.5"],
            "bin edges must increase",
        ),
        ("MJD log10(E) RA Dec\n1 2 3 5\n1 3 4 6\n", vec!["--cuts", "top:0.5,top:1"], "nested"),
        ("MJD log10(E) RA Dec\n1 2 3 5\n1 2 4 6\n", vec!["--cuts", "99"], "selects no events"),
    ];
    for (text, args, needle) in cases {
        std::fs::write(&f, text).unwrap();
        let out = dir.join("out");
        let o = bin()
            .args(["sky", "autocorr", "--device", "cpu", "--trials", "2"])
            .arg(&f)
            .args(&args)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{needle}: should fail");
        assert!(err.contains(needle), "expected '{needle}' in: {err}");
        assert!(!out.join("counts.parquet").exists(), "{needle}: no output on error");
    }
}

/// Identical results are identical bytes: the data files of a run with 1 and with 2 threads (same
/// command line but for --threads, same output path) do not differ in a single byte; only
/// run.json (device, threads, timings) may.
#[test]
fn data_files_are_byte_identical_across_thread_counts() {
    let dir = scratch("sky", "bytes");
    let out = dir.join("out");
    let files = ["counts.parquet", "background.parquet", "summary.json"];
    let mut seen = Vec::new();
    for t in ["1", "2"] {
        let args = [
            "--synthetic-events",
            "2000",
            "--trials",
            "20",
            "--seed",
            "9",
            "--no-plot",
            "--force",
            "--threads",
            t,
        ];
        run(&args, &out);
        seen.push(files.map(|f| std::fs::read(out.join(f)).unwrap()));
        assert!(out.join("run.json").is_file());
    }
    for (k, f) in files.iter().enumerate() {
        assert!(seen[0][k] == seen[1][k], "{f} differs between 1 and 2 threads");
    }
}

/// `sky inject`: the data files are the same bytes for 1 and 2 threads; with K = 0 every
/// injected distribution is the background, and the background equals `sky autocorr`'s (same
/// options, same seed), column for column.
#[test]
fn inject_is_thread_independent_and_without_signal_is_the_background() {
    let dir = scratch("sky", "inject");
    let common = ["--synthetic-events", "2000", "--trials", "16", "--seed", "9", "--cuts", "top:0.1"];
    let inject = |out: &Path, extra: &[&str]| {
        let o = bin()
            .args(["sky", "inject", "--device", "cpu", "--sources", "3,6"])
            .args(common)
            .args(extra)
            .arg("-o")
            .arg(out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    let files = ["background.parquet", "signal.parquet", "sensitivity.parquet", "summary.json"];
    let mut seen = Vec::new();
    for t in ["1", "2"] {
        let out = dir.join(format!("t{t}"));
        inject(&out, &["--events-per-source", "6", "--threads", t]);
        seen.push(files.map(|f| std::fs::read(out.join(f)).unwrap()));
        assert!(out.join("inject.png").is_file() && out.join("run.json").is_file());
    }
    for (k, f) in files.iter().enumerate() {
        assert!(seen[0][k] == seen[1][k], "{f} differs between 1 and 2 threads");
    }
    let k0 = dir.join("k0");
    inject(&k0, &["--events-per-source", "0", "--no-plot"]);
    let bg = dir.join("bg");
    run(&[&common[..], &["--no-plot"]].concat(), &bg);
    assert_eq!(
        columns(&k0.join("background.parquet")),
        columns(&bg.join("background.parquet")),
        "inject's background vs autocorr's"
    );
    // signal.parquet: (sources, cut, bin, count, trials) = background rows once per strength.
    let sig = columns(&k0.join("signal.parquet"));
    let back = columns(&bg.join("background.parquet"));
    let rows = back[0].1.len();
    assert_eq!(sig[1].1.len(), 2 * rows);
    for (i, name) in ["cut", "bin", "count", "trials"].iter().enumerate() {
        assert_eq!(&sig[i + 1].0, name);
        assert_eq!(sig[i + 1].1[..rows], back[i].1[..], "{name}, 3 sources");
        assert_eq!(sig[i + 1].1[rows..], back[i].1[..], "{name}, 6 sources");
    }
}

/// Injection batch jobs merge into exactly the single run (every data file column for column,
/// whatever the job count); a job of another injection (other K) and a mixture with background
/// jobs are refused.
#[test]
fn inject_jobs_merge_into_one_run() {
    let dir = scratch("sky", "inject-jobs");
    let common = [
        "--synthetic-events",
        "2000",
        "--trials",
        "18",
        "--seed",
        "4",
        "--cuts",
        "top:0.1",
        "--sources",
        "2,5",
        "--no-plot",
    ];
    let inject = |out: &Path, extra: &[&str]| {
        let o = bin()
            .args(["sky", "inject", "--device", "cpu"])
            .args(common)
            .args(extra)
            .arg("-o")
            .arg(out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    let single = dir.join("single");
    inject(&single, &["--events-per-source", "6"]);
    let files = ["counts.parquet", "background.parquet", "signal.parquet", "sensitivity.parquet"];
    for jobs in [2, 3] {
        let dirs: Vec<_> = (0..jobs)
            .map(|i| {
                let j = dir.join(format!("job{jobs}-{i}"));
                inject(
                    &j,
                    &[
                        "--events-per-source",
                        "6",
                        "--jobs",
                        &jobs.to_string(),
                        "--job-index",
                        &i.to_string(),
                    ],
                );
                j
            })
            .collect();
        let merged = dir.join(format!("merged{jobs}"));
        let o = bin().arg("merge").arg("-o").arg(&merged).args(&dirs).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        for f in files {
            assert_eq!(
                columns(&single.join(f)),
                columns(&merged.join(f)),
                "{f}: {jobs} jobs merged vs one run"
            );
        }
        assert!(merged.join("inject.png").is_file() && merged.join("summary.json").is_file());
    }
    let other = dir.join("other-k");
    inject(&other, &["--events-per-source", "7", "--jobs", "2", "--job-index", "1"]);
    let o = bin()
        .arg("merge")
        .arg("-o")
        .arg(dir.join("merged-other"))
        .args([dir.join("job2-0"), other])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("a different injection than"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let bg = dir.join("bg");
    run(
        &[
            "--synthetic-events",
            "2000",
            "--trials",
            "18",
            "--seed",
            "4",
            "--cuts",
            "top:0.1",
            "--no-plot",
            "--jobs",
            "2",
            "--job-index",
            "1",
        ],
        &bg,
    );
    let o = bin()
        .arg("merge")
        .arg("-o")
        .arg(dir.join("merged-mixed"))
        .args([dir.join("job2-0"), bg])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("merge each kind on its own"), "{err}");
    assert!(!dir.join("merged-mixed").exists() && !dir.join("merged-other").exists());
}
