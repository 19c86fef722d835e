#!/usr/bin/env bash
# (Not run: session 33 ran run33c.sh, which covers its first two parts, on an H100.)
# Prepared in session 32 for the next device call. Bundle (16 MiB, carry ["gpu-pack"]):
# A = branch fp8-decode-cvt (the FP8 decode attention widens e4m3 to f16 by the conversion
# instruction: a byte permute and one cvt a pair, where main's integer widening takes seven
# operations for four values), B = main, pre = 6109e21 (slot-major cache). Staged on the CPU
# machine: `BUILD_DIR=build-cuda scripts/gpu_check --stage` on main, `KEEP_OLD=1 ... --stage`
# on fp8-decode-cvt, `VARIANT=pre ... --stage` on 6109e21. About 7 minutes; results packed into
# $OUT/e.tar.gz after each part.
# 1. A against B: the decode kernel bench twice in turn (the FP8 rows are the point; A's output
#    hashes may differ from B's, which multiplies values scaled by 2^-8 and scales back in f32),
#    then the FP8 steps at 32k (batch 1 and 16) in turn.
# 2. A's checks: the decode attention's tests, FP8, batch invariance and parity; Qwen3-1.7B's
#    invariance with an FP8 cache.
# 3. The FP8 32k x 16 step, head-major (B) against slot-major (pre) and with 32-key blocks:
#    session 32's H200 gave 16.14 ms where session 23's gave 15.56 with the same kernel bench.
cd "$(dirname "$0")/../../.."  # the repository root
tar -xJf gpu-pack/gpu-bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/gpu-bundle/lib PACELINE_SOURCE_DIR=$PWD PACELINE_HOME=$PWD
S=$OUT/e; mkdir -p $S
pack() { tar -czf $OUT/e.tar.gz -C $OUT e; }
PACELINE_DECODE_BENCH_ONLY='1024,64;8192,16;32768,1;32768,16;131072,4' COMPARE_ONLY=1 QUICK=1 \
  AB=decode AB_STEPS=fp8-decode OUT_DIR=$S/ab timeout 260 scripts/gpu_check
pack
B=gpu-bundle
timeout 200 $B/cuda_tests --gtest_color=no \
  --gtest_filter='CudaDecodeAttention.*:*CudaFp8*:*BatchInvariance*:*CudaParity*' > $S/tests_a.txt 2>&1
echo "== A tests rc $?" | tee -a $S/summary.txt
grep -E "^\[  +(FAILED|PASSED)|tests? ran" $S/tests_a.txt | tee -a $S/summary.txt
timeout 90 $B/paceline check --device cuda --model configs/models/qwen3-1.7b.json \
  --load-format dummy --gpu-memory-utilization 0.5 --kv-cache-dtype fp8 2>&1 |
  grep -E "^batch invariance|^error" | sed "s/^/A KV fp8: /" | tee -a $S/summary.txt
pack
step() {  # binary, extra args
  local bin=$1; shift
  echo "== $bin $*" >>$S/summary.txt
  timeout 70 $B/$bin check --device cuda --load-format dummy --model configs/models/qwen3-8b.json \
    --kv-cache-memory 48G --kv-cache-dtype fp8 --max-num-seqs 64 --timing --skip-invariance \
    --decode-batches 16 --decode-context 32768 --prefill-lengths 1024 "$@" 2>&1 |
    grep -E '^\| decode|^error' >>$S/summary.txt
  pack
}
step paceline_old
step paceline_pre
step paceline_old --block-size 32
step paceline_pre
cat $S/summary.txt
