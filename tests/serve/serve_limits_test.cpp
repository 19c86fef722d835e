// Issue 15: max_model_len fitted to the KV cache and advertised, random response ids, and the
// compatibility answers OpenAI clients expect. Against the real binary.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "server_process.h"

namespace paceline::testing {
namespace {

using nlohmann::json;

const std::string kChat = R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":2})";

// The tiny model's KV is 2 KiB a token (4 layers, 2 KV heads of 32, K and V in fp32): 16 MiB hold
// 8,192 tokens, a fifth of its 40,960 positions.
TEST(ServeLimits, MaxModelLenIsCappedToTheKvCacheAndAdvertised) {
  ServerProcess server({"--kv-cache-memory", "16M"});
  EXPECT_NE(server.startup_log().find("more than the KV cache holds"), std::string::npos)
      << server.startup_log();
  json models = json::parse(http(server.port(), "GET", "/v1/models").body);
  const int64_t advertised = models["data"][0]["max_model_len"].get<int64_t>();
  EXPECT_EQ(advertised, 8192) << models.dump();
  // No max_tokens: it fills the (capped) context, which the KV cache can hold. Streamed, so the
  // status arrives with the first token and the test need not wait for 8k of them.
  const std::string body = R"({"prompt":"hello","stream":true})";
  int fd = connect_to(server.port());
  send_all(fd,
           "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           "Content-Length: " +
               std::to_string(body.size()) + "\r\n\r\n" + body);
  char buf[4096];
  ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
  ::close(fd);
  std::string head = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
}

TEST(ServeLimits, AnExplicitMaxModelLenTheKvCannotHoldIsAnError) {
  auto [status, out] = run_paceline(
      "serve --model tiny --port 0 --kv-cache-memory 16M "
      "--max-model-len 20000",
      /*timeout_s=*/60);
  EXPECT_NE(status, 0) << out;
  EXPECT_NE(out.find("--max-model-len 20000 does not fit the KV cache"), std::string::npos) << out;
}

std::string first_id() {
  ServerProcess server({});
  HttpReply r = http(server.port(), "POST", "/v1/chat/completions", kChat);
  return json::parse(r.body)["id"].get<std::string>();
}

TEST(ServeLimits, ResponseIdsDifferAcrossFreshServers) {
  std::string a = first_id();
  std::string b = first_id();
  EXPECT_EQ(a.rfind("chatcmpl-", 0), 0u) << a;
  EXPECT_NE(a, b);
}

TEST(ServeLimits, NoContentTypeIsJsonAndStreamOptionsNeedStream) {
  ServerProcess server({});
  HttpReply plain = http(server.port(), "POST", "/v1/chat/completions", kChat, {});
  EXPECT_EQ(plain.status, 200) << plain.body;
  json with_options = json::parse(kChat);
  with_options["stream_options"] = {{"include_usage", true}};
  HttpReply r = http(server.port(), "POST", "/v1/chat/completions", with_options.dump());
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(json::parse(r.body)["error"]["param"], "stream_options");
}

}  // namespace
}  // namespace paceline::testing
