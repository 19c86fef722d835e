#include "kv/prefix_cache.h"

#include <gtest/gtest.h>

namespace paceline {
namespace {

TEST(BlockHash, DependsOnTheParentNotJustTheBlock) {
  std::vector<int32_t> block{1, 2, 3, 4};
  EXPECT_EQ(hash_block(kRootBlockHash, block), hash_block(kRootBlockHash, block));
  EXPECT_NE(hash_block(kRootBlockHash, block),
            hash_block(hash_block(kRootBlockHash, block), block));
  std::vector<int32_t> other{1, 2, 3, 5};
  EXPECT_NE(hash_block(kRootBlockHash, block), hash_block(kRootBlockHash, other));
}

TEST(BlockHash, CoversOnlyFullBlocksAndChains) {
  std::vector<int32_t> tokens{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  std::vector<uint64_t> hashes;
  extend_block_hashes(hashes, tokens, 4, 100);
  ASSERT_EQ(hashes.size(), 2u);
  EXPECT_EQ(hashes[0], hash_block(kRootBlockHash, std::span(tokens).first(4)));
  EXPECT_EQ(hashes[1], hash_block(hashes[0], std::span(tokens).subspan(4, 4)));
}

TEST(BlockHash, ExtendingIsIncrementalAndBounded) {
  std::vector<int32_t> tokens{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  std::vector<uint64_t> once, stepwise;
  extend_block_hashes(once, tokens, 4, 100);
  extend_block_hashes(stepwise, std::span(tokens).first(5), 4, 100);
  EXPECT_EQ(stepwise.size(), 1u);
  extend_block_hashes(stepwise, tokens, 4, 2);
  EXPECT_EQ(stepwise.size(), 2u);
  extend_block_hashes(stepwise, tokens, 4, 100);
  EXPECT_EQ(stepwise, once);
}

TEST(PrefixCache, KeepsTheFirstBlockForAHash) {
  PrefixCache cache;
  EXPECT_TRUE(cache.insert(5, 1));
  EXPECT_FALSE(cache.insert(5, 2));
  EXPECT_EQ(cache.find(5), 1);
  cache.erase(5, 2);  // not the holder: no effect
  EXPECT_EQ(cache.find(5), 1);
  cache.erase(5, 1);
  EXPECT_FALSE(cache.find(5).has_value());
}

}  // namespace
}  // namespace paceline
