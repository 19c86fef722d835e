#include "cli/replay_options.h"

#include <cmath>
#include <filesystem>

#include "base/error.h"

namespace paceline {

void add_replay_options(CLI::App& cmd, ReplayOptions& o, bool traces_required) {
  auto* traces =
      cmd.add_option("--traces", o.traces, "AgentX session file or folder, or a Mooncake .jsonl");
  if (traces_required) traces->required();
  cmd.add_option("--duration", o.duration, "seconds of profiling (Mooncake: 0 = whole trace)")
      ->each([&o](const std::string&) { o.duration_given = true; })
      ->capture_default_str();
  cmd.add_flag("--strict", o.strict,
               "an AgentX file the reader cannot use is an error (default: skipped, warned, "
               "counted)");
  cmd.add_option("--gpus", o.gpus, "GPUs behind the server, for per-GPU throughput")
      ->each([&o](const std::string&) { o.gpus_given = true; })
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd.add_option("--start-window", o.start_window, "first play starts in [lo,hi] of a session")
      ->delimiter(',')
      ->expected(2)
      ->capture_default_str();
  cmd.add_option("--warmup-requests-per-lane", o.warmup_requests_per_lane,
                 "one-token requests after each lane's primer")
      ->capture_default_str();
  cmd.add_option("--trace-idle-gap-cap", o.trace_idle_gap_cap, "longest think time, seconds")
      ->capture_default_str();
  cmd.add_option("--system-idle-gap-cap", o.system_idle_gap_cap,
                 "longest all-idle gap, seconds (<= 0: none)")
      ->capture_default_str();
  cmd.add_option("--sampler", o.sampler, "which session a lane plays next")
      ->check(CLI::IsMember({"sequential", "shuffle", "random"}))
      ->capture_default_str();
  cmd.add_option("--drain-timeout", o.drain_timeout, "seconds in-flight requests may finish")
      ->capture_default_str();
  cmd.add_option("--slo", o.slo, "goodput bounds in ms, e.g. \"ttft:2000 itl:50\"");
  cmd.add_option("--max-failed-fraction", o.max_failed_fraction,
                 "a run with a larger fraction of failed requests is invalid (and exits 1); an "
                 "overload test that expects refusals raises it")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd.add_option("--time-scale", o.time_scale, "Mooncake: multiplies arrival times")
      ->capture_default_str();
  cmd.add_option("--max-isl", o.max_isl,
                 "skip longer requests (sessions: cut before the first longer turn)");
  cmd.add_option("--isl-scale", o.isl_scale, "multiply input lengths and prefix blocks")
      ->capture_default_str();
  cmd.add_option("--osl-scale", o.osl_scale, "multiply output lengths")->capture_default_str();
}

nlohmann::json replay_settings_json(const ReplayOptions& o) {
  return {
      {"traces", o.traces},
      {"duration_s", o.duration},
      {"start_window", o.start_window},
      {"warmup_requests_per_lane", o.warmup_requests_per_lane},
      {"trace_idle_gap_cap_s", o.trace_idle_gap_cap},
      {"system_idle_gap_cap_s", o.system_idle_gap_cap},
      {"sampler", o.sampler},
      {"drain_timeout_s", o.drain_timeout},
      {"max_failed_fraction", o.max_failed_fraction},
      {"time_scale", o.time_scale},
      {"gpus", o.gpus},
      {"slo", o.slo},
      {"strict", o.strict},
      {"isl_scale", o.isl_scale},
      {"osl_scale", o.osl_scale},
      {"max_isl", o.max_isl ? nlohmann::json(*o.max_isl) : nlohmann::json(nullptr)},
  };
}

bench::SessionReplayConfig session_replay_config(const ReplayOptions& o, int concurrency,
                                                 uint64_t seed) {
  if (o.start_window.size() != 2) fail("--start-window takes two fractions: lo,hi");
  bench::SessionReplayConfig c;
  c.concurrency = concurrency;
  c.sampler = bench::parse_sampler_kind(o.sampler);
  c.seed = seed;
  c.start_window_lo = o.start_window[0];
  c.start_window_hi = o.start_window[1];
  c.warmup_requests_per_lane = o.warmup_requests_per_lane;
  c.trace_idle_gap_cap_ns = seconds_to_ns(o.trace_idle_gap_cap, "--trace-idle-gap-cap");
  c.system_idle_gap_cap_ns = seconds_to_ns(o.system_idle_gap_cap, "--system-idle-gap-cap");
  c.duration_ns = seconds_to_ns(o.duration, "--duration");
  c.drain_timeout_ns = seconds_to_ns(o.drain_timeout, "--drain-timeout");
  return c;
}

bench::ArrivalReplayConfig arrival_replay_config(const ReplayOptions& o, uint64_t seed) {
  bench::ArrivalReplayConfig c;
  c.time_scale = o.time_scale;
  c.trace_name = std::filesystem::path(o.traces).filename().string();
  c.seed = seed;
  c.duration_ns = seconds_to_ns(o.duration, "--duration");
  c.drain_timeout_ns = seconds_to_ns(o.drain_timeout, "--drain-timeout");
  return c;
}

bench::SummaryOptions summary_options(const ReplayOptions& o) {
  if (o.gpus < 1) fail("--gpus must be at least 1");
  bench::SummaryOptions s;
  s.gpus = o.gpus;
  s.max_failed_fraction = o.max_failed_fraction;
  if (!o.slo.empty()) s.slo = bench::parse_slo(o.slo);
  return s;
}

int64_t seconds_to_ns(double seconds, const char* flag) {
  if (!std::isfinite(seconds)) fail("{} must be a finite number of seconds", flag);
  return std::llround(seconds * 1e9);
}

}  // namespace paceline
