#pragma once
// The GPT-2 byte-level alphabet: every byte gets a printable code point so that a BPE vocabulary
// can hold arbitrary bytes as text. Printable Latin-1 bytes map to themselves; the other 68 bytes
// (controls, space, DEL, NBSP, soft hyphen...) map, in byte order, to U+0100 onwards. So the
// space byte 0x20 is "Ġ" (U+0120) and the newline 0x0A is "Ċ" (U+010A).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace paceline {

// The code point that stands for `byte`.
char32_t byte_level_char(uint8_t byte);

// The byte-level text (UTF-8) of raw bytes: "hello world" -> "helloĠworld".
std::string byte_level_encode(std::string_view bytes);

// The raw bytes a byte-level token stands for, or nullopt when some character of `token` is
// outside the alphabet (added tokens such as "<think>" are inside it; CJK text is not).
std::optional<std::string> byte_level_decode(std::string_view token);

}  // namespace paceline
