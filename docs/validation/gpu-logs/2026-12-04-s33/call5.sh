#!/usr/bin/env bash
# session 33 call 5: the source profile of today's default sampled kernel (the queue, WD_SAMP_LEAN)
# at Δ = 1 m, for the per-point breakdown beside the FIFO build's (call 2).
set -uo pipefail
mkdir -p $OUT/prof
OUT=$OUT/prof CONFIG="per-sm=8" timeout 200 bash scripts/tabulate-profile 1 > $OUT/prof/log.txt 2>&1
echo "== profile rc $?"; tail -14 $OUT/prof/log.txt
cd $OUT && tar czf call5.tgz prof && rm -rf prof
