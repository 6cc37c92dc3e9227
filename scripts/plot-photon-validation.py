#!/usr/bin/env python3
"""Plots for docs/validation/photon.md: warpdrive vs PPC on the 10 TeV cascade in spice_3.2.1.

usage: plot-photon-validation.py OURS.hits DATA_DIR OUT_DIR
OURS.hits: output of `warpdrive ppc` (HIT lines) for reference/ppc_h100_2026/input_cascade_10TeV.f2k.
Needs numpy and matplotlib (not part of CI).
"""
import gzip
import sys
from collections import Counter

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def read(path):
    op = gzip.open if path.endswith(".gz") else open
    rows = []
    with op(path, "rt") as f:
        for line in f:
            if line.startswith("HIT "):
                t = line.split()
                rows.append((int(t[1]), int(t[2]), float(t[3]), float(t[4])))
    return rows


def main(ours_path, data, out):
    ref = f"{data}/reference"
    runs = [read(f"{ref}/ppc_cpu_cascade_10TeV_spice_3.2.1/run_{i}.hits.gz") for i in range(1, 5)]
    runs.append(read(f"{ref}/ppc_h100_2026/ppc_cascade_10TeV_spice_3.2.1.hits.gz"))
    ours = read(ours_path)
    pooled = [h for r in runs for h in r]
    pc = Counter((h[0], h[1]) for h in pooled)
    oc = Counter((h[0], h[1]) for h in ours)
    top = [k for k, _ in sorted(pc.items(), key=lambda kv: (-kv[1], kv[0]))[:20]]
    per_run = np.array([[Counter((h[0], h[1]) for h in r)[k] for k in top] for r in runs])

    fig, (a1, a2) = plt.subplots(2, 1, figsize=(10, 6), sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    x = np.arange(len(top))
    m, s = per_run.mean(0), per_run.std(0, ddof=1)
    o = np.array([oc[k] for k in top])
    a1.errorbar(x, m, yerr=s, fmt="s", label="PPC, mean of 5 runs (run-to-run s.d.)")
    a1.errorbar(x + 0.2, o, yerr=np.sqrt(o), fmt="o", label="warpdrive (Poisson error)")
    a1.set_yscale("log")
    a1.set_ylabel("hits")
    a1.legend()
    a1.set_title("10 TeV EM cascade at (0,0,-400) in SPICE 3.2.1: 20 brightest DOMs")
    a2.errorbar(x, o / m - 1, yerr=np.sqrt(o) / m, fmt="o")
    a2.axhline(0, color="k", lw=0.5)
    a2.set_ylabel("ours/PPC - 1")
    a2.set_xticks(x, [f"{k[0]}-{k[1]}" for k in top], rotation=60)
    fig.tight_layout()
    fig.savefig(f"{out}/photon-dom-counts.png", dpi=90)

    fig, axes = plt.subplots(1, 5, figsize=(16, 3.5))
    for ax, k in zip(axes, top[:5]):
        tp = np.array([h[2] for h in pooled if (h[0], h[1]) == k])
        to = np.array([h[2] for h in ours if (h[0], h[1]) == k])
        bins = np.linspace(tp.min() - 5, np.percentile(tp, 99.5), 60)
        ax.hist(tp, bins, weights=np.full(len(tp), 1 / len(runs)), histtype="step", label="PPC / run")
        ax.hist(to, bins, histtype="step", label="warpdrive")
        ax.set_yscale("log")
        ax.set_title(f"DOM {k[0]}-{k[1]}")
        ax.set_xlabel("arrival time [ns]")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(f"{out}/photon-times.png", dpi=90)

    fig, ax = plt.subplots(figsize=(6, 4))
    bins = np.linspace(250, 650, 41)
    ax.hist([h[3] for h in pooled], bins, weights=np.full(len(pooled), 1 / len(runs)), histtype="step", label="PPC / run")
    ax.hist([h[3] for h in ours], bins, histtype="step", label="warpdrive")
    ax.set_xlabel("wavelength [nm]")
    ax.set_ylabel("hits")
    ax.legend()
    fig.tight_layout()
    fig.savefig(f"{out}/photon-wavelength.png", dpi=90)
    print("totals: PPC", [len(r) for r in runs], "warpdrive", len(ours))


if __name__ == "__main__":
    main(*sys.argv[1:4])
