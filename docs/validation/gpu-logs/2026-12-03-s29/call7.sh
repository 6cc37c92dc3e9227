#!/usr/bin/env bash
# session 29 call 7: gpu-check photon at the last code (f330d50: the twin's emission in the kernel's arithmetic).
set -uo pipefail
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
B=.device/warpdrive
echo "commit $(cat .device/COMMIT)"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p $OUT/g
t0=$SECONDS
$B gpu-check --domain photon --json $OUT/g/gc-photon.json > $OUT/g/gc-photon.txt 2>&1
echo "== gpu-check photon rc $? in $((SECONDS - t0)) s"; grep -E "PASS|FAIL" $OUT/g/gc-photon.txt | cut -c1-150
grep -A1 -E "^(precise|exact|fast GPU vs exact)" $OUT/g/gc-photon.txt | grep -v '^--' | cut -c1-200
cd $OUT && tar czf call7.tgz g && rm -rf g
