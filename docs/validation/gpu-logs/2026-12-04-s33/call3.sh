#!/usr/bin/env bash
# session 33 call 3: WD_SAMP_LEAN (default) against the lookup axis by axis, and WD_SAMP_FIFO
# with the warp's ring of closes (1 and 2 records) against the default, at Δ = 1 m and 2 m, two
# rounds in alternating order; then the source profile of WD_SAMP_FIFO=1 with the ring.
set -uo pipefail
mkdir -p $OUT/ab $OUT/prof
OUT=$OUT/ab CONFIGS="per-sm=8 per-sm=8,WD_SAMP_LEAN=0 per-sm=8,WD_SAMP_STEPWISE=1,WD_SAMP_FIFO=1 per-sm=8,WD_SAMP_STEPWISE=1,WD_SAMP_FIFO=2 per-sm=8,WD_SAMP_STEPWISE=1,WD_SAMP_FIFO=2,WD_SAMP_FIFO_RING=0" STEPS="1 2" ROUNDS=2 timeout 300 bash scripts/tabulate-ab 2>&1 | grep "^==" 
sed -E 's/.*(step [0-9]+ round [0-9]+).*tabulation ([0-9.e]+) photons.*tabulation \/ fast = ([0-9.]+).*/\1 \2 \3/' $OUT/ab/summary.txt
t0=$SECONDS
OUT=$OUT/prof CONFIG="per-sm=8,WD_SAMP_STEPWISE=1,WD_SAMP_FIFO=1" timeout 200 bash scripts/tabulate-profile 1 > $OUT/prof/log.txt 2>&1
echo "== profile rc $? in $((SECONDS - t0)) s"; tail -14 $OUT/prof/log.txt
cd $OUT && tar czf call3.tgz ab prof && rm -rf ab prof
