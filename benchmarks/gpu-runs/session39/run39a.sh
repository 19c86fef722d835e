#!/usr/bin/env bash
# Session 39, the first call: the whole `scripts/gpu_check` on main's tree (every GPU test, the
# batch-invariance checks, issue 14's table printed last by tools/issue14_table), detached into
# /tmp/gc, waited for up to WAIT s (default 540); a later call goes on with
# `scripts/gpu_check --wait /tmp/gc S`. Results: $OUT/gpu-check.tar.gz.
cd "$(dirname "$0")/../../.." || exit 1
tar -xJf gpu-pack/gpu-bundle.tar.xz || exit 1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
scripts/gpu_check --detach /tmp/gc
scripts/gpu_check --wait /tmp/gc "${WAIT:-540}"
