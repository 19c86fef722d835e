// The simulator's next-use oracle: announced turns make their prompt's blocks needed at the
// announced time; the earliest announcement wins; an answered request's use goes away.
#include "sim/trace_oracle.h"

#include <gtest/gtest.h>

#include "bench/token_prompt.h"
#include "kv/prefix_cache.h"

namespace paceline::sim {
namespace {

bench::RequestSpec turn(int lane, int turn_index, std::vector<int64_t> hash_ids) {
  bench::RequestSpec s;
  s.lane = lane;
  s.session = "trace_0001";
  s.hash_scope = "trace_0001";
  s.turn = turn_index;
  s.block_size = 64;
  s.hash_ids = std::move(hash_ids);
  s.isl = static_cast<int64_t>(s.hash_ids.size()) * 64;
  s.marker = "[rid:000000000001]\n\n";
  return s;
}

std::vector<uint64_t> kv_hashes(const bench::RequestSpec& spec, int64_t block_size) {
  std::vector<uint64_t> h;
  extend_block_hashes(h, bench::synthesize_prompt_tokens(spec, {}), block_size,
                      (spec.isl - 1) / block_size);
  return h;
}

TEST(TraceNextUseOracle, AnAnnouncedPromptsBlocksAreNeededAtItsTime) {
  TraceNextUseOracle oracle(16, {});
  int changes = 0;
  oracle.set_listener([&](uint64_t) { ++changes; });
  const auto t1 = turn(0, 1, {1, 2});
  oracle.announce(t1, 5'000);
  const auto hashes = kv_hashes(t1, 16);
  ASSERT_EQ(hashes.size(), 7u);  // 128 tokens: 8 blocks of 16, the last never a hit
  for (uint64_t h : hashes) EXPECT_EQ(oracle.next_use_ns(h), 5'000);
  EXPECT_EQ(changes, 7);
  EXPECT_EQ(oracle.next_use_ns(12345), NextUseOracle::kNever);
}

TEST(TraceNextUseOracle, TheEarliestAnnouncementWinsAndAWithdrawnOneIsForgotten) {
  TraceNextUseOracle oracle(16, {});
  const auto t1 = turn(0, 1, {1, 2});
  const auto t2 = turn(0, 2, {1, 2, 3});  // shares t1's prompt
  oracle.announce(t2, bench::Transport::kUnscheduled);
  oracle.announce(t1, 5'000);
  const uint64_t shared = kv_hashes(t1, 16).front();
  const uint64_t only_t2 = kv_hashes(t2, 16).back();
  EXPECT_EQ(oracle.next_use_ns(shared), 5'000);
  EXPECT_EQ(oracle.next_use_ns(only_t2), bench::Transport::kUnscheduled);
  oracle.announce(t2, 9'000);  // armed: now its time is known
  oracle.withdraw(t1);         // answered
  EXPECT_EQ(oracle.next_use_ns(shared), 9'000);
  oracle.withdraw(t2);
  EXPECT_EQ(oracle.next_use_ns(shared), NextUseOracle::kNever);
  EXPECT_EQ(oracle.num_announced(), 0);
}

TEST(TraceNextUseOracle, PlaysOfOneSessionDoNotShareBlocks) {
  TraceNextUseOracle oracle(16, {});
  auto other_play = turn(1, 1, {1, 2});
  other_play.marker = "[rid:000000000002]\n\n";
  oracle.announce(turn(0, 1, {1, 2}), 5'000);
  for (uint64_t h : kv_hashes(other_play, 16)) {
    EXPECT_EQ(oracle.next_use_ns(h), NextUseOracle::kNever);
  }
}

}  // namespace
}  // namespace paceline::sim
