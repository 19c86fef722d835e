#include "model/byte_level.h"

#include <array>

#include "model/utf8.h"

namespace paceline {
namespace {

bool printable(int b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
}

struct Alphabet {
  std::array<char32_t, 256> to_char{};
  std::array<int16_t, 0x144> to_byte{};  // every code point of the alphabet is below U+0144

  Alphabet() {
    to_byte.fill(-1);
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      to_char[b] = printable(b) ? static_cast<char32_t>(b) : next++;
      to_byte[to_char[b]] = static_cast<int16_t>(b);
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet table;
  return table;
}

}  // namespace

char32_t byte_level_char(uint8_t byte) {
  return alphabet().to_char[byte];
}

std::string byte_level_encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) utf8_append(byte_level_char(static_cast<uint8_t>(c)), out);
  return out;
}

std::optional<std::string> byte_level_decode(std::string_view token) {
  if (!utf8_is_valid(token)) return std::nullopt;
  std::string out;
  out.reserve(token.size());
  size_t pos = 0;
  while (pos < token.size()) {
    const char32_t cp = utf8_next(token, pos);
    if (cp >= alphabet().to_byte.size() || alphabet().to_byte[cp] < 0) return std::nullopt;
    out.push_back(static_cast<char>(alphabet().to_byte[cp]));
  }
  return out;
}

}  // namespace paceline
