#!/usr/bin/env python3
"""Bias and resolution of Millipede's energies from `scripts/millipede-study OUT`: for the
depth-aware tables and the public ones, ln(E_reco / E_true) per event, its mean (bias) and
standard deviation (resolution), over all events and split into the dust layer (2000–2100 m)
and clear ice; a plot of the ratios against depth (OUT/millipede-study.png, with matplotlib).

    python3 scripts/millipede-study-report.py OUT
"""
import csv
import math
import sys
from pathlib import Path

import pyarrow.parquet as pq


def load(out: Path, name: str) -> dict[int, tuple[float, float, bool]]:
    """Per event (its row in the events list): energy, σ, converged."""
    t = pq.read_table(out / name / "events.parquet").to_pydict()
    return {
        int(e): (E, s, bool(c))
        for e, E, s, c in zip(t["event"], t["total_energy"], t["total_sigma"], t["converged"])
    }


def stats(v: list[float]) -> str:
    if not v:
        return "—"
    m = sum(v) / len(v)
    sd = math.sqrt(sum((x - m) ** 2 for x in v) / max(len(v) - 1, 1))
    med = sorted(v)[len(v) // 2]
    return f"{len(v)} | {100 * (math.exp(m) - 1):+.1f} % | {100 * (math.exp(med) - 1):+.1f} % | {100 * sd:.1f} %"


def main() -> None:
    out = Path(sys.argv[1])
    truth = list(csv.DictReader(open(out / "truth.csv")))
    sets = {"depth-aware": load(out, "unfold-depth"), "public": load(out, "unfold-public")}
    print("| tables | events | region | n | bias (mean of ln ratio) | median | resolution (σ of ln ratio) |")
    print("|---|---|---|---|---|---|---|")
    points = {}
    for name, res in sets.items():
        rows = []
        for i, t in enumerate(truth):
            e, s, ok = res[i]
            if ok and e > 0:
                rows.append((float(t["depth"]), math.log(e / float(t["energy_gev"]))))
        points[name] = rows
        for region, sel in [("all", lambda d: True), ("dust 2000–2100 m", lambda d: 2000 <= d <= 2100),
                            ("clear ice", lambda d: not 2000 <= d <= 2100)]:
            v = [r for d, r in rows if sel(d)]
            print(f"| {name} | {len(truth)} | {region} | {stats(v)} |")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(7, 4))
    for (name, rows), m in zip(points.items(), ["o", "s"]):
        ax.plot([d for d, _ in rows], [math.exp(r) for _, r in rows], m, label=f"{name} tables", alpha=0.8)
    ax.axvspan(2000, 2100, color="0.85", label="dust layer")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_yscale("log")
    ax.set_xlabel("cascade depth [m]")
    ax.set_ylabel("E_reco / E_true")
    ax.set_title("Millipede energies, warpdrive photon cascades in spice_3.2.1")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "millipede-study.png", dpi=120)
    print(f"plot: {out / 'millipede-study.png'}")


if __name__ == "__main__":
    main()
