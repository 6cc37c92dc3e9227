#!/usr/bin/env bash
# session 33 call 7: after the lookup's clean-up (shared axis_step_bin, sampled_azimuth): the
# default against WD_SAMP_LEAN=0 at Δ = 1 m, two rounds in alternating order, then the photon
# gpu-check itself (its checks only: the same integers for every alternative, the rate check).
set -uo pipefail
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
mkdir -p $OUT/ab
OUT=$OUT/ab CONFIGS="per-sm=8 per-sm=8,WD_SAMP_LEAN=0" STEPS="1" ROUNDS=2 timeout 120 bash scripts/tabulate-ab 2>&1 | grep "^=="
sed -E 's/.*(step [0-9]+ round [0-9]+).*tabulation ([0-9.e]+) photons.*tabulation \/ fast = ([0-9.]+).*/\1 \2 \3/' $OUT/ab/summary.txt
t0=$SECONDS
timeout 330 .device/warpdrive gpu-check --domain photon --json $OUT/gpu-check.json > $OUT/gc.txt 2>&1
echo "== gpu-check rc $? in $((SECONDS - t0)) s"
grep -E "PASS|FAIL|passed|failed" $OUT/gc.txt | cut -c1-200 | tail -34
cd $OUT && tar czf call7.tgz ab gc.txt gpu-check.json && rm -rf ab gc.txt gpu-check.json
