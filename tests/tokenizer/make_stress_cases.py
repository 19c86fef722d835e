#!/usr/bin/env python3
"""Makes tests/tokenizer/stress_cases.jsonl with Hugging Face `tokenizers`: the corners that
tests/fixtures/tokenizer/ does not reach, for three tokenizer variants built from Qwen3's file.

    python3 tests/tokenizer/make_stress_cases.py --tokenizer third_party/qwen3-tokenizer --out DIR

Variants (stress_test.cpp rebuilds the same files from tokenizer.json):
  qwen3          the file as shipped
  qwen3_plain    the same, encoded with encode_special_tokens=True (paceline's parse_special=false)
  llama3_style   Llama-3's split regex, no normalizer, ignore_merges=true, merges as "a b" strings
Texts: random code points from every plane, white space and format characters, letters of
recent Unicode versions, combining and Hangul sequences, case-folding contractions, digit runs,
long words, added tokens next to text. Each row: {"text_b64", "qwen3": ids, "qwen3_plain": ids,
"llama3_style": ids}, ids from encode(text, add_special_tokens=False).
"""

import argparse
import base64
import json
import os
import random
import tempfile

import tokenizers

SEED = 20261129
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                  r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

SPECIAL_CHARS = [
    "\u180e", "\u0085", "\u00a0", "\u1680", "\u2000", "\u200a", "\u200b", "\u2028", "\u2029",
    "\u202f", "\u205f", "\u3000", "\ufeff", "\u000b", "\u000c", "\u001c", "\u001f", "\t", "\r",
    "\n", " ", "\u00ad", "\u2060", "\u17b4", "\u034f",
    # letters and digits added in Unicode 13-16 (CJK Ext G/H, Kawi, Cyrillic Ext-D, Garay...)
    "\U00030000", "\U00031350", "\U00011f04", "\U0001e030", "\U00010d4a", "\U0001e5d0",
    "\U00011f50", "\U0001e4f0", "\U00016d40", "\U000105c0", "\U0001ccf0",
    # case folding: long s, Kelvin sign, dotless i, sharp s, Turkish dotted I
    "\u017f", "\u212a", "\u0131", "\u00df", "\u0130", "\u1e9e",
    "\u00b2", "\u0663", "\u2163", "\u3007", "\U0001d7d8", "\u2460",
]
PIECES = ["'s", "'S", "'t", "'RE", "'Ve", "'m", "'LL", "'d", "'", "’s", "don't", "I'M", "x",
          "word", "Word", "123", "4567890", "  ", "\n\n", " \n ", "<think>", "<|im_end|>",
          "<|im_start|>", "</tool_call>", "<|endoftext|>", "<|im_end", "é", "e\u0301", "中文",
          "😀", "👩‍💻", "🇫🇷", "\u1100\u1161\u11a8", "\uac00\u11a8", "a\u0323\u0302"]


def random_char(rng):
    while True:
        cp = rng.choice([rng.randint(0, 0x7F), rng.randint(0x80, 0x7FF), rng.randint(0x800, 0xFFFF),
                         rng.randint(0x10000, 0x10FFFF), rng.randint(0x10000, 0x3FFFF)])
        if not 0xD800 <= cp <= 0xDFFF:
            return chr(cp)


def texts(rng):
    out = []
    for _ in range(1500):  # random code points mixed with spaces and letters
        n = rng.randint(1, 12)
        out.append("".join(rng.choice([random_char(rng), random_char(rng), " ", "a", "'", "1"])
                           for _ in range(n)))
    for _ in range(1200):  # special characters next to pieces
        n = rng.randint(1, 8)
        out.append("".join(rng.choice([rng.choice(SPECIAL_CHARS), rng.choice(PIECES),
                                       rng.choice(SPECIAL_CHARS) * rng.randint(1, 3)])
                           for _ in range(n)))
    for _ in range(150):  # long words and digit runs
        letters = rng.choice(["abcdefghijklmnopqrstuvwxyz", "etaoinshr", "中文字词语", "0123456789"])
        out.append("".join(rng.choice(letters) for _ in range(rng.randint(20, 300))))
    for ch in SPECIAL_CHARS:
        out += [ch, "a" + ch + "b", ch + ch + "!", " " + ch, "'" + ch, ch + "\n", "x" + ch + " y"]
    return out


def llama3_style(path):
    with open(path, encoding="utf-8") as f:
        spec = json.load(f)
    spec["normalizer"] = None
    spec["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {"Regex": LLAMA3_PATTERN}
    spec["model"]["ignore_merges"] = True
    spec["model"]["merges"] = [a + " " + b for a, b in spec["model"]["merges"]]
    tmp = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8")
    json.dump(spec, tmp, ensure_ascii=False)
    tmp.close()
    return tokenizers.Tokenizer.from_file(tmp.name)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokenizer", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    path = os.path.join(args.tokenizer, "tokenizer.json")
    qwen3 = tokenizers.Tokenizer.from_file(path)
    plain = tokenizers.Tokenizer.from_file(path)
    plain.encode_special_tokens = True
    variants = {"qwen3": qwen3, "qwen3_plain": plain, "llama3_style": llama3_style(path)}
    rng = random.Random(SEED)
    rows, seen = [], set()
    for text in texts(rng):
        if text in seen:
            continue
        seen.add(text)
        row = {"text_b64": base64.b64encode(text.encode("utf-8")).decode("ascii")}
        for name, tok in variants.items():
            row[name] = tok.encode(text, add_special_tokens=False).ids
        rows.append(row)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "stress_cases.jsonl"), "w", encoding="ascii") as f:
        for row in rows:
            f.write(json.dumps(row, separators=(",", ":")) + "\n")
    print("tokenizers", tokenizers.__version__, "rows", len(rows))


if __name__ == "__main__":
    main()
