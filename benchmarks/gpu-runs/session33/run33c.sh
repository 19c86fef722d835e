#!/usr/bin/env bash
# Session 33's device call (about 8 minutes; results packed into $OUT/g.tar.gz after each part).
# Bundle (carry ["gpu-pack"]): A = branch fp8-decode-cvt (130fcfc: the FP8 decode attention
# widens e4m3 to f16 by the conversion instruction), B (_old) = main's kernels (5a84af6),
# fm = branch decode-fused-merge (main's kernels; a launch of at most one work item a block
# merges in the decode kernel, PACELINE_DECODE_FUSED_MERGE=0 turns it off), pre (unused here).
# 1. The decode kernel bench, A / B / fm twice in turn, at 1k x 1, 32k x 1, 32k x 16, 128k x 4.
# 2. The FP8 steps at 32k (batch 1 and 16, mns 64), A / B / fm.
# 3. A's checks: decode attention, FP8, batch invariance.
# 4. fm: its tests, and the bf16 1k steps (batch 1, 16) with the fused merge on and off.
cd "$(dirname "$0")/../../.."  # the repository root
tar -xJf gpu-pack/gpu-bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/gpu-bundle/lib PACELINE_SOURCE_DIR=$PWD PACELINE_HOME=$PWD
B=gpu-bundle
S=$OUT/g; mkdir -p $S
pack() { tar -czf $OUT/g.tar.gz -C $OUT g; }
log() { echo "== $*" | tee -a $S/summary.txt; }
log "A $(cat $B/COMMIT), B $(cat $B/COMMIT_old), fm $(cat $B/COMMIT_fm); $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader)"
for run in 1 2; do
  for side in "" _old _fm; do
    PACELINE_DECODE_BENCH=1 PACELINE_DECODE_BENCH_PRODUCTION=1 \
      PACELINE_DECODE_BENCH_ONLY='1024,1;32768,1;32768,16;131072,4' timeout 60 \
      $B/cuda_tests$side --gtest_color=no --gtest_filter='CudaDecodeAttentionBench.*' 2>&1 |
      grep -E '^\[ bench \] \| [0-9]' | grep -E 'production \(' | sed "s/^/side${side:-_A} run $run /" |
      tee -a $S/summary.txt
    pack
  done
done
step() {  # binary suffix, then paceline check's arguments
  local side=$1; shift
  log "paceline$side $* (PACELINE_DECODE_FUSED_MERGE=${PACELINE_DECODE_FUSED_MERGE:-unset})"
  timeout 75 $B/paceline$side check --device cuda --load-format dummy \
    --model configs/models/qwen3-8b.json --max-num-seqs 64 --timing --skip-invariance "$@" 2>&1 |
    grep -E '^\| decode|^error' | tee -a $S/summary.txt
  pack
}
for side in "" _old _fm; do
  step "$side" --kv-cache-memory 48G --kv-cache-dtype fp8 --decode-batches 1,16 \
    --decode-context 32768 --prefill-lengths 1024
done
timeout 130 $B/cuda_tests --gtest_color=no \
  --gtest_filter='CudaDecodeAttention.*:*CudaFp8*:*BatchInvariance*' >$S/tests_a.txt 2>&1
log "A tests rc $?"
grep -E "^\[  +(FAILED|PASSED)|tests? ran" $S/tests_a.txt | tee -a $S/summary.txt
pack
timeout 60 $B/cuda_tests_fm --gtest_color=no \
  --gtest_filter='CudaDecodeAttention.Merging*:CudaDecodeAttention.*BatchInvariant*' >$S/tests_fm.txt 2>&1
log "fm tests rc $?"
grep -E "^\[  +(FAILED|PASSED)|tests? ran|Failure|differ" $S/tests_fm.txt | head -20 | tee -a $S/summary.txt
pack
for f in 1 0 1 0; do
  export PACELINE_DECODE_FUSED_MERGE=$f
  step _fm --kv-cache-memory 24G --decode-batches 1,16 --prefill-lengths 1024
done
unset PACELINE_DECODE_FUSED_MERGE
timeout 80 $B/paceline_fm check --device cuda --model configs/models/qwen3-1.7b.json \
  --load-format dummy --gpu-memory-utilization 0.5 2>&1 | grep -E "^batch invariance|^error" |
  sed "s/^/fm bf16: /" | tee -a $S/summary.txt
pack
