#!/usr/bin/env bash
# Session 31, second call: main after the head-major KV cache merged (binaries of 99a30bf,
# `BUILD_DIR=build-cuda scripts/gpu_check --stage`): every GPU test and the small models' checks
# (QUICK=1), an ncu profile of the bf16 decode attention at 1k x 64 (the step where batch 64
# misses its target), then Qwen3-8B's batch invariance at --max-num-seqs 64 with its 1k steps.
cd "$(dirname "$0")/../../.."  # the repository root
tar -xJf gpu-pack/gpu-bundle.tar.xz
S=$OUT/b
QUICK=1 PROFILE_DECODE=bf16 PROFILE_DECODE_CASE=1024,64 OUT_DIR=$S timeout 420 scripts/gpu_check
export LD_LIBRARY_PATH=$PWD/gpu-bundle/lib PACELINE_SOURCE_DIR=$PWD PACELINE_HOME=$PWD
timeout 120 gpu-bundle/paceline check --device cuda --model configs/models/qwen3-8b.json \
  --load-format dummy --kv-cache-memory 39G --max-num-seqs 64 --timing --decode-batches 1,16,64 \
  --prefill-lengths 1024 2>&1 | grep -E "^batch|^\||^error" | tee -a $S/summary.txt
rm -f $S/*.ncu-rep
tar -czf $OUT/b.tar.gz -C $OUT b
