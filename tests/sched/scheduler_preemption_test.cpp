// Preemption by recompute: when KV blocks run out, the newest running request gives its blocks
// back and returns to the front of the queue; its output so far is kept and recomputed.
#include <map>

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

// Three 8-token prompts fill a 6-block cache exactly (blocks of 4).
SchedulerConfig tight_config() {
  SchedulerConfig c = small_config();
  c.num_kv_blocks = 6;
  c.enable_prefix_caching = false;
  return c;
}

TEST(Preemption, TheNewestRunningRequestIsPreemptedFirst) {
  VirtualClock clock;
  Scheduler s(tight_config(), clock);
  FakeExecutor exec;
  for (uint64_t id = 1; id <= 3; ++id) s.add_request(id, prompt_of(8, 1000 * id), max_tokens(8));
  auto step = run_step(s, exec);
  ASSERT_EQ(ids_of(step.plan), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(s.kv().num_free_blocks(), 0);

  // Each now needs a third block: request 3 gives its two up, 1 and 2 decode.
  step = run_step(s, exec);
  EXPECT_EQ(ids_of(step.plan), (std::vector<uint64_t>{1, 2}));
  const Request* r3 = s.find(3);
  ASSERT_NE(r3, nullptr);
  EXPECT_EQ(r3->status, RequestStatus::kPreempted);
  EXPECT_EQ(r3->num_computed_tokens, 0);
  EXPECT_TRUE(r3->blocks.ids.empty());
  EXPECT_EQ(r3->num_output_tokens(), 1);  // kept, to be recomputed
  EXPECT_EQ(s.stats().preemptions, 1);
}

TEST(Preemption, ThePreemptedRequestGoesBackToTheFrontOfTheQueue) {
  VirtualClock clock;
  Scheduler s(tight_config(), clock);
  FakeExecutor exec;
  for (uint64_t id = 1; id <= 3; ++id) s.add_request(id, prompt_of(8, 1000 * id), max_tokens(8));
  run_step(s, exec);
  s.add_request(4, prompt_of(4, 4000), max_tokens(2));
  run_step(s, exec);  // preempts 3, which now waits ahead of 4
  ASSERT_EQ(s.find(3)->status, RequestStatus::kPreempted);
  // Run until 3 is admitted again: it must come before 4.
  for (int i = 0; i < 100 && s.find(3)->status != RequestStatus::kRunning; ++i) {
    ASSERT_EQ(s.find(4)->status, RequestStatus::kWaiting);
    run_step(s, exec);
  }
  EXPECT_EQ(s.find(3)->status, RequestStatus::kRunning);
}

TEST(Preemption, ARecomputeCoversThePromptAndTheOutputSoFar) {
  VirtualClock clock;
  Scheduler s(tight_config(), clock);
  FakeExecutor exec;
  for (uint64_t id = 1; id <= 3; ++id) s.add_request(id, prompt_of(8, 1000 * id), max_tokens(8));
  run_step(s, exec);
  run_step(s, exec);
  for (int i = 0; i < 100; ++i) {
    auto step = run_step(s, exec);
    if (step.plan.seqs.size() == 1 && step.plan.seqs[0].request_id == 3) {
      std::vector<int32_t> expected = prompt_of(8, 3000);
      expected.push_back(7);  // the token it had sampled before it was preempted
      EXPECT_EQ(step.plan.seqs[0].tokens, expected);
      EXPECT_EQ(step.plan.seqs[0].num_logits, 1);
      return;
    }
  }
  FAIL() << "request 3 was never recomputed";
}

TEST(Preemption, APreemptedRequestFinishesWithNoTokenLostOrDuplicated) {
  VirtualClock clock;
  Scheduler s(tight_config(), clock);
  FakeExecutor exec;
  exec.sample_distinct_tokens();
  for (uint64_t id = 1; id <= 3; ++id) s.add_request(id, prompt_of(8, 1000 * id), max_tokens(8));
  std::map<uint64_t, std::vector<int32_t>> streamed;
  std::map<uint64_t, int> finishes;
  for (int i = 0; i < 200 && s.has_unfinished(); ++i) {
    for (const auto& out : run_step(s, exec).outputs) {
      auto& tokens = streamed[out.request_id];
      tokens.insert(tokens.end(), out.new_token_ids.begin(), out.new_token_ids.end());
      if (out.finished) {
        ++finishes[out.request_id];
        EXPECT_EQ(out.usage.completion_tokens, static_cast<int64_t>(tokens.size()));
      }
    }
  }
  EXPECT_GE(s.stats().preemptions, 1);
  for (uint64_t id = 1; id <= 3; ++id) {
    EXPECT_EQ(finishes[id], 1) << id;
    EXPECT_EQ(streamed[id].size(), 8u) << id;
  }
  // Request 3's first token came from the first step, before it was preempted.
  EXPECT_EQ(streamed[3][0], 0);
  EXPECT_EQ(s.kv().num_free_blocks(), s.kv().num_blocks());
}

TEST(Preemption, AdmissionReservesTheWholePromptSoLaterChunksNeverPreempt) {
  SchedulerConfig c = small_config();
  c.schedule = ScheduleKind::kMixed;
  c.num_kv_blocks = 6;
  c.long_prefill_token_threshold = 8;
  c.enable_prefix_caching = false;
  VirtualClock clock;
  Scheduler s(c, clock);
  FakeExecutor exec;
  s.add_request(1, prompt_of(16, 1000), max_tokens(2));  // 4 blocks, computed 8 at a time
  s.add_request(2, prompt_of(4, 2000), max_tokens(4));   // 1 block
  auto step = run_step(s, exec);
  ASSERT_EQ(ids_of(step.plan), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(s.kv().num_free_blocks(), 1);
  // A third prompt needs two blocks for all of it: it waits although the budget has room.
  s.add_request(3, prompt_of(8, 3000), max_tokens(2));
  step = run_step(s, exec);  // 2's decode takes the last block; 1's chunk needs none
  EXPECT_EQ(ids_of(step.plan), (std::vector<uint64_t>{2, 1}));
  EXPECT_EQ(step.plan.kind, ForwardKind::kMixed);
  EXPECT_EQ(s.stats().preemptions, 0);
  EXPECT_EQ(s.find(3)->status, RequestStatus::kWaiting);
}

TEST(Preemption, ADecodeThatNeedsABlockPreemptsAPartialPrefillIfItIsNewest) {
  SchedulerConfig c = small_config();
  c.schedule = ScheduleKind::kMixed;
  c.num_kv_blocks = 5;
  c.long_prefill_token_threshold = 8;
  c.enable_prefix_caching = false;
  VirtualClock clock;
  Scheduler s(c, clock);
  FakeExecutor exec;
  s.add_request(1, prompt_of(4, 1000), max_tokens(8));   // 1 block
  s.add_request(2, prompt_of(16, 2000), max_tokens(2));  // 4 blocks, in chunks of 8
  run_step(s, exec);
  ASSERT_TRUE(s.find(2)->in_prefill());
  auto step = run_step(s, exec);  // 1 needs a fifth position's block: 2 gives all of its up
  EXPECT_EQ(ids_of(step.plan), std::vector<uint64_t>{1});
  EXPECT_EQ(s.find(2)->status, RequestStatus::kPreempted);
  EXPECT_EQ(s.find(2)->num_computed_tokens, 0);
  EXPECT_EQ(s.kv().num_free_blocks(), 3);
}

}  // namespace
}  // namespace paceline
