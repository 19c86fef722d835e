#include "bench/compare.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "bench/json_number.h"
#include "bench/report_read.h"
#include "bench/stats.h"

namespace paceline::bench {

namespace {

std::vector<double> finite_values(const std::vector<double>& values) {
  std::vector<double> out;
  for (double v : values) {
    if (std::isfinite(v)) out.push_back(v);
  }
  return out;
}

double median_of(const std::vector<double>& values) {
  std::vector<double> v = finite_values(values);
  return v.empty() ? kNaN : percentile(std::move(v), 50);
}

nlohmann::json numbers(const std::vector<double>& values) {
  nlohmann::json out = nlohmann::json::array();
  for (double v : values) out.push_back(number_or_null(v));
  return out;
}

void note_invalid(const char* side, const CompareSide& s, std::vector<std::string>& out) {
  for (size_t i = 0; i < s.runs.size(); ++i) {
    const nlohmann::json& j = s.runs[i];
    auto valid = j.find("valid");
    if (valid == j.end() || !valid->is_boolean() || valid->get<bool>()) continue;
    std::string reasons;
    if (auto r = j.find("invalid_reasons"); r != j.end() && r->is_array()) {
      for (const auto& why : *r) {
        reasons +=
            (reasons.empty() ? "" : "; ") + (why.is_string() ? why.get<std::string>() : why.dump());
      }
    }
    std::string dir = i < s.dirs.size() ? s.dirs[i] : fmt::format("run {}", i + 1);
    out.push_back(fmt::format("{} ({}): {}", side, dir, reasons));
  }
}

}  // namespace

const std::vector<CompareMetric>& compare_metrics() {
  static const std::vector<CompareMetric> metrics = {
      {"total_tok_s", "total tok/s", Better::kHigher, 1},
      {"total_tok_s_per_gpu", "total tok/s per GPU", Better::kHigher, 1},
      {"output_tok_s", "output tok/s", Better::kHigher, 1},
      {"request_throughput", "requests/s", Better::kHigher, 3},
      {"goodput", "goodput (req/s)", Better::kHigher, 3},
      {"ttft_ms.p50", "TTFT p50 (ms)", Better::kLower, 1},
      {"ttft_ms.p90", "TTFT p90 (ms)", Better::kLower, 1},
      {"ttft_ms.p99", "TTFT p99 (ms)", Better::kLower, 1},
      {"itl_ms.p50", "ITL p50 (ms)", Better::kLower, 2},
      {"itl_ms.p90", "ITL p90 (ms)", Better::kLower, 2},
      {"itl_ms.p99", "ITL p99 (ms)", Better::kLower, 2},
      {"e2el_ms.p50", "E2EL p50 (ms)", Better::kLower, 1},
      {"e2el_ms.p90", "E2EL p90 (ms)", Better::kLower, 1},
      {"interactivity_p90", "interactivity p90 (tok/s/user)", Better::kHigher, 1},
      {"e2e_norm_interactivity_p90", "E2E-norm. interactivity p90 (tok/s/user)", Better::kHigher,
       1},
      {"prefix_cache_hit", "prefix cache hit", Better::kHigher, 3},
  };
  return metrics;
}

double noise_band(const std::vector<double>& values) {
  std::vector<double> v = finite_values(values);
  if (v.size() < 2) return kNaN;
  double med = percentile(v, 50);
  if (med == 0) return kNaN;
  double worst = 0;
  for (double x : v) worst = std::max(worst, std::abs(x - med));
  return worst / std::abs(med);
}

Comparison compare_runs(CompareSide a, CompareSide b) {
  Comparison c;
  note_invalid("A", a, c.invalid);
  note_invalid("B", b, c.invalid);
  for (const CompareMetric& m : compare_metrics()) {
    MetricDelta d;
    d.metric = m;
    for (const auto& j : a.runs) d.a_values.push_back(json_number_at(j, m.path));
    for (const auto& j : b.runs) d.b_values.push_back(json_number_at(j, m.path));
    d.a = median_of(d.a_values);
    d.b = median_of(d.b_values);
    d.delta =
        std::isfinite(d.a) && std::isfinite(d.b) && d.a != 0 ? (d.b - d.a) / std::abs(d.a) : kNaN;
    double band_a = noise_band(d.a_values), band_b = noise_band(d.b_values);
    d.band = std::isnan(band_a) ? band_b : std::isnan(band_b) ? band_a : std::max(band_a, band_b);
    d.outside_band = std::isfinite(d.delta) && std::isfinite(d.band) && std::abs(d.delta) > d.band;
    d.improved =
        std::isfinite(d.delta) && (m.better == Better::kHigher ? d.delta > 0 : d.delta < 0);
    c.metrics.push_back(std::move(d));
  }
  c.a = std::move(a);
  c.b = std::move(b);
  return c;
}

std::string format_delta(double fraction) {
  return std::isfinite(fraction) ? fmt::format("{:+.1f}%", fraction * 100.0) : "n/a";
}

std::string comparison_markdown(const Comparison& c) {
  std::string out;
  for (const std::string& why : c.invalid) out += fmt::format("> **INVALID RUN** {}\n", why);
  if (!out.empty()) out += '\n';
  out += fmt::format("B = {} ({} run{}) vs A = {} ({} run{}); ", c.b.name, c.b.runs.size(),
                     c.b.runs.size() == 1 ? "" : "s", c.a.name, c.a.runs.size(),
                     c.a.runs.size() == 1 ? "" : "s");
  bool any_band = std::any_of(c.metrics.begin(), c.metrics.end(),
                              [](const MetricDelta& d) { return std::isfinite(d.band); });
  out += any_band ? "deltas outside the noise band (max |x - median| / median of the repeats) "
                    "in bold.\n\n"
                  : "no repeats, so no noise band.\n\n";
  out +=
      "| metric | A | B | delta (B vs A) | noise band | better |\n"
      "| :--- | ---: | ---: | ---: | ---: | :---: |\n";
  for (const MetricDelta& d : c.metrics) {
    auto value = [&](double v) {
      return std::isfinite(v) ? fmt::format("{:.{}f}", v, d.metric.decimals) : "n/a";
    };
    std::string delta = format_delta(d.delta);
    if (d.outside_band) delta = "**" + delta + "**";
    std::string band = std::isfinite(d.band) ? fmt::format("±{:.1f}%", d.band * 100.0) : "n/a";
    out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", d.metric.label, value(d.a), value(d.b),
                       delta, band, d.metric.better == Better::kHigher ? "higher" : "lower");
  }
  return out;
}

nlohmann::json comparison_json(const Comparison& c) {
  nlohmann::json metrics = nlohmann::json::array();
  for (const MetricDelta& d : c.metrics) {
    metrics.push_back({
        {"metric", d.metric.path},
        {"label", d.metric.label},
        {"better", d.metric.better == Better::kHigher ? "higher" : "lower"},
        {"a", number_or_null(d.a)},
        {"b", number_or_null(d.b)},
        {"delta_pct", number_or_null(d.delta * 100.0)},
        {"noise_band_pct", number_or_null(d.band * 100.0)},
        {"outside_band", d.outside_band},
        {"improved", d.improved},
        {"a_values", numbers(d.a_values)},
        {"b_values", numbers(d.b_values)},
    });
  }
  auto side = [](const CompareSide& s) {
    return nlohmann::json{{"name", s.name}, {"runs", s.runs.size()}, {"dirs", s.dirs}};
  };
  return {{"a", side(c.a)}, {"b", side(c.b)}, {"invalid", c.invalid}, {"metrics", metrics}};
}

}  // namespace paceline::bench
