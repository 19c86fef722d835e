#include "model/tokenizer_added.h"

#include <algorithm>

#include <utf8proc.h>

#include "model/utf8.h"

namespace paceline {
namespace {

// Rust's char::is_whitespace: the White_Space property.
bool white_space(char32_t c) {
  return (c >= 0x9 && c <= 0xD) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

bool word_char(char32_t c) {
  if (c == '_') return true;
  const auto category = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return (category >= UTF8PROC_CATEGORY_LU && category <= UTF8PROC_CATEGORY_LO) ||
         (category >= UTF8PROC_CATEGORY_ND && category <= UTF8PROC_CATEGORY_NO);
}

// The code point ending just before `end` and where it starts.
char32_t previous_char(std::string_view text, size_t end, size_t& start) {
  start = end - 1;
  while (start > 0 && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) --start;
  size_t pos = start;
  return utf8_next(text, pos);
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens, bool normalized) {
  for (const AddedToken& token : tokens) {
    if (token.normalized == normalized && !token.content.empty()) tokens_.push_back(token);
  }
  for (size_t i = 0; i < tokens_.size(); ++i) {
    by_first_byte_[static_cast<uint8_t>(tokens_[i].content[0])].push_back(static_cast<int>(i));
  }
  for (auto& list : by_first_byte_) {
    std::stable_sort(list.begin(), list.end(), [&](int a, int b) {
      return tokens_[a].content.size() > tokens_[b].content.size();
    });
  }
}

std::pair<size_t, int> AddedTokenMatcher::longest_at(std::string_view text, size_t pos) const {
  for (int index : by_first_byte_[static_cast<uint8_t>(text[pos])]) {
    const std::string& content = tokens_[index].content;
    if (text.substr(pos, content.size()) == content) return {content.size(), index};
  }
  return {0, -1};
}

void AddedTokenMatcher::split(std::string_view text, bool parse_special,
                              std::vector<TextPiece>& out) const {
  size_t emitted = 0;  // text[0, emitted) is already in `out`
  size_t pos = 0;
  while (pos < text.size()) {
    if (by_first_byte_[static_cast<uint8_t>(text[pos])].empty()) {
      ++pos;
      continue;
    }
    const auto [length, index] = longest_at(text, pos);
    if (index < 0) {
      ++pos;
      continue;
    }
    const AddedToken& token = tokens_[index];
    size_t start = pos, stop = pos + length;
    pos = stop;  // matches never overlap: a skipped match is not searched again inside
    if (token.special && !parse_special) continue;
    if (token.single_word) {
      size_t unused;
      const bool word_before = start > 0 && word_char(previous_char(text, start, unused));
      size_t next = stop;
      const bool word_after = stop < text.size() && word_char(utf8_next(text, next));
      if (word_before || word_after) continue;
    }
    if (token.lstrip) {
      size_t char_start;
      while (start > emitted && white_space(previous_char(text, start, char_start))) {
        start = char_start;
      }
    }
    if (token.rstrip) {
      size_t next = stop;
      while (stop < text.size() && white_space(utf8_next(text, next))) stop = next;
      pos = stop;
    }
    if (start > emitted) out.push_back({text.substr(emitted, start - emitted), -1});
    out.push_back({text.substr(start, stop - start), token.id});
    emitted = stop;
  }
  if (emitted < text.size()) out.push_back({text.substr(emitted), -1});
}

}  // namespace paceline
