// Which cached block gives way: the LRU baseline, the reuse policy (predicted next use, dead
// blocks first) and the oracle (Belady's rule on a next-use table).
#include "kv/eviction_policy.h"

#include <numeric>
#include <unordered_map>

#include <gtest/gtest.h>

#include "base/clock.h"
#include "base/error.h"
#include "kv/kv_manager.h"

namespace paceline {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

std::vector<int32_t> tokens_from(int32_t first, int n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

// A "session" of `blocks` full blocks of 4 tokens plus one token (its last block is never a hit).
struct Session {
  std::vector<int32_t> tokens;
  BlockTable table;
};

Session session(int32_t first, int blocks) { return {tokens_from(first, blocks * 4 + 1), {}}; }

int64_t run_turn(KvManager& kv, Session& s) {
  PrefixHit hit = kv.find_cached_prefix(s.table, s.tokens);
  EXPECT_TRUE(kv.allocate_for(s.table, static_cast<int64_t>(s.tokens.size()), hit));
  kv.cache_computed_blocks(s.table, s.tokens, static_cast<int64_t>(s.tokens.size()));
  kv.free(s.table);
  return hit.num_tokens;
}

int64_t probe(KvManager& kv, const Session& s) {
  BlockTable t;
  return kv.find_cached_prefix(t, s.tokens).num_tokens;
}

TEST(KvPolicyNames, RoundTrip) {
  for (KvPolicy p : {KvPolicy::kLru, KvPolicy::kReuse, KvPolicy::kOracle}) {
    EXPECT_EQ(kv_policy_from_name(kv_policy_name(p)), p);
  }
  EXPECT_FALSE(kv_policy_from_name("mru").has_value());
}

TEST(ReuseGapEstimate, DeadIsBeyondNearlyEveryRecentGapAndNeverBeforeTheFirst) {
  ReuseGapEstimate g;
  EXPECT_FALSE(g.median_ns().has_value());
  EXPECT_EQ(g.dead_after_ns(), INT64_MAX);
  for (int64_t s : {5, 1, 3}) g.observe(s * kSecond, 100);
  EXPECT_EQ(g.median_ns(), 3 * kSecond);
  EXPECT_EQ(g.dead_after_ns(), 5 * kSecond);  // the 90th percentile of three is the largest
  for (int i = 0; i < ReuseGapEstimate::kWindow; ++i) {
    g.observe(i < 58 ? kSecond : 60 * kSecond, 100);
  }
  EXPECT_EQ(g.median_ns(), kSecond);      // old gaps leave the window
  EXPECT_EQ(g.dead_after_ns(), kSecond);  // 6 long pauses in 64 are the tail, not the rule
  g.observe(60 * kSecond, 100);
  EXPECT_EQ(g.dead_after_ns(), 60 * kSecond);  // 7 in 64: more than 1 in 10 pauses this long
}

TEST(ReuseGapEstimate, AFindOfASingleBlockIsNoGap) {
  ReuseGapEstimate g;
  g.observe(kSecond / 1000, 1);
  EXPECT_FALSE(g.median_ns().has_value());
  g.observe(kSecond, ReuseGapEstimate::kMinBlocks);
  for (int i = 0; i < ReuseGapEstimate::kWindow; ++i) g.observe(kSecond / 1000, 1);
  EXPECT_EQ(g.dead_after_ns(), kSecond);
}

// Sessions A, B, C of 4 blocks each in a pool of 12 blocks (plus 1 for the last token of a
// turn). A was used first, then B, then C; now D needs 4 fresh blocks. LRU gives up A, which in a
// cycle of sessions is the one that comes back next; reuse gives up C, freed most recently.
class CycleOfSessions : public ::testing::TestWithParam<KvPolicy> {};

TEST_P(CycleOfSessions, TheNewcomerEvictsWhatThePolicyChooses) {
  VirtualClock clock;
  KvManager kv({.num_blocks = 13, .block_size = 4, .policy = GetParam()}, &clock);
  Session a = session(100, 4), b = session(200, 4), c = session(300, 4), d = session(400, 4);
  // A first visit of A and a return after 1 s: the reuse policy learns a gap.
  run_turn(kv, a);
  clock.advance_ns(kSecond);
  ASSERT_EQ(run_turn(kv, a), 16);
  clock.advance_ns(kSecond / 4);
  run_turn(kv, b);
  clock.advance_ns(kSecond / 4);
  run_turn(kv, c);
  clock.advance_ns(kSecond / 4);  // A idle 0.75 s: not taken for dead (its only gap was 1 s)
  run_turn(kv, d);
  if (GetParam() == KvPolicy::kLru) {
    EXPECT_EQ(probe(kv, a), 0);
    EXPECT_EQ(probe(kv, c), 16);
  } else {
    EXPECT_EQ(probe(kv, a), 16);
    EXPECT_EQ(probe(kv, b), 16);
    EXPECT_EQ(probe(kv, c), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(LruAndReuse, CycleOfSessions,
                         ::testing::Values(KvPolicy::kLru, KvPolicy::kReuse),
                         [](const auto& info) { return std::string(kv_policy_name(info.param)); });

TEST(ReusePolicy, ABlockIdleFarLongerThanTheGapIsTakenForDead) {
  VirtualClock clock;
  KvManager kv({.num_blocks = 13, .block_size = 4, .policy = KvPolicy::kReuse}, &clock);
  Session a = session(100, 4), b = session(200, 4), c = session(300, 4), d = session(400, 4);
  run_turn(kv, a);  // A is never seen again
  run_turn(kv, b);
  clock.advance_ns(kSecond);
  ASSERT_EQ(run_turn(kv, b), 16);  // gaps of 1 s
  clock.advance_ns(kSecond);
  run_turn(kv, c);
  clock.advance_ns(kSecond);
  ASSERT_EQ(run_turn(kv, c), 16);
  // A has been idle 3 s > 2 x 1 s: it goes first although C was freed most recently.
  run_turn(kv, d);
  EXPECT_EQ(probe(kv, a), 0);
  EXPECT_EQ(probe(kv, b), 16);
  EXPECT_EQ(probe(kv, c), 16);
}

TEST(ReusePolicy, ASessionGivesWayTailFirst) {
  VirtualClock clock;
  KvManager kv({.num_blocks = 10, .block_size = 4, .policy = KvPolicy::kReuse}, &clock);
  Session a = session(100, 8), b = session(200, 2);
  run_turn(kv, a);  // 8 cached blocks + 2 unhashed, all free
  run_turn(kv, b);  // takes the 2 unhashed blocks, then one of A's: A's deepest
  EXPECT_EQ(probe(kv, a), 7 * 4);
}

// The serving engine's steady clock moves while a sequence is freed block by block; the
// simulator's virtual clock does not. A sequence is one release, so its blocks share one key and
// still give way tail first: were each block keyed by the clock at its own release (the tail
// released first, the head last), the head would go first and take every later block's hit with
// it, on the GPU and in the host tier alike.
class TickingClock final : public Clock {
 public:
  int64_t now_ns() const override { return ++now_; }

 private:
  mutable int64_t now_ = 0;
};

TEST(ReusePolicy, ASessionGivesWayTailFirstWhileTheClockMovesDuringItsRelease) {
  TickingClock clock;
  KvManager kv({.num_blocks = 10, .block_size = 4, .policy = KvPolicy::kReuse}, &clock);
  Session a = session(100, 8), b = session(200, 2);
  run_turn(kv, a);
  run_turn(kv, b);  // takes the 2 unhashed blocks, then one of A's: A's deepest
  EXPECT_EQ(probe(kv, a), 7 * 4);
}

TEST(ReusePolicy, AHostTierKeepsASessionsHeadWhileTheClockMovesDuringItsRelease) {
  TickingClock clock;
  KvManager kv({.num_blocks = 10, .block_size = 4, .policy = KvPolicy::kReuse, .num_host_blocks = 4},
               &clock);
  Session a = session(100, 8), b = session(200, 6);
  run_turn(kv, a);
  // B takes the 2 unhashed blocks and 5 of A's, deepest first (7 down to 3), each stored to the
  // host tier as it goes; the tier holds 4 and gives up its deepest, block 7. The GPU keeps A's
  // blocks 0-2 and the host 3-6: a prefix of 7 blocks.
  run_turn(kv, b);
  EXPECT_EQ(probe(kv, a), 7 * 4);
}

// Requests that share only a first block with an idle copy (a chat template's first block, a
// benchmark's warmups) are no session's return: were each find a reuse gap, ten of them a
// millisecond apart would make everything idle longer than that dead. Here A came back after
// 1 s, then ten requests found only S's first block, 1 ms after the one before; A, idle 0.51 s,
// is not dead, so the newcomer D takes what was freed last: S's block, then C's tail.
TEST(ReusePolicy, FindsOfOnlyAFirstBlockAreNoReturnsAndLeaveTheIdleRuleAlone) {
  VirtualClock clock;
  KvManager kv({.num_blocks = 14, .block_size = 4, .policy = KvPolicy::kReuse}, &clock);
  Session a = session(100, 4), b = session(200, 4), c = session(300, 4), s = session(600, 1),
          d = session(400, 4);
  run_turn(kv, a);
  clock.advance_ns(kSecond);
  ASSERT_EQ(run_turn(kv, a), 16);  // a gap of 1 s
  clock.advance_ns(kSecond / 4);
  run_turn(kv, b);
  clock.advance_ns(kSecond / 4);
  run_turn(kv, c);
  run_turn(kv, s);
  for (int32_t i = 0; i < 10; ++i) {
    clock.advance_ns(kSecond / 1000);
    Session w{s.tokens, {}};
    w.tokens.back() = 9000 + i;  // S's first block and a token of its own
    ASSERT_EQ(run_turn(kv, w), 4);
  }
  run_turn(kv, d);
  EXPECT_EQ(probe(kv, a), 16);
  EXPECT_EQ(probe(kv, b), 16);
  EXPECT_EQ(probe(kv, c), 4);
}

// Sessions E, A, B, C freed in that order, then C's next turn arrives and waits. A newcomer D
// needs 4 blocks: C was freed most recently, but a waiting request needs it now, so B gives way.
TEST(ReusePolicy, APrefixThatAWaitingRequestNeedsGivesWayLast) {
  VirtualClock clock;
  KvManager kv({.num_blocks = 17, .block_size = 4, .policy = KvPolicy::kReuse}, &clock);
  Session e = session(500, 4), a = session(100, 4), b = session(200, 4), c = session(300, 4),
          d = session(400, 4);
  run_turn(kv, e);
  clock.advance_ns(10 * kSecond);
  ASSERT_EQ(run_turn(kv, e), 16);  // a gap of 10 s: nobody below is idle long enough to be dead
  for (Session* s : {&a, &b, &c}) {
    clock.advance_ns(kSecond);
    run_turn(kv, *s);
  }
  clock.advance_ns(kSecond / 2);
  BlockTable c_next;
  kv.want_prefix(c_next, c.tokens, clock.now_ns());
  clock.advance_ns(kSecond / 2);
  run_turn(kv, d);
  EXPECT_EQ(probe(kv, c), 16);
  EXPECT_EQ(probe(kv, b), 0);
  EXPECT_EQ(probe(kv, a), 16);
  EXPECT_EQ(probe(kv, e), 16);
}

// A reuse gap runs from a prefix's release to the arrival of the request that finds it, not to
// its admission: time in the queue says nothing about how long sessions pause. A's next turn
// came 0.9 s after A was freed and waited 9 s for admission; B, idle 12 s, is dead by then.
TEST(ReusePolicy, AGapEndsWhenTheRequestArrivesNotWhenItIsAdmitted) {
  VirtualClock clock;
  KvManager kv({.num_blocks = 13, .block_size = 4, .policy = KvPolicy::kReuse}, &clock);
  Session a = session(100, 4), b = session(200, 4), c = session(300, 4), d = session(400, 4);
  run_turn(kv, b);
  clock.advance_ns(kSecond / 10);
  run_turn(kv, a);
  clock.advance_ns(9 * kSecond / 10);
  BlockTable waiting;
  kv.want_prefix(waiting, a.tokens, clock.now_ns());  // arrives: a gap of 0.9 s
  clock.advance_ns(9 * kSecond);
  ASSERT_EQ(run_turn(kv, a), 16);  // admitted 9.9 s after A was freed
  clock.advance_ns(kSecond / 10);
  run_turn(kv, c);
  clock.advance_ns(2 * kSecond);
  run_turn(kv, d);  // B, idle 12 s > 0.9 s, goes; C, freed last, stays
  EXPECT_EQ(probe(kv, b), 0);
  EXPECT_EQ(probe(kv, a), 16);
  EXPECT_EQ(probe(kv, c), 16);
}

// A waiting request's prefix that goes on in the host tier is wanted there too, and a wanted
// GPU block that gives way keeps being wanted in the host.
TEST(ReusePolicy, AWaitingRequestsPrefixIsWantedInBothTiers) {
  VirtualClock clock;
  KvManager kv({.num_blocks = 5, .block_size = 4, .policy = KvPolicy::kReuse, .num_host_blocks = 8},
               &clock);
  Session a = session(100, 4), b = session(200, 4), c = session(300, 4);
  run_turn(kv, a);
  clock.advance_ns(kSecond);
  run_turn(kv, b);  // A to the host
  BlockTable a_next, b_next;
  kv.want_prefix(a_next, a.tokens, clock.now_ns());
  kv.want_prefix(b_next, b.tokens, clock.now_ns());
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(kv.host_pool()->is_wanted(*kv.host_pool()->find_cached(a_next.hashes[i])));
    EXPECT_TRUE(kv.pool().is_wanted(*kv.pool().find_cached(b_next.hashes[i])));
  }
  clock.advance_ns(kSecond);
  run_turn(kv, c);  // B to the host: still wanted there
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(kv.host_pool()->is_wanted(*kv.host_pool()->find_cached(b_next.hashes[i])));
  }
}

// A waiting request that is cancelled no longer holds its prefix: the blocks are idle again
// since their release, and may be taken for dead.
TEST(ReusePolicy, ACancelledRequestsPrefixIsIdleAgain) {
  VirtualClock clock;
  KvManager kv({.num_blocks = 5, .block_size = 4, .policy = KvPolicy::kReuse}, &clock);
  Session a = session(100, 4);
  run_turn(kv, a);
  clock.advance_ns(kSecond);
  BlockTable waiting;
  kv.want_prefix(waiting, a.tokens, clock.now_ns());
  const int32_t first = *kv.pool().find_cached(waiting.hashes[0]);
  ASSERT_TRUE(kv.pool().is_wanted(first));
  ASSERT_FALSE(kv.pool().longest_idle_free().has_value());
  kv.unwant_prefix(waiting);
  EXPECT_FALSE(kv.pool().is_wanted(first));
  EXPECT_EQ(kv.pool().released_ns(first), 0);
  EXPECT_EQ(kv.pool().evict_key(first), 0);  // the release time, as any idle block's
  EXPECT_TRUE(kv.pool().longest_idle_free().has_value());
}

class TableOracle final : public NextUseOracle {
 public:
  int64_t next_use_ns(uint64_t hash) const override {
    auto it = next.find(hash);
    return it == next.end() ? kNever : it->second;
  }
  void set_listener(std::function<void(uint64_t)> cb) override { listener = std::move(cb); }
  void set(uint64_t hash, int64_t t) {
    next[hash] = t;
    if (listener) listener(hash);
  }
  std::unordered_map<uint64_t, int64_t> next;
  std::function<void(uint64_t)> listener;
};

TEST(OraclePolicy, EvictsTheBlockNeededFurthestAheadAndFollowsNewAnnouncements) {
  VirtualClock clock;
  TableOracle oracle;
  KvManager kv({.num_blocks = 9, .block_size = 4, .policy = KvPolicy::kOracle}, &clock);
  kv.set_oracle(&oracle);
  Session a = session(100, 4), b = session(200, 4), c = session(300, 4);
  run_turn(kv, a);
  run_turn(kv, b);
  for (uint64_t h : a.table.hashes) oracle.set(h, 10 * kSecond);
  for (uint64_t h : b.table.hashes) oracle.set(h, 5 * kSecond);
  run_turn(kv, c);  // A is needed later than B: A goes
  EXPECT_EQ(probe(kv, a), 0);
  EXPECT_EQ(probe(kv, b), 16);
  // Now C is announced soon and B never: the next newcomer takes B's blocks.
  for (uint64_t h : c.table.hashes) oracle.set(h, 1 * kSecond);
  for (uint64_t h : b.table.hashes) oracle.set(h, NextUseOracle::kNever);
  Session d = session(400, 4);
  run_turn(kv, d);
  EXPECT_EQ(probe(kv, b), 0);
  EXPECT_EQ(probe(kv, c), 16);
}

TEST(OraclePolicy, RefusesToRunWithoutAnOracle) {
  KvManager kv({.num_blocks = 5, .block_size = 4, .policy = KvPolicy::kOracle});
  Session a = session(100, 4), b = session(200, 4);
  run_turn(kv, a);
  PrefixHit none;
  EXPECT_THROW((void)kv.allocate_for(b.table, 17, none), Error);
}

}  // namespace
}  // namespace paceline
