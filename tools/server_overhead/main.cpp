// server_overhead: a closed-loop load generator for `paceline serve`, for measuring the server's
// own cost per streamed token. It opens N keep-alive connections to 127.0.0.1:PORT (loopback
// only, by design), and each sends streaming /v1/completions requests (a token-id prompt,
// ignore_eos, max_tokens M) back to back until the run time is over; requests in flight then get
// a bounded time to finish before every socket is closed. One thread, Boost.Asio.
//
// It prints one JSON line: requests and tokens (content SSE events) received and their rates,
// the gap between consecutive tokens of a stream as this client sees them, request latency, and
// the client's own CPU time (on a shared machine the client competes with the server).
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

struct Options {
  int port = 0;
  int concurrency = 1;
  double seconds = 10;
  double drain_seconds = 10;  // after the run time, how long requests in flight may take
  int prompt_tokens = 64;
  int max_tokens = 128;
};

struct Totals {
  int64_t requests = 0;
  int64_t tokens = 0;
  int64_t errors = 0;          // connect failures, non-200 answers, broken streams
  int64_t short_requests = 0;  // completed with fewer content events than max_tokens
  int64_t unfinished = 0;      // cut off when the drain time ran out
  std::vector<int64_t> gaps_ns;
  std::vector<int64_t> latencies_ns;
  std::vector<int64_t> first_token_ns;  // time to first token
};

struct Load {
  asio::io_context& io;
  Options options;
  tcp::endpoint server;
  Totals totals;
  bool stopping = false;  // no new requests
};

double ns_to_us(double ns) {
  return ns / 1000.0;
}

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Load& load, int index)
      : load_(load), index_(index), socket_(load.io), retry_(load.io) {}

  void start() { connect(); }

  void close() {
    boost::system::error_code ignored;
    if (in_request_) ++load_.totals.unfinished;
    in_request_ = false;
    closed_ = true;
    retry_.cancel();
    socket_.close(ignored);
  }

 private:
  enum class State { kHead, kChunkSize, kChunkData, kChunkEnd };

  void connect() {
    if (load_.stopping || closed_) return;
    socket_.async_connect(load_.server, [self = shared_from_this()](boost::system::error_code ec) {
      if (self->closed_) return;
      if (ec) {
        ++self->load_.totals.errors;
        self->reconnect_later();
        return;
      }
      self->socket_.set_option(tcp::no_delay(true), ec);
      self->send_request();
    });
  }

  void reconnect_later() {
    boost::system::error_code ignored;
    socket_.close(ignored);
    in_request_ = false;
    if (load_.stopping || closed_) return;
    retry_.expires_after(std::chrono::milliseconds(50));
    retry_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (!ec) self->connect();
    });
  }

  // The prompt differs per connection and request, so the prefix cache does not turn the run
  // into something other than what clients with distinct prompts cost.
  std::string make_request() {
    std::string body = "{\"prompt\":[";
    for (int i = 0; i < load_.options.prompt_tokens; ++i) {
      const int64_t id =
          1000 + (static_cast<int64_t>(index_) * 7919 + sent_ * 104729 + i * 31) % 50000;
      if (i > 0) body += ',';
      body += std::to_string(id);
    }
    body += "],\"max_tokens\":" + std::to_string(load_.options.max_tokens) +
            ",\"ignore_eos\":true,\"stream\":true}";
    return "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
           "Content-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  }

  void send_request() {
    if (load_.stopping || closed_) {
      close();
      return;
    }
    request_ = make_request();
    ++sent_;
    state_ = State::kHead;
    pending_.clear();
    events_.clear();
    request_tokens_ = 0;
    in_request_ = true;
    sent_at_ = Clock::now();
    asio::async_write(socket_, asio::buffer(request_),
                      [self = shared_from_this()](boost::system::error_code ec, size_t) {
                        if (self->closed_) return;
                        if (ec) {
                          self->broken();
                          return;
                        }
                        self->read();
                      });
  }

  void read() {
    socket_.async_read_some(asio::buffer(buf_),
                            [self = shared_from_this()](boost::system::error_code ec, size_t n) {
                              if (self->closed_) return;
                              if (ec) {
                                self->broken();
                                return;
                              }
                              self->pending_.append(self->buf_.data(), n);
                              switch (self->consume(Clock::now())) {
                                case Step::kMore:
                                  self->read();
                                  break;
                                case Step::kDone:
                                  self->send_request();
                                  break;
                                case Step::kBroken:
                                  self->broken();
                                  break;
                              }
                            });
  }

  void broken() {
    ++load_.totals.errors;
    reconnect_later();
  }

  enum class Step { kMore, kDone, kBroken };

  // Parses what has arrived: the head, then the chunked body, whose de-chunked bytes are SSE.
  Step consume(Clock::time_point now) {
    size_t pos = 0;
    Step step = Step::kMore;
    while (step == Step::kMore) {
      if (state_ == State::kHead) {
        const size_t end = pending_.find("\r\n\r\n", pos);
        if (end == std::string::npos) break;
        std::string_view head(pending_.data() + pos, end - pos);
        if (head.substr(0, 12) != "HTTP/1.1 200" || !has_chunked_encoding(head)) {
          step = Step::kBroken;
          break;
        }
        pos = end + 4;
        state_ = State::kChunkSize;
      } else if (state_ == State::kChunkSize) {
        const size_t eol = pending_.find("\r\n", pos);
        if (eol == std::string::npos) break;
        chunk_left_ = std::strtoull(pending_.c_str() + pos, nullptr, 16);
        if (chunk_left_ == 0) {
          // The last chunk; this server sends no trailers, so only the empty line follows. Until
          // it has arrived, the size line stays unparsed.
          if (pending_.size() < eol + 4) break;
          pos = eol + 4;
          step = finish_request(now);
          break;
        }
        pos = eol + 2;
        state_ = State::kChunkData;
      } else if (state_ == State::kChunkData) {
        const size_t take = std::min<size_t>(chunk_left_, pending_.size() - pos);
        if (take == 0) break;
        events_.append(pending_, pos, take);
        pos += take;
        chunk_left_ -= take;
        if (chunk_left_ == 0) state_ = State::kChunkEnd;
        scan_events(now);
      } else {  // kChunkEnd
        if (pending_.size() - pos < 2) break;
        pos += 2;
        state_ = State::kChunkSize;
      }
    }
    pending_.erase(0, pos);
    return step;
  }

  static bool has_chunked_encoding(std::string_view head) {
    std::string lower(head);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return lower.find("transfer-encoding: chunked") != std::string::npos;
  }

  // Whole SSE events ("data: ...\n\n"); a content event carries "finish_reason":null.
  void scan_events(Clock::time_point now) {
    size_t pos = 0;
    for (;;) {
      const size_t end = events_.find("\n\n", pos);
      if (end == std::string::npos) break;
      std::string_view event(events_.data() + pos, end - pos);
      if (event.find("\"finish_reason\":null") != std::string_view::npos) {
        if (request_tokens_ > 0) {
          load_.totals.gaps_ns.push_back((now - last_token_at_).count());
        } else {
          load_.totals.first_token_ns.push_back((now - sent_at_).count());
        }
        last_token_at_ = now;
        ++request_tokens_;
        ++load_.totals.tokens;
      }
      pos = end + 2;
    }
    events_.erase(0, pos);
  }

  Step finish_request(Clock::time_point now) {
    in_request_ = false;
    ++load_.totals.requests;
    if (request_tokens_ < load_.options.max_tokens) ++load_.totals.short_requests;
    load_.totals.latencies_ns.push_back((now - sent_at_).count());
    return Step::kDone;
  }

  Load& load_;
  int index_;
  tcp::socket socket_;
  asio::steady_timer retry_;
  std::array<char, 65536> buf_{};
  std::string request_;
  std::string pending_;  // received, not yet parsed
  std::string events_;   // de-chunked SSE text, not yet split into events
  State state_ = State::kHead;
  uint64_t chunk_left_ = 0;
  int64_t sent_ = 0;
  int64_t request_tokens_ = 0;
  bool in_request_ = false;
  bool closed_ = false;
  Clock::time_point sent_at_{};
  Clock::time_point last_token_at_{};
};

double percentile(std::vector<int64_t>& v, double q) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return static_cast<double>(v[k]);
}

double mean(const std::vector<int64_t>& v) {
  if (v.empty()) return 0;
  double sum = 0;
  for (int64_t x : v) sum += static_cast<double>(x);
  return sum / static_cast<double>(v.size());
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

void raise_open_file_limit(int needed) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  if (limit.rlim_cur >= static_cast<rlim_t>(needed)) return;
  limit.rlim_cur = std::min(limit.rlim_max, static_cast<rlim_t>(needed));
  setrlimit(RLIMIT_NOFILE, &limit);
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < static_cast<rlim_t>(needed)) {
    std::fprintf(stderr, "server_overhead: open-file limit %llu is below the %d this run needs\n",
                 static_cast<unsigned long long>(limit.rlim_cur), needed);
  }
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "server_overhead: %s\n"
               "usage: server_overhead --port P [--concurrency N] [--seconds S] [--max-tokens M]\n"
               "                       [--prompt-tokens T] [--drain-seconds D]\n"
               "Targets 127.0.0.1:P only.\n",
               why);
  std::exit(2);
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage(("missing value for " + flag).c_str());
    const char* value = argv[++i];
    if (flag == "--port")
      o.port = std::atoi(value);
    else if (flag == "--concurrency")
      o.concurrency = std::atoi(value);
    else if (flag == "--seconds")
      o.seconds = std::atof(value);
    else if (flag == "--drain-seconds")
      o.drain_seconds = std::atof(value);
    else if (flag == "--max-tokens")
      o.max_tokens = std::atoi(value);
    else if (flag == "--prompt-tokens")
      o.prompt_tokens = std::atoi(value);
    else
      usage(("unknown flag " + flag).c_str());
  }
  if (o.port < 1 || o.port > 65535) usage("--port must be 1..65535");
  if (o.concurrency < 1 || o.concurrency > 10000) usage("--concurrency must be 1..10000");
  if (!(o.seconds > 0 && o.seconds <= 600)) usage("--seconds must be in (0, 600]");
  if (!(o.drain_seconds >= 0 && o.drain_seconds <= 600))
    usage("--drain-seconds must be in [0, 600]");
  if (o.max_tokens < 1 || o.prompt_tokens < 1)
    usage("--max-tokens and --prompt-tokens must be >= 1");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse_options(argc, argv);
  raise_open_file_limit(options.concurrency + 64);

  asio::io_context io(1);
  Load load{
      io,
      options,
      tcp::endpoint(asio::ip::address_v4::loopback(), static_cast<unsigned short>(options.port)),
      {},
      false};
  std::vector<std::shared_ptr<Connection>> connections;
  for (int i = 0; i < options.concurrency; ++i) {
    connections.push_back(std::make_shared<Connection>(load, i));
  }

  const double cpu_start = cpu_seconds();
  const Clock::time_point start = Clock::now();
  for (auto& c : connections) c->start();

  asio::steady_timer run_timer(io), drain_timer(io);
  run_timer.expires_at(start + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(options.seconds)));
  run_timer.async_wait([&](boost::system::error_code) { load.stopping = true; });
  drain_timer.expires_at(
      start + std::chrono::duration_cast<Clock::duration>(
                  std::chrono::duration<double>(options.seconds + options.drain_seconds)));
  // The drain timer keeps io.run() alive until it fires: cancel it once every connection is done.
  drain_timer.async_wait([&](boost::system::error_code ec) {
    if (ec) return;
    for (auto& c : connections) c->close();
  });
  // Poll once in a while whether everything has wound down, so the run ends as soon as it can.
  asio::steady_timer poll(io);
  std::function<void()> check = [&] {
    poll.expires_after(std::chrono::milliseconds(20));
    poll.async_wait([&](boost::system::error_code ec) {
      if (ec) return;
      bool all_closed = true;
      for (auto& c : connections) {
        if (c.use_count() > 1) all_closed = false;  // a handler still holds it
      }
      if (load.stopping && all_closed) {
        drain_timer.cancel();
        return;
      }
      check();
    });
  };
  check();
  io.run();
  const Clock::time_point end = Clock::now();
  const double cpu_used = cpu_seconds() - cpu_start;

  Totals& t = load.totals;
  const double elapsed = std::chrono::duration<double>(end - start).count();
  std::printf(
      "{\"concurrency\":%d,\"seconds\":%.3f,\"max_tokens\":%d,\"prompt_tokens\":%d,"
      "\"requests\":%lld,\"tokens\":%lld,\"requests_per_s\":%.1f,\"tokens_per_s\":%.1f,"
      "\"gap_mean_us\":%.1f,\"gap_p50_us\":%.1f,\"gap_p99_us\":%.1f,"
      "\"ttft_mean_ms\":%.2f,\"ttft_p99_ms\":%.2f,\"latency_mean_ms\":%.2f,\"latency_p50_ms\":%.2f,"
      "\"latency_p99_ms\":%.2f,\"latency_max_ms\":%.2f,"
      "\"errors\":%lld,\"short_requests\":%lld,\"unfinished\":%lld,\"client_cpu_s\":%.2f}\n",
      options.concurrency, elapsed, options.max_tokens, options.prompt_tokens,
      static_cast<long long>(t.requests), static_cast<long long>(t.tokens),
      static_cast<double>(t.requests) / elapsed, static_cast<double>(t.tokens) / elapsed,
      ns_to_us(mean(t.gaps_ns)), ns_to_us(percentile(t.gaps_ns, 0.5)),
      ns_to_us(percentile(t.gaps_ns, 0.99)), mean(t.first_token_ns) / 1e6,
      percentile(t.first_token_ns, 0.99) / 1e6, mean(t.latencies_ns) / 1e6,
      percentile(t.latencies_ns, 0.5) / 1e6, percentile(t.latencies_ns, 0.99) / 1e6,
      percentile(t.latencies_ns, 1.0) / 1e6, static_cast<long long>(t.errors),
      static_cast<long long>(t.short_requests), static_cast<long long>(t.unfinished), cpu_used);
  return t.requests > 0 ? 0 : 1;
}
