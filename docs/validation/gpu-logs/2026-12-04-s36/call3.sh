#!/usr/bin/env bash
# session 36 call 3: the new default (end flags in the points' signs, the lean shared memory, 32
# photons a refill): the photon gpu-check, the A/B against session 35's default and against 9 and 10
# blocks a multiprocessor, and the rate at other depths (bench photon --tabulate --depth).
set -uo pipefail
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
t0=$SECONDS
timeout 330 .device/warpdrive gpu-check --domain photon --json $OUT/gpu-check.json > $OUT/gc.txt 2>&1
echo "== gpu-check rc $? in $((SECONDS - t0)) s"
grep -E "PASS|FAIL|passed|failed" $OUT/gc.txt | cut -c1-160 | tail -34
mkdir -p $OUT/ab $OUT/depth
# With the lean layout the shared memory no longer pushes 9 or 10 blocks a multiprocessor past
# the carveouts (9 x 22.2 kB with 32 a refill: 195 kB; 16 a refill: 9 x 16.8 = 152 kB, 10 x = 168 kB).
OUT=$OUT/ab CONFIGS="per-sm=8 per-sm=8,WD_SAMP_ENDBITS=0,WD_SAMP_LEAN_SMEM=0 per-sm=9 per-sm=9,WD_SAMP_JOBS=16 per-sm=10,WD_SAMP_JOBS=16" STEPS="auto 1" ROUNDS=2 timeout 240 bash scripts/tabulate-ab 2>&1 | grep "^=="
sed -E 's/.*(step [a-z0-9]+ round [0-9]+).*tabulation ([0-9.e]+) photons.*tabulation \/ fast = ([0-9.]+).*/\1 \2 \3/' $OUT/ab/summary.txt
for z in 1500 2300 2450; do
  t0=$SECONDS
  timeout 80 .device/warpdrive --force bench photon --device cuda --tabulate --depth $z --json $OUT/depth/d$z.json > $OUT/depth/d$z.txt 2>&1
  echo "== depth $z: rc $? in $((SECONDS - t0)) s"; grep -E "tabulation" $OUT/depth/d$z.txt | cut -c1-600
done
cd $OUT && tar czf call3.tgz ab depth gc.txt gpu-check.json && rm -rf ab depth gc.txt gpu-check.json
