#!/usr/bin/env bash
# session 27 call 1: issue #32, the sums-only probe (WD_SAMP_NOSQ) against the default.
set -uo pipefail
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
mkdir -p $OUT/ab
t0=$SECONDS
OUT=$OUT/ab CONFIGS="per-sm=8 WD_SAMP_NOSQ=1" STEPS="1 2 5 10000" ROUNDS=1 bash .device/tabulate-ab > $OUT/ab/log.txt 2>&1
echo "ab rc $? at $((SECONDS - t0)) s"; cut -c1-600 $OUT/ab/summary.txt
grep -h -iE "photons/s" $OUT/ab/ab-*.txt | cut -c1-600 | head -20
cd "$OUT" && tar czf c1.tgz ab && rm -rf ab
