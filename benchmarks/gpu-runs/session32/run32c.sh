#!/usr/bin/env bash
# Session 32, the last of its device time: why the FP8 decode step at 32k x 16 is 16.14 ms on
# this H200 against 15.56 in session 23 while the kernel bench is the same (310.0 against 309.7
# us). The step reads a sequence's blocks in allocation order, the bench in shuffled order; the
# cache became head-major inside each block in between (99a30bf). B: main (c1ee7d9); pre: 6109e21
# (slot-major); then B with 32-key blocks (runs of 4 KB per head instead of 2 KB). Staged:
# `VARIANT=pre BUILD_DIR=build-cuda scripts/gpu_check --stage` on 6109e21 into the bundle of
# run32b.sh; carry ["gpu-pack"].
cd "$(dirname "$0")/../../.."  # the repository root
tar -xJf gpu-pack/gpu-bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/gpu-bundle/lib PACELINE_SOURCE_DIR=$PWD PACELINE_HOME=$PWD
mkdir -p $OUT/d; S=$OUT/d/s.txt
step() {  # binary, extra args
  local bin=$1; shift
  echo "== $bin $*" >>$S
  timeout 70 gpu-bundle/$bin check --device cuda --load-format dummy --model configs/models/qwen3-8b.json \
    --kv-cache-memory 48G --kv-cache-dtype fp8 --max-num-seqs 64 --timing --skip-invariance \
    --decode-batches 16 --decode-context 32768 --prefill-lengths 1024 "$@" 2>&1 |
    grep -E '^\| decode|^error' >>$S
  tar -czf $OUT/d.tar.gz -C $OUT d
}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >>$S
step paceline_old
step paceline_pre
step paceline_old --block-size 32
cat $S
