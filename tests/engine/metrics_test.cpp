#include "engine/metrics.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace paceline {
namespace {

TEST(MetricsRegistry, SameNameAndLabelsIsTheSameSeries) {
  MetricsRegistry reg;
  reg.counter("requests_total", "requests").inc();
  reg.counter("requests_total", "requests").inc(2);
  EXPECT_DOUBLE_EQ(reg.counter("requests_total", "requests").value(), 3.0);
  reg.counter("requests_total", "requests", {{"kind", "x"}}).inc();
  EXPECT_DOUBLE_EQ(reg.counter("requests_total", "requests").value(), 3.0);
}

TEST(MetricsRegistry, NameCannotChangeType) {
  MetricsRegistry reg;
  reg.counter("x", "x");
  EXPECT_THROW(reg.gauge("x", "x"), Error);
}

TEST(Histogram, BucketsAreCumulativeWithPrometheusLeSemantics) {
  Histogram h({1.0, 2.0, 4.0});
  for (double v : {0.5, 1.0, 1.5, 3.0, 9.0}) h.observe(v);
  EXPECT_EQ(h.cumulative_counts(), (std::vector<uint64_t>{2, 3, 4, 5}));
  EXPECT_EQ(h.count(), 5u);
  EXPECT_DOUBLE_EQ(h.sum(), 15.0);
  EXPECT_THROW(Histogram({2.0, 1.0}), Error);
}

TEST(MetricsRegistry, RendersPrometheusText) {
  MetricsRegistry reg;
  reg.gauge("num_requests_running", "Running requests").set(3);
  reg.counter("prompt_tokens_total", "Prompt tokens").inc(42);
  reg.histogram("step_time_seconds", "Step time", {0.01, 0.1}, {{"kind", "decode"}}).observe(0.05);
  std::string text = reg.render_prometheus("paceline:");
  EXPECT_NE(text.find("# TYPE paceline:num_requests_running gauge\npaceline:num_requests_running 3\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("paceline:prompt_tokens_total 42\n"), std::string::npos) << text;
  EXPECT_NE(text.find("paceline:step_time_seconds_bucket{kind=\"decode\",le=\"0.01\"} 0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("paceline:step_time_seconds_bucket{kind=\"decode\",le=\"0.1\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("paceline:step_time_seconds_bucket{kind=\"decode\",le=\"+Inf\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("paceline:step_time_seconds_count{kind=\"decode\"} 1\n"), std::string::npos);
}

TEST(ExponentialBuckets, GrowByFactor) {
  EXPECT_EQ(exponential_buckets(1, 2, 4), (std::vector<double>{1, 2, 4, 8}));
  EXPECT_THROW(exponential_buckets(0, 2, 4), Error);
}

}  // namespace
}  // namespace paceline
