#!/usr/bin/env bash
# The next session's first device call (written in session 39, whose device loans were paused
# after call 1): the A/B at 2000 and 2300 m of the default (the grid's shape compiled in, gpu-checked
# in call 1) against session 39's opt-in switches — the acceptance per point in the drain
# (WD_SAMP_PTW=1), the warp's end counts as 32-bit shared atomics (WD_SAMP_CNT32=1), the comb
# compiled in (WD_SAMP_COMB=1), all three (also with one round, WD_SAMP_ROUNDS=1) — and 7 blocks a multiprocessor (72 registers, no
# spills) alone and with all three. Then, if a build wins, make it the default and run gpu-check.
# Then ncu of the build with all three. The switches are on branch s39-switches (not on main until
# measured): `git checkout s39-switches && cargo build --release`, then stage from it:
# WARPDRIVE_DATA=... bash scripts/stage-device; carry [".device"]; about 350 s.
set -uo pipefail
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
mkdir -p $OUT/ab
ALL=WD_SAMP_PTW=1,WD_SAMP_CNT32=1,WD_SAMP_COMB=1
OUT=$OUT/ab CONFIGS="per-sm=8 per-sm=8,WD_SAMP_PTW=1 per-sm=8,WD_SAMP_CNT32=1 per-sm=8,WD_SAMP_COMB=1 per-sm=8,$ALL per-sm=8,WD_SAMP_ROUNDS=1,$ALL per-sm=7 per-sm=7,$ALL" STEPS=auto DEPTHS="2000 2300" ROUNDS=2 timeout 400 bash scripts/tabulate-ab 2>&1 | grep "^=="
for f in $OUT/ab/ab-*.txt; do
  echo "-- $f"
  sed -nE 's/^config "(.*)":$/\1/p; s/.*tabulation ([0-9.e]+) photons.*propagation to the modules ([0-9.e]+) .*tabulation \/ fast = ([0-9.]+).*/   \1 \2 \3/p' "$f"
done
tar czf $OUT/ab.tgz -C $OUT ab && rm -rf $OUT/ab
# ncu of the build with all three switches at 2000 m (the kernel text its lines refer to: the
# commit's kernel files with the switches, scripts/ncu-source-summary.py).
mkdir -p $OUT/prof
OUT=$OUT/prof CONFIG=per-sm=8,$ALL DEPTH=2000 timeout 150 bash scripts/tabulate-profile auto 2>&1 | grep -vE "^\s*$" | tail -14
tar czf $OUT/prof.tgz -C $OUT prof && rm -rf $OUT/prof
