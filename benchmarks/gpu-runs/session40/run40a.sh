#!/usr/bin/env bash
# Session 40: the tensor-parallel pieces written without a GPU, on one GPU (about 2 minutes):
# the same-device collectives (eager and from graphs), the ranks' weights (the embedding's
# vocabulary rows, a tied lm_head held once), the two-rank forward with the split embedding
# against HF, the executor of two ranks replaying their graphs, the host KV tier over two ranks
# eagerly and from graphs; then the one-GPU parity and graph tests, which the executor's changes
# touch; then `paceline check -tp 2 --ranks-on-one-device` on Qwen3-8B (batch invariance over two
# ranks, eager and graphs). Results: $OUT/r40a.tar.gz. Then run
# benchmarks/gpu-runs/session39/run39d.sh (the decode switches, still unmeasured).
RESULT=r40a
source "$(dirname "$0")/../common.sh"  # B, S, pack, log; the repository root
log "binaries of $(cat $B/COMMIT); $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader)"
timeout 240 $B/cuda_tests --gtest_color=no \
  --gtest_filter='*SameDeviceCollectives*:CudaRankWeights.*:*CudaTensorParallel*:*CudaHostTier*:*CudaParity*:*CudaNccl*:CheckCli.*' \
  >$S/tests.txt 2>&1
log "tests rc $? (124: timed out, a collective may have deadlocked)"
grep -E "^\[  +(FAILED|PASSED|OK|SKIPPED)|tests? ran|Failure|tensor parallel|differ" $S/tests.txt |
  head -120 | tee -a $S/summary.txt
pack
CHECK_TIMEOUT=240
check -- --model configs/models/qwen3-8b.json -tp 2 --ranks-on-one-device --kv-cache-memory 16G \
  --max-num-seqs 64
