#!/usr/bin/env python3
"""Cross-check `warpdrive spline fit` against photospline's `glam_fit` (issue #32).

Makes a 2-D and a 3-D histogram (NumPy, fixed seed), writes each as an .npz (np.savez: the
format `warpdrive spline fit` reads), fits it with photospline's `glam_fit` and with the
warpdrive CLI (same knots, orders, smoothing, penalty orders), reads both tables with
photospline's reader, and prints the largest coefficient difference relative to the largest
coefficient and the largest difference of the evaluated splines at the bin centres.

Needs photospline's Python module (built with SuiteSparse: `cmake .. && make` in a clone of
icecube/photospline; PYTHONPATH=that build directory) and the warpdrive binary
(WARPDRIVE_BIN, default target/release/warpdrive, else target/debug/warpdrive).

    PYTHONPATH=/path/to/photospline/build python3 scripts/fit-against-photospline.py
"""

import os
import subprocess
import sys
import tempfile

import numpy as np
import photospline


def warpdrive_bin():
    if os.environ.get("WARPDRIVE_BIN"):
        return os.environ["WARPDRIVE_BIN"]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for kind in ("release", "debug"):
        p = os.path.join(root, "target", kind, "warpdrive")
        if os.path.exists(p):
            return p
    sys.exit("no warpdrive binary: set WARPDRIVE_BIN or cargo build -p warpdrive-cli")


def padded(lo, hi, count, order):
    """`--knots LO:HI:COUNT`: COUNT knots from LO to HI and ORDER more at each end."""
    h = (hi - lo) / (count - 1)
    return lo + h * np.arange(-order, count + order)


def case(name, ndim, bins, knot_counts, order, smooth, penalty, seed):
    rng = np.random.default_rng(seed)
    edges = [np.linspace(0.0, 1.0 + d, bins[d] + 1) for d in range(ndim)]
    centers = [0.5 * (e[1:] + e[:-1]) for e in edges]
    grids = np.meshgrid(*centers, indexing="ij")
    mean = 50.0 + 200.0 * np.exp(-sum((g - 0.4 * (1 + d)) ** 2 / (0.1 * (1 + d)) for d, g in enumerate(grids)))
    counts = rng.poisson(mean).astype(np.float64)
    weights = np.where(counts > 0, 1.0 / np.maximum(counts, 1.0), 0.0)
    knots = [padded(0.0, 1.0 + d, knot_counts[d], order[d]) for d in range(ndim)]

    ps = photospline.glam_fit(*photospline.ndsparse.from_data(counts, weights), centers, knots, order, smooth, penalty)

    with tempfile.TemporaryDirectory() as tmp:
        npz = os.path.join(tmp, "h.npz")
        out = os.path.join(tmp, "t.fits")
        np.savez(npz, counts=counts, weights=weights, **{f"edges_{d}": e for d, e in enumerate(edges)})
        args = [warpdrive_bin(), "spline", "fit", npz, "-o", out, "--threads", "1"]
        for d in range(ndim):
            args += ["--knots", f"0:{1.0 + d!r}:{knot_counts[d]}"]
        args += ["--order", ",".join(map(str, order)), "--smooth", ",".join(map(repr, smooth)),
                 "--penalty-order", ",".join(map(str, penalty))]
        r = subprocess.run(args, capture_output=True, text=True, env=dict(os.environ, WARPDRIVE_PROGRESS="0"))
        if r.returncode != 0:
            sys.exit(f"warpdrive failed: {r.stderr}")
        wd = photospline.SplineTable(out)

    a, b = np.asarray(ps.coefficients, dtype=np.float64), np.asarray(wd.coefficients, dtype=np.float64)
    coef = np.max(np.abs(a - b)) / np.max(np.abs(a))
    pts = [g.ravel() for g in grids]
    va, vb = ps.evaluate_simple(pts), wd.evaluate_simple(pts)
    val = np.max(np.abs(va - vb)) / np.max(np.abs(va))
    chi2 = np.sum(weights * (counts - vb.reshape(counts.shape)) ** 2)
    print(f"{name}: {counts.size} bins, {a.size} coefficients (orders {order}, λ {smooth}, penalty {penalty}): "
          f"max |Δc|/max|c| = {coef:.2e}, max |Δf|/max|f| at the centres = {val:.2e}; "
          f"Σ w (z − f)² = {chi2:.1f}")
    return coef


def main():
    worst = max(
        case("2-D", 2, (40, 30), (12, 9), [2, 3], [1e-6, 1e-5], [2, 2], seed=1),
        case("3-D", 3, (20, 18, 16), (8, 7, 6), [2, 2, 3], [1e-6, 1e-6, 1e-5], [2, 1, 2], seed=2),
    )
    # float32 coefficients on both sides: agreement to ~1e-6 of the largest is the expectation.
    print("PASS" if worst < 1e-5 else "FAIL", f"(worst {worst:.2e}, threshold 1e-5)")
    sys.exit(0 if worst < 1e-5 else 1)


if __name__ == "__main__":
    main()
