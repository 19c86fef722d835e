// `serve --device null --pace-profile P`: the null executor held to the step times of a
// simulator profile, against the real binary. Its KV cache and host tier are sized from the
// profile as `paceline sim` sizes them (no memory is taken, so a host tier larger than this
// machine's memory is fine), every step lasts at least the profile's prediction, and only the
// null device can be paced.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "server_process.h"

namespace paceline::testing {
namespace {

namespace fs = std::filesystem;

TEST(ServePacedNull, SizesTheKvCacheAndHostTierAsTheSimulatorDoes) {
  // The H200 roofline with Qwen3-8B: 50,565 GPU blocks; 64 GiB of host tier: 29,127 bf16 blocks
  // (docs/kv-tiers.md gives the same figures for paceline sim).
  ServerProcess server({"--device", "null", "--pace-profile", "h200", "--kv-offloading-size", "64",
                        "--max-model-len", "32768"},
                       "qwen3-8b");
  EXPECT_NE(server.startup_log().find("50565 KV blocks of 16 tokens, 29127 host blocks"),
            std::string::npos)
      << server.startup_log();
}

TEST(ServePacedNull, EachStepLastsAtLeastTheProfilesPrediction) {
  const fs::path dir = fs::temp_directory_path() / ("paceline-paced-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  // A measured profile of the tiny model in which every step costs 40 ms, whatever it computes.
  nlohmann::json points = nlohmann::json::array();
  for (const char* kind : {"prefill", "decode"}) {
    points.push_back({{"kind", kind}, {"batch", 1}, {"tokens", 1}, {"context", 1},
                      {"attention", 1}, {"logit_rows", 1}, {"time_us", 40000}});
  }
  std::ofstream(dir / "profile.json")
      << nlohmann::json{{"type", "measured"},    {"device", "null"},
                        {"model", "qwen3-tiny"}, {"kv_cache_bytes", 64 << 20},
                        {"kv_element_bytes", 4}, {"block_size", 16},
                        {"points", points}}
             .dump();
  {
    ServerProcess server({"--device", "null", "--pace-profile", (dir / "profile.json").string(),
                          "--step-log", (dir / "steps.jsonl").string()});
    const std::string body =
        R"({"prompt": [11, 12, 13, 14, 15], "max_tokens": 4, "ignore_eos": true})";
    HttpReply reply = http(server.port(), "POST", "/v1/completions", body);
    ASSERT_EQ(reply.status, 200) << reply.body;
    EXPECT_EQ(server.terminate(), 0);
  }
  int steps = 0;
  std::ifstream log(dir / "steps.jsonl");
  for (std::string line; std::getline(log, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (!j.contains("step")) continue;
    ++steps;
    EXPECT_GE(j["execute_us"].get<double>(), 40000.0) << line;  // never sooner than predicted
  }
  EXPECT_EQ(steps, 4);  // the prefill (first token), then three decodes
  fs::remove_all(dir);
}

TEST(ServePacedNull, OnlyTheNullDeviceIsPaced) {
  auto [status, out] = run_paceline("serve --model tiny --device cpu --pace-profile h200 --port 0");
  EXPECT_NE(status, 0);
  EXPECT_NE(out.find("--pace-profile paces the null executor: pass --device null"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace paceline::testing
