#!/usr/bin/env bash
# Session 30, call 1: the exact lazy rescale in the prefill and decode attention plus the decode
# kernel's bound of three blocks an SM (A) against main (B) and main with the bound alone
# (bounds), each with the benches' output-bits hash: the attention tests on A, the prefill and
# decode kernel benches (four decode cases) and Qwen3-8B steps in turn (AB=prefill,decode).
cd "$(dirname "$0")/../../.."  # the repository root
tar -xJf gpu-pack/gpu-bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/gpu-bundle/lib PACELINE_SOURCE_DIR=$PWD PACELINE_HOME=$PWD
S=$OUT/a; mkdir -p $S
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $S/tests_summary.txt
timeout 150 gpu-bundle/cuda_tests --gtest_color=no \
  --gtest_filter='CudaPrefillAttention.*:CudaDecodeAttention.*' > $S/tests_A.txt 2>&1
echo "== A tests rc $?" | tee -a $S/tests_summary.txt
grep -E "^\[  +(OK|FAILED)|PASSED|Failure" $S/tests_A.txt | tee -a $S/tests_summary.txt
PACELINE_DECODE_BENCH_ONLY='1024,64;32768,1;32768,16;131072,4' COMPARE_ONLY=1 QUICK=1 \
  AB=prefill,decode VARIANTS=bounds OUT_DIR=$S timeout 400 scripts/gpu_check
echo "== gpu_check rc $?" | tee -a $S/summary.txt
tar -czf $OUT/a.tar.gz -C $OUT a
