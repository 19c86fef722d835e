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

TEST(BlockPool, AForgottenBlockIsNoLongerFoundInUseOrFree) {
  BlockPool pool(3, 16, /*ranked=*/true);
  const int32_t a = pool.allocate(), b = pool.allocate();
  pool.publish(a, 1);
  pool.publish(b, 2);
  pool.release(a, 10, 10);
  pool.forget(a);  // free: it goes to the head, as an unhashed block
  pool.forget(b);  // in use: it keeps its reference
  EXPECT_FALSE(pool.find_cached(1).has_value());
  EXPECT_FALSE(pool.find_cached(2).has_value());
  EXPECT_EQ(pool.num_cached(), 0);
  EXPECT_EQ(pool.ref_count(b), 1);
  EXPECT_EQ(pool.free_queue(), (std::vector<int32_t>{a, 2}));
  EXPECT_FALSE(pool.highest_ranked_free().has_value());  // a ranked pool forgot its key too
  pool.release(b);
  EXPECT_TRUE(pool.publish(b, 1));  // the hash is free for another block
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

// The reuse policy asks which free cached block has been idle longest. That is the release
// time, not the free queue's order: a host tier files blocks as they are stored, each under the
// release time its GPU block had. A block a waiting request wants is not idle at all.
TEST(BlockPool, TheLongestIdleBlockIsTheOneReleasedEarliestAndNotWanted) {
  BlockPool pool(4, 4, /*ranked=*/true);
  const int32_t a = pool.allocate(), b = pool.allocate(), c = pool.allocate();
  pool.publish(a, 11, 0);
  pool.publish(b, 12, 0);
  pool.publish(c, 13, 1);
  pool.release(a, /*now_ns=*/5, /*evict_key=*/5);
  pool.release(b, /*now_ns=*/1, /*evict_key=*/1);  // freed after a, but idle since earlier
  pool.release(c, /*now_ns=*/1, /*evict_key=*/1);
  EXPECT_EQ(pool.free_queue().back(), c);  // the queue has them in the order they came
  EXPECT_EQ(pool.longest_idle_free(), c);  // released at 1, and deeper than b
  pool.mark_wanted(c, -10);
  EXPECT_TRUE(pool.is_wanted(c));
  EXPECT_EQ(pool.evict_key(c), -10);
  EXPECT_EQ(pool.longest_idle_free(), b);
  pool.mark_wanted(b, -20);
  pool.mark_wanted(b, -15);  // a later request wants it too: the earlier one's key stays
  EXPECT_EQ(pool.evict_key(b), -20);
  EXPECT_EQ(pool.longest_idle_free(), a);
  pool.mark_wanted(a, -30);
  EXPECT_FALSE(pool.longest_idle_free().has_value());
  pool.acquire(a);  // the request came: released again, a is idle anew
  pool.release(a, /*now_ns=*/9, /*evict_key=*/9);
  EXPECT_FALSE(pool.is_wanted(a));
  EXPECT_EQ(pool.longest_idle_free(), a);
}

}  // namespace
}  // namespace paceline
