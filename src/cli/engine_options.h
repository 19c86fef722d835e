#pragma once
// The engine flags shared by serve and sim (vLLM's spellings, ATOM's delayer env vars).
#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "sched/prefill_delayer_env.h"
#include "sched/scheduler_config.h"

namespace paceline {

struct EngineOptions {
  std::optional<int64_t> max_model_len;  // default: the model's max_position_embeddings
  int64_t max_num_seqs = 256;
  int64_t max_num_batched_tokens = 16384;
  bool enable_prefix_caching = true;
  std::string kv_policy = "reuse";  // the scheduler library's default is lru (tests rely on it)
  std::string schedule = "separate";
  std::string schedule_policy = "short-first";
  double schedule_policy_max_wait_ms = 30000;
  int64_t long_prefill_token_threshold = 0;
  int64_t kv_offloading_max_blocks_per_step = 0;
  // Unset: the front end's default (serve: kCpuMaxStepMs on the CPU, else off; sim: off).
  std::optional<double> max_step_ms;
  std::string cudagraph_capture_sizes;  // empty: the default list
  int32_t speculative_tokens = 0;
  std::optional<double> spec_acceptance_length;
  std::optional<double> spec_acceptance_rate;
  PrefillDelayerFlags delayer;
};

void add_engine_options(CLI::App& cmd, EngineOptions& options);

// serve's --max-step-ms on the CPU executor. Its forward is slow and quadratic in the context (the
// tiny model took 17 s for one 2,000-token prefill): a second bounds what an abort or SIGTERM
// waits for the step in flight and the other streams' stall, while the prompts of a few hundred
// tokens a CPU usually serves still take one step.
inline constexpr double kCpuMaxStepMs = 1000;

struct ResolvedEngineConfig {
  SchedulerConfig scheduler;
  PrefillDelayerSources delayer_sources;
};

// Flags + environment → a validated scheduler config (num_kv_blocks and block_size are filled
// by the engine from its executor). Throws paceline::Error naming the flag; `--kv-policy oracle`
// only where `allow_oracle` (the simulator, which has the trace to ask).
ResolvedEngineConfig resolve_engine_options(const EngineOptions& options, int64_t model_max_len,
                                            uint64_t seed, bool allow_oracle = false);

}  // namespace paceline
