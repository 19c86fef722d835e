#include "exec/kv_load_faults.h"

#include <cstdlib>
#include <string>
#include <utility>

#include "base/error.h"
#include "base/log.h"

namespace paceline {

KvLoadFaults KvLoadFaults::from_env() {
  const char* raw = std::getenv(kKvLoadFailpointEnv);
  if (raw == nullptr || *raw == '\0') return KvLoadFaults();
  char* end = nullptr;
  const long long every = std::strtoll(raw, &end, 10);
  if (*end != '\0' || every < 1) {
    fail("{}={}: expected a whole number N >= 1 (every N-th KV block load fails)",
         kKvLoadFailpointEnv, raw);
  }
  spdlog::warn(
      "{}={}: fault injection is on, every {}th KV block load from the host tier fails "
      "(a test switch: unset it in production)",
      kKvLoadFailpointEnv, raw, every);
  return KvLoadFaults(every);
}

StepResult result_without_forward(const StepPlan& plan, std::vector<BlockCopy> failed_loads) {
  StepResult result;
  result.step_id = plan.step_id;
  for (const ScheduledSeq& s : plan.seqs) result.seqs.push_back({s.request_id, {}});
  result.failed_loads = std::move(failed_loads);
  return result;
}

}  // namespace paceline
