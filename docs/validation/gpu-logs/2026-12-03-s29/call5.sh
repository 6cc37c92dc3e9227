#!/usr/bin/env bash
# session 29 call 5: launch shapes and register caps of precise mode (the twin) in the birefringent models.
set -uo pipefail
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
B=.device/warpdrive
echo "commit $(cat .device/COMMIT)"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p $OUT/s
T="default,twin"
for m in spice_ftp-v3m spice_bfr-v2; do
  $B --force bench photon --device cuda --workloads balanced --ice .device/data/ice/$m \
    --config default --config "$T" --config "$T,-WD_MIN_BLOCKS,WD_MIN_BLOCKS=3" --config "$T,block=128,-WD_MIN_BLOCKS,WD_MIN_BLOCKS=8" \
    --config "$T,per-sm=8" --config "$T,-WD_REFILL,WD_REFILL=4" --json $OUT/s/$m.json > $OUT/s/$m.txt 2>&1
  echo "== $m rc $?"; grep -E '^balanced' $OUT/s/$m.txt | awk '{print $2, $(NF-4), $(NF-3), $(NF-1), $NF}'
done
cd $OUT && tar czf call5.tgz s && rm -rf s
