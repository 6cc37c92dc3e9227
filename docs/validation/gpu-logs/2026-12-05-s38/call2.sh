#!/usr/bin/env bash
# session 37's planned call 2: the knobs at the new default in clear ice (2300 m, where a segment
# has ~1.5 points with the directional step) and at the bench's 2000 m: the queue as vectors
# (WD_SAMP_AOS=1), the points a lane may queue a step (WD_SAMP_ROUNDS 2, the default; 4; 0 = all)
# and 9 blocks a multiprocessor (the lean layout fits them under the carveouts); then ncu of the
# default at 2300 m (where the time goes in clear ice; scripts/ncu-source-summary.py reads it on
# the host). Stage as call 1; about 450 s (5 builds × 2 depths × 2 rounds ≈ 250 s, ncu ≈ 120 s).
set -uo pipefail
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
mkdir -p $OUT/ab
OUT=$OUT/ab CONFIGS="per-sm=8 per-sm=8,WD_SAMP_AOS=1 per-sm=8,WD_SAMP_ROUNDS=4 per-sm=8,WD_SAMP_ROUNDS=0 per-sm=9" \
  STEPS=auto DEPTHS="2000 2300" ROUNDS=2 timeout 380 bash scripts/tabulate-ab 2>&1 | grep "^=="
sed -E 's/.*(step [a-z0-9-]+ round [0-9]+).*tabulation ([0-9.e]+) photons.*tabulation \/ fast = ([0-9.]+).*/\1 \2 \3/' $OUT/ab/summary.txt
mkdir -p $OUT/prof
OUT=$OUT/prof DEPTH=2300 timeout 150 bash scripts/tabulate-profile auto 2>&1 | grep -vE "^\s*$" | tail -30
cd $OUT && tar czf call2.tgz ab prof && rm -rf ab prof
