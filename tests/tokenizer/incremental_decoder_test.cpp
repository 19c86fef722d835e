// IncrementalDecoder: streaming text out of generated ids without cutting a character.
#include <gtest/gtest.h>

#include <random>

#include "base/error.h"
#include "model/tokenizer_stream.h"
#include "model/utf8.h"
#include "qwen3_tokenizer.h"

namespace paceline::testing {
namespace {

TEST(IncrementalDecoder, HoldsBackAnEmojiUntilItsLastByte) {
  IncrementalDecoder decoder(qwen3());
  EXPECT_EQ(decoder.push(qwen3().token_to_id("Hi").value()), "Hi");
  EXPECT_EQ(decoder.push(qwen3().token_to_id("ðŁ").value()), "");  // F0 9F
  EXPECT_EQ(decoder.push(qwen3().token_to_id("ĺ").value()), "");   // 98
  EXPECT_EQ(decoder.push(qwen3().token_to_id("Ģ").value()), "😀");  // 80
  EXPECT_EQ(decoder.flush(), "");
}

TEST(IncrementalDecoder, FlushTurnsAnUnfinishedCharacterIntoAReplacement) {
  IncrementalDecoder decoder(qwen3());
  EXPECT_EQ(decoder.push(qwen3().token_to_id("ðŁ").value()), "");
  EXPECT_EQ(decoder.flush(), "\uFFFD");
  EXPECT_EQ(decoder.flush(), "");
}

TEST(IncrementalDecoder, BytesThatCannotContinueComeOutAtOnce) {
  IncrementalDecoder decoder(qwen3());
  EXPECT_EQ(decoder.push(qwen3().token_to_id("ðŁ").value()), "");
  EXPECT_EQ(decoder.push(qwen3().token_to_id("a").value()), "\uFFFDa");
}

TEST(IncrementalDecoder, SkipsSpecialTokensWhenAsked) {
  IncrementalDecoder decoder(qwen3(), /*skip_special_tokens=*/true);
  EXPECT_EQ(decoder.push(151645), "");
  EXPECT_EQ(decoder.push(151667), "<think>");
}

TEST(IncrementalDecoder, RejectsBadIds) {
  IncrementalDecoder decoder(qwen3());
  EXPECT_THROW(decoder.push(-1), Error);
  EXPECT_THROW(decoder.push(static_cast<int32_t>(qwen3().vocab_size())), Error);
}

// The streamed pieces are valid UTF-8 and concatenate to decode() of all ids.
void expect_streams_like_decode(const std::vector<int32_t>& ids) {
  IncrementalDecoder decoder(qwen3());
  std::string streamed;
  for (int32_t id : ids) {
    const std::string piece = decoder.push(id);
    ASSERT_TRUE(utf8_is_valid(piece));
    streamed += piece;
  }
  streamed += decoder.flush();
  EXPECT_EQ(streamed, qwen3().decode(ids));
}

TEST(IncrementalDecoder, ConcatenationEqualsDecodeOnText) {
  expect_streams_like_decode(
      qwen3().encode("Streaming 🚀 中文 text 👩‍💻 with emoji 🇫🇷."));
}

TEST(IncrementalDecoder, ConcatenationEqualsDecodeOnRandomIds) {
  std::mt19937 rng(7);
  // Byte tokens (ids below 256 are the single bytes in Qwen3) make broken UTF-8 likely.
  std::uniform_int_distribution<int32_t> byte_token(0, 255), any_token(0, 151668);
  for (int round = 0; round < 300; ++round) {
    std::vector<int32_t> ids;
    for (int i = 0; i < 20; ++i) ids.push_back(round % 2 ? byte_token(rng) : any_token(rng));
    expect_streams_like_decode(ids);
  }
}

}  // namespace
}  // namespace paceline::testing
