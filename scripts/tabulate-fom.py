#!/usr/bin/env python3
"""Issue #32: table quality per GPU second of the sampled tabulation, per build and step.

Joins the comb's variance factor R measured on the CPU (`measure_comb_noise` with CSV=r.csv,
crates/photon/tests/tabulate_sampled.rs: R = 1 + comb variance / photon variance, N_eff-weighted over
the spatial and the time cells) with the GPU's photon rates of the same request (`bench photon
--tabulate --json`, e.g. scripts/tabulate-ab's ab-*.json; several rounds are reduced to their median).
R x T (T = 1 / rate) compares builds and steps per unit of variance and GPU time: lower is better.
Printed relative to the reference build's adaptive comb from 1 m at the same depth. R itself is a
measurement (8 seeds x 10^5 photons: its differences between steps of a few per cent are real, not
its last digit): read differences in R x T below ~2 % as ties.

    scripts/tabulate-fom.py r.csv ab/ab-*.json [--reference per-sm=8]
"""
import argparse
import collections
import csv
import json
import statistics

DEFAULT_ESTIMATOR = "sampled (adaptive step from 1 m)"


def entries(path):
    # A run cut short (a timeout) leaves an empty or partial file: skipped, said.
    try:
        with open(path) as f:
            d = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        print(f"skipped {path}: {e}")
        return []
    return d if isinstance(d, list) else [d]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("r_csv", help="measure_comb_noise's CSV (case cascade rows are used)")
    ap.add_argument("json", nargs="+", help="bench photon --tabulate --json outputs")
    ap.add_argument("--reference", default="per-sm=8", help="the --config of the reference build")
    a = ap.parse_args()

    r = {}
    with open(a.r_csv) as f:
        for row in csv.DictReader(f):
            if row["case"] == "cascade":
                key = (float(row["depth_m"]), row["estimator"])
                if key in r:
                    raise SystemExit(f"{a.r_csv}: two rows for {key}: one measurement per depth and estimator")
                r[key] = (float(row["r_spatial"]), float(row["r_time"]))

    rates = collections.defaultdict(list)
    for p in a.json:
        for e in entries(p):
            if e.get("benchmark") != "photon-tabulate":
                continue
            key = (e.get("config", ""), e["tabulate_estimator"], float(e["depth_m"]))
            rates[key].append((e["tabulate_photons_per_s"], e["tabulate_over_fast"], e.get("points_per_photon", 0.0)))
    if not rates:
        raise SystemExit("no photon-tabulate entries in the JSON files")

    med = {k: tuple(statistics.median(x[i] for x in v) for i in range(3)) + (len(v),) for k, v in rates.items()}
    print(f"{'config':<44} {'estimator':<36} {'depth':>6} {'runs':>4} {'photons/s':>10} {'/ fast':>7} "
          f"{'points':>6} {'R sp':>6} {'R t':>6} {'RxT sp':>7} {'RxT t':>7}")
    for (config, est, depth), (rate, ratio, points, n) in sorted(med.items(), key=lambda kv: (kv[0][2], kv[0][1], kv[0][0])):
        rs = r.get((depth, est))
        ref = med.get((a.reference, DEFAULT_ESTIMATOR, depth))
        ref_r = r.get((depth, DEFAULT_ESTIMATOR))
        fom = "      -       -"
        if rs and ref and ref_r:
            # R x T relative: (R / R_ref) x (rate_ref / rate).
            fom = f"{rs[0] / ref_r[0] * ref[0] / rate:7.3f} {rs[1] / ref_r[1] * ref[0] / rate:7.3f}"
        rtxt = f"{rs[0]:6.3f} {rs[1]:6.3f}" if rs else "     -      -"
        print(f"{config or '(default)':<44} {est:<36} {depth:6.0f} {n:4d} {rate:10.3e} {ratio:7.3f} {points:6.1f} {rtxt} {fom}")


if __name__ == "__main__":
    main()
