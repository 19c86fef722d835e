#pragma once
// The engine core: the one owner of the scheduler, the executor (and with it the KV cache), the
// engine's metrics, the step log and the delayer's stats log. Single-threaded, deterministic given
// its clock, and free of I/O but the step log. Both front ends drive it: the serving Engine (a
// thread and an inbox around it, on the steady clock) and the simulator's SimTransport (an event
// adapter, on the virtual clock); tests call it directly.
//
//   add, cancel           at any time; a cancel frees the request's KV blocks at once
//   begin_step()          plans the next forward and runs it: the plan and its duration
//   end_step(deliver)     applies it: each request's new tokens, or its end
//
// A step is in flight between the two. On the steady clock begin_step returns once the forward
// has run; on the virtual clock it returns the cost model's prediction, and the simulator calls
// end_step that much later. A request cancelled while its step is in flight loses its row at
// end_step, in both.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/clock.h"
#include "engine/engine_metrics.h"
#include "engine/metrics.h"
#include "engine/step_log.h"
#include "exec/executor.h"
#include "sched/measured_step_cost.h"
#include "sched/scheduler.h"

namespace paceline {

// A step that begin_step started.
struct StepStart {
  const StepPlan* plan = nullptr;  // valid until end_step
  // The step's time on the core's clock: what the clock measured around Executor::execute, or,
  // on a clock that execute does not move (the simulator's), the executor's step_time_ns.
  int64_t duration_ns = 0;
};

using OutputSink = std::function<void(const RequestOutput&)>;

class EngineCore {
 public:
  // The executor's report sets the scheduler's KV blocks and block size, and its CUDA-graph sizes
  // when it captured any. Throws paceline::Error for a config the executor was not sized for.
  // The clock and the registry must outlive the core.
  EngineCore(SchedulerConfig config, std::unique_ptr<Executor> executor, const Clock& clock,
             MetricsRegistry* metrics = nullptr);
  ~EngineCore();

  // Records every step from now on, after a header line with `device`, `model` and what the
  // executor reported (KV blocks, block size, element size and type, graph sizes).
  void set_step_log(std::unique_ptr<StepLog> log, const std::string& device,
                    const std::string& model);
  void flush_step_log();

  // Queues a request. Throws paceline::Error when the scheduler refuses it (nothing is queued).
  void add(uint64_t id, std::vector<int32_t> prompt, RequestParams params);
  // Ends a request in any state and frees its KV blocks now: the "abort" output, or nullopt for
  // an unknown or finished id.
  std::optional<RequestOutput> cancel(uint64_t id);

  // Plans the next forward and runs it; nullopt when nothing can run. An executor that throws
  // does not throw here: the step's rows end as aborts at end_step.
  std::optional<StepStart> begin_step();
  // Applies the step in flight and hands every output to `deliver`, in row order, after the
  // metrics have seen the step; the step log counts the hand-off in the step's host time.
  void end_step(const OutputSink& deliver);
  std::vector<RequestOutput> end_step();

  // Forgets every cached KV block no request holds (POST /reset_prefix_cache); returns how many.
  // Only between steps: throws paceline::Error while one is in flight.
  int64_t reset_prefix_cache();

  bool step_in_flight() const { return step_.has_value(); }
  bool has_unfinished() const { return scheduler_->has_unfinished(); }
  const SchedulerConfig& config() const { return scheduler_->config(); }
  const ExecutorCapabilities& capabilities() const { return capabilities_; }
  const Scheduler& scheduler() const { return *scheduler_; }
  Scheduler& scheduler() { return *scheduler_; }
  Executor& executor() { return *executor_; }
  // The fit --max-step-ms bounds prefills with on a real executor; nullptr otherwise.
  const MeasuredStepCost* measured_step_cost() const { return measured_cost_.get(); }

 private:
  struct Step {
    StepPlan plan;
    StepResult result;
    bool failed = false;
    StepTiming timing;
  };
  void end_failed_step(Step& step, const OutputSink& deliver);
  // The request-level metrics of outputs handed out now (a cancel's, a failed step's).
  void observe_outputs(const StepPlan& plan, std::span<const RequestOutput> outputs);
  void log_delayer_stats();

  std::unique_ptr<Executor> executor_;
  const Clock& clock_;
  ExecutorCapabilities capabilities_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<EngineMetrics> metrics_;
  std::unique_ptr<StepLog> step_log_;
  // --max-step-ms on an executor that predicts nothing itself: its measured steps, fitted.
  std::unique_ptr<MeasuredStepCost> measured_cost_;
  std::optional<Step> step_;
  // Time spent in add and cancel since the last step began: the next step's host time.
  int64_t host_ns_ = 0;
};

}  // namespace paceline
