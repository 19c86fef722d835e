#!/usr/bin/env bash
# Session 29, call 5: an FP8 stage's K and V released and published apart (A: the plain loop;
# A+ov: with FA3's overlap, PACELINE_PREFILL_OVERLAP=1) against 906b88d (B).
cd "$(dirname "$0")/../../.."  # the repository root
tar -xJf gpu-pack/gpu-bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/gpu-bundle/lib PACELINE_SOURCE_DIR=$PWD PACELINE_HOME=$PWD
B=gpu-bundle; S=$OUT/c; mkdir -p $S
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $S/summary.txt
echo "A $(cat $B/COMMIT) B $(cat $B/COMMIT_old)" | tee -a $S/summary.txt
ok=1
for ov in 0 1; do
  PACELINE_PREFILL_OVERLAP=$ov timeout 60 $B/cuda_tests --gtest_color=no \
    --gtest_filter='CudaPrefillAttention.*:CudaFp8PrefillAttention.*' > $S/tests_$ov.txt 2>&1
  echo "== tests, overlap $ov: rc $?" | tee -a $S/summary.txt
  grep -E "^\[  +(OK|FAILED)|PASSED|Failure|rms relative" $S/tests_$ov.txt | tee -a $S/summary.txt
  grep -q "PASSED" $S/tests_$ov.txt && ! grep -q FAILED $S/tests_$ov.txt || ok=0
done
if [ $ok = 1 ]; then
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
      --prefill-lengths 8192,32768 2>&1 | grep -E "^\| prefill|^error" | tee -a $S/summary.txt
  done
  for ov in 0 1; do
    echo "== A, overlap $ov: batch invariance, FP8 KV, Qwen3-1.7B" | tee -a $S/summary.txt
    PACELINE_PREFILL_OVERLAP=$ov timeout 120 $B/paceline check --device cuda \
      --model configs/models/qwen3-1.7b.json --load-format dummy --gpu-memory-utilization 0.5 \
      --kv-cache-dtype fp8 > $S/inv_$ov.txt 2>&1
    echo "rc $?" | tee -a $S/summary.txt
    grep -E "^batch invariance:|^error" $S/inv_$ov.txt | tee -a $S/summary.txt
  done
fi
echo "== done" | tee -a $S/summary.txt
tar -czf $OUT/c.tar.gz -C $OUT c
