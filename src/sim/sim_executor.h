#pragma once
// The simulator's Executor: runs nothing, samples a fixed token for every logit row, and returns
// the step time its cost model predicts. The scheduler cannot tell it from a real executor.
#include <cstdint>

#include "exec/executor.h"
#include "sim/cost_model.h"

namespace paceline::sim {

// Totals over the steps executed, by forward kind.
struct SimExecutorStats {
  int64_t steps = 0;
  int64_t busy_ns = 0;  // sum of the predicted step times
  int64_t prefill_busy_ns = 0, decode_busy_ns = 0, mixed_busy_ns = 0;
  int64_t extrapolated_steps = 0;  // predicted beyond the cost model's measured range
};

class SimExecutor final : public Executor {
 public:
  // The cost model must outlive the executor. `token`: what every logit row "samples"; requests
  // that should run to max_tokens set ignore_eos (the benchmark always does).
  SimExecutor(const CostModel& cost, KvCacheShape kv_shape, int32_t token = 0);

  StepResult execute(const StepPlan& plan) override;
  KvCacheShape kv_cache_shape() const override { return kv_shape_; }
  const SimExecutorStats& stats() const { return stats_; }

 private:
  const CostModel& cost_;
  KvCacheShape kv_shape_;
  int32_t token_;
  SimExecutorStats stats_;
};

}  // namespace paceline::sim
