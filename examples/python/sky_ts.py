"""Sky autocorrelation of IceCube's public IC86-2011 up-going events with a TS plot.

    python examples/python/sky_ts.py [out.png]      (WARPDRIVE_DATA: the shared data)

Needs matplotlib: pip install "warpdrive[plot]".
"""

import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from warpdrive import sky

data = os.environ.get("WARPDRIVE_DATA", "../shared/data")
ev = np.loadtxt(f"{data}/events/ic86_2011_ps_release/upgoing_events.txt", skiprows=1)  # MJD log10E err RA Dec
r = sky.autocorr(ra=ev[:, 3], dec=ev[:, 4], energy=ev[:, 1], bins=20, bin_width=0.25, trials=200, seed=2011)
print(r)
theta = r.edges_deg
fig, ax = plt.subplots(1, 2, figsize=(11, 4.5))
for c, label in enumerate(r.cut_labels):
    ax[0].plot(theta, r.ts[c], marker="o", ms=3, label=f"{label} ({r.cut_events[c]} events)")
    ax[1].semilogy(theta, np.maximum(r.p_trials[c], 1 / (r.trials + 1)), marker="o", ms=3, label=label)
ax[0].axhline(1, color="grey", lw=0.5)
ax[0].set(xlabel="θ_max [deg]", ylabel="TS = N_obs / ⟨N_bg⟩", title="two-point autocorrelation")
ax[1].set(xlabel="θ_max [deg]", ylabel="local p-value (trials)", title=f"{r.trials} scrambled trials")
ax[0].legend(fontsize=8)
fig.tight_layout()
out = sys.argv[1] if len(sys.argv) > 1 else "sky_ts.png"
fig.savefig(out, dpi=110)
print(f"-> {out}")
