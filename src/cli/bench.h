#pragma once
// `paceline bench --url URL --traces PATH --concurrency N --duration S --gpus G --out DIR`: the
// AgentX benchmark against any OpenAI-compatible server, in real time. AgentX session files (a
// folder or a .json) replay closed loop; a Mooncake .jsonl replays open loop. Writes
// records.jsonl, summary.json, summary.csv, metrics.jsonl (the server's /metrics, every second)
// and report.html into DIR, and prints the seed-style Markdown table on stdout.
//
// For runs comparable with `vllm bench serve`: --dataset random makes its own random-length
// requests, --request-rate/--burstiness space open-loop requests as a gamma process,
// --request-count bounds them, -H/--header and --extra-body add to every request.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/summary.h"
#include "cli/replay_options.h"

namespace paceline {

struct BenchOptions {
  std::string url = "http://127.0.0.1:8000";
  ReplayOptions replay;
  int concurrency = 1;
  std::string out = "bench-out";
  uint64_t seed = 0;
  std::string endpoint = "chat";
  std::string model;  // default: the first id of GET /v1/models
  std::string api_key;
  // Send X-Session-ID (the agent session, bench/session_key.h) with every request, for a router
  // in front of replicas; off by default, as in AIPerf. X-Correlation-ID is always sent.
  bool session_id_header = false;
  std::string delayer;  // the table's delayer column; default: from the server's /metrics
  bool scrape_metrics = true;
  int64_t chat_overhead_tokens = -1;  // -1: the default estimate (text_prompt.h)

  std::string dataset = "trace";  // or "random": synthetic requests, no --traces
  int64_t random_input_len = 1024;
  int64_t random_output_len = 128;
  double random_range_ratio = 0.0;
  std::optional<double> request_rate;    // open loop: replaces the trace's arrival times
  std::optional<double> burstiness;      // gamma shape of the gaps; 1 = Poisson
  std::optional<int64_t> request_count;  // random: how many; trace: its first N records
  std::vector<std::string> headers;      // "Name: value"
  std::string extra_body;                // a JSON object
  double progress_interval = 10;         // seconds between progress lines off a terminal
};

// `with_run_dir`: false for `sweep`, which chooses --concurrency and --out per point itself.
void add_bench_options(CLI::App& cmd, BenchOptions& options, bool with_run_dir = true);

struct BenchResult {
  bench::Summary summary;
  std::optional<double> hold_rate;
  std::string delayer;
  bool cancelled = false;
  std::optional<std::string> abort_reason;  // a failed warmup
};

// One run at `concurrency` into `run_dir`: every file written, nothing printed on stdout.
BenchResult run_bench_point(const BenchOptions& options, int concurrency,
                            const std::string& run_dir);

// The command: run_bench_point at --concurrency into --out, then the table on stdout.
// Exit status: 0; 1 when the warmup failed or the run is invalid; 130 when cancelled (Ctrl-C).
int run_bench(const BenchOptions& options);

}  // namespace paceline
