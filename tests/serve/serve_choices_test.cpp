// `n` > 1 and logprobs through the real binary (`paceline serve --model tiny`, dummy weights on
// the CPU): n choices indexed 0..n-1 over one prompt, usage counting the prompt once; with a seed,
// choice i samples with seed + i, so choices differ from each other and repeat across requests;
// streams interleave the choices' chunks by index; chat logprobs in both shapes.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "metrics_text.h"
#include "server_process.h"

namespace paceline::testing {
namespace {

using nlohmann::json;

class ServeChoices : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new ServerProcess({"--max-model-len", "1024"}); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static int port() { return server_->port(); }
  static json post(const std::string& path, const json& body) {
    HttpReply r = http(port(), "POST", path, body.dump());
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 && !body.value("stream", false) ? json::parse(r.body) : json(r.body);
  }
  static ServerProcess* server_;
};
ServerProcess* ServeChoices::server_ = nullptr;

json chat_request(int n, int max_tokens) {
  return {{"messages", json::array({{{"role", "user"}, {"content", "Tell me a story"}}})},
          {"max_tokens", max_tokens}, {"temperature", 1.0}, {"seed", 1234}, {"n", n},
          {"ignore_eos", true}};
}

TEST_F(ServeChoices, SeededChoicesDifferFromEachOtherAndRepeat) {
  const json a = post("/v1/chat/completions", chat_request(3, 12));
  const json b = post("/v1/chat/completions", chat_request(3, 12));
  ASSERT_EQ(a["choices"].size(), 3u);
  std::set<std::string> texts;
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(a["choices"][i]["index"], i);
    EXPECT_EQ(a["choices"][i]["finish_reason"], "length");
    EXPECT_EQ(a["choices"][i]["message"], b["choices"][i]["message"]) << "choice " << i;
    texts.insert(a["choices"][i]["message"]["content"].get<std::string>());
  }
  EXPECT_EQ(texts.size(), 3u) << a.dump();
  // The prompt counts once, every choice's tokens count.
  const json one = post("/v1/chat/completions", chat_request(1, 12));
  EXPECT_EQ(a["usage"]["prompt_tokens"], one["usage"]["prompt_tokens"]);
  EXPECT_EQ(a["usage"]["completion_tokens"], 36);
  EXPECT_EQ(a["usage"]["total_tokens"], one["usage"]["prompt_tokens"].get<int>() + 36);
  // Choice 0 is the request with n = 1: the seed is the one given.
  EXPECT_EQ(one["choices"][0]["message"], a["choices"][0]["message"]);
}

TEST_F(ServeChoices, StreamInterleavesTheChoicesByIndexAndEndsOnce) {
  json body = chat_request(2, 8);
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  const std::string sse = post("/v1/chat/completions", body).get<std::string>();
  const std::vector<std::string> events = sse_payloads(sse);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back(), "[DONE]");
  std::map<int, std::string> text;
  std::map<int, int> finishes, roles;
  int usage_chunks = 0;
  for (size_t e = 0; e + 1 < events.size(); ++e) {
    json chunk = json::parse(events[e]);
    if (chunk["choices"].empty()) {
      ++usage_chunks;
      EXPECT_EQ(chunk["usage"]["completion_tokens"], 16);
      continue;
    }
    const json& c = chunk["choices"][0];
    const int i = c["index"].get<int>();
    if (c["delta"].contains("role")) ++roles[i];
    if (c["delta"].contains("content")) text[i] += c["delta"]["content"].get<std::string>();
    if (!c["finish_reason"].is_null()) ++finishes[i];
  }
  EXPECT_EQ(usage_chunks, 1);
  EXPECT_EQ(roles, (std::map<int, int>{{0, 1}, {1, 1}}));
  EXPECT_EQ(finishes, (std::map<int, int>{{0, 1}, {1, 1}}));
  // The same seeded choices as without streaming.
  const json whole = post("/v1/chat/completions", chat_request(2, 8));
  for (int i = 0; i < 2; ++i) EXPECT_EQ(text[i], whole["choices"][i]["message"]["content"]);
}

// One series of /metrics (every series carries model_name; -1 when absent).
double metric(int port, const std::string& name, const PromLabels& labels = {}) {
  return scrape_metric(port, name, labels);
}

TEST_F(ServeChoices, ClientThatLeavesCancelsAllChoices) {
  const std::string aborted = "request_success_total";
  const PromLabels abort_reason = {{"finished_reason", "abort"}};
  const double aborted_before = std::max(0.0, metric(port(), aborted, abort_reason));
  json body = chat_request(3, 900);
  body["stream"] = true;
  const std::string payload = body.dump();
  const int fd = connect_to(port());
  ASSERT_GE(fd, 0);
  send_all(fd, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
               "application/json\r\nContent-Length: " +
                   std::to_string(payload.size()) + "\r\n\r\n" + payload);
  char buf[4096];
  ASSERT_GT(::recv(fd, buf, sizeof(buf), 0), 0);  // the stream has started
  EXPECT_GE(metric(port(), "num_requests_running"), 1);
  ::close(fd);
  bool idle = false;
  for (int i = 0; i < 200 && !idle; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    idle = metric(port(), "num_requests_running") == 0 && metric(port(), "kv_cache_usage_perc") == 0;
  }
  EXPECT_TRUE(idle) << "running " << metric(port(), "num_requests_running");
  EXPECT_EQ(metric(port(), aborted, abort_reason) - aborted_before, 3) << "every choice ends as an abort";
}

TEST_F(ServeChoices, ChatLogprobsHoldEveryTokenWithItsTopAlternatives) {
  json body = chat_request(1, 6);
  body["temperature"] = 0;
  body["logprobs"] = true;
  body["top_logprobs"] = 3;
  const json r = post("/v1/chat/completions", body);
  const json& content = r["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 6u) << r.dump();
  std::string joined;
  for (const json& t : content) {
    ASSERT_EQ(t["top_logprobs"].size(), 3u);
    // Greedy: the chosen token is the most likely one.
    EXPECT_EQ(t["token"], t["top_logprobs"][0]["token"]);
    EXPECT_EQ(t["logprob"], t["top_logprobs"][0]["logprob"]);
    EXPECT_LE(t["logprob"].get<double>(), 0.0);
    double mass = 0.0, previous = 0.0;
    for (size_t k = 0; k < 3; ++k) {
      const double lp = t["top_logprobs"][k]["logprob"].get<double>();
      if (k > 0) {
        EXPECT_LE(lp, previous);
      }
      previous = lp;
      mass += std::exp(lp);
    }
    EXPECT_LE(mass, 1.0 + 1e-6);
    for (const json& byte : t["bytes"]) joined += static_cast<char>(byte.get<int>());
  }
  EXPECT_EQ(joined, r["choices"][0]["message"]["content"]) << "the tokens' bytes make the text";

  // Streaming: the same entries, spread over the chunks.
  body["stream"] = true;
  const std::string sse = post("/v1/chat/completions", body).get<std::string>();
  json streamed = json::array();
  for (const std::string& e : sse_payloads(sse)) {
    if (e == "[DONE]") continue;
    const json chunk = json::parse(e);
    const json& c = chunk["choices"][0];
    if (c["logprobs"].is_object()) {
      for (const json& t : c["logprobs"]["content"]) streamed.push_back(t);
    }
  }
  EXPECT_EQ(streamed, content);
}

TEST_F(ServeChoices, CompletionEchoPutsThePromptFirstInEveryChoice) {
  json body = {{"prompt", "Once upon"}, {"max_tokens", 4}, {"echo", true}, {"n", 2},
               {"temperature", 0}};
  const json r = post("/v1/completions", body);
  ASSERT_EQ(r["choices"].size(), 2u);
  for (const json& c : r["choices"]) {
    EXPECT_EQ(c["text"].get<std::string>().rfind("Once upon", 0), 0u) << c.dump();
  }
  body["echo"] = false;
  const json plain = post("/v1/completions", body);
  EXPECT_EQ(r["choices"][1]["text"], "Once upon" + plain["choices"][1]["text"].get<std::string>());
}

}  // namespace
}  // namespace paceline::testing
