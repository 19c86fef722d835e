// Speculative decoding with synthetic acceptance: decode rows verify k draft tokens plus one, the
// budget pays for all k + 1, and each step commits floor(AL) or floor(AL) + 1 of them.
#include <cmath>

#include <gtest/gtest.h>

#include "fake_executor.h"
#include "sched/scheduler.h"

namespace paceline {
namespace {

using testing::FakeExecutor;
using testing::max_tokens;
using testing::prompt_of;
using testing::run_step;
using testing::small_config;

SchedulerConfig spec_config(int32_t k, double acceptance_length) {
  SchedulerConfig c = small_config();
  c.max_model_len = 2048;
  c.num_kv_blocks = 1024;
  c.speculative.speculative_tokens = k;
  c.speculative.acceptance_length = acceptance_length;
  return c;
}

TEST(SpeculativeDecoding, DecodeRowsCarryKPlusOneTokensChargedToTheBudget) {
  VirtualClock clock;
  Scheduler s(spec_config(3, 2.5), clock);
  FakeExecutor exec(5);
  s.add_request(1, prompt_of(4, 1000), max_tokens(100));
  s.add_request(2, prompt_of(4, 2000), max_tokens(100));
  auto step = run_step(s, exec);
  EXPECT_EQ(step.plan.seqs[0].num_logits, 1);  // prefill rows sample one token
  step = run_step(s, exec);
  ASSERT_EQ(step.plan.kind, ForwardKind::kDecode);
  EXPECT_EQ(step.plan.num_tokens(), 8);
  for (const auto& row : step.plan.seqs) {
    EXPECT_EQ(row.tokens, (std::vector<int32_t>{5, 5, 5, 5}));
    EXPECT_EQ(row.num_logits, 4);
    EXPECT_EQ(row.start_pos, 4);
  }
}

TEST(SpeculativeDecoding, TheBudgetLimitsHowManyRowsFit) {
  SchedulerConfig c = spec_config(3, 2.5);
  c.max_num_batched_tokens = 8;
  VirtualClock clock;
  Scheduler s(c, clock);
  FakeExecutor exec;
  for (int id = 1; id <= 3; ++id) s.add_request(id, prompt_of(2, 1000 * id), max_tokens(100));
  run_step(s, exec);  // 6 prefill tokens
  EXPECT_EQ(run_step(s, exec).plan.seqs.size(), 2u);
}

TEST(SpeculativeDecoding, EachStepCommitsFloorAlOrOneMore) {
  const double al = 2.5;
  VirtualClock clock;
  Scheduler s(spec_config(3, al), clock);
  FakeExecutor exec(5);
  s.add_request(1, prompt_of(4), max_tokens(1500));
  run_step(s, exec);
  int64_t steps = 0, committed = 0;
  while (s.has_unfinished()) {
    auto step = run_step(s, exec);
    ASSERT_EQ(step.outputs.size(), 1u);
    const auto n = static_cast<int64_t>(step.outputs[0].new_token_ids.size());
    if (!step.outputs[0].finished) {
      EXPECT_TRUE(n == 2 || n == 3) << n;
      ++steps;
      committed += n;
      const Request* r = s.find(1);
      EXPECT_EQ(r->num_computed_tokens, r->num_tokens() - 1);  // what was accepted has KV
    }
  }
  EXPECT_NEAR(static_cast<double>(committed) / static_cast<double>(steps), al, 0.1);
}

TEST(SpeculativeDecoding, DraftsShrinkNearMaxTokensSoTheRequestEndsExactlyThere) {
  VirtualClock clock;
  Scheduler s(spec_config(3, 4.0), clock);  // every draft accepted
  FakeExecutor exec(5);
  s.add_request(1, prompt_of(4), max_tokens(6));
  run_step(s, exec);  // token 1
  auto step = run_step(s, exec);
  EXPECT_EQ(step.plan.seqs[0].tokens.size(), 4u);  // tokens 2-5
  step = run_step(s, exec);
  EXPECT_EQ(step.plan.seqs[0].tokens.size(), 1u);  // token 6: no drafts past max_tokens
  ASSERT_TRUE(step.outputs[0].finished);
  EXPECT_EQ(step.outputs[0].usage.completion_tokens, 6);
}

TEST(SpeculativeDecoding, AStopTokenCutsACommitShort) {
  VirtualClock clock;
  Scheduler s(spec_config(3, 4.0), clock);
  FakeExecutor exec(5);
  RequestParams p;
  p.max_tokens = 50;
  p.eos_token_ids = {2};
  s.add_request(1, prompt_of(4), p);
  run_step(s, exec);
  exec.set_token(2);
  auto step = run_step(s, exec);
  ASSERT_EQ(step.outputs.size(), 1u);
  EXPECT_EQ(step.outputs[0].new_token_ids, std::vector<int32_t>{2});
  EXPECT_EQ(step.outputs[0].finish_reason, FinishReason::kStop);
  EXPECT_EQ(s.kv().num_free_blocks(), s.kv().num_blocks());
}

}  // namespace
}  // namespace paceline
