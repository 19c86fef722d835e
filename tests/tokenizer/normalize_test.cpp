// NFC normalization and its fast path.
#include <gtest/gtest.h>

#include <cstdlib>

#include <utf8proc.h>

#include "model/tokenizer_normalize.h"
#include "model/utf8.h"

namespace paceline {
namespace {

std::string utf8proc_nfc(const std::string& s) {
  utf8proc_uint8_t* out = nullptr;
  const auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                              static_cast<utf8proc_ssize_t>(s.size()), &out,
                              static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  std::string result(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
  std::free(out);
  return result;
}

TEST(Nfc, ComposesAndReordersMarks) {
  std::string storage;
  EXPECT_EQ(nfc_normalize("e\u0301", storage), "\u00e9");
  EXPECT_EQ(nfc_normalize("\u1100\u1161\u11A8", storage), "\uAC01");  // Hangul jamo -> 각
  EXPECT_EQ(nfc_normalize("\u212B", storage), "\u00C5");              // Angstrom sign -> Å
  EXPECT_EQ(nfc_normalize("a\u0323\u0302", storage), nfc_normalize("a\u0302\u0323", storage));
}

TEST(Nfc, StableTextIsReturnedWithoutCopying) {
  const std::string text = "plain ASCII, café, 中文, 😀";
  std::string storage;
  EXPECT_EQ(nfc_normalize(text, storage).data(), text.data());
}

// The fast path may only pass a character that NFC leaves alone.
TEST(Nfc, QuickCheckNeverPassesACharacterThatNfcChanges) {
  int passed = 0;
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    std::string s;
    utf8_append(cp, s);
    if (!nfc_quick_check(s)) continue;
    ++passed;
    ASSERT_EQ(utf8proc_nfc(s), s) << "U+" << std::hex << static_cast<uint32_t>(cp);
  }
  EXPECT_GT(passed, 1000000);
}

}  // namespace
}  // namespace paceline
