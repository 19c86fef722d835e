#!/usr/bin/env bash
# Session 28, call 1: the overlap branch (A, PACELINE_PREFILL_OVERLAP) against main (B).
cd "$(dirname "$0")/../../.."  # the repository root
tar -xJf gpu-pack/gpu-bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/gpu-bundle/lib PACELINE_SOURCE_DIR=$PWD PACELINE_HOME=$PWD
B=gpu-bundle; S=$OUT/a; mkdir -p $S
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $S/summary.txt
echo "A $(cat $B/COMMIT) B $(cat $B/COMMIT_old)" | tee -a $S/summary.txt
for ov in 1 0; do
  PACELINE_PREFILL_OVERLAP=$ov timeout 120 $B/cuda_tests --gtest_color=no \
    --gtest_filter='CudaPrefillAttention.*' > $S/tests$ov.txt 2>&1
  echo "tests OVERLAP=$ov rc $?" | tee -a $S/summary.txt
  grep -E "^\[  +(OK|FAILED)|PASSED|Failure" $S/tests$ov.txt | head -20 | tee -a $S/summary.txt
done
if grep -q "PASSED" $S/tests1.txt && ! grep -q FAILED $S/tests1.txt; then
  for r in 1 2; do
    for t in "1 cuda_tests" "0 cuda_tests" "0 cuda_tests_old"; do
      set -- $t
      echo "== bench run $r OVERLAP=$1 $2" | tee -a $S/summary.txt
      PACELINE_PREFILL_OVERLAP=$1 PACELINE_PREFILL_BENCH=1 timeout 90 $B/$2 --gtest_color=no \
        --gtest_filter='CudaPrefillAttentionBench.*' > $S/bench.txt 2>&1
      grep "prefill bench" $S/bench.txt | grep -E "wgmma  " | tee -a $S/summary.txt
    done
  done
  PACELINE_PREFILL_OVERLAP=1 OUT_DIR=$S/ab COMPARE_ONLY=1 QUICK=1 AB=prefill timeout 300 scripts/gpu_check > $S/ab.txt 2>&1
  echo "AB rc $?" | tee -a $S/summary.txt
  grep -vE "wgmma" $S/ab/summary.txt | tee -a $S/summary.txt
fi
echo "== done" | tee -a $S/summary.txt
tar -czf $OUT/a.tar.gz -C $OUT a
