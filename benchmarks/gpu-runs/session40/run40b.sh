#!/usr/bin/env bash
# Session 40, second call: the two-rank executor graph test after its fix (capture sizes up to
# 16), and the q-next bits test that run39d.sh's 150 s left unfinished. Results: $OUT/r40b.tar.gz.
RESULT=r40b
source "$(dirname "$0")/../common.sh"  # B, S, pack, log; the repository root
log "binaries of $(cat $B/COMMIT); $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader)"
timeout 120 $B/cuda_tests --gtest_color=no --gtest_filter='*CudaTensorParallel*' >$S/tp.txt 2>&1
log "tensor-parallel tests rc $?"
grep -E "^\[  +(FAILED|PASSED|OK)|Failure|tensor parallel" $S/tp.txt | tee -a $S/summary.txt
pack
timeout 240 $B/cuda_tests --gtest_color=no \
  --gtest_filter='CudaDecodeAttention.LoadingTheNextItemsQ*' >$S/qnext.txt 2>&1
log "q-next bits test rc $?"
grep -E "^\[  +(FAILED|PASSED|OK)|Failure|differ" $S/qnext.txt | tail -30 | tee -a $S/summary.txt
pack
