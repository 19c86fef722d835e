#include "model/utf8.h"

#include <cstring>

namespace paceline {
namespace {

// What one step of the decoder found at a position.
struct Step {
  enum Kind { kValid, kInvalid, kIncomplete } kind;
  size_t length;  // bytes of the valid sequence or of the maximal invalid subpart
};

// Examines the sequence starting at bytes[i] (Unicode Table 3-7, well-formed byte sequences).
Step utf8_step(std::string_view bytes, size_t i) {
  const auto b = static_cast<uint8_t>(bytes[i]);
  if (b < 0x80) return {Step::kValid, 1};
  size_t need = 0;               // continuation bytes after the lead
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the first continuation byte
  if (b >= 0xC2 && b <= 0xDF) {
    need = 1;
  } else if (b >= 0xE0 && b <= 0xEF) {
    need = 2;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    need = 3;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    return {Step::kInvalid, 1};
  }
  size_t j = i + 1;
  for (size_t k = 0; k < need; ++k, ++j) {
    if (j >= bytes.size()) return {Step::kIncomplete, j - i};
    const auto c = static_cast<uint8_t>(bytes[j]);
    const uint8_t min = k == 0 ? lo : 0x80, max = k == 0 ? hi : 0xBF;
    if (c < min || c > max) return {Step::kInvalid, j - i};
  }
  return {Step::kValid, need + 1};
}

}  // namespace

bool utf8_is_valid(std::string_view bytes) {
  size_t i = 0;
  while (i < bytes.size()) {
    // ASCII runs dominate real text; skip them eight bytes at a time.
    while (i + 8 <= bytes.size()) {
      uint64_t word;
      std::memcpy(&word, bytes.data() + i, 8);
      if (word & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= bytes.size()) break;
    const Step step = utf8_step(bytes, i);
    if (step.kind != Step::kValid) return false;
    i += step.length;
  }
  return true;
}

size_t utf8_append_lossy(std::string_view bytes, bool final, std::string& out) {
  size_t i = 0, run = 0;  // bytes[run, i) is valid text not yet copied
  while (i < bytes.size()) {
    const Step step = utf8_step(bytes, i);
    if (step.kind == Step::kValid) {
      i += step.length;
      continue;
    }
    out.append(bytes.substr(run, i - run));
    if (step.kind == Step::kIncomplete && !final) return i;
    out.append(kUtf8Replacement);
    i += step.length;
    run = i;
  }
  out.append(bytes.substr(run, i - run));
  return i;
}

std::string utf8_repair(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() + 8);
  utf8_append_lossy(bytes, /*final=*/true, out);
  return out;
}

char32_t utf8_next(std::string_view bytes, size_t& pos) {
  const auto b = static_cast<uint8_t>(bytes[pos]);
  auto cont = [&](size_t k) {
    return static_cast<char32_t>(static_cast<uint8_t>(bytes[pos + k]) & 0x3F);
  };
  char32_t cp;
  if (b < 0x80) {
    cp = b;
    pos += 1;
  } else if (b < 0xE0) {
    cp = (static_cast<char32_t>(b & 0x1F) << 6) | cont(1);
    pos += 2;
  } else if (b < 0xF0) {
    cp = (static_cast<char32_t>(b & 0x0F) << 12) | (cont(1) << 6) | cont(2);
    pos += 3;
  } else {
    cp = (static_cast<char32_t>(b & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3);
    pos += 4;
  }
  return cp;
}

void utf8_append(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace paceline
