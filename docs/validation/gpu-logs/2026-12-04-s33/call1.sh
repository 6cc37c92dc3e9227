#!/usr/bin/env bash
# session 33 call 1: issue #32's WD_SAMP_FIFO (walk and bin in the same step) against the default
# and the stepwise loop at Δ = 1 m and 2 m, two rounds in alternating order; then gpu-check
# --domain photon (the FIFO builds' same integers as the default, and the rate check with them).
set -uo pipefail
mkdir -p $OUT/ab
OUT=$OUT/ab CONFIGS="per-sm=8 per-sm=8,WD_SAMP_STEPWISE=1,WD_SAMP_FIFO=2 per-sm=8,WD_SAMP_STEPWISE=1,WD_SAMP_FIFO=3 per-sm=8,WD_SAMP_STEPWISE=1,WD_SAMP_FIFO=2,WD_SAMP_FIFO_POINTS=2 per-sm=8,WD_SAMP_STEPWISE=1" STEPS="1 2" ROUNDS=2 timeout 240 bash scripts/tabulate-ab 2>&1 | tail -24
t0=$SECONDS
OUT=$OUT/gc timeout 300 bash scripts/gpu-check photon > $OUT/gc.txt 2>&1
echo "== gpu-check rc $? in $((SECONDS - t0)) s"
grep -E "PASS|FAIL|passed|failed" $OUT/gc.txt | cut -c1-400 | tail -40
cd $OUT && tar czf call1.tgz ab gc gc.txt && rm -rf ab gc gc.txt
