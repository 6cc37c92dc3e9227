#!/usr/bin/env bash
# session 34 call 1: what the variance costs. The default against the runs without the cells'
# squares (WD_SAMP_CELLSQ=0), the sums-only probe (WD_SAMP_NOSQ=1) and per-point squares in the
# spatial cells (=2) and in the cells too (=3, CLSim's tabulator's variance), at Δ = 1 m (CLSim's
# step) and 2 m, two rounds in alternating order.
set -uo pipefail
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
mkdir -p $OUT/ab
OUT=$OUT/ab CONFIGS="per-sm=8 per-sm=8,WD_SAMP_CELLSQ=0 per-sm=8,WD_SAMP_NOSQ=1 per-sm=8,WD_SAMP_NOSQ=2 per-sm=8,WD_SAMP_NOSQ=3" STEPS="1 2" ROUNDS=2 timeout 400 bash scripts/tabulate-ab 2>&1 | grep "^=="
sed -E 's/.*(step [0-9]+ round [0-9]+).*tabulation ([0-9.e]+) photons.*tabulation \/ fast = ([0-9.]+).*/\1 \2 \3/' $OUT/ab/summary.txt
cd $OUT && tar czf call1.tgz ab && rm -rf ab
