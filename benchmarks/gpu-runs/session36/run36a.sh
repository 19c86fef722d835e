#!/usr/bin/env bash
# Session 36's device calls (session 35 staged qk and qk2 for this script; their branches did not
# survive to this session, so the sides are now these). Bundle (carry ["gpu-pack"]), staged on the
# CPU machine: A = main (`BUILD_DIR=build-cuda scripts/gpu_check --stage`), then with
# `VARIANT=NAME BUILD_DIR=build-cuda scripts/gpu_check --stage` on each branch:
#   cr = gemm-cluster-relaxed (main with the small-M GEMM's last cluster barrier relaxed: no
#        MEMBAR.ALL.GPU waiting for y's stores before a block leaves)
#   pu = gemm-push (the cluster's partial sums pushed into their adders' shared memory instead of
#        read from the others', and no barrier before leaving)
# PART=1 (about 6 minutes): the variants' checks, the MEMBARs in each binary's SASS, the small-M
#   GEMM bench of each side in turn, 1k steps of all three sides twice in turn.
# PART=2 (about 5 minutes): FP8 32k steps of all three twice in turn, Qwen3-1.7B batch
#   invariance with cr and pu. Results: $OUT/r$PART.tar.gz.
cd "$(dirname "$0")/../../.."  # the repository root
tar -xJf gpu-pack/gpu-bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/gpu-bundle/lib PACELINE_SOURCE_DIR=$PWD PACELINE_HOME=$PWD
B=gpu-bundle
part=${PART:-1}
S=$OUT/r$part; mkdir -p $S
pack() { tar -czf $OUT/r$part.tar.gz -C $OUT r$part; }
log() { echo "== $*" | tee -a $S/summary.txt; }
sides=${SIDES:-"'' _cr _pu"}
eval "set -- $sides"; sides=("$@")
log "A $(cat $B/COMMIT), cr $(cat $B/COMMIT_cr), pu $(cat $B/COMMIT_pu);" \
  "$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader)"
step() {  # binary suffix, then paceline check's arguments
  local side=$1; shift
  log "paceline$side $*"
  timeout 75 $B/paceline$side check --device cuda --load-format dummy --max-num-seqs 64 --timing \
    --skip-invariance --model configs/models/qwen3-8b.json --prefill-lengths 1024 "$@" 2>&1 |
    grep -E '^\| decode batch|^error' | grep -v sampled | tee -a $S/summary.txt
  pack
}
if [ "$part" = 1 ]; then
  for side in _cr _pu; do
    timeout 120 $B/cuda_tests$side --gtest_color=no --gtest_filter='CudaGemmSmallM*:CudaSwiglu.*:CudaRankWeights.*:*Parity*:*BatchInvariance*:*CudaFp8Kv*:*TensorParallel*:*LongStep*' \
      >$S/tests$side.txt 2>&1
    log "tests$side rc $?"
    grep -E "^\[  +(FAILED|PASSED)|tests? ran|Failure" $S/tests$side.txt | head -20 | tee -a $S/summary.txt
  done
  cuobjdump=$(command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump 2>/dev/null | head -n 1)
  for side in "${sides[@]}"; do
    log "SASS of paceline$side: $($cuobjdump -sass $B/paceline$side 2>/dev/null | grep -c 'MEMBAR.ALL.GPU') MEMBAR.ALL.GPU"
  done
  pack
  for side in "${sides[@]}"; do
    log "GEMM bench$side"
    PACELINE_GEMM_BENCH=1 timeout 90 $B/cuda_tests$side --gtest_color=no \
      --gtest_filter='CudaGemmBench.SmallMAgainstCublas' 2>&1 | grep -E 'small-m bench' |
      grep -E 'M (1|8|64):' | sed -E 's/, cuBLASLt.*//' | tee -a $S/summary.txt
    pack
  done
  for run in 1 2; do
    for side in "${sides[@]}"; do
      step "$side" --kv-cache-memory 24G --decode-batches 1,16,64
    done
  done
else
  for run in 1 2; do
    for side in "${sides[@]}"; do
      step "$side" --kv-cache-memory 48G --kv-cache-dtype fp8 --decode-batches 1,16 --decode-context 32768
    done
  done
  for side in _cr _pu; do
    for dtype in auto fp8; do
      timeout 60 $B/paceline$side check --device cuda --model configs/models/qwen3-1.7b.json \
        --load-format dummy --gpu-memory-utilization 0.5 --max-num-seqs 64 --kv-cache-dtype $dtype 2>&1 |
        grep -E "^batch invariance|^error" | sed "s/^/$side KV $dtype: /" | tee -a $S/summary.txt
    done
  done
  pack
fi
