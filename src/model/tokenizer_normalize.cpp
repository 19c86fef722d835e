#include "model/tokenizer_normalize.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <vector>

#include <utf8proc.h>

#include "base/error.h"
#include "model/utf8.h"

namespace paceline {
namespace {

// Combining marks and composition parts that Unicode 10 to 15 added. Hugging Face tokenizers
// normalizes with Unicode 9.0 tables, where these are unassigned: plain starters that neither
// reorder nor compose. paceline cuts the text at them and normalizes the stretches between, which
// gives what tokenizers gives. Found by tests/tokenizer/probe_nfc.py (tokenizers 0.23.2) against
// utf8proc's Unicode 15 tables; nfc_probe_test.cpp holds the two to each other.
struct Range {
  char32_t first, last;
};
constexpr Range kUnknownToUnicode9[] = {
    {0x7FD, 0x7FD},     {0x898, 0x89F},     {0x8CA, 0x8D3},     {0x9FE, 0x9FE},
    {0xC3C, 0xC3C},     {0xD3B, 0xD3C},     {0xEBA, 0xEBA},     {0x1715, 0x1715},
    {0x1ABF, 0x1ACE},   {0x1DF6, 0x1DFA},   {0xA82C, 0xA82C},   {0x10D24, 0x10D27},
    {0x10EAB, 0x10EAC}, {0x10EFD, 0x10EFF}, {0x10F46, 0x10F50}, {0x10F82, 0x10F85},
    {0x11070, 0x11070}, {0x1133B, 0x1133B}, {0x1145E, 0x1145E}, {0x11839, 0x1183A},
    {0x11930, 0x11930}, {0x11935, 0x11935}, {0x11938, 0x11938}, {0x1193D, 0x1193E},
    {0x11943, 0x11943}, {0x119E0, 0x119E0}, {0x11A34, 0x11A34}, {0x11A47, 0x11A47},
    {0x11A99, 0x11A99}, {0x11D42, 0x11D42}, {0x11D44, 0x11D45}, {0x11D97, 0x11D97},
    {0x11F41, 0x11F42}, {0x16FF0, 0x16FF1}, {0x1E08F, 0x1E08F}, {0x1E130, 0x1E136},
    {0x1E2AE, 0x1E2AE}, {0x1E2EC, 0x1E2EF}, {0x1E4EC, 0x1E4EF},
};

bool unknown_to_unicode9(char32_t cp) {
  const auto* it = std::upper_bound(std::begin(kUnknownToUnicode9), std::end(kUnknownToUnicode9),
                                    cp, [](char32_t c, const Range& r) { return c < r.first; });
  return it != std::begin(kUnknownToUnicode9) && cp <= (it - 1)->last;
}

void append_nfc(std::string_view text, std::string& out) {
  if (text.empty()) return;
  utf8proc_uint8_t* result = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                   static_cast<utf8proc_ssize_t>(text.size()), &result,
                   static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) fail("tokenizer: NFC normalization failed: {}", utf8proc_errmsg(n));
  out.append(reinterpret_cast<const char*>(result), static_cast<size_t>(n));
  std::free(result);
}

// A character is NFC-stable in any context when NFC leaves it alone and it never joins a
// preceding character: combining class 0, not a composition's second part nor a Hangul vowel or
// trailing consonant jamo, and either no canonical decomposition or one that recomposes to it
// (a primary composite such as "é" or "ド"). Text made only of such characters is already NFC.
bool nfc_stable_slow(char32_t cp) {
  if (cp >= 0xD800 && cp <= 0xDFFF) return false;  // surrogates are not characters
  if ((cp >= 0x1161 && cp <= 0x1175) || (cp >= 0x11A8 && cp <= 0x11C2)) return false;
  const utf8proc_property_t* p = utf8proc_get_property(static_cast<utf8proc_int32_t>(cp));
  const bool joins_previous = p->comb_index != UINT16_MAX && (p->comb_index & 0x8000) != 0;
  if (p->combining_class != 0 || joins_previous) return false;
  if (p->decomp_seqindex == UINT16_MAX || p->decomp_type != 0) return true;
  std::string alone, normalized;
  utf8_append(cp, alone);
  append_nfc(alone, normalized);
  return normalized == alone;
}

// nfc_stable_slow for every code point, one bit each (136 KiB), built on first use.
class StableTable {
 public:
  StableTable() : bits_((0x110000 + 63) / 64, 0) {
    for (char32_t cp = 0; cp < 0x110000; ++cp) {
      if (cp < 0x300 || nfc_stable_slow(cp)) bits_[cp / 64] |= uint64_t{1} << (cp % 64);
    }
  }
  bool stable(char32_t cp) const { return (bits_[cp / 64] >> (cp % 64)) & 1; }

 private:
  std::vector<uint64_t> bits_;
};

const StableTable& stable_table() {
  static const StableTable table;
  return table;
}

}  // namespace

bool nfc_quick_check(std::string_view text) {
  const StableTable& table = stable_table();
  size_t pos = 0;
  while (pos < text.size()) {
    // Lead bytes below 0xCC encode U+0000..U+02FF, all stable.
    if (static_cast<uint8_t>(text[pos]) < 0xCC) {
      ++pos;
      continue;
    }
    if (!table.stable(utf8_next(text, pos))) return false;
  }
  return true;
}

std::string_view nfc_normalize(std::string_view text, std::string& storage) {
  if (nfc_quick_check(text)) return text;
  storage.clear();
  size_t stretch = 0, pos = 0;  // text[stretch, pos) is not yet normalized
  while (pos < text.size()) {
    const size_t start = pos;
    const char32_t cp = utf8_next(text, pos);
    if (cp < kUnknownToUnicode9[0].first || !unknown_to_unicode9(cp)) continue;
    append_nfc(text.substr(stretch, start - stretch), storage);
    storage.append(text.substr(start, pos - start));
    stretch = pos;
  }
  append_nfc(text.substr(stretch), storage);
  return storage;
}

}  // namespace paceline
