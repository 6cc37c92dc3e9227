"""`warpdrive submit htcondor --dry-run` (issue #33): the files it writes are read by HTCondor's
own parser (the htcondor Python bindings; no schedd needed): the jobs' submit description queues
N processes whose arguments carry their index, the merge's runs on the access point, and the
DAG's commands parse."""

import os
import pathlib
import shlex
import stat

import pytest

from conftest import require

ARGS = ["sky", "autocorr", "--synthetic-events", "500", "--trials", "12", "--device", "cpu", "--no-plot",
        "--ra-column", "it's $5", "--jobs", "4"]


@pytest.fixture
def condor_files(cli, cli_path, tmp_path):
    out = tmp_path / "my out"
    cli("submit", "htcondor", "--gpus-per-job", "1", "--mem", "3GB", "--dry-run", "--", cli_path, *ARGS, "-o", out)
    return pathlib.Path(str(out) + ".jobs"), out


def parse_arguments(value):
    """HTCondor's new argument syntax (a double-quoted string, '' and "" escapes) as a list."""
    assert value.startswith('"') and value.endswith('"'), value
    inner = value[1:-1].replace('""', '"')
    # Single-quoted words with '' for a quote: the shell's rules after turning '' into '\''.
    return shlex.split(inner.replace("''", "'\\''"))


def test_the_jobs_submit_description(condor_files, cli_path):
    htcondor = require("htcondor2")
    work, out = condor_files
    sub = htcondor.Submit((work / "work.sub").read_text())
    assert sub.getQArgs() == "4"
    assert sub["request_gpus"] == "1"
    assert sub["request_memory"] == "3GB"
    assert sub["executable"] == os.path.abspath(cli_path)
    assert sub["initialdir"] == str(work)
    for index in (0, 3):
        sub["Process"] = str(index)
        args = parse_arguments(sub.expand("arguments"))
        assert args[:7] == ["sky", "autocorr", "--job-index", str(index), "-o", f"job-{index}", "--force"]
        assert "it's $5" in args
        assert sub.expand("output") == f"job-{index}.out"
        assert sub.expand("error") == f"job-{index}.err"
        assert sub.expand("transfer_output_files") == f"job-{index}"


def test_one_job_again(condor_files):
    """rerun.sub with `condor_submit -append 'job_index = 2'`: -append puts the line just before
    the queue statement."""
    htcondor = require("htcondor2")
    work, _ = condor_files
    text = (work / "rerun.sub").read_text()
    head, queue = text.rsplit("queue", 1)
    sub = htcondor.Submit(head + "job_index = 2\nqueue" + queue)
    assert sub.getQArgs() == "1"
    sub["Process"] = "0"
    assert parse_arguments(sub.expand("arguments"))[2:6] == ["--job-index", "2", "-o", "job-2"]


def test_the_merge_and_the_dag(condor_files, tmp_path, monkeypatch):
    htcondor = require("htcondor2")
    work, out = condor_files
    merge = htcondor.Submit((work / "merge.sub").read_text())
    assert merge["universe"] == "local"
    assert parse_arguments(merge.expand("arguments")) == ["merge", "job-0", "job-1", "job-2", "job-3", "-o", str(out)]
    # The DAG: its commands parsed by the bindings' DAG reader (Submit.from_dag, which insists on
    # finding condor_dagman on PATH only to name it in DAGMan's own submit description: a stand-in
    # serves), and every node's submit file there and parsed.
    dagman = tmp_path / "bin" / "condor_dagman"
    dagman.parent.mkdir()
    dagman.write_text("#!/bin/sh\nexit 0\n")
    dagman.chmod(dagman.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{dagman.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(work)
    htcondor.Submit.from_dag("work.dag", {})
    nodes, edges = {}, []
    for line in (work / "work.dag").read_text().splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if words[0] == "JOB":
            nodes[words[1]] = htcondor.Submit((work / words[2]).read_text())
        elif words[0] == "PARENT":
            edges.append((words[1], words[3]))
    assert set(nodes) == {"work", "merge"} and edges == [("work", "merge")]
    assert nodes["work"].getQArgs() == "4"
    # A broken DAG is refused by the same reader (the check can fail).
    (tmp_path / "bad.dag").write_text("JOB work work.sub\nPARENTS work CHILD merge\n")
    with pytest.raises(Exception, match="not a valid DAG command"):
        htcondor.Submit.from_dag(str(tmp_path / "bad.dag"), {})


def test_cpu_jobs_ask_for_no_gpu(cli, cli_path, tmp_path):
    htcondor = require("htcondor2")
    cli("submit", "htcondor", "--gpus-per-job", "0", "--dry-run", "--", cli_path, *ARGS, "-o", tmp_path / "o")
    sub = htcondor.Submit((tmp_path / "o.jobs" / "work.sub").read_text())
    assert "request_gpus" not in sub.keys()
