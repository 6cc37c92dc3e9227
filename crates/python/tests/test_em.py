import re

import pyarrow.parquet as pq
import pytest

from conftest import same_bits
from warpdrive import em


def test_run_equals_cli(cli, tmp_path):
    out = tmp_path / "em"
    r_cli = cli("em", "--tracks", 20000, "--seed", 3, "--energy", 50, "--device", "cpu", "-o", out)
    r = em.run(energy=50, tracks=20000, seed=3, device="cpu", threads=1)
    ref = pq.read_table(out / "edep.parquet")
    assert r.profile.column_names == ref.column_names
    for c in ref.column_names:
        assert same_bits(r.profile[c].to_numpy(), ref[c].to_numpy()), c
    assert re.search(r"checksum (\S+)", r_cli.stdout).group(1) == r.checksum
    assert f"{r.mean_depth:.2f} cm" in r_cli.stdout
    assert r.tracks == 20000 and r.steps > r.tracks
    # Thread count changes nothing.
    assert em.run(energy=50, tracks=20000, seed=3, device="cpu", threads=2).checksum == r.checksum


def test_bad_inputs(tmp_path):
    with pytest.raises(FileNotFoundError):
        em.run(tracks=10, material=str(tmp_path / "missing.toml"))
    with pytest.raises(ValueError):
        em.run(tracks=10, material="unobtainium")
    with pytest.raises(ValueError):
        em.run(tracks=10, energy=-1)
    with pytest.raises(ValueError):
        em.run(tracks=10, tally_bins=0)
    with pytest.raises(ValueError, match="expected auto, cpu, cuda"):
        em.run(tracks=10, device="npu")
