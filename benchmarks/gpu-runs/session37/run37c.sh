#!/usr/bin/env bash
# Session 37, the call after run37b.sh on the same warm H100 (its commands, as they were typed):
# the tests run37b.sh's 200-second limit cut off (the FP8 key-pair batch invariance, the small-M
# GEMM's and SwiGLU's), then decode steps at 1k (batches 16 and 64) without and with wide blocks
# (PACELINE_GEMM_WIDE, removed after this run), in turn, twice, and batch invariance with them on.
# The bundle of 0778043. Results: $OUT/r3/tests.txt and the output.
RESULT=r3
source "$(dirname "$0")/../common.sh"  # B, S, pack, log; the repository root
timeout 150 $B/cuda_tests --gtest_color=no \
  --gtest_filter='CudaDecodeAttention.Fp8KeyPairRowsAreBatchInvariant:CudaGemmSmallM*:CudaSwiglu.*' \
  >$S/tests.txt 2>&1
echo "tests rc $?"
grep -E "^\[  +(FAILED|PASSED)|tests? ran|Failure" $S/tests.txt | head
for w in 0 1 0 1; do
  echo "== wide $w"
  PACELINE_GEMM_WIDE=$w timeout 60 $B/paceline check --device cuda --load-format dummy \
    --max-num-seqs 64 --timing --skip-invariance --model configs/models/qwen3-8b.json \
    --prefill-lengths 1024 --kv-cache-memory 24G --decode-batches 16,64 2>&1 |
    grep -E '^\| decode batch|^error' | grep -v sampled
done
PACELINE_GEMM_WIDE=1 timeout 80 $B/paceline check --device cuda --model configs/models/qwen3-8b.json \
  --load-format dummy --kv-cache-memory 16G --max-num-seqs 64 2>&1 | grep -E "^batch invariance|^error"
