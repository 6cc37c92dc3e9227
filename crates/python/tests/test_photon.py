from pathlib import Path
import pyarrow.parquet as pq
import pytest

from conftest import same_bits
import warpdrive
from warpdrive import photon

F2K = "TR 1 0 e 0 0 0 180 0 0 1000 0\nTR 1 0 hadr 20 -30 50 90 45 0 500 10\n"


def assert_same_table(got, ref):
    assert got.column_names == ref.column_names
    assert got.schema.types == ref.schema.types
    for name in ref.column_names:
        assert same_bits(got[name].to_numpy(), ref[name].to_numpy()), name


def test_propagate_equals_cli(cli, tmp_path):
    src = tmp_path / "in.f2k"
    src.write_text(F2K)
    out = tmp_path / "hits.parquet"
    cli("photon", "--input", src, "--seed", 11, "--device", "cpu", "-o", out)
    ref = pq.read_table(out)
    got = photon.Detector().propagate(src, seed=11, device="cpu")
    assert got.num_rows == ref.num_rows > 0
    assert_same_table(got, ref)
    meta = {k.decode(): v.decode() for k, v in got.schema.metadata.items()}
    refmeta = {k.decode(): v.decode() for k, v in ref.schema.metadata.items()}
    for k in ["warpdrive.seed", "warpdrive.device", "warpdrive.ice", "warpdrive.geometry", "warpdrive.photons"]:
        assert meta[k] == refmeta[k], k
    # The same sources as text and as arrays: the same hits; a thread count changes nothing.
    assert_same_table(photon.propagate(F2K, seed=11, device="cpu", threads=1), ref)
    arrays = dict(
        type=["e", "hadr"],
        position=[[0, 0, 0], [20, -30, 50]],
        direction=[[180, 0], [90, 45]],
        time=[0, 10],
        energy=[1000, 500],
    )
    assert_same_table(photon.propagate(arrays, seed=11, device="cpu", threads=2), ref)


def test_propagate_real_ice_equals_cli(cli, data, tmp_path):
    ice = data / "ice" / "spice_3.2.1"
    src = tmp_path / "in.f2k"
    src.write_text("TR 1 0 e 0 0 -400 180 0 0 300 0\n")
    out = tmp_path / "hits.parquet"
    cli("photon", "--ice", ice, "--input", src, "--seed", 2, "--device", "cpu", "-o", out)
    got = photon.Detector(ice=ice).propagate(str(src), seed=2, device="cpu")
    assert_same_table(got, pq.read_table(out))


def test_multi_pmt_modules_equal_cli(cli, data, tmp_path):
    """Multi-PMT modules (--sensors) with their own shapes: the same hits, PMT indices included."""
    sensors = Path(__file__).resolve().parents[3] / "examples" / "photon" / "upgrade-sensors"
    ice, geo = data / "ice" / "spice_3.2.1", data / "geometry" / "prometheus_upgrade.geo"
    src = tmp_path / "in.f2k"
    src.write_text("TR 1 0 e 25 -35 -356 90 0 0 100 0\n")
    out = tmp_path / "hits.parquet"
    cli("photon", "--ice", ice, "--geometry", geo, "--sensors", sensors, "--input", src, "--seed", 5, "--device", "cpu", "-o", out)
    got = photon.Detector(ice=ice, geometry=geo, sensors=sensors).propagate(str(src), seed=5, device="cpu")
    assert_same_table(got, pq.read_table(out))
    assert got.num_rows > 0 and max(got.column("pmt").to_pylist()) > 1


def test_progress_callback():
    calls = []
    photon.propagate(F2K, seed=1, device="cpu", progress=lambda d, t: calls.append((d, t)))
    assert calls and calls[-1][0] == calls[-1][1] > 0
    assert all(a[0] <= b[0] for a, b in zip(calls, calls[1:]))


def test_bad_inputs(tmp_path):
    det = photon.Detector()
    with pytest.raises(FileNotFoundError, match="missing.f2k"):
        det.propagate(tmp_path / "missing.f2k")
    with pytest.raises(ValueError, match="unknown particle 'x'"):
        det.propagate("TR 1 0 x 0 0 0 180 0 0 1000 0\n")
    with pytest.raises(ValueError, match="expected 12"):
        det.propagate("TR 1 0 e 0 0 0 180 0 0\n")
    with pytest.raises(ValueError, match="energy"):
        det.propagate("TR 1 0 e 0 0 0 180 0 0 -5 0\n")
    with pytest.raises(ValueError, match="max_photons"):
        det.propagate(F2K, max_photons=10)
    with pytest.raises(ValueError, match="expected auto, cpu, cuda"):
        det.propagate(F2K, device="tpu")
    with pytest.raises(FileNotFoundError, match="ice directory not found"):
        photon.Detector(ice=tmp_path / "no-ice")
    with pytest.raises(FileNotFoundError, match="om.conf: the multi-PMT module file"):
        photon.Detector(sensors=tmp_path / "no-sensors")
    with pytest.raises(ValueError, match=r"position must be \(N, 3\)"):
        det.propagate(dict(type="e", position=[[0, 0]], direction=[[0, 0]], energy=1))
    with pytest.raises(TypeError):
        det.propagate(42)


def test_version():
    assert warpdrive.__version__


PPC_F2K = "EM 1 1 1970 0 0 0\nTR 1 0 e 0 0 -300 180 0 0 300 0\nEE\nEM 1 1 1970 0 0 0\nTR 1 0 hadr -10 5 -320 90 45 0 200 0\nEE\n"


def run_ppc_cli(cli, args, env, stdin):
    import os
    import subprocess

    exe = os.environ.get("WARPDRIVE_BIN")
    if exe is None:
        cli("--version")  # skips the test the way the fixture does when there is no binary
        exe = str(__import__("conftest").ROOT / "target" / "release" / "warpdrive")
    r = subprocess.run([exe, "ppc", *map(str, args)], input=stdin, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("mode", ["f2k", "flasher"])
def test_ppc_equals_cli(cli, data, mode):
    import os

    env = {"PATH": os.environ.get("PATH", ""), "PPCTABLESDIR": str(data / "ice" / "spice_3.2.1"),
           "WARPDRIVE_SEED": "5", "WARPDRIVE_DEVICE": "cpu", "WARPDRIVE_PROGRESS": "0"}
    args, stdin = ((0,), PPC_F2K) if mode == "f2k" else ((63, 20, 20000000, 0), "")
    ref = run_ppc_cli(cli, args, env, stdin)
    r = photon.ppc(*args, stdin=stdin, env=env)
    assert r.stdout == ref
    hits = r.hits()
    assert hits.num_rows == ref.count("\nHIT ") + ref.startswith("HIT ") > 0
    blocks = set(hits["block"].to_pylist())
    # Every EM … EE block of the (repeated-number) file gets its own hits; flasher hits are in none.
    assert blocks == ({0, 1} if mode == "f2k" else {-1})
    assert "photons:" in r.log


def test_ppc_bad_inputs(data, tmp_path):
    ice = str(data / "ice" / "spice_3.2.1")
    with pytest.raises(ValueError, match="PPCTABLESDIR is not set"):
        photon.ppc(0, stdin=PPC_F2K, env={})
    with pytest.raises(ValueError, match="WFLA"):
        photon.ppc(0, stdin=PPC_F2K, env={"PPCTABLESDIR": ice, "WFLA": "9000"})
    with pytest.raises(ValueError, match="usage"):
        photon.ppc(1, 2, env={"PPCTABLESDIR": ice})
    with pytest.raises(ValueError, match="stdin"):
        photon.ppc(0, stdin="TR 1 0 e nonsense\n", env={"PPCTABLESDIR": ice, "WARPDRIVE_DEVICE": "cpu"})
    with pytest.raises(FileNotFoundError):
        photon.ppc(0, stdin=PPC_F2K, env={"PPCTABLESDIR": str(tmp_path / "none"), "WARPDRIVE_DEVICE": "cpu"})
    with pytest.raises(ValueError, match="not a HIT line"):
        photon.PpcRun("HIT 1 2 x\n", "").hits()
