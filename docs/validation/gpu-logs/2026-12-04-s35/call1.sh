#!/usr/bin/env bash
# session 35 call 1: what the points' global adds cost (WD_SAMP_NOATOM), the sums-only bound with
# 8 photons a refill, and batch means in the one-point-a-step loop (integer runs in registers,
# a close = one add to the cell and one to the photon's replica), Δ = 1 m and 2 m, two rounds.
set -uo pipefail
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
mkdir -p $OUT/ab
SW=per-sm=8,WD_SAMP_STEPWISE=1,WD_SAMP_QPOINT=1,WD_SAMP_REP=256
OUT=$OUT/ab CONFIGS="per-sm=8 per-sm=8,WD_SAMP_NOATOM=1 per-sm=8,WD_SAMP_NOATOM=3 per-sm=8,WD_SAMP_NOSQ=1 $SW $SW,WD_SAMP_STEP_POINTS=2 $SW,WD_SAMP_JOBS=16" STEPS="1 2" ROUNDS=2 timeout 420 bash scripts/tabulate-ab 2>&1 | grep "^=="
sed -E 's/.*(step [0-9]+ round [0-9]+).*tabulation ([0-9.e]+) photons.*tabulation \/ fast = ([0-9.]+).*/\1 \2 \3/' $OUT/ab/summary.txt
cd $OUT && tar czf call1.tgz ab && rm -rf ab
