// Percentiles equal numpy's default (linear) method: index = (n-1)*q/100 into the sorted values,
// interpolating linearly between the two neighbours. Expected values below are worked by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "bench/stats.h"

namespace paceline::bench {
namespace {

TEST(Percentile, FiveValuesByHand) {
  std::vector<double> x = {35, 15, 50, 40, 20};  // sorted: 15 20 35 40 50, n-1 = 4
  EXPECT_DOUBLE_EQ(percentile(x, 0), 15);
  EXPECT_DOUBLE_EQ(percentile(x, 10), 17);    // index 0.4: 15 + 0.4 * 5
  EXPECT_DOUBLE_EQ(percentile(x, 25), 20);    // index 1
  EXPECT_DOUBLE_EQ(percentile(x, 40), 29);    // index 1.6: 20 + 0.6 * 15
  EXPECT_DOUBLE_EQ(percentile(x, 50), 35);    // index 2
  EXPECT_DOUBLE_EQ(percentile(x, 75), 40);    // index 3
  EXPECT_DOUBLE_EQ(percentile(x, 90), 46);    // index 3.6: 40 + 0.6 * 10
  EXPECT_DOUBLE_EQ(percentile(x, 95), 48);    // index 3.8
  EXPECT_DOUBLE_EQ(percentile(x, 99), 49.6);  // index 3.96
  EXPECT_DOUBLE_EQ(percentile(x, 100), 50);
}

TEST(Percentile, FourValuesByHand) {
  std::vector<double> x = {1, 2, 3, 4};       // n-1 = 3
  EXPECT_DOUBLE_EQ(percentile(x, 50), 2.5);   // index 1.5
  EXPECT_DOUBLE_EQ(percentile(x, 75), 3.25);  // index 2.25
  EXPECT_DOUBLE_EQ(percentile(x, 90), 3.7);   // index 2.7
  EXPECT_DOUBLE_EQ(percentile(x, 99), 3.97);  // index 2.97
}

TEST(Percentile, SmallAndDegenerateSamples) {
  EXPECT_DOUBLE_EQ(percentile({10, 20}, 90), 19);
  EXPECT_DOUBLE_EQ(percentile({7}, 99), 7);
  EXPECT_DOUBLE_EQ(percentile({5, 5, 5}, 37), 5);
  EXPECT_TRUE(std::isnan(percentile({}, 50)));
  EXPECT_THROW(percentile({1, 2}, 101), Error);
  EXPECT_THROW(percentile({1, 2}, -1), Error);
}

TEST(Percentile, ExactAtOrderStatistics) {
  // Values that are not exact in binary come back bit for bit at whole indices.
  std::vector<double> x = {0.1, 0.2, 0.3, 0.7, 1.1};
  EXPECT_EQ(percentile(x, 25), 0.2);
  EXPECT_EQ(percentile(x, 75), 0.7);
  EXPECT_EQ(percentile(x, 100), 1.1);
}

TEST(MeanAndStd, PopulationDeviationLikeNumpyDefault) {
  std::vector<double> x = {2, 4, 4, 4, 5, 5, 7, 9};
  EXPECT_DOUBLE_EQ(mean(x), 5);
  EXPECT_DOUBLE_EQ(stddev(x), 2);  // ddof = 0; the sample deviation would be 2.138...
  EXPECT_DOUBLE_EQ(stddev(std::vector<double>{3}), 0);
  EXPECT_TRUE(std::isnan(mean(std::vector<double>{})));
}

TEST(Describe, ReportsThePercentilesOfTheReport) {
  Distribution d = describe({100, 300, 200});
  EXPECT_EQ(d.count, 3u);
  EXPECT_DOUBLE_EQ(d.mean, 200);
  EXPECT_DOUBLE_EQ(d.p50, 200);
  EXPECT_DOUBLE_EQ(d.p75, 250);  // index 1.5
  EXPECT_DOUBLE_EQ(d.p90, 280);  // index 1.8
  EXPECT_DOUBLE_EQ(d.p95, 290);
  EXPECT_DOUBLE_EQ(d.p99, 298);
  EXPECT_DOUBLE_EQ(d.std, std::sqrt(20000.0 / 3.0));
  EXPECT_DOUBLE_EQ(d.min, 100);
  EXPECT_DOUBLE_EQ(d.max, 300);
  Distribution empty = describe({});
  EXPECT_EQ(empty.count, 0u);
  EXPECT_TRUE(std::isnan(empty.p90));
}

}  // namespace
}  // namespace paceline::bench
