#!/usr/bin/env bash
# The next session's first device call (written in session 38), after re-applying a04c62b's
# crates/photon/src/tabulate/gpu.rs (the host adding WD_SAMP_SHAPE for the table's grid; reverted
# because no device time was left to gpu-check it): the photon gpu-check with the shape compiled
# in by default (its sampled GPU = CPU rows run spheres for the cascade and cylinders for the muon
# segment), and the A/B at 2000 and 2300 m of the default against the runtime shape
# (WD_SAMP_SHAPE=0), then ncu of the default at the bench's 2000 m.
# Stage: WARPDRIVE_DATA=... bash scripts/stage-device; carry [".device"]; at most about 540 s (the timeouts).
set -uo pipefail
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
t0=$SECONDS
timeout 260 .device/warpdrive gpu-check --domain photon --json $OUT/gpu-check.json > $OUT/gc.txt 2>&1
echo "== gpu-check rc $? in $((SECONDS - t0)) s"
grep -E "PASS|FAIL|passed|failed" $OUT/gc.txt | cut -c1-200 | tail -34
mkdir -p $OUT/ab $OUT/prof
OUT=$OUT/ab CONFIGS="per-sm=8 per-sm=8,WD_SAMP_SHAPE=0" STEPS=auto DEPTHS="2000 2300" ROUNDS=2 timeout 120 bash scripts/tabulate-ab 2>&1 | grep "^=="
sed -E 's/.*(step [a-z0-9-]+ round [0-9]+).*tabulation ([0-9.e]+) photons.*propagation to the modules ([0-9.e]+) .*tabulation \/ fast = ([0-9.]+).*/\1 \2 \3 \4/' $OUT/ab/summary.txt
OUT=$OUT/prof DEPTH=2000 timeout 120 bash scripts/tabulate-profile auto 2>&1 | grep -vE "^\s*$" | tail -14
# (no archive: what ran comes back even if the call is cut short)
