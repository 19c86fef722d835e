// libFuzzer target over the HTTP request reader as the server runs it: a real HttpServer (Asio,
// Beast's parser, the session's limits and phases) listens on loopback, each input is written to a
// fresh connection as raw bytes and the client then half-closes. Properties: the server never
// crashes; what it sends back is a sequence of well-formed HTTP/1.1 responses (only the last may
// be cut short, by a close), with nothing after a transport error (400, 413, 431); and afterwards
// no connection or request is left open, so no input leaks a session, a socket or a request
// count. Built and run by scripts/fuzz.
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include <spdlog/spdlog.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "fuzz/fuzz_check.h"
#include "server/http_server.h"
#include "server/http_types.h"

namespace {

using namespace paceline;
using paceline::fuzz::require;
namespace asio = boost::asio;
namespace http = boost::beast::http;

HttpServer* g_server = nullptr;

// Small limits, so that inputs of a few KiB reach the 413 and 431 paths too.
HttpServerOptions fuzz_options() {
  HttpServerOptions options;
  options.max_body_bytes = 4096;
  options.header_timeout = std::chrono::milliseconds(2000);
  options.body_timeout = std::chrono::milliseconds(2000);
  return options;
}

// RFC 9112 6.3: a request whose Transfer-Encoding does not end in "chunked" has no knowable
// length; the transport must answer 400 and close, and no handler may see it (else the body is
// read as the next request: smuggling, issue 15). The server answers so since issue 15's fix;
// PACELINE_FUZZ_STRICT_FRAMING=0 turns the property off (to fuzz an older server).
bool g_strict_framing = true;

std::string last_coding(std::string value) {
  value = value.substr(value.rfind(',') == std::string::npos ? 0 : value.rfind(',') + 1);
  size_t begin = value.find_first_not_of(" \t");
  size_t end = value.find_last_not_of(" \t");
  if (begin == std::string::npos) return "";
  value = value.substr(begin, end - begin + 1);
  for (char& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return value;
}

HttpHandler checked(HttpHandler handler) {
  return [handler](const HttpRequest& request, std::shared_ptr<ResponseWriter> writer) {
    if (g_strict_framing && request.headers.count("transfer-encoding")) {
      require(last_coding(request.header("transfer-encoding")) == "chunked",
              "a handler got a request whose Transfer-Encoding does not end in chunked");
    }
    handler(request, std::move(writer));
  };
}

// Routes for each way a handler answers: a whole body, a stream, and no answer at all (the
// writer's destructor then sends the 500).
void add_routes(HttpServer& server) {
  server.route("POST", "/echo", checked([](const HttpRequest& request, auto w) {
    w->send(200, "text/plain", request.body, {{"X-Path", request.path}});
  }));
  server.route("GET", "/stream", checked([](const HttpRequest&, auto w) {
    w->start_sse();
    w->sse_event("one");
    w->sse_event("two\nlines");
    w->sse_event("[DONE]");
    w->end();
  }));
  server.route("GET", "/drop", checked([](const HttpRequest&, auto) {}));
  server.set_not_found_handler(checked([](const HttpRequest&, auto w) {
    w->send(404, "text/plain", "no route");
  }));
  server.set_method_not_allowed_handler(checked([](const HttpRequest&, auto w) {
    w->send(405, "text/plain", "wrong method");
  }));
}

// libFuzzer's timers interrupt system calls (EINTR), which Asio's blocking calls hand back.
bool interrupted(const boost::system::error_code& ec) {
  return ec == asio::error::interrupted || ec == asio::error::try_again;
}

std::string exchange(uint16_t port, std::string_view input) {
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  boost::system::error_code ec;
  do {
    socket.close(ec);
    socket.connect({asio::ip::make_address("127.0.0.1"), port}, ec);
  } while (interrupted(ec));
  require(!ec, "cannot connect to the fuzzed server");
  size_t sent = 0;
  while (sent < input.size()) {
    sent += socket.write_some(asio::buffer(input.data() + sent, input.size() - sent), ec);
    if (ec && !interrupted(ec)) break;  // the server closed: it may have answered already
  }
  socket.shutdown(asio::ip::tcp::socket::shutdown_send, ec);
  std::string received;
  char chunk[4096];
  while (true) {
    size_t n = socket.read_some(asio::buffer(chunk), ec);
    received.append(chunk, n);
    if (ec && !interrupted(ec)) break;
  }
  return received;
}

// Every response complete and well formed, except that the last one may stop early; and nothing
// after a 400, 413 or 431. The routes above never send those, so they come from the transport
// itself, which must close then: what follows a request it could not frame is not a request.
void check_responses(std::string_view bytes) {
  bool closing = false;
  while (!bytes.empty()) {
    require(!closing, "a response follows a 400, 413 or 431 on the same connection");
    http::response_parser<http::string_body> parser;
    parser.eager(true);
    parser.body_limit(64u << 20);
    boost::system::error_code ec;
    size_t used = parser.put(asio::buffer(bytes.data(), bytes.size()), ec);
    if (ec == http::error::need_more) return;  // cut short by a close
    require(!ec, "the server sent a malformed HTTP response");
    if (!parser.is_done()) return;
    int status = parser.get().result_int();
    require(status >= 100 && status < 600, "response status out of range");
    closing = status == 400 || status == 413 || status == 431;
    bytes.remove_prefix(used);
  }
}

void wait_until_idle(const HttpServer& server) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (server.open_connections() > 0 || server.active_requests() > 0) {
    require(std::chrono::steady_clock::now() < deadline,
            "a connection or request is still open 5 s after the client left");
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);
  const char* strict = std::getenv("PACELINE_FUZZ_STRICT_FRAMING");
  g_strict_framing = strict == nullptr || std::string_view(strict) != "0";
  g_server = new HttpServer(fuzz_options());  // lives until exit: its io thread serves every input
  add_routes(*g_server);
  g_server->start();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  check_responses(exchange(g_server->port(), input));
  wait_until_idle(*g_server);
  return 0;
}
