set -u
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
mkdir -p "$OUT/ab" "$OUT/prof" "$OUT/gc"
t0=$SECONDS
CONFIGS="per-sm=8 WD_SAMP_STEPWISE=1 per-sm=6,WD_SAMP_STEPWISE=1 WD_SAMP_STEPWISE=1,WD_SAMP_STEP_POINTS=2 WD_SAMP_STEPWISE=1,WD_SAMP_JOBS=32" \
  STEPS="1 5 segment" ROUNDS=2 OUT="$OUT/ab" bash scripts/tabulate-ab
echo "ab done at $((SECONDS - t0)) s"
.device/warpdrive gpu-check --domain photon --json "$OUT/gc/gpu-check.json" > "$OUT/gc/gpu-check.txt" 2>&1; echo "gpu-check rc $? at $((SECONDS - t0)) s"
grep -E "tabulate|PASS|FAIL" "$OUT/gc/gpu-check.txt" | cut -c1-600 | tail -20
CONFIG=WD_SAMP_STEPWISE=1 OUT="$OUT/prof" timeout 240 bash scripts/tabulate-profile 1
echo "profile done at $((SECONDS - t0)) s"
cd "$OUT" && tar czf ab.tgz ab && tar czf prof.tgz prof && tar czf gc.tgz gc && rm -rf ab prof gc
