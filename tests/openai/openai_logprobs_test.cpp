// The logprobs and n fields of OpenAI requests, and the logprobs objects of responses.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <limits>
#include <string>

#include "server/openai_error.h"
#include "server/openai_logprobs.h"
#include "server/openai_request.h"
#include "server/openai_response.h"

namespace paceline {
namespace {

using nlohmann::json;

const std::string kMessages = R"("messages":[{"role":"user","content":"hi"}])";

ChatCompletionRequest chat(const std::string& extra) {
  return parse_chat_completion_request("{" + kMessages + extra + "}", "application/json");
}
CompletionRequest completion(const std::string& extra) {
  return parse_completion_request(R"({"prompt":"x")" + extra + "}", "application/json");
}

std::string token_text(int32_t id) {
  switch (id) {
    case 1: return "a";
    case 2: return "\xe2\x82";  // the first two bytes of "€"
    case 3: return "\xac";      // its last byte
    case 4: return "b";
    default: return "";
  }
}

TEST(OpenAiLogprobsRequest, ChatLogprobsAreABoolWithTopLogprobs) {
  EXPECT_EQ(chat("").options.logprobs, -1);
  EXPECT_EQ(chat(R"(,"logprobs":false,"top_logprobs":0)").options.logprobs, -1);
  EXPECT_EQ(chat(R"(,"logprobs":true)").options.logprobs, 0);
  EXPECT_EQ(chat(R"(,"logprobs":true,"top_logprobs":20)").options.logprobs, 20);
  EXPECT_EQ(to_request_params(chat(R"(,"logprobs":true,"top_logprobs":7)").options, 4).logprobs, 7);
}

TEST(OpenAiLogprobsRequest, CompletionLogprobsAreACountAndEchoAFlag) {
  EXPECT_EQ(completion("").options.logprobs, -1);
  EXPECT_EQ(completion(R"(,"logprobs":0)").options.logprobs, 0);
  EXPECT_EQ(completion(R"(,"logprobs":5)").options.logprobs, 5);
  EXPECT_TRUE(completion(R"(,"echo":true)").echo);
  const CompletionRequest both = completion(R"(,"echo":true,"logprobs":1)");
  EXPECT_TRUE(both.echo);
  EXPECT_EQ(both.options.logprobs, 1);
  try {
    completion(R"(,"echo":1)");
    FAIL() << "a numeric echo was accepted";
  } catch (const ApiException& e) {
    EXPECT_EQ(e.error().param, "echo");
  }
}

TEST(OpenAiLogprobsRequest, NIsBetweenOneAnd128) {
  EXPECT_EQ(chat("").options.n, 1);
  EXPECT_EQ(chat(R"(,"n":4)").options.n, 4);
  EXPECT_EQ(completion(R"(,"n":128)").options.n, 128);
  EXPECT_THROW(chat(R"(,"n":129)"), ApiException);
  EXPECT_THROW(completion(R"(,"n":0)"), ApiException);
}

TEST(OpenAiLogprobsResponse, ChatEntriesCarryTokenTextBytesAndTopLogprobs) {
  RowLogprobs row;
  row.chosen = {2, -0.25f};
  row.top = {{2, -0.25f}, {1, -1.5f}};
  RowLogprobs low;
  low.chosen = {3, -std::numeric_limits<float>::infinity()};
  const RowLogprobs rows[] = {row, low};
  const json j = json::parse(chat_logprobs_json(rows, token_text));
  ASSERT_EQ(j["content"].size(), 2u);
  const json& first = j["content"][0];
  EXPECT_EQ(first["token"], "\xef\xbf\xbd");  // an unfinished character reads as U+FFFD
  EXPECT_EQ(first["bytes"], json::array({0xe2, 0x82}));
  EXPECT_DOUBLE_EQ(first["logprob"].get<double>(), -0.25);
  ASSERT_EQ(first["top_logprobs"].size(), 2u);
  EXPECT_EQ(first["top_logprobs"][1]["token"], "a");
  EXPECT_EQ(first["top_logprobs"][1]["bytes"], json::array({97}));
  EXPECT_DOUBLE_EQ(j["content"][1]["logprob"].get<double>(), -9999.0);  // -inf has no JSON
  EXPECT_TRUE(j["content"][1]["top_logprobs"].empty());
}

TEST(OpenAiLogprobsResponse, CompletionTopLogprobsStartWithTheChosenTokenAndOffsetsCountCharacters) {
  RowLogprobs first;
  first.chosen = {4, -2.0f};  // sampled, not the most likely
  first.top = {{1, -0.5f}, {4, -2.0f}};
  RowLogprobs second;
  second.chosen = {1, -0.1f};
  second.top = {{1, -0.1f}};
  const CompletionToken tokens[] = {{2, std::nullopt}, {4, first}, {1, second}};
  const std::string raw = completion_logprobs_json(tokens, token_text, 3);
  const json j = json::parse(raw);
  EXPECT_EQ(j["tokens"], json::array({"\xef\xbf\xbd", "b", "a"}));
  EXPECT_EQ(j["text_offset"], json::array({3, 4, 5}));
  EXPECT_TRUE(j["token_logprobs"][0].is_null());
  EXPECT_TRUE(j["top_logprobs"][0].is_null());
  EXPECT_DOUBLE_EQ(j["token_logprobs"][1].get<double>(), -2.0);
  // The chosen token first, then the highest, each text once (in the text: json sorts keys).
  EXPECT_NE(raw.find(R"("top_logprobs":[null,{"b":-2.0,"a":-0.5},{"a":-0.1}])"), std::string::npos)
      << raw;
  EXPECT_EQ(completion_text_length(tokens, token_text), 3);
}

TEST(OpenAiLogprobsResponse, ChoicesAndChunksCarryTheirIndexAndLogprobs) {
  const ResponseMeta meta{"chatcmpl-1", "m", 5};
  const std::string lp = R"({"content":[]})";
  const json chunk = json::parse(chat_chunk(meta, ChatDelta{.content = "x"}, std::nullopt, 3, lp));
  EXPECT_EQ(chunk["choices"][0]["index"], 3);
  EXPECT_EQ(chunk["choices"][0]["logprobs"], json::parse(lp));
  EXPECT_TRUE(json::parse(chat_chunk(meta, ChatDelta{}))["choices"][0]["logprobs"].is_null());
  const json text = json::parse(completion_chunk(meta, "y", "stop", 1));
  EXPECT_EQ(text["choices"][0]["index"], 1);
  EXPECT_EQ(text["choices"][0]["finish_reason"], "stop");

  ChatMessageOut message;
  message.content = "hi";
  const std::string choices[] = {chat_choice_json(0, message, {}, "stop"),
                                 chat_choice_json(1, message, lp, "length")};
  Usage usage{4, 6, 0};
  const json body = json::parse(completion_body_json(meta, "chat.completion", choices, usage));
  ASSERT_EQ(body["choices"].size(), 2u);
  EXPECT_EQ(body["choices"][1]["index"], 1);
  EXPECT_EQ(body["choices"][1]["finish_reason"], "length");
  EXPECT_EQ(body["usage"]["total_tokens"], 10);
}

}  // namespace
}  // namespace paceline
