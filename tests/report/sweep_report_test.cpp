// A sweep directory: rows ordered by concurrency whatever order the runs were listed or named
// in, the seed-style Markdown table, and the Pareto chart with its frontier count and the
// direction of each axis.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>

#include "bench/report_html.h"
#include "bench/report_sweep.h"
#include "bench/sweep_manifest.h"
#include "bench/sweep_table.h"
#include "fake_runs.h"
#include "html_check.h"

namespace paceline::bench {
namespace {

using namespace test_util;

// Three points: conc 4 beats conc 16 on both axes, so the frontier is conc 1 and conc 4.
fs::path three_point_sweep(bool with_manifest) {
  fs::path dir = fresh_dir(with_manifest ? "manifest" : "subdirs");
  struct Point {
    int conc;
    double tok_s_per_gpu, interactivity;
  };
  SweepManifest m;
  for (Point p : {Point{16, 250, 20}, Point{1, 100, 50}, Point{4, 300, 40}}) {
    std::string name = "conc-" + std::to_string(p.conc);
    write_fake_run(dir / name, fake_summary(p.tok_s_per_gpu, p.interactivity),
                   {{"concurrency", p.conc}}, {fake_record(0, 0, 0.1, 0.01, 5)});
    m.runs.push_back({name, p.conc, "off"});
  }
  if (with_manifest) write_sweep_manifest(dir.string(), m);
  return dir;
}

std::vector<size_t> row_positions(const std::string& table, std::vector<int> concs) {
  std::vector<size_t> at;
  for (int c : concs) at.push_back(table.find("\n| " + std::to_string(c) + " |"));
  return at;
}

TEST(SweepTable, RowsGoByConcurrency) {
  for (bool with_manifest : {true, false}) {
    fs::path dir = three_point_sweep(with_manifest);
    EXPECT_TRUE(is_sweep_dir(dir.string()));
    EXPECT_FALSE(is_sweep_dir((dir / "conc-4").string()));
    std::vector<RunSummary> runs = read_sweep_runs(dir.string());
    ASSERT_EQ(runs.size(), 3u);
    EXPECT_EQ(runs[0].concurrency, 1);
    EXPECT_EQ(runs[1].concurrency, 4);
    EXPECT_EQ(runs[2].concurrency, 16);
    std::string md = sweep_markdown(runs);
    auto at = row_positions(md, {1, 4, 16});
    ASSERT_NE(at[0], std::string::npos) << md;
    EXPECT_LT(at[0], at[1]) << md;
    EXPECT_LT(at[1], at[2]) << md;
    EXPECT_NE(md.find("| CONC | delayer | total tok/s |"), std::string::npos);
  }
}

TEST(SweepTable, DelayerOffBeforeOnAtEachConcurrency) {
  fs::path dir = fresh_dir("delayer");
  SweepManifest m;
  for (const char* d : {"on", "off"}) {
    for (int conc : {8, 2}) {
      std::string name = fmt::format("c{}-{}", conc, d);
      write_fake_run(dir / name, fake_summary(100.0 * conc, 10),
                     {{"concurrency", conc}, {"delayer", d}});
      m.runs.push_back({name, 0, ""});
    }
  }
  write_sweep_manifest(dir.string(), m);
  std::vector<RunSummary> runs = read_sweep_runs(dir.string());
  ASSERT_EQ(runs.size(), 4u);
  std::vector<std::string> order;
  for (const auto& r : runs) order.push_back(fmt::format("{}-{}", r.concurrency, r.delayer));
  EXPECT_EQ(order, (std::vector<std::string>{"2-off", "2-on", "8-off", "8-on"}));
  EXPECT_NE(sweep_markdown(runs).find("| 2 | off |"), std::string::npos);
}

TEST(SweepReport, ParetoChartWithDirectionsAndFrontierCount) {
  fs::path dir = three_point_sweep(true);
  SweepReport r = write_sweep_report(dir.string());
  EXPECT_EQ(r.points, 3u);
  EXPECT_EQ(r.frontier_points, 2u);
  std::string html = read_text(dir / "report.html");
  EXPECT_EQ(html, r.html);
  EXPECT_EQ(read_text(dir / "sweep.md"), r.markdown);
  EXPECT_EQ(tag_nesting_error(html), "");
  EXPECT_TRUE(external_references(html).empty());
  EXPECT_EQ(count_of(html, "<svg"), 1u);
  EXPECT_NE(html.find("Pareto frontier: 2 of 3 points"), std::string::npos);
  EXPECT_NE(html.find("E2E-normalized interactivity p90 (tok/s/user) - maximize: higher is "
                      "better"),
            std::string::npos);
  EXPECT_NE(html.find("total tok/s per GPU - maximize: higher is better"), std::string::npos);
  // Each run's own report is linked, relative to the sweep, once it exists.
  EXPECT_EQ(html.find("href=\"conc-4/report.html\""), std::string::npos);
  write_report_html((dir / "conc-4").string());
  EXPECT_NE(sweep_report(dir.string()).html.find("href=\"conc-4/report.html\""), std::string::npos);
}

TEST(SweepReport, RunsWithoutInteractivityAreNotPlotted) {
  fs::path dir = three_point_sweep(true);
  Summary s = fake_summary(1000, 0);
  s.e2e_norm_interactivity.p90 = NAN;  // no successful request
  write_fake_run(dir / "conc-16", s, {{"concurrency", 16}});
  SweepReport r = sweep_report(dir.string());
  EXPECT_EQ(r.points, 2u);
  EXPECT_EQ(r.frontier_points, 2u);
}

}  // namespace
}  // namespace paceline::bench
