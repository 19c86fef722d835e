// What Tokenizer::encode produces for Qwen3, case by case. Expected ids are spelled as vocabulary
// text: "Ġ" is a space and "Ċ" a newline in the byte-level alphabet.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "qwen3_tokenizer.h"

namespace paceline::testing {
namespace {

TEST(Encode, SplitsWordsAndKeepsTheSpaceBeforeAWord) {
  EXPECT_EQ(qwen3().encode("hello world"), ids_of({"hello", "Ġworld"}));
  EXPECT_EQ(qwen3().encode("hello world"), (std::vector<int32_t>{14990, 1879}));
}

TEST(Encode, EmptyTextHasNoTokens) {
  EXPECT_TRUE(qwen3().encode("").empty());
}

TEST(Encode, DigitsAreSplitOneByOne) {
  EXPECT_EQ(qwen3().encode("12345"), ids_of({"1", "2", "3", "4", "5"}));
  // \p{N} takes one digit, so the space before a number stands alone.
  EXPECT_EQ(qwen3().encode("x 12"), ids_of({"x", "Ġ", "1", "2"}));
}

TEST(Encode, WhitespaceRunLeavesItsLastSpaceToTheNextWord) {
  // \s+(?!\S) stops one space short of a word; that space joins the word.
  EXPECT_EQ(qwen3().encode("a   b"), ids_of({"a", "ĠĠ", "Ġb"}));
  EXPECT_EQ(qwen3().encode("a  "), ids_of({"a", "ĠĠ"}));
  // A tab (any non-letter, non-digit but newline) may lead a word, as a space does.
  EXPECT_EQ(qwen3().encode("\tx"), ids_of({"ĉx"}));
}

TEST(Encode, NewlinesGroupWithThePrecedingWhitespace) {
  EXPECT_EQ(qwen3().encode("a\n\nb"), ids_of({"a", "ĊĊ", "b"}));
  EXPECT_EQ(qwen3().encode("a   \nb"), ids_of({"a", "ĠĠĠĊ", "b"}));
}

TEST(Encode, ContractionsAreCaseInsensitive) {
  EXPECT_EQ(qwen3().encode("I'm HE'S"), ids_of({"I", "'m", "ĠHE", "'S"}));
}

TEST(Encode, CjkRunIsOneWord) {
  EXPECT_EQ(qwen3().encode("你好，世界"), ids_of({"ä½łå¥½", "ï¼Į", "ä¸ĸçķĮ"}));
}

TEST(Encode, EmojiIsPunctuationThatTakesTheSpaceBeforeIt) {
  EXPECT_EQ(qwen3().encode("😀"), ids_of({"ðŁĺĢ"}));
  EXPECT_EQ(qwen3().encode("a 😀"), ids_of({"a", "ĠðŁĺĢ"}));
}

TEST(Encode, DecomposedAccentEncodesLikeTheComposedOne) {
  const std::string composed = "caf\u00e9";     // é as one code point
  const std::string decomposed = "cafe\u0301";  // e + combining acute accent
  EXPECT_EQ(qwen3().encode(decomposed), qwen3().encode(composed));
  EXPECT_EQ(qwen3().decode(qwen3().encode(decomposed)), composed);
}

TEST(Encode, SpecialTokensAreMatchedWholeAndNeverSplit) {
  EXPECT_EQ(qwen3().encode("<|im_start|>user\nHi<|im_end|>"),
            (std::vector<int32_t>{151644, 872, 198, 13048, 151645}));
  EXPECT_EQ(qwen3().encode("x<|im_end|><|im_start|>y"),
            (std::vector<int32_t>{87, 151645, 151644, 88}));
  // Unfinished, it is only text.
  const auto partial = qwen3().encode("<|im_end");
  EXPECT_EQ(std::count(partial.begin(), partial.end(), 151645), 0);
}

TEST(Encode, NonSpecialAddedTokensAreMatchedToo) {
  EXPECT_EQ(qwen3().encode("a<think>b</think>"), (std::vector<int32_t>{64, 151667, 65, 151668}));
  EXPECT_EQ(qwen3().encode("<tool_call>"), (std::vector<int32_t>{151657}));
}

TEST(Encode, ParseSpecialFalseEncodesSpecialTokensAsText) {
  const std::string text = "<|im_start|>user";
  const auto ids = qwen3().encode(text, /*parse_special=*/false);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 151644), 0);
  EXPECT_GT(ids.size(), 2u);
  EXPECT_EQ(qwen3().decode(ids), text);
  // Non-special added tokens stay tokens, as with Hugging Face's encode_special_tokens=True.
  EXPECT_EQ(qwen3().encode("<think>", /*parse_special=*/false), (std::vector<int32_t>{151667}));
}

TEST(Encode, InvalidUtf8BecomesReplacementCharacters) {
  const std::string fffd = "\uFFFD";
  EXPECT_EQ(qwen3().encode("\xFF"), qwen3().encode(fffd));
  EXPECT_EQ(qwen3().encode("a\xE2\x82"), qwen3().encode("a" + fffd));             // truncated "€"
  EXPECT_EQ(qwen3().encode("\xED\xA0\x80"), qwen3().encode(fffd + fffd + fffd));  // surrogate
  EXPECT_EQ(qwen3().encode("\xC0\xAF"), qwen3().encode(fffd + fffd));             // overlong
  EXPECT_EQ(qwen3().decode(qwen3().encode("\xF0\x9F\x98x")), fffd + "x");
}

TEST(Encode, NulAndControlCharactersRoundTrip) {
  const std::string text("a\0b\x01\x7F c", 7);
  EXPECT_EQ(qwen3().decode(qwen3().encode(text)), text);
}

TEST(Encode, DecodeOfEncodeGivesBackValidNfcText) {
  const std::vector<std::string> texts = {
      "int main() {\n    return 0;\n}\n",
      "The quick brown fox jumps over the lazy dog.",
      "  leading and trailing spaces  ",
      "\r\n\r\nWindows lines\r\n",
      "数学公式：E=mc²，以及 ∑_{i=1}^{n} i² 😀👩‍💻🇫🇷",
      "Ελληνικά, русский, العربية, हिन्दी, ภาษาไทย",
      "<|im_start|>system\nYou are helpful.<|im_end|>\n<think>\n\n</think>\n\n",
      "tabs\tand\u00a0no-break\u3000spaces",
  };
  for (const std::string& text : texts) EXPECT_EQ(qwen3().decode(qwen3().encode(text)), text);
}

TEST(Encode, LongWordsAndLongWhitespaceDoNotBreakTheSplitter) {
  const std::string letters(200000, 'a');
  EXPECT_EQ(qwen3().decode(qwen3().encode(letters)), letters);
  const std::string spaces = std::string(100000, ' ') + "x" + std::string(100000, '\n');
  EXPECT_EQ(qwen3().decode(qwen3().encode(spaces)), spaces);
}

TEST(Encode, IsSafeFromManyThreads) {
  std::vector<std::string> texts;
  for (int i = 0; i < 64; ++i) {
    texts.push_back("word" + std::to_string(i) + " 中文" + std::string(i % 7, ' ') + "😀 x" +
                    std::to_string(i * 7919));
  }
  std::vector<std::vector<int32_t>> expected;
  for (const std::string& text : texts) expected.push_back(qwen3().encode(text));
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 200; ++round) {
        const size_t i = static_cast<size_t>(round * 4 + t) % texts.size();
        if (qwen3().encode(texts[i]) != expected[i]) ++mismatches[t];
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

}  // namespace
}  // namespace paceline::testing
