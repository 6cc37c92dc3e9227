#!/usr/bin/env bash
# session 37's planned call 1 (to run first when a device machine is lent; supersedes session 36's
# call3.sh, which it contains): the photon gpu-check with the directional step and session 36's
# default; the A/B of the directional step (the default, WD_SAMP_ADAPT=2) against session 35's
# distance rule (WD_SAMP_ADAPT=1) and against session 35's whole default, at 2000 and 2300 m; the
# rate at 1500 and 2450 m (bench photon --tabulate --depth: the propagation at the same depth).
# Stage: WARPDRIVE_DATA=... bash scripts/stage-device; carry [".device"]; at most about 540 s (the timeouts).
set -uo pipefail
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
t0=$SECONDS
timeout 300 .device/warpdrive gpu-check --domain photon --json $OUT/gpu-check.json > $OUT/gc.txt 2>&1
echo "== gpu-check rc $? in $((SECONDS - t0)) s"
grep -E "PASS|FAIL|passed|failed" $OUT/gc.txt | cut -c1-200 | tail -34
mkdir -p $OUT/ab $OUT/depth
OUT=$OUT/ab CONFIGS="per-sm=8 per-sm=8,WD_SAMP_ADAPT=1 per-sm=8,WD_SAMP_ADAPT=1,WD_SAMP_ENDBITS=0,WD_SAMP_LEAN_SMEM=0" \
  STEPS=auto DEPTHS="2000 2300" ROUNDS=2 timeout 160 bash scripts/tabulate-ab 2>&1 | grep "^=="
sed -E 's/.*(step [a-z0-9-]+ round [0-9]+).*tabulation ([0-9.e]+) photons.*tabulation \/ fast = ([0-9.]+).*/\1 \2 \3/' $OUT/ab/summary.txt
for z in 1500 2450; do
  t0=$SECONDS
  timeout 40 .device/warpdrive --force bench photon --device cuda --tabulate --depth $z --json $OUT/depth/d$z.json > $OUT/depth/d$z.txt 2>&1
  echo "== depth $z: rc $? in $((SECONDS - t0)) s"; grep -E "tabulation" $OUT/depth/d$z.txt | cut -c1-600
done
cd $OUT && tar czf call1.tgz ab depth gc.txt gpu-check.json && rm -rf ab depth gc.txt gpu-check.json
