#include "sim/sim_executor.h"

namespace paceline::sim {

SimExecutor::SimExecutor(const CostModel& cost, KvCacheShape kv_shape, int32_t token)
    : cost_(cost), kv_shape_(kv_shape), token_(token) {}

StepResult SimExecutor::execute(const StepPlan& plan) {
  StepResult result;
  result.step_id = plan.step_id;
  result.seqs.reserve(plan.seqs.size());
  for (const ScheduledSeq& s : plan.seqs) {
    result.seqs.push_back(
        {s.request_id, std::vector<int32_t>(static_cast<size_t>(s.num_logits), token_)});
  }
  if (plan.seqs.empty()) return result;
  const StepWork work = step_work(plan);
  result.step_time_ns = cost_.step_time_ns(work);
  ++stats_.steps;
  if (cost_.extrapolates(work)) ++stats_.extrapolated_steps;
  stats_.busy_ns += result.step_time_ns;
  switch (plan.kind) {
    case ForwardKind::kPrefill:
      stats_.prefill_busy_ns += result.step_time_ns;
      break;
    case ForwardKind::kDecode:
      stats_.decode_busy_ns += result.step_time_ns;
      break;
    case ForwardKind::kMixed:
      stats_.mixed_busy_ns += result.step_time_ns;
      break;
  }
  return result;
}

}  // namespace paceline::sim
