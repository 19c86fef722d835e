// Cache-aware admission (--schedule-policy lpm): when the queue's head does not fit the KV
// cache, a waiting request whose prefix is resident goes first, unless someone has waited beyond
// the bound.
#include <gtest/gtest.h>

#include "fake_executor.h"
#include "sched/scheduler.h"

namespace paceline {
namespace {

using testing::concat;
using testing::FakeExecutor;
using testing::ids_of;
using testing::max_tokens;
using testing::prompt_of;
using testing::run_step;
using testing::small_config;

// 64 blocks of 4. Request 1 leaves 60 tokens of prompt A cached; request 9 runs a 100-token
// prompt and keeps decoding (25 blocks). Then 2 (170 new tokens: 43 blocks, more than the 39
// free) and 3 (A and 9 more tokens: 15 of its 18 blocks are cached) arrive, in that order.
struct LpmScene {
  explicit LpmScene(AdmissionPolicy policy, double max_wait_ms = 30000) : s(config(policy, max_wait_ms), clock) {
    s.add_request(1, concat(prompt_a, prompt_of(1, 7000)), max_tokens(1));
    run_step(s, exec);
    s.add_request(9, prompt_of(100, 5000), max_tokens(50));
    run_step(s, exec);
    run_step(s, exec);
    s.add_request(2, prompt_of(170, 9000), max_tokens(1));
    s.add_request(3, concat(prompt_a, prompt_of(9, 8000)), max_tokens(1));
  }
  static SchedulerConfig config(AdmissionPolicy policy, double max_wait_ms) {
    SchedulerConfig c = small_config();
    c.admission = policy;
    c.lpm_max_wait_ms = max_wait_ms;
    return c;
  }
  const std::vector<int32_t> prompt_a = prompt_of(60, 1000);
  VirtualClock clock;
  Scheduler s;
  FakeExecutor exec;
};

TEST(LpmAdmission, FcfsLetsTheHeadThatDoesNotFitHoldEveryoneBack) {
  LpmScene scene(AdmissionPolicy::kFcfs);
  auto step = run_step(scene.s, scene.exec);
  EXPECT_EQ(ids_of(step.plan), (std::vector<uint64_t>{9}));
  EXPECT_EQ(scene.s.num_waiting(), 2);
}

TEST(LpmAdmission, ARequestWithAResidentPrefixGoesAheadOfOneThatDoesNotFit) {
  LpmScene scene(AdmissionPolicy::kLpm);
  auto step = run_step(scene.s, scene.exec);
  ASSERT_EQ(ids_of(step.plan), (std::vector<uint64_t>{3}));
  EXPECT_EQ(step.plan.seqs[0].start_pos, 60);  // its cached prefix was used
  EXPECT_EQ(scene.s.num_waiting(), 1);
  EXPECT_EQ(scene.s.find(2)->status, RequestStatus::kWaiting);
}

TEST(LpmAdmission, NobodyOvertakesARequestWaitingBeyondTheBound) {
  LpmScene scene(AdmissionPolicy::kLpm, /*max_wait_ms=*/1000);
  scene.clock.advance_ns(2'000'000'000);
  auto step = run_step(scene.s, scene.exec);
  EXPECT_EQ(ids_of(step.plan), (std::vector<uint64_t>{9}));
  EXPECT_EQ(scene.s.num_waiting(), 2);
}

}  // namespace
}  // namespace paceline
