"""Spline evaluation on a grid: a 2-D photospline table (conventional numu flux) over its extents.

    python examples/python/spline_grid.py [out.png]      (WARPDRIVE_DATA: the shared data)

Needs matplotlib: pip install "warpdrive[plot]".
"""

import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from warpdrive import spline

data = os.environ.get("WARPDRIVE_DATA", "../shared/data")
t = spline.Table(f"{data}/splines/nuflux/H3a_SIBYLL23C_conv_numu.fits")
(x0, x1), (y0, y1) = t.extents
x, y = np.meshgrid(np.linspace(x0, x1, 400), np.linspace(y0, y1, 300))
pts = np.column_stack([x.ravel(), y.ravel()])  # (N, 2), C order: read without a copy
v, g = t.eval(pts, gradient=True)

fig, ax = plt.subplots(1, 2, figsize=(11, 4.5))
im = ax[0].pcolormesh(x, y, v.reshape(x.shape), shading="auto")
fig.colorbar(im, ax=ax[0], label="table value")
ax[0].set(xlabel="axis 0", ylabel="axis 1", title=os.path.basename(str(t.path)))
im = ax[1].pcolormesh(x, y, g[:, 0].reshape(x.shape), shading="auto", cmap="RdBu_r")
fig.colorbar(im, ax=ax[1], label="d value / d axis 0")
ax[1].set(xlabel="axis 0", ylabel="axis 1", title="gradient")
fig.tight_layout()
out = sys.argv[1] if len(sys.argv) > 1 else "spline_grid.png"
fig.savefig(out, dpi=110)
print(f"{len(pts)} points -> {out}")
