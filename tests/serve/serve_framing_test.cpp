// Issue 15, the HTTP side: framing that could smuggle a request, the API key checked before a
// body is read, and the connection limit; each against the real binary.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server_process.h"

namespace paceline::testing {
namespace {

using namespace std::chrono_literals;

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Each request carries a second, smuggled one as its "body". The server must answer 400 once and
// close, never reading the rest as a request of its own (RFC 9112 §6.1, §6.3).
TEST(ServeFraming, TransferEncodingOtherThanChunkedIs400AndCloses) {
  ServerProcess server({});
  const std::string smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::vector<std::string> framings = {
      "Transfer-Encoding: gzip\r\n",
      "Transfer-Encoding: identity\r\n",
      "Transfer-Encoding: xchunked\r\n",
      "Transfer-Encoding: chunked, identity\r\n",
      "Transfer-Encoding: xchunked\r\nContent-Length: " + std::to_string(smuggled.size()) + "\r\n",
      "Content-Length: " + std::to_string(smuggled.size()) + "\r\nTransfer-Encoding: xchunked\r\n",
  };
  for (const std::string& framing : framings) {
    RawExchange r = raw_exchange_within(
        server.port(), "POST /v1/completions HTTP/1.1\r\nHost: x\r\n" + framing + "\r\n" + smuggled,
        3s);
    EXPECT_EQ(r.raw.rfind("HTTP/1.1 400", 0), 0u) << framing << r.raw;
    EXPECT_EQ(count_of(r.raw, "HTTP/1.1 "), 1) << framing << r.raw;
    EXPECT_EQ(r.raw.find("smuggled"), std::string::npos) << framing << r.raw;
    EXPECT_TRUE(r.closed) << framing << "the connection stayed open";
  }
  // A plain chunked body still works.
  const std::string body = R"({"prompt":"hi","max_tokens":1})";
  char size[16];
  std::snprintf(size, sizeof(size), "%zx", body.size());
  RawExchange ok = raw_exchange_within(
      server.port(),
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: "
      "chunked\r\nContent-Type: application/json\r\n\r\n" +
          std::string(size) + "\r\n" + body + "\r\n0\r\n\r\n",
      10s);
  EXPECT_EQ(ok.raw.rfind("HTTP/1.1 200", 0), 0u) << ok.raw;
}

// A keyless client announcing a large body is answered from its header alone, before the body,
// and its connection is closed: no memory is held for it, no body timeout waited out.
TEST(ServeFraming, MissingApiKeyIs401BeforeTheBodyWithWwwAuthenticate) {
  ServerProcess server({"--api-key", "sekret"});
  auto t0 = std::chrono::steady_clock::now();
  RawExchange r = raw_exchange_within(
      server.port(),
      "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: 30000000\r\n\r\n{\"messages\":",
      5s);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  HttpReply reply = parse_reply(r.raw);
  EXPECT_EQ(reply.status, 401) << r.raw;
  EXPECT_EQ(reply.headers["www-authenticate"], "Bearer") << r.raw;
  EXPECT_TRUE(r.closed);
  EXPECT_LT(seconds, 3.0);
  // /v1/models needs the key too; /health does not.
  EXPECT_EQ(http(server.port(), "GET", "/v1/models").status, 401);
  EXPECT_EQ(http(server.port(), "GET", "/health").status, 200);
  EXPECT_EQ(
      http(server.port(), "GET", "/v1/models", "", {{"Authorization", "Bearer sekret"}}).status,
      200);
}

TEST(ServeFraming, ConnectionsBeyondTheLimitGet503AndAreClosed) {
  ServerProcess server({"--max-connections", "4"});
  std::vector<int> idle;
  for (int i = 0; i < 4; ++i) idle.push_back(connect_to(server.port()));
  std::this_thread::sleep_for(200ms);  // the server has accepted them
  RawExchange over =
      raw_exchange_within(server.port(), "GET /health HTTP/1.1\r\nHost: x\r\n\r\n", 3s);
  HttpReply reply = parse_reply(over.raw);
  EXPECT_EQ(reply.status, 503) << over.raw;
  EXPECT_FALSE(reply.headers["retry-after"].empty());
  EXPECT_TRUE(over.closed);
  for (int fd : idle) ::close(fd);
  // Once they are gone, new connections are served again.
  int status = 0;
  for (int i = 0; i < 100 && status != 200; ++i) {
    std::this_thread::sleep_for(20ms);
    status = http(server.port(), "GET", "/health").status;
  }
  EXPECT_EQ(status, 200);
}

}  // namespace
}  // namespace paceline::testing
