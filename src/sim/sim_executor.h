#pragma once
// The simulator's Executor: runs nothing, samples a fixed token for every logit row, and returns
// the step time its cost model predicts. The scheduler cannot tell it from a real executor.
#include <cstdint>

#include "base/clock.h"
#include "exec/executor.h"
#include "sim/cost_model.h"
#include "sim/cost_model_step_cost.h"
#include "sim/kv_transfer_cost.h"
#include "sim/step_noise.h"

namespace paceline::sim {

// Totals over the steps executed, by forward kind.
struct SimExecutorStats {
  int64_t steps = 0;
  int64_t busy_ns = 0;  // sum of the predicted step times
  int64_t prefill_busy_ns = 0, decode_busy_ns = 0, mixed_busy_ns = 0;
  int64_t extrapolated_steps = 0;  // predicted beyond the cost model's measured range
  // busy_ns minus the sum of the cost model's mean predictions: what the step noise added.
  int64_t noise_ns = 0;
  // Of busy_ns, the host tier's block copies.
  int64_t transfer_ns = 0;
};

class SimExecutor final : public Executor {
 public:
  // The cost model must outlive the executor. `capabilities`: what the simulated executor has
  // (its KV shape and element size come from the profile). `token`: what every logit row
  // "samples"; requests that should run to max_tokens set ignore_eos (the benchmark always does).
  // `noise` scales each predicted time by its factor at the step's start on `clock` (inactive,
  // or no clock: the predictions as they are).
  SimExecutor(const CostModel& cost, ExecutorCapabilities capabilities, int32_t token = 0,
              StepNoise noise = {}, const Clock* clock = nullptr);

  // A plan's kv_transfers cost (blocks × block_bytes) / bytes_per_s per direction, stores and
  // loads on their own copy streams, before the forward (as the CPU executor makes them).
  void set_transfer_cost(int64_t block_bytes, double bytes_per_s) {
    transfer_cost_ = {block_bytes, bytes_per_s};
  }

  StepResult execute(const StepPlan& plan) override;
  ExecutorCapabilities capabilities() const override { return capabilities_; }
  const StepCostModel* step_cost_model() const override { return &step_cost_; }
  const SimExecutorStats& stats() const { return stats_; }

 private:
  const CostModel& cost_;
  CostModelStepCost step_cost_{cost_};
  ExecutorCapabilities capabilities_;
  int32_t token_;
  StepNoise noise_;
  const Clock* clock_;
  SimExecutorStats stats_;
  KvTransferCost transfer_cost_;
};

}  // namespace paceline::sim
