// Cancellation at any point: the request is gone, its KV blocks are free, nothing else changes.
#include <gtest/gtest.h>

#include "fake_executor.h"
#include "sched/scheduler.h"

namespace paceline {
namespace {

using testing::FakeExecutor;
using testing::ids_of;
using testing::max_tokens;
using testing::prompt_of;
using testing::run_step;
using testing::small_config;

void expect_all_blocks_free(const Scheduler& s) {
  EXPECT_EQ(s.kv().num_free_blocks(), s.kv().num_blocks());
  for (int32_t b = 0; b < s.kv().num_blocks(); ++b) EXPECT_EQ(s.kv().pool().ref_count(b), 0);
}

TEST(Cancel, AWaitingRequestLeavesTheQueue) {
  VirtualClock clock;
  Scheduler s(small_config(), clock);
  s.add_request(1, prompt_of(8), max_tokens(4));
  auto out = s.cancel(1);
  ASSERT_TRUE(out.has_value());
  EXPECT_TRUE(out->finished);
  EXPECT_EQ(out->finish_reason, FinishReason::kAbort);
  EXPECT_EQ(out->first_scheduled_ns, -1);
  EXPECT_EQ(s.num_waiting(), 0);
  EXPECT_FALSE(s.has_unfinished());
  EXPECT_TRUE(s.schedule().seqs.empty());
}

TEST(Cancel, ADecodingRequestFreesItsBlocks) {
  VirtualClock clock;
  Scheduler s(small_config(), clock);
  FakeExecutor exec;
  s.add_request(1, prompt_of(10), max_tokens(8));
  run_step(s, exec);
  run_step(s, exec);
  auto out = s.cancel(1);
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->usage.completion_tokens, 2);
  EXPECT_EQ(s.num_running(), 0);
  expect_all_blocks_free(s);
  EXPECT_EQ(s.stats().finished_abort, 1);
}

TEST(Cancel, APartialPrefillFreesItsBlocksAndLetsOthersIn) {
  SchedulerConfig c = small_config();
  c.long_prefill_token_threshold = 8;
  VirtualClock clock;
  Scheduler s(c, clock);
  FakeExecutor exec;
  s.add_request(1, prompt_of(40, 1000), max_tokens(2));
  run_step(s, exec);
  ASSERT_TRUE(s.find(1)->in_prefill());
  s.add_request(2, prompt_of(4, 2000), max_tokens(2));
  s.cancel(1);
  expect_all_blocks_free(s);
  auto step = run_step(s, exec);
  EXPECT_EQ(ids_of(step.plan), std::vector<uint64_t>{2});
}

TEST(Cancel, APreemptedRequestLeavesTheQueue) {
  SchedulerConfig c = small_config();
  c.num_kv_blocks = 6;
  VirtualClock clock;
  Scheduler s(c, clock);
  FakeExecutor exec;
  for (uint64_t id = 1; id <= 3; ++id) s.add_request(id, prompt_of(8, 1000 * id), max_tokens(8));
  run_step(s, exec);
  run_step(s, exec);
  ASSERT_EQ(s.find(3)->status, RequestStatus::kPreempted);
  ASSERT_TRUE(s.cancel(3).has_value());
  EXPECT_EQ(s.num_waiting(), 0);
  s.cancel(1);
  s.cancel(2);
  expect_all_blocks_free(s);
}

TEST(Cancel, BetweenScheduleAndUpdateTheRowIsIgnored) {
  VirtualClock clock;
  Scheduler s(small_config(), clock);
  FakeExecutor exec;
  s.add_request(1, prompt_of(8, 1000), max_tokens(4));
  s.add_request(2, prompt_of(8, 2000), max_tokens(4));
  StepPlan plan = s.schedule();
  s.cancel(1);
  auto outputs = s.update(plan, exec.execute(plan));
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].request_id, 2u);
  s.cancel(2);
  expect_all_blocks_free(s);
}

TEST(Cancel, UnknownOrFinishedIdsAreNoOps) {
  VirtualClock clock;
  Scheduler s(small_config(), clock);
  FakeExecutor exec;
  EXPECT_FALSE(s.cancel(99).has_value());
  s.add_request(1, prompt_of(4), max_tokens(1));
  run_step(s, exec);
  EXPECT_FALSE(s.has_unfinished());
  EXPECT_FALSE(s.cancel(1).has_value());
}

}  // namespace
}  // namespace paceline
