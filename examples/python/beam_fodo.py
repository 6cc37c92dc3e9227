"""Beam tracking of a FODO line with phase-space plots (ELEGANT coordinates in and out).

    python examples/python/beam_fodo.py [out.png]

Needs matplotlib: pip install "warpdrive[plot]".
"""

import os
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from warpdrive import beam

LTE = """! FODO cell, 10 cells, a watch point at the end of each pass
QF: QUAD, L=0.2, K1=1.5
QD: QF, K1=-1.5
D: DRIF, L=0.8
W: WATCH, FILENAME="%s-w.sdds"
CELL: LINE=(QF, D, QD, D)
RING: LINE=(10*CELL, W)
"""
path = os.path.join(tempfile.mkdtemp(), "fodo.lte")
with open(path, "w") as f:
    f.write(LTE)
lat = beam.Lattice.from_lte(path)
print(lat)

n, p0 = 20000, 1956.951  # βγ of a 1 GeV electron
rng = np.random.default_rng(1)
z = np.column_stack([
    rng.normal(0, 3e-4, n), rng.normal(0, 3e-5, n),  # x [m], x'
    rng.normal(0, 3e-4, n), rng.normal(0, 3e-5, n),  # y [m], y'
    rng.normal(0, 1e-12, n), p0 * (1 + rng.normal(0, 1e-3, n)),  # t [s], p = βγ
])
r = lat.track(z, passes=20, aperture=2e-3, p_central=p0)
print(r)

fig, ax = plt.subplots(1, 3, figsize=(14, 4.3))
for k, (i, j, lx, ly) in enumerate([(0, 1, "x [mm]", "x' [mrad]"), (2, 3, "y [mm]", "y' [mrad]")]):
    ax[k].scatter(1e3 * z[:, i], 1e3 * z[:, j], s=1, alpha=0.3, label="initial")
    ok = r.alive
    ax[k].scatter(1e3 * r.particles[ok, i], 1e3 * r.particles[ok, j], s=1, alpha=0.3, label="after 20 passes")
    ax[k].set(xlabel=lx, ylabel=ly)
    ax[k].legend(markerscale=8, fontsize=8)
rms = [np.std(w["particles"][w["table"]["lost_at"].to_numpy() == 0, 0]) for w in r.watch]
ax[2].plot(range(len(rms)), 1e3 * np.array(rms), marker="o")
ax[2].set(xlabel="pass", ylabel="σx at the watch point [mm]", title=f"{int((~r.alive).sum())} of {n} lost at 2 mm")
fig.tight_layout()
out = sys.argv[1] if len(sys.argv) > 1 else "beam_fodo.png"
fig.savefig(out, dpi=110)
print(f"-> {out}")
