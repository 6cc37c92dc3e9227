import json
import os
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import warpdrive
from conftest import _cli, same_bits
from warpdrive import beam

# The CLI test's FODO line: quads, drifts, a watch point, a CHARGE element and space charge.
LATTICE = """! FODO with a watch point and space charge
Q1: QUAD, L=0.2, K1=1.5
Q2: Q1, K1=-1.5
D: DRIF, L=0.8
W1: WATCH, FILENAME="%s-w1.sdds"
C: CHARGE, TOTAL=2e-10
L1: LSCDRIFT, L=0.5, BINS=128
CELL: LINE=(Q1, D, Q2, D)
ALL: LINE=(C, 2*CELL, W1, L1, CELL)
"""


@pytest.fixture
def setup(tmp_path):
    lte = tmp_path / "fodo.lte"
    lte.write_text(LATTICE)
    rng = np.random.default_rng(4)
    n = 2000
    z = np.column_stack([
        rng.normal(0, 1e-4, n), rng.normal(0, 1e-5, n), rng.normal(0, 1e-4, n), rng.normal(0, 1e-5, n),
        rng.normal(0, 1e-12, n), 1956.951 * (1 + rng.normal(0, 1e-3, n)),
    ])
    z[7, 0] = 0.02  # lost at the 1 cm aperture
    src = tmp_path / "beam.parquet"
    pq.write_table(pa.table({c: z[:, k] for k, c in enumerate(beam.COLUMNS)}), src)
    return lte, z, src


def same_files(a, b, skip=("run.json",)):
    """Every file of directory ``a`` equals ``b``'s byte for byte (both have the same names)."""
    na = sorted(p.name for p in a.iterdir() if p.name not in skip)
    nb = sorted(p.name for p in b.iterdir() if p.name not in skip)
    assert na == nb
    for name in na:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    return na


def test_track_equals_cli(cli, setup, tmp_path):
    lte, z, src = setup
    out = tmp_path / "cli"
    cli("beam", "track", lte, "--beam", src, "--passes", 3, "--aperture", 0.01, "--device", "cpu", "--no-plot",
        "-o", out)
    lat = beam.Lattice(lte)
    assert lat.line == "ALL" and lat.length > 0
    r = lat.track(z, passes=3, aperture=0.01, device="cpu", threads=1)
    ref = pq.read_table(out / "final.parquet")
    for c in ref.column_names:
        assert same_bits(r.table[c].to_numpy(), ref[c].to_numpy()), c
    assert r.particles.shape == z.shape
    assert same_bits(np.ascontiguousarray(r.particles[:, 0]), ref["x"].to_numpy())
    assert r.lost_at[7] > 0 and r.alive.sum() == len(z) - (r.lost_at > 0).sum()
    # One watch record per pass, equal to the CLI's watch files.
    assert [w["pass_"] for w in r.watch] == [0, 1, 2]
    files = sorted(out.glob("fodo-w1-pass*.parquet"))
    assert len(files) == 3
    for w, f in zip(r.watch, files):
        t = pq.read_table(f)
        for c in t.column_names:
            assert same_bits(w["table"][c].to_numpy(), t[c].to_numpy()), (f.name, c)
    moments = pq.read_table(out / "moments.parquet")
    for c in moments.column_names:
        assert same_bits(r.moments[c].to_numpy(), moments[c].to_numpy()), c
    # Two threads, the same numbers.
    r2 = lat.track(z, passes=3, aperture=0.01, device="cpu", threads=2)
    assert same_bits(r2.particles, r.particles)
    # The same request writing the output directory: the CLI's files byte for byte.
    mine = tmp_path / "py"
    lat.track(z, passes=3, aperture=0.01, device="cpu", threads=2, output=mine)
    names = same_files(out, mine)
    # final, lost (issue #30: every run writes its lost-particle table), moments, three watch files.
    assert "final.parquet" in names and "lost.parquet" in names and "moments.parquet" in names and len(names) == 6
    run = json.loads((mine / "run.json").read_text())
    assert run["device"].startswith("cpu") and run["command"].startswith("python")
    with pytest.raises(FileExistsError, match="force=True"):
        lat.track(z, passes=3, device="cpu", output=mine)


def test_gaussian_beam_and_streamed_watch_equal_cli(cli, setup, tmp_path):
    """Issue #28: Particles.gaussian draws the CLI's --particles beam for the same seed; the
    whole output directory (streamed watch files included) is the CLI's byte for byte."""
    lte, _, _ = setup
    twiss = dict(beta_x=4.0, alpha_x=-0.5, emit_x=2e-8, beta_y=2.0, alpha_y=0.3, nemit_y=5e-7, sigma_s=2e-3,
                 sigma_delta=5e-4, seed=7)
    out = tmp_path / "cli"
    args = ["--particles", 1500, "--particle", "positron", "--momentum", 25.0, "--passes", 2, "--watch", "stream",
            "--watch-particles", "3,1400,9"]
    for k, v in twiss.items():
        args += [f"--{k.replace('_', '-')}", v]
    cli("beam", "track", lte, *args, "--device", "cpu", "--no-plot", "-o", out)
    p = beam.Particles.gaussian(1500, particle="positron", momentum=25.0, **twiss)
    assert len(p) == 1500 and p.particle == "positron" and p.particle_charge == 1.0
    assert abs(p.p_central - 25.0 / 0.51099895) < 1e-9
    mine = tmp_path / "py"
    r = beam.Lattice(lte).track(p, passes=2, watch="stream", watch_particles=[3, 1400, 9], output=mine,
                                device="cpu", threads=2)
    names = same_files(out, mine)
    assert names == ["final.parquet", "fodo-w1.parquet", "lost.parquet", "moments.parquet"]
    w = pq.read_table(mine / "fodo-w1.parquet")
    assert w["pass"].to_pylist() == [0, 0, 0, 1, 1, 1] and w["particle"].to_pylist() == [3, 9, 1400] * 2
    assert r.watch == [] and r.moments.num_rows == 2
    # The particles as the generator drew them, in both conventions.
    z = p.coords("warpdrive")
    assert z.shape == (1500, 6) and np.all(z[:, 5] > -1)
    assert same_bits(p.coords("elegant")[:, 0], z[:, 0])
    # A Particles carries its species: giving another one too is an error naming it.
    with pytest.raises(ValueError, match="^particle and the reference momentum are those of the Particles"):
        beam.Lattice(lte).track(p, p_central=100.0)


def test_lattice_fails_at_construction(tmp_path):
    """Issue #28: beam.Lattice("x.lte") fails when constructed, not later with AttributeError."""
    with pytest.raises(FileNotFoundError, match="missing.lte: cannot read"):
        beam.Lattice(tmp_path / "missing.lte")
    bad = tmp_path / "bad.lte"
    bad.write_text("L1: LSCDRIFT, L=0.5, BINS=1\nA: LINE=(L1)\n")
    with pytest.raises(ValueError, match="bad.lte:1: element L1 .*BINS = 1"):
        beam.Lattice(bad)
    with pytest.raises(ValueError, match="binary data, not text"):
        beam.Lattice("/dev/zero")
    with pytest.raises(TypeError):
        beam.Lattice()
    lat = beam.Lattice(text=LATTICE, name="inline")
    assert lat.n_elements == 15 and "ALL" in repr(lat)
    assert beam.Lattice(text=LATTICE, line="cell").n_elements == 4


def test_bad_particles_name_the_row(setup):
    """Issue #28: p <= 0 (an unfilled column) or non-finite coordinates are refused with the row."""
    lte, z, _ = setup
    lat = beam.Lattice(lte)
    with pytest.raises(ValueError, match=r"\(N, 6\)"):
        lat.track(z[:, :5])
    with pytest.raises(ValueError, match=r"^particles: field 'p': row 0: 0: the momentum must be positive"):
        lat.track(np.zeros((100, 6)))
    nan = z.copy()
    nan[3, 2] = np.nan
    with pytest.raises(ValueError, match=r"^particles: field 'y': row 3: NaN is not a finite coordinate"):
        lat.track(nan)
    neg = z.copy()
    neg[5, 5] = -1.0
    with pytest.raises(ValueError, match=r"field 'p': row 5: -1: the momentum must be positive"):
        beam.Particles(neg)
    d = np.zeros((4, 6))
    d[2, 5] = -1.0
    with pytest.raises(ValueError, match=r"field 'delta': row 2: -1: the momentum must be positive"):
        lat.track(d, coords="warpdrive")


def test_bad_beam_files_name_file_column_and_row(cli, setup, tmp_path):  # cli: skips without a binary
    """Issue #36 items 13, 15: text columns, zero rows and nulls are errors naming the file, the
    column and the row, the same through the CLI's --beam and Python."""
    lte, z, _ = setup
    cols = {c: z[:4, k] for k, c in enumerate(beam.COLUMNS)}
    text = dict(cols, xp=pa.array(["a", "b", "c", "d"]))
    empty = {c: pa.array([], pa.float64()) for c in beam.COLUMNS}
    null = dict(cols, y=pa.array([0.0, None, 0.0, 0.0]))
    cases = [
        ("text.parquet", text, "field 'xp': holds text, not numbers"),
        ("empty.parquet", empty, "no particles (zero rows): a beam needs at least one"),
        ("null.parquet", null, "field 'y': row 1: null (a missing value)"),
    ]
    for name, table, message in cases:
        path = tmp_path / name
        pq.write_table(pa.table(table), path)
        with pytest.raises(ValueError) as e:
            beam.Particles.from_file(path)
        assert str(e.value) == f"{path}: {message}" or str(e.value).startswith(f"{path}: {message}"), str(e.value)
        r = subprocess.run([_cli(), "beam", "track", str(lte), "--beam",
                            str(path), "--device", "cpu", "-o", str(tmp_path / "never")], capture_output=True,
                           text=True)
        assert r.returncode == 1 and f"error: {e.value}" in r.stderr, r.stderr
        assert not (tmp_path / "never").exists()
    with pytest.raises(FileNotFoundError):
        beam.Particles.from_file(tmp_path / "none.parquet")
    csv = tmp_path / "bom.csv"
    csv.write_bytes(b"\xef\xbb\xbfx,xp,y,yp,s,delta\n1e-3,0,0,0,0,0\n")
    p = beam.Particles.from_file(csv, particle="proton", p_central=2.0)
    assert p.coords("warpdrive")[0, 0] == 1e-3 and p.particle == "proton"


def test_options_name_python_arguments(setup):
    """Issue #28: errors name Python keywords; negative integers are ValueError."""
    lte, z, _ = setup
    lat = beam.Lattice(lte)
    cases = [
        (dict(passes=0), "^passes must be at least 1"),
        (dict(passes=-1), "^passes must be a non-negative integer, got -1"),
        (dict(watch_every=-2), "^watch_every must be a non-negative integer"),
        (dict(watch_passes=[0, -1]), "^watch_passes must be a non-negative integer"),
        (dict(watch_particles=[5000]), r"^watch_particles: particle 5000 is not in the beam \(rows 0 to 1999\)"),
        (dict(min_blocks=-1), "^min_blocks must be a non-negative integer"),
        (dict(p_central=1e200), r"^p_central 1e200: must be between 1e-6 and 1e12"),
        (dict(momentum=-3.0), "^momentum -3 MeV/c: must be between"),
        (dict(p_central=100.0, momentum=50.0), "^p_central cannot be given together with momentum"),
        (dict(particle="kaon"), "^particle kaon: expected electron, positron, proton"),
        (dict(mass=0.0), "^mass 0 MeV: must be between"),
        (dict(aperture=-1.0), "^aperture -1: must be a positive half-width"),
        (dict(charge=float("inf")), "^charge inf C: must be finite"),
        (dict(watch="stream"), "^watch stream: writes watch files into the output directory; give output"),
        (dict(watch="sometimes"), "^watch 'sometimes': expected files, stream, memory or off"),
        (dict(histogram="fancy"), "^histogram fancy: expected sort"),
        (dict(device="gpu0"), "expected auto, cpu, cuda"),
        (dict(threads=0), "^threads must be at least 1"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            lat.track(z, **kwargs)
    for kwargs, message in [(dict(particles=-5), "^particles must be a non-negative integer"),
                            (dict(seed=-1), "^seed must be a non-negative integer"),
                            (dict(beta_x=0.0), "^beta_x 0: must be positive"),
                            (dict(sigma_delta=0.5), "^sigma_delta 0.5: must be between 0 and 0.1"),
                            (dict(emit_x=1e-9, nemit_x=1e-6), "^nemit_x cannot be given together with emit_x"),
                            (dict(particle_charge=2.0), "^particle_charge needs mass")]:
        with pytest.raises(ValueError, match=message):
            beam.Particles.gaussian(**kwargs)


def test_species_and_watch_selection(setup):
    lte, _, _ = setup
    lat = beam.Lattice(lte)
    p = beam.Particles.gaussian(400, particle="proton", momentum=938.27208816, seed=3)
    assert abs(p.p_central - 1.0) < 1e-12 and p.mass == 938.27208816
    alpha = beam.Particles.gaussian(400, mass=3727.3794, particle_charge=2, p_central=0.5, seed=3)
    assert alpha.particle == "custom" and alpha.particle_charge == 2.0 and "custom" in repr(alpha)
    r = lat.track(p, passes=6, watch_every=2, watch_particles=[5, 1, 5], device="cpu")
    assert [w["pass_"] for w in r.watch] == [0, 2, 4]
    assert all(list(w["ids"]) == [1, 5] and w["particles"].shape == (2, 6) for w in r.watch)
    assert r.moments["pass"].to_pylist() == [0, 2, 4]
    r = lat.track(p, passes=6, watch_passes=[5, 0], device="cpu")
    assert [w["pass_"] for w in r.watch] == [0, 5]
    r = lat.track(p, passes=6, watch="off", device="cpu")
    assert r.watch == [] and r.moments.num_rows == 0 and len(r.particles) == 400


# The memory check: 2·10⁵ particles × 2000 passes with a watch point, in a process whose
# memory budget is 400 MB (WARPDRIVE_MAX_MEMORY): kept in memory (35 GB) it is refused at once,
# before anything is allocated; streamed to Parquet it runs within the budget (stopped by the
# progress callback after ten passes, so the test is quick; nothing is left behind).
MEMORY_CHECK = """
import resource, sys, time, warpdrive
from warpdrive import beam
lat = beam.Lattice(text=sys.argv[1], name="fodo")
p = beam.Particles.gaussian(200_000, p_central=50.0)
t0 = time.monotonic()
try:
    lat.track(p, passes=2000, device="cpu")
except MemoryError as e:
    print("refused", time.monotonic() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, e)
rss = []
def stop(done, total):
    rss.append((done, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024))
    return done < 10
try:
    lat.track(p, passes=2000, watch="stream", output="out", device="cpu", threads=2, progress=stop)
except warpdrive.Cancelled:
    print("streamed", rss)
"""


def test_watch_records_stream_within_the_memory_budget_or_are_refused(tmp_path):
    budget = 400 << 20
    r = subprocess.run([sys.executable, "-c", MEMORY_CHECK, LATTICE], cwd=tmp_path, capture_output=True, text=True,
                       env=dict(os.environ, WARPDRIVE_MAX_MEMORY=str(budget), WARPDRIVE_PROGRESS="0"), timeout=300)
    assert r.returncode == 0, r.stderr
    refused = next(l for l in r.stdout.splitlines() if l.startswith("refused"))
    _, secs, rss, message = refused.split(" ", 3)
    assert float(secs) < 1.0 and int(rss) < budget, refused
    assert message.startswith("watch: 400000000 × 88 bytes = 32.783 GiB would not fit in the memory available"), message
    for advice in ("watch_particles", "watch_every", "watch_passes", "watch=off", "watch=stream with output"):
        assert advice in message, (advice, message)
    streamed = eval(next(l for l in r.stdout.splitlines() if l.startswith("streamed")).split(" ", 1)[1])
    passes = [d for d, _ in streamed]
    assert max(passes) >= 10, streamed
    peak = max(m for _, m in streamed)
    assert peak < budget, f"peak RSS {peak / 2**20:.0f} MiB over the {budget >> 20} MiB budget"
    # The memory does not grow with the records written: pass 2 to the last differ little.
    early = next(m for d, m in streamed if d >= 2)
    assert peak - early < 40 << 20, streamed
    assert list(tmp_path.iterdir()) == [], "the stopped run left files"


def test_track_jobs_merge_into_the_unsplit_run(cli, tmp_path):
    """Tracking jobs (`jobs=`/`job_index=`) merge, in Python and with `warpdrive merge`, into the
    unsplit run's files byte for byte; space charge cannot be split; a missing job is named."""
    lte = tmp_path / "ring.lte"
    lte.write_text("Q1: QUAD, L=0.2, K1=1.5\nQ2: Q1, K1=-1.5\nD: DRIF, L=0.8\n"
                   'W1: WATCH, FILENAME="%s-w.sdds"\nRING: LINE=(Q1, D, Q2, D, W1)\n')
    lat = beam.Lattice(lte)
    p = beam.Particles.gaussian(700, p_central=50, seed=3)
    kw = dict(passes=2, device="cpu", aperture=3e-4)
    lat.track(p, output=tmp_path / "whole", **kw)
    dirs = [tmp_path / f"job{i}" for i in range(3)]
    for i, d in enumerate(dirs):
        lat.track(p, output=d, jobs=3, job_index=i, **kw)
    m = beam.merge(dirs[::-1], tmp_path / "py")
    assert m["particles"] == 700 and m["watch_events"] == 2
    cli("merge", "-o", tmp_path / "cli", *dirs)
    whole = sorted(f.name for f in (tmp_path / "whole").glob("*.parquet"))
    for out in ("py", "cli"):
        assert sorted(f.name for f in (tmp_path / out).glob("*.parquet")) == whole
        for f in whole:
            assert (tmp_path / out / f).read_bytes() == (tmp_path / "whole" / f).read_bytes(), f"{out}: {f}"
    with pytest.raises(ValueError, match=r"lack job 1 of 3"):
        beam.merge([dirs[0], dirs[2]], tmp_path / "partial")
    sc = beam.Lattice(text=LATTICE, name="sc")
    with pytest.raises(ValueError, match=r"space charge \(LSCDRIFT\) couples the particles"):
        sc.track(p, output=tmp_path / "sc", jobs=2, job_index=0, device="cpu")

RING = os.path.join(os.path.dirname(__file__), "..", "..", "beam", "tests", "lattices", "dba_ring.lte")


def test_twiss_is_the_cli_s(tmp_path):
    """Lattice.twiss() and `warpdrive beam twiss` are one engine call: same table and summary."""
    lat = beam.Lattice(RING)
    r = lat.twiss(momentum=3000.0)
    t = r["table"]
    assert t.column_names == ["s", "name", "type", "betx", "bety", "alfx", "alfy", "dx", "dpx", "mux", "muy"]
    assert t.num_rows == lat.n_elements + 1 and t["name"][0].as_py() == "_BEGIN_"
    out = tmp_path / "tw"
    cli_bin = _cli()
    if cli_bin is None:
        pytest.skip("no warpdrive binary")
    subprocess.run([cli_bin, "beam", "twiss", RING, "--momentum", "3000", "--no-plot", "-o", str(out)], check=True,
                   capture_output=True)
    cli = pq.read_table(out / "twiss.parquet")
    for c in t.column_names:
        assert cli[c].to_pylist() == t[c].to_pylist(), c
    summary = json.loads((out / "summary.json").read_text())
    for k in ("tunes", "chromaticity", "momentum_compaction", "circumference", "synchrotron_tune", "periodic"):
        assert summary[k] == r[k], k
    # A line started from the ring's periodic functions; an unstable ring names its plane.
    line = lat.twiss(betx=t["betx"][0].as_py(), bety=t["bety"][0].as_py(), alfx=t["alfx"][0].as_py(),
                     alfy=t["alfy"][0].as_py())
    assert not line["periodic"] and abs(line["table"]["betx"][-1].as_py() / t["betx"][-1].as_py() - 1) < 1e-9
    bad = beam.Lattice(text="QF: QUAD, L=0.4, K1=1.6\nQD: QUAD, L=0.4, K1=-0.6\nD: DRIF, L=2\nR: LINE=(QF, D, QD, D)\n")
    with pytest.raises(ValueError, match="unstable in the vertical"):
        bad.twiss()
    with pytest.raises(ValueError, match="betx and bety"):
        lat.twiss(betx=1.0)


RING_ELE = """&run_setup lattice="ring.lte", use_beamline="RING", p_central_mev=3000, output="%s.out",
    losses="%s.lost", random_number_seed=11 &end
&run_control n_steps=2, n_passes=20 &end
&twiss_output filename="%s.twi" &end
&matrix_output printout="%s.mat", printout_order=2, SDDS_output="%s.msdds", SDDS_output_order=2 &end
&bunched_beam n_particles_per_bunch=400, emit_x=2e-8, emit_y=1e-8, beta_x=11.678, alpha_x=-1.4907,
    beta_y=5.1114, alpha_y=0.66847, sigma_dp=3e-4 &end
&track &end
"""


def test_run_ele_is_the_cli_s(cli, tmp_path):
    """``beam.run`` is ``warpdrive beam run``: the same files byte for byte (SDDS and the
    Parquet of each step), matrices, Twiss and per-step results; errors name file and line."""
    src = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "beam", "ring.lte")
    (tmp_path / "ring.lte").write_text(open(src).read())
    ele = tmp_path / "r.ele"
    ele.write_text(RING_ELE)
    cli("beam", "run", ele, "--device", "cpu", "--sdds", "-o", tmp_path / "cli")
    r = beam.run(ele, output=tmp_path / "py", sdds=True, device="cpu", progress=False)
    assert r["output"] == str(tmp_path / "py")
    assert r["written"] == ["r.twi", "r.mat", "r.msdds", "r.out", "r.lost"]
    for f in r["written"] + ["step1/final.parquet", "step2/lost.parquet", "step2/final.sdds", "step1/lost.sdds"]:
        assert (tmp_path / "py" / f).read_bytes() == (tmp_path / "cli" / f).read_bytes(), f
    assert [(s["track"], s["step"], s["dir"]) for s in r["steps"]] == [(1, 1, "step1"), (1, 2, "step2")]
    assert all(s["particles"] == 400 and 0 <= s["lost"] < 400 for s in r["steps"])
    lost = pq.read_table(tmp_path / "py" / "step1" / "lost.parquet")
    assert lost.num_rows == r["steps"][0]["lost"]
    names = set(lost["element_name"].to_pylist())
    assert "COL" in names and names <= {"CH", "W", "QF", "QD", "SF", "SD", "B", "D1", "D2", "D3", "COL", "DC"}, names
    assert abs(r["twiss"]["tunes"][0] - 2.257715) < 1e-6
    m = r["matrix"]
    assert len(m["C"]) == 6 and len(m["R"]) == 6 and all(len(row) == 21 for row in m["T"])
    # The one-turn R of a ring: the trace of its x block is 2 cos(2π Qx).
    assert abs(m["R"][0][0] + m["R"][1][1] - 2 * np.cos(2 * np.pi * r["twiss"]["tunes"][0])) < 1e-9
    with pytest.raises(FileExistsError):
        beam.run(ele, output=tmp_path / "py", device="cpu", progress=False)
    bad = tmp_path / "bad.ele"
    bad.write_text('&run_setup lattice="ring.lte", p_central_mev=3000 &end\n&matrix_output printout="x", start_from="Q" &end\n')
    with pytest.raises(ValueError, match="bad.ele:2: .*parameter start_from is not supported"):
        beam.run(bad, output=tmp_path / "never", device="cpu", progress=False)
    assert not (tmp_path / "never").exists()
