#!/usr/bin/env bash
# session 33 call 4: the default with WD_SAMP_LEAN (the host's equal_steps flag) against the lookup
# axis by axis at Δ = 1 m, two rounds in alternating order; then gpu-check --domain photon (the
# same integers for WD_SAMP_LEAN=0, every photon check, the rate check).
set -uo pipefail
mkdir -p $OUT/ab
OUT=$OUT/ab CONFIGS="per-sm=8 per-sm=8,WD_SAMP_LEAN=0" STEPS="1" ROUNDS=2 timeout 120 bash scripts/tabulate-ab 2>&1 | grep "^=="
sed -E 's/.*(step [0-9]+ round [0-9]+).*tabulation ([0-9.e]+) photons.*tabulation \/ fast = ([0-9.]+).*/\1 \2 \3/' $OUT/ab/summary.txt
t0=$SECONDS
OUT=$OUT/gc timeout 420 bash scripts/gpu-check photon > $OUT/gc.txt 2>&1
echo "== gpu-check rc $? in $((SECONDS - t0)) s"
grep -E "PASS|FAIL|passed|failed" $OUT/gc.txt | cut -c1-300 | tail -34
cd $OUT && tar czf call4.tgz ab gc gc.txt && rm -rf ab gc gc.txt
