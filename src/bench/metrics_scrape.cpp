#include "bench/metrics_scrape.h"

#include <cmath>
#include <cstdlib>
#include <memory>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <nlohmann/json.hpp>

#include "base/error.h"

namespace paceline::bench {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

struct GetOp {
  explicit GetOp(asio::io_context& io) : resolver(io), stream(io) {}
  tcp::resolver resolver;
  beast::tcp_stream stream;
  http::request<http::empty_body> request;
  http::response<http::string_body> response;
  beast::flat_buffer buffer;
  std::function<void(HttpGetResult)> done;

  void finish(const error_code& ec, const char* step) {
    HttpGetResult r;
    if (ec) {
      r.error = std::string(step) + ": " + ec.message();
    } else {
      r.status = static_cast<int>(response.result_int());
      r.body = std::move(response.body());
    }
    error_code ignored;
    stream.socket().close(ignored);
    auto cb = std::move(done);
    cb(std::move(r));
  }
};

const std::vector<std::string> kMetricPrefixes = {"paceline:", "vllm:", "sglang:"};

// `series` without its label `label="..."`, and without the braces when it was the only one.
std::string without_label(std::string_view series, std::string_view label) {
  const size_t open = series.find('{');
  if (open == std::string_view::npos) return std::string(series);
  std::string out(series.substr(0, open));
  std::string kept;
  size_t pos = open + 1;
  while (pos < series.size() && series[pos] != '}') {
    const size_t eq = series.find('=', pos);
    if (eq == std::string_view::npos || eq + 1 >= series.size()) return std::string(series);
    size_t end = eq + 2;  // past the opening quote
    while (end < series.size() && series[end] != '"') end += series[end] == '\\' ? 2 : 1;
    if (end >= series.size()) return std::string(series);
    const std::string_view pair = series.substr(pos, end + 1 - pos);
    if (series.substr(pos, eq - pos) != label) {
      if (!kept.empty()) kept += ',';
      kept += pair;
    }
    pos = end + 1;
    if (pos < series.size() && series[pos] == ',') ++pos;
  }
  if (!kept.empty()) out += "{" + kept + "}";
  return out;
}

}  // namespace

void async_http_get(asio::io_context& io, const HttpUrl& url, const std::string& path,
                    const std::string& api_key, std::chrono::milliseconds timeout,
                    std::function<void(HttpGetResult)> done,
                    const std::vector<HttpHeader>& headers) {
  auto op = std::make_shared<GetOp>(io);
  op->done = std::move(done);
  op->request = {http::verb::get, url.base_path + path, 11};
  op->request.set(http::field::host, url.host + ":" + url.port);
  op->request.set(http::field::connection, "close");
  if (!api_key.empty()) op->request.set(http::field::authorization, "Bearer " + api_key);
  for (const HttpHeader& h : headers) op->request.set(h.name, h.value);
  op->stream.expires_after(timeout);
  op->resolver.async_resolve(
      url.host, url.port, [op](error_code ec, tcp::resolver::results_type r) {
        if (ec) return op->finish(ec, "resolve");
        op->stream.async_connect(r, [op](error_code ec, const tcp::endpoint&) {
          if (ec) return op->finish(ec, "connect");
          http::async_write(op->stream, op->request, [op](error_code ec, size_t) {
            if (ec) return op->finish(ec, "write");
            http::async_read(op->stream, op->buffer, op->response,
                             [op](error_code ec, size_t) { op->finish(ec, "read"); });
          });
        });
      });
}

HttpGetResult http_get(const HttpUrl& url, const std::string& path, const std::string& api_key,
                       std::chrono::milliseconds timeout, const std::vector<HttpHeader>& headers) {
  asio::io_context io;
  HttpGetResult result;
  async_http_get(
      io, url, path, api_key, timeout, [&](HttpGetResult r) { result = std::move(r); }, headers);
  io.run();
  return result;
}

std::string first_model_id(const HttpGetResult& models, const HttpUrl& url) {
  if (models.status == 0) {
    fail("{}: no answer to GET /v1/models ({}); is the server up?", url.str(), models.error);
  }
  if (models.status != 200) {
    fail("{}: GET /v1/models answered {}: {}; pass --model", url.str(), models.status,
         models.body.substr(0, 300));
  }
  nlohmann::json j = nlohmann::json::parse(models.body, nullptr, false);
  if (j.is_object() && j.contains("data") && j["data"].is_array() && !j["data"].empty() &&
      j["data"][0].is_object() && j["data"][0].contains("id") && j["data"][0]["id"].is_string()) {
    return j["data"][0]["id"].get<std::string>();
  }
  fail("{}: GET /v1/models lists no model id; pass --model", url.str());
}

std::vector<std::pair<std::string, double>> parse_prometheus_text(
    std::string_view text, const std::vector<std::string>& prefixes) {
  std::vector<std::pair<std::string, double>> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.empty() || line[0] == '#') continue;
    bool wanted = false;
    for (const std::string& p : prefixes) wanted = wanted || line.substr(0, p.size()) == p;
    if (!wanted) continue;
    // The series ends at the first space outside the label braces (label values may hold any).
    size_t end = 0;
    bool in_braces = false, in_quotes = false;
    for (; end < line.size(); ++end) {
      char c = line[end];
      if (in_quotes) {
        if (c == '\\')
          ++end;
        else if (c == '"')
          in_quotes = false;
      } else if (c == '"' && in_braces) {
        in_quotes = true;
      } else if (c == '{') {
        in_braces = true;
      } else if (c == '}') {
        in_braces = false;
      } else if ((c == ' ' || c == '\t') && !in_braces) {
        break;
      }
    }
    std::string_view series = line.substr(0, end);
    std::string_view name = series.substr(0, series.find('{'));
    if (std::string_view(name).ends_with("_bucket") || end >= line.size()) continue;
    std::string value(line.substr(end + 1));
    char* parsed_end = nullptr;
    double v = std::strtod(value.c_str(), &parsed_end);
    if (parsed_end == value.c_str() || !std::isfinite(v)) continue;
    out.emplace_back(without_label(series, "model_name"), v);
  }
  return out;
}

MetricsScraper::MetricsScraper(asio::io_context& io, HttpUrl url, std::string api_key,
                               const Clock& clock, const std::string& out_path,
                               std::chrono::milliseconds interval)
    : io_(io),
      url_(std::move(url)),
      api_key_(std::move(api_key)),
      clock_(clock),
      interval_(interval),
      timer_(io),
      out_(out_path, std::ios::binary | std::ios::trunc) {
  if (!out_) fail("{}: cannot write", out_path);
}

void MetricsScraper::start_at(int64_t run_start_ns) {
  run_start_ns_ = run_start_ns;
  timer_.expires_after(std::chrono::nanoseconds(0));
  arm();
}

void MetricsScraper::stop() {
  stopped_ = true;
  timer_.cancel();
  out_.flush();
}

void MetricsScraper::arm() {
  timer_.async_wait([this](error_code ec) {
    if (ec || stopped_) return;
    scrape();
    timer_.expires_at(timer_.expiry() + interval_);  // no drift: every interval from the start
    arm();
  });
}

void MetricsScraper::scrape() {
  if (busy_) return;  // the last one has not answered yet
  busy_ = true;
  async_http_get(
      io_, url_, "/metrics", api_key_, interval_,
      [this](HttpGetResult r) {
        busy_ = false;
        if (!stopped_) on_answer(clock_.now_ns(), r);
      },
      headers_);
}

void MetricsScraper::on_answer(int64_t t_ns, const HttpGetResult& answer) {
  if (answer.status != 200) return;
  ++scrapes_;
  nlohmann::json series = nlohmann::json::object();
  HoldSample hold{t_ns, 0, 0, std::nullopt};
  bool has_counters = false;
  for (const auto& [name, value] : parse_prometheus_text(answer.body, kMetricPrefixes)) {
    series[name] = value;
    if (server_family_.empty()) server_family_ = name.substr(0, name.find(':'));
    std::string_view base = std::string_view(name).substr(0, name.find('{'));
    if (std::string_view(base).ends_with("prefill_delayer_decisions_total")) {
      has_counters = true;
      hold.decisions += value;
      if (name.find("outcome=\"hold\"") != std::string::npos) hold.holds += value;
    } else if (std::string_view(base).ends_with("prefill_delayer_hold_rate")) {
      hold.gauge = value;
    }
  }
  if (has_counters || hold.gauge) hold_.push_back(hold);
  nlohmann::json line = {{"t_s", static_cast<double>(t_ns - run_start_ns_) / 1e9},
                         {"series", std::move(series)}};
  out_ << line.dump() << '\n';
  out_.flush();
}

std::optional<double> MetricsScraper::hold_rate(int64_t from_ns) const {
  if (hold_.empty()) return std::nullopt;
  const HoldSample* first = nullptr;
  for (const HoldSample& s : hold_) {
    if (s.t_ns >= from_ns) {
      first = &s;
      break;
    }
  }
  const HoldSample& last = hold_.back();
  if (first && last.decisions > first->decisions) {
    return (last.holds - first->holds) / (last.decisions - first->decisions);
  }
  return last.gauge;
}

}  // namespace paceline::bench
