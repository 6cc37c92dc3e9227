import json
import pathlib
import pickle
import re
import time

import pyarrow.parquet as pq
import pytest

from conftest import same_bits
from warpdrive import em


def same_parquet(a, b):
    """Two Parquet files are the same bytes (the data files hold only what the request
    determines; how it was asked for is in run.json); columns compared first for a readable
    failure."""
    ta, tb = pq.read_table(a), pq.read_table(b)
    assert ta.column_names == tb.column_names
    for c in tb.column_names:
        assert same_bits(ta[c].to_numpy(), tb[c].to_numpy()), (a.name, c)
    assert dict(ta.schema.metadata) == dict(tb.schema.metadata), a.name
    assert a.read_bytes() == b.read_bytes(), a.name


def same_directories(py_out, cli_out, parquet, identical):
    """The Python and CLI output directories hold the same files; `identical` ones byte for byte
    (run.json holds device, timings and the command, and differs)."""
    assert sorted(p.name for p in py_out.iterdir()) == sorted(p.name for p in cli_out.iterdir())
    for name in parquet:
        same_parquet(py_out / name, cli_out / name)
    for name in identical:
        assert (py_out / name).read_bytes() == (cli_out / name).read_bytes(), name


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
    # The same directory as the CLI's.
    mine = tmp_path / "py"
    r.to_parquet(mine, plot=True)
    same_directories(mine, out, ["edep.parquet"], ["summary.json", "edep.png"])
    with pytest.raises(FileExistsError, match="force=True"):
        r.to_parquet(mine)
    # Thread count changes nothing.
    assert em.run(energy=50, tracks=20000, seed=3, device="cpu", threads=2).checksum == r.checksum


def test_testem3_equals_cli(cli, tmp_path):
    out = tmp_path / "t3"
    cli("em", "testem3", "--events", 20, "--seed", 5, "--energy", 300, "--device", "cpu", "-o", out)
    r = em.testem3(energy=300, events=20, seed=5, device="cpu", threads=1)
    for name, f in (("profile", "profile.parquet"), ("events", "events.parquet")):
        ref = pq.read_table(out / f)
        got = getattr(r, name)
        assert got.column_names == ref.column_names, name
        for c in ref.column_names:
            assert same_bits(got[c].to_numpy(), ref[c].to_numpy()), (name, c)
    s = json.loads((out / "summary.json").read_text())
    assert s["result_checksum"] == r.checksum
    assert set(r.materials) == {"Lead", "liquidArgon"}
    for n, v in r.materials.items():
        assert v["edep_mean_mev"] == s["materials"][n]["edep_mean_mev"]
    assert r.created == pytest.approx({k: s["created_per_event"][k] for k in ("gamma", "e-", "e+")}, rel=0, abs=0)
    assert r.worst_balance < 1e-9 and 0 < r.escaped < 300
    mine = tmp_path / "py"
    r.to_parquet(mine, plot=True)
    same_directories(mine, out, ["profile.parquet", "events.parquet"], ["summary.json", "profile.png"])
    # Thread count changes nothing, nor does precise=True on the CPU (it selects the GPU's build).
    assert em.testem3(energy=300, events=20, seed=5, device="cpu", threads=2).checksum == r.checksum
    assert em.testem3(energy=300, events=20, seed=5, device="cpu", threads=1, precise=True).checksum == r.checksum


def test_calorimeter_with_nist_materials_equals_cli(cli, tmp_path):
    f = tmp_path / "cal.toml"
    f.write_text('name = "W-scint"\nrepeat = 4\ntransverse = 20.0\n[[layers]]\nmaterial = "G4_W"\nthickness = 0.35\n'
                 '[[layers]]\nmaterial = "G4_PLASTIC_SC_VINYLTOLUENE"\nthickness = 0.5\n')
    out = tmp_path / "cli"
    cli("em", "calorimeter", f, "--primary", "gamma", "--events", 6, "--seed", 2, "--energy", 200, "--cut-mm", 0.7,
        "--device", "cpu", "-o", out)
    r = em.calorimeter(f, primary="gamma", events=6, seed=2, energy=200, cut_mm=0.7, device="cpu")
    assert list(r.materials) == ["G4_W", "G4_PLASTIC_SC_VINYLTOLUENE"]
    mine = tmp_path / "py"
    r.to_parquet(mine, plot=True)
    same_directories(mine, out, ["profile.parquet", "events.parquet"], ["summary.json", "profile.png"])


def test_testem3_tables_are_built_once_per_process():
    # A cut no other test uses: the first call builds the tables, the second finds them.
    a = em.testem3(energy=100, events=2, cut_mm=0.93, device="cpu")
    t0 = time.monotonic()
    b = em.testem3(energy=100, events=2, seed=7, cut_mm=0.93, device="cpu")
    seconds = time.monotonic() - t0
    assert not a.tables_cached and b.tables_cached
    assert b.tables_seconds < 0.05 and seconds < 1.0, (b.tables_seconds, seconds)
    # Another cut is another set-up.
    assert not em.testem3(energy=100, events=1, cut_mm=0.94, device="cpu").tables_cached


def test_nist_materials():
    assert {"G4_Al", "G4_Pb", "G4_lAr", "G4_WATER", "G4_AIR", "G4_BGO"} <= set(em.MATERIALS)
    w = em.run(tracks=500, material="G4_WATER", device="cpu")
    pb = em.run(tracks=500, material="G4_Pb", device="cpu")
    assert w.material == "G4_WATER" and pb.material == "G4_Pb"
    assert pb.mean_depth < w.mean_depth / 5
    assert em.run(tracks=500, material="aluminium", device="cpu").checksum == em.run(tracks=500, device="cpu").checksum


def test_an_infinite_plot_axis_is_skipped_with_a_warning(tmp_path):
    r = em.run(tracks=300, tally_width=1e308, device="cpu")
    with pytest.warns(UserWarning, match="edep.png not drawn: the z axis would run from 0 to inf"):
        r.to_parquet(tmp_path / "out", plot=True)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["edep.parquet", "run.json", "summary.json"]


def test_bad_inputs(tmp_path):
    with pytest.raises(FileNotFoundError):
        em.run(tracks=10, material=str(tmp_path / "missing.toml"))
    with pytest.raises(ValueError, match="^material 'unobtainium': neither a built-in material"):
        em.run(tracks=10, material="unobtainium")
    with pytest.raises(ValueError, match="^energy -1 MeV: must be positive"):
        em.run(tracks=10, energy=-1)
    with pytest.raises(ValueError, match="^tally_bins must be at least 1"):
        em.run(tracks=10, tally_bins=0)
    with pytest.raises(ValueError, match="^tally_width 5e-324 cm: must be at least 1e-6 cm"):
        em.run(tracks=10, tally_width=5e-324)
    with pytest.raises(ValueError, match="^slots must be at least 1"):
        em.run(tracks=10, slots=0)
    with pytest.raises(ValueError, match="expected auto, cpu, cuda"):
        em.run(tracks=10, device="npu")
    # The tallies of 1e12 events would take ~1 PB: refused before anything is allocated.
    with pytest.raises(MemoryError, match="^events: 1000000000000 × 992 bytes = .* would not fit in the memory available"):
        em.testem3(events=10**12)
    with pytest.raises(ValueError, match="slabs"):
        cal = tmp_path / "huge.toml"
        cal.write_text('repeat = 10000000000\ntransverse = 10.0\n[[layers]]\nmaterial = "Lead"\nthickness = 0.5\n')
        em.calorimeter(str(cal), events=1)


def test_negative_ints_are_value_errors_naming_the_argument():
    for call, name in ((lambda: em.run(tracks=-1), "tracks"), (lambda: em.run(tracks=10, seed=-3), "seed"),
                       (lambda: em.run(tracks=10, tally_bins=-5), "tally_bins"),
                       (lambda: em.run(tracks=10, stack_capacity=-1), "stack_capacity"),
                       (lambda: em.testem3(events=-2), "events"), (lambda: em.testem3(events=1, seed=-1), "seed"),
                       (lambda: em.testem3(events=1, threads=-1), "threads")):
        with pytest.raises(ValueError, match=f"^{name} must be"):
            call()


def test_calorimeter_file_and_bad_inputs(tmp_path):
    f = tmp_path / "cal.toml"
    f.write_text('name = "thin"\nrepeat = 2\ntransverse = 10.0\n[[layers]]\nmaterial = "Lead"\nthickness = 0.5\n')
    r = em.calorimeter(f, primary="gamma", energy=10, events=5, seed=1, device="cpu")
    assert r.calorimeter == "thin" and list(r.materials) == ["Lead"] and r.profile.num_rows == 2
    with pytest.raises(FileNotFoundError):
        em.calorimeter(tmp_path / "missing.toml", events=1)
    with pytest.raises(ValueError, match="^primary 'muon': expected e-, e\\+ or gamma"):
        em.testem3(primary="muon", events=1)
    with pytest.raises(ValueError, match="^energy -1 MeV: must be in"):
        em.testem3(energy=-1, events=1)
    with pytest.raises(ValueError, match="^cut_mm 0 mm: must be in"):
        em.testem3(cut_mm=0, events=1)
    with pytest.raises(ValueError, match="expected auto, cpu, cuda"):
        em.testem3(events=1, device="npu")


def test_testem3_reference_holds_both_geant4_runs():
    ref = em.testem3_reference()
    a, b = ref["analogue"], ref["secondary_biased"]
    assert a["edep"]["Lead"] == {"mean_mev": 781.04, "rms_mev": 16.68}
    assert b["edep"]["liquidArgon"] == {"mean_mev": 211.94, "rms_mev": 15.39}
    assert a["created"] == {"gamma": 510.0, "e-": 873.0, "e+": 53.2}
    assert b["created"]["gamma"] == 291.0 and a["steps"]["charged"] == 3570.92


def test_shower_jobs_merge_into_the_unsplit_run_and_equal_the_cli_merge(cli, tmp_path):
    """Shower jobs (`jobs=`/`job_index=`) saved and merged give the unsplit run's data files byte
    for byte, in Python and with `warpdrive merge`; a missing job is named."""
    kw = dict(energy=50.0, events=5, seed=9, device="cpu")
    em.testem3(**kw).to_parquet(tmp_path / "whole")
    jobs = [tmp_path / f"job{i}" for i in range(2)]
    for i, d in enumerate(jobs):
        em.testem3(jobs=2, job_index=i, **kw).to_parquet(d)
    em.merge(jobs[::-1]).to_parquet(tmp_path / "py")
    cli("merge", "-o", tmp_path / "cli", *jobs)
    for f in ("profile.parquet", "events.parquet", "summary.json"):
        ref = (tmp_path / "whole" / f).read_bytes()
        assert (tmp_path / "py" / f).read_bytes() == ref, f
        assert (tmp_path / "cli" / f).read_bytes() == ref, f
    with pytest.raises(ValueError, match="lack job 1 of 2"):
        em.merge(jobs[:1])


TESTEM3_GDML = pathlib.Path(__file__).resolve().parents[3] / "crates" / "em" / "tests" / "data" / "testem3.gdml"


def test_detector_run_equals_cli(cli, tmp_path):
    """`em.run(gdml=…)` is `warpdrive em run`: the same files, a field and sensitive volumes included."""
    out = tmp_path / "cli"
    cli("em", "run", TESTEM3_GDML, "--events", 3, "--energy", 100, "--seed", 4, "--position", "0,0,-10",
        "--field", "0,4,0", "--sensitive", "ArgonV", "--device", "cpu", "-o", out)
    mine = tmp_path / "py"
    r = em.run(gdml=TESTEM3_GDML, energy_mev=100, events=3, seed=4, position=(0, 0, -10), field=(0, 4, 0),
               sensitive=["ArgonV"], out_dir=mine)
    same_directories(mine, out, ["volumes.parquet", "hits.parquet"], ["summary.json"])
    assert r.hits.column_names == ["event", "volume", "copy", "edep_mev", "time_ns", "x_mm", "y_mm", "z_mm"]
    assert r.summary["field"]["b_t"] == [0.0, 4.0, 0.0]
    assert r.hits_per_volume["ArgonV"]["hits"] == r.hits.num_rows == r.summary["hits"]["count"] > 0
    argon = r.materials["liquidArgon"]["edep_sum_mev"]
    assert sum(r.hits["edep_mev"].to_pylist()) == pytest.approx(argon, rel=1e-12)
    assert r.worst_balance < 1e-9 and r.n_events == 3
    # em.detector is the same call; B = 0 is no field (the same volumes as without).
    a = em.detector(TESTEM3_GDML, energy_mev=100, events=2, position=(0, 0, -10), field=(0, 0, 0))
    b = em.detector(TESTEM3_GDML, energy_mev=100, events=2, position=(0, 0, -10))
    assert a.volumes.equals(b.volumes) and a.hits.num_rows == 0 and "field" not in a.summary
    # Picklable: the unpickled result writes the same files.
    again = pickle.loads(pickle.dumps(r))
    again.to_parquet(tmp_path / "again")
    same_directories(tmp_path / "again", mine, ["volumes.parquet", "hits.parquet"], ["summary.json"])


def test_detector_summary_accuracy_and_plot(cli, tmp_path):
    """summary.json keyed by material and volume; the accuracy keywords reach the run (as the CLI's
    options, the same files); bad values raise ValueError naming the keyword; plot=True draws
    volumes.png, also from a pickled result."""
    out = tmp_path / "cli"
    cli("em", "run", TESTEM3_GDML, "--events", 2, "--energy", 100, "--position", "0,0,-10", "--field", "0,4,0",
        "--delta-chord", 0.5, "--delta-intersection", 0.001, "--device", "cpu", "--plot", "-o", out)
    r = em.run(gdml=TESTEM3_GDML, energy_mev=100, events=2, position=(0, 0, -10), field=(0, 4, 0),
               delta_chord=0.5, delta_intersection=0.001)
    r.to_parquet(tmp_path / "py", plot=True)
    same_directories(tmp_path / "py", out, ["volumes.parquet"], ["summary.json"])
    s = r.summary
    assert s["field"]["delta_chord_mm"] == 0.5 and s["field"]["delta_intersection_mm"] == 0.001
    assert s["materials"]["Lead"]["edep_rms_mev"] > 0 and s["materials"]["G4_Galactic"]["vacuum"]
    assert s["volume_count"] == len(s["volumes"]) == 152
    lead = sum(v["edep_mean_mev"] for v in s["volumes"].values() if v["material"] == "Lead")
    assert lead == pytest.approx(s["materials"]["Lead"]["edep_mean_mev"], rel=1e-12)
    assert s["volumes"]["Layer[4]/Lead[0]"]["path"] == "World/Calorimeter[0]/Layer[4]/Lead[0]"
    again = pickle.loads(pickle.dumps(r))
    again.to_parquet(tmp_path / "again", plot=True)
    assert (tmp_path / "again" / "volumes.png").stat().st_size > 1000
    with pytest.raises(ValueError, match="^delta_chord 0 mm: must be finite and positive"):
        em.run(gdml=TESTEM3_GDML, events=1, delta_chord=0)
    with pytest.raises(ValueError, match=r"^delta_intersection 1 mm: must be at least 1e-9 mm and at most delta_chord"):
        em.run(gdml=TESTEM3_GDML, events=1, delta_intersection=1)
    with pytest.raises(ValueError, match=r"^field_epsilon 1: must be in \[1e-12, 1e-2\]"):
        em.detector(TESTEM3_GDML, events=1, field_epsilon=1)
    with pytest.raises(TypeError, match="need gdml="):
        em.run(delta_chord=0.1)


def test_detector_bad_inputs(tmp_path):
    with pytest.raises(ValueError, match="^sensitive 'Nope' is not a logical volume of .*testem3.gdml"):
        em.run(gdml=TESTEM3_GDML, events=1, sensitive=["Nope"])
    with pytest.raises(ValueError, match="^position 0,0,-500 mm is outside the world volume 'World'"):
        em.run(gdml=TESTEM3_GDML, events=1, position=(0, 0, -500))
    with pytest.raises(ValueError, match="^position 1,2: expected three numbers x,y,z"):
        em.run(gdml=TESTEM3_GDML, events=1, position=(1, 2))
    with pytest.raises(TypeError, match="not those of the Klein–Nishina mini-app"):
        em.run(gdml=TESTEM3_GDML, energy=5.0)
    with pytest.raises(TypeError, match="need gdml="):
        em.run(events=3)
    # A GDML run goes to a GPU (hits in sensitive volumes too) unless it needs the CPU (a volume
    # tree deeper than the GPU navigator's 16 levels): then `cuda` is refused with the reason,
    # before any GPU is looked for.
    solids = '<box name="B17" x="1" y="1" z="1" lunit="mm"/>'
    volumes = '<volume name="V17"><materialref ref="G4_WATER"/><solidref ref="B17"/></volume>'
    for k in range(16, -1, -1):
        solids += f'<box name="B{k}" x="{2 * (18 - k)}" y="{2 * (18 - k)}" z="{2 * (18 - k)}" lunit="mm"/>'
        volumes += (
            f'<volume name="V{k}"><materialref ref="G4_WATER"/><solidref ref="B{k}"/>'
            f'<physvol name="P{k + 1}"><volumeref ref="V{k + 1}"/></physvol></volume>'
        )
    deep = tmp_path / "deep.gdml"
    deep.write_text(
        f'<gdml><solids>{solids}</solids><structure>{volumes}</structure>'
        '<setup name="Default" version="1.0"><world ref="V0"/></setup></gdml>'
    )
    with pytest.raises(
        ValueError,
        match=r"^device cuda:0: this detector run needs the CPU \(the volume tree is 17 levels deep; the GPU navigator holds at most 16 \(run on the CPU\)\); use cpu or auto",
    ):
        em.run(gdml=deep, events=1, position=(0, 0, 0), device="cuda", sensitive=["V3"])
    m = tmp_path / "m.csv"
    m.write_text("r_mm,z_mm,br_T,bz_T\n0,-10,0,1\n0,10,0,1\n5,-10,0,1\n5,10,0,1\n")
    with pytest.raises(ValueError, match="m.csv: the field map covers r ≤ 5 mm"):
        em.run(gdml=TESTEM3_GDML, events=1, field_map=m)
