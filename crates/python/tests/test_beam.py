import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import same_bits
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


def test_track_equals_cli(cli, setup, tmp_path):
    lte, z, src = setup
    out = tmp_path / "cli"
    cli("beam", "track", lte, "--beam", src, "--passes", 3, "--aperture", 0.01, "--device", "cpu", "--no-plot",
        "-o", out)
    lat = beam.Lattice.from_lte(lte)
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
    files = sorted(p for p in out.glob("*.parquet") if p.name not in ("final.parquet", "moments.parquet"))
    assert len(files) == 3
    for w, f in zip(r.watch, files):
        t = pq.read_table(f)
        for c in t.column_names:
            assert same_bits(w["table"][c].to_numpy(), t[c].to_numpy()), (f.name, c)
    # Two threads, the same numbers.
    r2 = lat.track(z, passes=3, aperture=0.01, device="cpu", threads=2)
    assert same_bits(r2.particles, r.particles)


def test_bad_inputs(setup, tmp_path):
    lte, z, _ = setup
    with pytest.raises(FileNotFoundError):
        beam.Lattice.from_lte(tmp_path / "missing.lte")
    bad = tmp_path / "bad.lte"
    bad.write_text("L1: LSCDRIFT, L=0.5, BINS=1\nA: LINE=(L1)\n")
    with pytest.raises(ValueError, match="bad.lte.*BINS = 1"):
        beam.Lattice.from_lte(bad)
    lat = beam.Lattice.from_lte(lte)
    with pytest.raises(ValueError, match=r"\(N, 6\)"):
        lat.track(z[:, :5])
    nan = z.copy()
    nan[3, 2] = np.nan
    with pytest.raises(ValueError, match="row 3: particle has a NaN"):
        lat.track(nan)
    with pytest.raises(ValueError, match="--passes must be at least 1"):
        lat.track(z, passes=0)
    with pytest.raises(ValueError, match="expected electron or proton"):
        lat.track(z, particle="muon")
    with pytest.raises(ValueError, match="expected auto, cpu, cuda"):
        lat.track(z, device="gpu0")
