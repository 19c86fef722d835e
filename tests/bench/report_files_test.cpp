// The run's files: records.jsonl agrees with the records, summary.json has the fields the issue
// names, summary.csv is one header and one row, and the Markdown table flags an invalid run.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "bench/report_files.h"
#include "replay_harness.h"
#include "session_builder.h"

namespace paceline::bench {
namespace {

using namespace test_util;

std::vector<RequestRecord> small_run() {
  static std::vector<AgentxSession> sessions = {
      session("r", {turn(0, 0, 640, 3), turn(1, 0, 1280, 2)})};
  SessionReplayConfig config = plain_config(1200 * kMs);
  config.warmup_requests_per_lane = 1;
  ReplayRun r(sessions, config, [](const RequestSpec& spec) {
    Reply reply;
    if (spec.turn == 1) reply.done_after_ns = 5 * kSec;  // still open at the end: no recycling
    return reply;
  });
  r.run();
  return r.records();
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(RecordsJsonl, AbsoluteTimesAreTheRunsWallClockStartPlusTheRelativeOnes) {
  auto records = small_run();
  const double run_start = 1'764'600'000.25;  // a wall-clock time, s since the epoch
  std::ostringstream with, without;
  write_records_jsonl(with, records, false, run_start);
  write_records_jsonl(without, records, false);
  auto j = nlohmann::json::parse(lines(with.str())[1]);
  EXPECT_DOUBLE_EQ(j["start_unix_s"].get<double>(), run_start + 0.1);
  EXPECT_DOUBLE_EQ(j["first_token_unix_s"].get<double>(), run_start + 0.2);
  EXPECT_DOUBLE_EQ(j["scheduled_unix_s"].get<double>(), run_start + j["scheduled_s"].get<double>());
  EXPECT_DOUBLE_EQ(j["end_unix_s"].get<double>(), run_start + j["end_s"].get<double>());
  // Simulated runs have no wall clock: no absolute fields.
  EXPECT_FALSE(nlohmann::json::parse(lines(without.str())[1]).contains("start_unix_s"));
}

TEST(RecordsJsonl, OneLinePerRequestWithTheIssuesFields) {
  auto records = small_run();
  std::ostringstream out;
  write_records_jsonl(out, records);
  auto rows = lines(out.str());
  ASSERT_EQ(rows.size(), records.size());
  auto first = nlohmann::json::parse(rows[0]);
  EXPECT_EQ(first["phase"], "warmup");
  auto j = nlohmann::json::parse(rows[1]);
  for (const char* key :
       {"lane", "session", "turn", "phase", "start_s", "first_token_s", "end_s", "isl", "osl",
        "cached_tokens", "status", "error", "play", "scheduled_s", "chunks"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["phase"], "profiling");
  EXPECT_EQ(j["session"], "r");
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["isl"], 640);
  EXPECT_EQ(j["osl"], 3);
  EXPECT_DOUBLE_EQ(j["start_s"].get<double>(), 0.1);  // after the 100 ms warmup
  EXPECT_DOUBLE_EQ(j["first_token_s"].get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(j["ttft_ms"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(j["e2el_ms"].get<double>(), 120);
  ASSERT_EQ(j["chunks"].size(), 3u);
  EXPECT_DOUBLE_EQ(j["chunks"][2][0].get<double>(), 0.22);
  EXPECT_EQ(j["chunks"][2][1], 1);
}

TEST(SummaryFiles, JsonCsvAndMarkdown) {
  auto records = small_run();
  Summary s = summarize(records, SummaryOptions{});
  nlohmann::json settings = {{"concurrency", 1}, {"url", "http://localhost:8000"}};
  auto j = summary_to_json(s, settings);
  for (const char* key :
       {"ttft_ms", "itl_ms", "e2el_ms", "interactivity_p90", "e2e_norm_interactivity_p90",
        "total_tok_s", "output_tok_s", "input_tok_s", "total_tok_s_per_gpu", "request_throughput",
        "requests_completed", "requests_failed", "prefix_cache_hit", "valid", "settings"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  for (const char* stat : {"mean", "p50", "p75", "p90", "p95", "p99", "std"}) {
    EXPECT_TRUE(j["ttft_ms"].contains(stat)) << stat;
  }
  EXPECT_EQ(j["requests_completed"], 2);
  EXPECT_EQ(j["settings"]["concurrency"], 1);
  EXPECT_TRUE(j["goodput"].is_null());  // no SLO given

  std::ostringstream csv;
  write_summary_csv(csv, s);
  auto rows = lines(csv.str());
  ASSERT_EQ(rows.size(), 2u);
  auto count = [](const std::string& line) { return std::count(line.begin(), line.end(), ','); };
  EXPECT_EQ(count(rows[0]), count(rows[1]));
  EXPECT_EQ(rows[0].rfind("valid,requests_completed,", 0), 0u);

  Summary bad = s;
  bad.valid = false;
  bad.invalid_reasons = {"3 of 20 requests failed (15.0% > 10.0%)"};
  std::string md =
      markdown_table({MarkdownRow{&s, 1, "off", std::nullopt}, MarkdownRow{&bad, 4, "on", 0.25}});
  auto md_lines = lines(md);
  EXPECT_EQ(md_lines[0], "> **INVALID RUN** (CONC 4): 3 of 20 requests failed (15.0% > 10.0%)");
  EXPECT_NE(md.find("| CONC | delayer | total tok/s |"), std::string::npos);
  EXPECT_NE(md.find("| 4 (invalid) | on |"), std::string::npos);
  EXPECT_NE(md.find("| 25.0% |"), std::string::npos);
}

TEST(SummaryFiles, WritesTheThreeFiles) {
  auto records = small_run();
  Summary s = summarize(records, SummaryOptions{});
  auto dir = std::filesystem::temp_directory_path() /
             ("paceline_bench_files_" + std::to_string(::getpid()));
  write_run_files(dir.string(), records, s, nlohmann::json::object());
  for (const char* name : {"records.jsonl", "summary.json", "summary.csv"}) {
    EXPECT_TRUE(std::filesystem::exists(dir / name)) << name;
  }
  std::ifstream in(dir / "summary.json");
  auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["requests_completed"], 2);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace paceline::bench
