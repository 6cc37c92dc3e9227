"""warpdrive.distributed (issue #33): a run split into jobs over a Dask cluster and merged is the
single run — the same tables and the same data files — and GPUs are handed out one per job."""

import os
import pathlib

import pytest

from conftest import require, same_bits
from warpdrive import distributed, em, photon, sky

CPU = {"device": "cpu", "threads": 1}
AUTOCORR = {"synthetic_events": 2000, "trials": 24, "bins": 4, "bin_width": 0.5, "seed": 11, **CPU}
INJECT = {"synthetic_events": 2000, "sources": [2, 4], "events_per_source": 3, "trials": 9, "bins": 4,
          "bin_width": 0.5, **CPU}


@pytest.fixture(scope="module")
def client():
    """Two worker processes of one thread each, as the issue asks."""
    dd = require("dask.distributed")
    with dd.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        with dd.Client(cluster) as c:
            yield c


def same_table(a, b):
    """Tables with the same columns, bit for bit (NaN cells included, which == would not match)."""
    return a.column_names == b.column_names and all(same_bits(a[c].to_numpy(), b[c].to_numpy()) for c in a.column_names)


def data_files(d):
    """{name: bytes} of the data files of an output directory (run.json says how it was run)."""
    return {p.name: p.read_bytes() for p in sorted(pathlib.Path(d).iterdir()) if p.suffix == ".parquet"}


@pytest.mark.parametrize("function, kwargs", [(sky.autocorr, AUTOCORR), (sky.inject, INJECT)],
                         ids=["autocorr", "inject"])
def test_jobs_on_a_local_cluster_merge_into_the_single_run(client, function, kwargs, tmp_path):
    single = function(**kwargs)
    single.to_parquet(tmp_path / "single")
    req = distributed.Request(function, kwargs, output=tmp_path / "merged")
    merged = distributed.run(req, client, jobs=3)
    assert merged.trials == single.trials
    assert same_table(merged.counts, single.counts)
    assert same_table(merged.background, single.background)
    files = data_files(tmp_path / "single")
    assert len(files) >= 2
    assert data_files(tmp_path / "merged") == files
    # The job outputs stay beside the output, one per job.
    assert sorted(os.listdir(tmp_path / "merged.jobs")) == ["job-0", "job-1", "job-2"]
    # Run again with force: the jobs replace their own outputs, the merge the result.
    again = distributed.run(distributed.Request(function, kwargs, output=tmp_path / "merged", force=True), client, jobs=3)
    assert same_table(again.counts, single.counts)


def test_photon_and_em_jobs_merge_into_the_single_run(client, tmp_path):
    """The photon file and the shower directory of a Dask run equal the single run's data files."""
    pk = {"energy": 300.0, "seed": 4, **CPU}
    photon.propagate(output=tmp_path / "single.parquet", **pk)
    hits = distributed.run(distributed.Request(photon.propagate, pk, output=tmp_path / "merged.parquet"), client, jobs=3)
    assert (tmp_path / "merged.parquet").read_bytes() == (tmp_path / "single.parquet").read_bytes()
    assert hits.num_rows > 0
    assert sorted(os.listdir(tmp_path / "merged.parquet.jobs")) == [f"job-{i}.parquet" for i in range(3)]
    ek = {"energy": 50.0, "events": 5, "seed": 2, **CPU}
    em.testem3(**ek).to_parquet(tmp_path / "shower")
    r = distributed.run(distributed.Request(em.testem3, ek, output=tmp_path / "merged-shower"), client, jobs=2)
    assert r.n_events == 5
    assert data_files(tmp_path / "merged-shower") == data_files(tmp_path / "shower")


def test_without_output_the_job_outputs_are_temporary(client, tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    r = distributed.run(distributed.Request(sky.autocorr, AUTOCORR), client, jobs=2)
    assert same_table(r.counts, sky.autocorr(**AUTOCORR).counts)
    assert os.listdir(tmp_path) == []


def test_requests_are_checked(client, tmp_path):
    with pytest.raises(ValueError, match="cannot be split into jobs; these can: warpdrive.sky.autocorr"):
        distributed.Request(sky.merge, {})
    with pytest.raises(ValueError, match="kwargs sets jobs, job_index: warpdrive.distributed.run sets them"):
        distributed.Request(sky.autocorr, {"jobs": 3, "job_index": 1})
    req = distributed.Request(sky.autocorr, AUTOCORR)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="at least 1"):
            distributed.run(req, client, jobs=bad)
    (tmp_path / "out").mkdir()
    with pytest.raises(FileExistsError, match="force=True"):
        distributed.run(distributed.Request(sky.autocorr, AUTOCORR, output=tmp_path / "out"), client, jobs=2)
    assert os.listdir(tmp_path / "out") == []
    # A job's error reaches the caller.
    with pytest.raises(ValueError, match="bins"):
        distributed.run(distributed.Request(sky.autocorr, {**AUTOCORR, "bins": 0}), client, jobs=2)


def test_the_request_shows_itself():
    r = distributed.Request(sky.autocorr, {"trials": 10}, output="out")
    assert repr(r) == "warpdrive.distributed.Request(sky.autocorr(trials=10), output='out')"
    assert r.name == "sky.autocorr"


# What the stand-in of a splittable call saw (one worker in this process: see below).
SEEN = []


class FakeResult:
    """What a job returns: its device, written as its output."""

    def __init__(self, device):
        self.device = device

    def to_parquet(self, path, force=False):
        pathlib.Path(path).write_text(self.device)


def fake_call(*, device="auto", jobs, job_index, progress):
    import time

    SEEN.append((job_index, device))
    time.sleep(0.3)  # two jobs hold their GPUs at once
    return FakeResult(device)


def fake_merge(paths):
    return sorted(pathlib.Path(p).read_text() for p in paths)


def test_each_job_gets_its_own_gpu(monkeypatch, tmp_path):
    """A worker that declares GPU=2 runs two jobs at once, each on its own ordinal (a worker in
    this process, so that the stand-in call can record what it was given)."""
    dd = require("dask.distributed")
    monkeypatch.setitem(distributed._MERGES, fake_call, distributed._Splittable("fake", fake_merge))
    SEEN.clear()
    with dd.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, resources={"GPU": 2},
                         dashboard_address=":0") as cluster, dd.Client(cluster) as c:
        devices = distributed.run(distributed.Request(fake_call), c, jobs=4, work_dir=tmp_path)
        assert sorted(i for i, _ in SEEN) == [0, 1, 2, 3]
        assert devices == ["cuda:0", "cuda:0", "cuda:1", "cuda:1"], SEEN
        # An explicit device stays.
        SEEN.clear()
        distributed.run(distributed.Request(fake_call, {"device": "cpu"}), c, jobs=2, work_dir=tmp_path)
        assert [d for _, d in SEEN] == ["cpu", "cpu"]


def test_the_guide_recipe_runs(tmp_path):
    """docs/cluster.md's LocalCluster recipe, as written (the SLURMCluster one runs in
    scripts/ci-slurm-dask.py)."""
    import re
    import subprocess
    import sys

    require("dask.distributed")
    doc = (pathlib.Path(__file__).resolve().parents[3] / "docs" / "cluster.md").read_text()
    section = doc.split("\n### Dask\n", 1)[1].split("\n## ", 1)[0]
    recipe = re.findall(r"```python\n(.*?)```", section, flags=re.S)[0]
    assert "LocalCluster" in recipe
    r = subprocess.run([sys.executable, "-c", recipe], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "warpdrive.sky.Autocorr(" in r.stdout and "200 trials" in r.stdout, r.stdout
    assert sorted(os.listdir(tmp_path / "autocorr-merged.jobs")) == ["job-0", "job-1", "job-2", "job-3"]
    single = sky.autocorr(synthetic_events=5000, trials=200, seed=7, device="cpu")
    single.to_parquet(tmp_path / "single")
    assert data_files(tmp_path / "autocorr-merged") == data_files(tmp_path / "single")
