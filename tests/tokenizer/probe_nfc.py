#!/usr/bin/env python3
"""Prints, as JSON, every probe string that Hugging Face tokenizers' NFC normalizer changes,
with what it changes it to: each code point alone, each between "e" and U+0301 (reordering and
composition with marks), each before U+0316 U+0301, and the canonical decomposition of every
composed character Python knows. nfc_probe_test.cpp checks paceline's NFC against it: a probe
string absent from the list must come out unchanged.

    python3 tests/tokenizer/probe_nfc.py > nfc_probe.json
"""

import json
import unicodedata

import tokenizers
from tokenizers import normalizers


def probes():
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        x = chr(cp)
        yield x
        yield "e" + x + "\u0301"
        yield x + "\u0316\u0301"
        nfd = unicodedata.normalize("NFD", x)
        if nfd != x:
            yield nfd


def main():
    nfc = normalizers.NFC()
    changed = [[s, nfc.normalize_str(s)] for s in probes()]
    changed = [pair for pair in changed if pair[0] != pair[1]]
    print(json.dumps({"tokenizers": tokenizers.__version__,
                      "python_unicode": unicodedata.unidata_version, "changed": changed},
                     ensure_ascii=True))


if __name__ == "__main__":
    main()
