#!/usr/bin/env bash
# Session 34: where the small-M GEMM's time goes at 64 rows (ncu, every section, main's binary
# from the bundle of run34a.sh; carry ["gpu-pack"]; about 5 minutes; $OUT/g.tar.gz). At 64 rows
# the kernel loses 7-23% of its one-row rate (session 33's bench); the 64-row step at 1k is about
# 1.8 ms above its weights floor outside the attention. o_proj and qkv_proj, 64 rows and 1 (the
# 31st launch of each kernel size in the bench's rows of that shape: warmed up), then the bench.
cd "$(dirname "$0")/../../.."  # the repository root
[ -d gpu-bundle ] || tar -xJf gpu-pack/gpu-bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/gpu-bundle/lib PACELINE_SOURCE_DIR=$PWD PACELINE_HOME=$PWD
S=$OUT/g; mkdir -p $S
pack() { tar -czf $OUT/g.tar.gz -C $OUT g; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >$S/card.txt
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
for shape in o_proj qkv_proj; do
  for nt in 8 1; do
    name=gemm_${shape}_nt$nt
    PACELINE_GEMM_BENCH=1 PACELINE_GEMM_BENCH_SHAPE=$shape timeout 100 $ncu --clock-control none \
      --set full --kernel-name-base demangled -k "regex:gemm_small_m_kernel<\\(int\\)$nt," --launch-skip 30 \
      --launch-count 1 -f -o $S/$name gpu-bundle/cuda_tests --gtest_color=no \
      --gtest_filter='CudaGemmBench.SmallMAgainstCublas' >$S/${name}_run.txt 2>&1
    $ncu -i $S/$name.ncu-rep --page details >$S/${name}_details.txt 2>&1
    $ncu -i $S/$name.ncu-rep --page source --print-source sass --csv >$S/${name}_sass.csv 2>&1
    tools/ncu_sass_summary $S/${name}_sass.csv >$S/${name}_stalls.txt 2>&1
    rm -f $S/$name.ncu-rep $S/${name}_sass.csv
    pack
  done
done
# The FP8 decode kernel at 32k x 16 (ncu, gpu_check's profile): it reads at about 75% of the copy
# rate there, where the bf16 kernel reads at about 100% (session 32's steps on the H200).
COMPARE_ONLY=1 QUICK=1 PROFILE_DECODE=1 OUT_DIR=$S/profile_fp8 timeout 150 scripts/gpu_check
rm -f $S/profile_fp8/*.ncu-rep
pack
PACELINE_GEMM_BENCH=1 timeout 150 gpu-bundle/cuda_tests --gtest_color=no \
  --gtest_filter='CudaGemmBench.SmallMAgainstCublas' 2>&1 | grep -E '^\[ small-m bench' >$S/gemm_bench.txt
pack
grep -E "Duration|Memory Throughput|DRAM Throughput|L2 Cache Throughput" $S/*_details.txt
