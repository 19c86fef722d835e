#pragma once
// A failpoint for the host KV tier's loads, for tests of the fallback to recompute: with
// PACELINE_FAILPOINT_KV_LOAD=N in the environment, every N-th block load an executor makes
// (the N-th, the 2N-th, ...) fails as a failed copy would (the CUDA executor: as a
// cudaMemcpy2DAsync that returns an error). Unset (the default), it costs one branch per load.
// An executor that has it on says so at startup, at warning level, so that no server runs with
// it unknowingly. A value that is not a whole number >= 1 is refused at startup.
#include <cstdint>
#include <vector>

#include "sched/step_plan.h"

namespace paceline {

inline constexpr const char* kKvLoadFailpointEnv = "PACELINE_FAILPOINT_KV_LOAD";

class KvLoadFaults {
 public:
  explicit KvLoadFaults(int64_t every = 0) : every_(every) {}
  // From PACELINE_FAILPOINT_KV_LOAD; throws paceline::Error naming it on a bad value.
  static KvLoadFaults from_env();

  bool active() const { return every_ > 0; }
  // Counts one load; true when it is to fail.
  bool next_load_fails() { return every_ > 0 && ++loads_ % every_ == 0; }

 private:
  int64_t every_ = 0;
  int64_t loads_ = 0;
};

// What an executor returns for a step whose loads failed: the plan's rows without tokens, and
// the loads that failed; it runs no forward (StepResult::failed_loads).
StepResult result_without_forward(const StepPlan& plan, std::vector<BlockCopy> failed_loads);

}  // namespace paceline
