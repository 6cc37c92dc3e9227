import inspect
import json
import pickle
from concurrent.futures import ProcessPoolExecutor
import multiprocessing

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import same_bits
import warpdrive
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
    with pytest.raises(ValueError, match="points have 3 columns for a 2-D table"):
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
def test_simulate_and_unfold_equal_cli_byte_for_byte(cli, data, tmp_path, hyp, extra):
    flag, nums = next((k, v) for k, v in hyp.items() if k in ("cascade", "track"))
    csv = ",".join(repr(x) for x in nums)
    spacing = ["--spacing", repr(hyp["spacing"])] if "spacing" in hyp else []
    # simulate: the CLI's event file and Python's are the same bytes (the request is recorded as
    # its equivalent command line, the same from both front ends).
    ev = tmp_path / "event.parquet"
    cli("spline", "simulate", f"--{flag}", csv, *spacing, "--energy", "5000", "--seed", "3", "-o", ev)
    sim = spline.simulate(5000, **hyp, seed=3)
    mine = tmp_path / "event-py.parquet"
    sim.to_parquet(mine)
    assert mine.read_bytes() == ev.read_bytes()
    assert sim.table().equals(pq.read_table(ev))
    with pytest.raises(FileExistsError, match="force=True"):
        sim.to_parquet(mine)
    # unfold: the output directory's data files are the same bytes; run.json holds the machine.
    args = ["spline", "unfold", "--event", ev, f"--{flag}", csv, *spacing, "-o", tmp_path / "u"]
    for k, v in extra.items():
        args += [f"--{k}", str(v)]
    cli(*args)
    u = spline.unfold(str(ev), **hyp, **extra)
    u.to_dir(tmp_path / "u-py")
    for f in ("energies.parquet", "summary.json", "energies.png"):
        assert (tmp_path / "u-py" / f).read_bytes() == (tmp_path / "u" / f).read_bytes(), f
    summary = json.loads((tmp_path / "u" / "summary.json").read_text())
    assert u.summary == summary
    assert set(u.run) == set(json.loads((tmp_path / "u" / "run.json").read_text()))
    # The same event as a table (from the file, or the simulate() result): the same energies.
    ref = pq.read_table(tmp_path / "u" / "energies.parquet")
    for event in (pq.read_table(ev), sim):
        t = spline.unfold(event, **hyp, **extra).table()
        assert t.column_names == ref.column_names
        for name in ref.column_names:
            assert same_bits(t[name].to_numpy(), ref[name].to_numpy()), name
    assert u.covariance.shape == (len(u.energy), len(u.energy))
    if flag == "cascade":
        # The simulated 5 TeV cascade is found again within its uncertainty (5σ).
        assert abs(u.total_energy - 5000.0) < 5 * u.total_energy_sigma


def test_unfold_dict_and_bad_inputs(data, tmp_path):
    pulses = {"string": [36, 36], "om": [30, 31], "time": [100.0, 150.0], "charge": [1.0, 2.0], "window": (-1000.0, 9000.0)}
    u = spline.unfold(pulses, cascade=(0, 0, -300, 0, 0, 0))
    assert len(u.energy) == 1 and u.energy[0] >= 0 and u.rows > 2
    with pytest.raises(ValueError, match=r"^cascade \(x,y,z,zenith,azimuth,t\) or track .* is needed"):
        spline.unfold(pulses)
    with pytest.raises(ValueError, match="^cascade takes 6 finite numbers"):
        spline.unfold(pulses, cascade=(0, 0, float("nan"), 0, 0, 0))
    with pytest.raises(ValueError, match="^track length 1000000000 m / spacing 1 m = 1e9 segments, more than the limit"):
        spline.unfold(pulses, track=(0, 0, 0, 0, 0, 0, 1e9), spacing=1.0)
    with pytest.raises(ValueError, match="^regularization -1: must be finite"):
        spline.unfold(pulses, cascade=(0, 0, -300, 0, 0, 0), regularization=-1)
    with pytest.raises(ValueError, match="outside the readout window"):
        spline.unfold(dict(pulses, window=(0.0, 120.0)), cascade=(0, 0, -300, 0, 0, 0))
    with pytest.raises(ValueError, match="charge"):
        spline.unfold(dict(pulses, charge=[1.0, -1.0]), cascade=(0, 0, -300, 0, 0, 0))
    with pytest.raises(ValueError, match="^solver: unknown solver 'magic'"):
        spline.unfold(pulses, cascade=(0, 0, -300, 0, 0, 0), solver="magic")
    with pytest.raises(FileNotFoundError):
        spline.unfold(tmp_path / "missing.parquet", cascade=(0, 0, -300, 0, 0, 0))
    with pytest.raises(FileNotFoundError):
        spline.unfold(pulses, cascade=(0, 0, -300, 0, 0, 0), amplitude=tmp_path / "missing.fits")
    with pytest.raises(ValueError, match="not in the geometry|geometry"):
        spline.unfold(dict(pulses, string=[99, 99]), cascade=(0, 0, -300, 0, 0, 0))

    with pytest.raises(ValueError, match="^cascade cannot be given together with track"):
        spline.unfold(pulses, cascade=(0, 0, -300, 0, 0, 0), track=(0, 0, 0, 0, 0, 0, 100))
    with pytest.raises(ValueError, match="^max_iterations must be a non-negative integer, got -1"):
        spline.unfold(pulses, cascade=(0, 0, -300, 0, 0, 0), max_iterations=-1)
    with pytest.raises(ValueError, match="^seed must be a non-negative integer"):
        spline.simulate(100, cascade=(0, 0, -300, 0, 0, 0), seed=-1)
    with pytest.raises(ValueError, match="^energy has 2 values for 1 sources"):
        spline.simulate([1, 2], cascade=(0, 0, -300, 0, 0, 0))


def test_unfold_that_no_dom_sees_raises(data):
    # Issue #28: this used to report "total 0.0 ± 0.0 GeV, converged".
    pulses = {"string": [36], "om": [30], "time": [100.0], "charge": [1.0], "window": (-1000.0, 9000.0)}
    with pytest.raises(ValueError, match="^cascade is seen by no DOM"):
        spline.unfold(pulses, cascade=(1e5, 0, 0, 0, 0, 0), device="cpu")
    with pytest.raises(ValueError, match="^track is seen by no DOM: each of its 10 segments"):
        spline.unfold(pulses, track=(1e5, 0, 0, 0, 0, 0, 100), spacing=10, device="cpu")
    # Seen, but no light: every energy at the bound, and no fake "± 0" for the total.
    empty = {"string": [], "om": [], "time": [], "charge": [], "window": (-1000.0, 9000.0)}
    u = spline.unfold(empty, cascade=(10, 20, -300, 60, 30, 0), device="cpu")
    assert list(u.energy) == [0.0] and u.total_energy_sigma is None
    assert "every source at E = 0" in repr(u)


def test_unfold_of_a_fine_track_is_refused_before_allocating(data, monkeypatch):
    # Issue #28: spacing=0.01 on a 400 m track was killed by the kernel (OOM).
    monkeypatch.setenv("WARPDRIVE_MAX_MEMORY", "4G")
    pulses = {"string": [36], "om": [30], "time": [100.0], "charge": [1.0], "window": (-1000.0, 9000.0)}
    with pytest.raises(MemoryError, match=r"^spacing: 40000 × \d+ bytes = .* would not fit .*use a larger spacing"):
        spline.unfold(pulses, track=TRACK, spacing=0.01, device="cpu")


def test_progress_callback_stops_an_unfolding(data):
    pulses = {"string": [36], "om": [30], "time": [100.0], "charge": [1.0], "window": (-1000.0, 9000.0)}
    calls = []

    def stop(done, total):
        calls.append((done, total))
        return False

    with pytest.raises(warpdrive.Cancelled):
        spline.unfold(pulses, track=(-500, 0, -250, 90, 180, 0, 1000), spacing=1.0, device="cpu", threads=1, progress=stop)
    assert len(calls) == 1


def test_eval_refuses_ambiguous_shapes(data):
    # Issue #28: Table.eval([xs, ys]) — photospline's one array per coordinate — was read as
    # two points when N equals ndim.
    t = spline.Table(data / TABLES[1])
    assert t.ndim == 2
    xs, ys = np.array([1.0, 1.5]), np.array([-0.5, 0.2])
    with pytest.raises(ValueError, match=r"^points of shape \(2, 2\) for a 2-D table are ambiguous"):
        t.eval([xs, ys])
    with pytest.raises(ValueError, match="looks like one array per coordinate"):
        t.eval([np.r_[xs, 2.0], np.r_[ys, 0.0]])
    rows = np.column_stack([np.r_[xs, 2.0], np.r_[ys, 0.0]])
    ref = t.eval(rows, device="cpu")
    assert same_bits(t(rows[:, 0], rows[:, 1], device="cpu"), ref)
    assert same_bits(t([rows[:, 0], rows[:, 1]], device="cpu"), ref)
    assert same_bits(t(*rows[:2].T, device="cpu"), ref[:2])


def test_photospline_surface(data):
    t = spline.Table(data / TABLES[0])
    nd = t.ndim
    assert t.order == [len(k) - n - 1 for k, n in zip(t.knots, t.coefficients.shape)]
    assert t.coefficients.dtype == np.float32 and t.coefficients.ndim == nd
    assert all(isinstance(k, np.ndarray) for k in t.knots) and len(t.extents) == nd
    p = points(t, 300)
    ref_v, ref_g = t.eval(p, gradient=True, device="cpu")
    # evaluate_simple / __call__: one array per coordinate, broadcast, derivative bitmask.
    assert same_bits(t.evaluate_simple([p[:, 0], p[:, 1]], device="cpu"), np.ascontiguousarray(ref_v))
    for d in range(nd):
        assert same_bits(t.evaluate_simple([p[:, 0], p[:, 1]], 1 << d, device="cpu"), np.ascontiguousarray(ref_g[:, d]))
    with pytest.raises(ValueError, match="^derivatives 3 asks for a mixed derivative"):
        t.evaluate_simple([p[:, 0], p[:, 1]], 3)
    with pytest.raises(ValueError, match="^derivatives 4: a bitmask of the table's 2 dimensions"):
        t(p[:, 0], p[:, 1], derivatives=4)
    with pytest.raises(ValueError, match="^coords has 3 coordinate arrays for a 2-D table"):
        t(p[:, 0], p[:, 1], p[:, 1])
    x, y = p[:4, 0], p[:3, 1]
    grid = t(x[:, None], y[None, :], device="cpu")
    assert grid.shape == (4, 3)
    assert isinstance(t(float(x[0]), float(y[0]), device="cpu"), float)
    # grideval: the outer-product grid, the same numbers as point by point.
    g = t.grideval([x, y])
    assert g.shape == (4, 3) and same_bits(g, grid)
    with pytest.raises(ValueError, match=r"coords\[1\] must be a one-dimensional array"):
        t.grideval([x, np.zeros((2, 2))])


def _eval_in_child(table, pts):
    return table.eval(pts, device="cpu")


def test_tables_pickle_through_their_fits_bytes(data, tmp_path):
    t = spline.Table(data / TABLES[0])
    p = points(t, 500)
    u = pickle.loads(pickle.dumps(t))
    assert u.path == t.path and u.order == t.order and u.extents == t.extents
    assert all(np.array_equal(a, b) for a, b in zip(u.knots, t.knots))
    assert same_bits(u.coefficients, t.coefficients)
    assert same_bits(u.eval(p, device="cpu"), t.eval(p, device="cpu"))
    # Across processes (multiprocessing, dask and joblib pickle their arguments).
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as ex:
        assert same_bits(ex.submit(_eval_in_child, t, p).result(), t.eval(p, device="cpu"))


def test_one_default_device_and_documented_precision():
    for f in (spline.Table.eval, spline.Table.evaluate_simple, spline.simulate, spline.unfold):
        assert inspect.signature(f).parameters["device"].default == "auto", f
    doc = spline.Table.eval.__doc__
    assert 'device="auto"' in doc and "float32" in doc and "float64" in doc


def _fit_case():
    """A 2-D histogram of a smooth function with noise, knots padded as photospline's."""
    rng = np.random.default_rng(5)
    knots = [np.linspace(-1.0, 3.0, 9), np.linspace(0.0, 5.0, 12)]  # 6 × 8 coefficients for orders 2, 3
    centers = [np.linspace(-0.4, 2.4, 25), np.linspace(0.6, 4.4, 31)]
    x, y = np.meshgrid(*centers, indexing="ij")
    z = np.sin(x) * np.cos(0.7 * y) + 0.01 * rng.normal(size=x.shape)
    w = np.full(x.shape, 1e4)
    w[3, 4] = 0.0  # an empty bin
    return z, w, centers, knots


def test_fit_refits_its_own_table_and_equals_cli(cli, tmp_path):
    z, w, centers, knots = _fit_case()
    t = spline.fit(z, w, centers, knots, order=[2, 3], smooth=1e-3, penalty_order=2)
    assert isinstance(t, spline.Table)
    assert t.order == [2, 3] and t.coefficients.shape == (6, 8)
    assert float(t.aux["SMOOTH0"]) == 1e-3 and int(t.aux["PENORD1"]) == 2
    # The fitted table sampled on the grid and refitted without smoothing returns its own
    # coefficients (float32 storage: 1e-6 of the largest).
    v = t.grideval(centers)
    t2 = spline.fit(v, np.ones_like(v), centers, knots, order=[2, 3], smooth=0.0)
    c1, c2 = t.coefficients.astype(np.float64), t2.coefficients.astype(np.float64)
    assert np.max(np.abs(c1 - c2)) <= 1e-6 * np.max(np.abs(c1))
    # The CLI on the same histogram (one row per bin) gives the same coefficients.
    src = tmp_path / "h.csv"
    x, y = np.meshgrid(*centers, indexing="ij")
    cols = (x.ravel().tolist(), y.ravel().tolist(), z.ravel().tolist(), w.ravel().tolist())
    rows = ["x,y,value,weight"] + [f"{a!r},{b!r},{c!r},{d!r}" for a, b, c, d in zip(*cols)]
    src.write_text("\n".join(rows) + "\n")
    out = tmp_path / "t.fits"
    knot_args = [a for k in knots for a in ("--knots", ",".join(repr(float(v)) for v in k))]
    cli("spline", "fit", src, *knot_args, "--order", "2,3", "--smooth", "0.001", "-o", out)
    assert np.array_equal(spline.Table(out).coefficients, t.coefficients)


def test_fit_monodim_does_not_decrease():
    z, w, centers, knots = _fit_case()
    t = spline.fit(z, w, centers, knots, order=2, smooth=1e-3, monodim=1, device="cpu")
    c = np.asarray(t.coefficients)
    assert np.all(np.diff(c, axis=1) >= -1e-12 * np.abs(c).max())
    assert np.all(c >= -1e-12 * np.abs(c).max())


def test_fit_bad_inputs():
    z, w, centers, knots = _fit_case()
    with pytest.raises(ValueError, match=r"monodim = 2, but the histogram has 2 axes \(0 to 1\)"):
        spline.fit(z, w, centers, knots, order=2, smooth=1.0, monodim=2)
    bad = w.copy()
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match=r"w at bin \[1, 2\] is NaN"):
        spline.fit(z, bad, centers, knots, order=2, smooth=1.0)
    with pytest.raises(ValueError, match="z has shape"):
        spline.fit(z.T, w, centers, knots, order=2, smooth=1.0)
    with pytest.raises(ValueError, match="order 6 of axis 0 is above 5"):
        spline.fit(z, w, centers, knots, order=6, smooth=1.0)


def test_unfold_events_jobs_merge_into_the_cli_run(cli, data, tmp_path):
    """A list of events (each its own hypothesis): Python's run equals the CLI's, and two batch
    jobs merged in Python equal the unsplit run (issue #33)."""
    rows = []
    for k, (cascade, energy) in enumerate([((30, -20, -100, 0.8, 1.5, 0), 3000), ((-60, 40, -250, 70, 20, 0), 900)]):
        spline.simulate(energy, cascade=cascade, seed=k + 5).to_parquet(tmp_path / f"e{k}.parquet")
        rows.append(f"e{k}.parquet,cascade," + ",".join(str(x) for x in cascade) + ",")
    lst = tmp_path / "events.csv"
    lst.write_text("event,kind,x,y,z,zenith,azimuth,t,length\n" + "\n".join(rows) + "\n")
    assert spline.unfold_events(lst, tmp_path / "py", device="cpu") == 2
    cli("spline", "unfold", "--device", "cpu", "--events", lst, "-o", tmp_path / "cli")
    for f in ("energies.parquet", "events.parquet", "summary.json"):
        assert (tmp_path / "py" / f).read_bytes() == (tmp_path / "cli" / f).read_bytes(), f
    jobs = [tmp_path / f"job{i}" for i in range(2)]
    for i, j in enumerate(jobs):
        assert spline.unfold_events(lst, j, device="cpu", jobs=2, job_index=i) == 1
    assert spline.merge_events(jobs[::-1], tmp_path / "merged") == 2
    for f in ("energies.parquet", "events.parquet", "summary.json"):
        assert (tmp_path / "merged" / f).read_bytes() == (tmp_path / "py" / f).read_bytes(), f
    with pytest.raises(ValueError, match="lack job 1 of 2"):
        spline.merge_events(jobs[:1], tmp_path / "partial")


def test_unfold_evaluates_a_depth_indexed_table_at_the_source_depth(data, tmp_path):
    """photon.tabulate at two depths → spline.fit of the arrays (no axis names in the header, so
    source_axes names the depth axis) → simulate and unfold at each depth: the energy comes back,
    and the two depths' tables differ (the dust layer at 2050 m)."""
    from warpdrive import photon
    ice = data / "ice" / "spice_3.2.1"
    depths = [2050.0, 2300.0]
    photon.tabulate(tmp_path / "t", ice, depth=depths, photons=20_000, radial_bins="0:150:15",
                    azimuth_bins="0:180:2", polar_bins="-1:1:6", delay_bins=None, margin=50, seed=3)
    amp = pq.read_table(tmp_path / "t" / "amplitude.parquet")
    axes = ["r", "azimuth", "cos_theta", "depth"]
    centers = [np.unique(amp.column(a).to_numpy()) for a in axes]
    index = tuple(np.searchsorted(c, amp.column(a).to_numpy()) for a, c in zip(axes, centers))
    z = np.zeros([len(c) for c in centers])
    w = np.zeros_like(z)
    z[index] = amp.column("value").to_numpy()
    w[index] = amp.column("weight").to_numpy()

    def pad(lo, hi, n, k):
        return np.linspace(lo, hi, n)[0] + (hi - lo) / (n - 1) * np.arange(-k, n + k)

    knots = [pad(0, 150, 8, 2), pad(0, 180, 3, 2), pad(-1, 1, 5, 2), np.array([2050.0, 2050, 2300, 2300])]
    table = spline.fit(z, w, centers, knots, order=[2, 2, 2, 1], smooth=[1e3, 1e3, 1e-2, 0],
                       penalty_order=[2, 2, 2, 1])
    path = tmp_path / "amp.fits"
    path.write_bytes(table.to_fits())
    with pytest.raises(ValueError, match="no AXISd keys name the extra axes"):
        spline.unfold({"string": [1], "om": [1], "time": [0.0], "charge": [1.0]}, cascade=(0, 0, 0, 0, 0, 0),
                      amplitude=path, amplitude_only=True)
    with pytest.raises(ValueError, match="^source_axes 'height': a source axis is zenith or depth"):
        spline.unfold({"string": [1], "om": [1], "time": [0.0], "charge": [1.0]}, cascade=(0, 0, 0, 0, 0, 0),
                      amplitude=path, amplitude_only=True, source_axes=["height"])
    light = []
    for depth in depths:
        cascade = (20.0, -30.0, 1948.07 - depth, 0.0, 0.0, 0.0)
        model = dict(cascade=cascade, amplitude=path, amplitude_only=True, source_axes=["depth"], device="cpu")
        ev = spline.simulate(1e4, seed=5, **model)
        u = spline.unfold(ev, **model)
        light.append(ev.total_charge)
        assert abs(u.total_energy - 1e4) < 5 * u.total_energy_sigma, (depth, u.total_energy, u.total_energy_sigma)
    assert light[1] > 3 * light[0], light
