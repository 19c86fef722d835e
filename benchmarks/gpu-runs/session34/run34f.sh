#!/usr/bin/env bash
# Session 34's device call (about 8 minutes; results packed into $OUT/f.tar.gz after each part).
# Bundle (carry ["gpu-pack"]): A = main, sw = branch gemm-swiglu (gate_up's rows in turns of 64
# on the GPU and the decode rows' SwiGLU written by the small-M GEMM: no float32 gate_up and no
# SwiGLU launch for them), cs = branch decode-chain-small (a batch-1 decode launch chained to the
# kernel ahead, PACELINE_PDL_CHAIN's decode-small).
# 1. sw's checks: the fused epilogue's and the turned SwiGLU's bits, the rank weights' layout,
#    parity with HF (tiny Qwen3: MLP of 128, in turns; tiny Llama: 160, in halves), batch
#    invariance.
# 2. bf16 1k steps, batch 1 and 64 (mns 64): A / sw / cs, twice in turn.
# 3. Qwen3-1.7B invariance with sw (bf16); cs's decode tests.
# 4. On an H200 only: main's FP8 32k rows (batch 1, 16), the table's, not re-timed since session 32.
# (Ordered so that a cut-off call still brings back the checks and the first turn.)
cd "$(dirname "$0")/../../.."  # the repository root
tar -xJf gpu-pack/gpu-bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/gpu-bundle/lib PACELINE_SOURCE_DIR=$PWD PACELINE_HOME=$PWD
B=gpu-bundle
S=$OUT/f; mkdir -p $S
pack() { tar -czf $OUT/f.tar.gz -C $OUT f; }
log() { echo "== $*" | tee -a $S/summary.txt; }
log "A $(cat $B/COMMIT), sw $(cat $B/COMMIT_sw), cs $(cat $B/COMMIT_cs); $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader)"
timeout 150 $B/cuda_tests_sw --gtest_color=no \
  --gtest_filter='CudaGemmSmallM.Swiglu*:CudaSwiglu.*:CudaRankWeights.*:*Parity*:*BatchInvariance*' >$S/tests_sw.txt 2>&1
log "sw tests rc $?"
grep -E "^\[  +(FAILED|PASSED)|tests? ran|Failure" $S/tests_sw.txt | head -30 | tee -a $S/summary.txt
pack
step() {  # binary suffix, then paceline check's arguments
  local side=$1; shift
  log "paceline$side $*"
  timeout 75 $B/paceline$side check --device cuda --load-format dummy --max-num-seqs 64 --timing \
    --skip-invariance --model configs/models/qwen3-8b.json "$@" 2>&1 |
    grep -E '^\| decode batch|^error' | grep -v sampled | tee -a $S/summary.txt
  pack
}
for run in 1 2; do
  for side in "" _sw _cs; do
    step "$side" --kv-cache-memory 24G --decode-batches 1,64 --prefill-lengths 1024
  done
done
timeout 60 $B/paceline_sw check --device cuda --model configs/models/qwen3-1.7b.json \
  --load-format dummy --gpu-memory-utilization 0.5 --max-num-seqs 64 2>&1 |
  grep -E "^batch invariance|^error" | sed "s/^/sw bf16: /" | tee -a $S/summary.txt
pack
timeout 60 $B/cuda_tests_cs --gtest_color=no \
  --gtest_filter='CudaDecodeAttention.MatchesReference*:CudaDecodeAttention.*RowsAreBatchInvariant' >$S/tests_cs.txt 2>&1
log "cs tests rc $?"
grep -E "^\[  +(FAILED|PASSED)|tests? ran" $S/tests_cs.txt | tee -a $S/summary.txt
pack
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || exit 0
step "" --kv-cache-memory 48G --kv-cache-dtype fp8 --decode-batches 1,16 --decode-context 32768 \
  --prefill-lengths 1024
