#pragma once
// UTF-8 helpers for the tokenizer: validation, code point decoding and lossy repair.
//
// Lossy repair follows the Unicode "maximal subpart" practice, byte for byte what Rust's
// String::from_utf8_lossy and Python's bytes.decode("utf-8", errors="replace") produce: each
// maximal prefix of a well-formed sequence that cannot be completed becomes one U+FFFD, and a
// byte that cannot start a sequence becomes one U+FFFD.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace paceline {

inline constexpr std::string_view kUtf8Replacement = "\xEF\xBF\xBD";  // U+FFFD

// True when `bytes` is well-formed UTF-8 (no overlongs, surrogates or code points > U+10FFFF).
bool utf8_is_valid(std::string_view bytes);

// Appends `bytes` to `out`, replacing each maximal invalid subpart with U+FFFD. When `final` is
// false, a well-formed but unfinished sequence at the end is left unconsumed (more bytes may
// complete it). Returns the number of bytes consumed.
size_t utf8_append_lossy(std::string_view bytes, bool final, std::string& out);

// `bytes` with each maximal invalid subpart replaced by U+FFFD.
std::string utf8_repair(std::string_view bytes);

// Decodes the code point starting at `bytes[pos]` of well-formed UTF-8 and advances `pos`.
char32_t utf8_next(std::string_view bytes, size_t& pos);

// Appends the UTF-8 encoding of `cp` to `out`.
void utf8_append(char32_t cp, std::string& out);

}  // namespace paceline
