#!/usr/bin/env bash
# session 27 call 2: ncu of the sums-only probe (issue #32) and of the fast propagation in three models (issue #29).
set -uo pipefail
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
t0=$SECONDS
mkdir -p $OUT/tab
OUT=$OUT/tab CONFIG=WD_SAMP_NOSQ=1 bash scripts/tabulate-profile 1 > $OUT/tab/log.txt 2>&1
echo "tab rc $? at $((SECONDS - t0)) s"; tail -20 $OUT/tab/log.txt | cut -c1-300
for ice in spice_3.2.1 spice_ftp-v3m spice_bfr-v2; do
  mkdir -p $OUT/prof-$ice
  OUT=$OUT/prof-$ice ICE=$ice bash scripts/photon-profile default > $OUT/prof-$ice/log.txt 2>&1
  echo "prof $ice rc $? at $((SECONDS - t0)) s"; grep -E "ns/photon|balanced|Registers|Achieved|Active Threads" $OUT/prof-$ice/log.txt | head -12 | cut -c1-250
  head -40 $OUT/prof-$ice/ncu-summary.txt
done
cd "$OUT" && tar czf c2.tgz tab prof-* && rm -rf tab prof-*
