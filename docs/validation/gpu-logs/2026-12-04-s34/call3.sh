#!/usr/bin/env bash
# session 34 call 3: the spatial variance by batch means (WD_SAMP_REP=R) against the default's
# runs, R = 64, 256, 1024, at Δ = 1 m and 2 m, two rounds in alternating order; then one
# tabulation each way on the same photons (photon tabulate is not switchable: bench's timing only).
set -uo pipefail
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
mkdir -p $OUT/ab
OUT=$OUT/ab CONFIGS="per-sm=8 per-sm=8,WD_SAMP_REP=64 per-sm=8,WD_SAMP_REP=256 per-sm=8,WD_SAMP_REP=1024" STEPS="1 2" ROUNDS=2 timeout 400 bash scripts/tabulate-ab 2>&1 | grep "^=="
sed -E 's/.*(step [0-9]+ round [0-9]+).*tabulation ([0-9.e]+) photons.*tabulation \/ fast = ([0-9.]+).*/\1 \2 \3/' $OUT/ab/summary.txt
grep -iE "error|refus" $OUT/ab/*.txt | head
cd $OUT && tar czf call3.tgz ab && rm -rf ab
