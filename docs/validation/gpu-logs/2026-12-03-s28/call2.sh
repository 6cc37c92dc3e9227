#!/usr/bin/env bash
# session 28 call 2: issue #29, what the twin candidates cost: every fast-only switch + WD_TWIN_MATH
# (K), without contraction, and without each of the four switches the CPU fast path lacks.
set -uo pipefail
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
B=.device/warpdrive
mkdir -p $OUT/p
A="default,precise,keep:WD_TILT_LUT,keep:WD_TILT2_LATTICE,keep:WD_BFR_TABLE,keep:WD_FAST_BFR,keep:WD_ISO_SCATTER,keep:WD_FAST_RNG,keep:WD_FAST_PHASE,keep:WD_FACTORED_ICE,keep:WD_BFR_WALK,keep:WD_FAST_UNIFORM,keep:WD_FAST_GAMMA,WD_TWIN_MATH"
for m in spice_3.2.1 spice_ftp-v3m spice_bfr-v2; do
  t0=$SECONDS
  args=(--config default --config "$A" --config "$A,nvrtc:fmad")
  for s in WD_FACTORED_ICE WD_BFR_WALK WD_FAST_UNIFORM WD_FAST_GAMMA; do args+=(--config "$A,nvrtc:fmad,-$s"); done
  args+=(--config "$A,-WD_MIN_BLOCKS,WD_MIN_BLOCKS=4" --config "$A,nvrtc:fmad,-WD_MIN_BLOCKS,WD_MIN_BLOCKS=4" --config "$A,-WD_TILT_LUT")
  $B --force bench photon --device cuda --workloads balanced --ice .device/data/ice/$m "${args[@]}" \
    --json $OUT/p/$m.json > $OUT/p/$m.txt 2>&1
  echo "== $m rc $? in $((SECONDS - t0)) s"; grep -E '^balanced' $OUT/p/$m.txt | awk '{print $2, $(NF-4), $(NF-3), $(NF-1), $NF}' | sed "s/$A/A/"
done
cd $OUT && tar czf c2.tgz p && rm -rf p
