#!/usr/bin/env bash
# session 32 call 3: issue #32's tabulation loop without its point machinery (WD_SAMP_PHYSICS,
# measurement only) against the default at Δ = 1 m, 2 m and 10 km (the floor); then the source
# profile of --precise (the exact twin) beside fast mode in spice_ftp-v3m, for issue #29's record.
set -uo pipefail
mkdir -p $OUT/ab $OUT/prof
OUT=$OUT/ab CONFIGS="per-sm=8 per-sm=8,WD_SAMP_PHYSICS=1" STEPS="1 2 10000" ROUNDS=1 bash scripts/tabulate-ab 2>&1 | tail -12
t0=$SECONDS
OUT=$OUT/prof ICE=spice_ftp-v3m PROFILE_CONFIGS="default default,twin" timeout 300 bash scripts/photon-profile default default,twin > $OUT/prof/log.txt 2>&1
echo "== profile rc $? in $((SECONDS - t0)) s"; tail -5 $OUT/prof/log.txt
ls -R $OUT/prof | head -30
cd $OUT && tar czf call3.tgz ab prof && rm -rf ab prof
