#include "engine/engine_core.h"

#include <utility>

#include "base/error.h"
#include "base/log.h"

namespace paceline {

namespace {

// The scheduler's config as the executor built it: its KV cache, and the decode batch sizes it
// captured graphs for, so that every padded batch the scheduler plans has its graph.
SchedulerConfig sized_for(SchedulerConfig config, const ExecutorCapabilities& x) {
  config.num_kv_blocks = x.kv.num_blocks;
  config.num_host_kv_blocks = x.num_host_kv_blocks;
  config.block_size = x.kv.block_size;
  if (!x.graph_sizes.empty()) config.cudagraph_capture_sizes = x.graph_sizes;
  if (x.max_num_batched_tokens > 0 && config.max_num_batched_tokens > x.max_num_batched_tokens) {
    fail("--max-num-batched-tokens {}: the executor's activations were sized for {} tokens",
         config.max_num_batched_tokens, x.max_num_batched_tokens);
  }
  return config;
}

// The same rows, no tokens: what update() needs to retire a step whose rows were all cancelled.
StepResult empty_result(const StepPlan& plan) {
  StepResult r;
  r.step_id = plan.step_id;
  for (const ScheduledSeq& s : plan.seqs) r.seqs.push_back({s.request_id, {}});
  return r;
}

}  // namespace

EngineCore::EngineCore(SchedulerConfig config, std::unique_ptr<Executor> executor,
                       const Clock& clock, MetricsRegistry* metrics)
    : executor_(std::move(executor)), clock_(clock), capabilities_(executor_->capabilities()) {
  scheduler_ = std::make_unique<Scheduler>(sized_for(std::move(config), capabilities_), clock_);
  if (scheduler_->config().max_step_ms > 0) {
    const StepCostModel* cost = executor_->step_cost_model();
    if (cost == nullptr) {
      measured_cost_ = std::make_unique<MeasuredStepCost>();
      cost = measured_cost_.get();
    }
    scheduler_->set_step_cost(cost);
  }
  if (metrics) {
    const SchedulerConfig& c = scheduler_->config();
    metrics_ = std::make_unique<EngineMetrics>(
        *metrics, EngineMetricsShape{c.max_model_len, scheduler_->delayer() != nullptr,
                                     c.speculative.speculative_tokens});
    metrics_->on_state(scheduler_->stats());  // kv_cache_blocks from the start
  }
}

EngineCore::~EngineCore() {
  flush_step_log();
}

void EngineCore::set_step_log(std::unique_ptr<StepLog> log, const std::string& device,
                              const std::string& model) {
  step_log_ = std::move(log);
  if (step_log_) step_log_->header(step_log_header(device, model, capabilities_));
}

void EngineCore::flush_step_log() {
  if (step_log_) step_log_->flush();
}

void EngineCore::add(uint64_t id, std::vector<int32_t> prompt, RequestParams params) {
  const int64_t t0 = clock_.now_ns();
  const int64_t max_tokens = params.max_tokens;
  scheduler_->add_request(id, std::move(prompt), std::move(params));
  if (metrics_) {
    metrics_->on_added(id, max_tokens);
    metrics_->on_state(scheduler_->stats());
  }
  host_ns_ += clock_.now_ns() - t0;
}

int64_t EngineCore::reset_prefix_cache() {
  // The step in flight may be about to publish or load blocks it planned against the cache.
  if (step_) fail("reset_prefix_cache: a step is in flight; reset between steps");
  const int64_t dropped = scheduler_->reset_prefix_cache();
  spdlog::debug("prefix cache reset: {} cached blocks dropped", dropped);
  return dropped;
}

std::optional<RequestOutput> EngineCore::cancel(uint64_t id) {
  const int64_t t0 = clock_.now_ns();
  std::optional<RequestOutput> out = scheduler_->cancel(id);
  if (out) {
    observe_outputs(StepPlan{}, std::span(&*out, 1));
    // The gauges after the freed blocks, without waiting for a step.
    if (metrics_) metrics_->on_step(StepPlan{}, StepResult{}, scheduler_->stats());
  }
  host_ns_ += clock_.now_ns() - t0;
  return out;
}

std::optional<StepStart> EngineCore::begin_step() {
  if (step_) fail("begin_step() while step {} is in flight", step_->plan.step_id);
  const int64_t t0 = clock_.now_ns();
  StepPlan plan = scheduler_->schedule();
  if (plan.seqs.empty()) return std::nullopt;
  // The gauges as planned (rows running, their KV allocated) while the forward runs.
  if (metrics_) metrics_->on_state(scheduler_->stats());
  Step& step = step_.emplace();
  step.plan = std::move(plan);
  const int64_t t1 = clock_.now_ns();
  try {
    step.result = executor_->execute(step.plan);
  } catch (const std::exception& e) {
    spdlog::error("executor failed on step {}: {}", step.plan.step_id, e.what());
    step.failed = true;
  }
  const int64_t t2 = clock_.now_ns();
  const int64_t duration = t2 > t1 || step.failed ? t2 - t1 : step.result.step_time_ns;
  step.timing = {t1, duration, host_ns_ + (t1 - t0)};
  host_ns_ = 0;
  return StepStart{&step.plan, duration};
}

void EngineCore::end_step(const OutputSink& deliver) {
  if (!step_) fail("end_step() with no step in flight");
  Step step = std::move(*step_);
  step_.reset();
  if (step.failed) {
    end_failed_step(step, deliver);
    return;
  }
  const int64_t t0 = clock_.now_ns();
  // A step whose loads failed ran no forward (the scheduler plans it again): its time is no
  // forward's, for the fit or the step log.
  const bool ran = step.result.failed_loads.empty();
  if (!ran) {
    spdlog::warn(
        "step {}: {} KV block loads from the host tier failed; their tokens are "
        "recomputed",
        step.plan.step_id, step.result.failed_loads.size());
  }
  // The step's measured time, before update() moves the requests on.
  if (measured_cost_ && ran) measured_cost_->observe(step_work(step.plan), step.timing.execute_ns);
  std::vector<RequestOutput> outputs = scheduler_->update(step.plan, step.result);
  // Metrics first, so whoever sees a request finish also sees the gauges after its step, and
  // its latencies.
  if (metrics_) metrics_->on_step(step.plan, step.result, scheduler_->stats());
  observe_outputs(step.plan, outputs);
  for (const RequestOutput& out : outputs) deliver(out);
  log_delayer_stats();
  if (step_log_ && ran) {
    step.timing.host_ns += clock_.now_ns() - t0;
    step_log_->record(step.plan, step.timing);
  }
}

std::vector<RequestOutput> EngineCore::end_step() {
  std::vector<RequestOutput> outputs;
  end_step([&](const RequestOutput& out) { outputs.push_back(out); });
  return outputs;
}

// Every row still running ends as an abort; update() then retires the step (its rows are all
// gone), so the scheduler plans again. The delayer counts it as a prefill that ran, as it did
// take the device's time.
void EngineCore::end_failed_step(Step& step, const OutputSink& deliver) {
  for (const ScheduledSeq& s : step.plan.seqs) {
    if (auto out = scheduler_->cancel(s.request_id)) {
      observe_outputs(StepPlan{}, std::span(&*out, 1));
      deliver(*out);
    }
  }
  scheduler_->update(step.plan, empty_result(step.plan));
  if (metrics_) metrics_->on_step(StepPlan{}, StepResult{}, scheduler_->stats());
}

// On the core's clock, when the outputs are handed out: the end of the step that made them on
// either clock (the simulator calls end_step at the step's predicted end).
void EngineCore::observe_outputs(const StepPlan& plan, std::span<const RequestOutput> outputs) {
  if (metrics_) metrics_->on_outputs(plan, outputs, clock_.now_ns());
}

void EngineCore::log_delayer_stats() {
  auto* d = scheduler_->delayer();
  if (!d) return;
  if (auto line = d->stats_line_if_due()) spdlog::info("{}", *line);
}

}  // namespace paceline
