// WordCache: a bounded map from word to ids that may forget, but never answers wrongly.
#include <gtest/gtest.h>

#include "model/tokenizer_cache.h"

namespace paceline {
namespace {

std::vector<int32_t> ids_for(int i) {
  return {i, i * 3, -i};
}

TEST(WordCache, ReturnsWhatWasStored) {
  WordCache cache(1000);
  const std::vector<int32_t> ids = {7, 8, 9};
  cache.store("hello", ids.data(), ids.size());
  std::vector<int32_t> out = {1};
  EXPECT_TRUE(cache.lookup("hello", out));
  EXPECT_EQ(out, (std::vector<int32_t>{1, 7, 8, 9}));  // appended
  EXPECT_FALSE(cache.lookup("hell", out));
  EXPECT_FALSE(cache.lookup("hello!", out));
}

TEST(WordCache, GrowsThenForgetsButNeverMixesUpWords) {
  WordCache cache(512);
  for (int i = 0; i < 20000; ++i) {
    const std::string word = "w" + std::to_string(i);
    const auto ids = ids_for(i);
    cache.store(word, ids.data(), ids.size());
  }
  int hits = 0;
  for (int i = 0; i < 20000; ++i) {
    std::vector<int32_t> out;
    if (cache.lookup("w" + std::to_string(i), out)) {
      ++hits;
      ASSERT_EQ(out, ids_for(i)) << i;
    }
  }
  EXPECT_GT(hits, 100);
  EXPECT_LT(hits, 20000);  // bounded: most were forgotten
}

TEST(WordCache, SkipsOverlongWords) {
  WordCache cache(100);
  const std::string word(WordCache::kMaxWordBytes + 1, 'x');
  const std::vector<int32_t> ids = {1};
  cache.store(word, ids.data(), ids.size());
  std::vector<int32_t> out;
  EXPECT_FALSE(cache.lookup(word, out));
}

}  // namespace
}  // namespace paceline
