#!/usr/bin/env bash
# session 29 call 3: photon-wavelength-check with hits matched within 0.01 ns (not by 0.01 ns bins);
# the cost of --precise (default,twin = gpu::precise_options) against fast mode, repeated.
set -uo pipefail
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0 WARPDRIVE_BIN=.device/warpdrive
B=.device/warpdrive
echo "binary $(cat .device/COMMIT), scripts $(git rev-parse --short HEAD 2>/dev/null)"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p $OUT/w
t0=$SECONDS; bash scripts/photon-wavelength-check > $OUT/w/wl.txt 2>&1; echo "== photon-wavelength-check rc $? in $((SECONDS - t0)) s"; grep -E 'precise:|check:|distinct' $OUT/w/wl.txt
for m in spice_3.2.1 spice_ftp-v3m spice_bfr-v2; do
  $B --force bench photon --device cuda --workloads balanced --ice .device/data/ice/$m \
    --config default --config default,twin --config default --config default,twin --json $OUT/w/$m.json > $OUT/w/$m.txt 2>&1
  echo "== $m rc $?"; grep -E '^balanced' $OUT/w/$m.txt | awk '{print $2, $(NF-4), $(NF-3), $(NF-1), $NF}'
done
cd $OUT && tar czf call3.tgz w && rm -rf w
