#!/usr/bin/env bash
# session 36 call 2: the photons' ends as their last points' signs (WD_SAMP_ENDBITS) and the lean
# shared memory (WD_SAMP_LEAN_SMEM: the warp's counters, no runs' arrays), with the exact Horner
# length and larger refills, two rounds in alternating order; then the photon gpu-check, whose
# batch-means row now requires both builds to give the default's integers and counts.
set -uo pipefail
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
mkdir -p $OUT/ab
B=per-sm=8
E=WD_SAMP_ENDBITS=1
L=WD_SAMP_LEAN_SMEM=1
A="$B,$E,$L,WD_SAMP_NANG=11"
OUT=$OUT/ab CONFIGS="$B $B,$L $B,$E $B,$E,$L $A $A,WD_SAMP_JOBS=16 $A,WD_SAMP_JOBS=32 $B,$L,WD_SAMP_JOBS=16" STEPS="auto" ROUNDS=2 timeout 250 bash scripts/tabulate-ab 2>&1 | grep "^=="
sed -E 's/.*(step [a-z0-9]+ round [0-9]+).*tabulation ([0-9.e]+) photons.*tabulation \/ fast = ([0-9.]+).*/\1 \2 \3/' $OUT/ab/summary.txt
t0=$SECONDS
timeout 330 .device/warpdrive gpu-check --domain photon --json $OUT/gpu-check.json > $OUT/gc.txt 2>&1
echo "== gpu-check rc $? in $((SECONDS - t0)) s"
grep -E "PASS|FAIL|passed|failed" $OUT/gc.txt | cut -c1-160 | tail -34
grep -E "batch means = |GPU rate" $OUT/gc.txt | grep -v "^Some" | cut -c1-1200
cd $OUT && tar czf call2.tgz ab gc.txt gpu-check.json && rm -rf ab gc.txt gpu-check.json
