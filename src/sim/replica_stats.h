#pragma once
// What each simulated replica did, and the run's totals over them: the engine's counters add up
// (steps, tokens, prefix-cache queries and hits, busy time), the gauges too (KV blocks: the
// replicas' caches side by side).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sched/scheduler.h"
#include "sim/sim_executor.h"

namespace paceline::sim {

struct ReplicaStats {
  int64_t routed = 0;  // requests the router sent it
  SchedulerStats engine;
  SimExecutorStats executor;
  std::string metrics;  // its /metrics (Prometheus text) at the end
};

SchedulerStats total_engine_stats(const std::vector<ReplicaStats>& replicas);
SimExecutorStats total_executor_stats(const std::vector<ReplicaStats>& replicas);

// Per replica: requests routed, prefix-cache hit (of the prompt tokens it was queried for),
// steps, busy time and its share of the run, preemptions, KV blocks.
nlohmann::json replicas_json(const std::vector<ReplicaStats>& replicas, int64_t end_ns);

}  // namespace paceline::sim
