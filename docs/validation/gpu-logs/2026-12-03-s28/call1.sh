#!/usr/bin/env bash
# session 28 call 1: issue #29, how closely GPU builds follow the CPU fast path photon by photon
# (gpu-check --domain photon-twin), and what the candidate twins cost (bench photon).
set -uo pipefail
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
B=.device/warpdrive
mkdir -p $OUT/p
t0=$SECONDS
WARPDRIVE_CHECK_DUMP=$OUT/p/dump $B gpu-check --domain photon-twin --json $OUT/p/twin.json > $OUT/p/twin.txt 2>&1
echo "== twin rc $? in $((SECONDS - t0)) s"; grep -E "twin " $OUT/p/twin.txt | cut -c1-600
S7="default,precise,keep:WD_TILT_LUT,keep:WD_TILT2_LATTICE,keep:WD_BFR_TABLE,keep:WD_FAST_BFR,keep:WD_ISO_SCATTER,keep:WD_FAST_RNG,keep:WD_FAST_PHASE,WD_TWIN_MATH"
for m in spice_3.2.1 spice_ftp-v3m spice_bfr-v2; do
  t0=$SECONDS
  $B --force bench photon --device cuda --workloads balanced --ice .device/data/ice/$m --config default --config "$S7" \
    --config "$S7,nvrtc:fmad" --config "$S7,-WD_MIN_BLOCKS,WD_MIN_BLOCKS=4" --config "$S7,nvrtc:fmad,-WD_MIN_BLOCKS,WD_MIN_BLOCKS=4" \
    --config "$S7,nvrtc:fmad,-WD_MIN_BLOCKS" --config "default,precise" --config "default,precise,-WD_MIN_BLOCKS,WD_MIN_BLOCKS=4" \
    --json $OUT/p/$m.json > $OUT/p/$m.txt 2>&1
  echo "== $m rc $? in $((SECONDS - t0)) s"; grep -E '^balanced' $OUT/p/$m.txt | awk '{print $2, $(NF-4), $(NF-3), $(NF-1), $NF}' | sed 's/default,precise,keep:WD_TILT_LUT,keep:WD_TILT2_LATTICE,keep:WD_BFR_TABLE,keep:WD_FAST_BFR,keep:WD_ISO_SCATTER,keep:WD_FAST_RNG,keep:WD_FAST_PHASE,WD_TWIN_MATH/S7/'
done
cd $OUT && tar czf c1.tgz p && rm -rf p
