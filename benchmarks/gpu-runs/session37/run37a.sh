#!/usr/bin/env bash
# Prepared in session 36 for the next device call. Bundle (carry ["gpu-pack"]): main's binaries
# (`BUILD_DIR=build-cuda scripts/gpu_check --stage`), with the wide blocks of the small-M GEMM
# behind PACELINE_GEMM_WIDE=1 (off by default). About 5 minutes: the wide blocks' bits test and
# the small-M tests, batch invariance on Qwen3-8B at --max-num-seqs 64 with wide blocks on, the
# GEMM bench without and with them, then decode steps at 1k (batches 16 and 64) and FP8 32k
# (batch 16) without and with them, in turn, twice; last (NCU=0 skips it), o_proj at 64 rows
# under ncu without and with them (duration, DRAM and L2 throughput: whether x's copies through
# L2 are what the 64-row calls lose). Results: $OUT/r1.tar.gz.
RESULT=r1
source "$(dirname "$0")/../common.sh"  # B, S, pack, log; the repository root
log "binaries of $(cat $B/COMMIT); $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader)"
timeout 150 $B/cuda_tests --gtest_color=no --gtest_filter='CudaGemmSmallM*:CudaSwiglu.*:*BatchInvariance*' \
  >$S/tests.txt 2>&1
log "tests rc $?"
grep -E "^\[  +(FAILED|PASSED)|tests? ran|Failure" $S/tests.txt | head -20 | tee -a $S/summary.txt
PACELINE_GEMM_WIDE=1 timeout 90 $B/paceline check --device cuda --model configs/models/qwen3-8b.json \
  --load-format dummy --kv-cache-memory 16G --max-num-seqs 64 2>&1 |
  grep -E "^batch invariance|^error" | sed "s/^/wide, qwen3-8b: /" | tee -a $S/summary.txt
pack
for wide in 0 1; do
  log "GEMM bench, PACELINE_GEMM_WIDE=$wide"
  PACELINE_GEMM_WIDE=$wide PACELINE_GEMM_BENCH=1 timeout 90 $B/cuda_tests --gtest_color=no \
    --gtest_filter='CudaGemmBench.SmallMAgainstCublas' 2>&1 | grep -E 'small-m bench' |
    grep -E 'M (1|32|64|128):' | sed -E 's/, cuBLASLt.*//' | tee -a $S/summary.txt
  pack
done
step() {  # PACELINE_GEMM_WIDE's value, then paceline check's arguments
  local wide=$1; shift
  log "PACELINE_GEMM_WIDE=$wide paceline $*"
  PACELINE_GEMM_WIDE=$wide timeout 75 $B/paceline check --device cuda --load-format dummy \
    --max-num-seqs 64 --timing --skip-invariance --model configs/models/qwen3-8b.json \
    --prefill-lengths 1024 "$@" 2>&1 | grep -E '^\| decode batch|^error' | grep -v sampled |
    tee -a $S/summary.txt
  pack
}
for run in 1 2; do
  for wide in 0 1; do
    step $wide --kv-cache-memory 24G --decode-batches 16,64
  done
done
for run in 1 2; do
  for wide in 0 1; do
    step $wide --kv-cache-memory 48G --kv-cache-dtype fp8 --decode-batches 16 --decode-context 32768
  done
done
if [ "${NCU:-1}" = 1 ]; then
  ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
  for wide in 0 1; do
    name=o_proj_64_wide$wide
    PACELINE_GEMM_WIDE=$wide PACELINE_GEMM_BENCH=1 PACELINE_GEMM_BENCH_SHAPE=o_proj timeout 100 \
      $ncu --clock-control none --set full --kernel-name-base demangled \
      -k "regex:gemm_small_m_kernel<\\(int\\)8," --launch-skip 30 --launch-count 1 -f \
      -o $S/$name $B/cuda_tests --gtest_color=no \
      --gtest_filter='CudaGemmBench.SmallMAgainstCublas' >$S/${name}_run.txt 2>&1
    $ncu -i $S/$name.ncu-rep --page details >$S/${name}_details.txt 2>&1
    rm -f $S/$name.ncu-rep
    log "ncu $name"
    grep -E "gemm_small_m_kernel|Duration|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput" \
      $S/${name}_details.txt | head -8 | tee -a $S/summary.txt
    pack
  done
fi
