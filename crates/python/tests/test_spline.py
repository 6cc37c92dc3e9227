import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import same_bits
from warpdrive import spline

TABLES = ["splines/nuflux/H3a_SIBYLL23C_conv_numu.fits", "splines/ngc1068_kde/bg_2d_photospline.fits"]


def points(t, n, seed=7):
    lo = np.array([e[0] for e in t.extents])
    hi = np.array([e[1] for e in t.extents])
    # A margin outside the extents too: the CLI and Python must agree there as well.
    return lo - 0.05 * (hi - lo) + 1.1 * (hi - lo) * np.random.default_rng(seed).random((n, t.ndim))


@pytest.mark.parametrize("rel", TABLES)
def test_eval_equals_cli(cli, data, tmp_path, rel):
    path = data / rel
    t = spline.Table(path)
    assert t.ndim == len(t.extents) == len(t.order)
    p = points(t, 2000)
    src = tmp_path / "points.parquet"
    pq.write_table(pa.table({f"x{d}": p[:, d] for d in range(t.ndim)}), src)
    out = tmp_path / "eval.parquet"
    cli("spline", "eval", path, "--points", src, "--gradient", "--device", "cpu", "-o", out)
    ref = pq.read_table(out)
    v = t.eval(p, device="cpu")
    assert same_bits(v, ref["value"].to_numpy())
    v2, g = t.eval(p, gradient=True, device="cpu", threads=1)
    assert same_bits(np.ascontiguousarray(v2), ref["value"].to_numpy())
    for d in range(t.ndim):
        assert same_bits(np.ascontiguousarray(g[:, d]), ref[f"grad{d}"].to_numpy())


def test_eval_layouts_and_threads(data):
    t = spline.Table(data / TABLES[0])
    p = points(t, 5000)
    ref = t.eval(p, device="cpu", threads=1)
    assert same_bits(t.eval(p, device="cpu", threads=2), ref)
    # A Fortran-order array is copied in row order, never misread.
    assert same_bits(t.eval(np.asfortranarray(p), device="cpu"), ref)
    assert t.eval(np.zeros((0, t.ndim))).shape == (0,)


def test_bad_inputs(data, tmp_path):
    with pytest.raises(FileNotFoundError, match="cannot read"):
        spline.Table(tmp_path / "missing.fits")
    bad = tmp_path / "bad.fits"
    bad.write_bytes(b"SIMPLE  = nonsense" + b" " * 3000)
    with pytest.raises(ValueError):
        spline.Table(bad)
    t = spline.Table(data / TABLES[0])
    with pytest.raises(ValueError, match="columns"):
        t.eval(np.zeros((3, t.ndim + 1)))
    with pytest.raises(ValueError):
        t.eval(np.zeros(3))
    with pytest.raises(ValueError, match="expected auto, cpu, cuda"):
        t.eval(np.zeros((3, t.ndim)), device="gpu")
    with pytest.raises(ValueError, match="threads must be at least 1"):
        t.eval(np.zeros((3, t.ndim)), threads=0)
