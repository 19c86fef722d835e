#!/usr/bin/env bash
# Session 38's last device time (about 2 minutes of commands) on an H200, if one comes: decode at
# 1k (batches 1, 16, 64), then the FP8 rows with bulk copies off and on (32k batches 1 and 16;
# 128k x 4), each packed as it ends. Results: $OUT/r6.tar.gz.
RESULT=r6
source "$(dirname "$0")/../common.sh"  # B, S, pack, log; the repository root
log "binaries of $(cat $B/COMMIT); $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader)"
check() {  # PACELINE_DECODE_FP8_BULK's value, then paceline check's arguments
  local bulk=$1; shift
  log "PACELINE_DECODE_FP8_BULK=$bulk paceline check $*"
  PACELINE_DECODE_FP8_BULK=$bulk timeout 60 $B/paceline check --device cuda --load-format dummy \
    --max-num-seqs 64 --timing --skip-invariance --prefill-lengths 1024 "$@" 2>&1 |
    grep -E '^\| decode batch|^error' | grep -v sampled | tee -a $S/summary.txt
  pack
}
check 0 --model configs/models/qwen3-8b.json --kv-cache-memory 48G --decode-batches 1,16,64
for bulk in 0 1; do
  check $bulk --model configs/models/qwen3-8b.json --kv-cache-memory 48G --kv-cache-dtype fp8 \
    --decode-batches 1,16 --decode-context 32768
done
for bulk in 0 1; do
  check $bulk --model configs/models/qwen3-8b-yarn.json --kv-cache-memory 48G --kv-cache-dtype fp8 \
    --decode-batches 4 --decode-context 131071
done
