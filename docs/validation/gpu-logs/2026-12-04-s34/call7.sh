#!/usr/bin/env bash
# session 34 call 7: call 6 found fewer photons a job-queue refill (WD_SAMP_JOBS=8, +8.7 %) and
# fewer blocks a multiprocessor (per-sm=6, +6.7 %) faster with batch means; their combinations,
# Δ = 1 m, two rounds in alternating order; then the best three at Δ = 2 m.
set -uo pipefail
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
mkdir -p $OUT/ab $OUT/ab2
OUT=$OUT/ab CONFIGS="per-sm=8 per-sm=8,WD_SAMP_JOBS=8 per-sm=8,WD_SAMP_JOBS=4 per-sm=6,WD_SAMP_JOBS=8 per-sm=6,WD_SAMP_JOBS=4 per-sm=7,WD_SAMP_JOBS=8" STEPS="1" ROUNDS=2 timeout 250 bash scripts/tabulate-ab 2>&1 | grep "^=="
sed -E 's/.*(step [0-9]+ round [0-9]+).*tabulation ([0-9.e]+) photons.*tabulation \/ fast = ([0-9.]+).*/\1 \2 \3/' $OUT/ab/summary.txt
OUT=$OUT/ab2 CONFIGS="per-sm=8 per-sm=8,WD_SAMP_JOBS=8 per-sm=6,WD_SAMP_JOBS=8 per-sm=6,WD_SAMP_JOBS=4" STEPS="2" ROUNDS=2 timeout 200 bash scripts/tabulate-ab 2>&1 | grep "^=="
sed -E 's/.*(step [0-9]+ round [0-9]+).*tabulation ([0-9.e]+) photons.*tabulation \/ fast = ([0-9.]+).*/\1 \2 \3/' $OUT/ab2/summary.txt
cd $OUT && tar czf call7.tgz ab ab2 && rm -rf ab ab2
