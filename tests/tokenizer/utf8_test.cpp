// UTF-8 repair (as Python's errors="replace" and Rust's from_utf8_lossy) and the byte-level
// alphabet.
#include <gtest/gtest.h>

#include "model/byte_level.h"
#include "model/utf8.h"

namespace paceline {
namespace {

const std::string kFffd = "\uFFFD";

TEST(Utf8Repair, KeepsValidText) {
  for (const std::string s : {"", "abc", "é", "中文", "😀", "\U0010FFFF"}) {
    EXPECT_TRUE(utf8_is_valid(s)) << s;
    EXPECT_EQ(utf8_repair(s), s);
  }
}

// Expected strings are what Python's bytes.decode("utf-8", errors="replace") returns.
TEST(Utf8Repair, ReplacesEachMaximalInvalidSubpart) {
  EXPECT_EQ(utf8_repair("\xFF"), kFffd);                          // never a lead byte
  EXPECT_EQ(utf8_repair("a\xE2\x82"), "a" + kFffd);               // truncated "€": one subpart
  EXPECT_EQ(utf8_repair("\xE2\x82\xAC\x80"), "€" + kFffd);        // stray continuation
  EXPECT_EQ(utf8_repair("\xF0\x9F\x98x"), kFffd + "x");           // emoji cut short
  EXPECT_EQ(utf8_repair("\xC0\xAF"), kFffd + kFffd);              // overlong "/"
  EXPECT_EQ(utf8_repair("\xE0\x80\xAF"), kFffd + kFffd + kFffd);  // overlong, 3 bytes
  EXPECT_EQ(utf8_repair("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // surrogate U+D800
  EXPECT_EQ(utf8_repair("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // > U+10FFFF
  EXPECT_FALSE(utf8_is_valid("\xED\xA0\x80"));
}

TEST(Utf8Repair, StreamingLeavesAnUnfinishedTailUnconsumed) {
  std::string out;
  EXPECT_EQ(utf8_append_lossy("ab\xF0\x9F", /*final=*/false, out), 2u);
  EXPECT_EQ(out, "ab");
  out.clear();
  EXPECT_EQ(utf8_append_lossy("ab\xF0\x9F", /*final=*/true, out), 4u);
  EXPECT_EQ(out, "ab" + kFffd);
}

TEST(ByteLevel, PrintableBytesAreThemselvesAndTheRestShiftUp) {
  EXPECT_EQ(byte_level_char('a'), U'a');
  EXPECT_EQ(byte_level_char(' '), U'\u0120');   // Ġ
  EXPECT_EQ(byte_level_char('\n'), U'\u010A');  // Ċ
  EXPECT_EQ(byte_level_char(0x00), U'\u0100');
  EXPECT_EQ(byte_level_char(0xAD), U'\u0143');  // the soft hyphen is the last one moved
  EXPECT_EQ(byte_level_char(0xE9), U'\u00E9');
}

TEST(ByteLevel, EncodeAndDecodeAreInverse) {
  EXPECT_EQ(byte_level_encode("hello world\n"), "helloĠworldĊ");
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  EXPECT_EQ(byte_level_decode(byte_level_encode(all)), all);
  EXPECT_EQ(byte_level_decode("中"), std::nullopt);  // outside the alphabet
}

}  // namespace
}  // namespace paceline
