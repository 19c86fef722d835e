// report.html for one run: self-contained, well-formed, the summary's values in it, the banners
// that keep a scaled, simulated or invalid run from being mistaken for a real full one.
#include <gtest/gtest.h>

#include "base/error.h"
#include "bench/report_html.h"
#include "fake_runs.h"
#include "html_check.h"

namespace paceline::bench {
namespace {

using namespace test_util;

std::vector<RequestRecord> three_requests() {
  return {fake_record(0, 0.0, 0.55, 0.1, 10), fake_record(1, 0.2, 0.25, 0.05, 4),
          fake_record(2, 0.4, 0.30, 0.0, 1)};
}

TEST(RunReport, SelfContainedWellFormedWithTheValues) {
  fs::path dir = fresh_dir("run");
  nlohmann::json settings = {{"url", "http://localhost:8000"}, {"concurrency", 4}, {"gpus", 1}};
  write_fake_run(dir, fake_summary(1234.5, 61.2), settings, three_requests(),
                 {{"hold_rate", 0.125}});
  write_report_html(dir.string());
  std::string html = read_text(dir / "report.html");

  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(tag_nesting_error(html), "");
  EXPECT_TRUE(external_references(html).empty());
  EXPECT_EQ(count_of(html, "<svg"), 3u);  // throughput over time, TTFT CDF, ITL CDF
  EXPECT_NE(html.find("Output throughput over time"), std::string::npos);
  EXPECT_NE(html.find("TTFT distribution"), std::string::npos);
  EXPECT_NE(html.find("ITL distribution"), std::string::npos);

  for (const char* value : {"1234.5",    // total tok/s
                            "123.25",    // TTFT p50
                            "456.50",    // TTFT p90
                            "789.75",    // TTFT p99
                            "200.12",    // TTFT mean (200.125)
                            "12.25",     // ITL p90
                            "81.6",      // interactivity p90
                            "61.2",      // E2E-normalized interactivity p90
                            "93.4%",     // prefix cache hit
                            "12.5%"}) {  // delayer hold rate
    EXPECT_NE(html.find(value), std::string::npos) << value;
  }
  EXPECT_NE(html.find("delayer hold rate"), std::string::npos);
  EXPECT_NE(html.find("http://localhost:8000"), std::string::npos);  // settings, as text
  EXPECT_NE(html.find("(CONC 4)"), std::string::npos);
  EXPECT_EQ(html.find("INVALID RUN"), std::string::npos);
  EXPECT_EQ(html.find("Scaled trace"), std::string::npos);
  EXPECT_EQ(html.find("[simulated]"), std::string::npos);
}

TEST(RunReport, ScaledSimulatedAndInvalidRunsSaySoFirst) {
  fs::path dir = fresh_dir("run");
  Summary s = fake_summary(500, 40);
  s.valid = false;
  s.invalid_reasons = {"12.0% of requests failed (limit 10%)"};
  s.warnings = {"schedule lag p99 612.0 ms is above 500 ms"};
  nlohmann::json settings = {
      {"concurrency", 8}, {"isl_scale", 0.25}, {"max_isl", 32768}, {"simulated", true}};
  write_fake_run(dir, s, settings, three_requests());
  std::string html = run_report_html(dir.string());
  EXPECT_EQ(tag_nesting_error(html), "");
  size_t invalid = html.find("INVALID RUN (CONC 8): 12.0% of requests failed");
  size_t results = html.find("<h2>Results</h2>");
  ASSERT_NE(invalid, std::string::npos);
  EXPECT_LT(invalid, results);
  EXPECT_NE(html.find("Scaled trace (--isl-scale 0.25, --max-isl 32768"), std::string::npos);
  EXPECT_NE(html.find("[simulated]"), std::string::npos);
  EXPECT_NE(html.find("Simulated run"), std::string::npos);
  EXPECT_NE(html.find("schedule lag p99 612.0 ms"), std::string::npos);
}

TEST(RunReport, WithoutRecordsTheChartsSayNoData) {
  fs::path dir = fresh_dir("run");
  write_fake_run(dir, fake_summary(100, 10), {{"concurrency", 1}});
  fs::remove(dir / "records.jsonl");
  std::string html = run_report_html(dir.string());
  EXPECT_EQ(tag_nesting_error(html), "");
  EXPECT_EQ(count_of(html, "no data"), 3u);
  EXPECT_NE(html.find("records.jsonl not found"), std::string::npos);
}

TEST(RunReport, MissingSummaryFails) {
  fs::path dir = fresh_dir("empty");
  EXPECT_THROW(write_report_html(dir.string()), Error);
}

}  // namespace
}  // namespace paceline::bench
