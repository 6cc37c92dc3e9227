#!/usr/bin/env bash
# Session 40's planned call 2 (after call1.sh, on the same warm machine and binary, built and staged from branch s39-switches, which has main's `auto:MIN`):
# 1. Issue #32: the tabulation's rate with the adaptive comb from 1 m (`auto`), 1.5 m and 2 m at
#    2000 and 2300 m, the default build and the one with the four switches of call 1, two rounds
#    in alternating order. With the CPU's comb noise (docs/spline.md "The adaptive comb's smallest
#    step, session 40") the measured times give R x T per smallest step: the default is chosen by
#    that, not by the rate.
# 2. Issue #29 on an H100 (its precise <= 2x fast was measured on an H200 only): `bench photon
#    --workloads balanced` in the three models, fast (`default`) and precise (`default,twin`).
# Staging: WARPDRIVE_DATA=... bash scripts/stage-device; carry [".device"]; about 500 s, each step
# bounded so that the whole stays under the call's 600 s.
set -uo pipefail
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
ALL=WD_SAMP_PTW=1,WD_SAMP_CNT32=1,WD_SAMP_COMB=1,WD_SAMP_FULLWARP=1
mkdir -p $OUT/ms
OUT=$OUT/ms CONFIGS="per-sm=8 per-sm=8,$ALL" STEPS="auto auto:1.5 auto:2" DEPTHS="2000 2300" ROUNDS=2 \
  timeout 330 bash scripts/tabulate-ab 2>&1 | grep "^=="
for f in $OUT/ms/ab-*.txt; do
  echo "-- $f"
  sed -nE 's/^config "(.*)":$/\1/p; s/.*tabulation ([0-9.e]+) photons.*propagation to the modules ([0-9.e]+) .*tabulation \/ fast = ([0-9.]+).*/   \1 \2 \3/p' "$f"
done
# R x T per build and smallest step (the CPU's R of this folder's comb-noise-r.csv, the rates above).
python3 scripts/tabulate-fom.py docs/validation/gpu-logs/2026-12-05-s40/comb-noise-r.csv $OUT/ms/ab-*.json | tee $OUT/ms/fom.txt
tar czf $OUT/ms.tgz -C $OUT ms && rm -rf $OUT/ms
mkdir -p $OUT/p29
for m in spice_3.2.1 spice_ftp-v3m spice_bfr-v2; do
  timeout 55 .device/warpdrive --force bench photon --device cuda --workloads balanced --config default \
    --config default,twin --ice "$WARPDRIVE_DATA/ice/$m" --json "$OUT/p29/$m.json" > "$OUT/p29/$m.txt" 2>&1
  echo "== $m: rc $?"; grep -E "^(config|balanced)|ns/photon" "$OUT/p29/$m.txt" | head -8
done
tar czf $OUT/p29.tgz -C $OUT p29 && rm -rf $OUT/p29
# 3. If time is left: ncu of the build with the four switches at 2000 m (scripts/ncu-source-summary.py
#    with the branch's kernel files reads it).
left=$((570 - SECONDS))
if [ $left -ge 60 ]; then
  mkdir -p $OUT/prof
  OUT=$OUT/prof CONFIG=per-sm=8,$ALL DEPTH=2000 timeout $left bash scripts/tabulate-profile auto 2>&1 | grep -vE "^\s*$" | tail -10
  tar czf $OUT/prof.tgz -C $OUT prof && rm -rf $OUT/prof
else
  echo "ncu skipped: $left s left"
fi
