#pragma once
// The server's side of a run: plain GETs to it (/v1/models before the run) and, while the run
// goes, a scrape of its Prometheus /metrics every second into metrics.jsonl: one line per scrape
// with the time since the run started and every numeric `paceline:*`, `vllm:*` or `sglang:*`
// series (histogram buckets left out; their _sum and _count kept). The PrefillDelayer's hold rate
// over the profiling window comes from these series when the server has a delayer.
#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "base/clock.h"
#include "bench/http_transport.h"

namespace paceline::bench {

struct HttpGetResult {
  int status = 0;  // 0: no answer
  std::string body;
  std::string error;  // why there is no answer
};

// GET on a running loop; `done` runs on the loop's thread, within `timeout`. `headers`: the
// user's -H headers, which a server behind a gateway may need on every route.
void async_http_get(boost::asio::io_context& io, const HttpUrl& url, const std::string& path,
                    const std::string& api_key, std::chrono::milliseconds timeout,
                    std::function<void(HttpGetResult)> done,
                    const std::vector<HttpHeader>& headers = {});
// The same, blocking, on a loop of its own.
HttpGetResult http_get(const HttpUrl& url, const std::string& path, const std::string& api_key,
                       std::chrono::milliseconds timeout,
                       const std::vector<HttpHeader>& headers = {});

// The first model id of a /v1/models answer; fails with the server's answer when there is none.
std::string first_model_id(const HttpGetResult& models, const HttpUrl& url);

// The samples of a Prometheus text exposition whose metric name starts with one of `prefixes`:
// ("name{labels}", value), in order; non-finite values and *_bucket series are skipped. The
// `model_name` label (on every series of vLLM and of paceline serve) is dropped from the key:
// one server serves one model, so the keys stay those of the series.
std::vector<std::pair<std::string, double>> parse_prometheus_text(
    std::string_view text, const std::vector<std::string>& prefixes);

class MetricsScraper {
 public:
  // Opens `out_path` now (fails when it cannot).
  MetricsScraper(boost::asio::io_context& io, HttpUrl url, std::string api_key, const Clock& clock,
                 const std::string& out_path,
                 std::chrono::milliseconds interval = std::chrono::seconds(1));

  // Scrapes now, then every interval; lines are stamped relative to `run_start_ns`.
  void start_at(int64_t run_start_ns);
  void set_headers(std::vector<HttpHeader> headers) { headers_ = std::move(headers); }
  void stop();  // no further scrapes; the file is complete

  int64_t scrapes() const { return scrapes_; }  // answered with 200
  // Whose series the server exports: "paceline", "vllm", "sglang", or empty (none seen yet).
  const std::string& server_family() const { return server_family_; }
  // Holds over decisions of the PrefillDelayer from the first scrape at or after `from_ns` (driver
  // clock) to the last: from its decision counters, else its hold-rate gauge. nullopt when the
  // server reports no delayer.
  std::optional<double> hold_rate(int64_t from_ns) const;

 private:
  struct HoldSample {
    int64_t t_ns = 0;
    double holds = 0;
    double decisions = 0;
    std::optional<double> gauge;
  };

  void arm();
  void scrape();
  void on_answer(int64_t t_ns, const HttpGetResult& answer);

  boost::asio::io_context& io_;
  HttpUrl url_;
  std::string api_key_;
  std::vector<HttpHeader> headers_;
  const Clock& clock_;
  int64_t run_start_ns_ = 0;
  std::chrono::milliseconds interval_;
  boost::asio::steady_timer timer_;
  std::ofstream out_;
  std::vector<HoldSample> hold_;
  int64_t scrapes_ = 0;
  std::string server_family_;
  bool busy_ = false;
  bool stopped_ = false;
};

}  // namespace paceline::bench
