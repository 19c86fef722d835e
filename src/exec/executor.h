#pragma once
// Runs what the scheduler planned. CPU (reference), CUDA (fast) and the simulator's cost model
// implement this; everything an executor needs is in the plan.
#include "sched/step_plan.h"

namespace paceline {

struct KvCacheShape {
  int64_t num_blocks = 0;
  int64_t block_size = 16;
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual StepResult execute(const StepPlan& plan) = 0;
  virtual KvCacheShape kv_cache_shape() const = 0;
};

}  // namespace paceline
