#pragma once
// Unicode NFC normalization (the "NFC" normalizer of tokenizer.json) as Hugging Face tokenizers
// does it: through utf8proc, except that the marks Unicode 10 and later added stay where they
// are, since tokenizers' tables are Unicode 9.0. A fast path returns text whose every character
// is NFC-stable in any context as is.
#include <string>
#include <string_view>

namespace paceline {

// True when `text` (valid UTF-8) is certainly already NFC: no character of it can change or
// combine under NFC. Plain ASCII, accented letters, CJK, kana and emoji all pass.
bool nfc_quick_check(std::string_view text);

// The NFC form of `text` (valid UTF-8). Returns `text` itself when it is already NFC, otherwise
// a view of `storage`, which receives the normalized text.
std::string_view nfc_normalize(std::string_view text, std::string& storage);

}  // namespace paceline
