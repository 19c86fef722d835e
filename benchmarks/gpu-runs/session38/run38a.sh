#!/usr/bin/env bash
# Session 38, first call: the small-M GEMM's L2 prefetch of its weights (PACELINE_GEMM_L2_PREFETCH,
# new, off by default) and the FP8 decode kernel's two switches (PACELINE_DECODE_FP8_KEY_PAIRS,
# on; PACELINE_DECODE_FP8_BULK, off), side by side. About 8 minutes:
#   1. the prefetch's bits test and the small-M GEMM's batch-invariance test;
#   2. decode steps at 1k (batches 1, 16, 64, bf16) with the prefetch at 0, 4 and 8 k-blocks, in
#      turn, twice; FP8 at 32k (batches 1, 16) at 0, 4 and 8, once;
#   3. batch invariance on Qwen3-8B with the prefetch at 8;
#   4. FP8 decode steps at 32k (batches 1, 16) for (key pairs, bulk) = (0, 0), (1, 0), (1, 1), in
#      turn, twice, and the decode bench's production FP8 rows at 32k x 16 and 128k x 4.
# Results: $OUT/r1.tar.gz.
RESULT=r1
source "$(dirname "$0")/../common.sh"  # B, S, pack, log; the repository root
log "binaries of $(cat $B/COMMIT); $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader)"
timeout 90 $B/cuda_tests --gtest_color=no \
  --gtest_filter='CudaGemmSmallM.L2PrefetchOfTheWeightsKeepsTheBits:CudaGemmSmallM.RowBitsDoNotDependOnTheBatch' \
  >$S/tests.txt 2>&1
log "tests rc $?"
grep -E "^\[  +(FAILED|PASSED|OK)|tests? ran|Failure" $S/tests.txt | head -20 | tee -a $S/summary.txt
pack
step() {  # the environment (NAME=VALUE ...), then --, then paceline check's arguments
  local env=()
  while [ "$1" != -- ]; do env+=("$1"); shift; done
  shift
  log "${env[*]} paceline $*"
  env "${env[@]}" timeout 75 $B/paceline check --device cuda --load-format dummy \
    --max-num-seqs 64 --timing --skip-invariance --model configs/models/qwen3-8b.json \
    --prefill-lengths 1024 "$@" 2>&1 | grep -E '^\| decode batch|^error' | grep -v sampled |
    tee -a $S/summary.txt
  pack
}
for run in 1 2; do
  for l2 in 0 4 8; do
    step PACELINE_GEMM_L2_PREFETCH=$l2 -- --kv-cache-memory 24G --decode-batches 1,16,64
  done
done
for l2 in 0 4 8; do
  step PACELINE_GEMM_L2_PREFETCH=$l2 -- --kv-cache-memory 48G --kv-cache-dtype fp8 \
    --decode-batches 1,16 --decode-context 32768
done
PACELINE_GEMM_L2_PREFETCH=8 timeout 90 $B/paceline check --device cuda \
  --model configs/models/qwen3-8b.json --load-format dummy --kv-cache-memory 16G \
  --max-num-seqs 64 2>&1 | grep -E "^batch invariance|^error" |
  sed "s/^/L2 prefetch 8, qwen3-8b: /" | tee -a $S/summary.txt
pack
for run in 1 2; do
  for kb in "0 0" "1 0" "1 1"; do
    set -- $kb
    step PACELINE_DECODE_FP8_KEY_PAIRS=$1 PACELINE_DECODE_FP8_BULK=$2 -- --kv-cache-memory 48G \
      --kv-cache-dtype fp8 --decode-batches 1,16 --decode-context 32768
  done
done
log "decode bench"
PACELINE_DECODE_BENCH=1 PACELINE_DECODE_BENCH_ONLY='32768,16;131072,4' timeout 100 \
  $B/cuda_tests --gtest_color=no --gtest_filter='CudaDecodeAttentionBench.*' 2>&1 |
  grep -E '^\[ bench \] \| [0-9]+ \| [0-9]+ \| fp8' | tee -a $S/summary.txt
pack
