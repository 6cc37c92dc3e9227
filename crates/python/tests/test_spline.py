import json

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


CASCADE = (10.0, 20.0, -300.0, 60.0, 30.0, 0.0)
TRACK = (-100.0, 0.0, -250.0, 80.0, 10.0, 0.0, 400.0)


@pytest.mark.parametrize(
    "hyp, extra",
    [({"cascade": CASCADE}, {}), ({"track": TRACK, "spacing": 40.0}, {"solver": "pcg", "regularization": 1e-9})],
)
def test_unfold_equals_cli(cli, data, tmp_path, hyp, extra):
    flag, nums = next((k, v) for k, v in hyp.items() if k in ("cascade", "track"))
    csv = ",".join(repr(x) for x in nums)
    ev = tmp_path / "event.parquet"
    cli("spline", "simulate", f"--{flag}", csv, "--energy", "5000", "--seed", "3", "-o", ev)
    args = ["spline", "unfold", "--event", ev, f"--{flag}", csv, "-o", tmp_path / "u"]
    if "spacing" in hyp:
        args += ["--spacing", repr(hyp["spacing"])]
    for k, v in extra.items():
        args += [f"--{k}", str(v)]
    cli(*args)
    ref = pq.read_table(tmp_path / "u" / "energies.parquet")
    summary = json.loads((tmp_path / "u" / "summary.json").read_text())
    # From the Parquet path and from the columns (a pyarrow table with the window metadata).
    for event in (ev, pq.read_table(ev)):
        u = spline.unfold(event, **hyp, **extra)
        t = u.table()
        assert t.column_names == ref.column_names
        for name in ref.column_names:
            assert same_bits(t[name].to_numpy(), ref[name].to_numpy()), name
        for k in ("iterations", "log_likelihood", "chi2", "rows", "total_energy_gev", "total_energy_sigma_gev", "converged"):
            assert u.summary[k] == summary[k], k
        assert u.covariance.shape == (len(u.energy), len(u.energy))
    if flag == "cascade":
        # The simulated 5 TeV cascade is found again within its uncertainty (5σ).
        assert abs(u.total_energy - 5000.0) < 5 * u.total_energy_sigma


def test_unfold_dict_and_bad_inputs(data, tmp_path):
    pulses = {"string": [36, 36], "om": [30, 31], "time": [100.0, 150.0], "charge": [1.0, 2.0], "window": (-1000.0, 9000.0)}
    u = spline.unfold(pulses, cascade=(0, 0, -300, 0, 0, 0))
    assert len(u.energy) == 1 and u.energy[0] >= 0 and u.rows > 2
    with pytest.raises(ValueError, match="give the hypothesis"):
        spline.unfold(pulses)
    with pytest.raises(ValueError, match="--cascade takes 6 finite numbers"):
        spline.unfold(pulses, cascade=(0, 0, float("nan"), 0, 0, 0))
    with pytest.raises(ValueError, match="segments, more than the limit"):
        spline.unfold(pulses, track=(0, 0, 0, 0, 0, 0, 1e9), spacing=1.0)
    with pytest.raises(ValueError, match="regularization"):
        spline.unfold(pulses, cascade=(0, 0, -300, 0, 0, 0), regularization=-1)
    with pytest.raises(ValueError, match="outside the readout window"):
        spline.unfold(dict(pulses, window=(0.0, 120.0)), cascade=(0, 0, -300, 0, 0, 0))
    with pytest.raises(ValueError, match="charge"):
        spline.unfold(dict(pulses, charge=[1.0, -1.0]), cascade=(0, 0, -300, 0, 0, 0))
    with pytest.raises(ValueError, match="solver"):
        spline.unfold(pulses, cascade=(0, 0, -300, 0, 0, 0), solver="magic")
    with pytest.raises(FileNotFoundError):
        spline.unfold(tmp_path / "missing.parquet", cascade=(0, 0, -300, 0, 0, 0))
    with pytest.raises(FileNotFoundError):
        spline.unfold(pulses, cascade=(0, 0, -300, 0, 0, 0), amplitude=tmp_path / "missing.fits")
    with pytest.raises(ValueError, match="not in the geometry|geometry"):
        spline.unfold(dict(pulses, string=[99, 99]), cascade=(0, 0, -300, 0, 0, 0))
