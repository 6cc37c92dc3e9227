#!/usr/bin/env bash
# session 32 call 2: WD_CLEAR_BUDGET (the clearance carried along, opt-in): its cost in fast and
# precise mode, and gpu-check's comparison with the full collision search (same hits).
set -uo pipefail
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
B=.device/warpdrive
echo "commit $(cat .device/COMMIT)"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p $OUT/c
run() { local name=$1; shift; local t0=$SECONDS; "$@" > "$OUT/c/$name.txt" 2>&1; echo "== $name rc $? in $((SECONDS - t0)) s"; }
D=default; C=default,WD_CLEAR_BUDGET; T=default,twin; TC=default,twin,WD_CLEAR_BUDGET
for m in spice_3.2.1 spice_ftp-v3m spice_bfr-v2; do
  run bench-$m $B --force bench photon --device cuda --ice $WARPDRIVE_DATA/ice/$m \
    --config $D --config $C --config $T --config $TC --config $C --config $D --json $OUT/c/bench-$m.json
  grep -E '^(balanced|shuffled)' $OUT/c/bench-$m.txt
done
run photon-hole $B gpu-check --domain photon-hole --json $OUT/c/photon-hole.json
grep -E "PASS|FAIL" $OUT/c/photon-hole.txt | cut -c1-170
run gc-photon timeout $((420 - SECONDS)) $B gpu-check --domain photon --json $OUT/c/gc-photon.json
grep -E "PASS|FAIL" $OUT/c/gc-photon.txt | cut -c1-170
grep -A1 "clearance carried" $OUT/c/gc-photon.txt | cut -c1-600
cd $OUT && tar czf call2.tgz c  # saved as call2-budget.tgz && rm -rf c
