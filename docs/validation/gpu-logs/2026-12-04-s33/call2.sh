#!/usr/bin/env bash
# session 33 call 2: where WD_SAMP_FIFO's time goes. Source-level ncu profiles (third launch,
# Δ = 1 m) of WD_SAMP_FIFO=2 and of the loop without points (WD_SAMP_PHYSICS=1), for the
# instructions and stalls a point adds when the physics runs at full lanes.
set -uo pipefail
for c in WD_SAMP_STEPWISE=1,WD_SAMP_FIFO=2 WD_SAMP_PHYSICS=1; do
  d=$OUT/prof-${c//[=,]/_}
  mkdir -p $d
  t0=$SECONDS
  OUT=$d CONFIG="per-sm=8,$c" timeout 250 bash scripts/tabulate-profile 1 > $d/log.txt 2>&1
  echo "== $c: rc $? in $((SECONDS - t0)) s"; tail -16 $d/log.txt
done
cd $OUT && tar czf call2.tgz prof-* && rm -rf prof-*
