#!/usr/bin/env bash
# session 34 call 2: where a square's cost lies. Call 1 found per-point squares (WD_SAMP_NOSQ=2)
# slower than the default's run squares. Against the default: the runs without any squares
# (CELLSQ=0,SPSQ=0), the spatial squares spread over 8 words (SQREP=8: contention), integer
# squares (ISQ=1: arithmetic), and the per-point squares with each (NOSQ=2); Δ = 1 m and 2 m,
# two rounds in alternating order.
set -uo pipefail
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
mkdir -p $OUT/ab
OUT=$OUT/ab CONFIGS="per-sm=8 per-sm=8,WD_SAMP_CELLSQ=0,WD_SAMP_SPSQ=0 per-sm=8,WD_SAMP_CELLSQ=0,WD_SAMP_SQREP=8 per-sm=8,WD_SAMP_ISQ=1 per-sm=8,WD_SAMP_NOSQ=2 per-sm=8,WD_SAMP_NOSQ=2,WD_SAMP_CELLSQ=0,WD_SAMP_SQREP=8 per-sm=8,WD_SAMP_NOSQ=2,WD_SAMP_ISQ=1" STEPS="1 2" ROUNDS=2 timeout 500 bash scripts/tabulate-ab 2>&1 | grep "^=="
sed -E 's/.*(step [0-9]+ round [0-9]+).*tabulation ([0-9.e]+) photons.*tabulation \/ fast = ([0-9.]+).*/\1 \2 \3/' $OUT/ab/summary.txt
cd $OUT && tar czf call2.tgz ab && rm -rf ab
