#!/usr/bin/env bash
# session 33 call 6: the default's knobs re-measured with WD_SAMP_LEAN (points a lane and step,
# job-queue refills), Δ = 1 m, two rounds in alternating order.
set -uo pipefail
mkdir -p $OUT/ab
OUT=$OUT/ab CONFIGS="per-sm=8 per-sm=8,WD_SAMP_ROUNDS=1 per-sm=8,WD_SAMP_ROUNDS=3 per-sm=8,WD_SAMP_JOBS=32 per-sm=8,WD_SAMP_JOBS=8" STEPS="1" ROUNDS=2 timeout 200 bash scripts/tabulate-ab 2>&1 | grep "^=="
sed -E 's/.*(step [0-9]+ round [0-9]+).*tabulation ([0-9.e]+) photons.*tabulation \/ fast = ([0-9.]+).*/\1 \2 \3/' $OUT/ab/summary.txt
cd $OUT && tar czf call6.tgz ab && rm -rf ab
