#pragma once
// Run and sweep directories made by hand for the report tests: a Summary with chosen values, a
// few records with known times, written with the bench's own writers into a fresh temporary
// directory.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/report_files.h"
#include "bench/summary.h"

namespace paceline::bench::test_util {

namespace fs = std::filesystem;

// A fresh directory under the system's temporary one, named after the running test.
inline fs::path fresh_dir(const std::string& tag) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir =
      fs::temp_directory_path() /
      ("paceline_report_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" + tag);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

inline std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline Distribution dist(double p50, double p90, double p99, double mean) {
  Distribution d;
  d.count = 10;
  d.mean = mean;
  d.p50 = p50;
  d.p75 = (p50 + p90) / 2;
  d.p90 = p90;
  d.p95 = (p90 + p99) / 2;
  d.p99 = p99;
  d.std = 1.5;
  d.min = p50 / 2;
  d.max = p99 * 1.1;
  return d;
}

// A summary whose throughput and interactivity are the two numbers the Pareto chart plots.
inline Summary fake_summary(double tok_s_per_gpu, double e2e_interactivity) {
  Summary s;
  s.requests_completed = 100;
  s.gpus = 1;
  s.duration_s = 60;
  s.total_tok_s = s.total_tok_s_per_gpu = tok_s_per_gpu;
  s.output_tok_s = s.output_tok_s_per_gpu = tok_s_per_gpu / 10;
  s.input_tok_s = s.input_tok_s_per_gpu = tok_s_per_gpu * 0.9;
  s.request_throughput = 1.5;
  s.ttft_ms = dist(123.25, 456.5, 789.75, 200.125);
  s.itl_ms = dist(9.5, 12.25, 20.5, 10.0);
  s.e2el_ms = dist(1000, 2000, 3000, 1500);
  s.interactivity = {105.3, 90, 81.6, 70, 48.8};
  s.e2e_norm_interactivity = {e2e_interactivity, e2e_interactivity, e2e_interactivity,
                              e2e_interactivity, e2e_interactivity};
  s.prefix_cache_hit = 0.934;
  s.trace_prefix_hit = 0.95;
  return s;
}

// One profiling request: sent at `start_s`, first token `ttft_s` later, then `osl - 1` tokens
// `itl_s` apart, one chunk each.
inline RequestRecord fake_record(uint64_t id, double start_s, double ttft_s, double itl_s,
                                 int64_t osl) {
  auto ns = [](double s) { return static_cast<int64_t>(s * 1e9 + 0.5); };
  RequestRecord r;
  r.id = id;
  r.lane = 0;
  r.session = "s";
  r.status = RecordStatus::kOk;
  r.start_ns = r.scheduled_ns = ns(start_s);
  for (int64_t i = 0; i < osl; ++i) {
    r.chunk_ns.push_back(ns(start_s + ttft_s + itl_s * static_cast<double>(i)));
    r.chunk_tokens.push_back(1);
  }
  r.first_token_ns = r.chunk_ns.front();
  r.last_token_ns = r.end_ns = r.chunk_ns.back();
  r.isl = r.requested_isl = 1000;
  r.osl = r.requested_osl = osl;
  r.usage_reported = true;
  r.cached_tokens = 900;
  return r;
}

// `extra` is merged into summary.json (keys the writer does not know, such as hold_rate).
inline void write_fake_run(const fs::path& dir, const Summary& s, const nlohmann::json& settings,
                           const std::vector<RequestRecord>& records = {},
                           const nlohmann::json& extra = nlohmann::json::object()) {
  write_run_files(dir.string(), records, s, settings);
  if (extra.empty()) return;
  nlohmann::json j = summary_to_json(s, settings);
  j.update(extra);
  std::ofstream(dir / "summary.json") << j.dump(2);
}

}  // namespace paceline::bench::test_util
