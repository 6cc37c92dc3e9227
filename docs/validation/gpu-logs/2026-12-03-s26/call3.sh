#!/usr/bin/env bash
# session 26 call 3: WD_SAMP_SPLIT with paused photons carried into the next round (no per-chunk drains).
set -uo pipefail
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
mkdir -p $OUT/ab $OUT/nc
t0=$SECONDS
OUT=$OUT/ab CONFIGS="per-sm=8 WD_SAMP_SPLIT=1 WD_SAMP_SPLIT=2 WD_SAMP_SPLIT=2,WD_SAMP_ROUND_JOBS=1048576 WD_SAMP_SPLIT=2,WD_SAMP_BIN_MIN_BLOCKS=6" STEPS="1 5" ROUNDS=1 bash .device/tabulate-ab > $OUT/ab/log.txt 2>&1
echo "ab rc $? at $((SECONDS - t0)) s"; grep -o "tabulation [0-9.e]* photons/s with the sampled ([a-z0-9 ]*)" $OUT/ab/summary.txt
ncu --kernel-name regex:"sampled_(paths|bins)" --launch-skip 0 --launch-count 6 --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats --section InstructionStats --section MemoryWorkloadAnalysis \
  .device/warpdrive --force bench photon --device cuda --tabulate --config WD_SAMP_SPLIT=1 --json /tmp/n.json > $OUT/nc/ncu.txt 2>&1
grep -E "  sampled_(paths|bins)|Duration|Executed Instructions |Achieved Occ|Active Threads|DRAM Throughput|Compute \(SM\)|L1/TEX Hit|Mem Busy" $OUT/nc/ncu.txt | head -80
echo "done at $((SECONDS - t0)) s"
mkdir -p $OUT/gc
.device/warpdrive gpu-check --domain photon --json "$OUT/gc/gpu-check.json" > "$OUT/gc/gpu-check.txt" 2>&1; echo "gpu-check rc $? at $((SECONDS - t0)) s"
grep -E "FAIL" "$OUT/gc/gpu-check.txt" | cut -c1-140
grep -E "^photon tabulate sampled: job queue" -A1 "$OUT/gc/gpu-check.txt" | grep -o "WD_SAMP_SPLIT[^;]*" 
grep -E "^photon tabulate GPU rate" -A1 "$OUT/gc/gpu-check.txt" | grep -o "WD_SAMP_SPLIT[^;]*"
cd "$OUT" && tar czf c3.tgz ab nc gc && rm -rf ab nc gc
