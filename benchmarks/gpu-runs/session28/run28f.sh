#!/usr/bin/env bash
# Session 28, call 6: the FP8-cache kernel with bulk copies: the overlap on and off, its profile.
cd "$(dirname "$0")/../../.."  # the repository root
tar -xJf gpu-pack/gpu-bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/gpu-bundle/lib PACELINE_SOURCE_DIR=$PWD PACELINE_HOME=$PWD
B=gpu-bundle; S=$OUT/f; mkdir -p $S
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $S/summary.txt
echo "commit $(cat $B/COMMIT)" | tee -a $S/summary.txt
for r in 1 2; do
  for ov in 0 1; do
    echo "== bench run $r PACELINE_PREFILL_OVERLAP=$ov" | tee -a $S/summary.txt
    PACELINE_PREFILL_OVERLAP=$ov PACELINE_PREFILL_BENCH=1 timeout 90 $B/cuda_tests --gtest_color=no \
      --gtest_filter='CudaPrefillAttentionBench.*' > $S/bench.txt 2>&1
    grep "prefill bench" $S/bench.txt | grep -E "wgmma  |wgmma, fp8" | tee -a $S/summary.txt
  done
done
OUT_DIR=$S/p COMPARE_ONLY=1 QUICK=1 PROFILE_PREFILL=fp8 timeout 300 scripts/gpu_check > $S/p.txt 2>&1
grep -vE "^== (commit|a card)" $S/p/summary.txt | tee -a $S/summary.txt
rm -f $S/p/prefill_ws_raw.csv; xz -9 $S/p/prefill_ws_sass.csv
echo "== done" | tee -a $S/summary.txt
tar -czf $OUT/f.tar.gz -C $OUT f
