#!/usr/bin/env bash
# Session 29, call 2: whole FP8 chunks widened without per-key tests (whole) against the f16
# kernel (A); the FP8 cache's accuracy tests on the fixtures, A and B (5f754b3).
cd "$(dirname "$0")/../../.."  # the repository root
tar -xJf gpu-pack/gpu-bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/gpu-bundle/lib PACELINE_SOURCE_DIR=$PWD PACELINE_HOME=$PWD
B=gpu-bundle; S=$OUT/b; mkdir -p $S
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $S/summary.txt
echo "A $(cat $B/COMMIT) B $(cat $B/COMMIT_old) whole $(cat $B/COMMIT_whole)" | tee -a $S/summary.txt
for side in A B; do
  suffix=; [ $side = B ] && suffix=_old
  timeout 200 $B/cuda_tests$suffix --gtest_color=no \
    --gtest_filter='*CudaFp8Kv*:*CudaFp8PrefillModel*:*CudaParity*' > $S/acc_$side.txt 2>&1
  echo "== $side accuracy tests rc $?" | tee -a $S/summary.txt
  grep -vE "^\[ RUN|^$|Note:|^\[----|^\[====" $S/acc_$side.txt | head -60 | tee -a $S/summary.txt
done
timeout 120 $B/cuda_tests_whole --gtest_color=no --gtest_filter='CudaPrefillAttention.*' > $S/tests_whole.txt 2>&1
echo "== whole tests rc $?" | tee -a $S/summary.txt
grep -E "^\[  +(OK|FAILED)|PASSED|Failure|rms relative" $S/tests_whole.txt | tee -a $S/summary.txt
if grep -q "PASSED" $S/tests_whole.txt && ! grep -q FAILED $S/tests_whole.txt; then
  for r in 1 2; do
    for side in A whole; do
      suffix=; [ $side = whole ] && suffix=_whole
      echo "== bench run $r $side" | tee -a $S/summary.txt
      PACELINE_PREFILL_BENCH=1 timeout 90 $B/cuda_tests$suffix \
        --gtest_color=no --gtest_filter='CudaPrefillAttentionBench.*' > $S/bench.txt 2>&1
      grep "prefill bench" $S/bench.txt | grep -E "wgmma, fp8 cache" | tee -a $S/summary.txt
    done
  done
  for side in A whole; do
    suffix=; [ $side = whole ] && suffix=_whole
    echo "== $side: FP8 KV prefill steps" | tee -a $S/summary.txt
    timeout 150 $B/paceline$suffix check --device cuda \
      --model configs/models/qwen3-8b.json --load-format dummy --kv-cache-memory 39G \
      --kv-cache-dtype fp8 --timing --skip-invariance --decode-batches 1 \
      --prefill-lengths 8192,32768 2>&1 | grep -E "^\| prefill|^error" | tee -a $S/summary.txt
  done
fi
echo "== done" | tee -a $S/summary.txt
tar -czf $OUT/b.tar.gz -C $OUT b
