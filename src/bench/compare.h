#pragma once
// Run B against run A, metric by metric (spec: "Comparison A vs B"): the relative delta of B over
// A, and, when either side was repeated with the same configuration, the noise band: for one
// side, ± max |x_i − median| / median over its runs; with repeats on both sides, the wider of the
// two. Each side's value is the median of its runs. A delta outside the band is bold in the
// Markdown table and `outside_band` in JSON; without repeats there is no band and nothing is bold.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace paceline::bench {

enum class Better { kHigher, kLower };

struct CompareMetric {
  std::string path;   // in summary.json, dotted: "ttft_ms.p90"
  std::string label;  // for the table: "TTFT p90 (ms)"
  Better better = Better::kHigher;
  int decimals = 1;
};

// The key metrics, in table order: throughputs, latencies, interactivity, cache hit.
const std::vector<CompareMetric>& compare_metrics();

// max |x_i − median| / median over the finite values; NaN with fewer than two of them or a zero
// median.
double noise_band(const std::vector<double>& values);

struct MetricDelta {
  CompareMetric metric;
  std::vector<double> a_values, b_values;  // one per run
  double a = 0, b = 0;                     // medians of the finite values; NaN when none
  double delta = 0;                        // (b − a) / a; NaN when a is 0 or missing
  double band = 0;                         // NaN without repeats
  bool outside_band = false;               // |delta| > band
  bool improved = false;                   // the delta goes the metric's better way
};

struct CompareSide {
  std::string name;                  // as shown in the table: the first run's directory
  std::vector<std::string> dirs;     // one per run, for messages; may be shorter than runs
  std::vector<nlohmann::json> runs;  // summary.json of each run; the first is the main one
};

struct Comparison {
  CompareSide a, b;
  std::vector<MetricDelta> metrics;
  std::vector<std::string> invalid;  // "A (dir): reasons" for every invalid run
};

Comparison compare_runs(CompareSide a, CompareSide b);

// "+5.3%" / "-0.8%" / "n/a".
std::string format_delta(double fraction);

std::string comparison_markdown(const Comparison& c);
nlohmann::json comparison_json(const Comparison& c);

}  // namespace paceline::bench
