set -u
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
mkdir -p "$OUT/ab" "$OUT/prof" "$OUT/gc" "$OUT/prec"
t0=$SECONDS
CONFIGS="per-sm=8 WD_SAMP_SCAN=1 per-sm=6,WD_SAMP_SCAN=1 WD_SAMP_STEPWISE=1,WD_SAMP_QPOINT=1 WD_SAMP_ATAN=1 WD_SAMP_SCAN=1,WD_SAMP_ATAN=1" \
  STEPS="1 5" ROUNDS=2 OUT="$OUT/ab" bash scripts/tabulate-ab > /dev/null 2>&1
sed -E 's/warpdrive bench photon --tabulate on cuda:0 NVIDIA H200: 16777216 photons of a 1 TeV cascade at 2000 m .photon tabulate.s default bins.: //; s/; 0 photons tabulated.*//' "$OUT/ab/summary.txt" | cut -c1-200
echo "ab done at $((SECONDS - t0)) s"
.device/warpdrive gpu-check --domain photon --json "$OUT/gc/gpu-check.json" > "$OUT/gc/gpu-check.txt" 2>&1; echo "gpu-check rc $? at $((SECONDS - t0)) s"
grep -E "FAIL|same integers\) " -A1 "$OUT/gc/gpu-check.txt" | cut -c1-1500 | tail -8
timeout 330 bash scripts/precise-breakdown "$OUT/prec" > "$OUT/prec/rows.txt" 2>&1; echo "precise rc $? at $((SECONDS - t0)) s"
grep -E "ns|config" "$OUT/prec/rows.txt" | cut -c1-160 | head -80
CONFIG=WD_SAMP_SCAN=1 OUT="$OUT/prof" timeout 150 bash scripts/tabulate-profile 1 > "$OUT/prof/run.txt" 2>&1
echo "profile done at $((SECONDS - t0)) s"; tail -14 "$OUT/prof/run.txt"
cd "$OUT" && tar czf ab.tgz ab && tar czf prof.tgz prof && tar czf gc.tgz gc && tar czf prec.tgz prec && rm -rf ab prof gc prec
