#!/usr/bin/env bash
# session 29 call 2: --precise is now the precise twin. The device checks that compare precise mode
# with the CPU (gpu-check photon, photon-hole, photon-flasher, scripts/photon-mpmt-check,
# scripts/photon-wavelength-check), compute-sanitizer on a precise birefringent run, and a
# --precise CLI run cold (NVRTC) and warm.
set -uo pipefail
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0 WARPDRIVE_BIN=.device/warpdrive
B=.device/warpdrive
echo "commit $(cat .device/COMMIT)"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p $OUT/g
for d in photon photon-hole photon-flasher photon-twin; do
  t0=$SECONDS
  $B gpu-check --domain $d --json $OUT/g/gc-$d.json > $OUT/g/gc-$d.txt 2>&1
  echo "== gpu-check $d rc $? in $((SECONDS - t0)) s"; grep -E "PASS|FAIL" $OUT/g/gc-$d.txt | cut -c1-240
done
grep -E "precise|rate" $OUT/g/gc-photon.txt | grep -v '^Some' | cut -c1-300 | head -30
for s in photon-mpmt-check photon-wavelength-check; do
  t0=$SECONDS; bash scripts/$s > $OUT/g/$s.txt 2>&1; echo "== $s rc $? in $((SECONDS - t0)) s"; tail -6 $OUT/g/$s.txt | cut -c1-300
done
printf 'TR 1 0 e 0 0 -400 180 0 0 300 0\n' > /tmp/small.f2k
compute-sanitizer --tool memcheck --error-exitcode 1 $B photon --device cuda --precise --ice .device/data/ice/spice_ftp-v3m \
  --input /tmp/small.f2k --seed 3 -o /tmp/memcheck-ftp-precise.parquet > $OUT/g/memcheck.txt 2>&1; echo "== memcheck precise ftp rc $?"; tail -3 $OUT/g/memcheck.txt
for k in cold warm; do
  t0=$SECONDS
  $B --force photon --device cuda --precise --ice .device/data/ice/spice_bfr-v2 --input .device/data/reference/ppc_h100_2026/input_cascade_10TeV.f2k \
    --seed 5 -o /tmp/p-$k.parquet > $OUT/g/precise-$k.txt 2>&1
  echo "== photon --precise ($k) rc $? in $((SECONDS - t0)) s"; tail -4 $OUT/g/precise-$k.txt | cut -c1-200
done
cd $OUT && tar czf call2.tgz g && rm -rf g
