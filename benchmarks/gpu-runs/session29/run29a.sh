#!/usr/bin/env bash
# Session 29, call 1: an FP8 cache's prefill attention on f16 tensor cores (A) against 5f754b3
# (B, widened to bf16); A with FA3's overlap as well (A+ov).
cd "$(dirname "$0")/../../.."  # the repository root
tar -xJf gpu-pack/gpu-bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/gpu-bundle/lib PACELINE_SOURCE_DIR=$PWD PACELINE_HOME=$PWD
B=gpu-bundle; S=$OUT/a; mkdir -p $S
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $S/summary.txt
echo "A $(cat $B/COMMIT) B $(cat $B/COMMIT_old)" | tee -a $S/summary.txt
timeout 240 $B/cuda_tests --gtest_color=no \
  --gtest_filter='CudaPrefillAttention.*:CudaFp8*:CudaBatchInvariance.*' > $S/tests.txt 2>&1
echo "tests rc $?" | tee -a $S/summary.txt
grep -E "^\[  +(OK|FAILED)|PASSED|Failure|differ|rms relative|fp8|FP8" $S/tests.txt | head -60 | tee -a $S/summary.txt
if grep -q "PASSED" $S/tests.txt && ! grep -q FAILED $S/tests.txt; then
  for r in 1 2; do
    for side in A B A+ov; do
      suffix=; [ $side = B ] && suffix=_old
      ov=; [ $side = A+ov ] && ov=1
      echo "== bench run $r $side" | tee -a $S/summary.txt
      env ${ov:+PACELINE_PREFILL_OVERLAP=1} PACELINE_PREFILL_BENCH=1 timeout 90 $B/cuda_tests$suffix \
        --gtest_color=no --gtest_filter='CudaPrefillAttentionBench.*' > $S/bench.txt 2>&1
      grep "prefill bench" $S/bench.txt | grep -E "wgmma  |wgmma, fp8" | tee -a $S/summary.txt
    done
  done
  for side in A B A+ov; do
    suffix=; [ $side = B ] && suffix=_old
    ov=; [ $side = A+ov ] && ov=1
    echo "== $side: FP8 KV prefill steps" | tee -a $S/summary.txt
    env ${ov:+PACELINE_PREFILL_OVERLAP=1} timeout 150 $B/paceline$suffix check --device cuda \
      --model configs/models/qwen3-8b.json --load-format dummy --kv-cache-memory 39G \
      --kv-cache-dtype fp8 --timing --skip-invariance --decode-batches 1 \
      --prefill-lengths 8192,32768 2>&1 | grep -E "^\| (prefill|decode batch 1, context)|^error" | tee -a $S/summary.txt
  done
  echo "== A: batch invariance, FP8 KV, Qwen3-1.7B" | tee -a $S/summary.txt
  timeout 200 $B/paceline check --device cuda --model configs/models/qwen3-1.7b.json --load-format dummy \
    --gpu-memory-utilization 0.5 --kv-cache-dtype fp8 > $S/inv.txt 2>&1
  echo "rc $?" | tee -a $S/summary.txt
  grep -E "^batch|^error" $S/inv.txt | tee -a $S/summary.txt
fi
echo "== done" | tee -a $S/summary.txt
tar -czf $OUT/a.tar.gz -C $OUT a
