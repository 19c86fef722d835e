// Routing, error answers and connection handling of the HTTP transport, over real sockets.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "http_test_client.h"
#include "server/http_server.h"

namespace paceline {
namespace {

using test::get_request;
using test::post_request;
using test::TestClient;

class HttpRoutingTest : public ::testing::Test {
 protected:
  void start(HttpServerOptions options = {}) {
    server_ = std::make_unique<HttpServer>(options);
    server_->route("GET", "/health", [](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
      w->send(200, "text/plain", "ok");
    });
    server_->route("POST", "/echo", [](const HttpRequest& r, std::shared_ptr<ResponseWriter> w) {
      nlohmann::json out = {{"method", r.method},
                            {"path", r.path},
                            {"target", r.target},
                            {"body", r.body},
                            {"agent", r.header("x-agent")}};
      w->send(200, "application/json", out.dump(), {{"X-Echo", "yes"}});
    });
    server_->route("GET", "/echo", [](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
      w->send(200, "text/plain", "get echo");
    });
    server_->start();
  }
  uint16_t port() const { return server_->port(); }

  std::unique_ptr<HttpServer> server_;
};

nlohmann::json error_of(const test::TestResponse& response) {
  return nlohmann::json::parse(response.body).at("error");
}

TEST_F(HttpRoutingTest, RoutesGetAndPostByExactPath) {
  start();
  EXPECT_NE(port(), 0);
  TestClient client(port());
  client.send(get_request("/health"));
  auto health = client.read_response();
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "ok");
  EXPECT_EQ(health.header("content-type"), "text/plain");

  client.send(post_request("/echo?x=1", R"({"a":1})", "X-Agent: t\r\n"));
  auto echo = client.read_response();
  EXPECT_EQ(echo.status, 200);
  EXPECT_EQ(echo.header("x-echo"), "yes");
  auto json = nlohmann::json::parse(echo.body);
  EXPECT_EQ(json["method"], "POST");
  EXPECT_EQ(json["path"], "/echo");
  EXPECT_EQ(json["target"], "/echo?x=1");
  EXPECT_EQ(json["body"], R"({"a":1})");
  EXPECT_EQ(json["agent"], "t");
}

TEST_F(HttpRoutingTest, UnknownPathIs404InOpenAIShape) {
  start();
  TestClient client(port());
  client.send(get_request("/v1/nothing"));
  auto response = client.read_response();
  EXPECT_EQ(response.status, 404);
  EXPECT_EQ(response.header("content-type"), "application/json");
  auto error = error_of(response);
  EXPECT_NE(error["message"].get<std::string>().find("/v1/nothing"), std::string::npos);
  EXPECT_EQ(error["type"], "not_found_error");
  EXPECT_TRUE(error.contains("param"));
  EXPECT_TRUE(error.contains("code"));
}

TEST_F(HttpRoutingTest, KnownPathWithOtherMethodIs405) {
  start();
  TestClient client(port());
  client.send("DELETE /echo HTTP/1.1\r\nHost: x\r\n\r\n");
  auto response = client.read_response();
  EXPECT_EQ(response.status, 405);
  EXPECT_EQ(response.header("allow"), "GET, POST");
  EXPECT_EQ(error_of(response)["type"], "invalid_request_error");
}

TEST_F(HttpRoutingTest, NotFoundAndMethodNotAllowedHandlersCanBeReplaced) {
  server_ = std::make_unique<HttpServer>();
  server_->route("GET", "/a", [](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
    w->send(200, "text/plain", "a");
  });
  server_->set_not_found_handler([](const HttpRequest& r, std::shared_ptr<ResponseWriter> w) {
    w->send(404, "text/plain", "custom missing " + r.path);
  });
  server_->set_method_not_allowed_handler(
      [](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
        w->send(405, "text/plain", "custom method");
      });
  server_->start();
  TestClient client(port());
  client.send(get_request("/b"));
  EXPECT_EQ(client.read_response().body, "custom missing /b");
  client.send(post_request("/a", "{}"));
  EXPECT_EQ(client.read_response().body, "custom method");
}

TEST_F(HttpRoutingTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  start();
  TestClient client(port());
  for (int i = 0; i < 3; ++i) {
    client.send(get_request("/health"));
    auto response = client.read_response();
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(response.header("connection"), "keep-alive");
  }
  EXPECT_EQ(server_->open_connections(), 1u);
  // Two requests sent back to back (pipelined) are answered in order.
  client.send(get_request("/health") + post_request("/echo", "second"));
  EXPECT_EQ(client.read_response().body, "ok");
  EXPECT_NE(client.read_response().body.find("second"), std::string::npos);
}

TEST_F(HttpRoutingTest, ConnectionCloseIsHonoured) {
  start();
  TestClient client(port());
  client.send(get_request("/health", "Connection: close\r\n"));
  auto response = client.read_response();
  EXPECT_EQ(response.header("connection"), "close");
  EXPECT_TRUE(client.closed_by_peer());
}

TEST_F(HttpRoutingTest, KeepAliveOffClosesAfterEachResponse) {
  HttpServerOptions options;
  options.keep_alive = false;
  start(options);
  TestClient client(port());
  client.send(get_request("/health"));
  EXPECT_EQ(client.read_response().header("connection"), "close");
  EXPECT_TRUE(client.closed_by_peer());
}

TEST_F(HttpRoutingTest, OversizedBodyIs413WithoutReadingIt) {
  HttpServerOptions options;
  options.max_body_bytes = 1024;
  start(options);
  TestClient client(port());
  // Only the header is sent: the answer must not wait for the 100 MB that it announces.
  client.send(
      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: 100000000\r\n\r\n");
  auto response = client.read_response();
  EXPECT_EQ(response.status, 413);
  EXPECT_EQ(response.header("connection"), "close");
  auto error = error_of(response);
  EXPECT_EQ(error["type"], "invalid_request_error");
  EXPECT_EQ(error["code"], "request_too_large");
  EXPECT_TRUE(client.closed_by_peer());
}

TEST_F(HttpRoutingTest, OversizedChunkedBodyIs413) {
  HttpServerOptions options;
  options.max_body_bytes = 1024;
  start(options);
  TestClient client(port());
  std::string chunk(800, 'x');
  client.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n320\r\n" +
              chunk + "\r\n320\r\n" + chunk + "\r\n");
  EXPECT_EQ(client.read_response().status, 413);
}

TEST_F(HttpRoutingTest, BodyAtTheLimitIsAccepted) {
  HttpServerOptions options;
  options.max_body_bytes = 1024;
  start(options);
  TestClient client(port());
  client.send(post_request("/echo", std::string(1024, 'y'), "Expect: 100-continue\r\n"));
  auto response = client.read_response();
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(nlohmann::json::parse(response.body)["body"].get<std::string>().size(), 1024u);
}

TEST_F(HttpRoutingTest, MalformedRequestLineIs400AndCloses) {
  start();
  TestClient client(port());
  client.send("THIS IS NOT HTTP\r\n\r\n");
  auto response = client.read_response();
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(error_of(response)["type"], "invalid_request_error");
  EXPECT_TRUE(client.closed_by_peer());
  // The server is still up.
  TestClient again(port());
  again.send(get_request("/health"));
  EXPECT_EQ(again.read_response().status, 200);
}

TEST_F(HttpRoutingTest, BadContentLengthIs400) {
  start();
  TestClient client(port());
  client.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n");
  EXPECT_EQ(client.read_response().status, 400);
}

TEST_F(HttpRoutingTest, SlowHeaderIsCutOffAfterTheTimeout) {
  HttpServerOptions options;
  options.header_timeout = std::chrono::milliseconds(200);
  start(options);
  TestClient client(port());
  client.send("GET /health HTTP/1.1\r\nHost: x\r\n");  // never finished
  auto begin = std::chrono::steady_clock::now();
  EXPECT_TRUE(client.closed_by_peer());
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(2));
  EXPECT_TRUE(test::eventually([&] { return server_->open_connections() == 0; }));
}

TEST_F(HttpRoutingTest, StartFailsClearlyWhenThePortIsTaken) {
  start();
  HttpServerOptions options;
  options.port = port();
  HttpServer second(options);
  try {
    second.start();
    FAIL() << "start() should throw";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find(std::to_string(port())), std::string::npos) << message;
    EXPECT_NE(message.find("taken"), std::string::npos) << message;
  }
}

TEST_F(HttpRoutingTest, HandlerExceptionBecomes500) {
  server_ = std::make_unique<HttpServer>();
  server_->route("GET", "/throw", [](const HttpRequest&, std::shared_ptr<ResponseWriter>) {
    throw std::runtime_error("boom");
  });
  server_->start();
  TestClient client(port());
  client.send(get_request("/throw"));
  auto response = client.read_response();
  EXPECT_EQ(response.status, 500);
  EXPECT_EQ(error_of(response)["type"], "internal_server_error");
  client.send(get_request("/throw"));  // the connection is still usable
  EXPECT_EQ(client.read_response().status, 500);
}

TEST_F(HttpRoutingTest, RoutesCannotBeAddedAfterStart) {
  start();
  EXPECT_THROW(
      server_->route("GET", "/late", [](const HttpRequest&, std::shared_ptr<ResponseWriter>) {}),
      Error);
}

}  // namespace
}  // namespace paceline
