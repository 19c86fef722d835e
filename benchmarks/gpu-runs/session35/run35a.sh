#!/usr/bin/env bash
# Prepared in session 34 for the next device call (about 8 minutes; results packed into
# $OUT/a.tar.gz after each part). Bundle (carry ["gpu-pack"]), staged on the CPU machine:
# `BUILD_DIR=build-cuda scripts/gpu_check --stage` on main (A: with the fused SwiGLU), then
# `VARIANT=qk BUILD_DIR=build-cuda scripts/gpu_check --stage` on branch gemm-qk (qkv's decode rows
# do QK-norm + RoPE + the K/V store in the GEMM: no QK-norm launch for them).
# 1. qk's checks: the fused epilogue's bits (q, bf16 and FP8 caches, clamp counts), the QK-norm
#    kernel's own tests, parity with HF, batch invariance, FP8 against HF.
# 2. 1k steps, batch 1, 16 and 64 (mns 64): A / qk, twice in turn; FP8 32k batch 1 and 16.
# 3. Qwen3-1.7B batch invariance with qk, bf16 and FP8 KV.
# 4. The small-M GEMM at 64 and 1 rows under ncu (run34c.sh's GEMM part, its filter fixed).
# Shorter when device time is short: ROUNDS (of part 2's 1k steps, default 2) and NCU_ROWS (the
# column tiles profiled in part 4, default "8 1"; empty: none. Session 35 ran it with
# `${NCU_ROWS:-...}`, which took an empty value as unset and profiled both).
cd "$(dirname "$0")/../../.."  # the repository root
tar -xJf gpu-pack/gpu-bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/gpu-bundle/lib PACELINE_SOURCE_DIR=$PWD PACELINE_HOME=$PWD
B=gpu-bundle
S=$OUT/a; mkdir -p $S
pack() { tar -czf $OUT/a.tar.gz -C $OUT a; }
log() { echo "== $*" | tee -a $S/summary.txt; }
log "A $(cat $B/COMMIT), qk $(cat $B/COMMIT_qk); $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader)"
timeout 150 $B/cuda_tests_qk --gtest_color=no \
  --gtest_filter='CudaGemmSmallMQk.*:CudaFp8Store.*:CudaKvLayout.*:*Parity*:*BatchInvariance*:*CudaFp8Kv*:*TensorParallel*' >$S/tests_qk.txt 2>&1
log "qk tests rc $?"
grep -E "^\[  +(FAILED|PASSED)|tests? ran|Failure" $S/tests_qk.txt | head -30 | tee -a $S/summary.txt
pack
step() {  # binary suffix, then paceline check's arguments
  local side=$1; shift
  log "paceline$side $*"
  timeout 75 $B/paceline$side check --device cuda --load-format dummy --max-num-seqs 64 --timing \
    --skip-invariance --model configs/models/qwen3-8b.json --prefill-lengths 1024 "$@" 2>&1 |
    grep -E '^\| decode batch|^error' | grep -v sampled | tee -a $S/summary.txt
  pack
}
for run in $(seq 1 ${ROUNDS:-2}); do
  for side in "" _qk; do
    step "$side" --kv-cache-memory 24G --decode-batches 1,16,64
  done
done
for side in "" _qk; do
  step "$side" --kv-cache-memory 48G --kv-cache-dtype fp8 --decode-batches 1,16 --decode-context 32768
done
for dtype in auto fp8; do
  timeout 60 $B/paceline_qk check --device cuda --model configs/models/qwen3-1.7b.json \
    --load-format dummy --gpu-memory-utilization 0.5 --max-num-seqs 64 --kv-cache-dtype $dtype 2>&1 |
    grep -E "^batch invariance|^error" | sed "s/^/qk KV $dtype: /" | tee -a $S/summary.txt
done
pack
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
for nt in ${NCU_ROWS-8 1}; do
  name=gemm_o_proj_nt$nt
  PACELINE_GEMM_BENCH=1 PACELINE_GEMM_BENCH_SHAPE=o_proj timeout 100 $ncu --clock-control none \
    --set full --kernel-name-base demangled -k "regex:gemm_small_m_kernel<\\(int\\)$nt," \
    --launch-skip 30 --launch-count 1 -f -o $S/$name $B/cuda_tests --gtest_color=no \
    --gtest_filter='CudaGemmBench.SmallMAgainstCublas' >$S/${name}_run.txt 2>&1
  $ncu -i $S/$name.ncu-rep --page details >$S/${name}_details.txt 2>&1
  $ncu -i $S/$name.ncu-rep --page source --print-source sass --csv >$S/${name}_sass.csv 2>&1
  tools/ncu_sass_summary $S/${name}_sass.csv >$S/${name}_stalls.txt 2>&1
  rm -f $S/$name.ncu-rep $S/${name}_sass.csv
  pack
done
grep -E "Duration|DRAM Throughput|L2 Cache Throughput" $S/*_details.txt
