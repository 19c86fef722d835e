#!/usr/bin/env bash
# Session 38 on an H200, when too little device time was left for the whole `scripts/gpu_check`
# and run38c.sh both: issue 14's table (the step commands of `scripts/gpu_check` at
# --max-num-seqs 64, as in session 32's table) with the FP8 rows under bulk copies
# (PACELINE_DECODE_FP8_BULK) 0 and 1 in turn, twice; then the decode attention's FP8 and
# batch-invariance tests and the small-M GEMM's. About 7 minutes. Results: $OUT/r4.tar.gz.
RESULT=r4
source "$(dirname "$0")/../common.sh"  # B, S, pack, log; the repository root
log "binaries of $(cat $B/COMMIT); $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader)"
check() {  # the environment (NAME=VALUE ...), then --, then paceline check's arguments
  local env=()
  while [ "$1" != -- ]; do env+=("$1"); shift; done
  shift
  log "${env[*]} paceline check $*"
  env "${env[@]}" timeout 120 $B/paceline check --device cuda --load-format dummy "$@" 2>&1 |
    grep -E '^\||^batch invariance|^error' | grep -v sampled | tee -a $S/summary.txt
  pack
}
check -- --model configs/models/qwen3-8b.json --kv-cache-memory 48G --max-num-seqs 64 --timing \
  --decode-batches 1,16,64 --prefill-lengths 1024
for run in 1 2; do
  for bulk in 0 1; do
    check PACELINE_DECODE_FP8_BULK=$bulk -- --model configs/models/qwen3-8b.json \
      --kv-cache-memory 48G --kv-cache-dtype fp8 --max-num-seqs 64 --timing --skip-invariance \
      --decode-batches 1,16 --decode-context 32768 --prefill-lengths 1024
    check PACELINE_DECODE_FP8_BULK=$bulk -- --model configs/models/qwen3-8b-yarn.json \
      --kv-cache-memory 48G --kv-cache-dtype fp8 --max-num-seqs 64 --timing --skip-invariance \
      --decode-batches 4 --decode-context 131071 --prefill-lengths 1024
  done
done
check -- --model configs/models/qwen3-8b.json --kv-cache-memory 80G --max-num-seqs 64 --timing \
  --skip-invariance --decode-batches 1,16 --decode-context 32768 --prefill-lengths 1024
check -- --model configs/models/qwen3-8b.json --kv-cache-memory 48G --timing --skip-invariance \
  --mixed-chunk 2048 --decode-batches 1 --prefill-lengths 8192,32768
timeout 150 $B/cuda_tests --gtest_color=no --gtest_filter='CudaDecodeAttention.Fp8Bulk*:CudaDecodeAttention.*RowsAreBatchInvariant:CudaDecodeAttention.Fp8CacheMatchesTheReferenceWithOtherSplitPlans:CudaGemmSmallM.*' \
  >$S/tests.txt 2>&1
log "tests rc $?"
grep -E "^\[  +(FAILED|PASSED|OK)|tests? ran|Failure|decode fp8 bulk" $S/tests.txt | head -30 |
  tee -a $S/summary.txt
pack
