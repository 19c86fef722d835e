#pragma once
// The replay options `paceline bench` and `paceline sim` share, spelled once: the trace, its
// transforms for small hardware, the AgentX replay rules (../shared/specs/agentx-replay.md) and the
// summary's settings.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/arrival_replayer.h"
#include "bench/session_replayer.h"
#include "bench/summary.h"
#include "bench/trace_transform.h"

namespace paceline {

struct ReplayOptions {
  std::string traces;     // AgentX session file or folder, or a Mooncake .jsonl
  double duration = 600;  // seconds of profiling; Mooncake: 0 replays the whole trace
  bool duration_given = false;  // --duration was on the command line
  std::vector<double> start_window = {0.25, 0.75};
  int warmup_requests_per_lane = 10;
  double trace_idle_gap_cap = 300;
  double system_idle_gap_cap = 10;
  std::string sampler = "sequential";
  double drain_timeout = 120;
  double max_failed_fraction = 0.10;  // a run with more failed requests is invalid
  double time_scale = 1.0;  // Mooncake arrival times
  std::optional<int64_t> max_isl;
  double isl_scale = 1.0;
  double osl_scale = 1.0;
  int gpus = 1;
  bool gpus_given = false;  // --gpus was on the command line
  std::string slo;
  bool strict = false;  // an unusable AgentX file fails the run instead of being skipped

  bench::TraceTransform transform() const { return {isl_scale, osl_scale, max_isl}; }
};

// `traces_required`: false for `bench`, whose --dataset random needs no trace.
void add_replay_options(CLI::App& cmd, ReplayOptions& options, bool traces_required = true);

// The replay settings as the run's summary.json records them.
nlohmann::json replay_settings_json(const ReplayOptions& options);

// The replayers' and the summary's configurations, the same for `bench` and `sim`. Each checks its
// flags and fails with a message naming the one that is wrong.
bench::SessionReplayConfig session_replay_config(const ReplayOptions& options, int concurrency,
                                                 uint64_t seed);
bench::ArrivalReplayConfig arrival_replay_config(const ReplayOptions& options, uint64_t seed);
bench::SummaryOptions summary_options(const ReplayOptions& options);

// A duration flag in seconds as nanoseconds; a clear error names the flag when it is not finite.
int64_t seconds_to_ns(double seconds, const char* flag);

}  // namespace paceline
