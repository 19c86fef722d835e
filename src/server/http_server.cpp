#include "server/http_server.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <thread>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "base/error.h"
#include "server/http_context.h"
#include "server/http_session.h"

namespace paceline {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

constexpr auto kAcceptRetryDelay = std::chrono::milliseconds(100);
constexpr auto kStopGrace = std::chrono::seconds(2);

tcp::endpoint resolve(asio::io_context& io, const std::string& host, uint16_t port) {
  error_code ec;
  asio::ip::address address = asio::ip::make_address(host, ec);
  if (!ec) return tcp::endpoint(address, port);
  tcp::resolver resolver(io);
  auto results = resolver.resolve(host, std::to_string(port), ec);
  if (ec || results.empty()) fail("cannot resolve host '{}': {}", host, ec.message());
  return results.begin()->endpoint();
}

void close_sessions(HttpContext& context) {
  std::vector<std::weak_ptr<HttpSession>> sessions;
  {
    std::lock_guard lock(context.sessions_mutex);
    for (const auto& [key, session] : context.sessions) sessions.push_back(session);
  }
  for (const auto& weak : sessions) {
    if (auto session = weak.lock()) session->shutdown();
  }
}

}  // namespace

// The io_context and what lives on it. Declared first, `io` is destroyed last: uninvoked handlers
// (and the sessions they hold) go with it, after the acceptor and timer.
struct HttpServer::Loop {
  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::mutex accept_mutex;  // the acceptor is touched by io threads and by stop_accepting()
  tcp::acceptor acceptor{io};
  asio::steady_timer accept_retry{io};
  bool accepting = false;
  std::vector<std::thread> threads;
  uint16_t port = 0;
  bool started = false;
  bool stopped = false;

  explicit Loop(int threads_hint) : io(threads_hint) {}

  void accept_next(const std::shared_ptr<HttpContext>& context);  // holds accept_mutex
  void on_accept(const std::shared_ptr<HttpContext>& context, error_code ec, tcp::socket socket);
};

void HttpServer::Loop::accept_next(const std::shared_ptr<HttpContext>& context) {
  if (!accepting) return;
  acceptor.async_accept(asio::make_strand(io), [this, context](error_code ec, tcp::socket socket) {
    on_accept(context, ec, std::move(socket));
  });
}

void HttpServer::Loop::on_accept(const std::shared_ptr<HttpContext>& context, error_code ec,
                                 tcp::socket socket) {
  if (!ec) {
    error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);  // SSE events are small: no Nagle delay
    const size_t limit = context->options.max_connections;
    const bool over =
        limit > 0 && context->open_connections.load(std::memory_order_relaxed) >= limit;
    auto session = HttpSession::create(std::move(socket), context);
    if (over) {
      session->start_over_capacity();
    } else {
      session->start();
    }
  }
  std::lock_guard lock(accept_mutex);
  if (!accepting) return;
  if (ec && ec != asio::error::operation_aborted) {
    // Out of file descriptors, most likely: wait instead of spinning on the error.
    spdlog::warn("http: accept failed: {}; retrying", ec.message());
    accept_retry.expires_after(kAcceptRetryDelay);
    accept_retry.async_wait([this, context](error_code wait_ec) {
      std::lock_guard retry_lock(accept_mutex);
      if (!wait_ec) accept_next(context);
    });
    return;
  }
  accept_next(context);
}

HttpServer::HttpServer(HttpServerOptions options)
    : context_(std::make_shared<HttpContext>()),
      loop_(std::make_unique<Loop>(std::max(1, options.io_threads))) {
  context_->options = std::move(options);
}

HttpServer::~HttpServer() {
  try {
    stop();
  } catch (const std::exception& e) {
    spdlog::error("http: stopping the server failed: {}", e.what());
  }
}

void HttpServer::route(std::string method, std::string path, HttpHandler handler) {
  if (loop_->started)
    fail("HttpServer::route({} {}): routes must be added before start()", method, path);
  context_->router.add(std::move(method), std::move(path), std::move(handler));
}

void HttpServer::route_prefix(std::string method, std::string prefix, HttpHandler handler) {
  if (loop_->started)
    fail("HttpServer::route_prefix({} {}): routes must be added before start()", method, prefix);
  context_->router.add_prefix(std::move(method), std::move(prefix), std::move(handler));
}

void HttpServer::set_not_found_handler(HttpHandler handler) {
  if (loop_->started) fail("HttpServer: the not-found handler must be set before start()");
  context_->router.set_not_found(std::move(handler));
}

void HttpServer::set_method_not_allowed_handler(HttpHandler handler) {
  if (loop_->started) fail("HttpServer: the 405 handler must be set before start()");
  context_->router.set_method_not_allowed(std::move(handler));
}

void HttpServer::set_header_check(HttpHeaderCheck check) {
  if (loop_->started) fail("HttpServer: the header check must be set before start()");
  context_->header_check = std::move(check);
}

void HttpServer::start() {
  Loop& loop = *loop_;
  if (loop.started) fail("HttpServer::start: already started");
  const HttpServerOptions& options = context_->options;
  tcp::endpoint endpoint = resolve(loop.io, options.host, options.port);
  error_code ec;
  loop.acceptor.open(endpoint.protocol(), ec);
  if (!ec) loop.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) loop.acceptor.bind(endpoint, ec);
  if (!ec) loop.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    error_code ignored;
    loop.acceptor.close(ignored);
    fail("cannot listen on {}:{}: {}{}", options.host, options.port, ec.message(),
         ec == asio::error::address_in_use ? " (the port is taken; choose another with --port)"
                                           : "");
  }
  loop.port = loop.acceptor.local_endpoint().port();
  loop.started = true;
  {
    std::lock_guard lock(loop.accept_mutex);
    loop.accepting = true;
    loop.accept_next(context_);
  }
  loop.work.emplace(loop.io.get_executor());
  for (int i = 0; i < std::max(1, options.io_threads); ++i) {
    loop.threads.emplace_back([&loop] {
      while (true) {
        try {
          loop.io.run();
          return;
        } catch (const std::exception& e) {
          spdlog::error("http: io thread: {}", e.what());
        }
      }
    });
  }
  spdlog::info("http: listening on {}:{} ({} io thread{})", options.host, loop.port,
               options.io_threads, options.io_threads == 1 ? "" : "s");
}

uint16_t HttpServer::port() const {
  return loop_->port;
}

void HttpServer::stop_accepting() {
  Loop& loop = *loop_;
  context_->draining.store(true, std::memory_order_release);
  std::lock_guard lock(loop.accept_mutex);
  loop.accepting = false;
  error_code ignored;
  loop.acceptor.close(ignored);
  loop.accept_retry.cancel();
}

void HttpServer::stop() {
  Loop& loop = *loop_;
  if (!loop.started || loop.stopped) return;
  loop.stopped = true;
  stop_accepting();

  // Close every session (handlers in flight see on_disconnect) and let the closes run; repeat,
  // since a connection accepted just before the acceptor closed may register late.
  loop.work.reset();
  auto deadline = std::chrono::steady_clock::now() + kStopGrace;
  for (int round = 0; open_connections() > 0 && std::chrono::steady_clock::now() < deadline;
       ++round) {
    if (round % 20 == 0) close_sessions(*context_);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  loop.io.stop();
  for (auto& thread : loop.threads) thread.join();
  loop.threads.clear();
  std::unique_lock life(context_->life_mutex);
  context_->loop_alive = false;
}

size_t HttpServer::open_connections() const {
  return context_->open_connections.load(std::memory_order_relaxed);
}

size_t HttpServer::active_requests() const {
  return context_->active_requests.load(std::memory_order_relaxed);
}

}  // namespace paceline
