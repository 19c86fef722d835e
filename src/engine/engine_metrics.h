#pragma once
// The engine's series in the metrics registry, updated once per step from the scheduler's stats
// (cumulative counts become counter increments) and from the plan and its measured time. Each
// series is looked up in the registry once and kept: on_step runs every step, and the simulator
// runs hundreds of thousands of them.
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/metrics.h"
#include "engine/request_metrics.h"
#include "sched/scheduler.h"

namespace paceline {

// What decides which series exist: every one of them is registered (at zero) from the start, so a
// scrape before the first request sees the whole set.
struct EngineMetricsShape {
  int64_t max_model_len = 0;
  bool delayer = false;            // the prefill delayer's series
  int32_t speculative_tokens = 0;  // > 0: the speculative-decoding counters, per position too
};

class EngineMetrics {
 public:
  EngineMetrics(MetricsRegistry& registry, const EngineMetricsShape& shape);
  void on_step(const StepPlan& plan, const StepResult& result, const SchedulerStats& stats);
  // The gauges alone (running, waiting, KV use and size, the host tier), from the scheduler's
  // state now: at startup, after an add, and when a step is planned, so that they read true
  // during a long forward instead of what the last finished step left.
  void on_state(const SchedulerStats& stats);
  void on_added(uint64_t id, int64_t max_tokens) { requests_.on_added(id, max_tokens); }
  // The outputs of `plan` (or of a cancel, with an empty plan), handed out at `now_ns`.
  void on_outputs(const StepPlan& plan, std::span<const RequestOutput> outputs, int64_t now_ns);

 private:
  // The delayer's series, when the scheduler has a delayer.
  struct DelayerSeries {
    explicit DelayerSeries(MetricsRegistry& reg);
    Counter *first, *vacuous, *nodecode, *kv, *queue_ms, *ttft, *partial, *fill, *stall;
    Counter *hold, *hold_decode_interval;
    Gauge* hold_rate;
  };
  // A forward kind's histograms.
  struct StepSeries {
    Histogram *time, *batch, *tokens;
  };
  // vLLM's speculative-decoding counters: verify rows, their draft tokens, the drafts accepted
  // (tokens committed beyond the bonus one), and accepted drafts by position.
  struct SpecSeries {
    SpecSeries(MetricsRegistry& reg, int32_t speculative_tokens);
    Counter *drafts, *draft_tokens, *accepted;
    std::vector<Counter*> accepted_per_pos;
  };
  void on_delayer(const PrefillDelayerCounters& now);
  void on_spec(const StepPlan& plan, std::span<const RequestOutput> outputs);

  MetricsRegistry& reg_;
  SchedulerStats last_;
  Gauge *running_, *waiting_, *kv_usage_, *kv_blocks_;
  Counter *queries_, *hits_, *prompt_tokens_, *generation_tokens_, *preemptions_;
  // The host KV tier (--kv-offloading-size): hits served from it, blocks copied each way.
  Counter *host_hits_, *stored_blocks_, *loaded_blocks_, *load_failures_;
  Counter* fp8_clamped_;
  Gauge *host_blocks_, *host_usage_;
  Counter *finished_stop_, *finished_length_, *finished_abort_;
  RequestMetrics requests_;
  std::optional<DelayerSeries> delayer_;
  std::optional<SpecSeries> spec_;
  std::array<StepSeries, kNumForwardKinds> steps_;
};

}  // namespace paceline
