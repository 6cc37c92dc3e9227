#!/usr/bin/env bash
# Session 40's planned call 1 (session 39's next-call.sh with session 40's switch added): the A/B at
# 2000 and 2300 m of the default (the grid's shape compiled in) against the opt-in switches on branch
# s39-switches — the acceptance per point in the drain (WD_SAMP_PTW=1), the warp's end counts as
# 32-bit shared atomics (WD_SAMP_CNT32=1), the comb compiled in (WD_SAMP_COMB=1), the warp's mask a
# constant (WD_SAMP_FULLWARP=1), all four (also with one round, WD_SAMP_ROUNDS=1) — and 7 blocks a
# multiprocessor alone and with all four. Build and stage from the branch:
# `git checkout s39-switches && cargo build --release`, WARPDRIVE_DATA=... bash scripts/stage-device;
# carry [".device"]; about 350 s.
set -uo pipefail
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
mkdir -p $OUT/ab
ALL=WD_SAMP_PTW=1,WD_SAMP_CNT32=1,WD_SAMP_COMB=1,WD_SAMP_FULLWARP=1
OUT=$OUT/ab CONFIGS="per-sm=8 per-sm=8,WD_SAMP_PTW=1 per-sm=8,WD_SAMP_CNT32=1 per-sm=8,WD_SAMP_COMB=1 per-sm=8,WD_SAMP_FULLWARP=1 per-sm=8,$ALL per-sm=8,WD_SAMP_ROUNDS=1,$ALL per-sm=7 per-sm=7,$ALL" \
  STEPS=auto DEPTHS="2000 2300" ROUNDS=2 timeout 500 bash scripts/tabulate-ab 2>&1 | grep "^=="
for f in $OUT/ab/ab-*.txt; do
  echo "-- $f"
  sed -nE 's/^config "(.*)":$/\1/p; s/.*tabulation ([0-9.e]+) photons.*propagation to the modules ([0-9.e]+) .*tabulation \/ fast = ([0-9.]+).*/   \1 \2 \3/p' "$f"
done
tar czf $OUT/ab.tgz -C $OUT ab && rm -rf $OUT/ab
