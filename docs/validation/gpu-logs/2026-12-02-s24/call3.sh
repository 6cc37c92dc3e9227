#!/usr/bin/env bash
# Session 24, call 3: issue #34's 2-core scaling with ONE benchmark process alone on the host
# (calls 1-2 ran 3-6 at once; the slow medians recurred at the same table and time offset).
set -uo pipefail
export WARPDRIVE_DATA=$PWD/.device/data WARPDRIVE_PROGRESS=0 WARPDRIVE=$PWD/.device/warpdrive
A=$PWD/.device/anchors B=$PWD/.device/anchors/build
uptime
PAIRS=1 POINTS=1000 CORE=1 SCALING=2 scripts/cpu-anchors "$A" "$OUT/build" > "$OUT/build.log" 2>&1; tail -2 "$OUT/build.log"; rm -rf "$OUT/build"
export PYTHONPATH=$B/photospline LD_LIBRARY_PATH=$B/cfitsio/lib
uptime
taskset -c 8,9 .device/warpdrive bench spline --device cpu --against photospline --python python3 --cpu-points 400000 \
  --pairs 21 --threads 1,2 --json "$OUT/alone-8-9.json" --force > "$OUT/alone-8-9.log" 2>&1
uptime
sed "s/^ \{40,\}/   /" "$OUT/alone-8-9.log"
