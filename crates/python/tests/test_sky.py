import numpy as np
import pyarrow.parquet as pq
import pytest

from conftest import same_bits
from warpdrive import sky


@pytest.fixture(scope="module")
def events(data, tmp_path_factory):
    """The first 5000 IC86-2011 up-going events, as a file for the CLI and as arrays."""
    src = data / "events" / "ic86_2011_ps_release" / "upgoing_events.txt"
    lines = src.read_text().splitlines()[:5001]
    path = tmp_path_factory.mktemp("sky") / "events.txt"
    path.write_text("\n".join(lines) + "\n")
    a = np.loadtxt(path, skiprows=1)
    return path, a[:, 3], a[:, 4], a[:, 1]


def test_autocorr_equals_cli(cli, events, tmp_path):
    path, ra, dec, e = events
    out = tmp_path / "cli"
    cli("sky", "autocorr", path, "--trials", 64, "--seed", 5, "--bins", 8, "--bin-width", 0.5, "--device", "cpu",
        "--no-plot", "-o", out)
    r = sky.autocorr(ra, dec, e, bins=8, bin_width=0.5, trials=64, seed=5, device="cpu", threads=1)
    for name, got in (("counts", r.counts), ("background", r.background)):
        ref = pq.read_table(out / f"{name}.parquet")
        assert got.column_names == ref.column_names
        for c in ref.column_names:
            assert same_bits(got[c].to_numpy(), ref[c].to_numpy()), (name, c)
    assert r.observed.shape == r.ts.shape == r.p_trials.shape == (4, 8)
    assert r.trials == 64
    mine = tmp_path / "py"
    r.to_parquet(mine)
    for name in ("counts", "background"):
        a, b = pq.read_table(mine / f"{name}.parquet"), pq.read_table(out / f"{name}.parquet")
        for c in b.column_names:
            assert same_bits(a[c].to_numpy(), b[c].to_numpy()), (name, c)
    counts, trials = r.background_distribution(0, 7)
    assert trials.sum() == 64


def test_threads_and_no_energy(events):
    _, ra, dec, e = events
    a = sky.autocorr(ra, dec, e, bins=4, trials=16, device="cpu", threads=1)
    b = sky.autocorr(ra, dec, e, bins=4, trials=16, device="cpu", threads=2)
    assert same_bits(a.observed, b.observed) and same_bits(a.p_trials, b.p_trials)
    n = sky.autocorr(ra, dec, bins=4, trials=8, device="cpu")
    assert n.cut_labels == ["all"] and same_bits(n.observed[0], a.observed[0])


def test_bad_inputs(events):
    _, ra, dec, e = events
    bad = dec.copy()
    bad[3] = 95.0
    with pytest.raises(ValueError, match=r"<arrays>:4: field 'dec': declination 95 is outside"):
        sky.autocorr(ra, bad, e, trials=4)
    with pytest.raises(ValueError, match="entries"):
        sky.autocorr(ra[:10], dec, e, trials=4)
    with pytest.raises(ValueError, match="hemisphere 'up'"):
        sky.autocorr(ra, dec, e, trials=4, hemisphere="up")
    with pytest.raises(ValueError, match="^bins must be at least 1"):
        sky.autocorr(ra, dec, e, trials=4, bins=0)
    with pytest.raises(ValueError, match="^ra_grid x"):
        sky.autocorr(ra, dec, e, trials=4, ra_grid="x")
    with pytest.raises(ValueError, match=r"cuts need energies \(energy\)"):
        sky.autocorr(ra, dec, cuts=["top:0.1"], trials=4)
    with pytest.raises(ValueError):
        sky.autocorr(ra, dec, e, trials=4, cuts=["nonsense"])


def test_edges_array_negative_ints_and_labels(events, tmp_path):
    """Issue #28: `edges=np.linspace(…)` raised "truth value of an array is ambiguous"; negative
    ints raised OverflowError; `background_distribution(cut="all")` or an out-of-range cut/bin
    returned empty arrays; `to_parquet` created parents silently and overwrote."""
    _, ra, dec, e = events
    r = sky.autocorr(ra, dec, e, edges=np.linspace(0.5, 2.0, 4), trials=4, device="cpu")
    assert list(r.edges_deg) == [0.5, 1.0, 1.5, 2.0]
    with pytest.raises(ValueError, match="^trials must be a non-negative integer, got -1"):
        sky.autocorr(ra, dec, e, trials=-1)
    with pytest.raises(ValueError, match="^bins must be a non-negative integer, got -3"):
        sky.autocorr(ra, dec, e, bins=-3)
    counts, trials = r.background_distribution("all", 3)
    assert trials.sum() == 4
    assert (r.background_distribution(0, 3)[0] == counts).all()
    with pytest.raises(ValueError, match="cut 'everything'"):
        r.background_distribution("everything", 0)
    with pytest.raises(ValueError, match="^cut 9: this run has cuts 0..4"):
        r.background_distribution(9, 0)
    with pytest.raises(ValueError, match="^bin 4: this run has bins 0..4"):
        r.background_distribution(0, 4)
    out = tmp_path / "out"
    r.to_parquet(out)
    before = (out / "counts.parquet").read_bytes()
    with pytest.raises(FileExistsError, match="force=True"):
        r.to_parquet(out)
    r.to_parquet(out, force=True)
    assert (out / "counts.parquet").read_bytes() == before
    assert sorted(p.name for p in out.iterdir()) == ["background.parquet", "counts.parquet", "run.json", "summary.json"]


def test_files_and_synthetic_events_equal_the_cli(cli, events, tmp_path):
    path, ra, dec, e = events
    out = tmp_path / "cli"
    cli("sky", "autocorr", path, "--trials", 8, "--seed", 3, "--device", "cpu", "--no-plot", "-o", out)
    r = sky.autocorr(files=[path], trials=8, seed=3, device="cpu")
    mine = tmp_path / "py"
    r.to_parquet(mine)
    # The data files are the same bytes; only run.json (command, device, timings) differs.
    for name in ("counts.parquet", "background.parquet", "summary.json"):
        assert (mine / name).read_bytes() == (out / name).read_bytes(), name
    out2 = tmp_path / "cli-synth"
    cli("sky", "autocorr", "--synthetic-events", 500, "--trials", 4, "--device", "cpu", "--no-plot", "-o", out2)
    s = sky.autocorr(synthetic_events=500, trials=4, device="cpu")
    ref = pq.read_table(out2 / "counts.parquet")
    assert ref.column_names == s.counts.column_names
    for c in ref.column_names:
        assert same_bits(ref[c].to_numpy(), s.counts[c].to_numpy()), c


def test_jobs_merge_into_the_unsplit_run_and_equal_the_cli_merge(cli, events, tmp_path):
    """A run split into jobs (as batch jobs would run it) merges into the unsplit run's tables;
    the merge equals `warpdrive merge` byte for byte; incomplete, overlapping and missing jobs
    are refused with the argument or directory named."""
    _, ra, dec, e = events
    kw = dict(bins=6, bin_width=0.5, trials=60, seed=8, device="cpu")
    whole = sky.autocorr(ra, dec, e, **kw)
    jobs = []
    for i in range(3):
        jobs.append(tmp_path / f"job{i}")
        sky.autocorr(ra, dec, e, jobs=3, job_index=i, **kw).to_parquet(jobs[-1])
    merged = sky.merge(jobs)
    assert merged.trials == 60
    for name in ("counts", "background"):
        a, b = getattr(merged, name), getattr(whole, name)
        for c in b.column_names:
            assert same_bits(a[c].to_numpy(), b[c].to_numpy()), (name, c)
    merged.to_parquet(tmp_path / "py", plot=True)
    cli("merge", "-o", tmp_path / "cli", *jobs)
    for f in ("counts.parquet", "background.parquet", "summary.json", "autocorr.png"):
        assert (tmp_path / "py" / f).read_bytes() == (tmp_path / "cli" / f).read_bytes(), f
    with pytest.raises(ValueError, match=r"^partial not given, but the jobs hold trials 0\.\.40 of 0\.\.60"):
        sky.merge(jobs[:2])
    assert sky.merge(jobs[:2], partial=True).trials == 40
    with pytest.raises(ValueError, match="overlap trials"):
        sky.merge([jobs[0], jobs[0]])
    with pytest.raises(FileNotFoundError, match="nowhere/counts.parquet: cannot read: No such file"):
        sky.merge([jobs[0], tmp_path / "nowhere"])
    with pytest.raises(TypeError, match="a list of job directories"):
        sky.merge(jobs[0])  # type: ignore[arg-type]


# ---- signal injection (`sky inject`, issue #35) --------------------------------------------------

def test_inject_equals_the_cli(cli, events, tmp_path):
    """Files and arrays give the CLI's data files byte for byte (same seed, same counts)."""
    path, ra, dec, e = events
    err = np.loadtxt(path, skiprows=1)[:, 2]
    out = tmp_path / "cli"
    args = ["--sources", "5,10", "--events-per-source", 4, "--declination", "-5:90", "--trials", 12, "--seed", 3,
            "--bins", 8, "--bin-width", 0.5]
    cli("sky", "inject", path, *args, "--device", "cpu", "--no-plot", "-o", out)
    kw = dict(sources=[5, 10], events_per_source=4, declination=(-5, 90), trials=12, seed=3, bins=8, bin_width=0.5,
              device="cpu")
    r = sky.inject(files=path, **kw)
    mine = tmp_path / "py"
    r.to_parquet(mine)
    names = ("counts.parquet", "background.parquet", "signal.parquet", "sensitivity.parquet", "summary.json")
    for name in names:
        assert (mine / name).read_bytes() == (out / name).read_bytes(), name
    a = sky.inject(ra, dec, e, err, threads=1, **kw)
    for name in ("counts", "background", "signal", "sensitivity"):
        ref, got = pq.read_table(out / f"{name}.parquet"), getattr(a, name)
        assert got.column_names == ref.column_names
        for c in ref.column_names:
            assert same_bits(got[c].to_numpy(), ref[c].to_numpy()), (name, c)
    assert a.sources == [5, 10] and a.events_per_source == 4 and a.trials == 12
    assert set(a.sensitivity["sources"].to_pylist()) == {5, 10}
    # The summaries differ only in the events' description (arrays vs the file's name).
    assert {k: v for k, v in a.summary.items() if k != "description"} == \
        {k: v for k, v in r.summary.items() if k != "description"}
    assert "sensitivity" in str(a.summary)
    assert "sources 5,10 x 4 events, 12 trials on cpu" in repr(a)


def test_inject_without_signal_is_the_background_and_reports_progress(events):
    _, ra, dec, e = events
    err = np.full(len(ra), 0.5)
    seen = []
    r = sky.inject(ra, dec, e, err, sources=[0, 3], events_per_source=2, trials=6, bins=4, device="cpu",
                   progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1] == (18, 18)
    rows = [row for row in r.signal.to_pylist() if row["sources"] == 0]
    bg = sorted((row["cut"], row["bin"], row["count"], row["trials"]) for row in r.background.to_pylist())
    assert sorted((x["cut"], x["bin"], x["count"], x["trials"]) for x in rows) == bg


def test_inject_errors_name_the_argument(events):
    _, ra, dec, e = events
    with pytest.raises(ValueError, match="^ang_err is needed"):
        sky.inject(ra, dec, e, device="cpu")
    with pytest.raises(ValueError, match="^declination '5': expected LO:HI"):
        sky.inject(synthetic_events=500, declination="5", device="cpu")
    with pytest.raises(ValueError, match="^events_per_source 600: more than the 500 selected events"):
        sky.inject(synthetic_events=500, sources=1, events_per_source=600, device="cpu")


def test_injection_jobs_merge_into_the_unsplit_run(tmp_path):
    kw = dict(synthetic_events=1500, sources=[2, 4], events_per_source=3, trials=10, bins=4, bin_width=0.5, seed=4,
              device="cpu")
    whole = sky.inject(**kw)
    jobs = []
    for i in range(2):
        jobs.append(tmp_path / f"job{i}")
        sky.inject(jobs=2, job_index=i, **kw).to_parquet(jobs[-1])
    merged = sky.merge_injection(jobs)
    assert merged.trials == 10
    for name in ("background", "signal", "sensitivity"):
        a, b = getattr(merged, name), getattr(whole, name)
        for c in b.column_names:
            assert same_bits(a[c].to_numpy(), b[c].to_numpy()), (name, c)
    with pytest.raises(ValueError, match="partial not given"):
        sky.merge_injection(jobs[:1])
