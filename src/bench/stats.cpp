#include "bench/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"
#include "bench/json_number.h"

namespace paceline::bench {

namespace {

// numpy's interpolation step: a + (b-a)*t below the midpoint, b - (b-a)*(1-t) from it on, which
// keeps the result exact at both ends and is what makes our values bit-equal to numpy's.
double lerp(double a, double b, double t) {
  double d = b - a;
  return t >= 0.5 ? b - d * (1.0 - t) : a + d * t;
}

}  // namespace

double percentile_sorted(std::span<const double> sorted, double q) {
  if (!(q >= 0.0 && q <= 100.0)) fail("percentile {} is outside [0, 100]", q);
  if (sorted.empty()) return kNaN;
  double index = (q / 100.0) * static_cast<double>(sorted.size() - 1);
  double below = std::floor(index);
  auto lo = static_cast<size_t>(below);
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  return lerp(sorted[lo], sorted[hi], index - below);
}

double percentile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  return percentile_sorted(values, q);
}

double mean(std::span<const double> values) {
  if (values.empty()) return kNaN;
  double sum = 0.0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

double stddev(std::span<const double> values) {
  if (values.empty()) return kNaN;
  double m = mean(values);
  double sum = 0.0;
  for (double v : values) sum += (v - m) * (v - m);
  return std::sqrt(sum / static_cast<double>(values.size()));
}

Distribution describe(std::vector<double> values) {
  Distribution d;
  d.count = values.size();
  if (values.empty()) {
    d.mean = d.std = d.min = d.max = d.p50 = d.p75 = d.p90 = d.p95 = d.p99 = kNaN;
    return d;
  }
  std::sort(values.begin(), values.end());
  d.mean = mean(values);
  d.std = stddev(values);
  d.min = values.front();
  d.max = values.back();
  d.p50 = percentile_sorted(values, 50);
  d.p75 = percentile_sorted(values, 75);
  d.p90 = percentile_sorted(values, 90);
  d.p95 = percentile_sorted(values, 95);
  d.p99 = percentile_sorted(values, 99);
  return d;
}

}  // namespace paceline::bench
