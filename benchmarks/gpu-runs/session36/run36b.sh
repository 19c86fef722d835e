#!/usr/bin/env bash
# Session 36, third device call. Bundle (carry ["gpu-pack"]): A = main 23e81c3
# (`BUILD_DIR=build-cuda scripts/gpu_check --stage`), gn = branch gemm-norm (`VARIANT=gn ...`):
# the RMSNorm after o_proj and down_proj in the small-M GEMM's last block at batch 1
# (PACELINE_GEMM_NORM=0 turns it off in the same binary). About 6 minutes: gn's checks, batch
# invariance at --max-num-seqs 64 (batch 1 fused against batches 4 / 8 / 64 not), then decode
# steps of A, gn with the norm off and gn, in turn. Results: $OUT/r$CALL.tar.gz.
# CALL=3 (the default): the third call. CALL=4: the fourth, after gn was rebuilt with the row and
# the norm weights held in registers and loaded together: the norm's and the batch-invariance
# tests only, and batch invariance on Qwen3-8B only.
cd "$(dirname "$0")/../../.."  # the repository root
tar -xJf gpu-pack/gpu-bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/gpu-bundle/lib PACELINE_SOURCE_DIR=$PWD PACELINE_HOME=$PWD
B=gpu-bundle
CALL=${CALL:-3}
S=$OUT/r$CALL; mkdir -p $S
pack() { tar -czf $OUT/r$CALL.tar.gz -C $OUT r$CALL; }
tests='CudaGemmSmallM*:CudaRmsNorm.*:*Parity*:*BatchInvariance*:*LongStep*:*TensorParallel*'
models="qwen3-1.7b qwen3-8b"
if [ "$CALL" = 4 ]; then
  tests='CudaGemmSmallM.Norm*:CudaGemmSmallM.RowBits*:CudaRmsNorm.*:*BatchInvariance*'
  models=qwen3-8b
fi
log() { echo "== $*" | tee -a $S/summary.txt; }
log "A $(cat $B/COMMIT), gn $(cat $B/COMMIT_gn);" \
  "$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader)"
timeout 150 $B/cuda_tests_gn --gtest_color=no --gtest_filter="$tests" \
  >$S/tests_gn.txt 2>&1
log "tests_gn rc $?"
grep -E "^\[  +(FAILED|PASSED)|tests? ran|Failure" $S/tests_gn.txt | head -20 | tee -a $S/summary.txt
pack
for model in $models; do
  for dtype in auto fp8; do
    [ $model = qwen3-8b ] && [ $dtype = fp8 ] && continue
    timeout 90 $B/paceline_gn check --device cuda --model configs/models/$model.json \
      --load-format dummy --kv-cache-memory 16G --max-num-seqs 64 --kv-cache-dtype $dtype 2>&1 |
      grep -E "prompts differ|^batch invariance|^error" | sed "s/^/$model KV $dtype: /" | tee -a $S/summary.txt
    pack
  done
done
step() {  # label, binary suffix, then paceline check's arguments
  local label=$1 side=$2; shift 2
  log "$label: paceline$side $*"
  timeout 75 $B/paceline$side check --device cuda --load-format dummy --max-num-seqs 64 --timing \
    --skip-invariance --model configs/models/qwen3-8b.json --prefill-lengths 1024 "$@" 2>&1 |
    grep -E '^\| decode batch|^error' | grep -v sampled | tee -a $S/summary.txt
  pack
}
for run in 1 2; do
  step A '' --kv-cache-memory 24G --decode-batches 1,16
  PACELINE_GEMM_NORM=0 step gn-off _gn --kv-cache-memory 24G --decode-batches 1,16
  step gn _gn --kv-cache-memory 24G --decode-batches 1,16
done
for side in off on; do
  if [ $side = off ]; then export PACELINE_GEMM_NORM=0; else unset PACELINE_GEMM_NORM; fi
  step "gn norm $side" _gn --kv-cache-memory 48G --kv-cache-dtype fp8 --decode-batches 1 --decode-context 32768
done
