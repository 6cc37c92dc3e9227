#!/usr/bin/env bash
# session 29 call 4: gpu-check photon and photon-twin at the session's last code (fast mode's 16-seed
# comparison against the exact precise build again).
set -uo pipefail
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0 WARPDRIVE_BIN=.device/warpdrive
B=.device/warpdrive
echo "commit $(cat .device/COMMIT)"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p $OUT/g
for d in photon photon-twin; do
  t0=$SECONDS
  $B gpu-check --domain $d --json $OUT/g/gc-$d.json > $OUT/g/gc-$d.txt 2>&1
  echo "== gpu-check $d rc $? in $((SECONDS - t0)) s"; grep -E "PASS|FAIL" $OUT/g/gc-$d.txt | cut -c1-200
done
grep -A1 -E "^(precise|exact|fast GPU vs exact|photon tabulate GPU rate)" $OUT/g/gc-photon.txt | cut -c1-300
cd $OUT && tar czf call4.tgz g && rm -rf g
