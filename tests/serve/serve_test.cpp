// `paceline serve --model tiny` started as a user would, spoken to over HTTP.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <utility>
#include <vector>

#include "metrics_text.h"
#include "server_process.h"

namespace paceline::testing {
namespace {

using nlohmann::json;

double metric(int port, const std::string& name) { return scrape_metric(port, name); }

std::string chat_body(const std::string& content, int max_tokens, bool stream) {
  json body = {{"model", "qwen3-tiny"},
               {"messages", json::array({{{"role", "user"}, {"content", content}}})},
               {"max_tokens", max_tokens},
               {"temperature", 0},
               {"stream", stream}};
  if (stream) body["stream_options"] = {{"include_usage", true}};
  return body.dump();
}

class Serve : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess({"--max-body", "64K", "--max-num-seqs", "8", "--max-model-len",
                                 "2048"});
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static int port() { return server_->port(); }
  static ServerProcess* server_;
};
ServerProcess* Serve::server_ = nullptr;

TEST_F(Serve, NonStreamingChatAnswersWithUsage) {
  HttpReply r = http(port(), "POST", "/v1/chat/completions", chat_body("Hello there", 6, false));
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["model"], "qwen3-tiny");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_TRUE(j["choices"][0]["message"]["content"].is_string());
  EXPECT_EQ(j["usage"]["completion_tokens"], 6);
  EXPECT_EQ(j["usage"]["total_tokens"],
            j["usage"]["prompt_tokens"].get<int>() + j["usage"]["completion_tokens"].get<int>());
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
}

TEST_F(Serve, StreamingChatSendsRoleDeltasFinishUsageAndDone) {
  HttpReply r = http(port(), "POST", "/v1/chat/completions", chat_body("Stream please", 5, true));
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(r.headers["content-type"].find("text/event-stream"), std::string::npos);
  std::vector<std::string> events = sse_payloads(r.body);
  ASSERT_GE(events.size(), 4u) << r.body;
  EXPECT_EQ(events.back(), "[DONE]");
  json first = json::parse(events.front());
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  json usage = json::parse(events[events.size() - 2]);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 5);
  json fin = json::parse(events[events.size() - 3]);
  EXPECT_EQ(fin["choices"][0]["finish_reason"], "length");
  // Streamed text equals the non-streaming answer to the same greedy request.
  std::string streamed;
  for (size_t i = 1; i + 3 < events.size() + 1 && i < events.size() - 2; ++i) {
    json e = json::parse(events[i]);
    if (!e["choices"].empty() && e["choices"][0]["delta"].contains("content")) {
      streamed += e["choices"][0]["delta"]["content"].get<std::string>();
    }
  }
  HttpReply once = http(port(), "POST", "/v1/chat/completions", chat_body("Stream please", 5, false));
  EXPECT_EQ(streamed, json::parse(once.body)["choices"][0]["message"]["content"].get<std::string>());
}

TEST_F(Serve, RepeatedPromptReportsCachedTokens) {
  std::string long_text;
  for (int i = 0; i < 60; ++i) long_text += "word" + std::to_string(i) + " ";
  HttpReply a = http(port(), "POST", "/v1/chat/completions", chat_body(long_text, 2, false));
  HttpReply b = http(port(), "POST", "/v1/chat/completions", chat_body(long_text, 2, false));
  ASSERT_EQ(b.status, 200) << b.body;
  EXPECT_EQ(json::parse(a.body)["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  EXPECT_GT(json::parse(b.body)["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 0);
}

TEST_F(Serve, CompletionsTakeTextAndTokenIds) {
  HttpReply a = http(port(), "POST", "/v1/completions",
                     R"({"prompt":"def main():","max_tokens":3,"temperature":0})");
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(json::parse(a.body)["object"], "text_completion");
  HttpReply b = http(port(), "POST", "/v1/completions",
                     R"({"prompt":[1,2,3,4,5],"max_tokens":2,"ignore_eos":true})");
  ASSERT_EQ(b.status, 200) << b.body;
  EXPECT_EQ(json::parse(b.body)["usage"]["prompt_tokens"], 5);
}

TEST_F(Serve, ModelsHealthVersionMetrics) {
  EXPECT_EQ(http(port(), "GET", "/health").status, 200);
  HttpReply m = http(port(), "GET", "/v1/models");
  EXPECT_EQ(json::parse(m.body)["data"][0]["id"], "qwen3-tiny");
  EXPECT_TRUE(json::parse(http(port(), "GET", "/version").body).contains("version"));
  HttpReply metrics = http(port(), "GET", "/metrics");
  EXPECT_NE(metrics.body.find("paceline:num_requests_running"), std::string::npos);
  EXPECT_NE(metrics.body.find("paceline:kv_cache_usage_perc"), std::string::npos);
}

void expect_error(const HttpReply& r, int status, const std::string& what) {
  EXPECT_EQ(r.status, status) << what << ": " << r.body;
  if (r.status == status) {
    json j = json::parse(r.body, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << what << ": " << r.body;
    EXPECT_TRUE(j["error"]["message"].is_string()) << what;
    EXPECT_TRUE(j["error"].contains("type")) << what;
    EXPECT_TRUE(j["error"].contains("param")) << what;
    EXPECT_TRUE(j["error"].contains("code")) << what;
  }
}

TEST_F(Serve, ErrorsHaveOpenAiShapeAndStatus) {
  const std::string path = "/v1/chat/completions";
  expect_error(http(port(), "GET", "/nope"), 404, "unknown route");
  expect_error(http(port(), "POST", path,
                    R"({"model":"gpt-9","messages":[{"role":"user","content":"x"}]})"),
               404, "unknown model");
  expect_error(http(port(), "POST", path, std::string(70000, 'x')), 413, "body over the limit");
  std::string big(3000, 'a');
  for (size_t i = 0; i < big.size(); i += 2) big[i] = ' ';
  HttpReply ctx = http(port(), "POST", path, chat_body(big, 2000, false));
  expect_error(ctx, 400, "context length");
  EXPECT_NE(ctx.body.find("maximum context length"), std::string::npos) << ctx.body;
}

TEST_F(Serve, MalformedRequestsGetTheRightStatusAndTheServerStaysUp) {
  const std::string chat = "/v1/chat/completions";
  const std::string msgs = R"("messages":[{"role":"user","content":"hi"}])";
  struct Case {
    std::string path, body;
    int status;
  };
  std::vector<Case> cases = {
      {chat, "{", 400},
      {chat, "not json", 400},
      {chat, "[]", 400},
      {chat, "{}", 400},
      {chat, R"({"messages":"hi"})", 400},
      {chat, R"({"messages":[]})", 400},
      {chat, R"({"messages":[{"role":"wizard","content":"hi"}]})", 400},
      {chat, R"({"messages":[{"content":"hi"}]})", 400},
      {chat, "{" + msgs + R"(,"max_tokens":-1})", 400},
      {chat, "{" + msgs + R"(,"max_tokens":0})", 400},
      {chat, "{" + msgs + R"(,"max_tokens":"ten"})", 400},
      {chat, "{" + msgs + R"(,"max_tokens":1e30})", 400},
      {chat, "{" + msgs + R"(,"temperature":3})", 400},
      {chat, "{" + msgs + R"(,"temperature":"hot"})", 400},
      {chat, "{" + msgs + R"(,"top_p":0})", 400},
      {chat, "{" + msgs + R"(,"top_k":-5})", 400},
      {chat, "{" + msgs + R"(,"n":129})", 400},
      {chat, "{" + msgs + R"(,"stop":5})", 400},
      {chat, "{" + msgs + R"(,"stream":"yes"})", 400},
      {chat, "{" + msgs + R"(,"min_tokens":9,"max_tokens":3})", 400},
      {chat, "{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}", 400},
      {chat, "{" + msgs, 400},
      {"/v1/completions", R"({"prompt":{"a":1}})", 400},
      {"/v1/completions", R"({"prompt":[1,2,99999999999]})", 400},
      {"/v1/completions", R"({"prompt":[1,2,999999]})", 400},
      {"/v1/completions", R"({"prompt":"x","max_tokens":-3})", 400},
  };
  for (const auto& c : cases) expect_error(http(port(), "POST", c.path, c.body), c.status, c.body);
  // Wrong content type.
  expect_error(http(port(), "POST", chat, "{" + msgs + "}", {{"Content-Type", "text/plain"}}), 400,
               "content type");
  // A truncated body: Content-Length promises more than arrives, then the client half-closes.
  HttpReply trunc = raw_exchange(port(), "POST " + chat +
                                             " HTTP/1.1\r\nHost: x\r\nContent-Type: "
                                             "application/json\r\nContent-Length: 100\r\n\r\n{\"mess",
                                 /*half_close=*/true);
  EXPECT_NE(trunc.status, 200);
  // A malformed request line.
  EXPECT_EQ(raw_exchange(port(), "HELLO\r\n\r\n").status, 400);
  // Still serving.
  EXPECT_EQ(http(port(), "GET", "/health").status, 200);
  EXPECT_EQ(http(port(), "POST", chat, chat_body("still there?", 2, false)).status, 200);
}

TEST_F(Serve, ClientDisconnectMidStreamFreesTheRequestAndItsKv) {
  json body = json::parse(chat_body("a long answer please", 100000 > 1000 ? 1500 : 1, true));
  body["ignore_eos"] = true;
  std::string payload = body.dump();
  int fd = connect_to(port());
  ASSERT_GE(fd, 0);
  send_all(fd, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               "Content-Length: " + std::to_string(payload.size()) + "\r\n\r\n" + payload);
  char buf[4096];
  ASSERT_GT(::recv(fd, buf, sizeof(buf), 0), 0);  // the stream has started
  EXPECT_GE(metric(port(), "num_requests_running"), 1);
  ::close(fd);
  bool idle = false;
  for (int i = 0; i < 200 && !idle; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    idle = metric(port(), "num_requests_running") == 0 && metric(port(), "kv_cache_usage_perc") == 0;
  }
  EXPECT_TRUE(idle) << "running " << metric(port(), "num_requests_running") << " kv "
                    << metric(port(), "kv_cache_usage_perc");
}

TEST(ServeAuth, WrongApiKeyIs401AndRightKeyServes) {
  ServerProcess server({"--api-key", "sekret"});
  std::string body = chat_body("hi", 1, false);
  expect_error(http(server.port(), "POST", "/v1/chat/completions", body), 401, "no key");
  expect_error(http(server.port(), "POST", "/v1/chat/completions", body,
                    {{"Content-Type", "application/json"}, {"Authorization", "Bearer nope"}}),
               401, "wrong key");
  EXPECT_EQ(http(server.port(), "POST", "/v1/chat/completions", body,
                 {{"Content-Type", "application/json"}, {"Authorization", "Bearer sekret"}})
                .status,
            200);
}

TEST(ServeQueue, FullQueueIs503WithRetryAfter) {
  ServerProcess server({"--max-num-seqs", "1", "--max-waiting", "0"});
  json body = json::parse(chat_body("keep going", 3000, true));
  body["ignore_eos"] = true;
  std::string payload = body.dump();
  int fd = connect_to(server.port());
  send_all(fd, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               "Content-Length: " + std::to_string(payload.size()) + "\r\n\r\n" + payload);
  char buf[4096];
  ASSERT_GT(::recv(fd, buf, sizeof(buf), 0), 0);
  HttpReply r = http(server.port(), "POST", "/v1/chat/completions", chat_body("me too", 1, false));
  expect_error(r, 503, "queue full");
  EXPECT_FALSE(r.headers["retry-after"].empty());
  ::close(fd);
}

TEST(ServeDelayer, AnIntervalAloneTurnsTheDelayerOnAndLogsItsLine) {
  ServerProcess server({"--prefill-decode-interval", "4"});
  EXPECT_NE(server.startup_log().find("PrefillDelayer initialized"), std::string::npos)
      << server.startup_log();
  ServerProcess off({"--prefill-decode-interval", "4", "--no-prefill-delayer"});
  EXPECT_EQ(off.startup_log().find("PrefillDelayer initialized"), std::string::npos);
}

TEST(ServeStepLog, EveryStepIsLoggedAndAProfileFitsToThem) {
  const std::string dir = ::testing::TempDir();
  const std::string log = dir + "paceline-serve-steps.jsonl";
  const std::string profile = dir + "paceline-serve-steps-profile.json";
  {
    ServerProcess server({"--step-log", log});
    for (int i = 0; i < 3; ++i) {
      json body = json::parse(chat_body("count to " + std::to_string(i), 6, false));
      body["ignore_eos"] = true;  // six tokens each, whatever the tiny model says
      HttpReply r = http(server.port(), "POST", "/v1/chat/completions", body.dump());
      ASSERT_EQ(r.status, 200) << r.body;
    }
    ASSERT_EQ(server.terminate(), 0);
  }
  std::ifstream in(log);
  std::vector<json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
  ASSERT_GE(lines.size(), 4u);
  EXPECT_EQ(lines[0]["header"]["device"], "cpu");
  EXPECT_EQ(lines[0]["header"]["model"], "qwen3-tiny");
  int prefills = 0, decodes = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    prefills += lines[i]["kind"] == "prefill";
    decodes += lines[i]["kind"] == "decode";
    EXPECT_GT(lines[i]["execute_us"].get<double>(), 0.0);
  }
  EXPECT_EQ(prefills, 3);      // one per request
  EXPECT_EQ(decodes, 3 * 5);   // 6 tokens each: the first from the prefill

  auto [status, out] =
      run_paceline("profile --model tiny --from-step-log " + log + " --out " + profile);
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("18 points"), std::string::npos) << out;
  std::ifstream p(profile);
  const json j = json::parse(p);
  EXPECT_EQ(j["type"], "measured");
  EXPECT_EQ(j["points"].size(), 18u);
  // The steps keep their start times: their scatter around the fit is replayed in simulation.
  EXPECT_EQ(j["time_ordered"], true);
  EXPECT_NE(out.find("step time over the fit"), std::string::npos) << out;
  const std::string trace = PACELINE_SOURCE_DIR "/../shared/traces/agentx/trace_0002.json";
  const std::string sim_dir = log + ".sim";
  auto [sim_status, sim_out] =
      run_paceline("sim --model tiny --profile " + profile + " --traces " + trace +
                   " --isl-scale 0.01 --osl-scale 0.1 --duration 20 --out " + sim_dir);
  EXPECT_EQ(sim_status, 0) << sim_out;
  std::ifstream s(sim_dir + "/summary.json");
  ASSERT_TRUE(s) << sim_out;
  const json summary = json::parse(s);
  EXPECT_EQ(summary["simulator"]["engine"]["step_noise"]["mode"], "replay") << summary.dump();
  auto [none_status, none_out] = run_paceline("sim --model tiny --profile h200 --step-noise replay "
                                              "--traces " + trace + " --out " + sim_dir);
  EXPECT_NE(none_status, 0);
  EXPECT_NE(none_out.find("--step-noise replay: --profile h200 has no steps"), std::string::npos)
      << none_out;
  std::filesystem::remove_all(sim_dir);

  auto [bad_status, bad_out] = run_paceline("serve --model tiny --step-log /nonexistent-dir/s.jsonl");
  EXPECT_NE(bad_status, 0);
  EXPECT_NE(bad_out.find("/nonexistent-dir/s.jsonl"), std::string::npos) << bad_out;
  std::remove(log.c_str());
  std::remove(profile.c_str());
}

TEST(ServeShutdown, SigtermDrainsAndExitsZero) {
  ServerProcess server({});
  std::thread client([&] {
    HttpReply r = http(server.port(), "POST", "/v1/chat/completions", chat_body("finish me", 20, false));
    EXPECT_EQ(r.status, 200) << r.body;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(server.terminate(), 0);
  client.join();
}

// Only the CUDA executor chooses its KV element type: the CPU and null executors keep float32
// KV, so asking them for FP8 is an error at startup, not a silently different run.
TEST(ServeStartup, KvCacheDtypeFp8IsRefusedOffTheGpu) {
  for (const char* device : {"cpu", "null"}) {
    auto [status, out] = run_paceline(std::string("serve --model tiny --device ") + device +
                                      " --kv-cache-dtype fp8 --port 0");
    EXPECT_NE(status, 0) << out;
    EXPECT_NE(out.find("--kv-cache-dtype fp8: only the CUDA executor"), std::string::npos) << out;
  }
  auto [status, out] = run_paceline("serve --model tiny --kv-cache-dtype fp9 --port 0");
  EXPECT_NE(status, 0) << out;
  EXPECT_NE(out.find("--kv-cache-dtype"), std::string::npos) << out;
}

// FP8 prefill attention needs FP8 tensor cores: asked for off the GPU, by the flag or by ATOM's
// environment variable (auto), it is an error at startup naming what asked; an explicit bf16
// wins over the variable; a bad value names the flag and the values it takes.
TEST(ServeStartup, PrefillAttentionDtypeFp8IsRefusedOffTheGpu) {
  constexpr const char* kRefused = "FP8 prefill attention runs only on the CUDA executor";
  for (const char* device : {"cpu", "null"}) {
    auto [status, out] = run_paceline(std::string("serve --model tiny --device ") + device +
                                      " --prefill-attention-dtype fp8 --port 0");
    EXPECT_NE(status, 0) << out;
    EXPECT_NE(out.find(std::string("--prefill-attention-dtype fp8: ") + kRefused),
              std::string::npos) << out;
  }
  auto [bad_status, bad_out] = run_paceline("serve --model tiny --prefill-attention-dtype fp4 --port 0");
  EXPECT_NE(bad_status, 0) << bad_out;
  EXPECT_NE(bad_out.find("--prefill-attention-dtype"), std::string::npos) << bad_out;
  EXPECT_NE(bad_out.find("{auto,bf16,fp8}"), std::string::npos) << bad_out;

  setenv("ATOM_USE_FLYDSL_FP8_PREFILL_ATTN", "1", 1);
  auto [env_status, env_out] = run_paceline("serve --model tiny --device cpu --port 0");
  EXPECT_NE(env_status, 0) << env_out;
  EXPECT_NE(env_out.find(std::string("ATOM_USE_FLYDSL_FP8_PREFILL_ATTN=1: ") + kRefused),
            std::string::npos) << env_out;
  EXPECT_NE(env_out.find("pass --prefill-attention-dtype bf16 to override"), std::string::npos)
      << env_out;
  auto [bf16_status, bf16_out] = run_paceline(
      "generate --model tiny --device cpu --prefill-attention-dtype bf16 --raw --prompt hi "
      "--max-tokens 1");
  EXPECT_EQ(bf16_status, 0) << bf16_out;
  EXPECT_NE(bf16_out.find("prefill attention: bf16 (--prefill-attention-dtype bf16)"),
            std::string::npos) << bf16_out;
  setenv("ATOM_USE_FLYDSL_FP8_PREFILL_ATTN", "yes", 1);
  auto [odd_status, odd_out] = run_paceline("generate --model tiny --device cpu --raw --prompt hi "
                                            "--max-tokens 1");
  EXPECT_NE(odd_status, 0) << odd_out;
  EXPECT_NE(odd_out.find("ATOM_USE_FLYDSL_FP8_PREFILL_ATTN=yes: expected 0 or 1"),
            std::string::npos) << odd_out;
  unsetenv("ATOM_USE_FLYDSL_FP8_PREFILL_ATTN");
}

// Every command that builds the CUDA executor takes the flag (and ATOM's variable) from the same
// place, cuda_executor_options: check built its own options and left it out, so it ran bf16
// under --prefill-attention-dtype fp8. The resolution is logged before the GPU is looked for, so
// this runs without one too; with one, the executor's own line says what it took.
TEST(ServeStartup, PrefillAttentionDtypeReachesTheCudaExecutorOfEveryCommand) {
  const std::string gpu_flags =
      " --device cuda --enforce-eager --kv-cache-memory 64M --prefill-attention-dtype fp8";
  for (const std::string& command :
       {"check --model tiny --skip-invariance" + gpu_flags,
        "generate --model tiny --raw --prompt hi --max-tokens 1" + gpu_flags}) {
    auto [status, out] = run_paceline(command);
    if (out.find("this build has no") != std::string::npos) continue;  // no CUDA executor
    EXPECT_NE(out.find("prefill attention: fp8 (--prefill-attention-dtype fp8)"),
              std::string::npos) << command << "\n" << out;
    EXPECT_EQ(out.find("cuda: prefill attention in bf16"), std::string::npos)
        << command << "\n" << out;
    if (status == 0) {
      EXPECT_NE(out.find("cuda: prefill attention in fp8"), std::string::npos)
          << command << "\n" << out;
    } else {  // no GPU here, or one without FP8 tensor cores
      EXPECT_TRUE(out.find("--device cuda: ") != std::string::npos ||
                  out.find("FP8 tensor cores need 8.9 or newer") != std::string::npos)
          << command << "\n" << out;
    }
  }
  setenv("ATOM_USE_FLYDSL_FP8_PREFILL_ATTN", "1", 1);
  auto [env_status, env_out] = run_paceline(
      "check --model tiny --skip-invariance --device cuda --enforce-eager --kv-cache-memory 64M");
  unsetenv("ATOM_USE_FLYDSL_FP8_PREFILL_ATTN");
  if (env_out.find("this build has no") == std::string::npos) {
    EXPECT_NE(env_out.find("prefill attention: fp8 (ATOM_USE_FLYDSL_FP8_PREFILL_ATTN=1)"),
              std::string::npos) << env_status << "\n" << env_out;
  }
}

}  // namespace
}  // namespace paceline::testing
