#!/usr/bin/env bash
# session 31 call 3 (binary eeaf544 + GPU-side measurement switches WD_TWIN_RSQRT, WD_TWIN_FMA_MORE,
# since folded into WD_TWIN_FMA_GEOM): what Newton's 1/sqrt and more explicit FMAs save.
G=default,twin,-nvrtc:fmad,WD_TWIN_FMA_GEOM; R=$G,WD_TWIN_RSQRT,WD_TWIN_FMA_MORE
export SWEEP_CONFIGS="default $G $G,WD_TWIN_RSQRT $G,WD_TWIN_FMA_MORE $R $R,block=128,-WD_MIN_BLOCKS,WD_MIN_BLOCKS=9 $R,block=192,-WD_MIN_BLOCKS,WD_MIN_BLOCKS=6 default,twin"
# (scripts/photon-twin-profile at that commit, since folded into scripts/photon-profile: NCU=0
# ICE="…" bash scripts/photon-profile $SWEEP_CONFIGS does the same sweep.)
OUT=$OUT/sw NCU=0 ICE="spice_ftp-v3m spice_bfr-v2 spice_3.2.1" bash scripts/photon-twin-profile
cd $OUT && tar czf sw.tgz sw && rm -rf sw
