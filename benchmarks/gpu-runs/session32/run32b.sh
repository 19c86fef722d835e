#!/usr/bin/env bash
# Session 32, first call: three sides staged in one bundle. A: the branch decode-item-start
# (the next item's q loaded before this item's merge, tile STAGES-1's rows from the prologue's
# pair); B: main (c1ee7d9); l2: main plus o_proj's weights prefetched into the L2 by the decode
# attention when its KV is small (branch l2-prefetch). Staged on the CPU machine:
# `BUILD_DIR=build-cuda scripts/gpu_check --stage` on main, `KEEP_OLD=1 ... --stage` on
# decode-item-start, `VARIANT=l2 ... --stage` on l2-prefetch; carry ["gpu-pack"].
# First the A/B: the decode kernel bench twice in turn (A's output hashes must equal B's), the
# decode steps at 1k (1 / 16 / 64) twice, each side in turn; then l2's own steps at 32k batch 1
# (bf16 and FP8, where the prefetch must stay off) with PACELINE_L2_PREFETCH=0 and unset, and
# l2's kernel timeline of decode 1 and 64 at 1k; then
# A's checks (decode attention tests, batch invariance, parity, FP8, Qwen3-1.7B invariance bf16
# and FP8) and l2's (parity, invariance, Qwen3-1.7B bf16 with the prefetch on); then the rest
# of A's GPU tests. Results packed into $OUT/c.tar.gz after each part.
cd "$(dirname "$0")/../../.."  # the repository root
tar -xJf gpu-pack/gpu-bundle.tar.xz
S=$OUT/c; mkdir -p $S/check
pack() { tar -czf $OUT/c.tar.gz -C $OUT c; }
PACELINE_DECODE_BENCH_ONLY='1024,1;1024,64;8192,16;32768,1;32768,16;131072,4' COMPARE_ONLY=1 QUICK=1 \
  AB=decode AB_STEPS=decode-1k,decode-1k VARIANTS=l2 OUT_DIR=$S/ab timeout 300 scripts/gpu_check
pack
export LD_LIBRARY_PATH=$PWD/gpu-bundle/lib PACELINE_SOURCE_DIR=$PWD PACELINE_HOME=$PWD
B=gpu-bundle
for kvd in auto fp8; do
  for l2 in 0 ""; do
    echo "== l2: KV $kvd, PACELINE_L2_PREFETCH='$l2', 32k batch 1" | tee -a $S/check/summary.txt
    PACELINE_L2_PREFETCH=$l2 timeout 100 $B/paceline_l2 check --device cuda --load-format dummy \
      --model configs/models/qwen3-8b.json --kv-cache-memory 39G --kv-cache-dtype $kvd \
      --max-num-seqs 64 --timing --skip-invariance --decode-batches 1 --decode-context 32768 \
      --prefill-lengths 1024 2>&1 | grep -E '^\||^error' | tee -a $S/check/summary.txt
  done
done
# Where a 1k decode step goes now, kernel by kernel (CUPTI; l2's binary, its prefetch on).
timeout 100 $B/paceline_l2 check --device cuda --load-format dummy --model configs/models/qwen3-8b.json \
  --kv-cache-memory 39G --max-num-seqs 64 --timing --skip-invariance --decode-batches 1,64 \
  --prefill-lengths 1024 --kernel-timeline $S/check/timeline_1k.md 2>&1 | grep -E '^\||^error' |
  sed 's/^/timeline run: /' | tee -a $S/check/summary.txt
pack
timeout 120 $B/cuda_tests --gtest_color=no \
  --gtest_filter='CudaDecodeAttention.*:*BatchInvariance*:*CudaParity*:*CudaFp8*:CudaKvLayout.*' \
  > $S/check/tests_decode.txt 2>&1
echo "== A decode tests rc $?" | tee -a $S/check/summary.txt
grep -E "^\[  +(FAILED|PASSED)|tests? ran" $S/check/tests_decode.txt | tee -a $S/check/summary.txt
for kv in auto fp8; do
  timeout 90 $B/paceline check --device cuda --model configs/models/qwen3-1.7b.json \
    --load-format dummy --gpu-memory-utilization 0.5 --kv-cache-dtype $kv 2>&1 |
    grep -E "^batch invariance|^error" | sed "s/^/A KV $kv: /" | tee -a $S/check/summary.txt
done
timeout 120 $B/cuda_tests_l2 --gtest_color=no --gtest_filter='*BatchInvariance*:*CudaParity*:CudaDecodeAttention.*' \
  > $S/check/tests_l2.txt 2>&1
echo "== l2 tests rc $?" | tee -a $S/check/summary.txt
grep -E "^\[  +(FAILED|PASSED)|tests? ran" $S/check/tests_l2.txt | tee -a $S/check/summary.txt
timeout 90 $B/paceline_l2 check --device cuda --model configs/models/qwen3-1.7b.json \
  --load-format dummy --gpu-memory-utilization 0.5 --max-num-seqs 64 2>&1 |
  grep -E "^batch invariance|^error" | sed "s/^/l2 KV auto mns 64: /" | tee -a $S/check/summary.txt
pack
timeout 240 $B/cuda_tests --gtest_color=no \
  --gtest_filter='-CudaDecodeAttention.*:*BatchInvariance*:*CudaParity*:*CudaFp8*:CudaKvLayout.*' \
  > $S/check/tests_rest.txt 2>&1
echo "== A other tests rc $?" | tee -a $S/check/summary.txt
grep -E "^\[  +(FAILED|PASSED)|tests? ran" $S/check/tests_rest.txt | tee -a $S/check/summary.txt
pack
