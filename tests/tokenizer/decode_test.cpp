// Tokenizer::decode and the vocabulary accessors, for Qwen3.
#include <gtest/gtest.h>

#include "base/error.h"
#include "qwen3_tokenizer.h"

namespace paceline::testing {
namespace {

const std::string kFffd = "\uFFFD";

TEST(Decode, JoinsTheBytesOfEachToken) {
  EXPECT_EQ(qwen3().decode(ids_of({"hello", "Ġworld"})), "hello world");
  EXPECT_EQ(qwen3().decode(std::vector<int32_t>{}), "");
}

TEST(Decode, ByteTokensJoinIntoOneCharacter) {
  // 😀 is F0 9F 98 80: "ðŁ" holds F0 9F, "ĺ" 98 and "Ģ" 80.
  EXPECT_EQ(qwen3().decode(ids_of({"ðŁ", "ĺ", "Ģ"})), "😀");
}

TEST(Decode, InvalidBytesBecomeOneReplacementPerMaximalSubpart) {
  EXPECT_EQ(qwen3().decode(ids_of({"ðŁ"})), kFffd);  // F0 9F: one unfinished prefix
  EXPECT_EQ(qwen3().decode(ids_of({"ðŁ", "a"})), kFffd + "a");
  EXPECT_EQ(qwen3().decode(ids_of({"Ģ", "Ģ"})), kFffd + kFffd);  // two stray continuation bytes
}

TEST(Decode, SpecialTokensAreKeptUnlessSkipped) {
  const auto ids = qwen3().encode("<|im_start|>hi<think>x</think><|im_end|>");
  EXPECT_EQ(qwen3().decode(ids), "<|im_start|>hi<think>x</think><|im_end|>");
  // Only special tokens are skipped; <think> is an added token but not a special one.
  EXPECT_EQ(qwen3().decode(ids, /*skip_special_tokens=*/true), "hi<think>x</think>");
}

TEST(Decode, OutOfRangeIdsThrowAndSayWhichId) {
  const int32_t too_big = static_cast<int32_t>(qwen3().vocab_size());
  for (int32_t bad : {-1, too_big}) {
    const std::vector<int32_t> ids = {14990, bad};
    try {
      qwen3().decode(ids);
      FAIL() << "decode accepted id " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::to_string(bad)), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(qwen3().id_to_token(-5), Error);
}

TEST(Vocabulary, CountsAddedTokens) {
  EXPECT_EQ(qwen3().vocab_size(), 151643 + 26);
}

TEST(Vocabulary, MapsTokensAndIdsBothWays) {
  EXPECT_EQ(qwen3().token_to_id("Ġworld"), 1879);
  EXPECT_EQ(qwen3().id_to_token(1879), "Ġworld");
  EXPECT_EQ(qwen3().token_to_id("<|im_end|>"), 151645);
  EXPECT_EQ(qwen3().id_to_token(151667), "<think>");
  EXPECT_EQ(qwen3().token_to_id("not a token at all"), std::nullopt);
  EXPECT_EQ(qwen3().token_bytes(1879), " world");
}

TEST(Vocabulary, KnowsWhichTokensAreSpecial) {
  EXPECT_TRUE(qwen3().is_special(151643));   // <|endoftext|>
  EXPECT_TRUE(qwen3().is_special(151645));   // <|im_end|>
  EXPECT_FALSE(qwen3().is_special(151667));  // <think>
  EXPECT_TRUE(qwen3().is_added(151667));
  EXPECT_FALSE(qwen3().is_special(1879));
  EXPECT_FALSE(qwen3().is_special(-1));
}

}  // namespace
}  // namespace paceline::testing
