#pragma once
// One simulated benchmark run: the traces replayed by the benchmark's own replayer against
// paceline's own scheduler, with a cost model for the clock. Closed-loop AgentX sessions or
// open-loop Mooncake arrivals, exactly as `paceline bench` replays them; no wall clock is read, so
// the same inputs give the same records to the nanosecond.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/agentx_trace.h"
#include "bench/arrival_replayer.h"
#include "bench/mooncake_trace.h"
#include "bench/record.h"
#include "bench/session_replayer.h"
#include "bench/summary.h"
#include "bench/token_prompt.h"
#include "bench/trace_transform.h"
#include "sched/scheduler.h"
#include "sim/cost_model.h"
#include "sim/replica_router.h"
#include "sim/replica_stats.h"
#include "sim/sim_executor.h"
#include "sim/step_noise.h"

namespace paceline::sim {

// The traces of a run: AgentX sessions (closed loop) or Mooncake records (open loop).
struct SimTraces {
  std::string path;
  bool open_loop = false;
  std::vector<bench::AgentxSession> sessions;
  std::vector<bench::MooncakeRecord> records;
  bench::TraceTransform transform;  // what --isl-scale, --osl-scale and --max-isl did
  bench::TransformStats stats;
  std::vector<bench::TraceSkip> skipped;  // AgentX files the reader left out
};

// A .jsonl file is Mooncake; anything else an AgentX session file or a directory of them. The
// transform shrinks the trace as `paceline bench` does. Unusable AgentX files are skipped, as in
// bench, unless `strict`.
SimTraces load_sim_traces(const std::string& path, const bench::TraceTransform& transform = {},
                          bool strict = false);

struct SimRunConfig {
  SchedulerConfig scheduler;           // num_kv_blocks and block_size filled in
  int64_t kv_element_bytes = 2;        // the profile's, as the simulated executor reports it
  int64_t kv_block_bytes = 0;          // one KV block (all layers, K and V) of one GPU: what a
                                       // copy stream moves (a TP-N replica's N copy at once)
  int tensor_parallel_size = 1;        // GPUs a replica spans, for the step log's header
  double host_kv_bytes_per_s = 46e9;   // the host tier's copy bandwidth, each direction
  std::string model;                   // the model's name, for the step log's header
  std::string step_log;                // a path: the core records every step there
  // Engines behind the router, each with the scheduler's KV cache (replica_router.h). With more
  // than one, each replica's step log goes to step_log with ".rK" before its extension.
  int replicas = 1;
  RouterKind router = RouterKind::kSession;
  // The replicas' names in nginx's upstream, for the session rule's ring; empty: those of
  // scripts/serve_replicas on its default port.
  std::vector<std::string> replica_servers;
  bench::SessionReplayConfig session;  // closed loop
  bench::ArrivalReplayConfig arrival;  // open loop
  bench::TokenPromptConfig prompt;
  bench::SummaryOptions summary;
  // Step-time variation (step_noise.h): auto replays a step-log profile's series, none keeps the
  // cost model's means. The seed picks where on the record's clock the replay starts.
  StepNoiseMode step_noise = StepNoiseMode::kNone;
  uint64_t step_noise_seed = 0;
};

struct SimRun {
  std::vector<bench::RequestRecord> records;
  bench::Summary summary;
  SchedulerStats engine;       // over every replica (replica_stats.h)
  SimExecutorStats executor;   // over every replica
  std::vector<ReplicaStats> replicas;
  RouterKind router = RouterKind::kSession;
  StepNoiseMode step_noise = StepNoiseMode::kNone;  // as resolved: none or replay
  int64_t step_noise_steps[kNumForwardKinds] = {};  // logged steps replayed, per kind
  double step_noise_offset_s = 0;            // where on the record's clock the run started
  int64_t end_ns = 0;  // virtual time when the replay finished
  std::optional<int64_t> profiling_start_ns;
  int64_t idle_skipped_ns = 0;
  std::optional<std::string> abort_reason;
  std::string metrics;  // replica 0's /metrics (Prometheus text) when the replay ended
};

// "steps.jsonl" -> "steps.r1.jsonl": replica k's file of a path.
std::string replica_path(const std::string& path, int replica);

// Throws paceline::Error for --step-noise replay with a cost model that has no step-time series,
// fewer than one replica, or the oracle's eviction with several (it knows one engine's future).
SimRun run_sim(const SimTraces& traces, const SimRunConfig& config, const CostModel& cost);

// The engine's side of the run for the summary: steps, busy time, KV, prefix cache, preemptions
// and the delayer's counters, over every replica; with several, `router` and `replicas` (each
// one's figures) too.
nlohmann::json sim_engine_json(const SimRun& run);

// records.jsonl, summary.json and summary.csv in `dir`, as `paceline bench` writes them; the
// summary says "simulated": true and carries `simulator` (profile, engine counters). metrics.prom:
// the engine's metrics at the end, as `serve` would have answered GET /metrics; with several
// replicas, metrics.rK.prom for each instead (one server's metrics each, as each would answer).
void write_sim_files(const std::string& dir, const SimRun& run, const nlohmann::json& settings,
                     const nlohmann::json& simulator);

}  // namespace paceline::sim
