// vLLM's metrics through the real server (`--metrics-prefix vllm`): every series exists, at zero
// and labelled with the served model's name, before the first request; the text passes
// promtool's rules (the prefix's colon aside); and after requests the histograms' counts and sums
// agree with what the client saw.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "metrics_text.h"
#include "server_process.h"

namespace paceline::testing {
namespace {

using nlohmann::json;

const PromLabels kModel = {{"model_name", "my-model"}};

// vLLM's request-level families (and the serving ones its dashboards plot).
const char* const kVllmFamilies[] = {
    "time_to_first_token_seconds",    "inter_token_latency_seconds",
    "time_per_output_token_seconds",  "request_time_per_output_token_seconds",
    "e2e_request_latency_seconds",    "request_queue_time_seconds",
    "request_prefill_time_seconds",   "request_decode_time_seconds",
    "request_inference_time_seconds", "request_prompt_tokens",
    "request_generation_tokens",      "request_params_max_tokens",
    "request_success_total",          "prompt_tokens_total",
    "generation_tokens_total",        "num_requests_running",
    "num_requests_waiting",           "kv_cache_usage_perc",
    "prefix_cache_queries_total",     "prefix_cache_hits_total",
    "num_preemptions_total"};

struct Scrape {
  PromText text;
  double value(const std::string& name, PromLabels labels = {}) const {
    labels.insert(kModel.begin(), kModel.end());
    return text.value("vllm:" + name, labels).value_or(-1);
  }
};

Scrape scrape(int port) {
  HttpReply r = http(port, "GET", "/metrics");
  EXPECT_EQ(r.status, 200);
  return {parse_prometheus(r.body)};
}

class ServeMetrics : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess(
        {"--metrics-prefix", "vllm", "--served-model-name", "my-model", "--max-model-len", "512"});
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static int port() { return server_->port(); }
  static ServerProcess* server_;
};
ServerProcess* ServeMetrics::server_ = nullptr;

// Runs first (gtest keeps the order of a file): nothing has been sent yet.
TEST_F(ServeMetrics, EverySeriesExistsAtZeroBeforeTheFirstRequest) {
  const Scrape s = scrape(port());
  EXPECT_EQ(s.text.problems, std::vector<std::string>{});
  for (const char* name : kVllmFamilies) {
    EXPECT_TRUE(s.text.families.contains(std::string("vllm:") + name)) << name;
  }
  for (const auto& [name, family] : s.text.families) {
    EXPECT_TRUE(name.starts_with("vllm:")) << name;
    if (family.type == "gauge") {
      EXPECT_FALSE(name.ends_with("_total")) << name;
    }
    for (const PromSample& sample : family.samples) {
      EXPECT_EQ(sample.labels.count("model_name"), 1u) << sample.name;
      EXPECT_EQ(sample.labels.at("model_name"), "my-model") << sample.name;
    }
  }
  EXPECT_EQ(s.value("time_to_first_token_seconds_count"), 0);
  EXPECT_EQ(s.value("e2e_request_latency_seconds_bucket", {{"le", "+Inf"}}), 0);
  EXPECT_EQ(s.value("request_success_total", {{"finished_reason", "length"}}), 0);
  EXPECT_EQ(s.value("step_time_seconds_count", {{"kind", "decode"}}), 0);
  EXPECT_GT(s.value("kv_cache_blocks"), 0);
}

TEST_F(ServeMetrics, HistogramsAgreeWithWhatTheClientSaw) {
  const Scrape before = scrape(port());
  struct Sent {
    int max_tokens;
    bool chat;
  };
  const std::vector<Sent> sent = {{3, false}, {6, true}, {1, false}, {4, true}};
  int64_t prompt_tokens = 0, completion_tokens = 0, gaps = 0;
  double client_seconds = 0;
  Scrape last = before;
  for (const Sent& r : sent) {
    json body = {{"max_tokens", r.max_tokens}, {"ignore_eos", true}, {"temperature", 0}};
    if (r.chat) {
      body["messages"] = json::array({{{"role", "user"}, {"content", "How are the metrics?"}}});
      body["stream"] = true;
      body["stream_options"] = {{"include_usage", true}};
    } else {
      body["prompt"] = "The metrics are";
    }
    const auto t0 = std::chrono::steady_clock::now();
    HttpReply reply =
        http(port(), "POST", r.chat ? "/v1/chat/completions" : "/v1/completions", body.dump());
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_EQ(reply.status, 200) << reply.body;
    json usage;
    if (r.chat) {
      std::vector<std::string> events = sse_payloads(reply.body);
      ASSERT_GE(events.size(), 2u);
      usage = json::parse(events[events.size() - 2])["usage"];
    } else {
      usage = json::parse(reply.body)["usage"];
    }
    const int completion = usage["completion_tokens"].get<int>();
    EXPECT_EQ(completion, r.max_tokens);
    prompt_tokens += usage["prompt_tokens"].get<int>();
    completion_tokens += completion;
    gaps += completion - 1;  // one token per decode step: a gap between each two
    client_seconds += wall;
    // The server's end-to-end time of this request lies inside the client's.
    const Scrape now = scrape(port());
    const double e2e = now.value("e2e_request_latency_seconds_sum") -
                       last.value("e2e_request_latency_seconds_sum");
    EXPECT_GT(e2e, 0);
    EXPECT_LE(e2e, wall);
    last = now;
  }
  const Scrape& after = last;
  auto delta = [&](const std::string& name, PromLabels labels = {}) {
    return after.value(name, labels) - before.value(name, labels);
  };
  const double n = static_cast<double>(sent.size());
  for (const char* h :
       {"time_to_first_token_seconds", "e2e_request_latency_seconds", "request_queue_time_seconds",
        "request_prefill_time_seconds", "request_decode_time_seconds",
        "request_inference_time_seconds", "request_prompt_tokens", "request_generation_tokens",
        "request_params_max_tokens"}) {
    EXPECT_EQ(delta(std::string(h) + "_count"), n) << h;
    EXPECT_EQ(delta(std::string(h) + "_bucket", {{"le", "+Inf"}}), n) << h;
  }
  EXPECT_EQ(delta("request_success_total", {{"finished_reason", "length"}}), n);
  EXPECT_EQ(delta("inter_token_latency_seconds_count"), static_cast<double>(gaps));
  EXPECT_EQ(delta("time_per_output_token_seconds_count"), static_cast<double>(gaps));
  EXPECT_EQ(delta("request_time_per_output_token_seconds_count"), 3);  // those with 2+ tokens
  EXPECT_EQ(delta("request_prompt_tokens_sum"), static_cast<double>(prompt_tokens));
  EXPECT_EQ(delta("request_generation_tokens_sum"), static_cast<double>(completion_tokens));
  EXPECT_EQ(delta("request_params_max_tokens_sum"), 14);
  EXPECT_EQ(delta("prompt_tokens_total"), static_cast<double>(prompt_tokens));
  EXPECT_EQ(delta("generation_tokens_total"), static_cast<double>(completion_tokens));
  // The phases add up, on the engine's one clock: TTFT = queued + prefill, e2e = queued +
  // inference (each request ended at its last token), inference = prefill + decode.
  const double ttft = delta("time_to_first_token_seconds_sum");
  const double queue = delta("request_queue_time_seconds_sum");
  const double prefill = delta("request_prefill_time_seconds_sum");
  const double decode = delta("request_decode_time_seconds_sum");
  const double inference = delta("request_inference_time_seconds_sum");
  const double e2e = delta("e2e_request_latency_seconds_sum");
  EXPECT_NEAR(ttft, queue + prefill, 1e-6);
  EXPECT_NEAR(e2e, queue + inference, 1e-6);
  EXPECT_NEAR(inference, prefill + decode, 1e-6);
  EXPECT_NEAR(delta("inter_token_latency_seconds_sum"), decode, 1e-6);
  EXPECT_GT(ttft, 0);
  EXPECT_GT(decode, 0);
  EXPECT_LE(e2e, client_seconds);
  EXPECT_EQ(after.text.problems, std::vector<std::string>{});
}

// Speculative decoding (synthetic acceptance, length 2: each verify row keeps one of its two
// drafts): every output token is the prefill's, a decode step's first, or an accepted draft.
TEST(ServeMetricsSpec, DraftCountersAddUpToTheTokensTheClientGot) {
  ServerProcess server({"--metrics-prefix", "vllm", "--served-model-name", "my-model",
                        "--speculative-tokens", "2", "--spec-decode-acceptance-length", "2"});
  const Scrape before = scrape(server.port());
  EXPECT_EQ(before.value("spec_decode_num_drafts_total"), 0);
  EXPECT_EQ(before.value("spec_decode_num_accepted_tokens_per_pos_total", {{"position", "1"}}), 0);
  const json body = {{"prompt", "Drafts"}, {"max_tokens", 9}, {"ignore_eos", true}};
  HttpReply reply = http(server.port(), "POST", "/v1/completions", body.dump());
  ASSERT_EQ(reply.status, 200) << reply.body;
  const int completion = json::parse(reply.body)["usage"]["completion_tokens"].get<int>();
  EXPECT_EQ(completion, 9);
  const Scrape s = scrape(server.port());
  EXPECT_EQ(s.text.problems, std::vector<std::string>{});
  const double drafts = s.value("spec_decode_num_drafts_total");
  const double accepted = s.value("spec_decode_num_accepted_tokens_total");
  const double decode_steps = s.value("inter_token_latency_seconds_count");
  EXPECT_GT(drafts, 0);
  EXPECT_EQ(accepted, drafts);  // one of two drafts each time
  EXPECT_EQ(1 + decode_steps + accepted, completion);
  EXPECT_EQ(s.value("spec_decode_num_accepted_tokens_per_pos_total", {{"position", "0"}}),
            accepted);
  EXPECT_EQ(s.value("spec_decode_num_accepted_tokens_per_pos_total", {{"position", "1"}}), 0);
  EXPECT_LE(s.value("spec_decode_num_draft_tokens_total"), 2 * drafts);
  EXPECT_EQ(s.value("generation_tokens_total"), completion);
}

TEST(ServeMetricsPrefix, ABadPrefixIsAnErrorNamingTheFlag) {
  const auto [status, output] = run_paceline("serve --model tiny --metrics-prefix my-server", 60);
  EXPECT_NE(status, 0) << output;
  EXPECT_NE(output.find("--metrics-prefix 'my-server'"), std::string::npos) << output;
}

}  // namespace
}  // namespace paceline::testing
