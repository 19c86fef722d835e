// `paceline serve --model tiny` plus `paceline bench` on a scaled AgentX trace, both as real
// processes: every file is written, records and summary agree, and Ctrl-C still leaves a run.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "../serve/server_process.h"
#include "bench_process.h"

namespace paceline::testing {
namespace {

namespace fs = std::filesystem;

class BenchE2e : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new ServerProcess({}); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("paceline-bench-e2e-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  std::vector<std::string> bench_args(const std::string& duration) const {
    return {"bench",
            "--url",
            "http://127.0.0.1:" + std::to_string(server_->port()),
            "--traces",
            PACELINE_SOURCE_DIR "/../shared/traces/agentx",
            "--concurrency",
            "2",
            "--duration",
            duration,
            "--isl-scale",
            "0.002",
            "--osl-scale",
            "0.02",
            "--warmup-requests-per-lane",
            "1",
            "--drain-timeout",
            "30",
            "--out",
            (dir_ / "run").string()};
  }

  static ServerProcess* server_;
  fs::path dir_;
};

ServerProcess* BenchE2e::server_ = nullptr;

TEST_F(BenchE2e, WritesEveryFileAndTheSummaryAgreesWithTheRecords) {
  ProcessResult r = run_paceline(bench_args("4"), dir_ / "stdout.txt");
  ASSERT_EQ(r.status, 0) << r.output << r.errors;
  const fs::path run = dir_ / "run";
  for (const char* file : {"records.jsonl", "summary.json", "summary.csv", "metrics.jsonl"}) {
    EXPECT_TRUE(fs::exists(run / file)) << file;
  }
#if __has_include("bench/report_html.h")
  EXPECT_TRUE(fs::exists(run / "report.html"));
#endif
  // The table on stdout, with the transform said before it.
  EXPECT_NE(r.output.find("TRANSFORMED TRACE"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("| CONC |"), std::string::npos) << r.output;

  nlohmann::json summary = read_json(run / "summary.json");
  std::vector<nlohmann::json> records = read_jsonl(run / "records.jsonl");
  int64_t warmup = 0, profiling = 0;
  std::vector<double> ttft_ms;
  for (const auto& rec : records) {
    if (rec["phase"] == "warmup") {
      ++warmup;
      continue;
    }
    ASSERT_EQ(rec["phase"], "profiling");
    ++profiling;
    if (rec["status"] == "ok") {
      ttft_ms.push_back((rec["first_token_s"].get<double>() - rec["start_s"].get<double>()) * 1e3);
    }
  }
  EXPECT_EQ(summary["requests_failed"], 0) << r.errors;
  EXPECT_EQ(summary["requests_incomplete"], 0);
  EXPECT_EQ(profiling, summary["requests_completed"].get<int64_t>() +
                           summary["requests_failed"].get<int64_t>() +
                           summary["requests_incomplete"].get<int64_t>());
  EXPECT_EQ(warmup, summary["warmup_requests"].get<int64_t>());
  EXPECT_EQ(warmup, 2 * 2);  // per lane: the primer and one one-token request
  ASSERT_GE(ttft_ms.size(), 1u);
  EXPECT_NEAR(summary["ttft_ms"]["p50"].get<double>(), numpy_percentile(ttft_ms, 50), 1e-6);
  EXPECT_NEAR(summary["ttft_ms"]["p90"].get<double>(), numpy_percentile(ttft_ms, 90), 1e-6);

  const nlohmann::json& settings = summary["settings"];
  EXPECT_EQ(settings["isl_scale"], 0.002);
  EXPECT_EQ(settings["osl_scale"], 0.02);
  EXPECT_EQ(settings["scaled"], true);
  EXPECT_EQ(settings["model"], "qwen3-tiny");
  EXPECT_EQ(settings["delayer"], "off");
  EXPECT_TRUE(settings["client"]["schedule_lag_p99_ms"].is_number());
  EXPECT_EQ(settings["cancelled"], false);
  // Token counts came from the server's usage chunks.
  EXPECT_EQ(summary["requests_without_usage"], 0);
  EXPECT_TRUE(summary["prefix_cache_hit"].is_number());

  std::vector<nlohmann::json> metrics = read_jsonl(run / "metrics.jsonl");
  ASSERT_GE(metrics.size(), 2u);
  EXPECT_TRUE(metrics.back()["series"].contains("paceline:generation_tokens_total"));
}

TEST_F(BenchE2e, CtrlCStillWritesTheRunMarkedCancelled) {
  // Ctrl-C two seconds after the run began (its metrics file appears when it does).
  ProcessResult r = run_paceline(bench_args("600"), dir_ / "stdout.txt",
                                 dir_ / "run" / "metrics.jsonl", std::chrono::seconds(2));
  EXPECT_EQ(r.status, 130) << r.output << r.errors;
  const fs::path run = dir_ / "run";
  ASSERT_TRUE(fs::exists(run / "summary.json"));
  nlohmann::json summary = read_json(run / "summary.json");
  EXPECT_EQ(summary["settings"]["cancelled"], true);
  EXPECT_FALSE(read_jsonl(run / "records.jsonl").empty());
  EXPECT_NE(r.output.find("CANCELLED"), std::string::npos);
}

}  // namespace
}  // namespace paceline::testing
