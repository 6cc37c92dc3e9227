#!/usr/bin/env bash
# session 28 call 3: issue #29, the precise emission (Philox, FP64 gamma) out of line (WD_NOINLINE_EMIT)
# in the twin candidates: does it recover what WD_FAST_GAMMA saves (register spills)?
set -uo pipefail
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
B=.device/warpdrive
mkdir -p $OUT/p
S7="default,precise,keep:WD_TILT_LUT,keep:WD_TILT2_LATTICE,keep:WD_BFR_TABLE,keep:WD_FAST_BFR,keep:WD_ISO_SCATTER,keep:WD_FAST_RNG,keep:WD_FAST_PHASE,WD_TWIN_MATH"
S10="$S7,keep:WD_FACTORED_ICE,keep:WD_BFR_WALK,keep:WD_FAST_UNIFORM"
for m in spice_3.2.1 spice_ftp-v3m spice_bfr-v2; do
  t0=$SECONDS
  args=(--config default --config "$S10,keep:WD_FAST_GAMMA,nvrtc:fmad" --config "$S10,nvrtc:fmad" --config "$S10,nvrtc:fmad,WD_NOINLINE_EMIT" --config "$S10,WD_NOINLINE_EMIT"
        --config "$S7,nvrtc:fmad,WD_NOINLINE_EMIT" --config "$S7,WD_NOINLINE_EMIT" --config "$S10,keep:WD_FAST_GAMMA,nvrtc:fmad,WD_NOINLINE_EMIT")
  $B --force bench photon --device cuda --workloads balanced --ice .device/data/ice/$m "${args[@]}" \
    --json $OUT/p/$m.json > $OUT/p/$m.txt 2>&1
  echo "== $m rc $? in $((SECONDS - t0)) s"; grep -E '^balanced' $OUT/p/$m.txt | awk '{print $2, $(NF-4), $(NF-3), $(NF-1), $NF}' | sed "s/$S10/S10/; s/$S7/S7/"
done
cd $OUT && tar czf c3.tgz p && rm -rf p
