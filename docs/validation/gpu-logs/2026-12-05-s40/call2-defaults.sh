#!/usr/bin/env bash
# Session 40's second call: call 1 showed all four switches with one round a step at 0.50-0.51 of
# the fast propagation at 2000 m (H100). The host now adds them by default (tabulate::gpu::
# RATE_SWITCHES, with_rate_switches); this call runs gpu-check's photon domain with them (its
# batch-means row requires each switch off, and all off with two rounds, to give the default's
# integers), then the A/B of the new default against session 39's (all five off) at 2000 and
# 2300 m, and the adaptive comb from 1.5 m with the new default.
# Stage from the working tree with the new defaults; carry [".device"]; at most about 500 s.
set -uo pipefail
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
t0=$SECONDS
timeout 280 .device/warpdrive gpu-check --domain photon --json $OUT/gpu-check.json > $OUT/gc.txt 2>&1
echo "== gpu-check rc $? in $((SECONDS - t0)) s"
grep -E "PASS|FAIL|passed|failed" $OUT/gc.txt | cut -c1-220 | tail -36
grep -E "rate >= 50|batch means" $OUT/gc.txt | head -4 | cut -c1-900
mkdir -p $OUT/ab
OLD=per-sm=8,WD_SAMP_PTW=0,WD_SAMP_CNT32=0,WD_SAMP_COMB=0,WD_SAMP_FULLWARP=0,WD_SAMP_ROUNDS=2
left=$((460 - SECONDS)); [ $left -gt 170 ] && left=170
OUT=$OUT/ab CONFIGS="per-sm=8 $OLD" STEPS="auto" DEPTHS="2000 2300" ROUNDS=2 timeout $left bash scripts/tabulate-ab 2>&1 | grep "^=="
left=$((500 - SECONDS))
if [ $left -ge 40 ]; then
  OUT=$OUT/ab CONFIGS="per-sm=8" STEPS="auto:1.5" DEPTHS="2000 2300" ROUNDS=1 timeout $left bash scripts/tabulate-ab 2>&1 | grep "^=="
fi
for f in $OUT/ab/ab-*.txt; do
  echo "-- $f"
  sed -nE 's/^config "(.*)":$/\1/p; s/.*tabulation ([0-9.e]+) photons.*propagation to the modules ([0-9.e]+) .*tabulation \/ fast = ([0-9.]+).*/   \1 \2 \3/p' "$f"
done
tar czf $OUT/ab.tgz -C $OUT ab && rm -rf $OUT/ab
