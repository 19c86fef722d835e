#include "bench/report_records.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "bench/json_number.h"
#include "bench/stats.h"

namespace paceline::bench {

namespace {

constexpr double kBinS = 0.01;

std::string text(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Output tokens per 10 ms bin, keyed by the bin's index since the run started.
class TokenBins {
 public:
  void add(double t_s, double tokens) {
    if (std::isfinite(t_s) && t_s >= 0) bins_[static_cast<int64_t>(t_s / kBinS)] += tokens;
  }
  // `tokens` spread evenly over [from_s, to_s].
  void spread(double from_s, double to_s, double tokens) {
    if (!(to_s > from_s)) return add(from_s, tokens);
    int64_t b0 = static_cast<int64_t>(from_s / kBinS), b1 = static_cast<int64_t>(to_s / kBinS);
    for (int64_t b = b0; b <= b1; ++b) {
      double lo = std::max(from_s, static_cast<double>(b) * kBinS);
      double hi = std::min(to_s, static_cast<double>(b + 1) * kBinS);
      if (hi > lo) bins_[b] += tokens * (hi - lo) / (to_s - from_s);
    }
  }
  std::vector<ThroughputBucket> buckets(double start_s, double end_s, double width_s) const {
    std::vector<ThroughputBucket> out;
    if (!(end_s > start_s)) return out;
    size_t n = static_cast<size_t>(std::ceil((end_s - start_s) / width_s - 1e-9));
    std::vector<double> tokens(n, 0.0);
    for (const auto& [bin, count] : bins_) {
      double t = (static_cast<double>(bin) + 0.5) * kBinS - start_s;
      if (t < 0) continue;
      tokens[std::min(n - 1, static_cast<size_t>(t / width_s))] += count;
    }
    for (size_t i = 0; i < n; ++i) {
      double lo = static_cast<double>(i) * width_s;
      double w = std::min(width_s, end_s - start_s - lo);
      out.push_back({lo, w, w > 0 ? tokens[i] / w : 0.0});
    }
    return out;
  }

 private:
  std::map<int64_t, double> bins_;
};

}  // namespace

RecordSeries read_record_series(const std::string& path, double bucket_s) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open", path);
  RecordSeries s;
  s.profiling_start_s = std::numeric_limits<double>::infinity();
  s.profiling_end_s = -std::numeric_limits<double>::infinity();
  TokenBins bins;
  size_t line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty()) continue;
    nlohmann::json r = nlohmann::json::parse(line, nullptr, false);
    if (r.is_discarded() || !r.is_object()) fail("{}:{}: not a JSON object", path, line_no);
    if (text(r, "phase") != "profiling" || text(r, "status") != "ok") continue;
    double start = number_or_nan(r, "start_s"), first = number_or_nan(r, "first_token_s");
    double last = number_or_nan(r, "last_token_s"), end = number_or_nan(r, "end_s");
    if (!std::isfinite(last)) last = end;
    if (!std::isfinite(end)) end = last;
    if (!std::isfinite(start) || !std::isfinite(first) || !std::isfinite(last)) continue;
    double osl_value = number_or_nan(r, "osl");
    int64_t osl = std::isfinite(osl_value) ? static_cast<int64_t>(osl_value) : 0;
    ++s.profiling_ok;
    s.profiling_start_s = std::min(s.profiling_start_s, start);
    s.profiling_end_s = std::max(s.profiling_end_s, end);
    s.ttft_ms.push_back((first - start) * 1000.0);
    if (osl >= 2) s.itl_ms.push_back((last - first) * 1000.0 / static_cast<double>(osl - 1));
    auto chunks = r.find("chunks");
    if (chunks != r.end() && chunks->is_array() && !chunks->empty()) {
      for (const auto& c : *chunks) {
        if (c.is_array() && c.size() == 2 && c[0].is_number() && c[1].is_number()) {
          bins.add(c[0].get<double>(), c[1].get<double>());
        }
      }
    } else {
      bins.spread(first, last, static_cast<double>(osl));
    }
  }
  if (s.profiling_ok == 0) {
    s.profiling_start_s = s.profiling_end_s = 0;
    s.bucket_s = bucket_s > 0 ? bucket_s : 10.0;
    return s;
  }
  double window = s.profiling_end_s - s.profiling_start_s;
  s.bucket_s = bucket_s > 0 ? bucket_s : (window < 60.0 ? 1.0 : 10.0);
  s.output_throughput = bins.buckets(s.profiling_start_s, s.profiling_end_s, s.bucket_s);
  return s;
}

std::vector<std::pair<double, double>> cdf_points(std::vector<double> values, size_t max_points) {
  std::vector<std::pair<double, double>> out;
  if (values.empty() || max_points < 2) return out;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  if (n <= max_points) {
    out.emplace_back(values.front(), 0.0);
    for (size_t i = 0; i < n; ++i) {
      out.emplace_back(values[i], static_cast<double>(i + 1) / static_cast<double>(n));
    }
    return out;
  }
  for (size_t i = 0; i < max_points; ++i) {
    double q = 100.0 * static_cast<double>(i) / static_cast<double>(max_points - 1);
    out.emplace_back(percentile_sorted(values, q), q / 100.0);
  }
  return out;
}

}  // namespace paceline::bench
