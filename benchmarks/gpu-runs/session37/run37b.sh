#!/usr/bin/env bash
# Session 37, the FP8 decode attention: fragments widened in the bf16 order
# (PACELINE_DECODE_FP8_KEY_PAIRS=1) and tiles copied by bulk tensor copies
# (PACELINE_DECODE_FP8_BULK=1), both off by default. About 6 minutes: the decode attention's
# tests and the small-M GEMM's and SwiGLU's (their cluster sums share a helper since this run),
# batch invariance on Qwen3-8B with an FP8 cache and both on, the decode bench's production rows
# at 8k x 16, 32k x 1, 32k x 16 and 128k x 4 (each combination side by side, output bits
# hashed), then decode steps with an FP8 cache at 32k (batches 1 and 16) for (key pairs, bulk) =
# (0, 0), (1, 0), (1, 1), in turn, twice; last, the FP8 kernels' SASS instruction counts (if
# cuobjdump is there). Results: $OUT/r2.tar.gz.
RESULT=r2
source "$(dirname "$0")/../common.sh"  # B, S, pack, log; the repository root
log "binaries of $(cat $B/COMMIT); $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader)"
timeout 200 $B/cuda_tests --gtest_color=no --gtest_filter='CudaDecodeAttention.*:CudaGemmSmallM*:CudaSwiglu.*' >$S/tests.txt 2>&1
log "tests rc $?"
grep -E "^\[  +(FAILED|PASSED)|tests? ran|Failure|key pairs" $S/tests.txt | head -30 | tee -a $S/summary.txt
PACELINE_DECODE_FP8_KEY_PAIRS=1 PACELINE_DECODE_FP8_BULK=1 timeout 90 $B/paceline check --device cuda \
  --model configs/models/qwen3-8b.json --load-format dummy --kv-cache-memory 16G \
  --kv-cache-dtype fp8 --max-num-seqs 64 2>&1 |
  grep -E "^batch invariance|^error" | sed "s/^/key pairs, bulk, fp8, qwen3-8b: /" | tee -a $S/summary.txt
pack
log "decode bench"
PACELINE_DECODE_BENCH=1 PACELINE_DECODE_BENCH_ONLY='8192,16;32768,1;32768,16;131072,4' timeout 150 \
  $B/cuda_tests --gtest_color=no --gtest_filter='CudaDecodeAttentionBench.*' 2>&1 |
  grep -E '^\[ bench \] \| [0-9]+ \| [0-9]+ \| fp8' | tee -a $S/summary.txt
pack
step() {  # PACELINE_DECODE_FP8_KEY_PAIRS's and PACELINE_DECODE_FP8_BULK's values, then arguments
  local kp=$1 bulk=$2; shift 2
  log "PACELINE_DECODE_FP8_KEY_PAIRS=$kp PACELINE_DECODE_FP8_BULK=$bulk paceline $*"
  PACELINE_DECODE_FP8_KEY_PAIRS=$kp PACELINE_DECODE_FP8_BULK=$bulk timeout 75 $B/paceline check --device cuda --load-format dummy \
    --max-num-seqs 64 --timing --skip-invariance --model configs/models/qwen3-8b.json \
    --prefill-lengths 1024 "$@" 2>&1 | grep -E '^\| decode batch|^error' | grep -v sampled |
    tee -a $S/summary.txt
  pack
}
for run in 1 2; do
  for kb in "0 0" "1 0" "1 1"; do
    step $kb --kv-cache-memory 48G --kv-cache-dtype fp8 --decode-batches 1,16 --decode-context 32768
  done
done
objdump=$(command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump 2>/dev/null | head -n 1)
if [ -n "$objdump" ]; then
  tail='EEEvPKfPKiiNS0_12DecodeSplitsENS0_14AttentionShapeENS0_9RowInputsENS0_10LayerCacheEPfSB_P13__nv_bfloat1614CUtensorMap_stSE_'
  for k in "kp0 Lb0ELb0" "kp1 Lb1ELb0" "kp1_bulk Lb1ELb1"; do
    set -- $k
    $objdump -sass -fun "_ZN8paceline4cuda6decode13decode_kernelILi128ELi4ELi4ELb1E$2$tail" \
      $B/cuda_tests >$S/sass_$1.txt 2>&1
    log "SASS $1: $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' $S/sass_$1.txt) instructions, $(grep -c PRMT $S/sass_$1.txt) PRMT, $(grep -c F2FP $S/sass_$1.txt) F2FP, $(grep -c HMMA $S/sass_$1.txt) HMMA"
  done
  pack
fi
