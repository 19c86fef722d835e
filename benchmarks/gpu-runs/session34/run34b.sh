#!/usr/bin/env bash
# Prepared in session 33: the whole `scripts/gpu_check` on main's binaries (the same bundle as
# run34a.sh), with the prefill attention's profile, in two device calls back to back (the
# check outlasts one call; the machine must stay warm between them):
#   bash benchmarks/gpu-runs/session34/run34b.sh start
#   bash benchmarks/gpu-runs/session34/run34b.sh wait   # packs $OUT/gpu-check.tar.gz
cd "$(dirname "$0")/../../.."  # the repository root
[ -d gpu-bundle ] || tar -xJf gpu-pack/gpu-bundle.tar.xz
case ${1:-} in
  start) PROFILE_PREFILL=1 scripts/gpu_check --detach /tmp/gc34 ;;
  wait) scripts/gpu_check --wait /tmp/gc34 545 ;;
  *) echo "usage: $0 start|wait" >&2; exit 2 ;;
esac
