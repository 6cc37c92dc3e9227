#!/usr/bin/env bash
# session 38's call 3 (calls 1 and 2 were session 37's planned call1.sh / call2.sh, run at
# 118038c): the photon gpu-check with the session's kernel changes (the directional step as one
# over the fastest rate, the photons' ends counted by the warp, the queue as vectors by default);
# the A/B at 2000 and 2300 m of the default against each lane counting its photon's end
# (WD_SAMP_WARP_ENDS=0) and against session 37's queue and counting (also WD_SAMP_AOS=0); the
# rate at 1500 and 2450 m; ncu of the default at the bench's 2000 m.
# Stage: WARPDRIVE_DATA=... bash scripts/stage-device; carry [".device"]; at most about 590 s (the timeouts).
set -uo pipefail
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
t0=$SECONDS
timeout 260 .device/warpdrive gpu-check --domain photon --json $OUT/gpu-check.json > $OUT/gc.txt 2>&1
echo "== gpu-check rc $? in $((SECONDS - t0)) s"
grep -E "PASS|FAIL|passed|failed" $OUT/gc.txt | cut -c1-200 | tail -34
mkdir -p $OUT/ab $OUT/depth $OUT/prof
OUT=$OUT/ab CONFIGS="per-sm=8 per-sm=8,WD_SAMP_WARP_ENDS=0 per-sm=8,WD_SAMP_AOS=0,WD_SAMP_WARP_ENDS=0" \
  STEPS=auto DEPTHS="2000 2300" ROUNDS=2 timeout 150 bash scripts/tabulate-ab 2>&1 | grep "^=="
sed -E 's/.*(step [a-z0-9-]+ round [0-9]+).*tabulation ([0-9.e]+) photons.*propagation to the modules ([0-9.e]+) .*tabulation \/ fast = ([0-9.]+).*/\1 \2 \3 \4/' $OUT/ab/summary.txt
for z in 1500 2450; do
  t0=$SECONDS
  timeout 30 .device/warpdrive --force bench photon --device cuda --tabulate --depth $z --json $OUT/depth/d$z.json > $OUT/depth/d$z.txt 2>&1
  echo "== depth $z: rc $? in $((SECONDS - t0)) s"; grep -E "tabulation" $OUT/depth/d$z.txt | cut -c1-600
done
OUT=$OUT/prof DEPTH=2000 timeout 120 bash scripts/tabulate-profile auto 2>&1 | grep -vE "^\s*$" | tail -14
cd $OUT && tar czf call3.tgz ab depth prof gc.txt gpu-check.json && rm -rf ab depth prof gc.txt gpu-check.json
