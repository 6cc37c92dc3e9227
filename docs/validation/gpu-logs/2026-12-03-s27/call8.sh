#!/usr/bin/env bash
# session 27 call 8: gpu-check photon at the final commit (the default kernels unchanged; WD_SAMP_NOSQ and WD_TWIN_MATH compiled in the doctor sets).
set -u
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
mkdir -p "$OUT/gc"
t0=$SECONDS
echo "commit $(cat .device/COMMIT)"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
.device/warpdrive gpu-check --domain photon --json "$OUT/gc/gpu-check.json" > "$OUT/gc/gpu-check.txt" 2>&1; echo "gpu-check rc $? at $((SECONDS - t0)) s"
grep -E "PASS|FAIL" "$OUT/gc/gpu-check.txt" | cut -c1-130
grep -E "^photon tabulate sampled: struct layout" -A1 "$OUT/gc/gpu-check.txt" | cut -c1-400
grep -E "^photon tabulate sampled: job queue" -A1 "$OUT/gc/gpu-check.txt" | grep -o "WD_SAMP_SPLIT[^;]*"
grep -E "^photon tabulate GPU rate" -A1 "$OUT/gc/gpu-check.txt" | grep -oE "tabulation [0-9.e]+ photons/s|WD_SAMP_SPLIT[^;]*"
cd "$OUT" && tar czf call8-gc.tgz gc && rm -rf gc
