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
    # The tallies of 1e12 events would take ~1 PB: refused before anything is allocated.
    with pytest.raises(ValueError, match="would not fit in the memory available"):
        em.testem3(events=10**12)
    with pytest.raises(ValueError, match="slabs"):
        cal = tmp_path / "huge.toml"
        cal.write_text('repeat = 10000000000\ntransverse = 10.0\n[[layers]]\nmaterial = "Lead"\nthickness = 0.5\n')
        em.calorimeter(str(cal), events=1)


def test_testem3_equals_cli(cli, tmp_path):
    out = tmp_path / "t3"
    r_cli = cli("em", "testem3", "--events", 20, "--seed", 5, "--energy", 300, "--device", "cpu", "-o", out)
    r = em.testem3(energy=300, events=20, seed=5, threads=1)
    for name, f in (("profile", "profile.parquet"), ("events", "events.parquet")):
        ref = pq.read_table(out / f)
        got = getattr(r, name)
        assert got.column_names == ref.column_names, name
        for c in ref.column_names:
            assert same_bits(got[c].to_numpy(), ref[c].to_numpy()), (name, c)
    import json
    s = json.loads((out / "summary.json").read_text())
    assert s["result_checksum"] == r.checksum
    assert set(r.materials) == {"Lead", "liquidArgon"}
    for n, v in r.materials.items():
        assert v["edep_mean_mev"] == s["materials"][n]["edep_mean_mev"]
    assert r.created == pytest.approx({k: s["created_per_event"][k] for k in ("gamma", "e-", "e+")}, rel=0, abs=0)
    assert r.worst_balance < 1e-9 and 0 < r.escaped < 300
    # Thread count changes nothing, nor does precise=True on the CPU (it selects the GPU's build).
    assert em.testem3(energy=300, events=20, seed=5, threads=2).checksum == r.checksum
    assert em.testem3(energy=300, events=20, seed=5, threads=1, precise=True).checksum == r.checksum


def test_calorimeter_file_and_bad_inputs(tmp_path):
    f = tmp_path / "cal.toml"
    f.write_text('name = "thin"\nrepeat = 2\ntransverse = 10.0\n[[layers]]\nmaterial = "Lead"\nthickness = 0.5\n')
    r = em.calorimeter(f, primary="gamma", energy=10, events=5, seed=1)
    assert r.calorimeter == "thin" and list(r.materials) == ["Lead"] and r.profile.num_rows == 2
    with pytest.raises(FileNotFoundError):
        em.calorimeter(tmp_path / "missing.toml", events=1)
    with pytest.raises(ValueError):
        em.testem3(primary="muon", events=1)
    with pytest.raises(ValueError):
        em.testem3(energy=-1, events=1)
    with pytest.raises(ValueError, match="expected auto, cpu, cuda"):
        em.testem3(events=1, device="npu")


def test_testem3_reference_holds_both_geant4_runs():
    ref = em.testem3_reference()
    a, b = ref["analogue"], ref["secondary_biased"]
    assert a["edep"]["Lead"] == {"mean_mev": 781.04, "rms_mev": 16.68}
    assert b["edep"]["liquidArgon"] == {"mean_mev": 211.94, "rms_mev": 15.39}
    assert a["created"] == {"gamma": 510.0, "e-": 873.0, "e+": 53.2}
    assert b["created"]["gamma"] == 291.0 and a["steps"]["charged"] == 3570.92
