#pragma once
// Small string helpers shared by the parsers.
#include <algorithm>
#include <cctype>
#include <cstddef>
#include <string_view>

namespace paceline {

inline constexpr std::string_view kAsciiSpace = " \t\r\n";

// `text` without leading and trailing ASCII whitespace.
inline std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

// Length of the longest suffix of `text` that is a proper prefix of `tag`: how much of a streamed
// text must be held back because it may be the start of `tag`.
inline size_t partial_tag_length(std::string_view text, std::string_view tag) {
  if (tag.empty()) return 0;
  size_t longest = std::min(text.size(), tag.size() - 1);
  for (size_t length = longest; length > 0; --length) {
    if (tag.starts_with(text.substr(text.size() - length))) return length;
  }
  return 0;
}

}  // namespace paceline
