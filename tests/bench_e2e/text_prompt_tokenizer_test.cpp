// Text prompts on the real Qwen3 tokenizer: every filler word is one token, a synthesized prompt
// rendered through the chat template counts within 1% of the requested ISL, and shared blocks
// tokenize to shared token prefixes (what a prefix cache compares).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/marker.h"
#include "bench/text_prompt.h"
#include "model/chat_template.h"
#include "model/tokenizer.h"

namespace paceline::bench {
namespace {

const Tokenizer& qwen3() {
  static const Tokenizer tokenizer =
      Tokenizer::from_file(PACELINE_SOURCE_DIR "/third_party/qwen3-tokenizer/tokenizer.json");
  return tokenizer;
}

RequestSpec spec(int64_t isl, int64_t shared_blocks, int turn, uint64_t marker = 0xabc123) {
  RequestSpec s;
  s.session = "trace_0002";
  s.hash_scope = s.session;
  s.block_size = 64;
  for (int64_t i = 0; i < shared_blocks; ++i) s.hash_ids.push_back(1000 + i);
  s.isl = isl;
  s.turn = turn;
  s.marker = cache_bust_marker(marker);
  return s;
}

size_t chat_tokens(const std::string& content, std::optional<bool> thinking) {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  messages.push_back({{"role", "user"}, {"content", content}});
  ChatTemplateOptions options;
  options.enable_thinking = thinking;
  static const ChatTemplate chat =
      *ChatTemplate::from_tokenizer_folder(PACELINE_SOURCE_DIR "/third_party/qwen3-tokenizer");
  return qwen3().encode(chat.render(messages, nullptr, options)).size();
}

TEST(TextPromptQwen3, EveryFillerWordIsOneToken) {
  for (std::string_view word : filler_words()) {
    EXPECT_EQ(qwen3().encode(" " + std::string(word)).size(), 1u) << word;
  }
}

TEST(TextPromptQwen3, WordsStayOneTokenEachInAnyOrder) {
  TextPromptConfig config;
  std::string text = synthesize_prompt_text(spec(5000, 70, 3), config);
  std::string words = text.substr(spec(0, 0, 0).marker.size());
  EXPECT_EQ(qwen3().encode(words).size(), 5000u);
}

TEST(TextPromptQwen3, ChatPromptCountIsWithinOnePercentOfIsl) {
  TextPromptConfig config;
  config.overhead_tokens = kDefaultChatOverheadTokens;
  for (int64_t isl : {1000, 2000, 5000, 20000, 64000, 100000}) {
    // A realistic request: full blocks shared with earlier turns, then a private tail.
    std::string text = synthesize_prompt_text(spec(isl, isl / 64 - 2, 5), config);
    for (std::optional<bool> thinking : {std::optional<bool>(), std::optional<bool>(false)}) {
      auto n = static_cast<double>(chat_tokens(text, thinking));
      EXPECT_NEAR(n, static_cast<double>(isl), 0.01 * static_cast<double>(isl))
          << "isl " << isl << (thinking ? " (thinking off)" : "");
    }
  }
}

TEST(TextPromptQwen3, SharedBlocksTokenizeToSharedPrefixes) {
  TextPromptConfig config;
  auto early = qwen3().encode(synthesize_prompt_text(spec(64 * 10 + 20, 10, 1), config));
  auto late = qwen3().encode(synthesize_prompt_text(spec(64 * 30, 30, 2), config));
  // The early turn's ten blocks are a token prefix of the later turn.
  const std::string marker = spec(0, 0, 0).marker;
  const size_t marker_tokens = qwen3().encode(marker).size();
  const size_t prefix = marker_tokens + 10 * 64;
  ASSERT_GE(early.size(), prefix);
  EXPECT_TRUE(std::equal(early.begin(), early.begin() + static_cast<long>(prefix), late.begin()));
  // Another play (marker) shares nothing after its first tokens.
  auto other = qwen3().encode(synthesize_prompt_text(spec(64 * 30, 30, 2, 0x777), config));
  EXPECT_NE(std::vector<int32_t>(other.begin(), other.begin() + static_cast<long>(marker_tokens)),
            std::vector<int32_t>(late.begin(), late.begin() + static_cast<long>(marker_tokens)));
}

TEST(TextPromptQwen3, AWarmupSharesNoKvBlockWithItsPlaysTurns) {
  // Through the chat template, a one-token warmup (no recorded block) and a turn of the same
  // play share fewer tokens than one KV block of 16, so the warmup finds nothing of its play in
  // the prefix cache and gives back nothing the play needs.
  auto chat_ids = [&](const std::string& content) {
    static const ChatTemplate chat =
        *ChatTemplate::from_tokenizer_folder(PACELINE_SOURCE_DIR "/third_party/qwen3-tokenizer");
    nlohmann::ordered_json m = nlohmann::ordered_json::array();
    m.push_back({{"role", "user"}, {"content", content}});
    return qwen3().encode(chat.render(m, nullptr, ChatTemplateOptions{}));
  };
  TextPromptConfig config;
  config.overhead_tokens = kDefaultChatOverheadTokens;
  const auto warmup = chat_ids(synthesize_prompt_text(spec(64, 0, -1), config));
  const auto turn = chat_ids(synthesize_prompt_text(spec(64 * 12, 12, 4), config));
  size_t common = 0;
  while (common < warmup.size() && common < turn.size() && warmup[common] == turn[common]) ++common;
  EXPECT_LT(common, 16u);
}

}  // namespace
}  // namespace paceline::bench
