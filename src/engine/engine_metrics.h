#pragma once
// The engine's series in the metrics registry, updated once per step from the scheduler's stats
// (cumulative counts become counter increments) and from the plan and its measured time.
#include <cstdint>
#include <optional>

#include "engine/metrics.h"
#include "sched/scheduler.h"

namespace paceline {

class EngineMetrics {
 public:
  explicit EngineMetrics(MetricsRegistry& registry);
  void on_step(const StepPlan& plan, const StepResult& result, const SchedulerStats& stats);
  void on_first_scheduled(double queue_seconds);
  void on_finished(const Usage& usage);

 private:
  MetricsRegistry& reg_;
  SchedulerStats last_;
};

}  // namespace paceline
