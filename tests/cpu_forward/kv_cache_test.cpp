// The paged KV cache: slot mapping through a block table, and what a block table must cover.
#include "exec/cpu/kv_cache.h"

#include <vector>

#include <gtest/gtest.h>

#include "base/error.h"

namespace paceline {
namespace {

TEST(PagedKvCache, SlotIsBlockTimesBlockSizePlusOffset) {
  PagedKvCache cache(2, KvCacheShape{8, 4}, 2, 3);
  std::vector<int32_t> table = {5, 0, 7};
  EXPECT_EQ(cache.slot(table, 0), 20);
  EXPECT_EQ(cache.slot(table, 3), 23);
  EXPECT_EQ(cache.slot(table, 4), 0);
  EXPECT_EQ(cache.slot(table, 9), 29);
  EXPECT_EQ(cache.slot_width(), 6);
  EXPECT_EQ(cache.num_slots(), 32);
}

TEST(PagedKvCache, LayersAndKeysAndValuesAreSeparateStorage) {
  PagedKvCache cache(2, KvCacheShape{2, 2}, 1, 2);
  cache.key(0, 3)[1] = 1.0f;
  cache.value(1, 3)[1] = 2.0f;
  EXPECT_EQ(cache.key(1, 3)[1], 0.0f);
  EXPECT_EQ(cache.value(0, 3)[1], 0.0f);
  EXPECT_EQ(cache.key(0, 3)[1], 1.0f);
  EXPECT_EQ(cache.value(1, 3)[1], 2.0f);
}

TEST(PagedKvCache, BlockTableMustCoverThePositionsWithBlocksInTheCache) {
  PagedKvCache cache(1, KvCacheShape{8, 4}, 1, 2);
  std::vector<int32_t> two = {3, 1};
  EXPECT_NO_THROW(cache.check_block_table(two, 8, 1));
  EXPECT_THROW(cache.check_block_table(two, 9, 1), Error);
  std::vector<int32_t> outside = {3, 8};
  EXPECT_THROW(cache.check_block_table(outside, 5, 1), Error);
  EXPECT_NO_THROW(cache.check_block_table(outside, 4, 1));  // the bad entry is not reached
  EXPECT_THROW(PagedKvCache(1, KvCacheShape{0, 4}, 1, 2), Error);
}

}  // namespace
}  // namespace paceline
