#!/usr/bin/env bash
# session 26 call 1: the sampled kernel's floor (no points: Δ = 10 km) against the default and
# one point per segment; ncu of the floor.
set -uo pipefail
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
mkdir -p $OUT/c1
for s in 1 10000 1 10000; do
  .device/warpdrive --force bench photon --device cuda --tabulate --sample-step $s --json $OUT/c1/b-$s.json > $OUT/c1/b-$s.txt 2>&1
  echo "== $s"; grep -iE "photons/s|tabulat|segment|point" $OUT/c1/b-$s.txt | tail -8
done
ncu --kernel-name tabulate_sampled --launch-skip 2 --launch-count 1 --section SourceCounters \
    --section WarpStateStats --section LaunchStats --section Occupancy --section SpeedOfLight \
    --section InstructionStats -f -o /tmp/floor .device/warpdrive --force bench photon --device cuda --tabulate --sample-step 10000 --json /tmp/f.json > $OUT/c1/ncu-run.txt 2>&1
ncu -i /tmp/floor.ncu-rep --page details > $OUT/c1/ncu-details.txt 2>&1
ncu -i /tmp/floor.ncu-rep --page source --csv --print-source cuda,sass > $OUT/c1/src.csv 2>/dev/null; gzip $OUT/c1/src.csv
grep -E "Registers|Achieved Occupancy|Issued Ipc|Avg. Active Threads|Duration|Executed Instructions " $OUT/c1/ncu-details.txt | head
cd $OUT && tar czf c1.tgz c1 && rm -rf c1
