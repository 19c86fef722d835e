// The plan carries a request's history (prompt, then output) to the executor only when its
// penalties need it, as a view of the request's own tokens rather than a copy.
#include <gtest/gtest.h>

#include "fake_executor.h"
#include "sched/scheduler.h"

namespace paceline {
namespace {

using testing::concat;
using testing::FakeExecutor;
using testing::max_tokens;
using testing::prompt_of;
using testing::small_config;

std::vector<int32_t> history_of(const ScheduledSeq& s) {
  return {s.history.begin(), s.history.end()};
}

TEST(SchedulerHistory, PenaltiesGetPromptAndOutputSoFar) {
  VirtualClock clock;
  Scheduler s(small_config(), clock);
  FakeExecutor exec(5);
  RequestParams p = max_tokens(4);
  p.sampling.presence_penalty = 1.0;
  s.add_request(1, prompt_of(6), p);

  StepPlan prefill = s.schedule();
  ASSERT_EQ(prefill.seqs.size(), 1u);
  EXPECT_EQ(history_of(prefill.seqs[0]), prompt_of(6));
  EXPECT_EQ(prefill.seqs[0].num_prompt_tokens, 6);
  s.update(prefill, exec.execute(prefill));

  exec.set_token(9);
  StepPlan decode = s.schedule();
  ASSERT_EQ(decode.seqs.size(), 1u);
  EXPECT_EQ(history_of(decode.seqs[0]), concat(prompt_of(6), {5}));
  EXPECT_EQ(decode.seqs[0].num_prompt_tokens, 6);
  s.update(decode, exec.execute(decode));

  StepPlan next = s.schedule();
  EXPECT_EQ(history_of(next.seqs[0]), concat(prompt_of(6), {5, 9}));
  // A view of the request's tokens, not a copy made for the plan.
  EXPECT_EQ(next.seqs[0].history.data(), s.find(1)->tokens.data());
}

TEST(SchedulerHistory, RequestsWithoutPenaltiesCarryNone) {
  VirtualClock clock;
  Scheduler s(small_config(), clock);
  RequestParams p = max_tokens(4);
  p.sampling.logit_bias =
      std::make_shared<const std::vector<TokenBias>>(std::vector<TokenBias>{{3, 1.0f}});
  p.sampling.min_p = 0.2;
  s.add_request(1, prompt_of(6), p);
  s.add_request(2, prompt_of(6), max_tokens(4));
  StepPlan plan = s.schedule();
  ASSERT_EQ(plan.seqs.size(), 2u);
  for (const ScheduledSeq& seq : plan.seqs) EXPECT_TRUE(seq.history.empty());
  EXPECT_EQ(plan.seqs[0].sampling.logit_bias, p.sampling.logit_bias);  // shared, not copied
}

}  // namespace
}  // namespace paceline
