#!/usr/bin/env bash
# Session 24, call 2: issue #34's 2-core scaling, with CPU/wall per call, unbound workers against
# WARPDRIVE_BIND=cores; six processes on disjoint core pairs at once (21 pairs, 4e5 points).
set -uo pipefail
export WARPDRIVE_DATA=$PWD/.device/data WARPDRIVE_PROGRESS=0 WARPDRIVE=$PWD/.device/warpdrive
A=$PWD/.device/anchors
uptime
PAIRS=1 POINTS=1000 CORE=1 SCALING=2 scripts/cpu-anchors "$A" "$OUT/build" > "$OUT/build.log" 2>&1; tail -2 "$OUT/build.log"; rm -rf "$OUT/build"
for c in "2 3 free" "4 5 bound" "6 7 free" "8 9 bound" "10 11 free" "12 13 bound"; do
  set -- $c
  if [ "$3" = bound ]; then b=cores; else b=; fi
  WARPDRIVE_BIND=$b PAIRS=21 POINTS=400000 CORE=$1 SCALING=$2 scripts/cpu-anchors "$A" "$OUT/$3-$1-$2" > /dev/null 2>&1 &
done
wait
uptime
cd "$OUT"
for d in free-* bound-*; do echo "== $d"; sed -n "/warpdrive on 1 and 2/,\$p" "$d/log.txt" | grep -v "^JSON"; done > summary.txt
for d in free-* bound-*; do tar czf "$d.tgz" "$d" && rm -rf "$d"; done
sed "s/^ \{40,\}/   /" summary.txt
