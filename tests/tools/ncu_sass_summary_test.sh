#!/usr/bin/env bash
# tools/ncu_sass_summary on a hand-made source page of five instructions (500 samples, 1,500
# instructions): the shares it prints, the wait each hot instruction is charged for, and a
# clear error on a file that is not a source page. 77 (skipped) without python3.
set -uo pipefail
command -v python3 >/dev/null 2>&1 || { echo "python3 not installed: skipped"; exit 77; }
root=$(cd "$(dirname "$0")/../.." && pwd)
tool=$root/tools/ncu_sass_summary
fail=0
expect() {  # description, pattern (grep -F), text
  if ! grep -qF -- "$2" <<<"$3"; then
    echo "FAIL: $1: no '$2' in:"; echo "$3"; fail=1
  fi
}
out=$("$tool" "$root/tests/tools/ncu_sass_fixture.csv" 3) || { echo "FAIL: exit $?"; fail=1; }
expect "totals" "1,500 instructions executed (warp level), 500 warp-state samples" "$out"
expect "reasons" "stall reasons: long_sb 60.0%, barrier 30.0%, wait 10.0%" "$out"
expect "opcodes" "opcodes: FADD 53.3%, MUFU 26.7%, SYNCS 6.7%" "$out"
# The try-wait's retry branch holds the samples; the tool names the try-wait as its cause.
expect "retry branch" "60.0%  0x20  @!P0  BRA 0x50  [long_sb 300]  <- SYNCS.PHASECHK" "$out"
expect "MMA wait" "30.0%  0x40  WARPGROUP.DEPBAR.LE gsb0, 0x0  [barrier 150]" "$out"
expect "FADD after a wait" "8.0%  0x30  FADD R1, R2, R3  [wait 40]  <- SYNCS.PHASECHK" "$out"
expect "hottest" "hottest 3 instructions" "$out"
if grep -qF "MUFU.EX2 R1, R1  [" <<<"$out"; then
  echo "FAIL: an instruction without samples listed as a wait"; fail=1
fi
# Not a source page: a clear message, non-zero.
bad=$(mktemp)
echo '"ID","Kernel Name"' >"$bad"
err=$("$tool" "$bad" 2>&1) && { echo "FAIL: exit 0 on a file without the columns"; fail=1; }
expect "bad file" "no header row with 'Address' and 'Source'" "$err"
rm -f "$bad"
err=$("$tool" 2>&1) && { echo "FAIL: exit 0 without arguments"; fail=1; }
expect "usage" "usage: tools/ncu_sass_summary SASS.csv [TOP]" "$err"
[ $fail = 0 ] && echo "ncu_sass_summary: all checks passed"
exit $fail
