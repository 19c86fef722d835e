#pragma once
// Summary statistics with numpy's conventions, so our numbers match scripts that post-process
// with numpy: percentiles use the default "linear" method (index (n-1)*q/100 into the sorted
// values, linear interpolation between neighbours), std is the population deviation (ddof=0).
// An empty sample gives NaN, which the writers print as null.
#include <cstddef>
#include <span>
#include <vector>

namespace paceline::bench {

// q in [0, 100]; `sorted` ascending.
double percentile_sorted(std::span<const double> sorted, double q);
// Sorts a copy.
double percentile(std::vector<double> values, double q);
double mean(std::span<const double> values);
// Population standard deviation: sqrt(mean((x - mean)^2)).
double stddev(std::span<const double> values);

struct Distribution {
  size_t count = 0;
  double mean = 0, std = 0, min = 0, max = 0;
  double p50 = 0, p75 = 0, p90 = 0, p95 = 0, p99 = 0;
};

// The percentiles every report shows: mean, p50, p75, p90, p95, p99, std (plus count, min, max).
Distribution describe(std::vector<double> values);

}  // namespace paceline::bench
