#pragma once
// Test helpers for the scheduler alone: an executor that "samples" a fixed token for every logit
// row, and one schedule-then-update pass through it. This is not the engine's step loop (that is
// EngineCore, src/engine/engine_core.h, tested in tests/engine): the scheduler's tests link only
// the scheduler, and check its own contract.
#include <cstdint>
#include <numeric>
#include <vector>

#include "sched/scheduler.h"

namespace paceline::testing {

class FakeExecutor {
 public:
  explicit FakeExecutor(int32_t token = 7) : token_(token) {}
  StepResult execute(const StepPlan& plan) const {
    StepResult result;
    result.step_id = plan.step_id;
    for (const ScheduledSeq& s : plan.seqs) {
      std::vector<int32_t> sampled;
      for (int32_t i = 0; i < s.num_logits; ++i) {
        sampled.push_back(distinct_ ? static_cast<int32_t>(plan.step_id * 100 + i) : token_);
      }
      result.seqs.push_back({s.request_id, sampled});
    }
    return result;
  }
  void set_token(int32_t token) { token_ = token; }
  // Samples step_id * 100 + row position instead: every committed token tells where it came from.
  void sample_distinct_tokens() { distinct_ = true; }

 private:
  int32_t token_;
  bool distinct_ = false;
};

// schedule, execute, update: returns the plan so tests can look at it.
struct Step {
  StepPlan plan;
  std::vector<RequestOutput> outputs;
};

inline Step run_step(Scheduler& scheduler, const FakeExecutor& executor) {
  Step step;
  step.plan = scheduler.schedule();
  step.outputs = scheduler.update(step.plan, executor.execute(step.plan));
  return step;
}

inline std::vector<int32_t> prompt_of(int n, int32_t first = 1000) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

inline std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

inline RequestParams max_tokens(int64_t n) {
  RequestParams p;
  p.max_tokens = n;
  p.ignore_eos = true;
  return p;
}

// A config small enough to reason about in a test.
inline SchedulerConfig small_config() {
  SchedulerConfig c;
  c.max_num_seqs = 8;
  c.max_num_batched_tokens = 64;
  c.max_model_len = 256;
  c.block_size = 4;
  c.num_kv_blocks = 64;
  return c;
}

inline std::vector<uint64_t> ids_of(const StepPlan& plan) {
  std::vector<uint64_t> ids;
  for (const auto& s : plan.seqs) ids.push_back(s.request_id);
  return ids;
}

}  // namespace paceline::testing
