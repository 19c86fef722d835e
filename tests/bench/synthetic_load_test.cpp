// The load vllm bench serve generates, reproduced: gamma inter-arrival gaps with mean 1/rate and
// coefficient of variation 1/sqrt(burstiness), checked statistically on seeded runs of a few
// thousand arrivals, and the random dataset's length ranges.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "base/error.h"
#include "bench/synthetic_load.h"

namespace paceline::bench {
namespace {

struct GapStats {
  double mean = 0;
  double cv = 0;
  std::vector<double> sorted;
};

GapStats gaps_of(const std::vector<double>& times_ms) {
  GapStats g;
  for (size_t i = 1; i < times_ms.size(); ++i) g.sorted.push_back(times_ms[i] - times_ms[i - 1]);
  double n = static_cast<double>(g.sorted.size());
  g.mean = std::accumulate(g.sorted.begin(), g.sorted.end(), 0.0) / n;
  double var = 0;
  for (double x : g.sorted) var += (x - g.mean) * (x - g.mean);
  g.cv = std::sqrt(var / (n - 1)) / g.mean;
  std::sort(g.sorted.begin(), g.sorted.end());
  return g;
}

TEST(ArrivalProcess, FirstRequestGoesAtOnceAndTimesNeverGoBack) {
  std::vector<double> t = arrival_times_ms(500, {5.0, 1.0, 1});
  ASSERT_EQ(t.size(), 500u);
  EXPECT_EQ(t[0], 0.0);
  EXPECT_TRUE(std::is_sorted(t.begin(), t.end()));
  EXPECT_EQ(t, arrival_times_ms(500, {5.0, 1.0, 1}));  // one seed, one run
  EXPECT_NE(t, arrival_times_ms(500, {5.0, 1.0, 2}));
}

TEST(ArrivalProcess, PoissonGapsAreExponentialWithMeanOneOverTheRate) {
  // 4,000 gaps at 20 req/s: mean 50 ms within 5% (about 3 standard errors), CV 1 within 0.06,
  // and the Kolmogorov-Smirnov distance to Exp(mean 50 ms) under its 1% critical value
  // 1.63 / sqrt(n).
  GapStats g = gaps_of(arrival_times_ms(4001, {20.0, 1.0, 7}));
  EXPECT_NEAR(g.mean, 50.0, 2.5);
  EXPECT_NEAR(g.cv, 1.0, 0.06);
  double n = static_cast<double>(g.sorted.size());
  double d = 0;
  for (size_t i = 0; i < g.sorted.size(); ++i) {
    double f = 1.0 - std::exp(-g.sorted[i] / 50.0);
    d = std::max({d, std::abs(f - static_cast<double>(i) / n),
                  std::abs(static_cast<double>(i + 1) / n - f)});
  }
  EXPECT_LT(d, 1.63 / std::sqrt(n)) << "K-S distance";
}

TEST(ArrivalProcess, BurstinessSetsTheSpreadButNotTheMean) {
  // Gamma(shape B, scale 1/(R B)): mean 1/R, CV 1/sqrt(B).
  for (double b : {0.25, 0.5, 2.0, 4.0}) {
    GapStats g = gaps_of(arrival_times_ms(4001, {10.0, b, 11}));
    double cv = 1.0 / std::sqrt(b);
    EXPECT_NEAR(g.mean, 100.0, 100.0 * 3 * cv / std::sqrt(4000.0)) << "burstiness " << b;
    EXPECT_NEAR(g.cv, cv, 0.1 * cv) << "burstiness " << b;
  }
}

TEST(ArrivalProcess, GammaDrawsHaveTheShapeAsMeanAndVariance) {
  for (double shape : {0.3, 1.0, 3.5}) {
    SplitMix64 rng(42);
    double sum = 0, sum2 = 0;
    const int n = 20000;
    for (int i = 0; i < n; ++i) {
      double x = sample_gamma(rng, shape);
      ASSERT_GE(x, 0.0);
      sum += x;
      sum2 += x * x;
    }
    double mean = sum / n, var = sum2 / n - mean * mean;
    EXPECT_NEAR(mean, shape, 4 * std::sqrt(shape / n)) << shape;
    EXPECT_NEAR(var, shape, 0.08 * shape) << shape;
  }
}

TEST(ArrivalProcess, InfiniteRateSendsEverythingAtOnceAndBadFlagsAreNamed) {
  std::vector<double> t = arrival_times_ms(10, {INFINITY, 1.0, 0});
  EXPECT_EQ(t, std::vector<double>(10, 0.0));
  try {
    arrival_times_ms(3, {0.0, 1.0, 0});
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "--request-rate must be positive (or inf), got 0");
  }
  try {
    arrival_times_ms(3, {1.0, -1.0, 0});
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "--burstiness must be a positive number, got -1");
  }
}

TEST(ArrivalProcess, ReplacesATracesTimesAndItsSessionChains) {
  std::vector<MooncakeRecord> records(3);
  records[1].session_id = "s";
  records[2].session_id = "s";
  records[2].delay_ms = 500;
  set_arrival_times(records, {2.0, 1.0, 3});
  std::vector<double> t = arrival_times_ms(3, {2.0, 1.0, 3});
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(records[i].timestamp_ms, t[i]);
    EXPECT_FALSE(records[i].session_id);
    EXPECT_FALSE(records[i].delay_ms);
  }
}

TEST(RandomDataset, LengthsCoverTheWholeRangeUniformly) {
  // L = 100, r = 0.1: [90, 110] inclusive, 21 values; output 10 with r = 0.1: [9, 11].
  RandomDataset d;
  d.count = 4200;
  d.input_len = 100;
  d.output_len = 10;
  d.range_ratio = 0.1;
  std::vector<MooncakeRecord> records = random_dataset(d);
  ASSERT_EQ(records.size(), 4200u);
  std::map<int64_t, int> in_counts, out_counts;
  for (const MooncakeRecord& r : records) {
    ++in_counts[r.input_length];
    ++out_counts[r.output_length];
    EXPECT_TRUE(r.hash_ids.empty());
    EXPECT_EQ(r.timestamp_ms, 0.0);
  }
  EXPECT_EQ(in_counts.begin()->first, 90);
  EXPECT_EQ(in_counts.rbegin()->first, 110);
  EXPECT_EQ(in_counts.size(), 21u);
  for (auto [len, n] : in_counts) EXPECT_NEAR(n, 200, 60) << len;  // 200 each, ~4 sigma
  EXPECT_EQ(out_counts.begin()->first, 9);
  EXPECT_EQ(out_counts.rbegin()->first, 11);

  d.range_ratio = 0;  // fixed lengths
  for (const MooncakeRecord& r : random_dataset(d)) {
    EXPECT_EQ(r.input_length, 100);
    EXPECT_EQ(r.output_length, 10);
  }
}

TEST(RandomDataset, BadFlagsAreNamed) {
  RandomDataset d;
  d.range_ratio = 1.0;
  try {
    random_dataset(d);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "--random-range-ratio must be in [0, 1), got 1");
  }
  d.range_ratio = 0;
  d.input_len = 0;
  EXPECT_THROW(random_dataset(d), Error);
  d.input_len = 10;
  d.count = 0;
  EXPECT_THROW(random_dataset(d), Error);
}

}  // namespace
}  // namespace paceline::bench
