// Issue 15: one request must not freeze the others, and the gauges tell the truth while a long
// forward runs. Against the real binary, tiny model on the CPU.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "metrics_text.h"
#include "server_process.h"

namespace paceline::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

double metric_of(const std::string& text, const std::string& name) {
  return metric_value(text, name);
}

std::string post(const std::string& path, const std::string& body) {
  return "POST " + path +
         " HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: "
         "application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The probe's worst bodies: 100k small objects in an ignored field, 100k chat messages, 30 MB of
// "a". While they are being read, parsed and tokenized, /health and a small chat answer fast.
TEST(ServeResponsiveness, WorstBodiesInFlightDoNotStallHealthOrASmallChat) {
  ServerProcess server({"--max-model-len", "4096", "--max-body", "40M"});
  std::string objects = R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":1,"x":[)";
  for (int i = 0; i < 100000; ++i) objects += i ? ",{\"a\":1}" : "{\"a\":1}";
  objects += "]}";
  std::string messages = R"({"max_tokens":1,"messages":[)";
  for (int i = 0; i < 100000; ++i)
    messages += std::string(i ? "," : "") + R"({"role":"user","content":"hi"})";
  messages += "]}";
  std::string as = R"({"max_tokens":1,"prompt":")" + std::string(30'000'000, 'a') + "\"}";
  const std::vector<std::pair<std::string, std::string>> worst = {
      {"/v1/chat/completions", objects},
      {"/v1/chat/completions", messages},
      {"/v1/completions", as},
      {"/v1/chat/completions", objects},
      {"/v1/chat/completions", messages}};
  std::vector<std::thread> senders;
  std::vector<int> statuses(worst.size(), 0);
  for (size_t i = 0; i < worst.size(); ++i) {
    senders.emplace_back([&, i] {
      statuses[i] = raw_exchange(server.port(), post(worst[i].first, worst[i].second)).status;
    });
  }
  std::this_thread::sleep_for(300ms);  // the bodies are in and being worked on
  const std::string small = R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":2})";
  double worst_health = 0, worst_chat = 0;
  for (int i = 0; i < 5; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(http(server.port(), "GET", "/health").status, 200);
    worst_health = std::max(worst_health, seconds_since(t0));
    t0 = std::chrono::steady_clock::now();
    HttpReply chat = http(server.port(), "POST", "/v1/chat/completions", small);
    EXPECT_EQ(chat.status, 200) << chat.body;
    worst_chat = std::max(worst_chat, seconds_since(t0));
  }
  EXPECT_LT(worst_health, 2.0);
  EXPECT_LT(worst_chat, 2.0);
  for (auto& t : senders) t.join();
  EXPECT_EQ(statuses[0], 200);  // the ignored field is ignored
  EXPECT_EQ(statuses[1], 400);  // 100k messages are far over 4096 tokens
  EXPECT_EQ(statuses[2], 400);  // and so are 30 MB of text
}

// The CPU forward's threads leave a core each to the I/O thread, the small-body lane and the two
// bulk request threads: a forward thread that shares a core with a parser holds up every layer of
// the step. --threads still says exactly how many.
TEST(ServeThreads, TheForwardLeavesCoresToTheServersOwnThreads) {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  ServerLaunch own_threads;
  own_threads.one_thread = false;
  {
    ServerProcess server({}, "tiny", own_threads);
    EXPECT_NE(server.startup_log().find("cpu: " + std::to_string(std::max(1, cores - 4)) +
                                        " threads"),
              std::string::npos)
        << server.startup_log();
  }
  ServerProcess server({"--threads", "3"}, "tiny", own_threads);
  EXPECT_NE(server.startup_log().find("cpu: 3 threads"), std::string::npos) << server.startup_log();
}

TEST(ServeGauges, KvBlocksFromStartupAndRunningDuringALongPrefill) {
  ServerProcess server({"--max-model-len", "8192"});
  std::string first = http(server.port(), "GET", "/metrics").body;
  EXPECT_GT(metric_of(first, "kv_cache_blocks"), 0) << first;
  EXPECT_EQ(metric_of(first, "num_requests_running"), 0);
  // One prefill step of a few hundred tokens, then its one token: the request is running only
  // during that forward, which the gauges must show.
  json prompt = json::array();
  for (int i = 0; i < 400; ++i) prompt.push_back(100 + i);
  std::string body = json{{"prompt", prompt}, {"max_tokens", 1}, {"ignore_eos", true}}.dump();
  std::atomic<bool> done{false};
  int status = 0;
  std::thread client([&] {
    status = http(server.port(), "POST", "/v1/completions", body).status;
    done = true;
  });
  double running = 0, kv = 0;
  while (!done) {
    std::string m = http(server.port(), "GET", "/metrics").body;
    running = std::max(running, metric_of(m, "num_requests_running"));
    kv = std::max(kv, metric_of(m, "kv_cache_usage_perc"));
    std::this_thread::sleep_for(10ms);
  }
  client.join();
  EXPECT_EQ(status, 200);
  EXPECT_EQ(running, 1);
  EXPECT_GT(kv, 0);
}

}  // namespace
}  // namespace paceline::testing
