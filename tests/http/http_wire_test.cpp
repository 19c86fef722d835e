// Response bytes: status line, headers, chunks, SSE framing, OpenAI-shaped error bodies.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/http_error.h"
#include "server/http_wire.h"

namespace paceline {
namespace {

TEST(HttpWireTest, HeadHasStatusLineHeadersAndBlankLine) {
  EXPECT_EQ(http_response_head(200, {{"Content-Type", "text/plain"}, {"Content-Length", "2"}}),
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n");
  EXPECT_EQ(http_response_head(413, {}), "HTTP/1.1 413 Payload Too Large\r\n\r\n");
}

TEST(HttpWireTest, HeaderWithLineBreakIsDropped) {
  std::string head = http_response_head(200, {{"X-A", "ok"}, {"X-B", "evil\r\nSet-Cookie: x"}});
  EXPECT_EQ(head, "HTTP/1.1 200 OK\r\nX-A: ok\r\n\r\n");
}

TEST(HttpWireTest, ExtraHeadersCannotOverrideFramingHeaders) {
  HttpHeaderList headers = {{"Content-Length", "5"}, {"Connection", "keep-alive"}};
  http_add_headers(headers, {{"content-length", "99"}, {"X-Request-Id", "r"}});
  ASSERT_EQ(headers.size(), 3u);
  EXPECT_EQ(headers[0].second, "5");
  EXPECT_EQ(headers[2].first, "X-Request-Id");
}

TEST(HttpWireTest, ChunkIsHexSizeThenDataThenCrlf) {
  EXPECT_EQ(http_chunk("hello"), "5\r\nhello\r\n");
  EXPECT_EQ(http_chunk(std::string(26, 'a')), "1a\r\n" + std::string(26, 'a') + "\r\n");
  EXPECT_EQ(kHttpLastChunk, "0\r\n\r\n");
}

TEST(HttpWireTest, SseDataSplitsLines) {
  EXPECT_EQ(sse_data("{\"a\":1}"), "data: {\"a\":1}\n\n");
  EXPECT_EQ(sse_data("[DONE]"), "data: [DONE]\n\n");
  EXPECT_EQ(sse_data("a\r\nb\nc"), "data: a\ndata: b\ndata: c\n\n");
  EXPECT_EQ(sse_data(""), "data: \n\n");
}

TEST(HttpWireTest, ErrorBodyHasOpenAIShape) {
  auto body = nlohmann::json::parse(http_error_body(413, "too big", "request_too_large"));
  const auto& error = body.at("error");
  EXPECT_EQ(error.at("message"), "too big");
  EXPECT_EQ(error.at("type"), "invalid_request_error");
  EXPECT_TRUE(error.at("param").is_null());
  EXPECT_EQ(error.at("code"), "request_too_large");
  auto missing = nlohmann::json::parse(http_error_body(404, "no route")).at("error");
  EXPECT_EQ(missing.at("type"), "not_found_error");
  EXPECT_TRUE(missing.at("code").is_null());
  EXPECT_EQ(nlohmann::json::parse(http_error_body(500, "x")).at("error").at("type"),
            "internal_server_error");
}

}  // namespace
}  // namespace paceline
