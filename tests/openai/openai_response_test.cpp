// The response objects OpenAI clients parse: every builder writes valid JSON of OpenAI's shape.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "server/openai_error.h"
#include "server/openai_response.h"

namespace paceline {
namespace {

using nlohmann::json;

const ResponseMeta kMeta{"chatcmpl-abc", "qwen3", 1700000000};
const Usage kUsage{10, 5, 4};

TEST(ResponseIds, PrefixAndThirtyTwoHexDigits) {
  std::string id = make_response_id("chatcmpl-", 7);
  EXPECT_EQ(id.size(), 9u + 32u);
  EXPECT_EQ(id.rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef", 9), std::string::npos);
  EXPECT_EQ(id, make_response_id("chatcmpl-", 7));
  EXPECT_NE(id, make_response_id("chatcmpl-", 8));
}

TEST(Usage, CountsTotalsAndCachedTokens) {
  EXPECT_EQ(json::parse(usage_json(kUsage)),
            json::parse(R"({"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,)"
                        R"("prompt_tokens_details":{"cached_tokens":4}})"));
}

TEST(ChatCompletion, NonStreamingObject) {
  ChatMessageOut message{"Hello \"you\"\n", "thought", {}};
  json j = json::parse(chat_completion_json(kMeta, message, "stop", kUsage));
  EXPECT_EQ(j["id"], "chatcmpl-abc");
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["created"], 1700000000);
  EXPECT_EQ(j["model"], "qwen3");
  const json& choice = j["choices"][0];
  EXPECT_EQ(choice["index"], 0);
  EXPECT_EQ(choice["message"]["role"], "assistant");
  EXPECT_EQ(choice["message"]["content"], "Hello \"you\"\n");
  EXPECT_EQ(choice["message"]["reasoning_content"], "thought");
  EXPECT_FALSE(choice["message"].contains("tool_calls"));
  EXPECT_TRUE(choice["logprobs"].is_null());
  EXPECT_EQ(choice["finish_reason"], "stop");
  EXPECT_EQ(j["usage"]["total_tokens"], 15);
}

TEST(ChatCompletion, ToolCallsWithNullContent) {
  ChatMessageOut message;
  message.tool_calls.push_back({0, "call_0123", "get_weather", R"({"city":"Paris"})"});
  json j = json::parse(chat_completion_json(kMeta, message, "tool_calls", kUsage));
  const json& m = j["choices"][0]["message"];
  EXPECT_TRUE(m["content"].is_null());
  EXPECT_FALSE(m.contains("reasoning_content"));
  EXPECT_EQ(m["tool_calls"][0],
            json::parse(R"({"id":"call_0123","type":"function","function":{"name":"get_weather",)"
                        R"("arguments":"{\"city\":\"Paris\"}"}})"));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "tool_calls");
}

TEST(ChatChunk, FirstDeltaCarriesTheRoleAndEmptyContent) {
  json j = json::parse(chat_chunk(kMeta, ChatDelta{.role = true}));
  EXPECT_EQ(j["object"], "chat.completion.chunk");
  EXPECT_EQ(j["choices"][0]["delta"], json::parse(R"({"role":"assistant","content":""})"));
  EXPECT_TRUE(j["choices"][0]["finish_reason"].is_null());
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
}

TEST(ChatChunk, ContentReasoningAndFinish) {
  json content = json::parse(chat_chunk(kMeta, ChatDelta{.content = "tab\there"}));
  EXPECT_EQ(content["choices"][0]["delta"], json::parse(R"({"content":"tab\there"})"));
  json reasoning = json::parse(chat_chunk(kMeta, ChatDelta{.reasoning_content = "hmm"}));
  EXPECT_EQ(reasoning["choices"][0]["delta"], json::parse(R"({"reasoning_content":"hmm"})"));
  json finish = json::parse(chat_chunk(kMeta, ChatDelta{}, "length"));
  EXPECT_EQ(finish["choices"][0]["delta"], json::object());
  EXPECT_EQ(finish["choices"][0]["finish_reason"], "length");
}

TEST(ChatChunk, ToolCallDeltasCarryTheirIndex) {
  std::vector<ToolCall> calls{{1, "call_x", "f", "{}"}};
  json j = json::parse(chat_chunk(kMeta, ChatDelta{.tool_calls = calls}));
  EXPECT_EQ(j["choices"][0]["delta"]["tool_calls"][0],
            json::parse(R"({"index":1,"id":"call_x","type":"function",)"
                        R"("function":{"name":"f","arguments":"{}"}})"));
}

TEST(ChatChunk, UsageChunkHasNoChoices) {
  json j = json::parse(chat_usage_chunk(kMeta, kUsage));
  EXPECT_EQ(j["choices"], json::array());
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 4);
}

TEST(TextCompletion, ObjectChunkAndUsage) {
  ResponseMeta meta{"cmpl-1", "m", 1};
  json j = json::parse(text_completion_json(meta, "out", "length", kUsage));
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], "out");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["completion_tokens"], 5);
  json chunk = json::parse(completion_chunk(meta, "o"));
  EXPECT_EQ(chunk["choices"][0]["text"], "o");
  EXPECT_TRUE(chunk["choices"][0]["finish_reason"].is_null());
  EXPECT_EQ(json::parse(completion_usage_chunk(meta, kUsage))["choices"], json::array());
}

TEST(JsonStrings, ControlCharactersAreEscapedAndBadUtf8Replaced) {
  std::string out;
  append_json_string(out, std::string("a\x01\"\\\n\xC3\xA9", 7));
  EXPECT_EQ(json::parse(out), std::string("a\x01\"\\\n\xC3\xA9", 7));
  out.clear();
  append_json_string(out, "bad\xFFtail");
  EXPECT_EQ(json::parse(out), "bad\xEF\xBF\xBDtail");
}

TEST(FinishReason, ToolCallsReplaceStop) {
  EXPECT_EQ(finish_reason_text(FinishReason::kStop, false), "stop");
  EXPECT_EQ(finish_reason_text(FinishReason::kStop, true), "tool_calls");
  EXPECT_EQ(finish_reason_text(FinishReason::kLength, true), "length");
}

TEST(Models, ListBody) {
  std::vector<ModelCard> models{{"qwen3", 5, "tiny", 4096}};
  json j = json::parse(models_list_json(models));
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["data"][0]["id"], "qwen3");
  EXPECT_EQ(j["data"][0]["object"], "model");
  EXPECT_EQ(j["data"][0]["owned_by"], "paceline");
  EXPECT_EQ(j["data"][0]["max_model_len"], 4096);
}

TEST(Errors, OpenAiErrorObject) {
  json j = json::parse(error_json(invalid_request_error("bad n", "n")));
  EXPECT_EQ(j, json::parse(R"({"error":{"message":"bad n","type":"invalid_request_error",)"
                           R"("param":"n","code":null}})"));
  json auth = json::parse(error_json(authentication_error()));
  EXPECT_EQ(auth["error"]["type"], "authentication_error");
  EXPECT_TRUE(auth["error"]["param"].is_null());
}

TEST(Errors, StatusesOfTheNamedErrors) {
  EXPECT_EQ(authentication_error().status, 401);
  EXPECT_EQ(model_not_found_error("x").status, 404);
  EXPECT_EQ(model_not_found_error("x").code, "model_not_found");
  EXPECT_EQ(route_not_found_error("GET", "/x").status, 404);
  EXPECT_EQ(payload_too_large_error(10).status, 413);
  EXPECT_EQ(unsupported_media_type_error("text/plain").status, 400);
  EXPECT_EQ(overloaded_error("full").status, 503);
  EXPECT_EQ(internal_error("x").status, 500);
}

TEST(Errors, ExceptionsMapToErrors) {
  EXPECT_EQ(api_error_from_exception(ApiException(model_not_found_error("m"))).status, 404);
  EXPECT_EQ(api_error_from_exception(Error("bad template input")).status, 400);
  EXPECT_EQ(api_error_from_exception(std::runtime_error("boom")).status, 500);
  try {
    throw_api_error(invalid_request_error("x", "p"));
  } catch (...) {
    EXPECT_EQ(api_error_from_current_exception().param, "p");
  }
}

}  // namespace
}  // namespace paceline
