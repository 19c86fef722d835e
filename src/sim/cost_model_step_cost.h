#pragma once
// The simulator's answer to the scheduler's step-time bound (--max-step-ms): the cost model's own
// mean prediction, the time the virtual clock will advance by (step noise and host-tier copies
// aside). A real executor's counterpart is MeasuredStepCost, fitted to its measured steps.
#include <cstdint>

#include "sched/step_cost.h"
#include "sim/cost_model.h"

namespace paceline::sim {

class CostModelStepCost final : public StepCostModel {
 public:
  explicit CostModelStepCost(const CostModel& cost) : cost_(cost) {}
  int64_t predict_ns(const StepWork& work) const override {
    return work.tokens > 0 ? cost_.step_time_ns(work) : 0;
  }

 private:
  const CostModel& cost_;
};

}  // namespace paceline::sim
