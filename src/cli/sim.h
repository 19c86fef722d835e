#pragma once
// `paceline sim`: a benchmark run of paceline's own scheduler in virtual time, with a cost model
// instead of a GPU. The engine flags of `serve`, the replay options of `bench`, and the files and
// summary schema of `bench` (marked "simulated": true).
#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/engine_options.h"
#include "cli/replay_options.h"

namespace paceline {

struct SimOptions {
  // What is simulated.
  std::string model = "qwen3-8b";  // config JSON, HF folder or shipped name
  std::string profile = "h200";    // named GPU roofline, or a profile file
  int64_t block_size = 16;
  std::string kv_cache_memory;  // default: from the profile
  // auto: the profile's KV element type; bf16 or fp8 (1 byte) override a roofline profile's.
  std::string kv_cache_dtype = "auto";
  double gpu_memory_utilization = 0.9;
  // GPUs one replica spans (--tensor-parallel-size, -tp; vLLM's flag): the profile prices each
  // step per GPU plus the all-reduces, and the KV memory is that many GPUs' (docs/simulator.md).
  int tensor_parallel_size = 1;
  bool tensor_parallel_given = false;
  double kv_offloading_size = 0;     // GiB of host KV tier (vLLM's --kv-offloading-size); 0: none
  // GB/s each way; H200 pinned cudaMemcpyAsync of 2.36 MB blocks, both ways at once: 46.1
  // (docs/kv-tiers.md, tools/host_kv_bandwidth).
  double host_kv_bandwidth = 46;
  uint64_t seed = 0;  // replay sampler, start window, prompts, default sampling seeds
  // Step-time variation: auto (replay a step-log profile's, else none), none, replay.
  std::string step_noise = "auto";
  std::optional<uint64_t> step_noise_seed;  // where the replay starts; default: --seed
  EngineOptions engine;
  // Engines behind a routing rule on one clock (sim/replica_router.h): session, round-robin or
  // least-loaded. Each replica has the whole KV cache and --gpus GPUs (default: the
  // tensor-parallel size).
  int replicas = 1;
  std::string router = "session";
  // The replicas' names in nginx's upstream, comma-separated (the session rule's ring); empty:
  // scripts/serve_replicas's on its default port, 127.0.0.1:8001 and on.
  std::string replica_servers;
  // A file of session ids, one a line: print the replica each goes to under --router session,
  // and simulate nothing.
  std::string show_routes;

  // The replay, as `paceline bench` spells it.
  ReplayOptions replay;
  std::vector<int> concurrency = {1};  // several: one run each into OUT/conc-N, one table
  std::string out = "sim-out";
  // Every simulated step, as `serve --step-log` writes them; with several concurrencies, one
  // file of this name in each OUT/conc-N.
  std::string step_log;
};

void add_sim_options(CLI::App& cmd, SimOptions& options);
// GPUs per replica for per-GPU throughput: --gpus, else --tensor-parallel-size. Throws naming
// both flags when --gpus contradicts a given tensor-parallel size.
int sim_gpus_per_replica(const SimOptions& options);
int run_sim(const SimOptions& options);

// One point of a sweep: the run at `concurrency`, its files written into `run_dir` (the traces are
// read again for each point: about a second for the AgentX folder).
void run_sim_point(const SimOptions& options, int concurrency, const std::string& run_dir);

}  // namespace paceline
