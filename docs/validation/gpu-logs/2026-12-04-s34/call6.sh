#!/usr/bin/env bash
# session 34 call 6: the default's knobs re-measured with batch means (points a lane and step,
# job-queue refills, blocks per multiprocessor), Δ = 1 m, two rounds in alternating order.
set -uo pipefail
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
mkdir -p $OUT/ab
OUT=$OUT/ab CONFIGS="per-sm=8 per-sm=8,WD_SAMP_ROUNDS=1 per-sm=8,WD_SAMP_ROUNDS=3 per-sm=8,WD_SAMP_JOBS=8 per-sm=8,WD_SAMP_JOBS=32 per-sm=6" STEPS="1" ROUNDS=2 timeout 250 bash scripts/tabulate-ab 2>&1 | grep "^=="
sed -E 's/.*(step [0-9]+ round [0-9]+).*tabulation ([0-9.e]+) photons.*tabulation \/ fast = ([0-9.]+).*/\1 \2 \3/' $OUT/ab/summary.txt
cd $OUT && tar czf call6.tgz ab && rm -rf ab
