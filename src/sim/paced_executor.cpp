#include "sim/paced_executor.h"

#include <chrono>
#include <thread>
#include <utility>

#include "base/error.h"

namespace paceline::sim {

PacedExecutor::PacedExecutor(std::unique_ptr<Executor> inner, std::unique_ptr<const CostModel> cost,
                             KvTransferCost transfers, const Clock& clock, WaitUntil wait_until)
    : inner_(std::move(inner)),
      cost_(std::move(cost)),
      step_cost_(*cost_),
      transfers_(transfers),
      clock_(clock),
      wait_until_(std::move(wait_until)) {
  if (!inner_ || !wait_until_) fail("a paced executor needs an executor to pace and a way to wait");
}

StepResult PacedExecutor::execute(const StepPlan& plan) {
  const int64_t start = clock_.now_ns();
  StepResult result = inner_->execute(plan);
  if (plan.seqs.empty()) return result;
  // The same price as SimExecutor's (without step noise): copies before the forward.
  const int64_t predicted = cost_->step_time_ns(step_work(plan)) + transfers_.ns(plan.kv_transfers);
  wait_until_(start + predicted);
  result.step_time_ns = predicted;
  return result;
}

void sleep_until_steady_ns(int64_t deadline_ns) {
  std::this_thread::sleep_until(
      std::chrono::steady_clock::time_point(std::chrono::nanoseconds(deadline_ns)));
}

}  // namespace paceline::sim
