#!/usr/bin/env bash
# session 32 call 1: --precise with ln's quotient by a Newton reciprocal, the walk's exit as one division and
# sincos's 4t + ½ fused: every precise check bit for bit, and the cost.
set -uo pipefail
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
B=.device/warpdrive
echo "commit $(cat .device/COMMIT)"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p $OUT/c
run() { local name=$1; shift; local t0=$SECONDS; "$@" > "$OUT/c/$name.txt" 2>&1; echo "== $name rc $? in $((SECONDS - t0)) s"; }
T=default,twin
for m in spice_ftp-v3m spice_bfr-v2 spice_3.2.1; do
  run bench-$m $B --force bench photon --device cuda --workloads balanced --ice $WARPDRIVE_DATA/ice/$m \
    --config default --config $T --config $T,nvrtc:fmad --config default --config $T --json $OUT/c/bench-$m.json
  grep -E '^balanced' $OUT/c/bench-$m.txt
done
for d in photon-twin photon-flasher photon-hole; do
  run $d $B gpu-check --domain $d --json $OUT/c/$d.json
  grep -E "PASS|FAIL" $OUT/c/$d.txt | cut -c1-170
done
run mpmt bash scripts/photon-mpmt-check; tail -2 $OUT/c/mpmt.txt
run wavelengths bash scripts/photon-wavelength-check; grep -E "precise:|check:" $OUT/c/wavelengths.txt
printf 'TR 1 0 e 0 0 -400 180 0 0 300 0\n' > /tmp/small.f2k
run memcheck-precise compute-sanitizer --tool memcheck --error-exitcode 1 $B photon --device cuda --precise \
  --ice $WARPDRIVE_DATA/ice/spice_ftp-v3m --input /tmp/small.f2k --seed 3 -o /tmp/memcheck.parquet
tail -1 $OUT/c/memcheck-precise.txt
run gc-photon timeout $((400 - SECONDS)) $B gpu-check --domain photon --json $OUT/c/gc-photon.json
grep -E "PASS|FAIL" $OUT/c/gc-photon.txt | cut -c1-170
cd $OUT && tar czf call1.tgz c  # saved as call1-checks.tgz && rm -rf c
