#!/usr/bin/env bash
# Session 28, call 4: the SM clock and power while the prefill attention runs alone (its bench)
# and inside 32k prefill steps.
cd "$(dirname "$0")/../../.."  # the repository root
tar -xJf gpu-pack/gpu-bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/gpu-bundle/lib PACELINE_SOURCE_DIR=$PWD PACELINE_HOME=$PWD
B=gpu-bundle; S=$OUT/d; mkdir -p $S
nvidia-smi --query-gpu=name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $S/summary.txt
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv,noheader -lms 20 > $S/clocks.csv 2>&1 &
smi=$!
sleep 1
echo "bench start $(date +%T.%N)" | tee -a $S/summary.txt
PACELINE_PREFILL_BENCH=1 timeout 90 $B/cuda_tests --gtest_color=no \
  --gtest_filter='CudaPrefillAttentionBench.*' > $S/bench.txt 2>&1
echo "bench end $(date +%T.%N)" | tee -a $S/summary.txt
grep "prefill bench" $S/bench.txt | grep -E "wgmma  " | tee -a $S/summary.txt
echo "check start $(date +%T.%N)" | tee -a $S/summary.txt
timeout 150 $B/paceline check --device cuda --model configs/models/qwen3-8b.json --load-format dummy \
  --kv-cache-memory 39G --timing --skip-invariance --decode-batches 1 --prefill-lengths 32768 \
  > $S/check.txt 2>&1
echo "check end $(date +%T.%N)" | tee -a $S/summary.txt
grep -E "^\| prefill" $S/check.txt | tee -a $S/summary.txt
kill $smi
# Busy samples (power above 300 W), their clocks.
awk -F', ' '{p=$4+0; if (p > 300) {n++; c+=$2+0; if ($2+0 < mn || mn == 0) mn=$2+0}} END {print "samples over 300 W:", n, "mean SM MHz", c/n, "min", mn}' $S/clocks.csv | tee -a $S/summary.txt
echo "== done" | tee -a $S/summary.txt
tar -czf $OUT/d.tar.gz -C $OUT d
