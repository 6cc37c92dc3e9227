#!/usr/bin/env bash
# session 35 call 5: `photon tabulate --device cuda` of 2^24 photons of the 1 TeV cascade in
# spice_3.2.1 at three depths (default bins), the adaptive comb (the default) against the fixed
# 1 m comb: kernel seconds and points a photon, each twice in alternating order.
set -uo pipefail
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export WARPDRIVE_DATA=.device/data WARPDRIVE_PROGRESS=0
W=.device/warpdrive
mkdir -p $OUT/t
$W --force photon tabulate --device cuda --ice $WARPDRIVE_DATA/ice/spice_3.2.1 --photons 65536 -o /tmp/warm > /dev/null 2>&1
$W --force photon tabulate --device cuda --ice $WARPDRIVE_DATA/ice/spice_3.2.1 --photons 65536 --sample-step 1 -o /tmp/warm > /dev/null 2>&1
for depth in 1500 2000 2300; do
  for round in 1 2; do
    order="auto 1"; [ $round = 2 ] && order="1 auto"
    for s in $order; do
      o=$OUT/t/d$depth-s$s-r$round
      $W --force photon tabulate --device cuda --ice $WARPDRIVE_DATA/ice/spice_3.2.1 --depth $depth --photons 16777216 --sample-step $s -o $o > $o.log 2>&1
      k=$(python3 -c "import json;print(json.load(open('$o/run.json'))['kernel_seconds'])")
      p=$(python3 -c "import json;d=json.load(open('$o/summary.json'));print(d['sample_points']/d['photons_propagated'])")
      echo "depth $depth step $s round $round: kernel $k s, $(python3 -c "print(f'{16777216/$k:.3e}')") photons/s, $p points a photon"
      rm -rf $o/*.parquet
    done
  done
done
cd $OUT && tar czf call5.tgz t && rm -rf t
