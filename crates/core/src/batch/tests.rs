use super::htcondor::{self, CondorOptions};
use super::slurm::{self, SlurmOptions};
use super::*;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// A scratch directory removed when the test ends.
struct Tmp(PathBuf);

impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn opt(long: &str, short: Option<char>, takes_value: bool) -> OptionShape {
    OptionShape {
        long: Some(long.into()),
        short,
        takes_value,
    }
}

/// A front end with a splittable command, one that is not, and a file-output one.
fn shapes() -> Vec<CommandShape> {
    let force = opt("force", None, false);
    let splittable = |path: &[&str]| CommandShape {
        path: path.iter().map(|s| s.to_string()).collect(),
        options: vec![
            force.clone(),
            opt("jobs", None, true),
            opt("job-index", None, true),
            opt("output", Some('o'), true),
            opt("trials", None, true),
            opt("seed", None, true),
            opt("energy", None, true),
            opt("no-plot", None, false),
        ],
    };
    vec![
        CommandShape {
            path: vec![],
            options: vec![force.clone()],
        },
        CommandShape {
            path: vec!["sky".into()],
            options: vec![force.clone()],
        },
        splittable(&["sky", "autocorr"]),
        splittable(&["photon"]),
        CommandShape {
            path: vec!["em".into()],
            options: vec![force, opt("output", Some('o'), true), opt("events", None, true)],
        },
    ]
}

fn words(s: &[&str]) -> Vec<OsString> {
    s.iter().map(OsString::from).collect()
}

fn split(args: &[&str]) -> Result<Split, BatchError> {
    Split::in_dir(
        &words(args),
        &shapes(),
        Path::new("/opt/bin/warpdrive"),
        None,
        false,
        Path::new("/home/u/run"),
    )
}

/// Words of a job with the index filled in, as a batch system would.
fn filled(w: &[Word], index: u64) -> Vec<String> {
    w.iter()
        .map(|w| {
            w.iter()
                .map(|p| match p {
                    Piece::Text(t) => t.clone(),
                    Piece::JobIndex => index.to_string(),
                })
                .collect()
        })
        .collect()
}

#[test]
fn a_command_is_rewritten_into_jobs() {
    let s = split(&[
        "warpdrive",
        "--force",
        "sky",
        "autocorr",
        "ev ents.txt",
        "--trials",
        "30",
        "--jobs=3",
        "-o",
        "out",
        "--seed",
        "5",
        "--energy",
        "-5",
    ])
    .unwrap();
    assert_eq!(s.command, ["sky", "autocorr"]);
    assert_eq!(s.jobs, 3);
    assert!(s.force);
    assert_eq!(s.output, Path::new("/home/u/run/out"));
    assert_eq!(s.work_dir, Path::new("/home/u/run/out.jobs"));
    assert_eq!(s.program, Path::new("/opt/bin/warpdrive"));
    let expect = |i: &str, out: &str| -> Vec<String> {
        [
            "sky",
            "autocorr",
            "--job-index",
            i,
            "-o",
            out,
            "--force",
            "ev ents.txt",
            "--trials",
            "30",
            "--jobs",
            "3",
            "--seed",
            "5",
            "--energy",
            "-5",
        ]
        .map(String::from)
        .to_vec()
    };
    assert_eq!(
        filled(&s.job_words(JobPaths::Absolute), 2),
        expect("2", "/home/u/run/out.jobs/job-2")
    );
    assert_eq!(filled(&s.job_words(JobPaths::Relative), 0), expect("0", "job-0"));
    assert_eq!(
        s.merge_words(s.relative_job_outputs()),
        ["merge", "job-0", "job-1", "job-2", "-o", "/home/u/run/out", "--force"]
    );
}

#[test]
fn output_spellings_and_file_outputs() {
    for o in [
        &["-o", "../hits.parquet"][..],
        &["--output", "../hits.parquet"],
        &["--output=../hits.parquet"],
        &["-o../hits.parquet"],
        &["-o=../hits.parquet"],
    ] {
        let mut args = vec!["photon", "--jobs", "2"];
        args.extend_from_slice(o);
        let s = split(&args).unwrap_or_else(|e| panic!("{o:?}: {e}"));
        assert_eq!(s.output, Path::new("/home/u/hits.parquet"), "{o:?}");
        assert_eq!(s.job_output(1), Path::new("/home/u/hits.parquet.jobs/job-1.parquet"));
        assert!(!s.force);
        assert_eq!(s.merge_words(vec![]), ["merge", "-o", "/home/u/hits.parquet"]);
        // The output option is replaced, not repeated.
        let w = filled(&s.job_words(JobPaths::Absolute), 1);
        assert_eq!(
            w.iter().filter(|a| a.starts_with("-o") || a.starts_with("--output")).count(),
            1,
            "{w:?}"
        );
    }
}

#[test]
fn a_value_that_looks_like_an_option_stays_a_value() {
    // `--seed -o` is odd but a value: -o here is the seed's, not the output.
    let e = split(&["sky", "autocorr", "--jobs", "2", "--seed", "-o"]).unwrap_err();
    assert!(matches!(e, BatchError::NoOutput { .. }), "{e}");
    // After `--`, everything is the command's positional arguments.
    let s = split(&["sky", "autocorr", "--jobs", "2", "-o", "x", "--", "--job-index"]).unwrap();
    let w = filled(&s.job_words(JobPaths::Relative), 0);
    assert_eq!(&w[w.len() - 2..], ["--", "--job-index"]);
}

#[test]
fn refusals_say_what_to_do() {
    let msg = |args: &[&str]| split(args).unwrap_err().to_string();
    let m = msg(&["em", "--events", "10", "-o", "x"]);
    assert!(
        m.contains("`warpdrive em` cannot be split") && m.contains("sky autocorr, photon"),
        "{m}"
    );
    let m = msg(&["sky", "--jobs", "3"]);
    assert!(m.contains("`warpdrive sky` cannot be split"), "{m}");
    let m = msg(&["sky", "autocorr", "-o", "x"]);
    assert!(m.contains("has no --jobs N"), "{m}");
    let m = msg(&["sky", "autocorr", "--jobs", "3", "--job-index", "1", "-o", "x"]);
    assert!(m.contains("--job-index is set for each job"), "{m}");
    let m = msg(&["sky", "autocorr", "--jobs", "3"]);
    assert!(m.contains("has no -o/--output"), "{m}");
    for bad in ["0", "-1", "abc", ""] {
        let m = msg(&["sky", "autocorr", "--jobs", bad, "-o", "x"]);
        assert!(m.contains("at least 1"), "{bad}: {m}");
    }
    let m = msg(&["sky", "autocorr", "-o", "x", "--jobs"]);
    assert!(m.contains("--jobs needs a value"), "{m}");
    let m = msg(&["nonsense", "--jobs", "3"]);
    assert!(m.contains("'nonsense' is not a warpdrive command"), "{m}");
    let m = msg(&[]);
    assert!(m.contains("give the command to split after `--`"), "{m}");
    let m = msg(&["--trials", "3"]);
    assert!(m.contains("'--trials' is not a warpdrive command"), "{m}");
    let e = Split::in_dir(
        &words(&["sky", "autocorr", "--jobs", "2", "-o", "out"]),
        &shapes(),
        Path::new("/w"),
        Some(Path::new("out/jobs")),
        false,
        Path::new("/d"),
    )
    .unwrap_err();
    assert!(e.to_string().contains("lies in the output /d/out"), "{e}");
}

#[cfg(unix)]
#[test]
fn non_utf8_arguments_are_refused_by_name() {
    use std::os::unix::ffi::OsStringExt;
    let mut w = words(&["sky", "autocorr", "--jobs", "2", "-o"]);
    w.push(OsString::from_vec(b"out\xff".to_vec()));
    let e = Split::in_dir(&w, &shapes(), Path::new("/w"), None, false, Path::new("/d")).unwrap_err();
    assert!(e.to_string().contains("is not UTF-8"), "{e}");
}

/// A stand-in for the warpdrive binary: writes its arguments, one per line, to `$ARGS_OUT`.
fn recorder(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join("fake warpdrive");
    std::fs::write(&p, "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$ARGS_OUT\"\n").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// Run a generated script with bash as Slurm would (the `#SBATCH` lines are comments to it);
/// the arguments the program received.
fn run_script(script: &Path, index: Option<u64>, args_out: &Path) -> Vec<String> {
    let mut c = std::process::Command::new("bash");
    c.arg(script).env("ARGS_OUT", args_out);
    if let Some(i) = index {
        c.env("SLURM_ARRAY_TASK_ID", i.to_string());
    }
    let out = c.output().expect("bash runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::read_to_string(args_out).unwrap().lines().map(str::to_string).collect()
}

#[test]
fn slurm_scripts_run_the_jobs_and_the_merge_with_exact_arguments() {
    let tmp = Tmp(crate::test_support::scratch("batch", "slurm"));
    let base = tmp.0.as_path().join("a 'dir'");
    std::fs::create_dir(&base).unwrap();
    let program = recorder(tmp.0.as_path());
    let s = Split::in_dir(
        &words(&[
            "warpdrive",
            "photon",
            "--jobs",
            "3",
            "-o",
            "hits.parquet",
            "--seed",
            "$HOME `x` \"q\"",
        ]),
        &shapes(),
        &program,
        None,
        false,
        &base,
    )
    .unwrap();
    let o = SlurmOptions {
        gpus_per_job: 1,
        partition: Some("gpu".into()),
        time: Some("01:00:00".into()),
        max_running: Some(2),
        sbatch_args: vec!["--qos=long".into()],
        ..Default::default()
    };
    let sc = slurm::scripts(&s, &o).unwrap();
    write_files(&s, &[sc.array.clone(), sc.merge.clone()]).unwrap();
    let text = &sc.array.text;
    for line in [
        "#SBATCH --array=0-2%2\n",
        "#SBATCH --gres=gpu:1\n",
        "#SBATCH --partition=gpu\n",
        "#SBATCH --time=01:00:00\n",
        "#SBATCH --qos=long\n",
        "sbatch --array=I ",
    ] {
        assert!(text.contains(line), "array script lacks {line:?}:\n{text}");
    }
    assert!(!sc.merge.text.contains("--gres"), "the merge needs no GPU:\n{}", sc.merge.text);
    let work = base.join("hits.parquet.jobs");
    let got = run_script(&work.join(slurm::ARRAY_SCRIPT), Some(1), &tmp.0.as_path().join("args"));
    let job1 = work.join("job-1.parquet").to_string_lossy().into_owned();
    assert_eq!(
        got,
        [
            "photon",
            "--job-index",
            "1",
            "-o",
            &job1,
            "--force",
            "--jobs",
            "3",
            "--seed",
            "$HOME `x` \"q\""
        ]
    );
    let got = run_script(&work.join(slurm::MERGE_SCRIPT), None, &tmp.0.as_path().join("args"));
    let mut expect = vec!["merge".to_string()];
    expect.extend((0..3).map(|i| work.join(format!("job-{i}.parquet")).to_string_lossy().into_owned()));
    expect.extend(["-o".to_string(), base.join("hits.parquet").to_string_lossy().into_owned()]);
    assert_eq!(got, expect);
    // CPU jobs ask for no GPU.
    let cpu = slurm::scripts(&s, &SlurmOptions::default()).unwrap();
    assert!(!cpu.array.text.contains("gpu"), "{}", cpu.array.text);
}

#[test]
fn a_single_job_is_merged_too() {
    let tmp = Tmp(crate::test_support::scratch("batch", "one"));
    let program = recorder(tmp.0.as_path());
    let s = Split::in_dir(
        &words(&["sky", "autocorr", "--jobs", "1", "-o", "out"]),
        &shapes(),
        &program,
        None,
        true,
        tmp.0.as_path(),
    )
    .unwrap();
    let sc = slurm::scripts(&s, &SlurmOptions::default()).unwrap();
    write_files(&s, &[sc.merge]).unwrap();
    let got = run_script(&s.work_dir.join(slurm::MERGE_SCRIPT), None, &tmp.0.as_path().join("args"));
    let out = tmp.0.as_path().join("out").to_string_lossy().into_owned();
    let job = tmp.0.as_path().join("out.jobs/job-0").to_string_lossy().into_owned();
    assert_eq!(got, ["merge", &job, "-o", &out, "--force"]);
}

#[test]
fn slurm_options_are_checked() {
    let s = split(&["sky", "autocorr", "--jobs", "2", "-o", "x"]).unwrap();
    let bad = |o: SlurmOptions| slurm::scripts(&s, &o).unwrap_err().to_string();
    assert!(bad(SlurmOptions {
        time: Some("1:00\n#SBATCH --x".into()),
        ..Default::default()
    })
    .contains("line break"));
    assert!(bad(SlurmOptions {
        sbatch_args: vec!["qos=long".into()],
        ..Default::default()
    })
    .contains("starts with -"));
    assert!(bad(SlurmOptions {
        max_running: Some(0),
        ..Default::default()
    })
    .contains("at least one job"));
    assert!(bad(SlurmOptions {
        partition: Some(" ".into()),
        ..Default::default()
    })
    .contains("give a value"));
}

#[test]
fn htcondor_files_queue_the_jobs_and_merge_in_a_dag() {
    let s = split(&["sky", "autocorr", "--jobs", "4", "-o", "out", "--seed", "it's $5"]).unwrap();
    let f = htcondor::files(&s, &CondorOptions::default()).unwrap();
    let w = &f.work.text;
    for line in [
        "executable = /opt/bin/warpdrive\n",
        "job_index = $(Process)\n",
        "arguments = \"sky autocorr --job-index $(job_index) -o job-$(job_index) --force --jobs 4 --seed 'it''s $(DOLLAR)5'\"\n",
        "initialdir = /home/u/run/out.jobs\n",
        "request_gpus = 1\n",
        "request_cpus = 1\n",
        "request_memory = 2GB\n",
        "transfer_output_files = job-$(job_index)\n",
        "output = job-$(job_index).out\n",
        "error = job-$(job_index).err\n",
        "log = work.log\n",
    ] {
        assert!(w.contains(line), "work.sub lacks {line:?}:\n{w}");
    }
    assert!(w.ends_with("queue 4\n"), "{w}");
    assert!(f.rerun.text.ends_with("queue 1\n"));
    assert!(
        f.merge
            .text
            .contains("arguments = \"merge job-0 job-1 job-2 job-3 -o /home/u/run/out\"\n"),
        "{}",
        f.merge.text
    );
    assert!(f.merge.text.contains("universe = local\n"));
    assert!(
        f.dag
            .text
            .contains("JOB work work.sub\nJOB merge merge.sub\nPARENT work CHILD merge\n"),
        "{}",
        f.dag.text
    );
    let cpu = htcondor::files(
        &s,
        &CondorOptions {
            gpus_per_job: 0,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(!cpu.work.text.contains("request_gpus"));
    let e = htcondor::files(
        &s,
        &CondorOptions {
            submit_lines: vec!["no equals".into()],
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("name = value"), "{e}");
}

#[test]
fn outputs_and_work_directories_are_not_overwritten_by_surprise() {
    let tmp = Tmp(crate::test_support::scratch("batch", "dirs"));
    let mk = |force: bool, work: Option<&Path>| {
        Split::in_dir(
            &words(&["sky", "autocorr", "--jobs", "2", "-o", "out"]),
            &shapes(),
            Path::new("/w"),
            work,
            force,
            tmp.0.as_path(),
        )
        .unwrap()
    };
    std::fs::create_dir(tmp.0.as_path().join("out")).unwrap();
    let e = write_files(&mk(false, None), &[]).unwrap_err();
    assert!(e.to_string().contains("exists; the merge would refuse to replace it"), "{e}");
    write_files(&mk(true, None), &[]).unwrap();
    // A second submission into the same work directory is fine; a foreign directory is not.
    write_files(&mk(true, None), &[]).unwrap();
    let foreign = tmp.0.as_path().join("mine");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("thesis.tex"), "x").unwrap();
    let e = write_files(&mk(true, Some(&foreign)), &[]).unwrap_err();
    assert!(e.to_string().contains("was not made by `warpdrive submit`"), "{e}");
    assert_eq!(std::fs::read_to_string(foreign.join("thesis.tex")).unwrap(), "x");
}
