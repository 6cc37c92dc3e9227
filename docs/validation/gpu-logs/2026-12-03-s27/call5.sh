#!/usr/bin/env bash
# session 27 call 5: issue #29, what IEEE division and square root cost in precise + every fast-only switch + contraction.
set -uo pipefail
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
B=.device/warpdrive
K321="default,precise,keep:WD_TILT_LUT,keep:WD_FACTORED_ICE,keep:WD_FAST_UNIFORM,keep:WD_FAST_GAMMA,keep:WD_FAST_RNG,keep:WD_FAST_PHASE,nvrtc:fmad"
KFTP="$K321,keep:WD_TILT2_LATTICE,keep:WD_ISO_SCATTER,keep:WD_BFR_TABLE,keep:WD_BFR_WALK,keep:WD_FAST_BFR"
mkdir -p $OUT/p
for m in spice_3.2.1 spice_ftp-v3m spice_bfr-v2; do
  K=$KFTP; [ $m = spice_3.2.1 ] && K=$K321
  t0=$SECONDS
  $B --force bench photon --device cuda --workloads balanced --ice .device/data/ice/$m --config default --config "$K" \
    --config "$K,nvrtc:fast-div" --config "$K,nvrtc:fast-sqrt" --config "$K,nvrtc:fast-div,nvrtc:fast-sqrt" \
    --config "$K,nvrtc:fast-div,nvrtc:fast-sqrt,nvrtc:ftz,nvrtc:fast-math" --json $OUT/p/$m.json > $OUT/p/$m.txt 2>&1
  echo "== $m rc $? in $((SECONDS - t0)) s"; grep -E '^balanced' $OUT/p/$m.txt | awk '{print $(NF-4), $(NF-3), $(NF-1), $NF}'
done
cd $OUT && tar czf c5.tgz p && rm -rf p
