#!/usr/bin/env python3
"""Time Xsuite/xtrack on the `warpdrive bench beam` line (10 FODO cells: 20 quadrupoles
L=0.2 m K1=+-1.5, 20 drifts 0.8 m) on the GPU (CuPy context) and one CPU core, and compare its
tracked coordinates with warpdrive's on the same particles.

    python3 scripts/xtrack_bench.py --warpdrive .device/warpdrive --out DIR [--gpu-particles N]

Needs xtrack, xobjects, xpart, xdeps (carried as wheels, see scripts/gpu-check) and CuPy for the
GPU context. Writes DIR/xtrack-bench.json and prints a table. Used by scripts/gpu-check.
"""
import argparse
import json
import subprocess
import time

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--warpdrive", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--gpu-particles", type=int, default=20_000_000)
ap.add_argument("--cpu-particles", type=int, default=200_000)
ap.add_argument("--turns", type=int, nargs="+", default=[1, 20])
args = ap.parse_args()

import xobjects as xo  # noqa: E402
import xtrack as xt  # noqa: E402

# Without the `xsuite` package of prebuilt kernels, let xtrack compile its kernels (C for the
# CPU context, CUDA through CuPy for the GPU one) just in time, as it did before prebuilt kernels.
xo.settings.allow_kernel_compilation = True

P0C = 1956.951 * xt.ELECTRON_MASS_EV  # warpdrive bench: p_central = 1956.951 m_e c


def line_on(ctx):
    elements, names = [], []
    for cell in range(10):
        for name, el in (("qf", xt.Quadrupole(length=0.2, k1=1.5)), ("d1", xt.Drift(length=0.8)),
                         ("qd", xt.Quadrupole(length=0.2, k1=-1.5)), ("d2", xt.Drift(length=0.8))):
            elements.append(el)
            names.append(f"{name}_{cell}")
    line = xt.Line(elements=elements, element_names=names)
    line.particle_ref = xt.Particles(p0c=P0C, mass0=xt.ELECTRON_MASS_EV)
    line.build_tracker(_context=ctx)
    return line


def beam(n, seed=1):
    """The bench beam's distribution (beta 3 m, emittance 1e-8, sigma_delta 1e-3), numpy RNG."""
    r = np.random.default_rng(seed)
    s = np.sqrt(1e-8 * 3.0)
    sp = np.sqrt(1e-8 / 3.0)
    return dict(x=s * r.standard_normal(n), xp=sp * r.standard_normal(n), y=s * r.standard_normal(n),
                yp=sp * r.standard_normal(n), delta=1e-3 * r.standard_normal(n))


def particles(ctx, b):
    d = b["delta"]
    # slopes -> canonical momenta px = (1+delta) x' / sqrt(1 + x'^2 + y'^2)
    f = (1.0 + d) / np.sqrt(1.0 + b["xp"] ** 2 + b["yp"] ** 2)
    return xt.Particles(_context=ctx, p0c=P0C, mass0=xt.ELECTRON_MASS_EV, x=b["x"], px=b["xp"] * f,
                        y=b["y"], py=b["yp"] * f, zeta=0.0 * d, delta=d)


def timed(line, ctx, p, turns, sync):
    t = time.perf_counter()
    line.track(p, num_turns=turns)
    sync()
    return time.perf_counter() - t


results = {"xtrack_version": xt.__version__, "rows": []}
print(f"xtrack {xt.__version__}")
# GPU (CuPy).
try:
    import cupy as cp
    ctx = xo.ContextCupy()
    line = line_on(ctx)
    b = beam(args.gpu_particles)
    sync = cp.cuda.Device().synchronize
    warm = particles(ctx, beam(1000))
    timed(line, ctx, warm, 1, sync)
    for turns in args.turns:
        p = particles(ctx, b)
        sync()
        secs = timed(line, ctx, p, turns, sync)
        ns = secs * 1e9 / (args.gpu_particles * turns * 40)
        print(f"xtrack GPU (CuPy) {args.gpu_particles} particles x {turns} turns: {secs:.4f} s, {ns:.4f} ns/particle-element")
        results["rows"].append(dict(what="xtrack GPU (CuPy)", particles=args.gpu_particles, turns=turns, seconds=secs,
                                    ns_per_particle_element=ns))
        del p
except Exception as e:  # report, do not hide
    print(f"xtrack GPU failed: {e!r}")
    results["gpu_error"] = repr(e)

# CPU, one core.
ctx = xo.ContextCpu()
line = line_on(ctx)
b = beam(args.cpu_particles)
timed(line, ctx, particles(ctx, beam(1000)), 1, lambda: None)
for turns in (1,):
    p = particles(ctx, b)
    secs = timed(line, ctx, p, turns, lambda: None)
    ns = secs * 1e9 / (args.cpu_particles * turns * 40)
    print(f"xtrack CPU (1 core) {args.cpu_particles} particles x {turns} turns: {secs:.4f} s, {ns:.4f} ns/particle-element")
    results["rows"].append(dict(what="xtrack CPU (1 core)", particles=args.cpu_particles, turns=turns, seconds=secs,
                                ns_per_particle_element=ns))

# Physics cross-check: the same 20 000 particles through both codes, one pass.
n = 20_000
b = beam(n, seed=7)
p = particles(ctx, b)
line.track(p, num_turns=1)
order = np.argsort(p.particle_id)
xt_x, xt_y = p.x[order], p.y[order]
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
pq.write_table(pa.table(dict(x=b["x"], xp=b["xp"], y=b["y"], yp=b["yp"], s=np.zeros(n), delta=b["delta"])),
               f"{args.out}/xtrack-beam.parquet")
subprocess.run([args.warpdrive, "bench", "beam", "--device", "cpu", "--write-lattice", args.out, "--cpu-particles", "1000",
                "--passes", "1", "--threads", "1", "--json", "/tmp/wd-tmp.json"], check=True, capture_output=True)
subprocess.run([args.warpdrive, "beam", "track", f"{args.out}/bench-maps.lte", "--device", "cpu", "--beam",
                f"{args.out}/xtrack-beam.parquet", "--p-central", "1956.951", "--no-plot", "-o", "/tmp/wd-xcheck"],
               check=True, capture_output=True)
wd = pq.read_table("/tmp/wd-xcheck/final.parquet")
dx = np.abs(wd["x"].to_numpy() - xt_x).max() / np.std(xt_x)
dy = np.abs(wd["y"].to_numpy() - xt_y).max() / np.std(xt_y)
print(f"cross-check, {n} particles through the line: max |x_wd - x_xtrack|/sigma_x = {dx:.3e}, y: {dy:.3e}")
results["crosscheck"] = dict(particles=n, max_dx_over_sigma=float(dx), max_dy_over_sigma=float(dy))
with open(f"{args.out}/xtrack-bench.json", "w") as f:
    json.dump(results, f, indent=1)
