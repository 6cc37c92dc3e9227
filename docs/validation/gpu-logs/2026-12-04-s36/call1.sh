#!/usr/bin/env bash
# session 36 call 1: the adaptive default's knobs re-measured (rounds, refill, blocks a
# multiprocessor), two measurement switches (WD_SAMP_NANG, WD_SAMP_NOMARK), the loop without
# points at other launch shapes, and ncu of the adaptive default.
set -uo pipefail
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
mkdir -p $OUT/ab $OUT/phys $OUT/prof
B=per-sm=8
OUT=$OUT/ab CONFIGS="$B $B,WD_SAMP_NANG=11 $B,WD_SAMP_NOMARK=1 $B,WD_SAMP_ROUNDS=1 $B,WD_SAMP_ROUNDS=3 $B,WD_SAMP_JOBS=16 per-sm=9 per-sm=10" STEPS="auto" ROUNDS=2 timeout 280 bash scripts/tabulate-ab 2>&1 | grep "^=="
P=WD_SAMP_PHYSICS=1
OUT=$OUT/phys CONFIGS="$B,$P $B,$P,WD_SAMP_JOBS=32 per-sm=10,$P per-sm=10,$P,WD_SAMP_JOBS=32 per-sm=6,$P" STEPS="auto" ROUNDS=2 timeout 200 bash scripts/tabulate-ab 2>&1 | grep "^=="
for f in $OUT/ab/summary.txt $OUT/phys/summary.txt; do
  sed -E 's/.*(step [a-z0-9]+ round [0-9]+).*tabulation ([0-9.e]+) photons.*tabulation \/ fast = ([0-9.]+).*/\1 \2 \3/' $f
done
grep -h "config\|registers" $OUT/ab/ab-auto-1.txt $OUT/phys/ab-auto-1.txt | head -30
OUT=$OUT/prof timeout 200 bash scripts/tabulate-profile auto 2>&1 | tail -25
cd $OUT && tar czf call1.tgz ab phys prof && rm -rf ab phys prof
