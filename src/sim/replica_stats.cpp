#include "sim/replica_stats.h"

namespace paceline::sim {

namespace {

void add(PrefillDelayerCounters& t, const PrefillDelayerCounters& d) {
  t.decisions += d.decisions;
  t.fire_first += d.fire_first;
  t.fire_vacuous += d.fire_vacuous;
  t.fire_nodecode += d.fire_nodecode;
  t.fire_kv += d.fire_kv;
  t.fire_queue_ms += d.fire_queue_ms;
  t.fire_ttft += d.fire_ttft;
  t.fire_partial += d.fire_partial;
  t.fire_fill += d.fire_fill;
  t.fire_stall += d.fire_stall;
  t.hold += d.hold;
  t.hold_decode_interval += d.hold_decode_interval;
}

}  // namespace

SchedulerStats total_engine_stats(const std::vector<ReplicaStats>& replicas) {
  if (replicas.size() == 1) return replicas.front().engine;
  SchedulerStats t;
  int64_t used_blocks = 0;
  for (const ReplicaStats& r : replicas) {
    const SchedulerStats& e = r.engine;
    t.num_running += e.num_running;
    t.num_waiting += e.num_waiting;
    t.num_kv_blocks += e.num_kv_blocks;
    t.num_free_kv_blocks += e.num_free_kv_blocks;
    used_blocks += e.num_kv_blocks - e.num_free_kv_blocks;
    t.prefix_cache_queries += e.prefix_cache_queries;
    t.prefix_cache_hits += e.prefix_cache_hits;
    t.prefix_cache_host_hits += e.prefix_cache_host_hits;
    t.kv_stored_blocks += e.kv_stored_blocks;
    t.kv_loaded_blocks += e.kv_loaded_blocks;
    t.kv_load_failures += e.kv_load_failures;
    t.num_host_kv_blocks += e.num_host_kv_blocks;
    t.num_host_kv_cached += e.num_host_kv_cached;
    t.prompt_tokens += e.prompt_tokens;
    t.prefill_tokens += e.prefill_tokens;
    t.generation_tokens += e.generation_tokens;
    t.preemptions += e.preemptions;
    t.finished_stop += e.finished_stop;
    t.finished_length += e.finished_length;
    t.finished_abort += e.finished_abort;
    t.prefill_steps += e.prefill_steps;
    t.decode_steps += e.decode_steps;
    t.mixed_steps += e.mixed_steps;
    if (e.delayer) {
      if (!t.delayer) t.delayer.emplace();
      add(*t.delayer, *e.delayer);
    }
  }
  t.kv_usage = t.num_kv_blocks ? static_cast<double>(used_blocks) / t.num_kv_blocks : 0.0;
  return t;
}

SimExecutorStats total_executor_stats(const std::vector<ReplicaStats>& replicas) {
  SimExecutorStats t;
  for (const ReplicaStats& r : replicas) {
    const SimExecutorStats& x = r.executor;
    t.steps += x.steps;
    t.busy_ns += x.busy_ns;
    t.prefill_busy_ns += x.prefill_busy_ns;
    t.decode_busy_ns += x.decode_busy_ns;
    t.mixed_busy_ns += x.mixed_busy_ns;
    t.extrapolated_steps += x.extrapolated_steps;
    t.noise_ns += x.noise_ns;
    t.transfer_ns += x.transfer_ns;
  }
  return t;
}

nlohmann::json replicas_json(const std::vector<ReplicaStats>& replicas, int64_t end_ns) {
  nlohmann::json list = nlohmann::json::array();
  for (size_t i = 0; i < replicas.size(); ++i) {
    const ReplicaStats& r = replicas[i];
    const SchedulerStats& e = r.engine;
    const double hit = e.prefix_cache_queries
                           ? static_cast<double>(e.prefix_cache_hits) / e.prefix_cache_queries
                           : 0.0;
    list.push_back({
        {"replica", i},
        {"requests", r.routed},
        {"prefix_cache_queries", e.prefix_cache_queries},
        {"prefix_cache_hits", e.prefix_cache_hits},
        {"prefix_cache_hit", hit},
        {"prefill_tokens", e.prefill_tokens},
        {"generation_tokens", e.generation_tokens},
        {"steps", r.executor.steps},
        {"busy_s", static_cast<double>(r.executor.busy_ns) / 1e9},
        {"busy_fraction",
         end_ns > 0 ? static_cast<double>(r.executor.busy_ns) / static_cast<double>(end_ns) : 0.0},
        {"preemptions", e.preemptions},
        {"num_kv_blocks", e.num_kv_blocks},
    });
  }
  return list;
}

}  // namespace paceline::sim
