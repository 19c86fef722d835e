// POST /reset_prefix_cache at the KV layer: every cached block no sequence holds forgets its
// hash; blocks in use keep theirs, so running requests lose nothing.
#include <gtest/gtest.h>

#include <numeric>

#include "kv/block_pool.h"
#include "kv/kv_manager.h"

namespace paceline {
namespace {

TEST(PrefixCacheReset, DropsFreeCachedBlocksAndKeepsThoseInUse) {
  BlockPool pool(4, 16);
  const int32_t held = pool.allocate();
  const int32_t freed = pool.allocate();
  const int32_t fresh = pool.allocate();
  pool.publish(held, 0xaa);
  pool.publish(freed, 0xbb);
  pool.release(freed);
  pool.release(fresh);
  EXPECT_EQ(pool.evict_free_cached(), 1);
  EXPECT_EQ(pool.find_cached(0xaa), held);
  EXPECT_FALSE(pool.find_cached(0xbb).has_value());
  EXPECT_FALSE(pool.is_cached(freed));
  EXPECT_EQ(pool.num_free(), 3);
  EXPECT_EQ(pool.num_cached(), 1);
  // An unhashed free block now: at the head of the queue, handed out before anything cached.
  EXPECT_EQ(pool.free_queue().front(), freed);
  EXPECT_EQ(pool.evict_free_cached(), 0);
}

TEST(PrefixCacheReset, ARankedPoolForgetsTheKeysOfDroppedBlocks) {
  BlockPool pool(2, 16, /*ranked=*/true);
  const int32_t b = pool.allocate();
  pool.publish(b, 0xcc);
  pool.release(b, 0, /*evict_key=*/7);
  ASSERT_EQ(pool.highest_ranked_free(), b);
  EXPECT_EQ(pool.evict_free_cached(), 1);
  EXPECT_FALSE(pool.highest_ranked_free().has_value());
  EXPECT_EQ(pool.allocate(), b);  // unhashed blocks go first
}

TEST(PrefixCacheReset, KvManagerForgetsFinishedPrefixesOnly) {
  KvConfig config;
  config.num_blocks = 16;
  config.block_size = 4;
  KvManager kv(config);
  std::vector<int32_t> tokens(17);
  std::iota(tokens.begin(), tokens.end(), 100);

  BlockTable done;
  ASSERT_TRUE(kv.allocate_for(done, 17));
  kv.cache_computed_blocks(done, tokens, 17);
  kv.free(done);
  BlockTable running;  // a different prompt, still holding its blocks
  std::vector<int32_t> other(tokens.begin(), tokens.end());
  other[0] = 7;
  ASSERT_TRUE(kv.allocate_for(running, 17));
  kv.cache_computed_blocks(running, other, 17);

  BlockTable probe;
  ASSERT_EQ(kv.find_cached_prefix(probe, tokens).num_tokens, 16);
  EXPECT_EQ(kv.reset_prefix_cache(), 4);
  BlockTable after;
  EXPECT_EQ(kv.find_cached_prefix(after, tokens).num_tokens, 0);
  BlockTable same_as_running;
  EXPECT_EQ(kv.find_cached_prefix(same_as_running, other).num_tokens, 16);
}

}  // namespace
}  // namespace paceline
