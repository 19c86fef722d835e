#!/usr/bin/env bash
# Session 39, the last device time (about 3 minutes of a run): run39d.sh cut to what an H100 can
# say. The bits tests of PACELINE_DECODE_FP8_TABLE_LEAD and PACELINE_DECODE_Q_NEXT; the decode
# bench at 1k x 64 and 32k x 16 (every switch side by side in one process); the bf16 1k steps
# (batches 1, 16, 64 at --max-num-seqs 64) with q next 0, 1, 0, 1. Results: $OUT/r39e.tar.gz.
RESULT=r39e
source "$(dirname "$0")/../common.sh"  # B, S, pack, log; the repository root
log "binaries of $(cat $B/COMMIT); $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader)"
timeout 100 $B/cuda_tests --gtest_color=no --gtest_filter='CudaDecodeAttention.Fp8TableLead*:CudaDecodeAttention.LoadingTheNextItemsQ*' \
  >$S/tests.txt 2>&1
log "tests rc $?"
grep -E "^\[  +(FAILED|PASSED|OK)|tests? ran|Failure" $S/tests.txt | tee -a $S/summary.txt
grep -E "^\[ decode" $S/tests.txt | awk '{n++; if ($0 !~ / 0 of /) bad++} END {print n " bits lines, " bad+0 " with elements differing"}' |
  tee -a $S/summary.txt
pack
log "decode bench"
PACELINE_DECODE_BENCH=1 PACELINE_DECODE_BENCH_ONLY='1024,64;32768,16' \
  timeout 60 $B/cuda_tests --gtest_color=no --gtest_filter='CudaDecodeAttentionBench.*' \
  >$S/bench.txt 2>&1
log "bench rc $?"
grep -E "^\[ bench" $S/bench.txt | tee -a $S/summary.txt
pack
CHECK_TIMEOUT=60
for qnext in 0 1 0 1; do
  check PACELINE_DECODE_Q_NEXT=$qnext -- --model configs/models/qwen3-8b.json \
    --kv-cache-memory 24G --max-num-seqs 64 --timing --skip-invariance --decode-batches 1,16,64 \
    --prefill-lengths 1024
done
