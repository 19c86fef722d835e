// `paceline compare` on hand-made summaries: relative deltas of B over A, the spec's noise band
// (max |x - median| / median of the repeats) and bold only outside it.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "bench/compare.h"
#include "fake_runs.h"

namespace paceline::bench {
namespace {

using namespace test_util;

nlohmann::json run(double total_tok_s, double ttft_p90_ms, double output_tok_s = 100) {
  Summary s = fake_summary(total_tok_s, 50);
  s.ttft_ms.p90 = ttft_p90_ms;
  s.output_tok_s = output_tok_s;
  return summary_to_json(s, {{"concurrency", 4}});
}

const MetricDelta& metric(const Comparison& c, const std::string& path) {
  for (const MetricDelta& d : c.metrics) {
    if (d.metric.path == path) return d;
  }
  throw std::runtime_error("no metric " + path);
}

TEST(NoiseBand, MaxDeviationFromTheMedianOverTheMedian) {
  EXPECT_DOUBLE_EQ(noise_band({100, 104, 95, 101, 98}), 0.05);
  EXPECT_DOUBLE_EQ(noise_band({10, 12}), 1.0 / 11.0);  // median 11
  EXPECT_TRUE(std::isnan(noise_band({100})));
  EXPECT_TRUE(std::isnan(noise_band({})));
  EXPECT_TRUE(std::isnan(noise_band({0, 0, 0})));
  EXPECT_DOUBLE_EQ(noise_band({100, NAN, 110}), 5.0 / 105.0);  // non-finite values ignored
}

TEST(Compare, RelativeDeltaOfBOverAWithoutRepeats) {
  Comparison c = compare_runs({"off", {"off"}, {run(1000, 400)}}, {"on", {"on"}, {run(1100, 300)}});
  const MetricDelta& tput = metric(c, "total_tok_s");
  EXPECT_DOUBLE_EQ(tput.a, 1000);
  EXPECT_DOUBLE_EQ(tput.b, 1100);
  EXPECT_NEAR(tput.delta, 0.10, 1e-12);
  EXPECT_TRUE(std::isnan(tput.band));
  EXPECT_FALSE(tput.outside_band);  // no band, nothing is called significant
  EXPECT_TRUE(tput.improved);
  const MetricDelta& ttft = metric(c, "ttft_ms.p90");
  EXPECT_NEAR(ttft.delta, -0.25, 1e-12);
  EXPECT_TRUE(ttft.improved);  // lower is better
  std::string md = comparison_markdown(c);
  EXPECT_NE(md.find("| total tok/s | 1000.0 | 1100.0 | +10.0% | n/a | higher |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| TTFT p90 (ms) | 400.0 | 300.0 | -25.0% | n/a | lower |"), std::string::npos)
      << md;
  EXPECT_EQ(md.find("**"), std::string::npos);
}

TEST(Compare, RepeatsGiveTheBandAndBoldOutsideIt) {
  // A: total 1000, 1040, 980 (median 1000, band 4%); B: 1100, 1090, 1120 (median 1100, band
  // 20/1100 = 1.8%). The band is the wider, 4%: +10% is outside it.
  // Output tok/s: A 100, 103, 99 (band 3%); B 102, 102, 102: +2% is inside it.
  CompareSide a{"off",
                {"off", "off-2", "off-3"},
                {run(1000, 400, 100), run(1040, 410, 103), run(980, 390, 99)}};
  CompareSide b{"on",
                {"on", "on-2", "on-3"},
                {run(1100, 300, 102), run(1090, 310, 102), run(1120, 290, 102)}};
  Comparison c = compare_runs(a, b);
  const MetricDelta& tput = metric(c, "total_tok_s");
  EXPECT_DOUBLE_EQ(tput.a, 1000);
  EXPECT_DOUBLE_EQ(tput.b, 1100);
  EXPECT_NEAR(tput.band, 0.04, 1e-12);
  EXPECT_TRUE(tput.outside_band);
  const MetricDelta& out = metric(c, "output_tok_s");
  EXPECT_NEAR(out.delta, 0.02, 1e-12);
  EXPECT_NEAR(out.band, 0.03, 1e-12);
  EXPECT_FALSE(out.outside_band);

  std::string md = comparison_markdown(c);
  EXPECT_NE(md.find("| total tok/s | 1000.0 | 1100.0 | **+10.0%** | ±4.0% | higher |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| output tok/s | 100.0 | 102.0 | +2.0% | ±3.0% | higher |"), std::string::npos)
      << md;

  nlohmann::json j = comparison_json(c);
  EXPECT_EQ(j["a"]["runs"], 3);
  bool seen = false;
  for (const auto& m : j["metrics"]) {
    if (m["metric"] == "total_tok_s") {
      seen = true;
      EXPECT_TRUE(m["outside_band"].get<bool>());
      EXPECT_NEAR(m["delta_pct"].get<double>(), 10.0, 1e-9);
      EXPECT_NEAR(m["noise_band_pct"].get<double>(), 4.0, 1e-9);
      EXPECT_EQ(m["a_values"].size(), 3u);
    }
    if (m["metric"] == "output_tok_s") {
      EXPECT_FALSE(m["outside_band"].get<bool>());
    }
  }
  EXPECT_TRUE(seen);
}

TEST(Compare, RepeatsOnOneSideOnlyUseThatSidesBand) {
  Comparison c = compare_runs({"a", {}, {run(1000, 400), run(1100, 400), run(900, 400)}},
                              {"b", {}, {run(1050, 400)}});
  const MetricDelta& tput = metric(c, "total_tok_s");
  EXPECT_NEAR(tput.band, 0.10, 1e-12);
  EXPECT_NEAR(tput.delta, 0.05, 1e-12);
  EXPECT_FALSE(tput.outside_band);
}

TEST(Compare, MissingValuesAndInvalidRuns) {
  nlohmann::json a = run(1000, 400);
  nlohmann::json b = run(1100, 300);
  a["goodput"] = nullptr;
  b["valid"] = false;
  b["invalid_reasons"] = {"12.0% of requests failed (limit 10%)"};
  Comparison c = compare_runs({"a", {"a"}, {a}}, {"b", {"b"}, {b}});
  EXPECT_TRUE(std::isnan(metric(c, "goodput").delta));
  ASSERT_EQ(c.invalid.size(), 1u);
  EXPECT_EQ(c.invalid[0], "B (b): 12.0% of requests failed (limit 10%)");
  std::string md = comparison_markdown(c);
  EXPECT_EQ(md.rfind("> **INVALID RUN** B (b)", 0), 0u) << md;
  EXPECT_NE(md.find("| goodput (req/s) | n/a |"), std::string::npos) << md;
}

TEST(Compare, FormatDelta) {
  EXPECT_EQ(format_delta(0.053), "+5.3%");
  EXPECT_EQ(format_delta(-0.008), "-0.8%");
  EXPECT_EQ(format_delta(NAN), "n/a");
}

}  // namespace
}  // namespace paceline::bench
