#include "bench/http_transport.h"

#include <array>
#include <charconv>
#include <limits>
#include <optional>
#include <random>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "bench/session_key.h"

namespace paceline::bench {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

constexpr size_t kReadChunk = 16 * 1024;
constexpr size_t kMaxErrorBody = 64 * 1024;

}  // namespace

std::string HttpUrl::str() const {
  return fmt::format("http://{}:{}{}", host, port, base_path);
}

HttpUrl parse_http_url(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    fail("--url {}: only http:// URLs are supported (no TLS), e.g. http://127.0.0.1:8000", url);
  }
  std::string_view rest = url.substr(kScheme.size());
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string path(slash == std::string_view::npos ? "" : rest.substr(slash));
  while (!path.empty() && path.back() == '/') path.pop_back();
  if (path.size() >= 3 && path.compare(path.size() - 3, 3, "/v1") == 0)
    path.resize(path.size() - 3);
  HttpUrl out;
  out.base_path = path;
  if (!authority.empty() && authority.front() == '[') {  // [ipv6]:port
    size_t close = authority.find(']');
    if (close == std::string_view::npos) fail("--url {}: unterminated IPv6 address", url);
    out.host = std::string(authority.substr(1, close - 1));
    authority.remove_prefix(close + 1);
    if (!authority.empty() && authority.front() == ':') out.port = std::string(authority.substr(1));
  } else {
    size_t colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) out.port = std::string(authority.substr(colon + 1));
  }
  if (out.host.empty()) fail("--url {}: no host", url);
  if (out.port.empty() || out.port.find_first_not_of("0123456789") != std::string::npos) {
    fail("--url {}: bad port '{}'", url, out.port);
  }
  return out;
}

Endpoint parse_endpoint(std::string_view name) {
  if (name == "chat") return Endpoint::kChat;
  if (name == "completions") return Endpoint::kCompletions;
  fail("--endpoint {}: expected chat or completions", name);
}

const char* endpoint_name(Endpoint endpoint) {
  return endpoint == Endpoint::kChat ? "chat" : "completions";
}

std::string request_body(const RequestSpec& spec, const HttpTransportOptions& options) {
  const std::string& model = options.model.empty() ? spec.model : options.model;
  std::string body = R"({"model":)" + nlohmann::json(model).dump();
  if (options.endpoint == Endpoint::kChat) {
    // Built in place: only the marker needs JSON escaping, the filler words never do.
    std::string marker = nlohmann::json(spec.marker).dump();
    marker = marker.substr(1, marker.size() - 2);  // without the quotes
    const bool lead = marker_leads(spec);
    body += R"(,"messages":[{"role":"user","content":")";
    if (lead) body += marker;
    append_prompt_words(body, spec, options.text);
    if (!lead) body += marker;
    body += "\"}]";
  } else {
    std::vector<int32_t> tokens = synthesize_prompt_tokens(spec, options.tokens);
    body += R"(,"prompt":[)";
    body.reserve(body.size() + tokens.size() * 7 + 256);
    char digits[16];
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i) body += ',';
      body.append(digits, std::to_chars(digits, digits + sizeof(digits), tokens[i]).ptr);
    }
    body += ']';
  }
  body +=
      fmt::format(R"(,"stream":true,"stream_options":{{"include_usage":true}},"max_tokens":{0},)"
                  R"("max_completion_tokens":{0},"min_tokens":{0},"ignore_eos":true}})",
                  spec.osl);
  options.extra_body.apply(body);
  return body;
}

std::string request_headers(const RequestSpec& spec, const HttpTransportOptions& options,
                            uint64_t run) {
  std::string h = fmt::format("X-Correlation-ID: {:016x}-{}\r\n", run, spec.id);
  if (options.session_id_header) {
    const std::string session = session_key(spec);
    if (!session.empty()) h += fmt::format("X-Session-ID: {}\r\n", session);
  }
  return h;
}

struct HttpTransport::Connection {
  explicit Connection(asio::io_context& io) : socket(io) {}
  tcp::socket socket;
  beast::flat_buffer buffer;
};

struct HttpTransport::Exchange {
  uint64_t id = 0;
  StreamCallbacks cb;
  std::string head;  // request line and headers
  std::string body;
  std::shared_ptr<Connection> conn;
  bool reused = false;   // the connection served an earlier request
  bool retried = false;  // a stale keep-alive connection was replaced once
  std::optional<http::response_parser<http::buffer_body>> parser;
  std::array<char, kReadChunk> buf{};
  OpenAiStreamReader reader;
  int status = 0;
  bool header_seen = false;
  std::string error_body;
  bool first_token = false;
  int64_t done_ns = -1;   // when "[DONE]" arrived
  bool finished = false;  // on_done / on_error delivered, or cancelled
  bool closed = false;    // handlers must leave it alone
};

struct HttpTransport::State {
  tcp::resolver::results_type endpoints;
  std::vector<std::shared_ptr<Connection>> idle;
  std::unordered_map<uint64_t, std::shared_ptr<Exchange>> live;  // until the connection is free
  int pending = 0;                                               // live and not finished
};

HttpTransport::HttpTransport(asio::io_context& io, HttpTransportOptions options, const Clock& clock)
    : io_(io), options_(std::move(options)), clock_(clock), state_(std::make_unique<State>()) {
  tcp::resolver resolver(io_);
  error_code ec;
  state_->endpoints = resolver.resolve(options_.url.host, options_.url.port, ec);
  if (ec) fail("{}: cannot resolve the host: {}", options_.url.str(), ec.message());
  const char* path =
      options_.endpoint == Endpoint::kChat ? "/v1/chat/completions" : "/v1/completions";
  head_ = fmt::format(
      "POST {}{} HTTP/1.1\r\nHost: {}:{}\r\nContent-Type: application/json\r\n"
      "Accept: text/event-stream\r\n",
      options_.url.base_path, path, options_.url.host, options_.url.port);
  if (!options_.api_key.empty())
    head_ += fmt::format("Authorization: Bearer {}\r\n", options_.api_key);
  for (const HttpHeader& h : options_.headers) head_ += fmt::format("{}: {}\r\n", h.name, h.value);
  run_ = std::random_device{}() * 0x100000000ULL + std::random_device{}();
}

HttpTransport::~HttpTransport() {
  close_all();
}

int HttpTransport::in_flight() const {
  return state_->pending;
}

void HttpTransport::send(const RequestSpec& spec, StreamCallbacks callbacks) {
  auto ex = std::make_shared<Exchange>();
  ex->id = spec.id;
  ex->cb = std::move(callbacks);
  ex->body = request_body(spec, options_);
  ex->head = head_ + request_headers(spec, options_, run_) + "Content-Length: " +
             std::to_string(ex->body.size()) + "\r\n\r\n";
  state_->live[ex->id] = ex;
  ++state_->pending;
  start(ex);
}

void HttpTransport::start(const std::shared_ptr<Exchange>& ex) {
  if (!state_->idle.empty()) {
    ex->conn = std::move(state_->idle.back());
    state_->idle.pop_back();
    ex->reused = true;
    write(ex);
    return;
  }
  ex->conn = std::make_shared<Connection>(io_);
  ex->reused = false;
  connect(ex);
}

void HttpTransport::connect(const std::shared_ptr<Exchange>& ex) {
  ++connections_opened_;
  asio::async_connect(ex->conn->socket, state_->endpoints,
                      [this, ex](error_code ec, const tcp::endpoint&) {
                        if (ex->closed) return;
                        if (ec) return on_failure(ex, "connect: " + ec.message(), clock_.now_ns());
                        ex->conn->socket.set_option(tcp::no_delay(true), ec);
                        write(ex);
                      });
}

void HttpTransport::write(const std::shared_ptr<Exchange>& ex) {
  std::array<asio::const_buffer, 2> request = {asio::buffer(ex->head), asio::buffer(ex->body)};
  asio::async_write(ex->conn->socket, request, [this, ex](error_code ec, size_t) {
    if (ex->closed) return;
    if (ec) return on_failure(ex, "write: " + ec.message(), clock_.now_ns());
    read_header(ex);
  });
}

void HttpTransport::read_header(const std::shared_ptr<Exchange>& ex) {
  ex->parser.emplace();
  ex->parser->body_limit(std::numeric_limits<std::uint64_t>::max());
  http::async_read_header(ex->conn->socket, ex->conn->buffer, *ex->parser,
                          [this, ex](error_code ec, size_t) {
                            if (ex->closed) return;
                            if (ec) return on_failure(ex, "read: " + ec.message(), clock_.now_ns());
                            ex->header_seen = true;
                            std::string().swap(ex->body);  // no retry from here on
                            ex->status = static_cast<int>(ex->parser->get().result_int());
                            read_body(ex);
                          });
}

void HttpTransport::read_body(const std::shared_ptr<Exchange>& ex) {
  if (ex->parser->is_done()) return on_body_end(ex, clock_.now_ns());
  auto& body = ex->parser->get().body();
  body.data = ex->buf.data();
  body.size = ex->buf.size();
  http::async_read_some(ex->conn->socket, ex->conn->buffer, *ex->parser,
                        [this, ex](error_code ec, size_t) {
                          if (ex->closed) return;
                          const int64_t t = clock_.now_ns();  // when these bytes arrived
                          if (ec == http::error::need_buffer) ec = {};
                          size_t n = ex->buf.size() - ex->parser->get().body().size;
                          if (n > 0) on_body_bytes(ex, n, t);
                          if (ex->closed) return;
                          if (ec) return on_failure(ex, "read: " + ec.message(), t);
                          read_body(ex);
                        });
}

void HttpTransport::on_body_bytes(const std::shared_ptr<Exchange>& ex, size_t n, int64_t t_ns) {
  std::string_view bytes(ex->buf.data(), n);
  if (ex->status != 200) {
    ex->error_body.append(
        bytes.substr(0, kMaxErrorBody - std::min(kMaxErrorBody, ex->error_body.size())));
    if (ex->error_body.size() >= kMaxErrorBody) {
      std::string text = error_message_from_body(ex->error_body);
      release(ex, false);
      finish_error(ex, ex->status, text, t_ns);
    }
    return;
  }
  if (ex->finished || ex->done_ns >= 0) return;  // nothing after "[DONE]" counts
  deliver(ex, ex->reader.feed(bytes), t_ns);
}

void HttpTransport::deliver(const std::shared_ptr<Exchange>& ex,
                            const OpenAiStreamReader::Step& step, int64_t t_ns) {
  for (int i = 0; i < step.content_chunks; ++i) {
    if (!ex->first_token) {
      ex->first_token = true;
      if (ex->cb.on_first_token) ex->cb.on_first_token(t_ns);
    }
    // Without a tokenizer a chunk counts as one token; usage corrects the total.
    if (ex->cb.on_chunk) ex->cb.on_chunk(t_ns, 1);
  }
  content_chunks_ += step.content_chunks;
  if (step.error) {
    release(ex, false);
    finish_error(ex, step.error_status, step.error_text, t_ns);
  } else if (step.done && ex->done_ns < 0) {
    // The answer is complete; it ends when the body does (usually the same read), so that the
    // connection is free for the next turn before the replayer hears of this one.
    ex->done_ns = t_ns;
  }
}

void HttpTransport::on_body_end(const std::shared_ptr<Exchange>& ex, int64_t t_ns) {
  const bool keep = ex->parser->keep_alive();
  if (ex->status != 200) {
    std::string text = error_message_from_body(ex->error_body);
    if (text.empty()) text = fmt::format("HTTP {}", ex->status);
    release(ex, keep);
    finish_error(ex, ex->status, text, t_ns);
    return;
  }
  if (!ex->finished && ex->done_ns < 0) deliver(ex, ex->reader.finish(), t_ns);
  release(ex, keep && !ex->closed);
  finish_ok(ex, ex->done_ns >= 0 ? ex->done_ns : t_ns);  // a no-op after an error
}

void HttpTransport::on_failure(const std::shared_ptr<Exchange>& ex, const std::string& what,
                               int64_t t_ns) {
  // A kept-alive connection the server closed meanwhile fails before any answer: retry once.
  if (!ex->header_seen && ex->reused && !ex->retried && !ex->finished) {
    ex->retried = true;
    error_code ignored;
    ex->conn->socket.close(ignored);
    ex->conn = std::make_shared<Connection>(io_);
    ex->reused = false;
    connect(ex);
    return;
  }
  if (ex->done_ns >= 0) {  // the connection broke after "[DONE]": the answer was complete
    release(ex, false);
    return finish_ok(ex, ex->done_ns);
  }
  std::string text =
      ex->status != 0 && ex->status != 200
          ? error_message_from_body(ex->error_body)
          : fmt::format("{} (after {} content chunks)", what, ex->reader.content_chunks());
  release(ex, false);
  finish_error(ex, ex->status == 200 ? 0 : ex->status, text, t_ns);
}

void HttpTransport::finish_ok(const std::shared_ptr<Exchange>& ex, int64_t t_ns) {
  if (ex->finished) return;
  ex->finished = true;
  --state_->pending;
  Usage usage;  // all -1: the record falls back to local counts
  if (ex->reader.usage_seen()) usage = ex->reader.usage();
  if (ex->cb.on_done) ex->cb.on_done(t_ns, usage);
  if (after_finish_) after_finish_();
}

void HttpTransport::finish_error(const std::shared_ptr<Exchange>& ex, int status,
                                 const std::string& text, int64_t t_ns) {
  if (ex->finished) return;
  ex->finished = true;
  --state_->pending;
  if (ex->cb.on_error) ex->cb.on_error(t_ns, status, text);
  if (after_finish_) after_finish_();
}

void HttpTransport::release(const std::shared_ptr<Exchange>& ex, bool reusable) {
  if (ex->closed) return;
  ex->closed = true;
  if (ex->conn) {
    if (reusable && ex->conn->socket.is_open()) {
      state_->idle.push_back(std::move(ex->conn));
    } else {
      error_code ignored;
      ex->conn->socket.close(ignored);
    }
    ex->conn.reset();
  }
  state_->live.erase(ex->id);
}

void HttpTransport::cancel(uint64_t request_id) {
  auto it = state_->live.find(request_id);
  if (it == state_->live.end()) return;
  std::shared_ptr<Exchange> ex = it->second;
  if (!ex->finished) {
    ex->finished = true;
    --state_->pending;
  }
  release(ex, false);
}

void HttpTransport::close_all() {
  std::vector<std::shared_ptr<Exchange>> all;
  for (auto& [id, ex] : state_->live) all.push_back(ex);
  for (auto& ex : all) {
    if (!ex->finished) {
      ex->finished = true;
      --state_->pending;
    }
    release(ex, false);
  }
  for (auto& conn : state_->idle) {
    error_code ignored;
    conn->socket.close(ignored);
  }
  state_->idle.clear();
}

}  // namespace paceline::bench
