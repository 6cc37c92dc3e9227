#!/usr/bin/env bash
# session 34 call 5: the final code. The photon gpu-check (its checks only; "sampled GPU = CPU"
# now also requires the runs' build against the CPU with the cells' own squares), then the
# source profile of the batch-means default at Δ = 1 m (where its time goes now).
set -uo pipefail
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
t0=$SECONDS
timeout 360 .device/warpdrive gpu-check --domain photon --json $OUT/gpu-check.json > $OUT/gc.txt 2>&1
echo "== gpu-check rc $? in $((SECONDS - t0)) s"
grep -E "PASS|FAIL|passed|failed" $OUT/gc.txt | cut -c1-160 | tail -34
mkdir -p $OUT/prof
OUT=$OUT/prof CONFIG="per-sm=8" timeout 200 bash scripts/tabulate-profile 1 > $OUT/prof/log.txt 2>&1
echo "== profile rc $?"; tail -14 $OUT/prof/log.txt
cd $OUT && tar czf call5.tgz gc.txt gpu-check.json prof && rm -rf gc.txt gpu-check.json prof
