#!/usr/bin/env bash
# Session 38, when no H200 came: main's tree after the FP8 pair order's removal checked on any
# card: the decode attention's tests (bf16 and FP8 against the reference, bulk copies, batch
# invariance), the small-M GEMM's, the batch-invariance tests; then `paceline check` batch
# invariance on Qwen3-8B with an FP8 cache at --max-num-seqs 64 (the decode rows' production
# path) and with bf16 on Qwen3-1.7B. About 5 minutes. Results: $OUT/r5.tar.gz.
RESULT=r5
source "$(dirname "$0")/../common.sh"  # B, S, pack, log; the repository root
log "binaries of $(cat $B/COMMIT); $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader)"
timeout 300 $B/cuda_tests --gtest_color=no \
  --gtest_filter='CudaDecodeAttention.*:CudaGemmSmallM.*:*BatchInvariance*' >$S/tests.txt 2>&1
log "tests rc $?"
grep -E "^\[  +(FAILED|PASSED|OK)|tests? ran|Failure|decode fp8 bulk" $S/tests.txt | head -40 |
  tee -a $S/summary.txt
pack
timeout 100 $B/paceline check --device cuda --model configs/models/qwen3-8b.json --load-format dummy \
  --kv-cache-memory 16G --kv-cache-dtype fp8 --max-num-seqs 64 2>&1 |
  grep -E "^batch invariance|^error" | sed "s/^/fp8, qwen3-8b, mns 64: /" | tee -a $S/summary.txt
timeout 80 $B/paceline check --device cuda --model configs/models/qwen3-1.7b.json --load-format dummy \
  --gpu-memory-utilization 0.5 2>&1 | grep -E "^batch invariance|^error" |
  sed "s/^/bf16, qwen3-1.7b: /" | tee -a $S/summary.txt
pack
