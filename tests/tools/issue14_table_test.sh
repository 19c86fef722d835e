#!/usr/bin/env bash
# tools/issue14_table on a summary in the form `scripts/gpu_check` writes: each row from the last
# check with its arguments (a comparison earlier in the file under another setting, and an A/B
# header's rows, are not taken), met or not against issue 14's targets, the 128k row as a
# multiple of its floor, a row no check ran as not run; on a card other than the H200 nothing
# judged and the card said; an unreadable file is exit 2.
# 77 (skipped) without python3.
set -uo pipefail
command -v python3 >/dev/null 2>&1 || { echo "python3 not installed: skipped"; exit 77; }
root=$(cd "$(dirname "$0")/../.." && pwd)
tool=$root/tools/issue14_table
fail=0
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
row() { echo "| $1 | $2 | $2 | $3 | 50% |"; }
{
  echo "== 2026-12-07T00:00:00Z NVIDIA H200, 143771 MiB, 580.159.04"
  echo "== PACELINE_DECODE_PREFETCH=0"
  echo "== paceline check --model configs/models/qwen3-8b.json --kv-cache-memory 48G --max-num-seqs 64 --timing --skip-invariance --decode-batches 1,16,64 --prefill-lengths 1024"
  echo "| step | median GPU ms (CUDA events) | median wall ms | floor ms | floor / measured |"
  echo "| --- | ---: | ---: | ---: | ---: |"
  row "decode batch 1, context 1024, CUDA graph" 9.99 3.576
  echo "== A: paceline check --max-num-seqs 64 --decode-batches 64"
  row "decode batch 64, context 1024, CUDA graph" 1.0 5.803
  echo "== paceline check --model configs/models/qwen3-8b.json --kv-cache-memory 48G --timing --mixed-chunk 2048"
  row "decode batch 1, context 1024, CUDA graph" 5.5 3.576
  row "prefill 8192 tokens" 226.2 170
  row "prefill 32768 tokens" 1350.5 958
  echo "== paceline check --model configs/models/qwen3-8b.json --kv-cache-memory 48G --max-num-seqs 64 --timing --decode-batches 1,16,64 --prefill-lengths 1024"
  echo "batch invariance: PASS"
  row "decode batch 1, context 1024, CUDA graph" 4.15 3.576
  row "decode batch 16, context 1024, CUDA graph" 5.3 4.106
  row "decode batch 64, context 1024, CUDA graph" 8.0 5.803
  echo "== paceline check --model configs/models/qwen3-8b.json --kv-cache-memory 48G --kv-cache-dtype fp8 --timing --skip-invariance --decode-batches 1,16 --decode-context 32768 --max-num-seqs 64 --prefill-lengths 1024"
  row "decode batch 1, context 32768, CUDA graph" 5.2 4.106
  row "decode batch 16, context 32768, CUDA graph" 16.1 12.583
  echo "== paceline check --model configs/models/qwen3-8b-yarn.json --kv-cache-memory 48G --kv-cache-dtype fp8 --timing --skip-invariance --max-num-seqs 64 --decode-batches 4 --decode-context 131071 --prefill-lengths 1024"
  row "decode batch 4, context 131071, CUDA graph" 14.3 12.58
  echo "== exit status 0"
} >"$dir/summary.txt"
out=$("$tool" "$dir/summary.txt"); rc=$?
expect() {  # a line the table must have (grep -F)
  grep -qF -- "$1" <<<"$out" || { echo "FAIL: no '$1' in:"; echo "$out"; fail=1; }
}
[ "$rc" = 0 ] || { echo "FAIL: exit $rc"; fail=1; }
expect "| decode batch 1, 1k | 4.15 | 3.576 | 4.2 | yes |"
expect "| decode batch 16, 1k | 5.3 | 4.106 |  |  |"
expect "| decode batch 64, 1k | 8 | 5.803 | 7 | no |"
expect "| decode batch 1, 32k, bf16 KV | not run | | 5.6 | |"
expect "| decode batch 1, 32k, FP8 KV | 5.2 | 4.106 | 4.4 | no |"
expect "| decode batch 16, 32k, FP8 KV | 16.1 | 12.583 | 14.5 | no |"
expect "| decode batch 4, 128k (YaRN), FP8 KV | 14.3 (1.14 x) | 12.58 | 1.15 x floor | yes |"
expect "| prefill 8k | 226.2 | 170 | 250 | yes |"
expect "| prefill 32k | 1350.5 | 958 | 1300 | no |"
# On another card the same rows, none judged, and the card said above the table.
sed '1s/NVIDIA H200, 143771 MiB/NVIDIA H100 80GB HBM3, 81559 MiB/' "$dir/summary.txt" >"$dir/h100.txt"
out=$("$tool" "$dir/h100.txt"); rc=$?
[ "$rc" = 0 ] || { echo "FAIL: exit $rc on another card"; fail=1; }
expect "NVIDIA H100 80GB HBM3: the floors and targets are the H200's, so no row is judged"
expect "| decode batch 1, 1k | 4.15 | 3.576 | 4.2 |  |"
expect "| decode batch 64, 1k | 8 | 5.803 | 7 |  |"
expect "| decode batch 4, 128k (YaRN), FP8 KV | 14.3 (1.14 x) | 12.58 | 1.15 x floor |  |"
"$tool" "$dir/no-such-file" >/dev/null 2>&1
[ $? = 2 ] || { echo "FAIL: an unreadable file is not exit 2"; fail=1; }
[ "$fail" = 0 ] && echo "issue14_table: all checks passed"
exit "$fail"
