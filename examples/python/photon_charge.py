"""Photon hits -> per-DOM charge: a 10 TeV cascade in SPICE 3.2.1 (PPC's reference input).

    python examples/python/photon_charge.py [out.png]      (WARPDRIVE_DATA: the shared data)

Needs matplotlib: pip install "warpdrive[plot]".
"""

import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from warpdrive import photon

data = os.environ.get("WARPDRIVE_DATA", "../shared/data")
det = photon.Detector(ice=f"{data}/ice/spice_3.2.1")
hits = det.propagate(f"{data}/reference/ppc_cpu_cascade_10TeV_spice_3.2.1/input_cascade_10TeV.f2k", seed=1)
print(f"{hits.num_rows} hits, {hits.schema.metadata[b'warpdrive.photons'].decode()} photons")

# Charge per DOM = number of hits per (string, om).
s = hits["string"].to_numpy()
om = hits["om"].to_numpy()
t = hits["time_ns"].to_numpy()
key = s.astype(np.int64) * 1000 + om
doms, inv, charge = np.unique(key, return_inverse=True, return_counts=True)
first = np.full(len(doms), np.inf)
np.minimum.at(first, inv, t)

fig, ax = plt.subplots(1, 2, figsize=(11, 4.5))
sc = ax[0].scatter(doms // 1000, doms % 1000, c=np.log10(charge), s=12, cmap="viridis")
ax[0].set(xlabel="string", ylabel="OM", title="hits per DOM (log10)")
ax[0].invert_yaxis()
fig.colorbar(sc, ax=ax[0])
ax[1].hist(t, bins=100, log=True)
ax[1].set(xlabel="arrival time [ns]", ylabel="hits", title="arrival times")
fig.tight_layout()
out = sys.argv[1] if len(sys.argv) > 1 else "photon_charge.png"
fig.savefig(out, dpi=110)
print(f"{len(doms)} DOMs hit, max charge {charge.max()} -> {out}")
