#include "kv/kv_manager.h"

#include <numeric>

#include <gtest/gtest.h>

namespace paceline {
namespace {

std::vector<int32_t> iota_tokens(int n, int32_t first = 1) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

// Admits a sequence as the scheduler does: probe, allocate all of it, compute it, publish.
PrefixHit prefill(KvManager& kv, BlockTable& seq, const std::vector<int32_t>& tokens) {
  PrefixHit hit = kv.find_cached_prefix(seq, tokens);
  EXPECT_TRUE(kv.allocate_for(seq, static_cast<int64_t>(tokens.size()), hit));
  kv.cache_computed_blocks(seq, tokens, static_cast<int64_t>(tokens.size()));
  return hit;
}

TEST(KvManager, GrowsABlockTableAsTokensAreAdded) {
  KvManager kv({.num_blocks = 8, .block_size = 4});
  BlockTable seq;
  ASSERT_TRUE(kv.allocate_for(seq, 5));
  EXPECT_EQ(seq.ids.size(), 2u);
  ASSERT_TRUE(kv.allocate_for(seq, 8));  // still fits in two blocks
  EXPECT_EQ(seq.ids.size(), 2u);
  ASSERT_TRUE(kv.allocate_for(seq, 9));
  EXPECT_EQ(seq.ids.size(), 3u);
  EXPECT_DOUBLE_EQ(kv.usage(), 3.0 / 8.0);
}

TEST(KvManager, AllocationIsAllOrNothing) {
  KvManager kv({.num_blocks = 3, .block_size = 4});
  BlockTable a, b;
  ASSERT_TRUE(kv.allocate_for(a, 8));
  EXPECT_FALSE(kv.can_allocate(b, 9));
  EXPECT_FALSE(kv.allocate_for(b, 9));
  EXPECT_TRUE(b.ids.empty());
  EXPECT_EQ(kv.num_free_blocks(), 1);
}

TEST(KvManager, ASecondRequestWithTheSamePrefixComputesOnlyTheNewBlocks) {
  KvManager kv({.num_blocks = 16, .block_size = 4});
  auto shared = iota_tokens(12);
  auto first = shared;
  first.insert(first.end(), {100, 101});
  auto second = shared;
  second.insert(second.end(), {200, 201, 202, 203, 204});

  BlockTable a, b;
  EXPECT_EQ(prefill(kv, a, first).num_tokens, 0);
  PrefixHit hit = prefill(kv, b, second);
  EXPECT_EQ(hit.num_tokens, 12);
  EXPECT_EQ(std::vector<int32_t>(b.ids.begin(), b.ids.begin() + 3),
            std::vector<int32_t>(a.ids.begin(), a.ids.begin() + 3));
  EXPECT_NE(b.ids[3], a.ids[3]);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(kv.pool().ref_count(a.ids[i]), 2);
  EXPECT_EQ(kv.stats().prefix_queries, 14 + 17);
  EXPECT_EQ(kv.stats().prefix_hits, 12);
}

TEST(KvManager, TheBlockHoldingTheLastPromptTokenIsNeverAHit) {
  KvManager kv({.num_blocks = 16, .block_size = 4});
  auto prompt = iota_tokens(12);  // three full blocks
  BlockTable a, b;
  prefill(kv, a, prompt);
  EXPECT_EQ(kv.pool().num_cached(), 3);
  // The same prompt again: the first two blocks hit, the third (with the last token) is computed.
  PrefixHit hit = kv.find_cached_prefix(b, prompt);
  EXPECT_EQ(hit.num_tokens, 8);
  // One token more: the last token now sits in a fourth block, so all three hit.
  auto longer = iota_tokens(13);
  BlockTable c;
  EXPECT_EQ(kv.find_cached_prefix(c, longer).num_tokens, 12);
}

TEST(KvManager, BlocksAreCachedOnlyOnceFullOfComputedTokens) {
  KvManager kv({.num_blocks = 8, .block_size = 4});
  auto tokens = iota_tokens(10);
  BlockTable a;
  ASSERT_TRUE(kv.allocate_for(a, 10));
  kv.cache_computed_blocks(a, tokens, 7);  // a chunk: only block 0 is full of computed tokens
  EXPECT_EQ(kv.pool().num_cached(), 1);
  kv.cache_computed_blocks(a, tokens, 10);  // block 2 holds two tokens: not full
  EXPECT_EQ(kv.pool().num_cached(), 2);
}

TEST(KvManager, FreedBlocksStayCachedAndServeALaterRequest) {
  KvManager kv({.num_blocks = 8, .block_size = 4});
  auto prompt = iota_tokens(9);
  BlockTable a, b;
  prefill(kv, a, prompt);
  kv.free(a);
  EXPECT_EQ(kv.num_free_blocks(), 8);
  EXPECT_EQ(prefill(kv, b, prompt).num_tokens, 8);
  EXPECT_EQ(kv.num_free_blocks(), 5);
}

TEST(KvManager, AHitOnAFreeBlockIsNotAlsoCountedAsRoomForFreshBlocks) {
  KvManager kv({.num_blocks = 3, .block_size = 4});
  auto prompt = iota_tokens(9);  // 3 blocks, 2 cacheable
  BlockTable a, b;
  prefill(kv, a, prompt);
  kv.free(a);
  auto longer = iota_tokens(13);  // 2 hits + 2 fresh blocks: 4 > 3
  PrefixHit hit = kv.find_cached_prefix(b, longer);
  EXPECT_EQ(hit.blocks.size(), 2u);
  EXPECT_FALSE(kv.can_allocate(b, 13, hit));
  EXPECT_TRUE(kv.can_allocate(b, 12, hit));
}

TEST(KvManager, FreeingReleasesTheTailFirstSoSharedPrefixesOutliveIt) {
  KvManager kv({.num_blocks = 4, .block_size = 4});
  auto prompt = iota_tokens(16);
  BlockTable a;
  prefill(kv, a, prompt);
  kv.free(a);
  EXPECT_EQ(kv.pool().free_queue(), (std::vector<int32_t>{3, 2, 1, 0}));
}

TEST(KvManager, PrefixCachingCanBeTurnedOff) {
  KvManager kv({.num_blocks = 8, .block_size = 4, .enable_prefix_caching = false});
  auto prompt = iota_tokens(9);
  BlockTable a, b;
  prefill(kv, a, prompt);
  EXPECT_EQ(kv.pool().num_cached(), 0);
  EXPECT_EQ(prefill(kv, b, prompt).num_tokens, 0);
  EXPECT_EQ(kv.stats().prefix_queries, 0);
}

TEST(KvManager, FreeReturnsEveryBlockEvenWhenShared) {
  KvManager kv({.num_blocks = 8, .block_size = 4});
  auto prompt = iota_tokens(13);
  BlockTable a, b;
  prefill(kv, a, prompt);
  prefill(kv, b, prompt);
  kv.free(a);
  kv.free(b);
  EXPECT_EQ(kv.num_free_blocks(), 8);
  EXPECT_DOUBLE_EQ(kv.usage(), 0.0);
  for (int32_t blk = 0; blk < 8; ++blk) EXPECT_EQ(kv.pool().ref_count(blk), 0);
}

}  // namespace
}  // namespace paceline
