#!/usr/bin/env bash
# Session 28, call 7 (binaries staged by hand as cuda_tests_v1, _v2, _v3 beside main's
# cuda_tests_old): the FP8 producer variants against main (fd5570c): v1 block numbers read a
# chunk ahead; v2 v1 + producer 56 / consumers 224 registers; v3 v2 + 64 registers, 8 keys a batch.
cd "$(dirname "$0")/../../.."  # the repository root
tar -xJf gpu-pack/gpu-bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/gpu-bundle/lib PACELINE_SOURCE_DIR=$PWD PACELINE_HOME=$PWD
B=gpu-bundle; S=$OUT/g; mkdir -p $S
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $S/summary.txt
for v in v1 v2 v3; do
  timeout 120 $B/cuda_tests_$v --gtest_color=no --gtest_filter='CudaPrefillAttention.*' > $S/tests_$v.txt 2>&1
  echo "tests $v rc $?" | tee -a $S/summary.txt
  grep -E "FAILED|Failure|differ" $S/tests_$v.txt | head -5 | tee -a $S/summary.txt
done
for r in 1 2; do
  for v in old v1 v2 v3; do
    echo "== bench run $r $v" | tee -a $S/summary.txt
    PACELINE_PREFILL_BENCH=1 timeout 90 $B/cuda_tests_$v --gtest_color=no \
      --gtest_filter='CudaPrefillAttentionBench.*' > $S/bench.txt 2>&1
    grep "prefill bench" $S/bench.txt | grep -E "wgmma, fp8 cache" | tee -a $S/summary.txt
  done
done
echo "== done" | tee -a $S/summary.txt
tar -czf $OUT/g.tar.gz -C $OUT g
