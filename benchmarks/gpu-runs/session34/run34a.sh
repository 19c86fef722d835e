#!/usr/bin/env bash
# Prepared in session 33 for the next device call (about 7 minutes; results packed into
# $OUT/k.tar.gz after each part). Bundle (carry ["gpu-pack"]): A = main (the FP8 decode widening
# by cvt merged), cs = branch decode-chain-small (a decode launch of at most one work item a
# block, i.e. batch 1, is chained to the kernel ahead, PACELINE_PDL_CHAIN's decode-small, and
# every block loads its first item's block-table entries before the wait). Staged on the CPU
# machine: `BUILD_DIR=build-cuda scripts/gpu_check --stage` on main, then
# `VARIANT=cs BUILD_DIR=build-cuda scripts/gpu_check --stage` on decode-chain-small.
# 1. cs with decode-small chained (its default) against not (PACELINE_PDL_CHAIN without it),
#    the same binary, in turn: bf16 1k batch 1 and 16 (twice); bf16 32k batch 1
#    (session 34 dropped the FP8 32k batch-1 pair to save device time).
# 2. cs's checks: the decode attention's tests, batch invariance (tests and Qwen3-1.7B, bf16 and
#    FP8 KV).
# 3. A, on an H200 only: the FP8 rows of the issue's table (32k x 1, 16; 128k x 4), which session 33
#    timed on an H100 only.
cd "$(dirname "$0")/../../.."  # the repository root
tar -xJf gpu-pack/gpu-bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/gpu-bundle/lib PACELINE_SOURCE_DIR=$PWD PACELINE_HOME=$PWD
B=gpu-bundle
S=$OUT/k; mkdir -p $S
pack() { tar -czf $OUT/k.tar.gz -C $OUT k; }
log() { echo "== $*" | tee -a $S/summary.txt; }
log "A $(cat $B/COMMIT), cs $(cat $B/COMMIT_cs); $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader)"
step() {  # binary suffix, then paceline check's arguments
  local side=$1; shift
  log "paceline$side $* (PACELINE_PDL_CHAIN=${PACELINE_PDL_CHAIN-unset})"
  timeout 75 $B/paceline$side check --device cuda --load-format dummy --max-num-seqs 64 --timing \
    --skip-invariance "$@" 2>&1 | grep -E '^\| decode batch|^error' | grep -v sampled |
    tee -a $S/summary.txt
  pack
}
off=norm,qk,merge,swiglu,argmax  # the default chain without decode-small
for run in 1 2; do
  for chain in default off; do
    if [ $chain = off ]; then export PACELINE_PDL_CHAIN=$off; else unset PACELINE_PDL_CHAIN; fi
    step _cs --model configs/models/qwen3-8b.json --kv-cache-memory 24G --decode-batches 1,16 \
      --prefill-lengths 1024
  done
done
for chain in default off; do
  if [ $chain = off ]; then export PACELINE_PDL_CHAIN=$off; else unset PACELINE_PDL_CHAIN; fi
  step _cs --model configs/models/qwen3-8b.json --kv-cache-memory 24G --decode-batches 1 \
    --decode-context 32768 --prefill-lengths 1024
done
unset PACELINE_PDL_CHAIN
timeout 100 $B/cuda_tests_cs --gtest_color=no \
  --gtest_filter='CudaDecodeAttention.MatchesReference*:CudaDecodeAttention.*RowsAreBatchInvariant:*BatchInvariance*' >$S/tests_cs.txt 2>&1
log "cs tests rc $?"
grep -E "^\[  +(FAILED|PASSED)|tests? ran" $S/tests_cs.txt | tee -a $S/summary.txt
for dtype in auto fp8; do
  timeout 60 $B/paceline_cs check --device cuda --model configs/models/qwen3-1.7b.json \
    --load-format dummy --gpu-memory-utilization 0.5 --max-num-seqs 64 --kv-cache-dtype $dtype 2>&1 |
    grep -E "^batch invariance|^error" | sed "s/^/cs KV $dtype: /" | tee -a $S/summary.txt
done
pack
# Main's FP8 rows only on an H200 (the table's card; 60G of KV does not fit an H100's 80 GB).
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || exit 0
step "" --model configs/models/qwen3-8b.json --kv-cache-memory 48G --kv-cache-dtype fp8 \
  --decode-batches 1,16 --decode-context 32768 --prefill-lengths 1024
step "" --model configs/models/qwen3-8b-yarn.json --kv-cache-memory 60G --kv-cache-dtype fp8 \
  --decode-batches 4 --decode-context 131071 --prefill-lengths 1024
