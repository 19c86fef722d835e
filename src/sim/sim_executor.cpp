#include "sim/sim_executor.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace paceline::sim {

SimExecutor::SimExecutor(const CostModel& cost, ExecutorCapabilities capabilities, int32_t token,
                         StepNoise noise, const Clock* clock)
    : cost_(cost),
      capabilities_(std::move(capabilities)),
      token_(token),
      noise_(noise),
      clock_(clock) {}

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
  const int64_t mean_ns = cost_.step_time_ns(work);
  result.step_time_ns = mean_ns;
  if (noise_.active() && clock_ != nullptr) {
    const double f = noise_.factor(plan.kind, clock_->now_ns());
    result.step_time_ns = std::max<int64_t>(1, std::llround(static_cast<double>(mean_ns) * f));
    stats_.noise_ns += result.step_time_ns - mean_ns;
  }
  const int64_t copy_ns = transfer_cost_.ns(plan.kv_transfers);
  result.step_time_ns += copy_ns;
  stats_.transfer_ns += copy_ns;
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
