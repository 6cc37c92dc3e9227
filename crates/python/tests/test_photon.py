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
    with pytest.raises(ValueError, match=r"position must be \(N, 3\)"):
        det.propagate(dict(type="e", position=[[0, 0]], direction=[[0, 0]], energy=1))
    with pytest.raises(TypeError):
        det.propagate(42)


def test_version():
    assert warpdrive.__version__
