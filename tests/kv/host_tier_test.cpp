// The host-memory KV tier: a cached block that gives way on the GPU is stored to the host
// tier, and a prefix that continues there is loaded back instead of recomputed.
#include <numeric>

#include <gtest/gtest.h>

#include "kv/kv_manager.h"

namespace paceline {
namespace {

std::vector<int32_t> tokens_from(int32_t first, int n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

struct Turn {
  PrefixHit hit;
  KvTransfers transfers;
};

// Admits, computes and frees a sequence as the scheduler does around one forward.
Turn run_turn(KvManager& kv, const std::vector<int32_t>& tokens) {
  BlockTable seq;
  Turn t;
  t.hit = kv.find_cached_prefix(seq, tokens);
  EXPECT_TRUE(kv.allocate_for(seq, static_cast<int64_t>(tokens.size()), t.hit));
  t.transfers = kv.take_transfers();
  kv.cache_computed_blocks(seq, tokens, static_cast<int64_t>(tokens.size()));
  kv.free(seq);
  kv.release_transfer_pins();
  return t;
}

// 5 GPU blocks of 4 tokens, 8 host blocks. A: 4 full blocks + 1 token. B pushes A out.
class HostTier : public ::testing::Test {
 protected:
  KvManager kv{{.num_blocks = 5, .block_size = 4, .num_host_blocks = 8}};
  std::vector<int32_t> a = tokens_from(100, 17), b = tokens_from(200, 17);
};

TEST_F(HostTier, BlocksGivingWayOnTheGpuAreStoredToTheHost) {
  run_turn(kv, a);
  const Turn tb = run_turn(kv, b);
  EXPECT_EQ(tb.transfers.stores.size(), 4u);  // A's four cached blocks
  EXPECT_TRUE(tb.transfers.loads.empty());
  EXPECT_EQ(kv.stats().stored_blocks, 4);
  EXPECT_EQ(kv.host_pool()->num_cached(), 4);
}

TEST_F(HostTier, APrefixThatContinuesInTheHostIsLoadedBack) {
  run_turn(kv, a);
  run_turn(kv, b);
  const Turn again = run_turn(kv, a);
  EXPECT_TRUE(again.hit.blocks.empty());  // nothing of A is left on the GPU
  ASSERT_EQ(again.hit.host_blocks.size(), 4u);
  EXPECT_EQ(again.hit.num_tokens, 16);
  ASSERT_EQ(again.transfers.loads.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(again.transfers.loads[i].host_block, again.hit.host_blocks[i]);
  }
  // Loading A evicted B's blocks from the GPU: they went to the host before being overwritten.
  EXPECT_EQ(again.transfers.stores.size(), 4u);
  EXPECT_EQ(kv.stats().host_hits, 16);
  EXPECT_EQ(kv.stats().prefix_hits, 16);
}

TEST_F(HostTier, HostBlocksALoadReadsFromArePinnedUntilTheForwardIsOver) {
  run_turn(kv, a);
  run_turn(kv, b);
  BlockTable seq;
  const PrefixHit hit = kv.find_cached_prefix(seq, a);
  ASSERT_TRUE(kv.allocate_for(seq, 17, hit));
  for (int32_t h : hit.host_blocks) EXPECT_EQ(kv.host_pool()->ref_count(h), 1);
  kv.release_transfer_pins();  // no forward has taken the loads yet: they stay pinned
  for (int32_t h : hit.host_blocks) EXPECT_EQ(kv.host_pool()->ref_count(h), 1);
  EXPECT_EQ(kv.take_transfers().loads.size(), 4u);
  kv.release_transfer_pins();
  for (int32_t h : hit.host_blocks) EXPECT_EQ(kv.host_pool()->ref_count(h), 0);
}

// A load that failed: its host block forgets the hash (nobody finds that prefix there again)
// and counts as a failure, not a load; the hit's tokens from that block on are no hits.
TEST_F(HostTier, AFailedLoadIsForgottenAndCountedAsAFailure) {
  run_turn(kv, a);
  run_turn(kv, b);
  BlockTable seq;
  const PrefixHit hit = kv.find_cached_prefix(seq, a);
  ASSERT_EQ(hit.host_blocks.size(), 4u);
  ASSERT_TRUE(kv.allocate_for(seq, 17, hit));
  const KvTransfers t = kv.take_transfers();
  ASSERT_EQ(t.loads.size(), 4u);
  kv.forget_failed_loads(std::span(t.loads).subspan(2));  // A's blocks 2 and 3 did not arrive
  kv.uncount_host_hit(seq, 8);
  EXPECT_EQ(kv.stats().load_failures, 2);
  EXPECT_EQ(kv.stats().loaded_blocks, 2);
  EXPECT_EQ(kv.stats().host_hits, 8);
  EXPECT_EQ(kv.stats().prefix_hits, 8);
  EXPECT_FALSE(kv.host_pool()->is_cached(t.loads[2].host_block));
  EXPECT_TRUE(kv.host_pool()->is_cached(t.loads[1].host_block));
  kv.cache_computed_blocks(seq, a, 8);  // what arrived, published as the scheduler would
  kv.free(seq);
  kv.release_transfer_pins();
  for (int32_t h = 0; h < 8; ++h) EXPECT_EQ(kv.host_pool()->ref_count(h), 0);
  BlockTable again;
  const PrefixHit later = kv.find_cached_prefix(again, a);
  EXPECT_EQ(later.num_tokens, 8);  // A's first two blocks, no more
}

// A pass stores A's tail to the host for B, preempts B, then admits A again with a load of that
// very tail; every row then goes. No forward takes the copies: they wait for the next one, the
// load's block still pinned, and nothing is lost.
TEST(HostTierCarry, CopiesNoForwardTookWaitForTheNextOne) {
  KvManager kv({.num_blocks = 10, .block_size = 4, .num_host_blocks = 8});
  const auto a = tokens_from(100, 17), b = tokens_from(200, 29);
  run_turn(kv, a);
  BlockTable sb, sa;
  ASSERT_TRUE(kv.allocate_for(sb, 29, kv.find_cached_prefix(sb, b)));  // evicts A2, A3
  kv.free(sb);                                                          // preempted
  const PrefixHit hit = kv.find_cached_prefix(sa, a);
  ASSERT_EQ(hit.blocks.size(), 2u);
  ASSERT_EQ(hit.host_blocks.size(), 2u);
  ASSERT_TRUE(kv.allocate_for(sa, 17, hit));
  kv.free(sa);
  kv.release_transfer_pins();  // the next pass begins
  for (int32_t h : hit.host_blocks) EXPECT_EQ(kv.host_pool()->ref_count(h), 1);
  const KvTransfers t = kv.take_transfers();
  EXPECT_EQ(t.stores.size(), 2u);  // A2 and A3, before the load that reads A3 back
  EXPECT_EQ(t.loads.size(), 2u);
  kv.release_transfer_pins();
  EXPECT_EQ(kv.host_pool()->num_cached(), 2);
  for (int32_t h = 0; h < 8; ++h) EXPECT_EQ(kv.host_pool()->ref_count(h), 0);
}

// An exclusive hierarchy under a ranked policy: a host block loaded into the GPU is redundant
// while the GPU holds its content, so it is ranked to give way first; when the GPU's block gives
// way, the host copy (still there) takes that block's rank, and nothing is copied again. Under
// LRU the tiers stay inclusive (vLLM's and SGLang's way).
TEST(HostTierExclusive, ALoadedHostCopyGivesWayFirstAndIsRankedAgainWhenTheGpuLetsGo) {
  for (KvPolicy policy : {KvPolicy::kReuse, KvPolicy::kLru}) {
    KvManager kv{{.num_blocks = 5, .block_size = 4, .policy = policy, .num_host_blocks = 8}};
    const std::vector<int32_t> a = tokens_from(100, 17), b = tokens_from(200, 17),
                               c = tokens_from(300, 17);
    run_turn(kv, a);
    run_turn(kv, b);  // A to the host
    const Turn again = run_turn(kv, a);  // A loaded back; B to the host
    ASSERT_EQ(again.transfers.loads.size(), 4u);
    const bool ranked = policy != KvPolicy::kLru;
    for (const BlockCopy& load : again.transfers.loads) {
      EXPECT_EQ(kv.host_pool()->evict_key(load.host_block) == KvManager::kRedundantKey, ranked)
          << kv_policy_name(policy);
    }
    for (const BlockCopy& store : again.transfers.stores) {  // B's: the host's only copy
      EXPECT_NE(kv.host_pool()->evict_key(store.host_block), KvManager::kRedundantKey);
    }
    const Turn tc = run_turn(kv, c);  // A gives way on the GPU again: its host copy is there
    EXPECT_TRUE(tc.transfers.stores.empty()) << kv_policy_name(policy);
    for (const BlockCopy& load : again.transfers.loads) {
      EXPECT_NE(kv.host_pool()->evict_key(load.host_block), KvManager::kRedundantKey);
      EXPECT_TRUE(kv.host_pool()->is_cached(load.host_block));
    }
  }
}

TEST(HostTierOff, NothingIsStoredWithoutOne) {
  KvManager kv({.num_blocks = 5, .block_size = 4});
  run_turn(kv, tokens_from(100, 17));
  EXPECT_TRUE(run_turn(kv, tokens_from(200, 17)).transfers.empty());
  EXPECT_EQ(kv.host_pool(), nullptr);
}

}  // namespace
}  // namespace paceline

namespace paceline {
namespace {

// may_hit_blocks: one lookup that rules a prefix hit out. A's 4 cacheable blocks are resident
// (on the GPU, then in the host tier after B pushed them out): a hit of 1 to 4 blocks may be;
// 5 blocks is past what the prompt can have cached; a prompt none of whose blocks is cached
// cannot hit.
TEST_F(HostTier, MayHitBlocksAsksForTheLastBlockOfTheHitInEitherTier) {
  run_turn(kv, a);
  BlockTable fresh;
  EXPECT_TRUE(kv.may_hit_blocks(fresh, a, 0));
  EXPECT_TRUE(kv.may_hit_blocks(fresh, a, 4));
  EXPECT_FALSE(kv.may_hit_blocks(fresh, a, 5));
  run_turn(kv, b);  // A's blocks now in the host tier only
  BlockTable again;
  EXPECT_TRUE(kv.may_hit_blocks(again, a, 4));
  BlockTable other;
  EXPECT_FALSE(kv.may_hit_blocks(other, tokens_from(900, 17), 1));
  EXPECT_EQ(kv.find_cached_prefix(again, a).num_tokens, 16);  // the lookups changed nothing
}

}  // namespace
}  // namespace paceline
