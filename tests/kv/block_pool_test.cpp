#include "kv/block_pool.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace paceline {
namespace {

TEST(BlockPool, StartsWithEveryBlockFreeInIdOrder) {
  BlockPool pool(4, 16);
  EXPECT_EQ(pool.num_free(), 4);
  EXPECT_EQ(pool.free_queue(), (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(pool.allocate(), 0);
  EXPECT_EQ(pool.allocate(), 1);
  EXPECT_EQ(pool.num_free(), 2);
}

TEST(BlockPool, RejectsAnEmptyPool) {
  EXPECT_THROW(BlockPool(0, 16), Error);
  EXPECT_THROW(BlockPool(4, 0), Error);
}

TEST(BlockPool, ReferenceCountsDecideWhenABlockIsFree) {
  BlockPool pool(2, 16);
  int32_t b = pool.allocate();
  pool.acquire(b);
  EXPECT_EQ(pool.ref_count(b), 2);
  pool.release(b);
  EXPECT_EQ(pool.num_free(), 1);
  pool.release(b);
  EXPECT_EQ(pool.ref_count(b), 0);
  EXPECT_EQ(pool.num_free(), 2);
  EXPECT_THROW(pool.release(b), Error);
}

TEST(BlockPool, AllocatingFromAnEmptyPoolFails) {
  BlockPool pool(1, 16);
  pool.allocate();
  EXPECT_THROW(pool.allocate(), Error);
}

TEST(BlockPool, FreedCachedBlocksKeepTheirHashUntilEvicted) {
  BlockPool pool(2, 16);
  int32_t b = pool.allocate();
  ASSERT_TRUE(pool.publish(b, 42));
  pool.release(b);
  EXPECT_EQ(pool.find_cached(42), b);  // still a hit while free
  pool.allocate();                     // takes the never-used block first
  EXPECT_EQ(pool.find_cached(42), b);
  EXPECT_EQ(pool.allocate(), b);  // now it must be evicted
  EXPECT_FALSE(pool.find_cached(42).has_value());
  EXPECT_FALSE(pool.hash_of(b).has_value());
}

TEST(BlockPool, HitOnAFreeBlockTakesItOutOfTheFreeQueue) {
  BlockPool pool(2, 16);
  int32_t b = pool.allocate();
  pool.publish(b, 7);
  pool.release(b);
  EXPECT_EQ(pool.num_free(), 2);
  pool.acquire(b);
  EXPECT_EQ(pool.num_free(), 1);
  EXPECT_EQ(pool.free_queue(), (std::vector<int32_t>{1}));
}

TEST(BlockPool, EvictsCachedBlocksLeastRecentlyFreedFirst) {
  BlockPool pool(3, 16);
  int32_t a = pool.allocate(), b = pool.allocate(), c = pool.allocate();
  pool.publish(a, 1);
  pool.publish(b, 2);
  pool.publish(c, 3);
  pool.release(b);
  pool.release(c);
  pool.release(a);
  EXPECT_EQ(pool.free_queue(), (std::vector<int32_t>{b, c, a}));
  EXPECT_EQ(pool.allocate(), b);
  EXPECT_EQ(pool.allocate(), c);
  EXPECT_EQ(pool.find_cached(1), a);
}

TEST(BlockPool, UnhashedFreeBlocksAreHandedOutBeforeCachedOnes) {
  BlockPool pool(3, 16);
  int32_t a = pool.allocate(), b = pool.allocate(), c = pool.allocate();
  pool.publish(a, 1);
  pool.release(a);
  pool.release(b);  // unhashed: goes ahead of the cached block
  EXPECT_EQ(pool.free_queue(), (std::vector<int32_t>{b, a}));
  EXPECT_EQ(pool.allocate(), b);
  pool.release(c);
  EXPECT_EQ(pool.allocate(), c);
  EXPECT_EQ(pool.find_cached(1), a);
}

TEST(BlockPool, TheFirstBlockPublishedUnderAHashWins) {
  BlockPool pool(2, 16);
  int32_t a = pool.allocate(), b = pool.allocate();
  EXPECT_TRUE(pool.publish(a, 9));
  EXPECT_FALSE(pool.publish(b, 9));
  EXPECT_EQ(pool.find_cached(9), a);
  EXPECT_FALSE(pool.hash_of(b).has_value());
  EXPECT_EQ(pool.num_cached(), 1);
}

}  // namespace
}  // namespace paceline
