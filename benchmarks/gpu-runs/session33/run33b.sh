#!/usr/bin/env bash
# (Session 33 ran its bf16 1k x 1 profile and its GEMM bench alone, on an H100; the FP8 profiles and the GEMM ncu wait for an H200.)
# Prepared in session 32 for the call after run33a.sh (same bundle; carry ["gpu-pack"]; about
# 4 minutes; results packed into $OUT/f.tar.gz after each part):
# 1. Where the FP8 decode kernel's time goes at 32k x 16 on an H200 (ncu, every section): main's
#    (B) reads at 81% of the copy figure there where bf16 reads at 101% (session 32); then A's
#    (fp8-decode-cvt).
# 2. The bf16 decode kernel at 1k x 1 (main's): 11.7 us a layer in session 32's step timeline
#    for 4 MB of KV, 11.7 of the 22 us a layer the batch-1 step at 1k is above its weights floor.
# 3. The decode GEMMs at 1 to 128 rows, small-M against cuBLASLt, each projection's GB/s: the
#    batch-64 step at 1k is 1.8 ms above its weights floor outside the attention (session 32).
cd "$(dirname "$0")/../../.."  # the repository root
[ -d gpu-bundle ] || tar -xJf gpu-pack/gpu-bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/gpu-bundle/lib PACELINE_SOURCE_DIR=$PWD PACELINE_HOME=$PWD
S=$OUT/f; mkdir -p $S
pack() { tar -czf $OUT/f.tar.gz -C $OUT f; }
# main's binaries alone in a folder of their own for gpu_check's profile.
mkdir -p gm && cp gpu-bundle/paceline_old gm/paceline && cp gpu-bundle/cuda_tests_old gm/cuda_tests &&
  cp gpu-bundle/COMMIT_old gm/COMMIT && ln -sfn ../gpu-bundle/lib gm/lib
BIN_DIR=gm COMPARE_ONLY=1 QUICK=1 PROFILE_DECODE=1 OUT_DIR=$S/profile_b timeout 150 scripts/gpu_check
rm -f $S/profile_b/*.ncu-rep
pack
COMPARE_ONLY=1 QUICK=1 PROFILE_DECODE=1 OUT_DIR=$S/profile_a timeout 150 scripts/gpu_check
rm -f $S/profile_a/*.ncu-rep
pack
BIN_DIR=gm COMPARE_ONLY=1 QUICK=1 PROFILE_DECODE=bf16 PROFILE_DECODE_CASE=1024,1 \
  OUT_DIR=$S/profile_1k timeout 120 scripts/gpu_check
rm -f $S/profile_1k/*.ncu-rep
pack
PACELINE_GEMM_BENCH=1 timeout 150 gm/cuda_tests --gtest_color=no \
  --gtest_filter='CudaGemmBench.SmallMAgainstCublas' 2>&1 | grep -E '^\[ small-m bench' >$S/gemm_bench.txt
pack
# 4. ncu of the small-M GEMM on o_proj (the projection furthest from the copy rate) at 64 rows
#    and at 1 (the 31st launch of each kernel size in the bench's o_proj rows: warmed up).
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
for nt in 8 1; do
  PACELINE_GEMM_BENCH=1 PACELINE_GEMM_BENCH_SHAPE=o_proj timeout 120 $ncu --clock-control none \
    --set full --kernel-name-base demangled -k "regex:gemm_small_m_kernel<$nt," --launch-skip 30 \
    --launch-count 1 -f -o $S/gemm_nt$nt gm/cuda_tests --gtest_color=no \
    --gtest_filter='CudaGemmBench.SmallMAgainstCublas' >$S/gemm_nt${nt}_run.txt 2>&1
  $ncu -i $S/gemm_nt$nt.ncu-rep --page details >$S/gemm_nt${nt}_details.txt 2>&1
  $ncu -i $S/gemm_nt$nt.ncu-rep --page source --print-source sass --csv >$S/gemm_nt${nt}_sass.csv 2>&1
  tools/ncu_sass_summary $S/gemm_nt${nt}_sass.csv >$S/gemm_nt${nt}_stalls.txt 2>&1
  rm -f $S/gemm_nt$nt.ncu-rep $S/gemm_nt${nt}_sass.csv
  pack
done
grep -E "Duration|Memory Throughput|DRAM Throughput" $S/gemm_nt*_details.txt
cat $S/profile_b/summary.txt $S/profile_a/summary.txt $S/profile_1k/summary.txt $S/gemm_bench.txt
