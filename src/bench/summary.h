#pragma once
// The run's metrics, computed from the per-request records exactly as
// ../shared/specs/agentx-replay.md defines them (docs/metrics.md says it in full). Only profiling
// records count; latencies use successful requests only; failures are counted, not averaged.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/agentx_trace.h"
#include "bench/record.h"
#include "bench/stats.h"

namespace paceline::bench {

// Goodput bounds in ms (--slo "ttft:2000 itl:50"); a request counts when it meets every one given.
struct Slo {
  std::optional<double> ttft_ms;
  std::optional<double> itl_ms;  // "tpot" is accepted as the same bound
  std::optional<double> e2el_ms;
  bool empty() const { return !ttft_ms && !itl_ms && !e2el_ms; }
};

// Parses "ttft:2000 itl:50" (entries separated by spaces or commas).
Slo parse_slo(std::string_view text);
std::string format_slo(const Slo& slo);

struct SummaryOptions {
  int gpus = 1;
  Slo slo;
  double max_failed_fraction = 0.10;    // above: the run is invalid
  double max_overflow_fraction = 0.01;  // context overflows, above: invalid
  double schedule_lag_warn_ms = 500.0;  // p99 schedule lag above this: a warning
};

// 1 / pX of a latency in seconds, for X in the report's percentiles (tok/s/user).
struct Interactivity {
  double p50 = 0, p75 = 0, p90 = 0, p95 = 0, p99 = 0;
};

struct Summary {
  int64_t requests_completed = 0;   // profiling, successful
  int64_t requests_failed = 0;      // profiling, answered with an error
  int64_t requests_incomplete = 0;  // profiling, cut off by the drain timeout or a cancel
  int64_t context_overflows = 0;    // among the failed
  int64_t warmup_requests = 0;
  int64_t requests_without_usage = 0;  // successful ones whose counts are local fallbacks

  Distribution ttft_ms;
  Distribution itl_ms;  // per request, OSL >= 2; TPOT is the same samples
  Distribution e2el_ms;
  Distribution chunk_gap_ms;             // every gap between consecutive content chunks, pooled
  Distribution e2el_per_token_ms;        // E2EL / OSL
  Distribution schedule_lag_ms;          // actual send - scheduled send, every profiling request
  Interactivity interactivity;           // 1 / pX(ITL)
  Interactivity e2e_norm_interactivity;  // 1 / pX(E2EL / OSL)

  double duration_s = 0;  // max end - min start of the successful profiling requests
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  double total_tok_s = 0, output_tok_s = 0, input_tok_s = 0;
  double total_tok_s_per_gpu = 0, output_tok_s_per_gpu = 0, input_tok_s_per_gpu = 0;
  double request_throughput = 0;
  int64_t goodput_requests = 0;
  double goodput = 0;           // req/s meeting every SLO bound; NaN without --slo
  double prefix_cache_hit = 0;  // sum(cached) / sum(ISL) from usage; NaN if never reported
  double trace_prefix_hit = 0;  // the same under an infinite cache, from the trace's block ids

  int gpus = 1;
  Slo slo;
  // Trace files the reader could not use and left out (each named in `warnings`).
  int64_t trace_files_skipped = 0;
  bool valid = true;
  std::vector<std::string> invalid_reasons;
  std::vector<std::string> warnings;
};

Summary summarize(const std::vector<RequestRecord>& records, const SummaryOptions& options);

// Counts the skipped trace files into the summary, one warning each.
void note_skipped_traces(Summary& summary, const std::vector<TraceSkip>& skipped);

}  // namespace paceline::bench
