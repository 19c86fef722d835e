#!/usr/bin/env bash
# Session 38, on an H200 after the whole `scripts/gpu_check` (run first, detached, from the
# call before): the FP8 decode kernel's bulk copies (PACELINE_DECODE_FP8_BULK=1) against main's
# default. About 5 minutes: FP8 decode steps at 32k (batches 1, 16) and at 128k x 4 (YaRN), the
# two settings in turn, twice; then the decode bench's FP8 production rows at 32k x 16 and
# 128k x 4. Results: $OUT/r3.tar.gz.
RESULT=r3
source "$(dirname "$0")/../common.sh"  # B, S, pack, log; the repository root
log "binaries of $(cat $B/COMMIT); $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader)"
step() {  # PACELINE_DECODE_FP8_BULK's value, then paceline check's arguments
  local bulk=$1; shift
  log "PACELINE_DECODE_FP8_BULK=$bulk paceline $*"
  PACELINE_DECODE_FP8_BULK=$bulk timeout 75 $B/paceline check --device cuda --load-format dummy \
    --timing --skip-invariance --prefill-lengths 1024 --kv-cache-dtype fp8 "$@" 2>&1 |
    grep -E '^\| decode batch|^error' | grep -v sampled | tee -a $S/summary.txt
  pack
}
for run in 1 2; do
  for bulk in 0 1; do
    step $bulk --model configs/models/qwen3-8b.json --max-num-seqs 64 --kv-cache-memory 48G \
      --decode-batches 1,16 --decode-context 32768
    step $bulk --model configs/models/qwen3-8b-yarn.json --max-num-seqs 8 --kv-cache-memory 39G \
      --decode-batches 4 --decode-context 131071
  done
done
log "decode bench"
PACELINE_DECODE_BENCH=1 PACELINE_DECODE_BENCH_ONLY='32768,16;131072,4' timeout 100 \
  $B/cuda_tests --gtest_color=no --gtest_filter='CudaDecodeAttentionBench.*' 2>&1 |
  grep -E '^\[ bench \] \| [0-9]+ \| [0-9]+ \| fp8' | tee -a $S/summary.txt
pack
