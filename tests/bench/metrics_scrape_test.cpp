// The /metrics side of a run: Prometheus text parsing, the scraper's file and the hold rate.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "bench/metrics_scrape.h"
#include "fake_sse_server.h"

namespace paceline::bench {
namespace {

const std::vector<std::string> kPrefixes = {"paceline:", "vllm:"};

TEST(PrometheusText, KeepsWantedNumericSeries) {
  const std::string text =
      "# HELP paceline:num_requests_running Running\n"
      "# TYPE paceline:num_requests_running gauge\n"
      "paceline:num_requests_running 3\n"
      "paceline:request_success_total{finished_reason=\"length\"} 12\n"
      "paceline:odd{label=\"a b} c\"} 1.5e3\n"
      "paceline:ttft_seconds_bucket{le=\"0.1\"} 4\n"
      "paceline:ttft_seconds_sum 0.25\n"
      "paceline:broken NaN\n"
      "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.5 1700000000000\n"
      "process_cpu_seconds_total 9\n";
  auto s = parse_prometheus_text(text, kPrefixes);
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s[0], (std::pair<std::string, double>{"paceline:num_requests_running", 3}));
  EXPECT_EQ(s[1].first, "paceline:request_success_total{finished_reason=\"length\"}");
  EXPECT_EQ(s[2].first, "paceline:odd{label=\"a b} c\"}");
  EXPECT_EQ(s[2].second, 1500);
  EXPECT_EQ(s[3].first, "paceline:ttft_seconds_sum");
  EXPECT_EQ(s[4].second, 0.5);
}

// Every series of vLLM and of paceline serve has model_name; one server serves one model, so the
// keys leave it out and stay those of the series.
TEST(PrometheusText, LeavesTheModelNameLabelOutOfTheKey) {
  const auto s = parse_prometheus_text(
      "vllm:generation_tokens_total{model_name=\"m\"} 5\n"
      "vllm:request_success_total{finished_reason=\"stop\",model_name=\"a,\\\"b\"} 2\n"
      "vllm:spec{engine=\"0\",model_name=\"m\",position=\"1\"} 1\n",
      kPrefixes);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].first, "vllm:generation_tokens_total");
  EXPECT_EQ(s[1].first, "vllm:request_success_total{finished_reason=\"stop\"}");
  EXPECT_EQ(s[2].first, "vllm:spec{engine=\"0\",position=\"1\"}");
}

TEST(MetricsScraper, WritesALinePerScrapeAndTheHoldRateOverTheWindow) {
  std::atomic<int> served{0};
  test_util::FakeSseServer server([&](const std::string&, int) {
    // Decisions grow by 10 per scrape, holds by 4: the window's hold rate is 0.4.
    ++served;
    std::string body = fmt::format(
        "paceline:prefill_delayer_decisions_total{{outcome=\"fire\",reason=\"first\"}} {}\n"
        "paceline:prefill_delayer_decisions_total{{outcome=\"hold\",reason=\"any\"}} {}\n"
        "paceline:prefill_delayer_hold_rate 0.9\n",
        100 + 6 * served.load(), 50 + 4 * served.load());
    test_util::FakeAnswer a;
    a.pieces = {"HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
                "\r\nConnection: close\r\n\r\n" + body};
    a.close_after = true;
    return a;
  });
  auto path = std::filesystem::temp_directory_path() /
              ("paceline-metrics-" + std::to_string(::getpid()) + ".jsonl");
  boost::asio::io_context io;
  SteadyClock clock;
  const int64_t start = clock.now_ns();
  MetricsScraper scraper(io, parse_http_url("http://127.0.0.1:" + std::to_string(server.port())),
                         "", clock, path.string(), std::chrono::milliseconds(50));
  scraper.start_at(start);
  while (scraper.scrapes() < 4) io.run_one_for(std::chrono::milliseconds(100));
  scraper.stop();
  io.restart();
  io.run_for(std::chrono::milliseconds(100));
  EXPECT_EQ(scraper.server_family(), "paceline");
  ASSERT_TRUE(scraper.hold_rate(start));
  EXPECT_NEAR(*scraper.hold_rate(start), 0.4, 1e-12);
  EXPECT_FALSE(scraper.hold_rate(clock.now_ns() + 1'000'000'000) == std::nullopt);  // the gauge
  std::ifstream in(path);
  int lines = 0;
  for (std::string line; std::getline(in, line); ++lines) {
    auto j = nlohmann::json::parse(line);
    EXPECT_GE(j["t_s"].get<double>(), 0);
    EXPECT_EQ(j["series"]["paceline:prefill_delayer_hold_rate"], 0.9);
  }
  EXPECT_EQ(lines, scraper.scrapes());
  std::filesystem::remove(path);
}

TEST(ModelsList, FirstId) {
  HttpUrl url = parse_http_url("http://127.0.0.1:1");
  HttpGetResult ok{200, R"({"object":"list","data":[{"id":"qwen3-tiny"},{"id":"b"}]})", ""};
  EXPECT_EQ(first_model_id(ok, url), "qwen3-tiny");
  EXPECT_THROW(first_model_id({200, R"({"data":[]})", ""}, url), Error);
  EXPECT_THROW(first_model_id({401, "no", ""}, url), Error);
  EXPECT_THROW(first_model_id({0, "", "connect: refused"}, url), Error);
}

}  // namespace
}  // namespace paceline::bench
