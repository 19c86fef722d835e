#include "cli/sim.h"
#include "cli/replay_options.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "base/error.h"
#include "base/log.h"
#include "bench/report_files.h"
#include "bench/report_html.h"
#include "bench/session_sampler.h"
#include "bench/sweep_manifest.h"
#include "cli/model_options.h"
#include "model/config.h"
#include "model/tensor_parallel_shape.h"
#include "sim/consistent_hash_ring.h"
#include "sim/sim_driver.h"
#include "sim/sim_profile.h"
#include "sim/step_noise.h"

namespace paceline {

namespace {

// Everything a run needs that does not depend on the concurrency.
struct SimSetup {
  sim::StepNoiseMode step_noise = sim::StepNoiseMode::kNone;  // resolved: none or replay
  sim::RouterKind router = sim::RouterKind::kSession;
  std::vector<std::string> replica_servers;
  ModelConfig model;
  sim::SimProfile profile;
  ResolvedEngineConfig engine;
  int64_t kv_cache_bytes = 0;
  int64_t kv_block_bytes = 0;
  sim::SimTraces traces;
};

// --replica-servers, one name per replica; its default: scripts/serve_replicas's names.
std::vector<std::string> replica_servers(const SimOptions& o) {
  if (o.replicas < 1) fail("--replicas must be at least 1 (got {})", o.replicas);
  if (o.replica_servers.empty()) return sim::serve_replicas_servers(o.replicas);
  std::vector<std::string> names;
  size_t from = 0;
  for (;;) {
    const size_t comma = o.replica_servers.find(',', from);
    names.push_back(o.replica_servers.substr(from, comma - from));
    if (names.back().empty()) fail("--replica-servers '{}': an empty name", o.replica_servers);
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  if (static_cast<int>(names.size()) != o.replicas) {
    fail("--replica-servers names {} servers for --replicas {}", names.size(), o.replicas);
  }
  return names;
}

// --show-routes: where nginx's consistent hash sends each session id of the file.
int show_routes(const SimOptions& o) {
  const std::vector<std::string> servers = replica_servers(o);
  const sim::ConsistentHashRing ring(servers);
  std::FILE* in = std::fopen(o.show_routes.c_str(), "r");
  if (in == nullptr) fail("--show-routes: cannot read '{}'", o.show_routes);
  char line[4096];
  while (std::fgets(line, sizeof(line), in) != nullptr) {
    std::string key(line);
    while (!key.empty() && (key.back() == '\n' || key.back() == '\r')) key.pop_back();
    if (key.empty()) continue;
    std::printf("%s %s\n", key.c_str(), servers[static_cast<size_t>(ring.server_of(key))].c_str());
  }
  std::fclose(in);
  return 0;
}

}  // namespace

int sim_gpus_per_replica(const SimOptions& o) {
  const int tp = o.tensor_parallel_size;
  if (tp < 1) fail("--tensor-parallel-size must be at least 1 (got {})", tp);
  if (!o.replay.gpus_given) return tp;
  if ((o.tensor_parallel_given || tp > 1) && o.replay.gpus != tp) {
    fail("--gpus {} contradicts --tensor-parallel-size {}: a replica of tensor-parallel size {} "
         "runs on {} GPUs (leave --gpus out, or give --gpus {})",
         o.replay.gpus, tp, tp, tp, tp);
  }
  return o.replay.gpus;
}

namespace {

SimSetup prepare(const SimOptions& o) {
  if (o.block_size < 1 || o.block_size > 1024) {
    fail("--block-size: {} is out of range 1..1024", o.block_size);
  }
  const int tp = o.tensor_parallel_size;
  sim_gpus_per_replica(o);  // refuses --gpus that contradicts -tp before anything is read
  SimSetup s;
  const std::optional<sim::RouterKind> router = sim::router_kind_from_name(o.router);
  if (!router) fail("--router: '{}' is not one of session, round-robin, least-loaded", o.router);
  s.router = *router;
  s.replica_servers = replica_servers(o);
  if (s.router == sim::RouterKind::kSession && o.replicas > 1) {
    const std::vector<double> shares = sim::ConsistentHashRing(s.replica_servers).shares();
    std::string line;
    for (size_t i = 0; i < shares.size(); ++i) {
      line += fmt::format("{}{} {:.1f}%", i ? ", " : "", s.replica_servers[i], 100 * shares[i]);
    }
    spdlog::info("sim: the session ring (nginx's hash consistent, 160 points a server): {}", line);
  }
  s.model = model_config_load(o.model);
  tensor_parallel_shape(s.model, tp);  // the CPU executor's refusal, word for word
  const int64_t kv_element_bytes = o.kv_cache_dtype == "fp8"    ? 1
                                   : o.kv_cache_dtype == "bf16" ? 2
                                                                : 0;
  s.profile = sim::load_sim_profile(o.profile, s.model, o.gpu_memory_utilization,
                                    kv_element_bytes, tp);
  const std::optional<sim::StepNoiseMode> noise = sim::step_noise_mode_from_name(o.step_noise);
  if (!noise) fail("--step-noise: '{}' is not one of auto, none, replay", o.step_noise);
  s.step_noise = sim::resolve_step_noise(*noise, *s.profile.cost, o.profile);
  // --kv-cache-memory is one GPU's, as vLLM's --kv-cache-memory-bytes: a TP-N replica has N.
  s.kv_cache_bytes = o.kv_cache_memory.empty()
                         ? s.profile.kv_cache_bytes
                         : parse_byte_size(o.kv_cache_memory, "--kv-cache-memory") * tp;
  if (s.kv_cache_bytes <= 0)
    fail("--profile {} names no KV memory: pass --kv-cache-memory", o.profile);
  s.engine = resolve_engine_options(o.engine, s.model.max_position_embeddings, o.seed,
                                    /*allow_oracle=*/true);
  SchedulerConfig& sc = s.engine.scheduler;
  const int64_t block_bytes = s.model.kv_bytes_per_token(s.profile.kv_element_bytes) * o.block_size;
  sc.block_size = o.block_size;
  sc.num_kv_blocks = s.kv_cache_bytes / block_bytes;
  if (sc.num_kv_blocks < 1) {
    fail("--kv-cache-memory: {} bytes hold no KV block of {} bytes", s.kv_cache_bytes, block_bytes);
  }
  if (!(o.kv_offloading_size >= 0)) {
    fail("--kv-offloading-size must be 0 or more GiB (got {})", o.kv_offloading_size);
  }
  if (!(o.host_kv_bandwidth > 0)) {
    fail("--host-kv-bandwidth must be more than 0 GB/s (got {})", o.host_kv_bandwidth);
  }
  // The simulated host's memory, not this machine's: no availability check.
  sc.num_host_kv_blocks = static_cast<int64_t>(o.kv_offloading_size * 1073741824.0) / block_bytes;
  if (o.kv_offloading_size > 0 && sc.num_host_kv_blocks < 1) {
    fail("--kv-offloading-size {} GiB holds no KV block of {} bytes", o.kv_offloading_size,
         block_bytes);
  }
  // What one host<->GPU copy stream moves per block: each GPU copies its KV/N heads of it over
  // its own link, the N at once.
  s.kv_block_bytes = block_bytes / tp;
  if (s.step_noise == sim::StepNoiseMode::kReplay) {
    spdlog::info("sim: step noise: replaying the profile's measured/predicted step times on the "
                 "virtual clock (--step-noise none for the means)");
  }
  spdlog::info("sim: {} with {}: {} KV blocks of {} tokens ({:.2f} GB), max_model_len {}",
               s.model.name, s.profile.cost->describe(), sc.num_kv_blocks, sc.block_size,
               static_cast<double>(s.kv_cache_bytes) / 1e9, sc.max_model_len);
  if (sc.delayer.active()) {
    spdlog::info("{}", PrefillDelayer(sc.delayer).describe(s.engine.delayer_sources));
  }
  const bench::TraceTransform transform = o.replay.transform();
  s.traces = sim::load_sim_traces(o.replay.traces, transform, o.replay.strict);
  if (!transform.identity()) {
    spdlog::warn(
        "sim: transformed trace ({}): {} of {} requests kept; not comparable with "
        "full-trace runs",
        bench::describe_transform(transform), s.traces.stats.requests_kept,
        s.traces.stats.requests_in);
  }
  return s;
}

sim::SimRunConfig run_config(const SimOptions& o, const SimSetup& s, int concurrency) {
  sim::SimRunConfig c;
  c.scheduler = s.engine.scheduler;
  c.kv_element_bytes = s.profile.kv_element_bytes;
  c.kv_block_bytes = s.kv_block_bytes;
  c.tensor_parallel_size = o.tensor_parallel_size;
  c.host_kv_bytes_per_s = o.host_kv_bandwidth * 1e9;
  c.model = s.model.name;
  c.session = session_replay_config(o.replay, concurrency, o.seed);
  c.arrival = arrival_replay_config(o.replay, o.seed);
  c.prompt.seed = o.seed;
  c.summary = summary_options(o.replay);
  // Throughput per GPU counts every replica's GPUs: --gpus each (default: the TP size).
  c.summary.gpus = sim_gpus_per_replica(o) * o.replicas;
  c.replicas = o.replicas;
  c.router = s.router;
  c.replica_servers = s.replica_servers;
  c.step_noise = s.step_noise;
  c.step_noise_seed = o.step_noise_seed.value_or(o.seed);
  return c;
}

nlohmann::json settings_json(const SimOptions& o, const SimSetup& s, int concurrency) {
  const SchedulerConfig& sc = s.engine.scheduler;
  const PrefillDelayerConfig& d = sc.delayer;
  nlohmann::json settings = {
      {"mode", "sim"},
      {"simulated", true},
      {"trace_kind", s.traces.open_loop ? "mooncake" : "agentx"},
      {"open_loop", s.traces.open_loop},
      {"concurrency", concurrency},
      {"replicas", o.replicas},
      {"tensor_parallel_size", o.tensor_parallel_size},
      {"router", sim::router_kind_name(s.router)},
      {"seed", o.seed},
      {"scaled", !s.traces.transform.identity()},
      {"trace_transform", bench::transform_json(s.traces.transform, s.traces.stats)},
      {"endpoint", "completions"},
      {"model", s.model.name},
      {"profile", o.profile},
      {"step_noise", sim::step_noise_mode_name(s.step_noise)},
      {"step_noise_seed", o.step_noise_seed.value_or(o.seed)},
      {"kv_cache_bytes", s.kv_cache_bytes},
      {"gpu_memory_utilization", o.gpu_memory_utilization},
      {"block_size", sc.block_size},
      {"num_kv_blocks", sc.num_kv_blocks},
      {"kv_offloading_size_gib", o.kv_offloading_size},
      {"kv_cache_dtype", o.kv_cache_dtype},
      {"num_host_kv_blocks", sc.num_host_kv_blocks},
      {"host_kv_bandwidth_gbps", o.host_kv_bandwidth},
      {"kv_offloading_max_blocks_per_step", sc.kv_offloading_max_blocks_per_step},
      {"max_model_len", sc.max_model_len},
      {"max_num_seqs", sc.max_num_seqs},
      {"max_num_batched_tokens", sc.max_num_batched_tokens},
      {"schedule", std::string(schedule_kind_name(sc.schedule))},
      {"enable_prefix_caching", sc.enable_prefix_caching},
      {"kv_policy", kv_policy_name(sc.kv_policy)},
      {"schedule_policy", std::string(admission_policy_name(sc.admission))},
      {"schedule_policy_max_wait_ms", sc.lpm_max_wait_ms},
      {"long_prefill_token_threshold", sc.long_prefill_token_threshold},
      {"cudagraph_capture_sizes", o.engine.cudagraph_capture_sizes},
      {"speculative_tokens", sc.speculative.speculative_tokens},
      {"delayer", d.active() ? "on" : "off"},
      {"prefill_decode_interval", d.prefill_decode_interval},
      {"prefill_delayer_max_queue_ms",
       d.max_queue_ms ? nlohmann::json(*d.max_queue_ms) : nlohmann::json()},
      {"prefill_delayer_target_fill", d.target_fill},
      {"prefill_delayer_ttft_max_ticks", d.ttft_max_ticks},
      {"prefill_delayer_partial_max_ticks", d.partial_max_ticks},
      {"prefill_delayer_stall_ticks", d.stall_ticks},
      {"prefill_delayer_kv_high", d.kv_high},
      {"prefill_delayer_kv_low", d.kv_low ? nlohmann::json(*d.kv_low) : nlohmann::json()},
  };
  settings.update(replay_settings_json(o.replay));
  settings["gpus"] = sim_gpus_per_replica(o);  // per replica; the summary's "gpus" counts all
  return settings;
}

// One line per replica: where the router sent the load and what each cache kept of it.
void log_replicas(const sim::SimRun& run, int concurrency) {
  for (size_t i = 0; i < run.replicas.size(); ++i) {
    const sim::ReplicaStats& r = run.replicas[i];
    const double hit = r.engine.prefix_cache_queries
                           ? static_cast<double>(r.engine.prefix_cache_hits) /
                                 static_cast<double>(r.engine.prefix_cache_queries)
                           : 0.0;
    const double busy = run.end_ns > 0 ? static_cast<double>(r.executor.busy_ns) /
                                             static_cast<double>(run.end_ns)
                                       : 0.0;
    spdlog::info("sim: concurrency {}: replica {} ({}): {} requests, prefix hit {:.1f}%, busy "
                 "{:.1f}%, {} preemptions",
                 concurrency, i, sim::router_kind_name(run.router), r.routed, 100 * hit,
                 100 * busy, r.engine.preemptions);
  }
}

// Runs one point and writes its files; returns the summary and the delayer's hold rate.
std::pair<bench::Summary, std::optional<double>> run_point(const SimOptions& o, const SimSetup& s,
                                                           int concurrency,
                                                           const std::string& dir) {
  sim::SimRunConfig config = run_config(o, s, concurrency);
  if (!o.step_log.empty() && o.concurrency.size() == 1) config.step_log = o.step_log;
  if (!o.step_log.empty() && o.concurrency.size() > 1) {
    std::filesystem::create_directories(dir);
    config.step_log =
        (std::filesystem::path(dir) / std::filesystem::path(o.step_log).filename()).string();
  }
  const sim::SimRun run = sim::run_sim(s.traces, config, *s.profile.cost);
  if (run.abort_reason) spdlog::error("sim: {}", *run.abort_reason);
  const sim::SimExecutorStats& x = run.executor;
  if (x.steps > 0 && x.extrapolated_steps * 100 > x.steps) {
    spdlog::warn("sim: concurrency {}: {} of {} steps ({:.1f}%) had more rows than any step the "
                 "profile measured; their times are extrapolated (profile larger batches, or fit "
                 "to a step log of a run at this concurrency)",
                 concurrency, x.extrapolated_steps, x.steps,
                 100.0 * static_cast<double>(x.extrapolated_steps) / static_cast<double>(x.steps));
  }
  const nlohmann::json simulator = {{"profile", s.profile.json},
                                    {"cost_model", s.profile.cost->describe()},
                                    {"engine", sim::sim_engine_json(run)}};
  std::optional<double> hold_rate;
  if (run.engine.delayer) hold_rate = run.engine.delayer->hold_rate();
  nlohmann::json settings = settings_json(o, s, concurrency);
  settings["abort_reason"] =
      run.abort_reason ? nlohmann::json(*run.abort_reason) : nlohmann::json();
  settings["hold_rate"] = hold_rate ? nlohmann::json(*hold_rate) : nlohmann::json();
  sim::write_sim_files(dir, run, settings, simulator);
  try {
    bench::write_report_html(dir);
  } catch (const Error& e) {
    spdlog::warn("sim: report.html not written: {}", e.what());
  }
  spdlog::info("sim: concurrency {}: {} requests ok, {} failed, {:.0f} s of virtual time -> {}",
               concurrency, run.summary.requests_completed, run.summary.requests_failed,
               static_cast<double>(run.end_ns) / 1e9, dir);
  if (run.replicas.size() > 1) log_replicas(run, concurrency);
  if (run.summary.context_overflows > 0) {
    spdlog::warn("sim: {} requests exceeded max_model_len {} (raise it with --max-model-len)",
                 run.summary.context_overflows, s.engine.scheduler.max_model_len);
  }
  return {run.summary, hold_rate};
}

}  // namespace

void add_sim_options(CLI::App& cmd, SimOptions& o) {
  // --traces is checked in run_sim: --show-routes needs none.
  add_replay_options(cmd, o.replay, /*traces_required=*/false);
  cmd.add_option("--concurrency", o.concurrency,
                 "lanes (closed loop); a list such as 1,16,48 runs each into OUT/conc-N")
      ->delimiter(',')
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd.add_option("--out", o.out, "output directory")->capture_default_str();
  cmd.add_option("--profile", o.profile,
                 "cost model: a GPU name (h200: analytic roofline) or a profile file")
      ->capture_default_str();
  cmd.add_option("--model", o.model, "model config: file, folder or shipped name")
      ->capture_default_str();
  cmd.add_option("--block-size", o.block_size, "tokens per KV block")->capture_default_str();
  cmd.add_option("--kv-cache-memory", o.kv_cache_memory,
                 "KV cache bytes of one GPU, e.g. 64G (default: from the profile)");
  cmd.add_option("--kv-cache-dtype", o.kv_cache_dtype,
                 "KV element type: auto (the profile's), bf16, or fp8 (1 byte: twice the tokens, "
                 "half the bytes attention reads in a roofline profile)")
      ->check(CLI::IsMember({"auto", "bf16", "fp8"}))
      ->capture_default_str();
  cmd.add_option("--kv-offloading-size", o.kv_offloading_size,
                 "GiB of host memory for a second KV tier (vLLM's flag; 0: off)")
      ->capture_default_str();
  cmd.add_option("--host-kv-bandwidth", o.host_kv_bandwidth,
                 "GB/s of each host<->GPU block copy stream, for the host tier's transfers")
      ->capture_default_str();
  cmd.add_option("--tensor-parallel-size", o.tensor_parallel_size,
                 "(-tp) GPUs one replica is split over (vLLM's flag): each step's weights, KV "
                 "and FLOPs / N per GPU plus two all-reduces a layer, N GPUs' KV memory; --gpus "
                 "defaults to it. A measured profile must have been measured at this size")
      ->each([&o](const std::string&) { o.tensor_parallel_given = true; })
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd.add_option("--gpu-memory-utilization", o.gpu_memory_utilization,
                 "fraction of GPU memory for weights and KV (roofline profiles)")
      ->capture_default_str();
  cmd.add_option("--seed", o.seed, "replay, prompt, sampling and step-noise seed")
      ->capture_default_str();
  cmd.add_option("--step-noise", o.step_noise,
                 "step-time variation: auto (replay a step-log profile's steps in time), "
                 "none (the cost model's means), replay")
      ->capture_default_str();
  cmd.add_option("--step-noise-seed", o.step_noise_seed,
                 "where on the profile's clock the replay starts (default: --seed); vary it to "
                 "see how much the noise alone moves a percentile");
  cmd.add_option("--step-log", o.step_log,
                 "write one JSON line per simulated step to FILE, as serve --step-log does");
  cmd.add_option("--replicas", o.replicas,
                 "engines behind the router, each with its own KV cache and --gpus GPUs")
      ->capture_default_str();
  cmd.add_option("--router", o.router,
                 "how requests reach replicas: session (a hash of the agent session, as nginx's "
                 "hash $http_x_session_id consistent), round-robin, least-loaded (fewest in flight)")
      ->capture_default_str();
  cmd.add_option("--replica-servers", o.replica_servers,
                 "the replicas' names in nginx's upstream, HOST:PORT,... (they place them on the "
                 "session ring; default: scripts/serve_replicas's, 127.0.0.1:8001 and on)");
  cmd.add_option("--show-routes", o.show_routes,
                 "FILE of session ids, one a line: print the replica nginx's consistent hash "
                 "sends each to, and simulate nothing");
  add_engine_options(cmd, o.engine);
  // CLI11 2.1 assigns an std::optional<bool> flag when the flag is added (CLIUtils/CLI11#694),
  // which would read as --no-prefill-delayer and hide ATOM_ENABLE_PREFILL_DELAYER: unset it.
  o.engine.delayer.enabled.reset();
}

void run_sim_point(const SimOptions& o, int concurrency, const std::string& run_dir) {
  if (o.replay.traces.empty()) fail("--traces is required (an AgentX file or folder, or a .jsonl)");
  const SimSetup setup = prepare(o);
  run_point(o, setup, concurrency, run_dir);
}

int run_sim(const SimOptions& o) {
  if (!o.show_routes.empty()) return show_routes(o);
  if (o.replay.traces.empty()) fail("--traces is required (an AgentX file or folder, or a .jsonl)");
  const SimSetup setup = prepare(o);
  std::vector<bench::Summary> summaries;
  std::vector<std::optional<double>> hold_rates;
  for (int c : o.concurrency) {
    const std::string dir =
        o.concurrency.size() == 1
            ? o.out
            : (std::filesystem::path(o.out) / ("conc-" + std::to_string(c))).string();
    auto [summary, hold_rate] = run_point(o, setup, c, dir);
    summaries.push_back(std::move(summary));
    hold_rates.push_back(hold_rate);
  }
  std::vector<bench::MarkdownRow> rows;
  const bool delayer_on = setup.engine.scheduler.delayer.active();
  for (size_t i = 0; i < summaries.size(); ++i) {
    rows.push_back({&summaries[i], o.concurrency[i], delayer_on ? "on" : "off", hold_rates[i]});
  }
  if (o.concurrency.size() > 1) {
    bench::SweepManifest manifest;
    manifest.settings = {{"concurrency", o.concurrency}, {"simulated", true}};
    for (int c : o.concurrency) {
      manifest.runs.push_back({"conc-" + std::to_string(c), c, delayer_on ? "on" : "off"});
    }
    bench::write_sweep_manifest(o.out, manifest);
  }
  std::printf("> **SIMULATED** (%s)\n", setup.profile.cost->describe().c_str());
  if (!setup.traces.transform.identity()) {
    std::printf("> **TRANSFORMED TRACE** (%s): lengths differ from the recording\n",
                bench::describe_transform(setup.traces.transform).c_str());
  }
  std::printf("\n%s", bench::markdown_table(rows).c_str());
  std::fflush(stdout);
  // Every point invalid (e.g. every request overflowed the context): no result to use.
  if (std::none_of(summaries.begin(), summaries.end(),
                   [](const bench::Summary& s) { return s.valid; })) {
    std::fprintf(stderr, "error: every point of the run is invalid (see INVALID RUN above)\n");
    return 1;
  }
  return 0;
}

}  // namespace paceline
