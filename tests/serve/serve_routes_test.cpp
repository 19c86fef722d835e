// The routes and headers beyond the completions: /tokenize, /detokenize, /v1/models/{id},
// /reset_prefix_cache, X-Request-Id, and stream_options.continuous_usage_stats, spoken to over
// HTTP on the real `paceline serve --model tiny` (Qwen3's tokenizer and chat template).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <vector>

#include "server_process.h"

namespace paceline::testing {
namespace {

using nlohmann::json;

const std::map<std::string, std::string> kJson = {{"Content-Type", "application/json"}};

json post_json(int port, const std::string& path, const json& body, int expect_status = 200) {
  HttpReply r = http(port, "POST", path, body.dump());
  EXPECT_EQ(r.status, expect_status) << path << ": " << r.body;
  json j = json::parse(r.body, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << path << ": " << r.body;
  return j;
}

json chat_messages(const std::string& content) {
  return json::array({{{"role", "user"}, {"content", content}}});
}

class ServeRoutes : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess({"--max-num-seqs", "4", "--max-model-len", "2048"});
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static int port() { return server_->port(); }
  static ServerProcess* server_;
};
ServerProcess* ServeRoutes::server_ = nullptr;

TEST_F(ServeRoutes, TokenizeAPromptAnswersVllmShape) {
  json j = post_json(port(), "/tokenize", {{"prompt", "Hello world"}, {"return_token_strs", true}});
  EXPECT_EQ(j["count"], 2);
  EXPECT_EQ(j["max_model_len"], 2048);
  EXPECT_EQ(j["tokens"], json::array({9707, 1879}));
  EXPECT_EQ(j["token_strs"], json::array({"Hello", "Ġworld"}));
  // Without return_token_strs the field is null, as vLLM answers.
  json plain = post_json(port(), "/tokenize", {{"prompt", "Hello world"}});
  EXPECT_TRUE(plain["token_strs"].is_null());
  EXPECT_EQ(plain["tokens"], j["tokens"]);
}

TEST_F(ServeRoutes, TokenizeCountsWhatCompletionsCount) {
  const std::string text = "The quick brown fox jumps over the lazy dog, twice.";
  json t = post_json(port(), "/tokenize", {{"prompt", text}});
  json c = post_json(port(), "/v1/completions", {{"prompt", text}, {"max_tokens", 1}});
  EXPECT_EQ(t["count"], c["usage"]["prompt_tokens"]);
}

TEST_F(ServeRoutes, TokenizeMessagesRendersTheChatTemplate) {
  json messages = chat_messages("What is two plus two?");
  json t = post_json(port(), "/tokenize", {{"messages", messages}});
  json c = post_json(port(), "/v1/chat/completions",
                     {{"messages", messages}, {"max_tokens", 1}, {"temperature", 0}});
  EXPECT_EQ(t["count"], c["usage"]["prompt_tokens"]);
  // Without the generation prompt the "<|im_start|>assistant\n" tail is left out.
  json bare =
      post_json(port(), "/tokenize", {{"messages", messages}, {"add_generation_prompt", false}});
  EXPECT_LT(bare["count"].get<int>(), t["count"].get<int>());
  json text = post_json(port(), "/detokenize", {{"tokens", t["tokens"]}});
  EXPECT_NE(text["prompt"].get<std::string>().find("<|im_start|>user\nWhat is two plus two?"),
            std::string::npos)
      << text;
}

TEST_F(ServeRoutes, TokenizeRefusesWhatItCannotHonour) {
  json both =
      post_json(port(), "/tokenize", {{"prompt", "x"}, {"messages", chat_messages("y")}}, 400);
  EXPECT_EQ(both["error"]["param"], "prompt");
  json neither = post_json(port(), "/tokenize", json::object(), 400);
  EXPECT_EQ(neither["error"]["param"], "prompt");
  json cont = post_json(port(), "/tokenize",
                        {{"messages", chat_messages("y")}, {"continue_final_message", true}}, 400);
  EXPECT_EQ(cont["error"]["param"], "continue_final_message");
  json model = post_json(port(), "/tokenize", {{"prompt", "x"}, {"model", "gpt-9"}}, 404);
  EXPECT_EQ(model["error"]["code"], "model_not_found");
}

TEST_F(ServeRoutes, DetokenizeInvertsTokenize) {
  const std::string text = "Grüße, 世界! <|im_end|> tail";
  json t = post_json(port(), "/tokenize", {{"prompt", text}});
  json d = post_json(port(), "/detokenize", {{"tokens", t["tokens"]}});
  EXPECT_EQ(d["prompt"], text);
  json bad = post_json(port(), "/detokenize", {{"tokens", {1, 999999}}}, 400);
  EXPECT_EQ(bad["error"]["param"], "tokens[1]");
  json not_int = post_json(port(), "/detokenize", {{"tokens", {"a"}}}, 400);
  EXPECT_EQ(not_int["error"]["param"], "tokens[0]");
}

TEST_F(ServeRoutes, ModelById) {
  HttpReply r = http(port(), "GET", "/v1/models/qwen3-tiny");
  ASSERT_EQ(r.status, 200) << r.body;
  json card = json::parse(r.body);
  EXPECT_EQ(card["id"], "qwen3-tiny");
  EXPECT_EQ(card["object"], "model");
  EXPECT_EQ(card["max_model_len"], 2048);
  HttpReply unknown = http(port(), "GET", "/v1/models/gpt-9");
  ASSERT_EQ(unknown.status, 404) << unknown.body;
  json err = json::parse(unknown.body);
  EXPECT_EQ(err["error"]["type"], "not_found_error");
  EXPECT_EQ(err["error"]["code"], "model_not_found");
  EXPECT_NE(err["error"]["message"].get<std::string>().find("gpt-9"), std::string::npos);
  EXPECT_EQ(http(port(), "POST", "/v1/models/qwen3-tiny").status, 405);
}

int cached_tokens(int port, const json& prompt) {
  json c = post_json(port, "/v1/completions", {{"prompt", prompt}, {"max_tokens", 1}});
  return c["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>();
}

TEST_F(ServeRoutes, ResetPrefixCacheForgetsCachedPrefixes) {
  json prompt = json::array();
  for (int i = 0; i < 80; ++i) prompt.push_back(3000 + i);
  cached_tokens(port(), prompt);
  ASSERT_GT(cached_tokens(port(), prompt), 0) << "the repeated prompt should hit the cache";
  HttpReply reset = http(port(), "POST", "/reset_prefix_cache", "", {});
  ASSERT_EQ(reset.status, 200) << reset.body;
  EXPECT_GT(json::parse(reset.body)["dropped_blocks"].get<int>(), 0);
  EXPECT_EQ(cached_tokens(port(), prompt), 0);
  EXPECT_GT(cached_tokens(port(), prompt), 0) << "caching goes on after the reset";
  EXPECT_EQ(http(port(), "GET", "/reset_prefix_cache").status, 405);
}

TEST_F(ServeRoutes, RequestIdIsEchoedOrGenerated) {
  HttpReply sent = http(port(), "GET", "/health", "", {{"X-Request-Id", "client-id-42"}});
  EXPECT_EQ(sent.headers["x-request-id"], "client-id-42");
  HttpReply a = http(port(), "GET", "/health");
  HttpReply b = http(port(), "GET", "/health");
  EXPECT_EQ(a.headers["x-request-id"].size(), 32u) << a.headers["x-request-id"];
  EXPECT_NE(a.headers["x-request-id"], b.headers["x-request-id"]);
  // Errors, streams and the transport's own answers carry it too.
  EXPECT_EQ(http(port(), "GET", "/nope", "", {{"X-Request-Id", "r1"}}).headers["x-request-id"],
            "r1");
  HttpReply bad = http(port(), "POST", "/v1/completions", "{", {{"X-Request-Id", "r2"}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.headers["x-request-id"], "r2");
  json stream = {{"prompt", "Hi"}, {"max_tokens", 2}, {"stream", true}};
  HttpReply s = http(port(), "POST", "/v1/completions", stream.dump(),
                     {{"Content-Type", "application/json"}, {"X-Request-Id", "r3"}});
  EXPECT_EQ(s.headers["x-request-id"], "r3");
  HttpReply framing = http(port(), "POST", "/v1/completions", "",
                           {{"Transfer-Encoding", "gzip"}, {"X-Request-Id", "r4"}});
  EXPECT_EQ(framing.status, 400);
  EXPECT_EQ(framing.headers["x-request-id"], "r4");
}

std::vector<json> stream_chunks(int port, json body) {
  HttpReply r = http(port, "POST", "/v1/chat/completions", body.dump());
  EXPECT_EQ(r.status, 200) << r.body;
  std::vector<json> out;
  for (const std::string& e : sse_payloads(r.body)) {
    if (e != "[DONE]") out.push_back(json::parse(e));
  }
  return out;
}

TEST_F(ServeRoutes, ContinuousUsageStatsPutsUsageOnEveryChunk) {
  json body = {{"messages", chat_messages("Count to five")},
               {"max_tokens", 6},
               {"temperature", 0},
               {"ignore_eos", true},
               {"stream", true},
               {"stream_options", {{"include_usage", true}, {"continuous_usage_stats", true}}}};
  std::vector<json> chunks = stream_chunks(port(), body);
  ASSERT_GE(chunks.size(), 3u);
  int64_t last = 0;
  for (const json& c : chunks) {
    ASSERT_TRUE(c.contains("usage")) << c;
    const int64_t done = c["usage"]["completion_tokens"].get<int64_t>();
    EXPECT_GE(done, last) << c;
    EXPECT_EQ(c["usage"]["total_tokens"], c["usage"]["prompt_tokens"].get<int64_t>() + done);
    last = done;
  }
  EXPECT_EQ(last, 6);
  EXPECT_TRUE(chunks.back()["choices"].empty()) << "the final usage chunk still ends the stream";
  // Without it only that final chunk has usage.
  body["stream_options"] = {{"include_usage", true}};
  std::vector<json> plain = stream_chunks(port(), body);
  for (size_t i = 0; i + 1 < plain.size(); ++i)
    EXPECT_FALSE(plain[i].contains("usage")) << plain[i];
}

// Llama-3's tokenizer.json puts <|begin_of_text|> before a sequence (its post_processor):
// add_special_tokens adds it for a prompt (vLLM's default there) and not for messages (the
// template writes it). With --api-key, the new routes need the key like the completions do.
TEST(ServeRoutesLlama, AddSpecialTokensAndApiKey) {
  ServerProcess server({"--device", "null", "--api-key", "k"}, "llama-3.2-1b");
  const std::map<std::string, std::string> key = {{"Content-Type", "application/json"},
                                                  {"Authorization", "Bearer k"}};
  auto tokenize = [&](const json& body) {
    HttpReply r = http(server.port(), "POST", "/tokenize", body.dump(), key);
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body)["tokens"];
  };
  EXPECT_EQ(tokenize({{"prompt", "Hello world"}}), json::array({128000, 9906, 1917}));
  EXPECT_EQ(tokenize({{"prompt", "Hello world"}, {"add_special_tokens", false}}),
            json::array({9906, 1917}));
  json chat = tokenize({{"messages", chat_messages("hi")}});
  ASSERT_FALSE(chat.empty());
  EXPECT_EQ(chat[0], 128000);
  EXPECT_NE(chat[1], 128000) << "one BOS, from the template";
  for (const char* path : {"/tokenize", "/detokenize", "/reset_prefix_cache"}) {
    EXPECT_EQ(http(server.port(), "POST", path, R"({"prompt":"x","tokens":[1]})").status, 401)
        << path;
  }
  EXPECT_EQ(http(server.port(), "GET", "/v1/models/llama-3.2-1b").status, 401);
  EXPECT_EQ(http(server.port(), "GET", "/v1/models/llama-3.2-1b", "", key).status, 200);
}

}  // namespace
}  // namespace paceline::testing
