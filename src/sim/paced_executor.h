#pragma once
// A GPU that takes the simulator's time, in real time: wraps an executor that computes nothing
// (the null executor) and holds each step until the time the cost model predicts for it, plus
// the host tier's copies, has passed on the wall clock. `paceline serve --device null
// --pace-profile P` then serves at the speed `paceline sim --profile P` assumes, through the real
// HTTP path, tokenizer, request threads, engine thread and steady clock, so that where the two
// disagree is what the simulator leaves out. It lives here, not in exec/, because the cost model
// is the simulator's.
#include <cstdint>
#include <functional>
#include <memory>

#include "base/clock.h"
#include "exec/executor.h"
#include "sim/cost_model.h"
#include "sim/cost_model_step_cost.h"
#include "sim/kv_transfer_cost.h"

namespace paceline::sim {

class PacedExecutor final : public Executor {
 public:
  // Blocks the calling thread until `clock` reads at least deadline_ns.
  using WaitUntil = std::function<void(int64_t deadline_ns)>;

  // `inner` does the step (its tokens and capabilities are the answer); each step then lasts
  // cost's prediction plus transfers' price of the plan's copies, measured on `clock` from the
  // call. The clock must outlive the executor.
  PacedExecutor(std::unique_ptr<Executor> inner, std::unique_ptr<const CostModel> cost,
                KvTransferCost transfers, const Clock& clock, WaitUntil wait_until);

  // The inner result, returned once the predicted time is up; step_time_ns is the prediction.
  StepResult execute(const StepPlan& plan) override;
  ExecutorCapabilities capabilities() const override { return inner_->capabilities(); }
  // --max-step-ms cuts prefills by the same prediction as in the simulator.
  const StepCostModel* step_cost_model() const override { return &step_cost_; }
  const CostModel& cost_model() const { return *cost_; }

 private:
  std::unique_ptr<Executor> inner_;
  std::unique_ptr<const CostModel> cost_;
  CostModelStepCost step_cost_;
  KvTransferCost transfers_;
  const Clock& clock_;
  WaitUntil wait_until_;
};

// A WaitUntil for SteadyClock's time base: sleeps until std::chrono::steady_clock reaches it.
void sleep_until_steady_ns(int64_t deadline_ns);

}  // namespace paceline::sim
