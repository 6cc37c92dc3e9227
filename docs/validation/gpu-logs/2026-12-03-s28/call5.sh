#!/usr/bin/env bash
# session 28 call 5 (990e226): gpu-check photon at main's code; the out-of-reach test's cost and
# gain: CPU fast mode on one core with and without it (WARPDRIVE_NO_REACH=1), GPU with WD_REACH.
set -uo pipefail
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
B=.device/warpdrive
mkdir -p $OUT/p
t0=$SECONDS
$B gpu-check --domain photon --json $OUT/p/gc.json > $OUT/p/gc.txt 2>&1
echo "== gpu-check photon rc $? in $((SECONDS - t0)) s"; grep -E "PASS|FAIL" $OUT/p/gc.txt | cut -c1-200
grep -E "rate|photons/s" $OUT/p/gc.txt | tail -3 | cut -c1-300
lscpu | grep -E "Model name"
for m in spice_3.2.1 spice_ftp-v3m; do
  for rep in 1 2 3; do
    for r in on off; do
      if [ $r = off ]; then export WARPDRIVE_NO_REACH=1; else unset WARPDRIVE_NO_REACH; fi
      v=$(taskset -c 3 $B --force bench photon --device cpu --threads 1 --energy 10000 --ice .device/data/ice/$m --json $OUT/p/cpu-$m-$r-$rep.json 2>&1 | grep -E '^ +1 ' | awk '{print $4}')
      echo "cpu $m reach=$r ns/photon $v"
    done
  done
done
unset WARPDRIVE_NO_REACH
for m in spice_3.2.1 spice_ftp-v3m spice_bfr-v2; do
  $B --force bench photon --device cuda --workloads balanced --ice .device/data/ice/$m --config default --config default,WD_REACH \
    --config default --config default,WD_REACH --json $OUT/p/$m.json > $OUT/p/$m.txt 2>&1
  echo "== $m rc $?"; grep -E '^balanced' $OUT/p/$m.txt | awk '{print $1, $2, $(NF-4), $(NF-3), $(NF-1), $NF}'
done
cd $OUT && tar czf c5.tgz p && rm -rf p
