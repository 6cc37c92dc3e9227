#!/usr/bin/env bash
# session 38's call 4: the kernel as kept (call 3's warp count of the photons' ends reverted; the
# queue as vectors by default; the directional step as one over the fastest rate): the photon
# gpu-check, and the A/B at 2000 and 2300 m of the default against two measurement builds: the
# grid's shape fixed at compile time (WD_SAMP_SHAPE=1, spheres), and that with the acceptance's
# Horner line at the model's 11 terms (WD_SAMP_ANGC_TERMS=11) — cut to fit the session's last
# ~400 s of device time.
# Stage: WARPDRIVE_DATA=... bash scripts/stage-device; carry [".device"]; at most about 380 s (the timeouts).
set -uo pipefail
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
t0=$SECONDS
timeout 260 .device/warpdrive gpu-check --domain photon --json $OUT/gpu-check.json > $OUT/gc.txt 2>&1
echo "== gpu-check rc $? in $((SECONDS - t0)) s"
grep -E "PASS|FAIL|passed|failed" $OUT/gc.txt | cut -c1-200 | tail -34
mkdir -p $OUT/ab
OUT=$OUT/ab CONFIGS="per-sm=8 per-sm=8,WD_SAMP_SHAPE=1 per-sm=8,WD_SAMP_SHAPE=1,WD_SAMP_ANGC_TERMS=11" STEPS=auto DEPTHS="2000 2300" ROUNDS=2 timeout 120 bash scripts/tabulate-ab 2>&1 | grep "^=="
sed -E 's/.*(step [a-z0-9-]+ round [0-9]+).*tabulation ([0-9.e]+) photons.*propagation to the modules ([0-9.e]+) .*tabulation \/ fast = ([0-9.]+).*/\1 \2 \3 \4/' $OUT/ab/summary.txt
# (no archive at the end: what ran comes back even if the call is cut short)
