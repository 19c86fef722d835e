// Text prompts: one word per token, shared blocks identical, the tail private, the marker first
// (last in a prompt with no recorded block).
// (The token counts on the real Qwen3 tokenizer are checked in tests/bench_e2e.)
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bench/text_prompt.h"

namespace paceline::bench {
namespace {

constexpr const char* kMarker = "[rid:00000000abcd]\n\n";

RequestSpec spec(std::vector<int64_t> ids, int64_t isl, int turn = 0, std::string marker = kMarker,
                 std::string scope = "s") {
  RequestSpec s;
  s.session = scope;
  s.hash_scope = std::move(scope);
  s.block_size = 64;
  s.hash_ids = std::move(ids);
  s.isl = isl;
  s.marker = std::move(marker);
  s.turn = turn;
  return s;
}

// The words after the marker.
std::vector<std::string> words(const std::string& text, const std::string& marker = kMarker) {
  EXPECT_EQ(text.substr(0, marker.size()), marker);
  std::istringstream in(text.substr(marker.size()));
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

TEST(TextPrompt, OneWordPerTokenAfterTheMarker) {
  TextPromptConfig config;
  std::string text = synthesize_prompt_text(spec({1, 2, 3}, 3 * 64 + 17), config);
  EXPECT_EQ(words(text).size(), 3u * 64 + 17);
  EXPECT_EQ(text[std::string(kMarker).size()], ' ');  // each word carries its leading space
  std::set<std::string> vocab;
  for (auto w : filler_words()) vocab.insert(std::string(w));
  for (const auto& w : words(text)) EXPECT_TRUE(vocab.count(w)) << w;
  // Ids beyond the input are ignored.
  EXPECT_EQ(words(synthesize_prompt_text(spec({1, 2, 3}, 100), config)).size(), 100u);
}

TEST(TextPrompt, APromptWithNoRecordedBlockEndsWithTheMarker) {
  // A lane's one-token warmups: nothing recorded, so nothing shared with the play's turns, not
  // even the marker (with the chat template it fills the play's first KV block).
  TextPromptConfig config;
  const std::string marker = kMarker;
  const std::string text = synthesize_prompt_text(spec({}, 9, -1), config);
  ASSERT_GE(text.size(), marker.size());
  EXPECT_NE(text.substr(0, marker.size()), marker);
  EXPECT_EQ(text.substr(text.size() - marker.size()), marker);
  EXPECT_EQ(text[0], ' ');  // its own words first, all tail
  std::istringstream in(text.substr(0, text.size() - marker.size()));
  std::vector<std::string> tail;
  for (std::string w; in >> w;) tail.push_back(w);
  EXPECT_EQ(tail.size(), 9u);
  // The marker still names the play: another play's warmup has other words.
  EXPECT_NE(text, synthesize_prompt_text(spec({}, 9, -1, "[rid:000000000001]\n\n"), config));
}

TEST(TextPrompt, SharedBlocksAreIdenticalTailsAndOtherBlocksDiffer) {
  TextPromptConfig config;
  auto a = words(synthesize_prompt_text(spec({1, 2, 3}, 3 * 64 + 10, 0), config));
  auto b = words(synthesize_prompt_text(spec({1, 2, 9, 4}, 4 * 64 + 30, 1), config));
  EXPECT_TRUE(std::equal(a.begin(), a.begin() + 128, b.begin()));               // blocks 1, 2
  EXPECT_FALSE(std::equal(a.begin() + 128, a.begin() + 192, b.begin() + 128));  // 3 vs 9
  EXPECT_FALSE(std::equal(a.begin() + 192, a.end(), b.begin() + 192));          // tails
  EXPECT_EQ(a, words(synthesize_prompt_text(spec({1, 2, 3}, 3 * 64 + 10, 0), config)));
  std::set<std::string> distinct(a.begin(), a.begin() + 64);
  EXPECT_GT(distinct.size(), 30u);  // a block is not one repeated word
}

TEST(TextPrompt, TheTextIsAPrefixExtension) {
  // A later turn that re-sends the earlier turn's blocks starts with the same text, byte for byte.
  TextPromptConfig config;
  std::string early = synthesize_prompt_text(spec({5, 6}, 128, 0), config);
  std::string late = synthesize_prompt_text(spec({5, 6, 7, 8}, 300, 1), config);
  EXPECT_EQ(late.substr(0, early.size()), early);
}

TEST(TextPrompt, ScopeAndSeedChangeTheBlocksTheMarkerChangesThePrefix) {
  TextPromptConfig config;
  auto a = words(synthesize_prompt_text(spec({1}, 64), config));
  EXPECT_NE(a, words(synthesize_prompt_text(spec({1}, 64, 0, kMarker, "other"), config)));
  TextPromptConfig seeded;
  seeded.seed = 7;
  EXPECT_NE(a, words(synthesize_prompt_text(spec({1}, 64), seeded)));
  std::string other_marker = "[rid:000000000001]\n\n";
  std::string c = synthesize_prompt_text(spec({1}, 64, 0, other_marker), config);
  EXPECT_EQ(c.substr(0, other_marker.size()), other_marker);
}

TEST(TextPrompt, OverheadComesOffThePrivateTailOnly) {
  TextPromptConfig config;
  config.overhead_tokens = 20;
  EXPECT_EQ(words(synthesize_prompt_text(spec({1, 2}, 128 + 50), config)).size(), 128u + 30);
  EXPECT_EQ(words(synthesize_prompt_text(spec({1, 2}, 128 + 5), config)).size(), 128u);
  EXPECT_EQ(words(synthesize_prompt_text(spec({1, 2}, 128), config)).size(), 128u);  // whole blocks
  TextPromptConfig plain;
  auto with = words(synthesize_prompt_text(spec({1, 2}, 178), config));
  auto without = words(synthesize_prompt_text(spec({1, 2}, 178), plain));
  EXPECT_TRUE(std::equal(with.begin(), with.begin() + 128, without.begin()));
}

}  // namespace
}  // namespace paceline::bench
