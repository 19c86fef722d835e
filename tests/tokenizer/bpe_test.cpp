// BPE merging checked against the textbook algorithm: repeatedly join the adjacent pair whose
// merge comes first in the merges list, leftmost on ties. Words longer than 48 bytes take the
// heap-based path inside BpeMerger, so long words are the point of this test.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "model/byte_level.h"
#include "qwen3_tokenizer.h"

namespace paceline::testing {
namespace {

// Merge ranks of Qwen3, keyed by the pair of byte-level token texts.
const std::map<std::pair<std::string, std::string>, int>& qwen3_merge_ranks() {
  static const auto ranks = [] {
    std::ifstream in(qwen3_tokenizer_dir() + "/tokenizer.json");
    std::stringstream text;
    text << in.rdbuf();
    const nlohmann::json merges = nlohmann::json::parse(text.str())["model"]["merges"];
    std::map<std::pair<std::string, std::string>, int> out;
    for (size_t i = 0; i < merges.size(); ++i) {
      out.emplace(std::make_pair(merges[i][0].get<std::string>(), merges[i][1].get<std::string>()),
                  static_cast<int>(i));
    }
    return out;
  }();
  return ranks;
}

std::vector<int32_t> textbook_bpe(const std::string& word) {
  std::vector<std::string> symbols;
  for (char c : word) symbols.push_back(byte_level_encode(std::string(1, c)));
  for (;;) {
    int best = -1, best_rank = 0;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      const auto it = qwen3_merge_ranks().find({symbols[i], symbols[i + 1]});
      if (it != qwen3_merge_ranks().end() && (best < 0 || it->second < best_rank)) {
        best = static_cast<int>(i);
        best_rank = it->second;
      }
    }
    if (best < 0) break;
    symbols[best] += symbols[best + 1];
    symbols.erase(symbols.begin() + best + 1);
  }
  return ids_of(symbols);
}

TEST(Bpe, RepeatedPairsMergeLeftmostFirst) {
  EXPECT_EQ(qwen3().encode("aaa"), textbook_bpe("aaa"));
  EXPECT_EQ(qwen3().encode(std::string(101, 'a')), textbook_bpe(std::string(101, 'a')));
}

TEST(Bpe, MatchesTheTextbookAlgorithmOnShortAndLongWords) {
  std::mt19937 rng(1);
  const std::string alphabets[] = {"etaoinshrdlu", "abcdefghijklmnopqrstuvwxyz", "xyzq", "ab"};
  for (int round = 0; round < 200; ++round) {
    const std::string& letters = alphabets[round % 4];
    const size_t length = 1 + rng() % (round % 2 ? 160 : 40);
    std::string word;
    for (size_t i = 0; i < length; ++i) word += letters[rng() % letters.size()];
    // A run of ASCII letters is a single pre-token, so encode() is BPE on the whole word.
    ASSERT_EQ(qwen3().encode(word), textbook_bpe(word)) << word;
  }
}

TEST(Bpe, MatchesTheTextbookAlgorithmOnLongCjkWords) {
  std::string word;
  for (const char* c : {"自", "然", "语", "言", "处", "理", "是", "人", "工", "智", "能"})
    word += c;
  word += word + word;  // 99 bytes
  EXPECT_EQ(qwen3().encode(word), textbook_bpe(word));
}

}  // namespace
}  // namespace paceline::testing
