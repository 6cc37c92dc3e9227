#!/usr/bin/env bash
# Session 24, call 1: issue #34's 2-core scaling on the GPU host, 21 pairs, with the long-call
# scaling and page-fault counts; three processes on disjoint core pairs, then bench spline.
set -uo pipefail
export WARPDRIVE_DATA=$PWD/.device/data WARPDRIVE_PROGRESS=0 WARPDRIVE=$PWD/.device/warpdrive
A=$PWD/.device/anchors
nproc; grep -m1 'model name' /proc/cpuinfo; cat /sys/devices/system/cpu/cpu8/topology/thread_siblings_list
uptime
# build photospline (and cfitsio) once, with a tiny run
PAIRS=1 POINTS=1000 CORE=1 SCALING=2 scripts/cpu-anchors "$A" "$OUT/build" > "$OUT/build.log" 2>&1; tail -3 "$OUT/build.log"
for c in "8 9" "12 13" "10 11"; do
  set -- $c
  PAIRS=21 POINTS=400000 CORE=$1 SCALING=$2 scripts/cpu-anchors "$A" "$OUT/cores$1-$2" > "$OUT/cores$1-$2.log" 2>&1 &
done
taskset -c 14,15 .device/warpdrive bench spline --device cpu --threads 1,2 --json "$OUT/bench-spline-14-15.json" > "$OUT/bench-spline-14-15.log" 2>&1
wait
uptime
cd "$OUT" && for d in cores*-*; do tar czf "$d.tgz" "$d" && rm -rf "$d"; done; tar czf build.tgz build && rm -rf build
grep -h "over 1\|machine itself\|^test\|^ems" "$OUT"/*.log | head -120
