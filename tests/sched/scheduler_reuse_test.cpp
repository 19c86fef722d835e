// The reuse eviction policy through the scheduler: a request that has arrived and waits keeps
// its resident prefix while admissions ahead of it need blocks.
#include <gtest/gtest.h>

#include "fake_executor.h"
#include "sched/scheduler.h"

namespace paceline {
namespace {

using testing::concat;
using testing::FakeExecutor;
using testing::max_tokens;
using testing::prompt_of;
using testing::run_step;
using testing::small_config;

constexpr int64_t kSecond = 1'000'000'000;

// 64 blocks of 4. Sessions A and B each leave 15 cached blocks, B freed last. Then request 2
// (170 new tokens: 43 blocks, 9 more than the 34 unhashed ones) arrives, and B's next turn (3)
// behind it. Most recently freed first would give B's blocks to request 2; B's turn is waiting,
// so A's go instead, and 3 finds all 60 tokens of B.
TEST(ReuseEviction, AWaitingRequestKeepsItsPrefixWhileTheOneAheadOfItIsAdmitted) {
  SchedulerConfig config = small_config();
  config.kv_policy = KvPolicy::kReuse;
  VirtualClock clock;
  Scheduler s(config, clock);
  FakeExecutor exec;
  const std::vector<int32_t> prompt_a = prompt_of(60, 1000), prompt_b = prompt_of(60, 3000);
  s.add_request(1, concat(prompt_a, prompt_of(1, 7000)), max_tokens(1));
  run_step(s, exec);
  clock.advance_ns(kSecond);
  s.add_request(5, concat(prompt_b, prompt_of(1, 7001)), max_tokens(1));
  run_step(s, exec);
  clock.advance_ns(kSecond);
  s.add_request(2, prompt_of(170, 9000), max_tokens(1));
  s.add_request(3, concat(prompt_b, prompt_of(9, 8000)), max_tokens(1));
  for (int i = 0; i < 8; ++i) {
    const auto step = run_step(s, exec);
    for (const ScheduledSeq& seq : step.plan.seqs) {
      if (seq.request_id == 3) {
        EXPECT_EQ(seq.start_pos, 60);  // its first row starts after the cached prefix
        return;
      }
    }
  }
  ADD_FAILURE() << "request 3 was never scheduled";
}

}  // namespace
}  // namespace paceline
