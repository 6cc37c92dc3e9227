#!/usr/bin/env bash
# session 27 call 3: ncu of the fast propagation in the birefringent models (issue #29; call 2's runs of these hit an existing output).
set -uo pipefail
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
t0=$SECONDS
for ice in spice_ftp-v3m spice_bfr-v2; do
  mkdir -p $OUT/prof-$ice
  OUT=$OUT/prof-$ice ICE=$ice bash scripts/photon-profile default > $OUT/prof-$ice/log.txt 2>&1
  echo "prof $ice rc $? at $((SECONDS - t0)) s"; grep -E "balanced|Registers|Achieved" $OUT/prof-$ice/log.txt | head -6 | cut -c1-250
  head -36 $OUT/prof-$ice/ncu-summary.txt
done
cd "$OUT" && tar czf c3.tgz prof-* && rm -rf prof-*
