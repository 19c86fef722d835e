#!/usr/bin/env bash
# Session 39: two switches of the decode attention against main's defaults, in one call.
# PACELINE_DECODE_FP8_TABLE_LEAD=1: the FP8 kernel's block-table entries three turns ahead;
# PACELINE_DECODE_Q_NEXT=1: a block's next item's q loaded during the current item's merge.
# Their bits tests and the batch-invariance ones; the decode bench (1k x 64, 32k x 16, 128k x 4:
# every switch side by side in one process); then steps at --max-num-seqs 64, each setting in turn:
# bf16 1k (batches 1, 16, 64) with q next 0 and 1, FP8 32k (1, 16) and 128k x 4 with (lead, q
# next) 0,0 / 1,0 / 1,1; batch invariance on Qwen3-8B with both on. About 6 minutes.
# Results: $OUT/r39d.tar.gz.
RESULT=r39d
source "$(dirname "$0")/../common.sh"  # B, S, pack, log; the repository root
log "binaries of $(cat $B/COMMIT); $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader)"
kv=48G
[ "$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -n 1)" -lt 100000 ] && kv=39G
timeout 150 $B/cuda_tests --gtest_color=no --gtest_filter='CudaDecodeAttention.Fp8TableLead*:CudaDecodeAttention.LoadingTheNextItemsQ*:CudaDecodeAttention.*BatchInvariant' \
  >$S/tests.txt 2>&1
log "tests rc $?"
grep -E "^\[  +(FAILED|PASSED|OK)|tests? ran|Failure|differ from" $S/tests.txt | head -90 |
  tee -a $S/summary.txt
pack
log "decode bench"
PACELINE_DECODE_BENCH=1 PACELINE_DECODE_BENCH_ONLY='1024,64;32768,16;131072,4' \
  timeout 150 $B/cuda_tests --gtest_color=no --gtest_filter='CudaDecodeAttentionBench.*' \
  >$S/bench.txt 2>&1
log "bench rc $?"
grep -E "^\[ bench" $S/bench.txt | tee -a $S/summary.txt
pack
CHECK_TIMEOUT=100
for qnext in 0 1; do
  check PACELINE_DECODE_Q_NEXT=$qnext -- --model configs/models/qwen3-8b.json \
    --kv-cache-memory $kv --max-num-seqs 64 --timing --skip-invariance --decode-batches 1,16,64 \
    --prefill-lengths 1024
done
for setting in "0 0" "1 0" "1 1"; do
  set -- $setting
  lead=(PACELINE_DECODE_FP8_TABLE_LEAD=$1 PACELINE_DECODE_Q_NEXT=$2)
  check "${lead[@]}" -- --model configs/models/qwen3-8b.json --kv-cache-memory $kv \
    --kv-cache-dtype fp8 --max-num-seqs 64 --timing --skip-invariance --decode-batches 1,16 \
    --decode-context 32768 --prefill-lengths 1024
  check "${lead[@]}" -- --model configs/models/qwen3-8b-yarn.json --kv-cache-memory $kv \
    --kv-cache-dtype fp8 --max-num-seqs 64 --timing --skip-invariance --decode-batches 4 \
    --decode-context 131071 --prefill-lengths 1024
done
check PACELINE_DECODE_FP8_TABLE_LEAD=1 PACELINE_DECODE_Q_NEXT=1 -- \
  --model configs/models/qwen3-8b.json --kv-cache-memory 16G --kv-cache-dtype fp8 --max-num-seqs 64
