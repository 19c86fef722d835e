// Many concurrent SSE streams on one event loop, and draining for a graceful shutdown.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <mutex>
#include <thread>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "http_test_client.h"
#include "server/http_server.h"

namespace paceline {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using test::eventually;

void raise_open_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// The body of a chunked response in `raw` (head included); empty when the framing is wrong.
std::string dechunk(const std::string& raw) {
  size_t pos = raw.find("\r\n\r\n");
  if (pos == std::string::npos) return {};
  pos += 4;
  std::string body;
  while (pos < raw.size()) {
    size_t line_end = raw.find("\r\n", pos);
    if (line_end == std::string::npos) return {};
    size_t size = std::stoul(raw.substr(pos, line_end - pos), nullptr, 16);
    pos = line_end + 2;
    if (size == 0) return pos + 2 == raw.size() ? body : std::string();
    if (raw.compare(pos + size, 2, "\r\n") != 0) return {};
    body += raw.substr(pos, size);
    pos += size + 2;
  }
  return {};
}

// One client connection driven by the test's own io_context.
struct StreamClient : std::enable_shared_from_this<StreamClient> {
  explicit StreamClient(asio::io_context& io) : socket(io) {}
  tcp::socket socket;
  std::string received;
  bool done = false;
  char buffer[4096];

  void start(const tcp::endpoint& server, const std::string& request) {
    auto self = shared_from_this();
    socket.async_connect(server, [self, request](boost::system::error_code ec) {
      if (ec) return;
      auto bytes = std::make_shared<std::string>(request);
      asio::async_write(self->socket, asio::buffer(*bytes),
                        [self, bytes](boost::system::error_code ec, size_t) {
                          if (!ec) self->read();
                        });
    });
  }
  void read() {
    auto self = shared_from_this();
    socket.async_read_some(asio::buffer(buffer), [self](boost::system::error_code ec, size_t n) {
      if (ec) return;
      self->received.append(self->buffer, n);
      // The last chunk, after the head: a head whose last header value ends in '0' (a random
      // X-Request-Id) also ends in "0\r\n\r\n".
      const size_t head = self->received.find("\r\n\r\n");
      if (head != std::string::npos && self->received.size() >= head + 4 + 5 &&
          self->received.compare(self->received.size() - 5, 5, "0\r\n\r\n") == 0) {
        self->done = true;
        return;
      }
      self->read();
    });
  }
};

struct StreamCase {
  int connections;
  int io_threads;
};

class HttpManyStreamsTest : public ::testing::TestWithParam<StreamCase> {};

TEST_P(HttpManyStreamsTest, EveryStreamReceivesEveryEvent) {
  raise_open_file_limit();
  const int kConnections = GetParam().connections;
  constexpr int kEvents = 20;
  std::mutex mutex;
  std::vector<std::shared_ptr<ResponseWriter>> writers;

  HttpServerOptions options;
  options.io_threads = GetParam().io_threads;
  HttpServer server(options);
  server.route("GET", "/stream", [&](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
    w->start_sse();
    std::lock_guard lock(mutex);
    writers.push_back(std::move(w));
  });
  server.start();

  size_t peak_connections = 0;
  size_t peak_active = 0;
  // The "engine": once every stream is open, one event per stream per round, then the ends.
  std::thread engine([&] {
    bool all = eventually(
        [&] {
          std::lock_guard lock(mutex);
          return writers.size() == static_cast<size_t>(kConnections);
        },
        std::chrono::seconds(10));
    peak_connections = server.open_connections();
    peak_active = server.active_requests();
    std::lock_guard lock(mutex);
    if (!all) return;
    for (int round = 0; round < kEvents; ++round) {
      for (auto& writer : writers) writer->sse_event("{\"n\":" + std::to_string(round) + "}");
    }
    for (auto& writer : writers) writer->end();
  });

  asio::io_context io;
  tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), server.port());
  std::vector<std::shared_ptr<StreamClient>> clients;
  for (int i = 0; i < kConnections; ++i) {
    clients.push_back(std::make_shared<StreamClient>(io));
    clients.back()->start(endpoint, test::get_request("/stream"));
  }
  asio::steady_timer deadline(io, std::chrono::seconds(20));
  deadline.async_wait([&](boost::system::error_code ec) {
    if (ec) return;
    for (auto& client : clients) client->socket.close();
  });
  auto all_done = [&] {
    for (auto& client : clients) {
      if (!client->done) return false;
    }
    return true;
  };
  while (!all_done() && io.run_one()) {
  }
  deadline.cancel();
  engine.join();

  EXPECT_EQ(peak_connections, static_cast<size_t>(kConnections));
  EXPECT_EQ(peak_active, static_cast<size_t>(kConnections));
  std::string expected;
  for (int round = 0; round < kEvents; ++round) {
    expected += "data: {\"n\":" + std::to_string(round) + "}\n\n";
  }
  int complete = 0;
  for (auto& client : clients) complete += client->done && dechunk(client->received) == expected;
  EXPECT_EQ(complete, kConnections);
  EXPECT_TRUE(eventually([&] { return server.active_requests() == 0; }));
  clients.clear();
}

INSTANTIATE_TEST_SUITE_P(Loads, HttpManyStreamsTest,
                         ::testing::Values(StreamCase{1000, 1}, StreamCase{200, 4}),
                         [](const auto& info) {
                           return std::to_string(info.param.connections) + "_streams_" +
                                  std::to_string(info.param.io_threads) + "_threads";
                         });

TEST(HttpDrainTest, StopAcceptingLetsStreamsInFlightFinish) {
  std::mutex mutex;
  std::shared_ptr<ResponseWriter> writer;
  HttpServer server;
  server.route("GET", "/stream", [&](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
    w->start_sse();
    std::lock_guard lock(mutex);
    writer = std::move(w);
  });
  server.start();
  test::TestClient client(server.port());
  client.send(test::get_request("/stream"));
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(mutex);
    return writer != nullptr;
  }));
  EXPECT_EQ(server.active_requests(), 1u);

  server.stop_accepting();
  EXPECT_THROW(test::TestClient refused(server.port()), std::runtime_error);
  EXPECT_EQ(server.active_requests(), 1u);
  EXPECT_EQ(server.open_connections(), 1u);

  writer->sse_event("last words");
  writer->end();
  auto response = client.read_response();
  EXPECT_EQ(response.body, "data: last words\n\n");
  EXPECT_TRUE(eventually([&] { return server.active_requests() == 0; }));
  // While draining, a connection is closed once its response is out.
  EXPECT_TRUE(client.closed_by_peer());
  EXPECT_TRUE(eventually([&] { return server.open_connections() == 0; }));
  server.stop();
}

}  // namespace
}  // namespace paceline
