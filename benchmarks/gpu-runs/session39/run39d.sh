#!/usr/bin/env bash
# Session 39: the FP8 decode kernel's block-table entries three turns ahead
# (PACELINE_DECODE_FP8_TABLE_LEAD=1, kDecodeTableLead) against one (main's default). Its bits test
# and the decode tests; the decode bench's FP8 rows (both leads and both copy paths in one
# process); the FP8 table rows at --max-num-seqs 64 with the lead 0 and 1 in turn, twice. About 5
# minutes. Results: $OUT/r39d.tar.gz.
RESULT=r39d
source "$(dirname "$0")/../common.sh"  # B, S, pack, log; the repository root
log "binaries of $(cat $B/COMMIT); $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader)"
kv=48G
[ "$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -n 1)" -lt 100000 ] && kv=39G
timeout 200 $B/cuda_tests --gtest_color=no \
  --gtest_filter='CudaDecodeAttention.*:*BatchInvariance*' >$S/tests.txt 2>&1
log "tests rc $?"
grep -E "^\[  +(FAILED|PASSED|OK)|tests? ran|Failure|decode fp8 table lead" $S/tests.txt | head -60 |
  tee -a $S/summary.txt
pack
log "decode bench, FP8 rows"
PACELINE_DECODE_BENCH=1 PACELINE_DECODE_BENCH_ONLY='1024,64;8192,16;32768,1;32768,16;131072,4' \
  timeout 200 $B/cuda_tests --gtest_color=no --gtest_filter='CudaDecodeAttentionBench.*' \
  >$S/bench.txt 2>&1
log "bench rc $?"
grep -E "^\[ bench" $S/bench.txt | grep -E "fp8|config" | tee -a $S/summary.txt
pack
check() {  # lead, then paceline check's arguments
  local lead=$1; shift
  log "PACELINE_DECODE_FP8_TABLE_LEAD=$lead paceline check $*"
  PACELINE_DECODE_FP8_TABLE_LEAD=$lead timeout 120 $B/paceline check --device cuda \
    --load-format dummy "$@" 2>&1 | grep -E '^\||^batch invariance|^error' | grep -v sampled |
    tee -a $S/summary.txt
  pack
}
for run in 1 2; do
  for lead in 0 1; do
    check $lead --model configs/models/qwen3-8b.json --kv-cache-memory $kv --kv-cache-dtype fp8 \
      --max-num-seqs 64 --timing --skip-invariance --decode-batches 1,16 --decode-context 32768 \
      --prefill-lengths 1024
    check $lead --model configs/models/qwen3-8b-yarn.json --kv-cache-memory $kv \
      --kv-cache-dtype fp8 --max-num-seqs 64 --timing --skip-invariance --decode-batches 4 \
      --decode-context 131071 --prefill-lengths 1024
  done
done
check 1 --model configs/models/qwen3-8b.json --kv-cache-memory 16G --kv-cache-dtype fp8 \
  --max-num-seqs 64
