#!/usr/bin/env bash
# session 26 call 2: the two-kernel tabulation (WD_SAMP_SPLIT) A/B, then gpu-check photon.
set -uo pipefail
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
mkdir -p $OUT/ab
t0=$SECONDS
OUT=$OUT/ab CONFIGS="per-sm=8 WD_SAMP_SPLIT=1 WD_SAMP_SPLIT=1,WD_SAMP_BIN_MIN_BLOCKS=6 per-sm=10,WD_SAMP_SPLIT=1" STEPS="1 5 segment" ROUNDS=1 bash .device/tabulate-ab > $OUT/ab/log.txt 2>&1
echo "ab rc $? at $((SECONDS - t0)) s"; cat $OUT/ab/summary.txt | cut -c1-400
grep -h -iE "photons/s" $OUT/ab/ab-*.txt | cut -c1-600 | head -20
mkdir -p $OUT/gc
.device/warpdrive gpu-check --domain photon --json "$OUT/gc/gpu-check.json" > "$OUT/gc/gpu-check.txt" 2>&1; echo "gpu-check rc $? at $((SECONDS - t0)) s"
grep -E "PASS|FAIL" "$OUT/gc/gpu-check.txt" | cut -c1-140
grep -E "job queue and split squares|rate >= 50|struct layout" -A1 "$OUT/gc/gpu-check.txt" | cut -c1-3000
mkdir -p $OUT/nc
ncu --kernel-name regex:"sampled_(paths|bins)" --launch-skip 4 --launch-count 4 --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats --section InstructionStats \
  .device/warpdrive --force bench photon --device cuda --tabulate --config WD_SAMP_SPLIT=1 --json /tmp/n.json > $OUT/nc/ncu.txt 2>&1
grep -E "sampled_(paths|bins)|Duration|Registers Per|Achieved Occ|Active Threads|Executed Instructions |Memory Throughput|Compute \(SM\)" $OUT/nc/ncu.txt | head -60
cd "$OUT" && tar czf c2.tgz ab gc nc && rm -rf ab gc nc
