#!/usr/bin/env bash
# session 35 call 2: the adaptive comb (measurement build WD_SAMP_ADAPT_K/_MAX: a segment's step
# Δ_seg = clamp(K·r_near, 1 m, MAX), r_near the nearer of its ends to the vertex) against the
# fixed 1 m and 2 m combs, two rounds in alternating order.
set -uo pipefail
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
mkdir -p $OUT/ab $OUT/ab2
A=per-sm=8,WD_SAMP_ADAPT_K
OUT=$OUT/ab CONFIGS="per-sm=8 $A=0.2f,WD_SAMP_ADAPT_MAX=3.0f $A=0.15f,WD_SAMP_ADAPT_MAX=3.0f $A=0.2f,WD_SAMP_ADAPT_MAX=4.0f $A=0.25f,WD_SAMP_ADAPT_MAX=5.0f $A=0.1f,WD_SAMP_ADAPT_MAX=3.0f" STEPS="1" ROUNDS=2 timeout 300 bash scripts/tabulate-ab 2>&1 | grep "^=="
OUT=$OUT/ab2 CONFIGS="per-sm=8" STEPS="2 3" ROUNDS=2 timeout 200 bash scripts/tabulate-ab 2>&1 | grep "^=="
for f in $OUT/ab/summary.txt $OUT/ab2/summary.txt; do
  sed -E 's/.*(step [0-9]+ round [0-9]+).*tabulation ([0-9.e]+) photons.*tabulation \/ fast = ([0-9.]+).*/\1 \2 \3/' $f
done
grep -h "config\|points" $OUT/ab/ab-1-1.txt | head -20
cd $OUT && tar czf call2.tgz ab ab2 && rm -rf ab ab2
