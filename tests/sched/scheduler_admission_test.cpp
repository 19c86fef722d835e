// Admission: validation at the door, arrival order, the sequence and token limits.
#include <gtest/gtest.h>

#include "base/error.h"
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

TEST(SchedulerAdmission, APromptPlusMaxTokensBeyondTheModelLengthIsRejected) {
  VirtualClock clock;
  Scheduler s(small_config(), clock);  // max_model_len 256
  EXPECT_NO_THROW(s.add_request(1, prompt_of(200), max_tokens(56)));
  try {
    s.add_request(2, prompt_of(200), max_tokens(57));
    FAIL() << "accepted 257 tokens";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("maximum context length"), std::string::npos) << e.what();
  }
  EXPECT_EQ(s.num_waiting(), 1);
}

TEST(SchedulerAdmission, MalformedRequestsAreRejected) {
  VirtualClock clock;
  Scheduler s(small_config(), clock);
  EXPECT_THROW(s.add_request(1, {}, max_tokens(4)), Error);
  EXPECT_THROW(s.add_request(1, prompt_of(4), max_tokens(0)), Error);
  RequestParams p = max_tokens(4);
  p.min_tokens = 5;
  EXPECT_THROW(s.add_request(1, prompt_of(4), p), Error);
  s.add_request(1, prompt_of(4), max_tokens(4));
  EXPECT_THROW(s.add_request(1, prompt_of(4), max_tokens(4)), Error);  // duplicate id
}

TEST(SchedulerAdmission, ARequestLargerThanTheWholeKvCacheIsRejected) {
  SchedulerConfig c = small_config();
  c.num_kv_blocks = 4;  // 16 tokens
  VirtualClock clock;
  Scheduler s(c, clock);
  EXPECT_NO_THROW(s.add_request(1, prompt_of(10), max_tokens(7)));  // 16 positions hold KV
  EXPECT_THROW(s.add_request(2, prompt_of(10), max_tokens(8)), Error);
}

TEST(SchedulerAdmission, NothingToDoIsAnEmptyPlan) {
  VirtualClock clock;
  Scheduler s(small_config(), clock);
  StepPlan plan = s.schedule();
  EXPECT_TRUE(plan.seqs.empty());
  EXPECT_TRUE(s.update(plan, {}).empty());
}

TEST(SchedulerAdmission, APromptIsPrefilledThenDecodedOneTokenAtATime) {
  VirtualClock clock;
  Scheduler s(small_config(), clock);
  FakeExecutor exec(42);
  s.add_request(1, prompt_of(10), max_tokens(3));

  auto step = run_step(s, exec);
  ASSERT_EQ(step.plan.seqs.size(), 1u);
  EXPECT_EQ(step.plan.kind, ForwardKind::kPrefill);
  EXPECT_EQ(step.plan.seqs[0].tokens, prompt_of(10));
  EXPECT_EQ(step.plan.seqs[0].start_pos, 0);
  EXPECT_EQ(step.plan.seqs[0].num_logits, 1);
  EXPECT_EQ(step.plan.seqs[0].block_table.size(), 3u);  // 10 tokens in blocks of 4
  ASSERT_EQ(step.outputs.size(), 1u);
  EXPECT_EQ(step.outputs[0].new_token_ids, std::vector<int32_t>{42});

  step = run_step(s, exec);
  EXPECT_EQ(step.plan.kind, ForwardKind::kDecode);
  EXPECT_EQ(step.plan.seqs[0].tokens, std::vector<int32_t>{42});
  EXPECT_EQ(step.plan.seqs[0].start_pos, 10);

  step = run_step(s, exec);
  ASSERT_EQ(step.outputs.size(), 1u);
  EXPECT_TRUE(step.outputs[0].finished);
  EXPECT_EQ(step.outputs[0].finish_reason, FinishReason::kLength);
  EXPECT_EQ(step.outputs[0].usage.completion_tokens, 3);
  EXPECT_FALSE(s.has_unfinished());
  EXPECT_EQ(s.kv().num_free_blocks(), s.kv().num_blocks());
}

TEST(SchedulerAdmission, RequestsAreAdmittedInArrivalOrderWithinTheTokenBudget) {
  VirtualClock clock;
  Scheduler s(small_config(), clock);  // 64 tokens per forward
  FakeExecutor exec;
  s.add_request(1, prompt_of(30, 1000), max_tokens(2));
  s.add_request(2, prompt_of(30, 2000), max_tokens(2));
  s.add_request(3, prompt_of(30, 3000), max_tokens(2));
  auto step = run_step(s, exec);
  // 30 + 30 fit; the third gets the 4 tokens left as a first chunk.
  EXPECT_EQ(ids_of(step.plan), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(step.plan.seqs[2].tokens.size(), 4u);
  EXPECT_EQ(step.plan.seqs[2].num_logits, 0);
  EXPECT_EQ(step.plan.num_tokens(), 64);
}

TEST(SchedulerAdmission, MaxNumSeqsBoundsTheRunningSet) {
  SchedulerConfig c = small_config();
  c.max_num_seqs = 2;
  VirtualClock clock;
  Scheduler s(c, clock);
  FakeExecutor exec;
  for (uint64_t id = 1; id <= 3; ++id) s.add_request(id, prompt_of(4), max_tokens(2));
  auto step = run_step(s, exec);
  EXPECT_EQ(ids_of(step.plan), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(s.num_running(), 2);
  EXPECT_EQ(s.num_waiting(), 1);
  step = run_step(s, exec);  // both decode their last token and finish
  EXPECT_EQ(step.plan.kind, ForwardKind::kDecode);
  EXPECT_EQ(s.num_running(), 0);
  step = run_step(s, exec);
  EXPECT_EQ(ids_of(step.plan), (std::vector<uint64_t>{3}));
}

TEST(SchedulerAdmission, WithoutChunkedPrefillAPromptWaitsForRoomInTheForward) {
  SchedulerConfig c = small_config();
  c.enable_chunked_prefill = false;
  c.max_num_batched_tokens = 256;
  c.num_kv_blocks = 128;
  VirtualClock clock;
  Scheduler s(c, clock);
  FakeExecutor exec;
  s.add_request(1, prompt_of(200), max_tokens(2));
  s.add_request(2, prompt_of(100, 5000), max_tokens(2));
  auto step = run_step(s, exec);
  EXPECT_EQ(ids_of(step.plan), (std::vector<uint64_t>{1}));
  step = run_step(s, exec);
  EXPECT_EQ(ids_of(step.plan), (std::vector<uint64_t>{2}));
  EXPECT_EQ(step.plan.seqs[0].tokens.size(), 100u);
}

TEST(SchedulerAdmission, UpdateMustFollowTheScheduleItAnswers) {
  VirtualClock clock;
  Scheduler s(small_config(), clock);
  FakeExecutor exec;
  s.add_request(1, prompt_of(4), max_tokens(4));
  StepPlan plan = s.schedule();
  EXPECT_THROW(s.schedule(), Error);
  StepResult result = exec.execute(plan);
  result.seqs.pop_back();
  EXPECT_THROW(s.update(plan, result), Error);
}

TEST(SchedulerAdmission, TheArrivalTimeComesFromTheClockUnlessGiven) {
  VirtualClock clock(5'000);
  Scheduler s(small_config(), clock);
  s.add_request(1, prompt_of(4), max_tokens(4));
  RequestParams p = max_tokens(4);
  p.arrival_ns = 1'000;
  s.add_request(2, prompt_of(4), p);
  EXPECT_EQ(s.find(1)->arrival_ns, 5'000);
  EXPECT_EQ(s.find(2)->arrival_ns, 1'000);
}

}  // namespace
}  // namespace paceline
