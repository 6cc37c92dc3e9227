#!/usr/bin/env bash
# session 31 call 4: --precise as the exact twin (no contraction, FMAs written out on both sides):
# every precise check, the cost against fast mode and the alternatives, in one call.
set -uo pipefail
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
B=.device/warpdrive
echo "commit $(cat .device/COMMIT)"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p $OUT/c
run() { local name=$1; shift; local t0=$SECONDS; "$@" > "$OUT/c/$name.txt" 2>&1; echo "== $name rc $? in $((SECONDS - t0)) s"; }
for d in photon-twin photon-flasher photon-hole; do
  run $d $B gpu-check --domain $d --json $OUT/c/$d.json
  grep -E "PASS|FAIL" $OUT/c/$d.txt | cut -c1-170
done
run mpmt bash scripts/photon-mpmt-check; tail -4 $OUT/c/mpmt.txt
run wavelengths bash scripts/photon-wavelength-check; tail -6 $OUT/c/wavelengths.txt
printf 'TR 1 0 e 0 0 -400 180 0 0 300 0\n' > /tmp/small.f2k
run memcheck-precise compute-sanitizer --tool memcheck --error-exitcode 1 $B photon --device cuda --precise \
  --ice $WARPDRIVE_DATA/ice/spice_ftp-v3m --input /tmp/small.f2k --seed 3 -o /tmp/memcheck.parquet
tail -2 $OUT/c/memcheck-precise.txt
T=default,twin
for m in spice_ftp-v3m spice_bfr-v2 spice_3.2.1; do
  run bench-$m $B --force bench photon --device cuda --workloads balanced --ice $WARPDRIVE_DATA/ice/$m \
    --config default --config $T --config $T,nvrtc:fmad --config $T,-WD_TWIN_FMA_GEOM,nvrtc:fmad \
    --config $T,WD_TWIN_FMA_MORE2 --config default --config $T --json $OUT/c/bench-$m.json
  grep -E '^balanced' $OUT/c/bench-$m.txt
done
# The whole photon domain last, with what time is left (the call's limit is 600 s).
run gc-photon timeout $((575 - SECONDS)) $B gpu-check --domain photon --json $OUT/c/gc-photon.json
grep -E "PASS|FAIL" $OUT/c/gc-photon.txt | cut -c1-170
cd $OUT && tar czf call4.tgz c && rm -rf c
