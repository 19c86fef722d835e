#pragma once
// The HTTP/1.1 transport of `paceline serve`: one Asio event loop (Boost.Beast parsing) that holds
// thousands of keep-alive and SSE connections, and an exact-path route table. Handlers see only
// http_types.h; no Asio or Beast type crosses this header.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "server/http_types.h"

namespace paceline {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0: the kernel picks a free port; see HttpServer::port()
  int io_threads = 1;
  size_t max_body_bytes = size_t{32} << 20;  // larger bodies get 413 before they are read
  bool keep_alive = true;                    // false: every response closes its connection
  // A request's header must arrive within this (slowloris); it also bounds idle keep-alive.
  std::chrono::milliseconds header_timeout{30'000};
  std::chrono::milliseconds body_timeout{120'000};
  // A client that lets this much response data pile up unread is dropped as disconnected.
  size_t max_write_queue_bytes = size_t{16} << 20;
  // Open connections beyond this are answered 503 and closed at once (0: no limit), so a flood
  // of idle sockets cannot take every file descriptor and the memory each session holds.
  size_t max_connections = 0;
};

struct HttpContext;

class HttpServer {
 public:
  explicit HttpServer(HttpServerOptions options = {});
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Routes are exact paths (the query is ignored) and must be added before start().
  void route(std::string method, std::string path, HttpHandler handler);
  // Every path under `prefix` that no exact route has (HttpRouter::add_prefix).
  void route_prefix(std::string method, std::string prefix, HttpHandler handler);
  // Replace the default answers: 404 for an unknown path, 405 for a known path with another
  // method. The defaults send OpenAI's error object.
  void set_not_found_handler(HttpHandler handler);
  void set_method_not_allowed_handler(HttpHandler handler);
  // Runs on each request's header before its body is read; a rejection is sent and the
  // connection closed (see HttpHeaderCheck). Set before start().
  void set_header_check(HttpHeaderCheck check);

  // Binds, listens and starts the io threads. Throws paceline::Error when the address is taken
  // or invalid. Call once.
  void start();
  // The bound port (the picked one when options.port was 0); valid after start().
  uint16_t port() const;

  // Closes the listening socket; open connections keep being served, and each one closes after
  // its current response. For draining: stop_accepting(), wait for active_requests() == 0, stop().
  void stop_accepting();
  // Closes every connection (handlers in flight see on_disconnect) and joins the io threads.
  // Writers that outlive the server turn into no-ops.
  void stop();

  size_t open_connections() const;
  // Requests whose response has not been written completely yet.
  size_t active_requests() const;

 private:
  struct Loop;
  std::shared_ptr<HttpContext> context_;
  std::unique_ptr<Loop> loop_;
};

}  // namespace paceline
