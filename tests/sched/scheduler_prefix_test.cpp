// Prefix caching seen from the scheduler: a request whose prompt starts like an earlier one
// computes only its new blocks, and its usage says how many prompt tokens were cached.
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

TEST(PrefixReuse, ASecondRequestWithTheSamePrefixComputesOnlyTheNewBlocks) {
  VirtualClock clock;
  Scheduler s(small_config(), clock);  // blocks of 4
  FakeExecutor exec;
  const auto system = prompt_of(32, 1000);
  s.add_request(1, concat(system, prompt_of(5, 2000)), max_tokens(1));
  run_step(s, exec);
  s.add_request(2, concat(system, prompt_of(7, 3000)), max_tokens(1));
  auto step = run_step(s, exec);
  ASSERT_EQ(step.plan.seqs.size(), 1u);
  EXPECT_EQ(step.plan.seqs[0].start_pos, 32);
  EXPECT_EQ(step.plan.seqs[0].tokens, prompt_of(7, 3000));
  EXPECT_EQ(step.plan.seqs[0].block_table.size(), 10u);  // 39 positions
  ASSERT_EQ(step.outputs.size(), 1u);
  EXPECT_EQ(step.outputs[0].usage.cached_tokens, 32);
  SchedulerStats st = s.stats();
  EXPECT_EQ(st.prefix_cache_queries, 37 + 39);
  EXPECT_EQ(st.prefix_cache_hits, 32);
  EXPECT_EQ(st.prefill_tokens, 37 + 7);
}

TEST(PrefixReuse, AnIdenticalPromptRecomputesItsLastBlock) {
  VirtualClock clock;
  Scheduler s(small_config(), clock);
  FakeExecutor exec;
  s.add_request(1, prompt_of(16), max_tokens(1));
  run_step(s, exec);
  s.add_request(2, prompt_of(16), max_tokens(1));
  auto step = run_step(s, exec);
  EXPECT_EQ(step.plan.seqs[0].start_pos, 12);
  EXPECT_EQ(step.plan.seqs[0].tokens.size(), 4u);
  EXPECT_EQ(step.outputs[0].usage.cached_tokens, 12);
}

TEST(PrefixReuse, TheNextTurnOfAConversationHitsThePreviousOutputToo) {
  VirtualClock clock;
  Scheduler s(small_config(), clock);
  FakeExecutor exec(5);
  const auto turn1 = prompt_of(10);
  s.add_request(1, turn1, max_tokens(7));
  for (int i = 0; i < 7; ++i) run_step(s, exec);
  ASSERT_FALSE(s.has_unfinished());
  // 10 prompt + 7 output tokens: positions 0..15 were computed (the last output never is).
  auto turn2 = concat(concat(turn1, std::vector<int32_t>(7, 5)), prompt_of(6, 9000));
  s.add_request(2, turn2, max_tokens(1));
  auto step = run_step(s, exec);
  EXPECT_EQ(step.plan.seqs[0].start_pos, 16);
}

TEST(PrefixReuse, OffMeansEveryPromptIsComputedInFull) {
  SchedulerConfig c = small_config();
  c.enable_prefix_caching = false;
  VirtualClock clock;
  Scheduler s(c, clock);
  FakeExecutor exec;
  s.add_request(1, prompt_of(16), max_tokens(1));
  run_step(s, exec);
  s.add_request(2, prompt_of(16), max_tokens(1));
  auto step = run_step(s, exec);
  EXPECT_EQ(step.plan.seqs[0].start_pos, 0);
  EXPECT_EQ(s.stats().prefix_cache_hits, 0);
}

TEST(PrefixReuse, RequestsInTheSamePassDoNotHitEachOther) {
  // Blocks are cached only once computed: two identical prompts admitted together both compute.
  VirtualClock clock;
  Scheduler s(small_config(), clock);
  s.add_request(1, prompt_of(16), max_tokens(1));
  s.add_request(2, prompt_of(16), max_tokens(1));
  StepPlan plan = s.schedule();
  ASSERT_EQ(plan.seqs.size(), 2u);
  EXPECT_EQ(plan.seqs[1].start_pos, 0);
}

}  // namespace
}  // namespace paceline
