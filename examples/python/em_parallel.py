"""EM runs in worker processes: results pickle, so multiprocessing, dask and joblib just work.

    python examples/python/em_parallel.py [out.png]

Four seeds of the Klein-Nishina mini-app (100 MeV photons in water) run in two worker
processes started with the "spawn" method (fresh interpreters, as on macOS and Windows and as
joblib's loky and dask use); each result comes back pickled, writes its output directory in
the parent, and the profiles are combined. Needs matplotlib: pip install "warpdrive[plot]".
"""

import multiprocessing
import os
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from warpdrive import em


def one_run(seed: int) -> em.EmResult:
    """One seed on one CPU thread (the workers run side by side)."""
    return em.run(energy=100.0, tracks=20_000, seed=seed, material="G4_WATER", tally_width=5.0, tally_bins=200,
                  device="cpu", threads=1, progress=False)


def main() -> None:
    seeds = [1, 2, 3, 4]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        runs = pool.map(one_run, seeds)
    for r in runs:
        print(r)
    # An unpickled result writes the CLI's directory, byte for byte what the worker would have.
    out = os.path.join(tempfile.mkdtemp(), "seed1")
    runs[0].to_parquet(out)
    print(f"seed 1 -> {out}: {sorted(os.listdir(out))}")

    # Bin centres; the last bin also holds what went deeper, so it is left out.
    z = runs[0].profile["z_low_cm"].to_numpy()[:-1] + 2.5
    profiles = np.array([r.edep_mev_per_cm[:-1] for r in runs])
    mean, spread = profiles.mean(axis=0), profiles.std(axis=0, ddof=1)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for s, p in zip(seeds, profiles):
        ax.plot(z, p, lw=0.6, alpha=0.6, label=f"seed {s}")
    ax.fill_between(z, mean - spread, mean + spread, color="k", alpha=0.2, label="mean ± 1σ (seeds)")
    ax.set(xlabel="depth [cm]", ylabel="MeV / cm per photon", yscale="log",
           title="100 MeV photons in G4_WATER, 4 seeds in 2 spawned workers")
    ax.legend(fontsize=8)
    fig.tight_layout()
    png = sys.argv[1] if len(sys.argv) > 1 else "em_parallel.png"
    fig.savefig(png, dpi=110)
    print(f"{len(runs)} runs of {runs[0].tracks} tracks -> {png}")


if __name__ == "__main__":  # the guard the "spawn" start method needs
    main()
