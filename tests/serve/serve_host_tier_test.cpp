// The host KV tier through the real server: a prompt pushed out of a small KV cache by another
// comes back from host memory, counted in cached_tokens, and answers exactly as the first time.
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "metrics_text.h"
#include "server_process.h"

namespace paceline {
namespace {

using nlohmann::json;
using testing::http;
using testing::HttpReply;
using testing::PromLabels;
using testing::scrape_metric;
using testing::ServerLaunch;
using testing::ServerProcess;

// 200 token ids from `first`: 12 full blocks of 16 and 8 tokens.
std::string completion_body(int first) {
  json ids = json::array();
  for (int i = 0; i < 200; ++i) ids.push_back(first + i);
  return json{{"prompt", ids}, {"max_tokens", 4}, {"temperature", 0}}.dump();
}

double metric(int port, const std::string& name, const PromLabels& labels = {}) {
  return scrape_metric(port, name, labels);
}

struct Answer {
  int cached_tokens = -1;
  std::string text;
};

Answer complete(int port, int first) {
  HttpReply r = http(port, "POST", "/v1/completions", completion_body(first));
  EXPECT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  return {j["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(),
          j["choices"][0]["text"].get<std::string>()};
}

// 20 blocks of 16 tokens (qwen3-tiny: 32 KiB a block): A (13 blocks) and then B (13) cannot
// both stay.
std::vector<std::string> args(const char* offloading_gib) {
  return {"--kv-cache-memory", "640K", "--kv-offloading-size", offloading_gib,
          "--kv-policy",       "lru"};
}

TEST(ServeHostTier, APrefixPushedOutOfTheKvCacheComesBackFromHostMemory) {
  ServerProcess server(args("0.001"));  // 1 MiB: 32 host blocks
  const Answer first = complete(server.port(), 1000);
  complete(server.port(), 5000);  // B pushes A's blocks out
  const Answer again = complete(server.port(), 1000);
  EXPECT_EQ(first.cached_tokens, 0);
  EXPECT_EQ(again.cached_tokens, 192);  // all 12 full blocks: part GPU, part host
  EXPECT_EQ(again.text, first.text);    // the loaded KV is the KV that was computed
  EXPECT_EQ(metric(server.port(), "kv_host_cache_blocks"), 32);
  EXPECT_GT(metric(server.port(), "prefix_cache_host_hits_total"), 0);
  EXPECT_GT(metric(server.port(), "kv_offload_blocks_total", {{"direction", "store"}}), 0);
  EXPECT_GT(metric(server.port(), "kv_offload_blocks_total", {{"direction", "load"}}), 0);
  EXPECT_GT(metric(server.port(), "kv_host_cache_usage_perc"), 0);
}

// Every load from the host tier fails (the failpoint): the part of the prefix that was to come
// back is recomputed, the answer is the same, the failures are counted, and nothing is held
// once the requests are done.
TEST(ServeHostTier, LoadsThatFailAreRecomputedAndCounted) {
  ServerLaunch launch;
  launch.env = {{"PACELINE_FAILPOINT_KV_LOAD", "1"}};
  ServerProcess server(args("0.001"), "tiny", launch);
  EXPECT_NE(server.startup_log().find("fault injection is on"), std::string::npos)
      << server.startup_log();
  const Answer first = complete(server.port(), 1000);
  complete(server.port(), 5000);
  const Answer again = complete(server.port(), 1000);
  EXPECT_EQ(again.text, first.text);    // computed again, from the tokens
  EXPECT_LT(again.cached_tokens, 192);  // only what the GPU still held
  EXPECT_GT(metric(server.port(), "kv_load_failures_total"), 0);
  EXPECT_EQ(metric(server.port(), "kv_offload_blocks_total", {{"direction", "load"}}), 0);
  EXPECT_EQ(metric(server.port(), "prefix_cache_host_hits_total"), 0);
  EXPECT_EQ(metric(server.port(), "num_requests_running"), 0);
  EXPECT_EQ(metric(server.port(), "kv_cache_usage_perc"), 0);  // no KV block leaked
  // A fourth turn still finds the prefix the third one computed again, on the GPU.
  EXPECT_EQ(complete(server.port(), 1000).text, first.text);
}

TEST(ServeHostTier, ABadFailpointValueIsRefusedAtStartup) {
  ServerLaunch launch;
  launch.env = {{"PACELINE_FAILPOINT_KV_LOAD", "0"}};
  try {
    ServerProcess server(args("0.001"), "tiny", launch);
    FAIL() << "the server started";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("PACELINE_FAILPOINT_KV_LOAD=0"), std::string::npos)
        << e.what();
  }
}

TEST(ServeHostTier, WithoutTheTierThePushedOutPartIsRecomputed) {
  ServerProcess server(args("0"));
  const Answer first = complete(server.port(), 1000);
  complete(server.port(), 5000);
  const Answer again = complete(server.port(), 1000);
  EXPECT_LT(again.cached_tokens, 192);
  EXPECT_EQ(again.text, first.text);
}

}  // namespace
}  // namespace paceline
