from pathlib import Path

import numpy as np
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
    assert meta == refmeta
    # Only what the inputs and the seed determine: no device, no command line.
    assert "warpdrive.device" not in meta and "warpdrive.command" not in meta
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


def run_both(cli, tmp_path, name, cli_args, **py):
    """The same request through the CLI and Python (outputs written by the library): the
    Parquet files and the HIT lines, as bytes."""
    out, lines = tmp_path / f"{name}-cli.parquet", tmp_path / f"{name}-cli.hits"
    cli("photon", *cli_args, "--device", "cpu", "-o", out, "--hit-lines", lines)
    pout, plines = tmp_path / f"{name}-py.parquet", tmp_path / f"{name}-py.hits"
    table = photon.Detector(oversize=py.pop("oversize", None)).propagate(
        **py, device="cpu", output=pout, hit_lines=plines)
    assert table.num_rows > 0
    return (out.read_bytes(), lines.read_bytes()), (pout.read_bytes(), plines.read_bytes()), table


def test_default_cascade_gives_the_cli_file_byte_for_byte(cli, tmp_path):
    """No sources at all: the default 100 TeV cascade (oversize 50 keeps it to 5e5 photons)."""
    ref, got, table = run_both(cli, tmp_path, "default", ["--oversize", 50, "--seed", 4], oversize=50, seed=4)
    assert got == ref
    meta = table.schema.metadata
    assert meta[b"warpdrive.input"] == b"e 100000 GeV at (0, 0, 0) m, zenith 180\xc2\xb0, azimuth 0\xc2\xb0, t 0 ns"
    assert pq.read_table(tmp_path / "default-py.parquet").equals(table)


def test_f2k_input_gives_the_cli_file_byte_for_byte(cli, tmp_path):
    src = tmp_path / "in.f2k"
    src.write_text("EM 7 1 1970 0 0 0\n" + F2K + "EE\n")
    ref, got, _ = run_both(cli, tmp_path, "f2k", ["--input", src, "--seed", 3], input=src, seed=3)
    assert got == ref
    # The positional shorthand is the same request.
    again = tmp_path / "again.parquet"
    photon.Detector().propagate(src, seed=3, device="cpu", output=again)
    assert again.read_bytes() == ref[0]


def test_typed_sources_give_the_cli_file_byte_for_byte(cli, tmp_path):
    """Arrays in Python, comma lists on the command line; PDG codes and names are the f2k kinds."""
    ref, got, table = run_both(
        cli, tmp_path, "typed",
        ["--particle", "e,hadr", "--position", "0,0,0,20,-30,50", "--direction", "180,0,90,45",
         "--energy", "1000,500", "--time", "0,10", "--seed", 11],
        particle=[11, "pi+"], position=np.array([[0, 0, 0], [20, -30, 50]]), direction=[[180, 0], [90, 45]],
        energy=[1000, 500], time=[0, 10], seed=11)
    assert got == ref
    # The same sources as f2k text: the same hits (the input's description differs).
    text = photon.propagate(F2K, seed=11, device="cpu")
    assert_same_table(table, text)


def test_python_errors_name_python_arguments(tmp_path):
    det = photon.Detector()
    src = tmp_path / "in.f2k"
    src.write_text(F2K)
    with pytest.raises(ValueError, match=r"^input cannot be given together with energy: give one kind of source$"):
        det.propagate(input=src, energy=10)
    with pytest.raises(ValueError, match=r"^f2k cannot be given together with steps"):
        det.propagate(F2K, steps=src)
    with pytest.raises(ValueError, match=r"^energy -5: must be positive \(zero photons\)$"):
        det.propagate(energy=-5)
    with pytest.raises(ValueError, match=r"^energy of source 1: -1: must be positive"):
        det.propagate(energy=[10, -1])
    with pytest.raises(ValueError, match=r"^particle 'tau': unknown \(f2k names: amu"):
        det.propagate(particle="tau", energy=10)
    with pytest.raises(ValueError, match=r"^particle 2212: unknown"):
        det.propagate(particle=2212, energy=10)
    with pytest.raises(ValueError, match=r"^time has 2 sources but energy has 3"):
        det.propagate(energy=[1, 2, 3], time=[0, 1])
    with pytest.raises(ValueError, match=r"^length muon segments need a positive length"):
        det.propagate(particle="mu-", energy=100)
    with pytest.raises(ValueError, match=r"^max_photons 10: the sources need about"):
        det.propagate(energy=1000, max_photons=10)
    with pytest.raises(ValueError, match=r"^seed must be a non-negative integer, got -1$"):
        det.propagate(energy=10, seed=-1)
    with pytest.raises(ValueError, match=r"^oversize 0: must be between 1 and 1000$"):
        photon.Detector(oversize=0)
    with pytest.raises(ValueError, match=r"oversize must be a non-negative integer"):
        photon.Detector(oversize=-3)
    with pytest.raises(TypeError, match="got input twice"):
        det.propagate(src, input=src)
    out = tmp_path / "h.parquet"
    out.write_text("earlier")
    with pytest.raises(FileExistsError, match="pass force=True"):
        det.propagate(energy=10, output=out)
    assert out.read_text() == "earlier"
    with pytest.raises(ValueError, match="the output is the input"):
        det.propagate(input=src, output=src)


def test_muon_segment_and_aliases():
    """A muon segment given as numbers; mu- and 13 are the f2k `amu`."""
    det = photon.Detector()
    a = det.propagate(particle="mu-", position=[0, 0, -100], direction=[180, 0], length=50, energy=1e3, seed=2,
                      device="cpu")
    b = det.propagate(particle=13, position=[0, 0, -100], direction=[180, 0], length=50, energy=1e3, seed=2,
                      device="cpu")
    c = det.propagate("TR 1 0 amu 0 0 -100 180 0 50 1000 0\n", seed=2, device="cpu")
    assert a.num_rows > 0
    assert_same_table(a, b)
    assert_same_table(a, c)
    assert a.schema.metadata == b.schema.metadata
    names = {n: kind for n, _, kind in photon.PARTICLE_ALIASES}
    assert names["gamma"] == "e" and names["pi-"] == "hadr" and names["mu+"] == "amu"


def test_detector_geometry_table_and_repr(data):
    det = photon.Detector()
    g = det.geometry
    assert g.column_names == ["string", "om", "x", "y", "z"]
    assert g.num_rows == det.doms == 5160 and det.strings == 86
    assert str(g.schema.field("string").type) == "int32" and str(g.schema.field("z").type) == "double"
    assert "86-string" in det.geometry_source
    assert repr(det) == ("warpdrive.photon.Detector(ice='built-in', 5160 DOMs on 86 strings, tilt none, "
                         "sensors none)")
    ice = photon.Detector(ice=data / "ice" / "spice_3.2.1")
    assert ice.tilt == "1-D (tilt.par + tilt.dat: 6 strings along 225°, 125 depths)"
    assert "tilt: 1-D" in " ".join(ice.description)
    assert "tilt 1-D (tilt.par + tilt.dat" in repr(ice) and "5160 DOMs on 86 strings" in repr(ice)
    row = ice.geometry.slice(0, 1).to_pylist()[0]
    assert (row["string"], row["om"]) == (1, 1) and row["z"] > 400


def test_half_a_tilt_model_is_an_error(data, tmp_path):
    """Regression (issue #36 item 10): tilt.par without tilt.dat ran untilted."""
    import shutil

    ice = tmp_path / "ice"
    shutil.copytree(data / "ice" / "spice_3.2.1", ice)
    (ice / "tilt.dat").unlink()
    # A missing file of the pair: FileNotFoundError, as every missing input (the CLI's corpus in
    # Python, test_corpus.py).
    with pytest.raises(FileNotFoundError, match=r"tilt.dat: not found, but tilt.par is there"):
        photon.Detector(ice=ice)


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
    with pytest.raises(ValueError, match="^max_photons 10: "):
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
    # A path as stdin goes through the bounded reader: an endless device fails at once.
    with pytest.raises(ValueError, match=r"/dev/zero: binary data, not text \(a NUL byte at offset 0\)"):
        photon.ppc(0, stdin=Path("/dev/zero"), env={"PPCTABLESDIR": ice, "WARPDRIVE_DEVICE": "cpu"})


def test_ppc_stdin_from_a_path(data, tmp_path):
    env = {"PPCTABLESDIR": str(data / "ice" / "spice_3.2.1"), "WARPDRIVE_SEED": "5", "WARPDRIVE_DEVICE": "cpu"}
    src = tmp_path / "in.f2k"
    src.write_text(PPC_F2K)
    assert photon.ppc(0, stdin=src, env=env).stdout == photon.ppc(0, stdin=PPC_F2K, env=env).stdout


def test_jobs_merge_into_the_unsplit_run_and_equal_the_cli_merge(cli, tmp_path):
    """Photon jobs (`jobs=`/`job_index=`, as batch jobs run them) merge into the unsplit run's
    file byte for byte, in Python and with `warpdrive merge`; a missing or foreign job is named."""
    src = tmp_path / "in.f2k"
    src.write_text(F2K)
    kw = dict(seed=4, device="cpu")
    whole = tmp_path / "whole.parquet"
    photon.propagate(src, output=whole, **kw)
    jobs = [tmp_path / f"job{i}.parquet" for i in range(3)]
    for i, p in enumerate(jobs):
        photon.propagate(src, output=p, jobs=3, job_index=i, **kw)
    meta = pq.read_schema(jobs[1]).metadata
    assert meta[b"warpdrive.job.index"] == b"1" and meta[b"warpdrive.job.jobs"] == b"3"
    merged = photon.merge(jobs[::-1], output=tmp_path / "py.parquet")
    assert_same_table(merged, pq.read_table(whole))
    assert (tmp_path / "py.parquet").read_bytes() == whole.read_bytes()
    cli("merge", "-o", tmp_path / "cli.parquet", *jobs)
    assert (tmp_path / "cli.parquet").read_bytes() == whole.read_bytes()
    with pytest.raises(ValueError, match=r"lack job 2 of 3"):
        photon.merge(jobs[:2])
    photon.propagate(src, output=tmp_path / "other.parquet", jobs=3, job_index=2, seed=5, device="cpu")
    with pytest.raises(ValueError, match=r"other.parquet: is a job of a different run"):
        photon.merge(jobs[:2] + [tmp_path / "other.parquet"])
    with pytest.raises(ValueError, match=r"^job_index 3 must be below jobs 3"):
        photon.propagate(src, jobs=3, job_index=3, **kw)


def test_tabulate_writes_the_cli_files_byte_for_byte(cli, data, tmp_path):
    """photon.tabulate is the CLI's request: the same data files (run.json holds the invocation
    and timings, so it differs), the summary returned as a dict, depths stacked."""
    opts = dict(depth=[1900, 2300], photons=3000, radial_bins="0:100:5", azimuth_bins=[0, 90, 180],
                polar_bins="-1:1:4", delay_bins="-10:500:5", seed=7)
    ice = data / "ice" / "spice_3.2.1"
    cli("photon", "tabulate", "--ice", ice, "--depth", "1900,2300", "--photons", 3000, "--radial-bins", "0:100:5",
        "--azimuth-bins", "0,90,180", "--polar-bins", "-1:1:4", "--delay-bins", "-10:500:5", "--seed", 7,
        "--threads", 2, "-o", tmp_path / "cli")
    s = photon.tabulate(tmp_path / "py", ice, threads=1, **opts)
    for name in ["amplitude.parquet", "time.parquet", "summary.json"]:
        assert (tmp_path / "py" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
    assert s["photons_propagated"] == 6000
    amp = pq.read_table(tmp_path / "py" / "amplitude.parquet")
    assert amp.column_names == ["r", "azimuth", "cos_theta", "depth", "value", "weight"]
    assert sorted(set(amp.column("depth").to_pylist())) == [1900.0, 2300.0]
    # The output is not replaced without force; errors use Python's spelling.
    with pytest.raises(FileExistsError):
        photon.tabulate(tmp_path / "py", ice, **opts)
    with pytest.raises(ValueError, match="^radial_bins edges must increase strictly"):
        photon.tabulate(tmp_path / "bad", radial_bins=[0, 10, 10, 20])
    assert not (tmp_path / "bad").exists()
