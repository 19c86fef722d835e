#!/usr/bin/env python3
"""Prints, as JSON ranges, the code points that Hugging Face tokenizers' regex engine
(Oniguruma) puts in \\p{L}, \\p{N} and \\s: the ground truth that src/model/tokenizer_unicode.cpp
holds, since PCRE2's Unicode tables may be older or newer than Oniguruma's.

    python3 tests/tokenizer/probe_onig_classes.py > onig_classes.json
"""

import json

import tokenizers
from tokenizers import Regex, pre_tokenizers


def members(pattern):
    chars = [chr(cp) for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF]
    text = "".join(chars)
    split = pre_tokenizers.Split(Regex(pattern), behavior="isolated")
    # Pieces come back with character offsets; a match is a single code point here.
    found = set()
    for piece, (start, end) in split.pre_tokenize_str(text):
        if end - start == 1 and len(piece) == 1:
            found.add(ord(piece))
    # Unmatched runs also come back as pieces; keep only those the pattern itself matches.
    probe = pre_tokenizers.Split(Regex("^(?:" + pattern + ")$"), behavior="removed")
    return sorted(cp for cp in found if probe.pre_tokenize_str(chr(cp)) == [])


def ranges(cps):
    out = []
    for cp in cps:
        if out and out[-1][1] == cp - 1:
            out[-1][1] = cp
        else:
            out.append([cp, cp])
    return out


if __name__ == "__main__":
    result = {"tokenizers": tokenizers.__version__}
    for name, pattern in [("L", r"\p{L}"), ("N", r"\p{N}"), ("s", r"\s")]:
        result[name] = ranges(members(pattern))
    print(json.dumps(result))
