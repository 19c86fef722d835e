#!/usr/bin/env bash
# Prepared in session 32 for the next device call (its own device time was spent). Three parts,
# packed into $OUT/d.tar.gz after each:
# 1. Why the FP8 decode step at 32k x 16 is 16.14 ms on session 32's H200 against 15.56 in
#    session 23 while the kernel bench is the same (310.0 against 309.7 us). The step reads a
#    sequence's blocks in allocation order, the bench in shuffled order, and the cache became
#    head-major inside each block in between (99a30bf). Steps of main (c1ee7d9's kernels), of
#    6109e21 (slot-major), and of main with 32-key blocks (a head's run 4 KB instead of 2 KB).
# 2. Where the FP8 decode kernel's time goes at 32k x 16 on an H200 (ncu, every section; it reads
#    at 81% of the copy figure where bf16 reads at 101%).
# 3. The decode GEMMs at 1 to 128 rows, small-M against cuBLASLt, each projection's GB/s (the
#    batch-64 step at 1k is 1.8 ms above its weights floor outside the attention).
# Staged: the bundle of run32b.sh plus `VARIANT=pre BUILD_DIR=build-cuda scripts/gpu_check
# --stage` on 6109e21 (paceline_old / cuda_tests_old = c1ee7d9, the *_pre = 6109e21). From a
# fresh checkout: `BUILD_DIR=build-cuda scripts/gpu_check --stage` on main, then `KEEP_OLD=1
# ...` on main again (so that *_old is main too) and `VARIANT=pre ...` on 6109e21. Carry
# ["gpu-pack"]; about 5 minutes.
cd "$(dirname "$0")/../../.."  # the repository root
tar -xJf gpu-pack/gpu-bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/gpu-bundle/lib PACELINE_SOURCE_DIR=$PWD PACELINE_HOME=$PWD
mkdir -p $OUT/d; S=$OUT/d/s.txt
pack() { tar -czf $OUT/d.tar.gz -C $OUT d; }
step() {  # binary, extra args
  local bin=$1; shift
  echo "== $bin $*" >>$S
  timeout 70 gpu-bundle/$bin check --device cuda --load-format dummy --model configs/models/qwen3-8b.json \
    --kv-cache-memory 48G --kv-cache-dtype fp8 --max-num-seqs 64 --timing --skip-invariance \
    --decode-batches 16 --decode-context 32768 --prefill-lengths 1024 "$@" 2>&1 |
    grep -E '^\| decode|^error' >>$S
  pack
}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >>$S
cat gpu-bundle/COMMIT_old gpu-bundle/COMMIT_pre >>$S
step paceline_old
step paceline_pre
step paceline_old --block-size 32
step paceline_pre
step paceline_old
# main's binaries alone in a folder of their own for gpu_check's profile.
mkdir -p gm && cp gpu-bundle/paceline_old gm/paceline && cp gpu-bundle/cuda_tests_old gm/cuda_tests &&
  cp gpu-bundle/COMMIT_old gm/COMMIT && ln -sfn ../gpu-bundle/lib gm/lib
BIN_DIR=gm COMPARE_ONLY=1 QUICK=1 PROFILE_DECODE=1 OUT_DIR=$OUT/d/profile timeout 150 scripts/gpu_check
rm -f $OUT/d/profile/*.ncu-rep
pack
PACELINE_GEMM_BENCH=1 timeout 120 gm/cuda_tests --gtest_color=no \
  --gtest_filter='CudaGemmBench.SmallMAgainstCublas' 2>&1 | grep -E '^\[ small-m bench' >>$S
pack
cat $S
