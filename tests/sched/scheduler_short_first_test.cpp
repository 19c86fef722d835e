// Short prefills first (--schedule-policy short-first): a waiting request with at most a quarter
// of the forward's token budget left to prefill, because its prefix is cached, is admitted ahead
// of the queue and of a prefill in flight, in a forward of its own; after 16 such forwards in a
// row the next goes in order, so that nothing starves.
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

// 64 blocks of 4, a budget of 64 tokens a forward (16 is short). Request 1 leaves the 60 tokens of
// prompt A cached. Then 2 (150 new tokens: a recompute) and 3 (A and 9 more tokens: 9 to
// prefill) arrive, in that order.
struct Scene {
  explicit Scene(const char* policy) : s(config(policy), clock) {
    s.add_request(1, concat(prompt_a, prompt_of(1, 7000)), max_tokens(1));
    run_step(s, exec);
    s.add_request(2, prompt_of(150, 9000), max_tokens(1));
  }
  static SchedulerConfig config(const char* policy) {
    SchedulerConfig c = small_config();
    c.admission = parse_admission_policy(policy);
    return c;
  }
  void add_short() { s.add_request(3, concat(prompt_a, prompt_of(9, 8000)), max_tokens(1)); }
  const std::vector<int32_t> prompt_a = prompt_of(60, 1000);
  VirtualClock clock;
  Scheduler s;
  FakeExecutor exec;
};

TEST(ShortFirstAdmission, FcfsMakesACachedTurnWaitForTheRecomputeAheadOfIt) {
  Scene scene("fcfs");
  scene.add_short();
  EXPECT_EQ(ids_of(run_step(scene.s, scene.exec).plan), (std::vector<uint64_t>{2}));
  EXPECT_EQ(scene.s.find(3)->status, RequestStatus::kWaiting);
}

TEST(ShortFirstAdmission, ACachedTurnGoesAheadOfAQueuedRecomputeInAForwardOfItsOwn) {
  Scene scene("short-first");
  scene.add_short();
  auto step = run_step(scene.s, scene.exec);
  ASSERT_EQ(ids_of(step.plan), (std::vector<uint64_t>{3}));
  EXPECT_EQ(step.plan.seqs[0].start_pos, 60);  // its cached prefix was used
  EXPECT_EQ(scene.s.find(2)->status, RequestStatus::kWaiting);
  // The recompute goes next, from its first token.
  step = run_step(scene.s, scene.exec);
  ASSERT_EQ(ids_of(step.plan), (std::vector<uint64_t>{2}));
  EXPECT_EQ(step.plan.seqs[0].start_pos, 0);
}

TEST(ShortFirstAdmission, ACachedTurnGoesAheadOfARecomputeAlreadyPrefilling) {
  Scene scene("short-first");
  auto step = run_step(scene.s, scene.exec);  // 2's first chunk of 64
  ASSERT_EQ(ids_of(step.plan), (std::vector<uint64_t>{2}));
  scene.add_short();
  step = run_step(scene.s, scene.exec);
  ASSERT_EQ(ids_of(step.plan), (std::vector<uint64_t>{3}));
  step = run_step(scene.s, scene.exec);  // then 2 goes on where it was
  ASSERT_EQ(ids_of(step.plan), (std::vector<uint64_t>{2}));
  EXPECT_EQ(step.plan.seqs[0].start_pos, 64);
}

TEST(ShortFirstAdmission, ALongPrefillIsNotShortAndKeepsItsPlaceInTheQueue) {
  Scene scene("short-first");
  scene.s.add_request(4, prompt_of(17, 6000), max_tokens(1));  // 17 > 16: not short
  auto step = run_step(scene.s, scene.exec);
  EXPECT_EQ(ids_of(step.plan), (std::vector<uint64_t>{2}));
  EXPECT_EQ(scene.s.find(4)->status, RequestStatus::kWaiting);
}

TEST(ShortFirstAdmission, ALongPrefillGetsAForwardAfterSixteenShortOnesInARow) {
  Scene scene("short-first");
  for (int i = 0; i < 16; ++i) {
    const auto id = static_cast<uint64_t>(100 + i);
    scene.s.add_request(id, concat(scene.prompt_a, prompt_of(9, 20000 + 100 * i)), max_tokens(1));
    ASSERT_EQ(ids_of(run_step(scene.s, scene.exec).plan), (std::vector<uint64_t>{id})) << i;
  }
  scene.add_short();
  EXPECT_EQ(ids_of(run_step(scene.s, scene.exec).plan), (std::vector<uint64_t>{2}));
  EXPECT_EQ(ids_of(run_step(scene.s, scene.exec).plan), (std::vector<uint64_t>{3}));
}

TEST(ShortFirstAdmission, IsNamedShortFirst) {
  EXPECT_EQ(admission_policy_name(parse_admission_policy("short-first")), "short-first");
}

}  // namespace
}  // namespace paceline
