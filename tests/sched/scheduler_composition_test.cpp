// How one forward is composed: separate (prefill-only or decode-only, prefill first) against
// mixed (one budget, decode tokens first), and how long prompts are chunked.
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

SchedulerConfig config_with(ScheduleKind kind) {
  SchedulerConfig c = small_config();
  c.schedule = kind;
  return c;
}

std::vector<size_t> row_sizes(const StepPlan& plan) {
  std::vector<size_t> sizes;
  for (const auto& s : plan.seqs) sizes.push_back(s.tokens.size());
  return sizes;
}

TEST(SeparateComposition, APassWithANewPrefillIsPrefillOnly) {
  VirtualClock clock;
  Scheduler s(config_with(ScheduleKind::kSeparate), clock);
  FakeExecutor exec;
  s.add_request(1, prompt_of(8, 1000), max_tokens(10));
  run_step(s, exec);  // 1 prefilled, now decoding
  s.add_request(2, prompt_of(8, 2000), max_tokens(10));
  auto step = run_step(s, exec);
  EXPECT_EQ(step.plan.kind, ForwardKind::kPrefill);
  EXPECT_EQ(ids_of(step.plan), std::vector<uint64_t>{2});
  step = run_step(s, exec);
  EXPECT_EQ(step.plan.kind, ForwardKind::kDecode);
  EXPECT_EQ(ids_of(step.plan), (std::vector<uint64_t>{1, 2}));
}

TEST(MixedComposition, DecodeTokensComeFirstThenPrefillFillsTheBudget) {
  VirtualClock clock;
  Scheduler s(config_with(ScheduleKind::kMixed), clock);  // 64 tokens per forward
  FakeExecutor exec;
  s.add_request(1, prompt_of(8, 1000), max_tokens(10));
  run_step(s, exec);
  s.add_request(2, prompt_of(100, 2000), max_tokens(10));
  auto step = run_step(s, exec);
  EXPECT_EQ(step.plan.kind, ForwardKind::kMixed);
  EXPECT_EQ(ids_of(step.plan), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(row_sizes(step.plan), (std::vector<size_t>{1, 63}));
  EXPECT_EQ(step.plan.padded_batch_size, 0);  // mixed forwards run eagerly
}

TEST(MixedComposition, DecodesThatFillTheBudgetLeaveNoRoomForPrefill) {
  SchedulerConfig c = config_with(ScheduleKind::kMixed);
  c.max_num_batched_tokens = 2;
  c.max_model_len = 64;
  VirtualClock clock;
  Scheduler s(c, clock);
  FakeExecutor exec;
  s.add_request(1, prompt_of(2, 1000), max_tokens(10));
  s.add_request(2, prompt_of(2, 2000), max_tokens(10));
  for (int i = 0; i < 3; ++i) run_step(s, exec);  // 1 prefills, then decodes beside 2's chunks
  ASSERT_FALSE(s.find(2)->in_prefill());
  s.add_request(3, prompt_of(2, 3000), max_tokens(10));
  auto step = run_step(s, exec);
  EXPECT_EQ(step.plan.kind, ForwardKind::kDecode);
  EXPECT_EQ(ids_of(step.plan), (std::vector<uint64_t>{1, 2}));
}

TEST(ChunkedPrefill, LongPrefillTokenThresholdCapsEachChunk) {
  SchedulerConfig c = small_config();
  c.long_prefill_token_threshold = 16;
  VirtualClock clock;
  Scheduler s(c, clock);
  FakeExecutor exec;
  s.add_request(1, prompt_of(40), max_tokens(2));
  std::vector<int64_t> starts;
  std::vector<size_t> sizes;
  std::vector<int32_t> logits;
  for (int i = 0; i < 3; ++i) {
    auto step = run_step(s, exec);
    ASSERT_EQ(step.plan.kind, ForwardKind::kPrefill);
    starts.push_back(step.plan.seqs[0].start_pos);
    sizes.push_back(step.plan.seqs[0].tokens.size());
    logits.push_back(step.plan.seqs[0].num_logits);
    EXPECT_EQ(step.outputs.empty(), i < 2);  // only the last chunk samples a token
  }
  EXPECT_EQ(starts, (std::vector<int64_t>{0, 16, 32}));
  EXPECT_EQ(sizes, (std::vector<size_t>{16, 16, 8}));
  EXPECT_EQ(logits, (std::vector<int32_t>{0, 0, 1}));
}

TEST(ChunkedPrefill, TheThresholdAppliesPerRequest) {
  SchedulerConfig c = small_config();
  c.long_prefill_token_threshold = 16;
  VirtualClock clock;
  Scheduler s(c, clock);
  FakeExecutor exec;
  s.add_request(1, prompt_of(40, 1000), max_tokens(2));
  s.add_request(2, prompt_of(40, 2000), max_tokens(2));
  auto step = run_step(s, exec);
  EXPECT_EQ(row_sizes(step.plan), (std::vector<size_t>{16, 16}));
}

TEST(ChunkedPrefill, AChunkBeyondTheBudgetIsCutToTheBudget) {
  VirtualClock clock;
  Scheduler s(small_config(), clock);  // 64 tokens per forward
  FakeExecutor exec;
  s.add_request(1, prompt_of(150), max_tokens(2));
  EXPECT_EQ(row_sizes(run_step(s, exec).plan), std::vector<size_t>{64});
  EXPECT_EQ(row_sizes(run_step(s, exec).plan), std::vector<size_t>{64});
  EXPECT_EQ(row_sizes(run_step(s, exec).plan), std::vector<size_t>{22});
}

TEST(ChunkedPrefill, ChunksInFlightContinueBeforeNewAdmissions) {
  for (ScheduleKind kind : {ScheduleKind::kSeparate, ScheduleKind::kMixed}) {
    VirtualClock clock;
    Scheduler s(config_with(kind), clock);
    FakeExecutor exec;
    s.add_request(1, prompt_of(150, 1000), max_tokens(2));
    run_step(s, exec);  // 64 of 150
    s.add_request(2, prompt_of(10, 2000), max_tokens(2));
    auto step = run_step(s, exec);  // the next 64 of request 1 take the whole budget
    EXPECT_EQ(ids_of(step.plan), std::vector<uint64_t>{1});
    step = run_step(s, exec);  // the last 22 of request 1, then request 2
    EXPECT_EQ(ids_of(step.plan), (std::vector<uint64_t>{1, 2}));
    EXPECT_EQ(row_sizes(step.plan), (std::vector<size_t>{22, 10}));
  }
}

TEST(ChunkedPrefill, InSeparateModeDecodesWaitWhileChunksRun) {
  VirtualClock clock;
  Scheduler s(config_with(ScheduleKind::kSeparate), clock);
  FakeExecutor exec;
  s.add_request(1, prompt_of(4, 1000), max_tokens(10));
  run_step(s, exec);
  s.add_request(2, prompt_of(150, 2000), max_tokens(2));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(run_step(s, exec).plan.kind, ForwardKind::kPrefill);
  EXPECT_EQ(run_step(s, exec).plan.kind, ForwardKind::kDecode);
}

TEST(ChunkedPrefill, InMixedModeDecodesRideAlongWithEveryChunk) {
  VirtualClock clock;
  Scheduler s(config_with(ScheduleKind::kMixed), clock);
  FakeExecutor exec;
  s.add_request(1, prompt_of(4, 1000), max_tokens(10));
  run_step(s, exec);
  s.add_request(2, prompt_of(150, 2000), max_tokens(2));
  for (int i = 0; i < 3; ++i) {
    auto step = run_step(s, exec);
    EXPECT_EQ(step.plan.kind, ForwardKind::kMixed);
    EXPECT_EQ(step.plan.seqs[0].request_id, 1u);
    EXPECT_LE(step.plan.num_tokens(), 64);
  }
}

}  // namespace
}  // namespace paceline
