#!/usr/bin/env bash
# Session 30, call 3: the decode attention's block-table entry loaded a tile ahead and used after
# the tile's math (slots: the lazy rescale of call 1 plus that) against main (B) and the lazy
# rescale alone (A): the decode tests on slots, the decode kernel bench in turn (bits hashed),
# Qwen3-8B FP8 decode steps at 32k x 1 and 16, B and slots in turn, then ncu of slots' FP8 decode
# attention at 32k x 16. NEW, SIDES and NAME name another build, the sides and the output folder
# (run30c.sh); the defaults are what ran.
cd "$(dirname "$0")/../../.."  # the repository root
NEW=${NEW:-slots} SIDES=${SIDES:-"B A $NEW"} NAME=${NAME:-b}
tar -xJf gpu-pack/gpu-bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/gpu-bundle/lib PACELINE_SOURCE_DIR=$PWD PACELINE_HOME=$PWD
B=gpu-bundle; S=$OUT/$NAME; mkdir -p $S
suffix_of() { case $1 in A) echo ;; B) echo _old ;; *) echo "_$1" ;; esac; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $S/summary.txt
timeout 150 $B/cuda_tests_$NEW --gtest_color=no --gtest_filter='CudaDecodeAttention.*' > $S/tests_$NEW.txt 2>&1
echo "== $NEW decode tests rc $?" | tee -a $S/summary.txt
grep -E "^\[  +(OK|FAILED)|PASSED|Failure" $S/tests_$NEW.txt | tee -a $S/summary.txt
for r in 1 2; do
  for side in $SIDES; do
    PACELINE_DECODE_BENCH=1 PACELINE_DECODE_BENCH_ONLY='1024,64;8192,16;32768,1;32768,16;131072,4' \
      timeout 100 $B/cuda_tests$(suffix_of $side) --gtest_color=no --gtest_filter='CudaDecodeAttentionBench.*' 2>&1 |
      grep -E '^\[ bench \] \| [0-9]' | grep -E 'production \(' | sed "s/^/$side run $r /" | tee -a $S/summary.txt
  done
done
for side in B $NEW; do
  echo "== $side: FP8 decode steps" | tee -a $S/summary.txt
  timeout 150 $B/paceline$(suffix_of $side) check --device cuda --model configs/models/qwen3-8b.json \
    --load-format dummy --kv-cache-memory 39G --kv-cache-dtype fp8 --timing --skip-invariance \
    --decode-batches 1,16 --decode-context 32768 --prefill-lengths 1024 2>&1 |
    grep -E "^\| decode|^error" | tee -a $S/summary.txt
done
mkdir -p gb2 && ln -sf ../$B/cuda_tests_$NEW gb2/cuda_tests && ln -sfn ../$B/lib gb2/lib
BIN_DIR=gb2 COMPARE_ONLY=1 QUICK=1 PROFILE_DECODE=1 OUT_DIR=$S/p timeout 200 scripts/gpu_check > /dev/null 2>&1
cat $S/p/summary.txt | tee -a $S/summary.txt
rm -f $S/p/decode_raw.csv
tar -czf $OUT/$NAME.tar.gz -C $OUT $NAME
