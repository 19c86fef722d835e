// The split regex of Qwen3's tokenizer.json, run by PCRE2 with Oniguruma's meaning of \s.
#include <gtest/gtest.h>

#include "base/error.h"
#include "model/tokenizer_regex.h"

namespace paceline {
namespace {

constexpr const char* kQwen3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

std::vector<std::string> split(std::string_view text) {
  static const PretokenRegex regex(kQwen3Pattern, "test");
  std::vector<std::string_view> pieces;
  regex.split(text, pieces);
  return {pieces.begin(), pieces.end()};
}

using Pieces = std::vector<std::string>;

TEST(Pretokenize, WordsKeepOneLeadingNonLetter) {
  EXPECT_EQ(split("Hello, world!"), (Pieces{"Hello", ",", " world", "!"}));
  EXPECT_EQ(split("foo_bar(x)"), (Pieces{"foo", "_bar", "(x", ")"}));
}

TEST(Pretokenize, LookaheadLeavesTheLastSpaceToTheWord) {
  EXPECT_EQ(split("a   b"), (Pieces{"a", "  ", " b"}));
  EXPECT_EQ(split("a \n\n b"), (Pieces{"a", " \n\n", " b"}));
}

TEST(Pretokenize, PunctuationSwallowsFollowingNewlines) {
  EXPECT_EQ(split("x;\n\ny"), (Pieces{"x", ";\n\n", "y"}));
}

TEST(Pretokenize, DigitsStandAlone) {
  EXPECT_EQ(split("v12"), (Pieces{"v", "1", "2"}));
}

TEST(Pretokenize, WhiteSpaceIsOnigurumasNotPcre2s) {
  // U+180E MONGOLIAN VOWEL SEPARATOR is not White_Space (Unicode 6.3 on), so it is punctuation.
  // PCRE2's own \s would cut "\u180E", "\u180E", "!".
  EXPECT_EQ(split("\u180E\u180E!"), (Pieces{"\u180E\u180E!"}));
  EXPECT_EQ(split("a\u3000b"), (Pieces{"a", "\u3000b"}));
}

TEST(Pretokenize, LettersAndDigitsOfUnicode16AreLettersAndDigits) {
  // Todhri letters (U+105C0, Unicode 16) and outlined digits (U+1CCF0, Unicode 16), which
  // PCRE2 10.42 does not know.
  EXPECT_EQ(split("\U000105C0\U000105C0's"), (Pieces{"\U000105C0\U000105C0", "'s"}));
  EXPECT_EQ(split("\U0001CCF0'd"), (Pieces{"\U0001CCF0", "'d"}));
  EXPECT_EQ(split("a\U00031350"), (Pieces{"a\U00031350"}));  // CJK Extension H
}

TEST(Pretokenize, PiecesCoverTheText) {
  const std::string text = "  mixed 中文 text\t\t123 😀!!\r\n  end  ";
  std::string joined;
  for (const std::string& piece : split(text)) joined += piece;
  EXPECT_EQ(joined, text);
}

TEST(OnigToPcre2, RewritesWhitespaceClassesOnly) {
  const std::string out = onig_to_pcre2(R"(\s+(?!\S)|[^\s\p{L}]|\p{N})");
  EXPECT_EQ(out.find("\\s"), std::string::npos);
  EXPECT_EQ(out.find("\\S"), std::string::npos);
  EXPECT_NE(out.find("[^\\x{9}-\\x{D}"), std::string::npos);
  EXPECT_NE(out.find("\\p{L}"), std::string::npos);
  EXPECT_NE(out.find("\\p{N}"), std::string::npos);
}

TEST(PretokenRegex, BadPatternNamesTheFile) {
  try {
    PretokenRegex regex("(unclosed", "some/tokenizer.json");
    FAIL() << "compiled a bad pattern";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("some/tokenizer.json"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace paceline
