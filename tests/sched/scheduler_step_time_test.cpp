// --max-step-ms: the scheduler cuts prefill chunks so that each forward's predicted time stays
// under the cap, with the executor's step-cost model, and the model fitted to measured steps
// (MeasuredStepCost) learns a host's costs from the steps it ran.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "base/error.h"
#include "fake_executor.h"
#include "sched/measured_step_cost.h"
#include "sched/scheduler.h"
#include "sched/step_work.h"

namespace paceline {
namespace {

using testing::FakeExecutor;
using testing::max_tokens;
using testing::prompt_of;
using testing::run_step;

constexpr int64_t kMs = 1'000'000;

// 0.1 ms per token and 1 us per query-key pair: a 3,000-token prompt in one forward would take
// 0.3 s + 4.5 s, quadratic as on the CPU executor.
class QuadraticCost final : public StepCostModel {
 public:
  int64_t predict_ns(const StepWork& w) const override {
    return w.tokens * 100'000 + w.attention * 1'000;
  }
};

SchedulerConfig long_prompt_config(double max_step_ms, ScheduleKind kind) {
  SchedulerConfig c;
  c.max_num_seqs = 8;
  c.max_num_batched_tokens = 8192;
  c.max_model_len = 8192;
  c.block_size = 16;
  c.num_kv_blocks = 1024;
  c.schedule = kind;
  c.max_step_ms = max_step_ms;
  return c;
}

// A scheduler with the cap and the quadratic cost model, and one long prompt queued.
struct Rig {
  explicit Rig(double max_step_ms, ScheduleKind kind = ScheduleKind::kSeparate)
      : s(long_prompt_config(max_step_ms, kind), clock) {
    s.set_step_cost(&cost);
  }
  VirtualClock clock;
  QuadraticCost cost;
  Scheduler s;
  FakeExecutor exec;
};

// The prefill rows' token counts of each step until request `id` has its first token.
std::vector<int64_t> prefill_chunks(Scheduler& s, const FakeExecutor& exec, uint64_t id) {
  std::vector<int64_t> chunks;
  for (int i = 0; i < 10000; ++i) {
    const testing::Step step = run_step(s, exec);
    for (const ScheduledSeq& row : step.plan.seqs) {
      if (row.request_id == id) chunks.push_back(static_cast<int64_t>(row.tokens.size()));
    }
    for (const RequestOutput& out : step.outputs) {
      if (out.request_id == id && !out.new_token_ids.empty()) return chunks;
    }
  }
  ADD_FAILURE() << "request " << id << " never got its first token";
  return chunks;
}

TEST(StepTimeBound, ALongPrefillIsCutSoThatNoStepIsPredictedOverTheCap) {
  Rig rig(50);
  Scheduler& s = rig.s;
  const QuadraticCost& cost = rig.cost;
  s.add_request(1, prompt_of(3000), max_tokens(2));
  int64_t start = 0, steps = 0;
  while (start < 3000) {
    StepPlan plan = s.schedule();
    ASSERT_EQ(plan.seqs.size(), 1u);
    const auto n = static_cast<int64_t>(plan.seqs[0].tokens.size());
    EXPECT_EQ(plan.seqs[0].start_pos, start);
    EXPECT_LE(cost.predict_ns(step_work(plan)), 50 * kMs) << "step " << steps;
    // The largest chunk that fits: one token more would be over the cap (unless it was the end).
    if (start + n < 3000) {
      StepWork more;
      more.add_row(start, n + 1, 0);
      EXPECT_GT(cost.predict_ns(more), 50 * kMs) << "step " << steps << " took " << n;
    }
    s.update(plan, rig.exec.execute(plan));
    start += n;
    ++steps;
  }
  EXPECT_EQ(start, 3000);
  EXPECT_GT(steps, 10);  // 4.8 s of predicted work in forwards of 50 ms at most
}

TEST(StepTimeBound, ChunksShrinkAsTheContextGrows) {
  Rig rig(50);
  rig.s.add_request(1, prompt_of(3000), max_tokens(2));
  const std::vector<int64_t> chunks = prefill_chunks(rig.s, rig.exec, 1);
  ASSERT_GT(chunks.size(), 2u);
  for (size_t i = 1; i + 1 < chunks.size(); ++i) EXPECT_LE(chunks[i], chunks[i - 1]);
  EXPECT_GT(chunks.front(), 2 * chunks[chunks.size() - 2]);
}

TEST(StepTimeBound, OffOrWithoutACostModelTheTokenBudgetAloneDecides) {
  for (bool with_cost : {false, true}) {
    VirtualClock clock;
    QuadraticCost cost;
    Scheduler s(long_prompt_config(with_cost ? 0 : 50, ScheduleKind::kSeparate), clock);
    if (with_cost) s.set_step_cost(&cost);
    FakeExecutor exec;
    s.add_request(1, prompt_of(3000), max_tokens(2));
    EXPECT_EQ(prefill_chunks(s, exec, 1), std::vector<int64_t>{3000});
  }
}

TEST(StepTimeBound, AMixedPassCountsItsDecodesAndAPrefillStillAdvances) {
  Rig rig(50, ScheduleKind::kMixed);
  rig.s.add_request(1, prompt_of(100), max_tokens(1000));
  prefill_chunks(rig.s, rig.exec, 1);  // request 1 decodes from now on
  rig.s.add_request(2, prompt_of(3000, 5000), max_tokens(2));
  for (int i = 0; i < 5; ++i) {
    StepPlan plan = rig.s.schedule();
    ASSERT_EQ(plan.kind, ForwardKind::kMixed);
    EXPECT_LE(rig.cost.predict_ns(step_work(plan)), 50 * kMs);
    rig.s.update(plan, rig.exec.execute(plan));
  }
  // A cap the decode alone is over: the prefill still gets a token per pass.
  Rig tight(0.05, ScheduleKind::kMixed);
  tight.s.add_request(1, prompt_of(100), max_tokens(1000));
  prefill_chunks(tight.s, tight.exec, 1);
  tight.s.add_request(2, prompt_of(50, 5000), max_tokens(2));
  StepPlan plan = tight.s.schedule();
  ASSERT_EQ(plan.seqs.size(), 2u);
  EXPECT_EQ(plan.seqs[1].request_id, 2u);
  EXPECT_EQ(plan.seqs[1].tokens.size(), 1u);
  tight.s.update(plan, tight.exec.execute(plan));
}

TEST(StepTimeBound, TheCapMustBeANonNegativeNumber) {
  VirtualClock clock;
  for (double bad : {-1.0, std::nan("")}) {
    try {
      Scheduler s(long_prompt_config(bad, ScheduleKind::kSeparate), clock);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--max-step-ms"), std::string::npos) << e.what();
    }
  }
}

StepWork prefill_work(int64_t start, int64_t n, int64_t logits) {
  StepWork w;
  w.kind = ForwardKind::kPrefill;
  w.add_row(start, n, logits);
  return w;
}

// 200 ns per token, 3 ns per query-key pair, 50 us per logit row.
int64_t true_ns(const StepWork& w) {
  return w.tokens * 200 + w.attention * 3 + w.logit_rows * 50'000;
}

TEST(MeasuredStepCost, LearnsTheCostsOfTheStepsItMeasured) {
  MeasuredStepCost m;
  EXPECT_EQ(m.predict_ns(prefill_work(0, 1000, 1)), 0);
  int64_t start = 0;
  for (int64_t n : {64, 128, 256, 512, 300, 200, 150}) {
    const StepWork w = prefill_work(start, n, n == 150 ? 1 : 0);
    m.observe(w, true_ns(w));
    start += n;
  }
  for (const StepWork& w : {prefill_work(1600, 100, 0), prefill_work(0, 700, 1)}) {
    EXPECT_NEAR(static_cast<double>(m.predict_ns(w)), static_cast<double>(true_ns(w)),
                0.01 * static_cast<double>(true_ns(w)));
  }
  const auto c = m.coefficients();
  EXPECT_NEAR(c[0], 200, 2);
  EXPECT_NEAR(c[1], 3, 0.03);
  EXPECT_NEAR(c[2], 50'000, 500);
}

TEST(MeasuredStepCost, NoCoefficientGoesNegativeOnNoisyTimes) {
  MeasuredStepCost m;
  // Times that fall as attention grows: least squares would price attention below zero.
  int64_t start = 0;
  for (int i = 0; i < 8; ++i) {
    const StepWork w = prefill_work(start, 100, 0);
    m.observe(w, 1'000'000 - i * 50'000);
    start += 100;
  }
  for (double c : m.coefficients()) EXPECT_GE(c, 0);
  EXPECT_GT(m.predict_ns(prefill_work(0, 100, 0)), 0);
}

TEST(MeasuredStepCost, TrustsOnlyTwiceWhatItMeasuredAndIgnoresDecodes) {
  MeasuredStepCost m;
  EXPECT_EQ(m.trusted_tokens(), MeasuredStepCost::kProbeTokens);
  StepWork decode;
  decode.kind = ForwardKind::kDecode;
  for (int i = 0; i < 500; ++i) decode.add_row(100, 1, 1);
  m.observe(decode, 1'000'000);
  EXPECT_EQ(m.steps_observed(), 0);
  EXPECT_EQ(m.trusted_tokens(), MeasuredStepCost::kProbeTokens);
  m.observe(prefill_work(0, 64, 0), 10'000);
  EXPECT_EQ(m.trusted_tokens(), 128);
  m.observe(prefill_work(64, 40, 1), 10'000);
  EXPECT_EQ(m.trusted_tokens(), 128);
}

}  // namespace
}  // namespace paceline
