// logit_bias, min_p and the penalties through `paceline serve --model tiny` (CPU), as a client
// sends them. The tiny model's dummy weights give logits within a few units of 0, so a bias of
// +50 puts a token far ahead of every unbiased one, and what the penalties do to biased tokens
// shows in the order they come out, whatever the weights.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "../tokenizer/qwen3_tokenizer.h"
#include "server_process.h"

namespace paceline::testing {
namespace {

using nlohmann::json;

class ServeLogitsFields : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new ServerProcess({"--max-num-seqs", "4"}); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static int port() { return server_->port(); }
  static ServerProcess* server_;

  // A greedy completion of `tokens` tokens (EOS ignored) with `extra` fields; its text.
  static std::string complete(const std::string& prompt, json extra, int tokens = 6) {
    json body = {
        {"prompt", prompt}, {"max_tokens", tokens}, {"temperature", 0}, {"ignore_eos", true}};
    body.update(extra);
    HttpReply r = http(port(), "POST", "/v1/completions", body.dump());
    EXPECT_EQ(r.status, 200) << r.body;
    if (r.status != 200) return "";
    return json::parse(r.body)["choices"][0]["text"].get<std::string>();
  }

  static std::vector<int32_t> ids(const std::vector<std::string>& words) {
    std::vector<std::string> tokens;
    for (const std::string& w : words) tokens.push_back("\u0120" + w);  // byte-level BPE's space
    return ids_of(tokens);
  }

  // +bias on each of these words' tokens (" red", ...).
  static json bias_on(const std::vector<std::string>& words, double bias = 50) {
    json b = json::object();
    for (int32_t id : ids(words)) b[std::to_string(id)] = bias;
    return b;
  }

  static std::string words(std::initializer_list<const char*> ws) {
    std::string s;
    for (const char* w : ws) s += std::string(" ") + w;
    return s;
  }

  // " a b c" -> {"a", "b", "c"}.
  static std::vector<std::string> split(const std::string& text) {
    std::vector<std::string> out;
    size_t pos = 0;
    while (pos < text.size()) {
      size_t next = text.find(' ', pos + 1);
      if (next == std::string::npos) next = text.size();
      out.push_back(text.substr(pos + 1, next - pos - 1));
      pos = next;
    }
    return out;
  }
};
ServerProcess* ServeLogitsFields::server_ = nullptr;

const std::vector<std::string> kColors = {"red",   "blue",  "green",  "yellow",
                                          "black", "white", "purple", "orange"};

TEST_F(ServeLogitsFields, LogitBiasForcesATokenOnBothEndpoints) {
  for (int32_t id : ids(kColors)) ASSERT_GE(id, 0) << "a color that is not one token";
  const json bias = bias_on({"red"}, 100);
  EXPECT_EQ(complete("Once upon a time", {{"logit_bias", bias}}),
            words({"red", "red", "red", "red", "red", "red"}));
  // Sampling too: +100 leaves every other token a weight of e^-90 or less.
  EXPECT_EQ(complete("Once upon a time", {{"logit_bias", bias}, {"temperature", 1}, {"seed", 3}}),
            words({"red", "red", "red", "red", "red", "red"}));

  json body = {{"messages", json::array({{{"role", "user"}, {"content", "Say something"}}})},
               {"max_tokens", 4},
               {"temperature", 0},
               {"ignore_eos", true},
               {"chat_template_kwargs", {{"enable_thinking", false}}},
               {"logit_bias", bias}};
  HttpReply r = http(port(), "POST", "/v1/chat/completions", body.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const json message = json::parse(r.body)["choices"][0]["message"];
  std::string text = message.value("reasoning_content", "");
  if (message["content"].is_string()) text += message["content"].get<std::string>();
  EXPECT_EQ(text, words({"red", "red", "red", "red"})) << r.body;
}

TEST_F(ServeLogitsFields, HugePenaltiesStopRepetitionUnderGreedy) {
  // Eight colors, each +50: every token drawn is one of them.
  const json bias = bias_on(kColors);
  std::vector<std::string> plain = split(complete("Colors:", {{"logit_bias", bias}}, 8));
  ASSERT_EQ(plain.size(), 8u);
  for (const std::string& w : plain) {
    EXPECT_NE(std::find(kColors.begin(), kColors.end(), w), kColors.end()) << w;
  }
  // Without penalties the greedy draw repeats itself (these weights give "black black red red
  // red red red red"): the contrast the penalties are tested against.
  std::vector<std::string> sorted = plain;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_NE(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
  // A used color loses 2 (presence) + 2 (frequency), more than the raw logits spread: each of
  // the eight comes out exactly once.
  std::vector<std::string> penalized = split(complete(
      "Colors:", {{"logit_bias", bias}, {"presence_penalty", 2}, {"frequency_penalty", 2}}, 8));
  std::sort(penalized.begin(), penalized.end());
  std::vector<std::string> all = kColors;
  std::sort(all.begin(), all.end());
  EXPECT_EQ(penalized, all);
}

TEST_F(ServeLogitsFields, PresencePenaltyIsPaidOnceFrequencyPenaltyPerUse) {
  // presence 2 costs red 2 once: its +50 lead holds for good.
  EXPECT_EQ(complete("Colors:", {{"logit_bias", bias_on({"red"})}, {"presence_penalty", 2}}),
            words({"red", "red", "red", "red", "red", "red"}));
  // frequency 2 costs 2 per use: a +7 lead over logits within a few units of each other is gone
  // after a few uses (four on these weights), and red leads at first.
  const std::string text =
      complete("Colors:", {{"logit_bias", bias_on({"red"}, 7)}, {"frequency_penalty", 2}}, 8);
  EXPECT_EQ(text.rfind(" red", 0), 0u) << text;
  const int32_t red = ids({"red"})[0];
  int reds = 0;
  for (int32_t id : qwen3().encode(text)) reds += id == red;
  EXPECT_GE(reds, 1) << text;
  EXPECT_LE(reds, 5) << text;
}

TEST_F(ServeLogitsFields, RepetitionPenaltyCountsThePromptAndTheOutput) {
  const json both = bias_on({"red", "blue"});
  // A penalty of 100 divides the +50 of a token seen in the prompt down to about 0.5.
  EXPECT_EQ(complete("Colors: red", {{"logit_bias", both}, {"repetition_penalty", 100}}, 1),
            " blue");
  EXPECT_EQ(complete("Colors: blue", {{"logit_bias", both}, {"repetition_penalty", 100}}, 1),
            " red");
  // In the output too: three biased colors come out once each.
  std::vector<std::string> three = split(complete(
      "Colors:", {{"logit_bias", bias_on({"red", "blue", "green"})}, {"repetition_penalty", 100}},
      3));
  std::sort(three.begin(), three.end());
  EXPECT_EQ(three, (std::vector<std::string>{"blue", "green", "red"}));
}

TEST_F(ServeLogitsFields, MinPOneSamplesOnlyTheTopToken) {
  const std::string greedy = complete("The capital of France is", json::object(), 8);
  const json hot = {{"temperature", 2}, {"seed", 11}};
  // At temperature 2 the tiny model's flat logits wander away from greedy; min_p 1 keeps only
  // the most likely token, so the draw is greedy again.
  EXPECT_NE(complete("The capital of France is", hot, 8), greedy);
  json with_min_p = hot;
  with_min_p["min_p"] = 1.0;
  EXPECT_EQ(complete("The capital of France is", with_min_p, 8), greedy);
}

TEST_F(ServeLogitsFields, BadFieldsAre400NamingFieldAndKey) {
  auto error = [](const std::string& extra) {
    HttpReply r =
        http(port(), "POST", "/v1/completions", R"({"prompt":"hi","max_tokens":2)" + extra + "}");
    EXPECT_EQ(r.status, 400) << extra << ": " << r.body;
    return json::parse(r.body)["error"];
  };
  json e = error(R"(,"logit_bias":{"abc":1})");
  EXPECT_EQ(e["param"], "logit_bias");
  EXPECT_NE(e["message"].get<std::string>().find("'abc'"), std::string::npos) << e;
  e = error(R"(,"logit_bias":{"151936":1})");
  EXPECT_EQ(e["param"], "logit_bias");
  EXPECT_NE(e["message"].get<std::string>().find("out of vocabulary"), std::string::npos) << e;
  EXPECT_EQ(error(R"(,"logit_bias":{"5":101})")["param"], "logit_bias");
  EXPECT_EQ(error(R"(,"min_p":2)")["param"], "min_p");
  EXPECT_EQ(error(R"(,"presence_penalty":-2.5)")["param"], "presence_penalty");
  EXPECT_EQ(error(R"(,"repetition_penalty":0)")["param"], "repetition_penalty");
  // Chat reads the same fields.
  HttpReply chat = http(port(), "POST", "/v1/chat/completions",
                        R"({"messages":[{"role":"user","content":"x"}],"logit_bias":{"-3":1}})");
  EXPECT_EQ(chat.status, 400) << chat.body;
  EXPECT_NE(chat.body.find("'-3'"), std::string::npos) << chat.body;
}

}  // namespace
}  // namespace paceline::testing
