"""Overhead of the Python package against the CLI (issue #17: within 5 %).

    WARPDRIVE_DATA=../shared/data python crates/python/bench/overhead.py [--repeats 3] [--threads N]

1. Spline: `Table.eval` on 1e7 points of the EMS 3-D amplitude table against the CLI's own CPU
   evaluation time (`warpdrive bench spline --device cpu --cpu-points 1e7`, same table, same
   uniform point distribution, the rate at all threads).
2. Photon: `Detector.propagate` on the 10 TeV reference cascade (SPICE 3.2.1) against the
   `propagation:` seconds that `warpdrive photon` prints for the same input and seed (the CLI
   figure excludes reading the ice and writing Parquet; the Python figure includes parsing the
   f2k and building the pyarrow table, so the comparison is conservative).
Runs alternate CLI and Python; the best of `--repeats` of each is reported.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

from warpdrive import photon, spline

ap = argparse.ArgumentParser()
ap.add_argument("--repeats", type=int, default=3)
ap.add_argument("--threads", type=int, default=os.cpu_count())
ap.add_argument("--skip-photon", action="store_true")
a = ap.parse_args()
root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
exe = os.environ.get("WARPDRIVE_BIN", os.path.join(root, "target", "release", "warpdrive"))
data = os.environ.get("WARPDRIVE_DATA", os.path.join(root, "..", "shared", "data"))
env = dict(os.environ, WARPDRIVE_PROGRESS="0")
tmp = tempfile.mkdtemp()
N = 10_000_000

path = f"{data}/splines/icetray_photospline_ems/ems_z0_a0.pt.abs.fits"
t = spline.Table(path)
lo, hi = np.array(t.extents).T
pts = lo + (hi - lo) * np.random.default_rng(1).random((N, t.ndim))
cli_rate, py_rate = 0.0, 0.0
for _ in range(a.repeats):
    js = f"{tmp}/b.json"
    subprocess.run([exe, "--force", "bench", "spline", "--device", "cpu", "--cpu-points", str(N), "--json", js],
                   check=True, capture_output=True, env=env)
    rep = json.load(open(js))
    key = next(k for k in rep if "amplitude" in k and k.endswith(" value") and "cpu1 " not in k)
    cli_rate = max(cli_rate, rep[key])
    t0 = time.perf_counter()
    t.eval(pts, device="cpu")
    py_rate = max(py_rate, N / (time.perf_counter() - t0))
print(f"spline eval, 1e7 points, 3-D table, all threads: CLI {N / cli_rate:.3f} s, Python {N / py_rate:.3f} s, "
      f"Python/CLI = {cli_rate / py_rate:.3f}")

if a.skip_photon:
    sys.exit(0)
ice = f"{data}/ice/spice_3.2.1"
src = f"{data}/reference/ppc_cpu_cascade_10TeV_spice_3.2.1/input_cascade_10TeV.f2k"
det = photon.Detector(ice=ice)
cli_s, py_s = float("inf"), float("inf")
for _ in range(a.repeats):
    r = subprocess.run([exe, "--force", "photon", "--ice", ice, "--input", src, "--seed", "1", "--device", "cpu",
                        "--threads", str(a.threads), "-o", f"{tmp}/h.parquet"], check=True, capture_output=True,
                       text=True, env=env)
    cli_s = min(cli_s, float(re.search(r"propagation:\s+([0-9.]+) s", r.stdout).group(1)))
    t0 = time.perf_counter()
    hits = det.propagate(src, seed=1, device="cpu", threads=a.threads)
    py_s = min(py_s, time.perf_counter() - t0)
print(f"photon propagate, 10 TeV cascade, {a.threads} threads, {hits.num_rows} hits: CLI {cli_s:.2f} s, "
      f"Python {py_s:.2f} s, Python/CLI = {py_s / cli_s:.3f}")
