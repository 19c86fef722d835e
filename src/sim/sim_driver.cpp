#include "sim/sim_driver.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/clock.h"
#include "base/error.h"
#include "bench/report_files.h"
#include "bench/virtual_driver.h"
#include "sim/sim_transport.h"

namespace paceline::sim {

namespace fs = std::filesystem;

namespace {

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) fail("{}: cannot write", path.string());
  out << text;
  if (!out) fail("{}: write failed", path.string());
}

// Profiles give the KV element's size only; the type is the usual one of that size.
std::string kv_dtype_of(int64_t element_bytes) {
  switch (element_bytes) {
    case 4:
      return "float32";
    case 2:
      return "bfloat16";
    case 1:
      return "fp8_e4m3";
    default:
      return fmt::format("{} bytes", element_bytes);
  }
}

std::unique_ptr<SimExecutor> make_executor(const SimRunConfig& config, const CostModel& cost,
                                           const StepNoise& noise, const Clock& clock) {
  ExecutorCapabilities x;
  x.kv = {config.scheduler.num_kv_blocks, config.scheduler.block_size};
  x.kv_element_bytes = config.kv_element_bytes;
  x.kv_dtype = kv_dtype_of(config.kv_element_bytes);
  x.num_host_kv_blocks = config.scheduler.num_host_kv_blocks;
  x.tensor_parallel_size = config.tensor_parallel_size;
  auto executor = std::make_unique<SimExecutor>(cost, x, 0, noise, &clock);
  executor->set_transfer_cost(config.kv_block_bytes, config.host_kv_bytes_per_s);
  return executor;
}

// One replica: an engine core and its event adapter. Every replica and the replay share one
// virtual clock; the cores read it, run_virtual moves it.
struct SimEngine {
  SimEngine(const SimRunConfig& config, const CostModel& cost, const StepNoise& noise,
            const VirtualClock& clock, int replica)
      : executor_owned(make_executor(config, cost, noise, clock)),
        executor(*executor_owned),
        core(config.scheduler, std::move(executor_owned), clock, &metrics),
        transport(core, clock, config.prompt),
        oracle(config.scheduler.block_size, config.prompt) {
    // The model_name label `serve` gives every series, so metrics.prom reads like its /metrics.
    if (!config.model.empty()) metrics.set_constant_labels({{"model_name", config.model}});
    if (config.scheduler.kv_policy == KvPolicy::kOracle) {
      core.scheduler().set_next_use_oracle(&oracle);
      transport.set_oracle(&oracle);
    }
    if (!config.step_log.empty()) {
      const std::string path =
          config.replicas > 1 ? replica_path(config.step_log, replica) : config.step_log;
      core.set_step_log(std::make_unique<StepLog>(path), "sim", config.model);
    }
  }

  MetricsRegistry metrics;
  std::unique_ptr<SimExecutor> executor_owned;  // moved into the core
  SimExecutor& executor;
  EngineCore core;
  SimTransport transport;
  TraceNextUseOracle oracle;
};

// The replicas behind their router: what the replayer sends to.
struct SimCluster {
  SimCluster(const SimRunConfig& config, const CostModel& cost, const StepNoise& noise) {
    std::vector<SimTransport*> transports;
    for (int i = 0; i < config.replicas; ++i) {
      engines.push_back(std::make_unique<SimEngine>(config, cost, noise, clock, i));
      transports.push_back(&engines.back()->transport);
    }
    router.emplace(std::move(transports), config.router, config.replica_servers);
  }

  VirtualClock clock;
  std::vector<std::unique_ptr<SimEngine>> engines;
  std::optional<ReplicaRouter> router;
};

}  // namespace

std::string replica_path(const std::string& path, int replica) {
  const fs::path p(path);
  fs::path name = p.stem();
  name += fmt::format(".r{}", replica);
  name += p.extension();
  return (p.parent_path() / name).string();
}

SimTraces load_sim_traces(const std::string& path, const bench::TraceTransform& transform,
                          bool strict) {
  SimTraces t;
  t.path = path;
  t.transform = transform;
  if (!fs::exists(path)) fail("--traces {}: no such file or directory", path);
  if (fs::is_regular_file(path) && fs::path(path).extension() == ".jsonl") {
    t.open_loop = true;
    t.records = bench::transform_records(bench::load_mooncake(path), transform,
                                         bench::kMooncakeBlockSize, &t.stats);
    if (t.records.empty()) fail("{}: no records", path);
  } else {
    t.sessions = bench::transform_sessions(bench::load_agentx(path, strict, &t.skipped), transform,
                                           &t.stats);
    if (t.sessions.empty()) fail("{}: no sessions", path);
  }
  return t;
}

SimRun run_sim(const SimTraces& traces, const SimRunConfig& config, const CostModel& cost) {
  SimRun run;
  run.step_noise = resolve_step_noise(config.step_noise, cost, cost.describe());
  const StepNoise noise = run.step_noise == StepNoiseMode::kReplay
                              ? StepNoise(cost, config.step_noise_seed)
                              : StepNoise();
  if (config.replicas < 1) fail("--replicas must be at least 1 (got {})", config.replicas);
  if (config.replicas > 1 && config.scheduler.kv_policy == KvPolicy::kOracle) {
    fail("--kv-policy oracle needs --replicas 1: the oracle knows the future of one engine");
  }
  SimCluster cluster(config, cost, noise);
  for (ForwardKind kind : {ForwardKind::kPrefill, ForwardKind::kDecode, ForwardKind::kMixed}) {
    run.step_noise_steps[forward_kind_index(kind)] = static_cast<int64_t>(noise.size(kind));
  }
  run.step_noise_offset_s = noise.offset_us() / 1e6;
  ReplicaRouter& router = *cluster.router;
  if (traces.open_loop) {
    bench::ArrivalReplayer replayer(traces.records, config.arrival, router);
    bench::run_virtual(replayer, router, cluster.clock);
    run.records = replayer.log().records();
  } else {
    bench::SessionReplayer replayer(traces.sessions, config.session, router);
    bench::run_virtual(replayer, router, cluster.clock);
    run.records = replayer.log().records();
    run.profiling_start_ns = replayer.profiling_start_ns();
    run.idle_skipped_ns = replayer.idle_skipped_ns();
    run.abort_reason = replayer.abort_reason();
  }
  run.summary = bench::summarize(run.records, config.summary);
  bench::note_skipped_traces(run.summary, traces.skipped);
  if (run.abort_reason) {
    run.summary.valid = false;
    run.summary.invalid_reasons.insert(run.summary.invalid_reasons.begin(), *run.abort_reason);
  }
  if (!traces.transform.identity()) {
    run.summary.warnings.push_back(
        fmt::format("transformed trace ({}): not comparable with full-trace runs",
                    bench::describe_transform(traces.transform)));
  }
  run.router = config.router;
  for (size_t i = 0; i < cluster.engines.size(); ++i) {
    SimEngine& e = *cluster.engines[i];
    run.replicas.push_back({router.routed()[i], e.core.scheduler().stats(), e.executor.stats(),
                            e.metrics.render_prometheus("paceline:")});
    e.core.flush_step_log();
  }
  run.engine = total_engine_stats(run.replicas);
  run.executor = total_executor_stats(run.replicas);
  run.end_ns = cluster.clock.now_ns();
  run.metrics = run.replicas.front().metrics;
  return run;
}

nlohmann::json sim_engine_json(const SimRun& run) {
  const SchedulerStats& e = run.engine;
  const SimExecutorStats& x = run.executor;
  const double end_s = static_cast<double>(run.end_ns) / 1e9;
  nlohmann::json j = {
      {"virtual_end_s", end_s},
      {"idle_skipped_s", static_cast<double>(run.idle_skipped_ns) / 1e9},
      {"steps", x.steps},
      {"extrapolated_steps", x.extrapolated_steps},
      {"prefill_steps", e.prefill_steps},
      {"decode_steps", e.decode_steps},
      {"mixed_steps", e.mixed_steps},
      {"busy_s", static_cast<double>(x.busy_ns) / 1e9},
      {"prefill_busy_s", static_cast<double>(x.prefill_busy_ns) / 1e9},
      {"decode_busy_s", static_cast<double>(x.decode_busy_ns) / 1e9},
      {"mixed_busy_s", static_cast<double>(x.mixed_busy_ns) / 1e9},
      {"step_noise",
       {{"mode", step_noise_mode_name(run.step_noise)},
        {"logged_steps", {{"prefill", run.step_noise_steps[0]},
                          {"decode", run.step_noise_steps[1]},
                          {"mixed", run.step_noise_steps[2]}}},
        {"offset_s", run.step_noise_offset_s},
        {"added_s", static_cast<double>(x.noise_ns) / 1e9}}},
      {"num_kv_blocks", e.num_kv_blocks},
      {"prompt_tokens", e.prompt_tokens},
      {"prefill_tokens", e.prefill_tokens},
      {"generation_tokens", e.generation_tokens},
      {"prefix_cache_queries", e.prefix_cache_queries},
      {"prefix_cache_hits", e.prefix_cache_hits},
      {"prefix_cache_host_hits", e.prefix_cache_host_hits},
      {"num_host_kv_blocks", e.num_host_kv_blocks},
      {"host_kv_cached_blocks", e.num_host_kv_cached},
      {"kv_stored_blocks", e.kv_stored_blocks},
      {"kv_loaded_blocks", e.kv_loaded_blocks},
      {"kv_load_failures", e.kv_load_failures},
      {"kv_transfer_s", static_cast<double>(x.transfer_ns) / 1e9},
      {"preemptions", e.preemptions},
      {"finished_abort", e.finished_abort},
      {"abort_reason", run.abort_reason ? nlohmann::json(*run.abort_reason) : nlohmann::json()},
  };
  if (e.delayer) {
    const PrefillDelayerCounters& d = *e.delayer;
    j["delayer"] = {{"decisions", d.decisions},
                    {"hold", d.hold},
                    {"hold_decode_interval", d.hold_decode_interval},
                    {"hold_rate", d.hold_rate()},
                    {"fire_first", d.fire_first},
                    {"fire_vacuous", d.fire_vacuous},
                    {"fire_nodecode", d.fire_nodecode},
                    {"fire_kv", d.fire_kv},
                    {"fire_queue_ms", d.fire_queue_ms},
                    {"fire_ttft", d.fire_ttft},
                    {"fire_partial", d.fire_partial},
                    {"fire_fill", d.fire_fill},
                    {"fire_stall", d.fire_stall}};
  } else {
    j["delayer"] = nullptr;
  }
  if (run.replicas.size() > 1) {
    j["router"] = router_kind_name(run.router);
    j["replicas"] = replicas_json(run.replicas, run.end_ns);
  }
  return j;
}

void write_sim_files(const std::string& dir, const SimRun& run, const nlohmann::json& settings,
                     const nlohmann::json& simulator) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail("{}: cannot create the output directory: {}", dir, ec.message());
  std::ostringstream jsonl;
  bench::write_records_jsonl(jsonl, run.records);
  write_file(fs::path(dir) / "records.jsonl", jsonl.str());
  nlohmann::json summary = bench::summary_to_json(run.summary, settings);
  summary["simulated"] = true;
  summary["hold_rate"] =
      run.engine.delayer ? nlohmann::json(run.engine.delayer->hold_rate()) : nlohmann::json();
  summary["simulator"] = simulator;
  write_file(fs::path(dir) / "summary.json", summary.dump(2) + "\n");
  std::ostringstream csv;
  bench::write_summary_csv(csv, run.summary);
  write_file(fs::path(dir) / "summary.csv", csv.str());
  if (run.replicas.size() <= 1) {
    write_file(fs::path(dir) / "metrics.prom", run.metrics);
  } else {
    for (size_t i = 0; i < run.replicas.size(); ++i) {
      write_file(replica_path((fs::path(dir) / "metrics.prom").string(), static_cast<int>(i)),
                 run.replicas[i].metrics);
    }
  }
}

}  // namespace paceline::sim
