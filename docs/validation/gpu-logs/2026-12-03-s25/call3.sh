set -u
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
mkdir -p "$OUT/gc"
t0=$SECONDS
.device/warpdrive gpu-check --domain photon --json "$OUT/gc/gpu-check.json" > "$OUT/gc/gpu-check.txt" 2>&1; echo "gpu-check rc $? at $((SECONDS - t0)) s"
grep -E "PASS|FAIL" "$OUT/gc/gpu-check.txt" | cut -c1-120
grep -E "job queue and split squares|rate >= 50" -A1 "$OUT/gc/gpu-check.txt" | cut -c1-3000
cd "$OUT" && tar czf gc.tgz gc && rm -rf gc
