#!/usr/bin/env bash
# Session 39, after run39a.sh on the same H200 (or alone): the FP8 decode kernel's bulk copies
# (PACELINE_DECODE_FP8_BULK) on the card where the kernel reads at 81% of the copy rate. The decode
# bench (FP8 rows, both copy paths in one process), then the FP8 table rows at --max-num-seqs 64
# with bulk 0 and 1 in turn, twice; then the bulk copies' bits test. About 6 minutes.
# Results: $OUT/r39c.tar.gz.
RESULT=r39c
source "$(dirname "$0")/../common.sh"  # B, S, pack, log; the repository root
log "binaries of $(cat $B/COMMIT); $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader)"
kv=48G
[ "$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -n 1)" -lt 100000 ] && kv=39G
log "decode bench, FP8 rows (threads' copies and bulk copies in one process)"
PACELINE_DECODE_BENCH=1 PACELINE_DECODE_BENCH_ONLY='8192,16;32768,1;32768,16;131072,4' \
  timeout 200 $B/cuda_tests --gtest_color=no --gtest_filter='CudaDecodeAttentionBench.*' \
  >$S/bench.txt 2>&1
log "bench rc $?"
grep -E "^\[ bench" $S/bench.txt | grep -i -E "fp8|e4m3" | tee -a $S/summary.txt
pack
for run in 1 2; do
  for bulk in 0 1; do
    check PACELINE_DECODE_FP8_BULK=$bulk -- --model configs/models/qwen3-8b.json \
      --kv-cache-memory $kv --kv-cache-dtype fp8 --max-num-seqs 64 --timing --skip-invariance \
      --decode-batches 1,16 --decode-context 32768 --prefill-lengths 1024
    check PACELINE_DECODE_FP8_BULK=$bulk -- --model configs/models/qwen3-8b-yarn.json \
      --kv-cache-memory $kv --kv-cache-dtype fp8 --max-num-seqs 64 --timing --skip-invariance \
      --decode-batches 4 --decode-context 131071 --prefill-lengths 1024
  done
done
timeout 120 $B/cuda_tests --gtest_color=no --gtest_filter='CudaDecodeAttention.Fp8Bulk*' \
  >$S/tests.txt 2>&1
log "bulk bits test rc $?"
grep -E "^\[  +(FAILED|PASSED|OK)|decode fp8 bulk" $S/tests.txt | tee -a $S/summary.txt
pack
