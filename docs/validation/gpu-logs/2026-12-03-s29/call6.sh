#!/usr/bin/env bash
# session 29 call 6: the twin's emission in the kernel's arithmetic: precise = CPU in the three
# models, flashers, hole ice, multi-PMT modules, hit-line wavelengths.
set -uo pipefail
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0 WARPDRIVE_BIN=.device/warpdrive
B=.device/warpdrive
echo "commit $(cat .device/COMMIT)"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p $OUT/e
for d in photon-twin photon-flasher photon-hole; do
  t0=$SECONDS
  WARPDRIVE_CHECK_DUMP=$OUT/e/dump-$d $B gpu-check --domain $d --json $OUT/e/gc-$d.json > $OUT/e/gc-$d.txt 2>&1
  echo "== gpu-check $d rc $? in $((SECONDS - t0)) s"; grep -A1 -E "PASS|FAIL" $OUT/e/gc-$d.txt | grep -v '^Some' | cut -c1-170
done
for s in photon-mpmt-check photon-wavelength-check; do
  t0=$SECONDS; bash scripts/$s > $OUT/e/$s.txt 2>&1; echo "== $s rc $? in $((SECONDS - t0)) s"; grep -E 'same hit|precise:|check:' $OUT/e/$s.txt | cut -c1-200
done
for d in $OUT/e/dump-*/*.txt; do [ -f "$d" ] && head -c 100000 "$d" > "$d.h" && mv "$d.h" "$d"; done
cd $OUT && tar czf call6.tgz e && rm -rf e
