#!/usr/bin/env bash
# session 27 call 4: issue #29, a lower bound for a precise mode that twins the CPU fast path: precise with every
# fast-only switch, plus fast transcendentals (the CPU fast path's polynomials would cost at least as much),
# plus contraction (explicit FMAs on both sides), IEEE division and square root kept.
set -uo pipefail
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
B=.device/warpdrive
K321="default,precise,keep:WD_TILT_LUT,keep:WD_FACTORED_ICE,keep:WD_FAST_UNIFORM,keep:WD_FAST_GAMMA,keep:WD_FAST_RNG,keep:WD_FAST_PHASE"
KFTP="$K321,keep:WD_TILT2_LATTICE,keep:WD_ISO_SCATTER,keep:WD_BFR_TABLE,keep:WD_BFR_WALK,keep:WD_FAST_BFR"
mkdir -p $OUT/p
for m in spice_3.2.1 spice_ftp-v3m spice_bfr-v2; do
  K=$KFTP; [ $m = spice_3.2.1 ] && K=$K321
  t0=$SECONDS
  $B --force bench photon --device cuda --workloads balanced --ice .device/data/ice/$m --config default --config "$K" \
    --config "$K,nvrtc:fast-math" --config "$K,nvrtc:fmad" --config "$K,nvrtc:fast-math,nvrtc:fmad" \
    --config "$K,nvrtc:fast-math,nvrtc:fmad,nvrtc:ftz" --json $OUT/p/$m.json > $OUT/p/$m.txt 2>&1
  echo "== $m rc $? in $((SECONDS - t0)) s"; grep -E '^(workload|balanced)|rror' $OUT/p/$m.txt | cut -c1-260
done
cd $OUT && tar czf c4.tgz p && rm -rf p
