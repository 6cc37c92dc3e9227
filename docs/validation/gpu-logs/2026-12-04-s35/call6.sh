#!/usr/bin/env bash
# session 35 call 6: after the review clean-up (host side only: the estimator passed whole, Estimator::adaptive_step). The photon
# gpu-check (its checks only: the adaptive and the fixed 1 m comb against the CPU, the builds'
# comparisons at 1 m, the rate), then the default against the fixed 1 m and 2 m combs, two rounds.
set -uo pipefail
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
t0=$SECONDS
timeout 380 .device/warpdrive gpu-check --domain photon --json $OUT/gpu-check.json > $OUT/gc.txt 2>&1
echo "== gpu-check rc $? in $((SECONDS - t0)) s"
grep -E "PASS|FAIL|passed|failed" $OUT/gc.txt | cut -c1-160 | tail -34
grep -E "sampled GPU = |GPU rate" $OUT/gc.txt | grep -v "^Some" | cut -c1-900
mkdir -p $OUT/ab
OUT=$OUT/ab CONFIGS="per-sm=8" STEPS="auto 1 2" ROUNDS=2 timeout 150 bash scripts/tabulate-ab 2>&1 | grep "^=="
sed -E 's/.*(step [a-z0-9]+ round [0-9]+).*tabulation ([0-9.e]+) photons.*tabulation \/ fast = ([0-9.]+).*/\1 \2 \3/' $OUT/ab/summary.txt
cd $OUT && tar czf call6.tgz ab gc.txt gpu-check.json && rm -rf ab gc.txt gpu-check.json
