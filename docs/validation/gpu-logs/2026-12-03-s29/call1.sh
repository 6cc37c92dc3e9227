#!/usr/bin/env bash
# session 29 call 1: issue #29, the precise twin (fast::twin on the CPU, --config default,twin on the
# GPU): photon-by-photon agreement (gpu-check --domain photon-twin) and its cost (bench photon).
set -uo pipefail
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
B=.device/warpdrive
echo "commit $(cat .device/COMMIT)"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p $OUT/t $OUT/p
t0=$SECONDS
WARPDRIVE_CHECK_DUMP=$OUT/t/dump $B gpu-check --domain photon-twin > $OUT/t/twin.txt 2>&1
echo "== twin check rc $? in $((SECONDS - t0)) s"; grep -E 'twin .*(PASS|FAIL|pass|fail)|photons with hits' $OUT/t/twin.txt | cut -c1-400
T="default,twin"
for m in spice_3.2.1 spice_ftp-v3m spice_bfr-v2; do
  t0=$SECONDS
  $B --force bench photon --device cuda --workloads balanced --ice .device/data/ice/$m \
    --config default --config "$T" --config "$T,-WD_MIN_BLOCKS,WD_MIN_BLOCKS=4" --config default,precise \
    --json $OUT/p/$m.json > $OUT/p/$m.txt 2>&1
  echo "== $m rc $? in $((SECONDS - t0)) s"; grep -E '^balanced' $OUT/p/$m.txt | awk '{print $2, $(NF-4), $(NF-3), $(NF-1), $NF}'
done
for d in $OUT/t/dump/*.txt; do [ -f "$d" ] && head -c 200000 "$d" > "$d.head" && mv "$d.head" "$d"; done
cd $OUT && tar czf call1.tgz t p && rm -rf t p
