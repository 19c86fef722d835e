#!/usr/bin/env bash
# Prepared in session 30 for the head-major-kv branch (the GPU KV cache head-major inside each
# block): the branch (A, `KEEP_OLD=1 scripts/gpu_check --stage` on the branch after a stage of
# main, B) is first checked (the layout test, the attention, FP8, parity, host-tier and
# tensor-parallel tests; batch invariance on Qwen3-1.7B, bf16 and FP8 KV), then timed against
# main: the prefill and decode kernel benches in turn, the default steps and the FP8 32k decode
# steps (AB=prefill,decode AB_STEPS=default,fp8-decode).
cd "$(dirname "$0")/../../.."  # the repository root
tar -xJf gpu-pack/gpu-bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/gpu-bundle/lib PACELINE_SOURCE_DIR=$PWD PACELINE_HOME=$PWD
B=gpu-bundle; S=$OUT/a; mkdir -p $S
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $S/summary.txt
echo "A $(cat $B/COMMIT) B $(cat $B/COMMIT_old)" | tee -a $S/summary.txt
timeout 240 $B/cuda_tests --gtest_color=no --gtest_filter='CudaKvLayout.*:CudaPrefillAttention.*:CudaDecodeAttention.*:*CudaFp8*:*CudaParity*:*CudaHostTier*:*CudaTensorParallel*' \
  > $S/tests_A.txt 2>&1
echo "== A tests rc $?" | tee -a $S/summary.txt
grep -E "^\[  +(FAILED|PASSED)|tests? ran|Failure" $S/tests_A.txt | tee -a $S/summary.txt
for kv in auto fp8; do
  timeout 100 $B/paceline check --device cuda --model configs/models/qwen3-1.7b.json \
    --load-format dummy --gpu-memory-utilization 0.5 --kv-cache-dtype $kv 2>&1 |
    grep -E "^batch invariance|^error" | sed "s/^/A, KV $kv: /" | tee -a $S/summary.txt
done
PACELINE_DECODE_BENCH_ONLY='1024,64;8192,16;32768,1;32768,16;131072,4' COMPARE_ONLY=1 QUICK=1 \
  AB=prefill,decode AB_STEPS=default,fp8-decode OUT_DIR=$S/ab timeout 330 scripts/gpu_check
cat $S/ab/summary.txt >> $S/summary.txt
tar -czf $OUT/a.tar.gz -C $OUT a
