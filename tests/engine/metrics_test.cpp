#include "engine/metrics.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "prometheus_text.h"

namespace paceline {
namespace {

using testing::parse_prometheus;
using testing::PromText;

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
  reg.gauge("x", "x");
  EXPECT_THROW(reg.histogram("x", "x", {1.0}), Error);
}

// promtool's naming rules hold at registration, so a bad name fails the first test that
// registers it instead of a user's scrape.
TEST(MetricsRegistry, NamesFollowPrometheusConventions) {
  MetricsRegistry reg;
  EXPECT_THROW(reg.counter("requests", "no _total"), Error);
  EXPECT_THROW(reg.gauge("kv_cache_blocks_total", "a gauge named _total"), Error);
  EXPECT_THROW(reg.histogram("latency_total", "a histogram named _total", {1.0}), Error);
  EXPECT_THROW(reg.gauge("KvBlocks", "camelCase"), Error);
  EXPECT_THROW(reg.gauge("queue_count", "a histogram's suffix"), Error);
  EXPECT_THROW(reg.gauge("bad-name", "not a name"), Error);
  EXPECT_THROW(reg.gauge("vllm:x", "the prefix is added when rendering"), Error);
  EXPECT_THROW(reg.histogram("h", "le is the histogram's own", {1.0}, {{"le", "1"}}), Error);
  EXPECT_THROW(reg.gauge("g", "bad label", {{"1kind", "x"}}), Error);
  EXPECT_THROW(reg.set_constant_labels({{"model-name", "x"}}), Error);
  EXPECT_NO_THROW(reg.counter("requests_total", "fine"));
  EXPECT_NO_THROW(reg.gauge("kv_cache_blocks", "fine"));
  EXPECT_EQ(parse_prometheus(reg.render_prometheus("p:")).problems, std::vector<std::string>{});
}

TEST(MetricsRegistry, ConstantLabelsAndThePrefixReachEverySeries) {
  MetricsRegistry reg;
  reg.set_constant_labels({{"model_name", "tiny \"q\""}});
  reg.set_prefix("vllm:");
  reg.counter("request_success_total", "ok", {{"finished_reason", "stop"}}).inc();
  reg.gauge("num_requests_running", "running").set(2);
  reg.histogram("time_to_first_token_seconds", "ttft", {0.1, 1.0}).observe(0.5);
  const std::string text = reg.render_prometheus();
  EXPECT_NE(text.find("vllm:request_success_total{finished_reason=\"stop\","
                      "model_name=\"tiny \\\"q\\\"\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("vllm:num_requests_running{model_name=\"tiny \\\"q\\\"\"} 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("vllm:time_to_first_token_seconds_bucket{model_name=\"tiny \\\"q\\\"\","
                      "le=\"1\"} 1\n"),
            std::string::npos)
      << text;
  const PromText parsed = parse_prometheus(text);
  EXPECT_EQ(parsed.problems, std::vector<std::string>{}) << text;
  EXPECT_EQ(parsed.value("vllm:time_to_first_token_seconds_count", {{"model_name", "tiny \"q\""}}),
            1.0);
  // The default prefix is paceline's own.
  MetricsRegistry plain;
  plain.gauge("g", "g");
  EXPECT_EQ(plain.render_prometheus(), "# HELP paceline:g g\n# TYPE paceline:g gauge\npaceline:g 0\n");
}

TEST(MetricsPrefix, IsAPrometheusNameAndAColon) {
  EXPECT_EQ(metrics_prefix_for("vllm"), "vllm:");
  EXPECT_EQ(metrics_prefix_for("paceline"), "paceline:");
  EXPECT_EQ(metrics_prefix_for(""), "");
  EXPECT_THROW(metrics_prefix_for("vllm:"), Error);
  EXPECT_THROW(metrics_prefix_for("my-server"), Error);
  EXPECT_THROW(metrics_prefix_for("9lives"), Error);
}

TEST(OneTwoFiveBuckets, AreVllmsTokenBounds) {
  EXPECT_EQ(one_two_five_buckets(100), (std::vector<double>{1, 2, 5, 10, 20, 50, 100}));
  EXPECT_EQ(one_two_five_buckets(1), (std::vector<double>{1}));
  EXPECT_EQ(one_two_five_buckets(4096).back(), 2000);
  EXPECT_EQ(one_two_five_buckets(4096).size(), 11u);
  EXPECT_THROW(one_two_five_buckets(0), Error);
}

// The checker the integration tests rely on finds what promtool would refuse.
TEST(PromTextLint, FindsWhatPromtoolRefuses) {
  auto problems = [](const std::string& text) { return parse_prometheus(text).problems; };
  EXPECT_TRUE(problems("# HELP a_total a\n# TYPE a_total counter\na_total 1\n").empty());
  EXPECT_FALSE(problems("# HELP a a\n# TYPE a counter\na 1\n").empty());
  EXPECT_FALSE(problems("# HELP b_total b\n# TYPE b_total gauge\nb_total 1\n").empty());
  EXPECT_FALSE(problems("# TYPE c gauge\nc 1\n").empty());  // no help
  EXPECT_FALSE(problems("# HELP d d\n# TYPE d gauge\nd 1\n# HELP e e\n# TYPE e gauge\ne 1\n"
                        "d{x=\"1\"} 2\n")
                   .empty());  // d in two blocks
  EXPECT_FALSE(problems("# HELP f f\n# TYPE f gauge\nf{x=\"1} 2\n").empty());
  EXPECT_FALSE(problems("# HELP g g\n# TYPE g gauge\ng one\n").empty());
  const std::string h =
      "# HELP lat lat\n# TYPE lat histogram\nlat_bucket{le=\"1\"} 1\nlat_bucket{le=\"+Inf\"} 2\n"
      "lat_sum 3\nlat_count ";
  EXPECT_TRUE(problems(h + "2\n").empty());
  EXPECT_FALSE(problems(h + "3\n").empty());  // +Inf differs from _count
  EXPECT_FALSE(problems("# HELP a:b:c x\n# TYPE a:b:c gauge\na:b:c 1\n").empty());
  EXPECT_FALSE(problems("# HELP step_ms x\n# TYPE step_ms gauge\nstep_ms 1\n").empty());
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
