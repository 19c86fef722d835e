#include "bench/summary.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "base/error.h"
#include "bench/json_number.h"

namespace paceline::bench {

namespace {

// Division, not multiplication by 1e-6, so whole ms stay exact.
double ns_to_ms(int64_t ns) {
  return static_cast<double>(ns) / 1e6;
}

// 1 / pX of latencies in ms, as tokens per second.
Interactivity inverse_percentiles_ms(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  auto inv = [&](double q) { return 1000.0 / percentile_sorted(ms, q); };
  if (ms.empty()) return {kNaN, kNaN, kNaN, kNaN, kNaN};
  return {inv(50), inv(75), inv(90), inv(95), inv(99)};
}

double per_second(double amount, double seconds) {
  return seconds > 0 ? amount / seconds : kNaN;
}

std::string percent(double fraction) {
  return fmt::format("{:.1f}%", fraction * 100.0);
}

// The rule for a percentile that rests on too few requests: pN needs at least 100 / (100 - N)
// samples (p90: 10, p95: 20, p99: 100), else fewer than one sample lies above it and it is
// only the largest value or an interpolation towards it. One warning per metric, naming each.
void warn_thin_percentiles(const char* metric, const Distribution& d,
                           std::vector<std::string>& warnings) {
  if (d.count == 0) return;
  std::string thin;
  for (int p : {75, 90, 95, 99}) {
    size_t needed = static_cast<size_t>(100 / (100 - p));
    if (d.count >= needed) continue;
    thin += fmt::format("{}p{} ({} needed)", thin.empty() ? "" : ", ", p, needed);
  }
  if (thin.empty()) return;
  warnings.push_back(
      fmt::format("{} percentiles rest on {} requests: {}; a pN needs at least 100/(100-N) samples "
                  "to be more than the largest one",
                  metric, d.count, thin));
}

}  // namespace

Slo parse_slo(std::string_view text) {
  Slo slo;
  size_t i = 0;
  while (i < text.size()) {
    size_t end = text.find_first_of(" ,", i);
    if (end == std::string_view::npos) end = text.size();
    std::string_view entry = text.substr(i, end - i);
    i = end + 1;
    if (entry.empty()) continue;
    size_t colon = entry.find(':');
    if (colon == std::string_view::npos) {
      fail("--slo '{}': expected name:ms, e.g. ttft:2000", entry);
    }
    std::string_view name = entry.substr(0, colon);
    std::string value(entry.substr(colon + 1));
    double ms = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
    if (ec != std::errc() || ptr != value.data() + value.size() || !(ms > 0)) {
      fail("--slo '{}': '{}' is not a positive number of ms", entry, value);
    }
    if (name == "ttft") {
      slo.ttft_ms = ms;
    } else if (name == "itl" || name == "tpot") {
      slo.itl_ms = ms;
    } else if (name == "e2el") {
      slo.e2el_ms = ms;
    } else {
      fail("--slo '{}': unknown bound '{}' (ttft, itl, tpot, e2el)", entry, name);
    }
  }
  return slo;
}

std::string format_slo(const Slo& slo) {
  std::string out;
  auto add = [&](const char* name, const std::optional<double>& v) {
    if (!v) return;
    if (!out.empty()) out += ' ';
    out += fmt::format("{}:{}", name, *v);
  };
  add("ttft", slo.ttft_ms);
  add("itl", slo.itl_ms);
  add("e2el", slo.e2el_ms);
  return out;
}

Summary summarize(const std::vector<RequestRecord>& records, const SummaryOptions& options) {
  if (options.gpus < 1) fail("--gpus must be at least 1, got {}", options.gpus);
  Summary s;
  s.gpus = options.gpus;
  s.slo = options.slo;

  std::vector<double> ttft, itl, e2el, gaps, per_token, lag;
  int64_t min_start = INT64_MAX, max_end = INT64_MIN;
  int64_t cached_sum = 0, cached_isl_sum = 0, reusable_sum = 0;
  bool any_cached = false;
  for (const RequestRecord& r : records) {
    if (r.phase == Phase::kWarmup) {
      ++s.warmup_requests;
      continue;
    }
    lag.push_back(ns_to_ms(r.start_ns - r.scheduled_ns));
    if (r.status == RecordStatus::kIncomplete || r.status == RecordStatus::kInFlight) {
      ++s.requests_incomplete;
      continue;
    }
    if (r.status == RecordStatus::kError) {
      ++s.requests_failed;
      if (r.context_overflow) ++s.context_overflows;
      continue;
    }
    ++s.requests_completed;
    if (!r.usage_reported) ++s.requests_without_usage;
    double ttft_ms = ns_to_ms(r.first_token_ns - r.start_ns);
    double e2el_ms = ns_to_ms(r.last_token_ns - r.start_ns);
    ttft.push_back(ttft_ms);
    e2el.push_back(e2el_ms);
    std::optional<double> itl_ms;
    if (r.osl >= 2) {
      itl_ms = (e2el_ms - ttft_ms) / static_cast<double>(r.osl - 1);
      itl.push_back(*itl_ms);
    }
    if (r.osl >= 1) per_token.push_back(e2el_ms / static_cast<double>(r.osl));
    for (size_t i = 1; i < r.chunk_ns.size(); ++i)
      gaps.push_back(ns_to_ms(r.chunk_ns[i] - r.chunk_ns[i - 1]));
    min_start = std::min(min_start, r.start_ns);
    max_end = std::max(max_end, r.end_ns);
    s.input_tokens += r.isl;
    s.output_tokens += r.osl;
    reusable_sum += r.trace_reusable_tokens;
    if (r.cached_tokens >= 0) {
      any_cached = true;
      cached_sum += r.cached_tokens;
      cached_isl_sum += r.isl;
    }
    bool good = (!options.slo.ttft_ms || ttft_ms <= *options.slo.ttft_ms) &&
                (!options.slo.itl_ms || !itl_ms || *itl_ms <= *options.slo.itl_ms) &&
                (!options.slo.e2el_ms || e2el_ms <= *options.slo.e2el_ms);
    if (good) ++s.goodput_requests;
  }

  s.ttft_ms = describe(ttft);
  s.itl_ms = describe(itl);
  s.e2el_ms = describe(e2el);
  s.chunk_gap_ms = describe(gaps);
  s.e2el_per_token_ms = describe(per_token);
  s.schedule_lag_ms = describe(lag);
  s.interactivity = inverse_percentiles_ms(itl);
  s.e2e_norm_interactivity = inverse_percentiles_ms(per_token);

  s.duration_s = s.requests_completed > 0 ? static_cast<double>(max_end - min_start) / 1e9 : 0.0;
  auto in = static_cast<double>(s.input_tokens);
  auto out = static_cast<double>(s.output_tokens);
  s.total_tok_s = per_second(in + out, s.duration_s);
  s.output_tok_s = per_second(out, s.duration_s);
  s.input_tok_s = per_second(in, s.duration_s);
  s.total_tok_s_per_gpu = s.total_tok_s / s.gpus;
  s.output_tok_s_per_gpu = s.output_tok_s / s.gpus;
  s.input_tok_s_per_gpu = s.input_tok_s / s.gpus;
  s.request_throughput = per_second(static_cast<double>(s.requests_completed), s.duration_s);
  s.goodput = options.slo.empty()
                  ? kNaN
                  : per_second(static_cast<double>(s.goodput_requests), s.duration_s);
  s.prefix_cache_hit = any_cached && cached_isl_sum > 0
                           ? static_cast<double>(cached_sum) / static_cast<double>(cached_isl_sum)
                           : kNaN;
  s.trace_prefix_hit = s.input_tokens > 0 ? static_cast<double>(reusable_sum) / in : kNaN;

  // Validity: judged on the requests that got an answer (completed + failed).
  int64_t answered = s.requests_completed + s.requests_failed;
  if (s.requests_completed == 0) {
    s.invalid_reasons.push_back("no profiling request succeeded");
  }
  if (answered > 0) {
    double failed = static_cast<double>(s.requests_failed) / static_cast<double>(answered);
    double overflow = static_cast<double>(s.context_overflows) / static_cast<double>(answered);
    if (failed > options.max_failed_fraction) {
      s.invalid_reasons.push_back(fmt::format("{} of {} requests failed ({} > {})",
                                              s.requests_failed, answered, percent(failed),
                                              percent(options.max_failed_fraction)));
    }
    if (overflow > options.max_overflow_fraction) {
      s.invalid_reasons.push_back(fmt::format("{} of {} requests overflowed the context ({} > {})",
                                              s.context_overflows, answered, percent(overflow),
                                              percent(options.max_overflow_fraction)));
    }
  }
  s.valid = s.invalid_reasons.empty();

  if (s.requests_without_usage > 0) {
    s.warnings.push_back(fmt::format(
        "{} of {} successful requests had no usage chunk: their token counts are local counts",
        s.requests_without_usage, s.requests_completed));
  }
  if (s.schedule_lag_ms.count > 0 && s.schedule_lag_ms.p99 > options.schedule_lag_warn_ms) {
    s.warnings.push_back(
        fmt::format("schedule lag p99 is {:.1f} ms (> {} ms): the client fell behind",
                    s.schedule_lag_ms.p99, options.schedule_lag_warn_ms));
  }
  warn_thin_percentiles("TTFT", s.ttft_ms, s.warnings);
  warn_thin_percentiles("ITL", s.itl_ms, s.warnings);
  warn_thin_percentiles("E2EL", s.e2el_ms, s.warnings);
  if (s.requests_incomplete > 0) {
    s.warnings.push_back(
        fmt::format("{} requests were still in flight when the run ended", s.requests_incomplete));
  }
  return s;
}

void note_skipped_traces(Summary& summary, const std::vector<TraceSkip>& skipped) {
  summary.trace_files_skipped += static_cast<int64_t>(skipped.size());
  for (const TraceSkip& skip : skipped) {
    summary.warnings.push_back(fmt::format("trace file skipped: {}", skip.reason));
  }
}

}  // namespace paceline::bench
