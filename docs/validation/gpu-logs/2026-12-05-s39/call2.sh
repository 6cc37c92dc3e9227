#!/usr/bin/env bash
# Session 39, call 2: the A/B at 2000 and 2300 m of the default (the grid's shape compiled in
# since call 1) against the acceptance per point in the drain (WD_SAMP_PTW=1), the warp's end
# counts as 32-bit shared atomics (WD_SAMP_CNT32=1), both, and 7 blocks a multiprocessor
# (72 registers, no spills) alone and with both. Stage: bash scripts/stage-device; carry [".device"].
set -uo pipefail
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
mkdir -p $OUT/ab
OUT=$OUT/ab CONFIGS="per-sm=8 per-sm=8,WD_SAMP_PTW=1 per-sm=8,WD_SAMP_CNT32=1 per-sm=8,WD_SAMP_PTW=1,WD_SAMP_CNT32=1 per-sm=7 per-sm=7,WD_SAMP_PTW=1,WD_SAMP_CNT32=1" STEPS=auto DEPTHS="2000 2300" ROUNDS=2 timeout 330 bash scripts/tabulate-ab 2>&1 | grep "^=="
for f in $OUT/ab/ab-*.txt; do
  echo "-- $f"
  sed -nE 's/^config "(.*)":$/\1/p; s/.*tabulation ([0-9.e]+) photons.*propagation to the modules ([0-9.e]+) .*tabulation \/ fast = ([0-9.]+).*/   \1 \2 \3/p' "$f"
done
tar czf $OUT/ab.tgz -C $OUT ab && rm -rf $OUT/ab
