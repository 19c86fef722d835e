#!/usr/bin/env bash
# Session 28, call 3: main with the overlap default: bits, bench, the FP8-cache kernel's profile,
# and a 32k prefill step's kernel timeline (attention in the step against its bench).
cd "$(dirname "$0")/../../.."  # the repository root
tar -xJf gpu-pack/gpu-bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/gpu-bundle/lib PACELINE_SOURCE_DIR=$PWD PACELINE_HOME=$PWD
B=gpu-bundle; S=$OUT/c; mkdir -p $S
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $S/summary.txt
echo "commit $(cat $B/COMMIT)" | tee -a $S/summary.txt
timeout 120 $B/cuda_tests --gtest_color=no --gtest_filter='CudaPrefillAttention*' > $S/tests.txt 2>&1
echo "tests rc $?" | tee -a $S/summary.txt
grep -E "^\[  +(OK|FAILED)|PASSED|Failure" $S/tests.txt | head -20 | tee -a $S/summary.txt
PACELINE_PREFILL_BENCH=1 timeout 90 $B/cuda_tests --gtest_color=no \
  --gtest_filter='CudaPrefillAttentionBench.*' > $S/bench.txt 2>&1
grep "prefill bench" $S/bench.txt | grep -E "wgmma  |wgmma, fp8" | tee -a $S/summary.txt
timeout 150 $B/paceline check --device cuda --model configs/models/qwen3-8b.json --load-format dummy \
  --kv-cache-memory 39G --timing --skip-invariance --decode-batches 1 --prefill-lengths 8192,32768 \
  --kernel-timeline $S/timeline.md > $S/check_tl.txt 2>&1
echo "timeline rc $?" | tee -a $S/summary.txt
grep -E "^\|" $S/check_tl.txt | tee -a $S/summary.txt
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
PACELINE_PREFILL_BENCH=1 timeout 240 "$ncu" --clock-control none --set full \
  --kernel-name-base demangled -k 'regex:attention_prefill_ws_kernel<\(bool\)1' \
  --launch-skip 7 --launch-count 1 -f -o "$S/prefill_fp8" \
  $B/cuda_tests --gtest_color=no --gtest_filter='CudaPrefillAttentionBench.*' > $S/ncu_run.txt 2>&1
echo "ncu rc $?" | tee -a $S/summary.txt
"$ncu" -i "$S/prefill_fp8.ncu-rep" --page details > "$S/details.txt" 2>&1
"$ncu" -i "$S/prefill_fp8.ncu-rep" --page source --print-source sass --csv > "$S/sass.csv" 2>&1
grep -E "attention_prefill|Duration|Throughput|Registers Per|Achieved Occupancy" $S/details.txt | head -20 | tee -a $S/summary.txt
tools/ncu_sass_summary "$S/sass.csv" 2>&1 | head -60 | tee -a $S/summary.txt
xz -9 $S/sass.csv
echo "== done" | tee -a $S/summary.txt
tar -czf $OUT/c.tar.gz -C $OUT c
