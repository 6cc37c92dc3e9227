"""Results, tables and models pickle (issue #28), so they work with multiprocessing, dask and
joblib: every public class goes to a fresh interpreter (multiprocessing's "spawn" start
method) and back, and is the same there — repr, attributes, what its methods return and the
bytes of the files it writes."""

import multiprocessing
import os
import pickle

import pytest

from public_objects import probe, probe_in_worker

NAMES = ["sky.Autocorr", "sky.Injection", "spline.Table", "spline.Event", "spline.Unfolding", "em.EmResult", "em.ShowerResult",
         "em.DetectorResult", "beam.Lattice", "beam.Particles", "beam.Tracked", "photon.Detector", "photon.PpcRun",
         "distributed.Request"]


@pytest.fixture(scope="module")
def spawned():
    """One worker in a fresh interpreter (nothing inherited from this process)."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        yield pool


def test_every_public_class_is_covered(public_objects):
    assert sorted(public_objects) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_round_trip_through_a_spawned_interpreter(name, public_objects, spawned, tmp_path):
    obj = public_objects[name]
    here = probe(obj, tmp_path / "here")
    pid, there, back = spawned.apply(probe_in_worker, (obj, str(tmp_path / "there")))
    assert pid != os.getpid()
    assert there["files"].keys() == here["files"].keys()
    for f in here["files"]:
        assert there["files"][f] == here["files"][f], f"{name}: {f} differs when written by the worker"
    assert there == here
    # Sent back (results pickled a second time, now from what the first pickle held): the same.
    assert type(back) is type(obj)
    assert probe(back, tmp_path / "back") == here


@pytest.mark.parametrize("name", ["em.EmResult", "spline.Unfolding", "spline.Event", "sky.Autocorr", "sky.Injection"])
def test_an_unpickled_result_keeps_the_output_rules(name, public_objects, tmp_path):
    r = pickle.loads(pickle.dumps(public_objects[name]))
    write = r.to_dir if name == "spline.Unfolding" else r.to_parquet
    out = tmp_path / ("event.parquet" if name == "spline.Event" else "out")
    write(out)
    with pytest.raises(FileExistsError, match="force=True"):
        write(out)
    write(out, force=True)
    assert out.exists()


def test_unpickled_outputs_leave_no_scratch_behind(public_objects, tmp_path):
    import tempfile

    before = {p for p in os.listdir(tempfile.gettempdir()) if p.startswith("warpdrive-pickle-")}
    for name in ("em.ShowerResult", "spline.Unfolding", "spline.Event"):
        pickle.dumps(public_objects[name])
    after = {p for p in os.listdir(tempfile.gettempdir()) if p.startswith("warpdrive-pickle-")}
    assert after == before


def test_plot_only_when_asked_after_unpickling(public_objects, tmp_path):
    r = pickle.loads(pickle.dumps(public_objects["em.EmResult"]))
    r.to_parquet(tmp_path / "a")
    r.to_parquet(tmp_path / "b", plot=True)
    assert sorted(os.listdir(tmp_path / "a")) == ["edep.parquet", "run.json", "summary.json"]
    assert sorted(os.listdir(tmp_path / "b")) == ["edep.parquet", "edep.png", "run.json", "summary.json"]
