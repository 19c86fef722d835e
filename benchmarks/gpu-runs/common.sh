# Sourced by a device script (from session 37 on) after it sets RESULT (the name of its results
# folder under $OUT): unpacks the bundle that `scripts/gpu_check --stage` packs (carried in
# gpu-pack/), sets the environment its binaries need, and defines
#   B         the bundle's folder
#   S         $OUT/$RESULT, where the results go
#   pack      packs S into $OUT/$RESULT.tar.gz (call it after each part, so a call cut short
#             still brings back what it did)
#   log ...   a line "== ..." into S/summary.txt and the output
#   check NAME=VALUE ... -- ARGS...   `paceline check --device cuda --load-format dummy ARGS`
#             under that environment (at most CHECK_TIMEOUT s, default 120): its table rows (not
#             the sampled ones), batch-invariance verdict and errors into the summary, then pack
# The scripts before session 37 spell the same lines out.
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1  # the repository root
tar -xJf gpu-pack/gpu-bundle.tar.xz || exit 1
export LD_LIBRARY_PATH=$PWD/gpu-bundle/lib PACELINE_SOURCE_DIR=$PWD PACELINE_HOME=$PWD
B=gpu-bundle
S=$OUT/${RESULT:?set RESULT before sourcing common.sh}
mkdir -p "$S"
pack() { tar -czf "$OUT/$RESULT.tar.gz" -C "$OUT" "$RESULT"; }
log() { echo "== $*" | tee -a "$S/summary.txt"; }
check() {
  local env=()
  while [ "$1" != -- ]; do env+=("$1"); shift; done
  shift
  log "${env[*]} paceline check $*"
  env "${env[@]}" timeout "${CHECK_TIMEOUT:-120}" "$B/paceline" check --device cuda \
    --load-format dummy "$@" 2>&1 | grep -E '^\||^batch invariance|^error' | grep -v sampled |
    tee -a "$S/summary.txt"
  pack
}
