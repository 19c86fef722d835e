# Sourced by a device script (from session 37 on) after it sets RESULT (the name of its results
# folder under $OUT): unpacks the bundle that `scripts/gpu_check --stage` packs (carried in
# gpu-pack/), sets the environment its binaries need, and defines
#   B         the bundle's folder
#   S         $OUT/$RESULT, where the results go
#   pack      packs S into $OUT/$RESULT.tar.gz (call it after each part, so a call cut short
#             still brings back what it did)
#   log ...   a line "== ..." into S/summary.txt and the output
# The scripts before session 37 spell the same lines out.
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1  # the repository root
tar -xJf gpu-pack/gpu-bundle.tar.xz || exit 1
export LD_LIBRARY_PATH=$PWD/gpu-bundle/lib PACELINE_SOURCE_DIR=$PWD PACELINE_HOME=$PWD
B=gpu-bundle
S=$OUT/${RESULT:?set RESULT before sourcing common.sh}
mkdir -p "$S"
pack() { tar -czf "$OUT/$RESULT.tar.gz" -C "$OUT" "$RESULT"; }
log() { echo "== $*" | tee -a "$S/summary.txt"; }
