// Token-id prompts: exact lengths, shared blocks identical, plays and runs kept apart.
#include <gtest/gtest.h>

#include <set>

#include "bench/token_prompt.h"

namespace paceline::bench {
namespace {

RequestSpec spec(std::vector<int64_t> ids, int64_t isl,
                 std::string marker = "[rid:000000000001]\n\n", int turn = 0) {
  RequestSpec s;
  s.session = "s";
  s.hash_scope = "s";
  s.block_size = 64;
  s.hash_ids = std::move(ids);
  s.isl = isl;
  s.marker = std::move(marker);
  s.turn = turn;
  return s;
}

TEST(TokenPrompt, HasExactlyIslTokensInTheVocabulary) {
  TokenPromptConfig config;
  auto tokens = synthesize_prompt_tokens(spec({1, 2, 3}, 200), config);
  ASSERT_EQ(tokens.size(), 200u);
  for (int32_t t : tokens) {
    EXPECT_GE(t, config.vocab_begin);
    EXPECT_LT(t, config.vocab_end);
  }
  EXPECT_EQ(synthesize_prompt_tokens(spec({1, 2, 3}, 100), config).size(), 100u);  // ids beyond isl
  EXPECT_EQ(synthesize_prompt_tokens(spec({}, 7), config).size(), 7u);
}

TEST(TokenPrompt, SharedBlocksAreIdenticalAndTheRestDiffers) {
  TokenPromptConfig config;
  auto a =
      synthesize_prompt_tokens(spec({1, 2, 3}, 3 * 64 + 10, "[rid:000000000001]\n\n", 0), config);
  auto b =
      synthesize_prompt_tokens(spec({1, 2, 9}, 3 * 64 + 10, "[rid:000000000001]\n\n", 1), config);
  EXPECT_TRUE(std::equal(a.begin(), a.begin() + 128, b.begin()));               // blocks 1 and 2
  EXPECT_FALSE(std::equal(a.begin() + 128, a.begin() + 192, b.begin() + 128));  // 3 vs 9
  EXPECT_FALSE(std::equal(a.begin() + 192, a.end(), b.begin() + 192));          // tails are private
  EXPECT_EQ(a, synthesize_prompt_tokens(spec({1, 2, 3}, 3 * 64 + 10), config));  // deterministic
  std::set<int32_t> distinct(a.begin(), a.begin() + 64);
  EXPECT_GT(distinct.size(), 50u);  // a block is not one repeated token
}

TEST(TokenPrompt, AnotherMarkerOrSeedSharesNothing) {
  TokenPromptConfig config;
  auto a = synthesize_prompt_tokens(spec({1, 2}, 128, "[rid:000000000001]\n\n"), config);
  auto b = synthesize_prompt_tokens(spec({1, 2}, 128, "[rid:000000000002]\n\n"), config);
  EXPECT_NE(std::vector<int32_t>(a.begin(), a.begin() + 64),
            std::vector<int32_t>(b.begin(), b.begin() + 64));
  TokenPromptConfig other;
  other.seed = 1;
  auto c = synthesize_prompt_tokens(spec({1, 2}, 128), other);
  EXPECT_NE(std::vector<int32_t>(a.begin(), a.begin() + 64),
            std::vector<int32_t>(c.begin(), c.begin() + 64));
}

}  // namespace
}  // namespace paceline::bench
