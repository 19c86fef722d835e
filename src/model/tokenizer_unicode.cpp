#include "model/tokenizer_unicode.h"

#include <algorithm>
#include <iterator>

#include "model/utf8.h"

namespace paceline {
namespace {

struct NewRange {
  char32_t first, last;
  bool letter;  // \p{L}; otherwise \p{N}
};

// Letters and numbers in Oniguruma's tables (probed on tokenizers 0.23.2, Unicode 16.0 data by
// tests/tokenizer/probe_onig_classes.py) that PCRE2 10.42 (Unicode 14.0) does not put in \p{L}
// or \p{N}. Sorted.
constexpr NewRange kNewRanges[] = {
    {0x1C89, 0x1C8A, true},    {0xA7CB, 0xA7CD, true},    {0xA7DA, 0xA7DC, true},
    {0x105C0, 0x105F3, true},  {0x10D40, 0x10D49, false}, {0x10D4A, 0x10D65, true},
    {0x10D6F, 0x10D85, true},  {0x10EC2, 0x10EC4, true},  {0x1123F, 0x11240, true},
    {0x11380, 0x11389, true},  {0x1138B, 0x1138B, true},  {0x1138E, 0x1138E, true},
    {0x11390, 0x113B5, true},  {0x113B7, 0x113B7, true},  {0x113D1, 0x113D1, true},
    {0x113D3, 0x113D3, true},  {0x116D0, 0x116E3, false}, {0x11BC0, 0x11BE0, true},
    {0x11BF0, 0x11BF9, false}, {0x11F02, 0x11F02, true},  {0x11F04, 0x11F10, true},
    {0x11F12, 0x11F33, true},  {0x11F50, 0x11F59, false}, {0x1342F, 0x1342F, true},
    {0x13441, 0x13446, true},  {0x13460, 0x143FA, true},  {0x16100, 0x1611D, true},
    {0x16130, 0x16139, false}, {0x16D40, 0x16D6C, true},  {0x16D70, 0x16D79, false},
    {0x18CFF, 0x18CFF, true},  {0x1B132, 0x1B132, true},  {0x1B155, 0x1B155, true},
    {0x1CCF0, 0x1CCF9, false}, {0x1D2C0, 0x1D2D3, false}, {0x1DF25, 0x1DF2A, true},
    {0x1E030, 0x1E06D, true},  {0x1E4D0, 0x1E4EB, true},  {0x1E4F0, 0x1E4F9, false},
    {0x1E5D0, 0x1E5ED, true},  {0x1E5F0, 0x1E5F0, true},  {0x1E5F1, 0x1E5FA, false},
    {0x2B739, 0x2B739, true},  {0x2EBF0, 0x2EE5D, true},  {0x31350, 0x323AF, true},
};

// Same UTF-8 length and category, known to PCRE2: U+4E00 and U+20000 are letters (Lo), U+FF10
// and U+1D7CE digits (Nd).
char32_t stand_in(const NewRange& range, char32_t cp) {
  if (range.letter) return cp < 0x10000 ? U'\u4E00' : U'\U00020000';
  return cp < 0x10000 ? U'\uFF10' : U'\U0001D7CE';
}

const NewRange* find_new(char32_t cp) {
  const auto* it = std::upper_bound(std::begin(kNewRanges), std::end(kNewRanges), cp,
                                    [](char32_t c, const NewRange& r) { return c < r.first; });
  if (it == std::begin(kNewRanges)) return nullptr;
  --it;
  return cp <= it->last ? it : nullptr;
}

}  // namespace

bool unicode_stand_in_new_characters(std::string_view text, std::string& shadow) {
  bool found = false;
  size_t pos = 0;
  while (pos < text.size()) {
    const auto lead = static_cast<uint8_t>(text[pos]);
    // Only three-byte sequences led by E1 or EA (U+1C89.., U+A7CB..) and four-byte ones can hold
    // a new character; everything else is skipped a byte at a time.
    if (lead < 0xE1 || (lead < 0xF0 && lead != 0xE1 && lead != 0xEA)) {
      ++pos;
      continue;
    }
    const size_t start = pos;
    const char32_t cp = utf8_next(text, pos);
    const NewRange* range = find_new(cp);
    if (range == nullptr) continue;
    if (!found) shadow.assign(text);
    found = true;
    std::string replacement;
    utf8_append(stand_in(*range, cp), replacement);
    shadow.replace(start, replacement.size(), replacement);
  }
  return found;
}

}  // namespace paceline
