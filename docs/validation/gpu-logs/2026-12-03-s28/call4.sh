#!/usr/bin/env bash
# session 28 call 4: the out-of-reach test (WD_REACH, reach.rs): gpu-check photon (layout, precise
# CPU = GPU, fast vs PPC, tabulation), and bench photon with and without it in the three models.
set -uo pipefail
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
B=.device/warpdrive
mkdir -p $OUT/p
for m in spice_3.2.1 spice_ftp-v3m spice_bfr-v2; do
  t0=$SECONDS
  $B --force bench photon --device cuda --workloads balanced,shuffled --ice .device/data/ice/$m --config default --config default,-WD_REACH \
    --config default --config default,-WD_REACH --config default,precise --config default,precise,-WD_REACH \
    --json $OUT/p/$m.json > $OUT/p/$m.txt 2>&1
  echo "== $m rc $? in $((SECONDS - t0)) s"; grep -E '^(balanced|shuffled)' $OUT/p/$m.txt | awk '{print $1, $2, $(NF-4), $(NF-3), $(NF-1), $NF}'
done
t0=$SECONDS
$B gpu-check --domain photon --json $OUT/p/gc.json > $OUT/p/gc.txt 2>&1
echo "== gpu-check photon rc $? in $((SECONDS - t0)) s"; grep -E "PASS|FAIL" $OUT/p/gc.txt | cut -c1-220
cd $OUT && tar czf c4.tgz p && rm -rf p
