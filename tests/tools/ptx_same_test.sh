#!/usr/bin/env bash
# tools/ptx_same on a throwaway repository with one kernel: a change that leaves the code alone
# (a renamed local, a comment, another kernel ahead of it in the file) is "same" with exit 0; a
# change of arithmetic is "DIFF" with exit 1;
# a template that gained a parameter is matched through an OLD=NEW rename of its mangled name,
# and without the rename its kernel is missing (exit 1); a malformed rename and an unknown commit
# are refused with exit 2; registers numbered otherwise compare equal, operands in other roles do
# not. 77 (skipped) without nvcc, git or python3.
set -uo pipefail
command -v python3 >/dev/null 2>&1 || { echo "python3 not installed: skipped"; exit 77; }
command -v git >/dev/null 2>&1 || { echo "git not installed: skipped"; exit 77; }
command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ] ||
  { echo "nvcc not installed: skipped"; exit 77; }
root=$(cd "$(dirname "$0")/../.." && pwd)
tool=$root/tools/ptx_same
fail=0
repo=$(mktemp -d)
trap 'rm -rf "$repo"' EXIT
cd "$repo" || exit 1
git init -q . && git config user.email t@t && git config user.name t
mkdir -p src/k
kernel() {  # the body of the file: a template of one int, instantiated at 1
  cat >src/k/k.cu <<CU
template <int N$1>
__global__ void scale(float* y, const float* x, float a, int n) {
  const int $2 = blockIdx.x * blockDim.x + threadIdx.x;  $4
  if ($2 < n) y[$2] = $3;
}
template __global__ void scale<1>(float*, const float*, float, int);
CU
}
kernel "" i "a * x[i]" ""
git add -A && git commit -qm base
run() {  # expected exit status, pattern (grep -F) of the output, then the tool's arguments
  local want=$1 pattern=$2; shift 2
  local out rc
  out=$("$tool" "$@" 2>&1); rc=$?
  [ "$rc" = "$want" ] || { echo "FAIL: $*: exit $rc, not $want:"; echo "$out"; fail=1; }
  grep -qF -- "$pattern" <<<"$out" || { echo "FAIL: $*: no '$pattern' in:"; echo "$out"; fail=1; }
}
kernel "" j "a * x[j]" "// the index"
run 0 "1 kernels at HEAD: all the same" HEAD src/k/k.cu
kernel "" i "a * x[i] + 1.0f" ""
run 1 "DIFF" HEAD src/k/k.cu
# Another kernel ahead of it in the file moves the function index in its branch labels
# ($L__BB0_2 becomes $L__BB1_2): still the same code.
kernel "" i "a * x[i]" ""
{ printf '%s\n' '__global__ void shift(float* y, int n) {' \
    '  if (threadIdx.x < n) y[threadIdx.x] += 1.0f;' '}'; cat src/k/k.cu; } >src/k/k2.cu
mv src/k/k2.cu src/k/k.cu
run 0 "1 kernels at HEAD: all the same" HEAD src/k/k.cu
kernel ", int W = 1" i "a * x[i]" ""
sed -i 's/scale<1>/scale<1, 1>/' src/k/k.cu
run 1 "MISSING" HEAD src/k/k.cu
run 0 "all the same" HEAD src/k/k.cu Li1ELi1EEv=Li1EEv
run 2 "a rename is OLD=NEW" HEAD src/k/k.cu Li1E
run 2 "no commit" no-such-commit src/k/k.cu
# Registers numbered otherwise are the same computation; the same registers in another role are
# not (registers_renamed, behind the verdict "same up to register names").
python3 - "$tool" <<'PY' || { echo "FAIL: registers_renamed"; fail=1; }
import importlib.machinery, importlib.util, sys
loader = importlib.machinery.SourceFileLoader("ptx_same", sys.argv[1])
tool = importlib.util.module_from_spec(importlib.util.spec_from_loader("ptx_same", loader))
loader.exec_module(tool)
a = [".reg .b32 %r<4>;", "mov.u32 %r1, %tid.x;", "mov.u32 %r2, %ctaid.x;", "sub.s32 %r3, %r1, %r2;",
     "setp.lt.s32 %p1, %r3, 0;", "cvt.rn.f32.s32 %f2, %r3;"]
renumbered = [".reg .b32 %r<10>;", "mov.u32 %r5, %tid.x;", "mov.u32 %r9, %ctaid.x;",
              "sub.s32 %r2, %r5, %r9;", "setp.lt.s32 %p4, %r2, 0;", "cvt.rn.f32.s32 %f1, %r2;"]
swapped = [".reg .b32 %r<4>;", "mov.u32 %r1, %tid.x;", "mov.u32 %r2, %ctaid.x;", "sub.s32 %r3, %r2, %r1;",
           "setp.lt.s32 %p1, %r3, 0;", "cvt.rn.f32.s32 %f2, %r3;"]
assert tool.registers_renamed(a) == tool.registers_renamed(renumbered), "renumbered"
assert tool.registers_renamed(a) != tool.registers_renamed(swapped), "swapped operands"
assert "%tid.x" in tool.registers_renamed(a)[0], "special registers keep their names"
PY
[ "$fail" = 0 ] && echo "ptx_same: all checks passed"
exit "$fail"
