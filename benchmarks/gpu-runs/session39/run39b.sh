#!/usr/bin/env bash
# Session 39, on any card while no H200 comes: where the decode attention's per-key work goes.
# ncu (--set full) of the FP8 kernel at 32k x 16 and of the bf16 kernel at 32k x 16 and 1k x 64
# in their bench (scripts/gpu_check's PROFILE_DECODE), each into its own folder; then the pipes'
# utilization and the instructions executed by pipe from each raw page, so that the cycles each
# pipe spends a tile (the same SM on an H100 and an H200) say which pipe an FP8 tile is bound by
# at the H200's rate. About 3 minutes. Results: $OUT/r39b.tar.gz.
cd "$(dirname "$0")/../../.." || exit 1
tar -xJf gpu-pack/gpu-bundle.tar.xz || exit 1
mkdir -p /tmp/r39b
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee /tmp/r39b/card.txt
run() {  # folder, PROFILE_DECODE, case
  OUT_DIR=/tmp/r39b/$1 COMPARE_ONLY=1 QUICK=1 PROFILE_DECODE=$2 PROFILE_DECODE_CASE=$3 \
    timeout 200 scripts/gpu_check >/tmp/r39b/$1.log 2>&1
  python3 - "/tmp/r39b/$1/decode_raw.csv" <<'PY' | tee /tmp/r39b/$1_pipes.txt
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
head, units, vals = rows[0], rows[1], rows[2]
for h, u, v in zip(head, units, vals):
    if ("pipe" in h and ("pct" in h or "inst_executed" in h)) or h in (
            "gpu__time_duration.sum", "sm__cycles_elapsed.avg", "sm__inst_executed.sum",
            "dram__bytes_read.sum", "smsp__cycles_active.avg"):
        print(f"{h} [{u}] = {v}")
PY
  tar -czf "$OUT/r39b.tar.gz" -C /tmp r39b
}
run fp8_32k_16 fp8 32768,16
run bf16_32k_16 bf16 32768,16
run bf16_1k_64 bf16 1024,64
