#pragma once
// What the scheduler's step-time bound (--max-step-ms) asks of an executor: how long a forward
// of some work would take. The simulator answers with its cost model (the same prediction its
// virtual clock advances by); a real executor with MeasuredStepCost, a fit to the step times it
// measured. The scheduler only reads it: the engine core feeds it what each step took.
#include <cstdint>
#include <limits>

#include "sched/step_work.h"

namespace paceline {

class StepCostModel {
 public:
  virtual ~StepCostModel() = default;
  // Predicted time of a forward computing `work`, in ns.
  virtual int64_t predict_ns(const StepWork& work) const = 0;
  // The most tokens one forward may compute on this model's word: beyond it the prediction
  // would extrapolate too far from what was measured to be trusted.
  virtual int64_t trusted_tokens() const { return std::numeric_limits<int64_t>::max(); }
  // A forward that ran: its work and its time on the engine's clock.
  virtual void observe(const StepWork& /*work*/, int64_t /*step_ns*/) {}
};

}  // namespace paceline
