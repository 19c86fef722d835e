#pragma once
// The engine's series in the metrics registry, updated once per step from the scheduler's stats
// (cumulative counts become counter increments) and from the plan and its measured time. Each
// series is looked up in the registry once and kept: on_step runs every step, and the simulator
// runs hundreds of thousands of them.
#include <array>
#include <cstdint>
#include <optional>

#include "engine/metrics.h"
#include "sched/scheduler.h"

namespace paceline {

class EngineMetrics {
 public:
  explicit EngineMetrics(MetricsRegistry& registry);
  void on_step(const StepPlan& plan, const StepResult& result, const SchedulerStats& stats);
  // The gauges alone (running, waiting, KV use and size, the host tier), from the scheduler's
  // state now: at startup, after an add, and when a step is planned, so that they read true
  // during a long forward instead of what the last finished step left.
  void on_state(const SchedulerStats& stats);
  void on_first_scheduled(double queue_seconds);
  void on_finished(const Usage& usage);

 private:
  // The delayer's series, registered with the first stats that have a delayer.
  struct DelayerSeries {
    explicit DelayerSeries(MetricsRegistry& reg);
    Counter *first, *vacuous, *nodecode, *kv, *queue_ms, *ttft, *partial, *fill, *stall;
    Counter *hold, *hold_decode_interval;
    Gauge* hold_rate;
  };
  // A forward kind's histograms, registered with its first step.
  struct StepSeries {
    Histogram *time, *batch, *tokens;
  };
  void on_delayer(const PrefillDelayerCounters& now);
  StepSeries& step_series(ForwardKind kind);

  MetricsRegistry& reg_;
  SchedulerStats last_;
  Gauge *running_, *waiting_, *kv_usage_, *kv_blocks_;
  Counter *queries_, *hits_, *prompt_tokens_, *generation_tokens_, *preemptions_;
  // The host KV tier (--kv-offloading-size): hits served from it, blocks copied each way.
  Counter *host_hits_, *stored_blocks_, *loaded_blocks_;
  Gauge *host_blocks_, *host_usage_;
  Counter *finished_stop_, *finished_length_, *finished_abort_;
  Histogram* queue_time_ = nullptr;
  Histogram* prompt_len_ = nullptr;
  std::optional<DelayerSeries> delayer_;
  std::array<std::optional<StepSeries>, kNumForwardKinds> steps_;
};

}  // namespace paceline
