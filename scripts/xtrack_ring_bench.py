#!/usr/bin/env python3
"""Issue #30's ring benchmark: the same ring of 193 elements (examples/beam/bench_ring.lte: 16 FODO
cells with sector bends and sextupoles, one RF cavity) tracked for T turns by N particles in
Xsuite/xtrack on the GPU (CuPy context) and in `warpdrive beam track --device cuda`, turns ×
particles per second of each, in one call on one machine.

    python3 scripts/xtrack_ring_bench.py --warpdrive .device/warpdrive --out DIR
        [--particles 1000000] [--turns 1000] [--cpu]      (--cpu: xtrack's CPU context, for a try)

warpdrive runs twice: with the ring's SBEN/QUAD/SEXT as second-order maps (consecutive maps are
composed into one per run, as ELEGANT's concatenation), and with them as ELEGANT's kick elements
CSBEND/KQUAD/KSEXT (each integrated by its N_KICKS kick-drift steps, element by element, as xtrack
does with its default integrators); both codes track the RF cavity's sine. xtrack may run fewer
turns (--xtrack-turns): the rates per turn are compared. Both beams are Gaussian with the same
sizes (x, y 1 mm; x', y' 0.1 mrad; δ 1e-4), drawn by each code. Writes DIR/xtrack-ring-bench.json.
Needs xtrack, xobjects, xpart, xdeps (scripts/fetch-xtrack-wheels) and CuPy.
"""
import argparse
import json
import math
import os
import re
import subprocess
import tempfile
import time

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--warpdrive", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--particles", type=int, default=1_000_000)
ap.add_argument("--turns", type=int, default=1000)
ap.add_argument("--xtrack-turns", type=int, default=None,
                help="turns of xtrack's timed run (default --turns); its rate per turn is what is compared")
ap.add_argument("--lattice", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "beam", "bench_ring.lte"))
ap.add_argument("--cpu", action="store_true")
args = ap.parse_args()

import xobjects as xo  # noqa: E402
import xtrack as xt  # noqa: E402

xo.settings.allow_kernel_compilation = True
P0C = 1956.951 * xt.ELECTRON_MASS_EV  # warpdrive's default p_central (1956.951 m_e c)


def read(path):
    """The .lte subset of the benchmark ring: `NAME: KIND, K=V, …` and `NAME: LINE=(…, n*NAME)`."""
    defs, lines = {}, {}
    for raw in open(path):
        st = raw.split("!", 1)[0].strip()
        if not st or st.upper().startswith("USE"):
            continue
        name, body = [s.strip() for s in st.split(":", 1)]
        if body.upper().startswith("LINE"):
            items = []
            for x in body.split("=", 1)[1].strip().strip("()").split(","):
                m = re.fullmatch(r"\s*(?:(\d+)\s*\*\s*)?(\w+)\s*", x)
                items += [m.group(2)] * int(m.group(1) or 1)
            lines[name] = items
            continue
        f = [x.strip() for x in body.split(",")]
        defs[name] = (f[0].upper(), {k.strip().upper(): float(v) for k, v in (x.split("=") for x in f[1:])})
    return defs, lines


def expand(name, defs, lines):
    if name in lines:
        return [e for n in lines[name] for e in expand(n, defs, lines)]
    return [name]


def element(kind, p):
    length = p.get("L", 0.0)
    if kind.startswith("DRIF"):
        return xt.Drift(length=length)
    if kind == "QUAD":
        return xt.Quadrupole(length=length, k1=p["K1"])
    if kind == "SEXT":
        return xt.Sextupole(length=length, k2=p["K2"])
    if kind in ("SBEN", "SBEND"):
        return xt.Bend(length=length, angle=p["ANGLE"], k0=p["ANGLE"] / length,
                       edge_entry_model="full", edge_exit_model="full")
    if kind == "RFCA":
        # ELEGANT's PHASE = 180° is the zero crossing that is stable above transition; xtrack's
        # phase [rad] of the same sine (checked by the bounded δ the benchmark reports).
        return xt.Cavity(voltage=p["VOLT"], frequency=p["FREQ"], phase=math.radians(p.get("PHASE", 0.0)))
    raise SystemExit(f"no xtrack translation for {kind}")


defs, lines = read(args.lattice)
names = expand("RING", defs, lines)
ctx = xo.ContextCpu() if args.cpu else xo.ContextCupy()
line = xt.Line(elements=[element(*defs[n]) for n in names], element_names=[f"{n}_{i}" for i, n in enumerate(names)])
line.particle_ref = xt.Particles(p0c=P0C, mass0=xt.ELECTRON_MASS_EV, q0=-1)
t0 = time.time()
line.build_tracker(_context=ctx)
n = args.particles
r = np.random.default_rng(1)


def particles():
    return xt.Particles(_context=ctx, p0c=P0C, mass0=xt.ELECTRON_MASS_EV, q0=-1,
                        x=1e-3 * r.standard_normal(n), px=1e-4 * r.standard_normal(n),
                        y=1e-3 * r.standard_normal(n), py=1e-4 * r.standard_normal(n),
                        zeta=0.0, delta=1e-4 * r.standard_normal(n))


print(f"xtrack: {len(names)} elements on {type(ctx).__name__}", flush=True)
p = particles()
line.track(p, num_turns=1)  # compiles the kernels
ctx.synchronize() if hasattr(ctx, "synchronize") else None
compile_s = time.time() - t0
print(f"xtrack: built and compiled in {compile_s:.1f} s", flush=True)
xt_turns = args.xtrack_turns or args.turns
p = particles()
t1 = time.time()
line.track(p, num_turns=xt_turns)
if hasattr(ctx, "synchronize"):
    ctx.synchronize()
xt_s = time.time() - t1
state = ctx.nparray_from_context_array(p.state)
delta = ctx.nparray_from_context_array(p.delta)
xt_alive = int((state > 0).sum())



def warpdrive(lattice_text, tmp, tag):
    """`warpdrive beam track` of the ring: (run.json, wall seconds)."""
    lte = f"{tmp}/{tag}.lte"
    open(lte, "w").write(lattice_text)
    cmd = [args.warpdrive, "beam", "track", lte, "--particles", str(n), "--passes", str(args.turns),
           "--emit-x", "1e-7", "--beta-x", "10", "--emit-y", "1e-7", "--beta-y", "10", "--sigma-delta", "1e-4",
           "--device", "cpu" if args.cpu else "cuda", "--no-plot", "-o", f"{tmp}/{tag}"]
    w0 = time.time()
    subprocess.run(cmd, check=True, capture_output=True)
    return json.load(open(f"{tmp}/{tag}/run.json")), time.time() - w0


# The maps (SBEN/QUAD/SEXT: consecutive map elements are composed into one map per run, as
# ELEGANT's concatenation) and ELEGANT's kick elements (CSBEND/KQUAD/KSEXT, each integrated by
# N_KICKS kick-drift steps of order 4, the defaults), which track element by element as xtrack.
text = open(args.lattice).read()
kick_text = re.sub(r"^(\s*\w+\s*:\s*)(SBEN|QUAD|SEXT)\s*,", lambda m: m.group(1) + {"SBEN": "CSBEND", "QUAD": "KQUAD", "SEXT": "KSEXT"}[m.group(2)] + ",", text, flags=re.M)
runs = {}
with tempfile.TemporaryDirectory() as tmp:
    for tag, t in (("maps", text), ("kick", kick_text)):
        run, wall = warpdrive(t, tmp, tag)
        runs[tag] = {"device": run["device"], "tracking_seconds": run["tracking_seconds"], "wall_s": wall,
                     "turns_particles_per_s": n * args.turns / run["tracking_seconds"], "lost": run["losses"]["lost"]}
elements = len(names)
xt_rate = n * xt_turns / xt_s
res = {
    "lattice": os.path.basename(args.lattice), "elements": elements, "particles": n, "turns": args.turns,
    "xtrack": {"context": type(ctx).__name__, "turns": xt_turns, "seconds": xt_s, "turns_particles_per_s": xt_rate,
               "build_and_compile_s": compile_s, "alive": xt_alive, "max_abs_delta": float(np.abs(delta[state > 0]).max())},
    "warpdrive": runs,
    "speedup_rate": {k: v["turns_particles_per_s"] / xt_rate for k, v in runs.items()},
    "xtrack_version": xt.__version__,
}
os.makedirs(args.out, exist_ok=True)
json.dump(res, open(os.path.join(args.out, "xtrack-ring-bench.json"), "w"), indent=1)
print(f"ring {res['lattice']}: {elements} elements, {n} particles; warpdrive {args.turns} turns, xtrack {xt_turns} turns")
print(f"  xtrack {xt.__version__} ({res['xtrack']['context']}): {xt_s:.2f} s = {n * xt_turns / xt_s:.3e} turns*particles/s "
      f"(build + kernel compile {compile_s:.1f} s; {xt_alive} alive, max |delta| {res['xtrack']['max_abs_delta']:.2e})")
for tag, r in runs.items():
    print(f"  warpdrive {tag} ({r['device']}): tracking {r['tracking_seconds']:.2f} s = {r['turns_particles_per_s']:.3e} turns*particles/s "
          f"(wall {r['wall_s']:.1f} s, {r['lost']} lost): {res['speedup_rate'][tag]:.1f}x xtrack")
