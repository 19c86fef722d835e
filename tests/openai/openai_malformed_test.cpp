// Malformed and invalid requests: each one is answered with the right status and names the
// offending field in `param`, so a client can tell what to fix.
#include <chrono>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "server/openai_error.h"
#include "server/openai_request.h"

namespace paceline {
namespace {

constexpr const char* kJson = "application/json";

struct Case {
  const char* name;
  const char* endpoint;  // "chat" or "completions"
  std::string body;
  std::string content_type;
  int status;
  std::string param;  // "" means null
};

std::string chat(const std::string& extra) {
  return R"({"model":"m","messages":[{"role":"user","content":"hi"}])" + extra + "}";
}
std::string completion(const std::string& extra) {
  return R"({"model":"m","prompt":"hi")" + extra + "}";
}

ApiError error_of(const Case& c) {
  try {
    if (std::string(c.endpoint) == "chat") {
      parse_chat_completion_request(c.body, c.content_type);
    } else {
      parse_completion_request(c.body, c.content_type);
    }
  } catch (const ApiException& e) {
    return e.error();
  }
  ADD_FAILURE() << c.name << ": accepted";
  return {};
}

std::vector<Case> cases() {
  std::string twenty_stops = R"(,"stop":[)";
  for (int i = 0; i < 20; ++i) twenty_stops += (i ? ",\"s" : "\"s") + std::to_string(i) + "\"";
  twenty_stops += "]";
  return {
      {"truncated body", "chat", R"({"model":"m","messages":[{"role":"us)", kJson, 400, ""},
      {"not JSON", "chat", "hello", kJson, 400, ""},
      {"empty body", "chat", "", kJson, 400, ""},
      {"array body", "chat", "[1,2]", kJson, 400, ""},
      {"bad UTF-8", "chat", "{\"messages\":[{\"role\":\"user\",\"content\":\"\xC3\x28\"}]}", kJson,
       400, ""},
      {"lone surrogate escape", "chat", R"({"messages":[{"role":"user","content":"\ud800"}]})",
       kJson, 400, ""},
      {"text/plain", "chat", chat(""), "text/plain", 400, ""},
      {"form content type", "chat", chat(""), "application/x-www-form-urlencoded", 400, ""},
      {"stream_options without stream", "chat", chat(R"(,"stream_options":{"include_usage":true})"),
       kJson, 400, "stream_options"},
      {"stream_options with stream false", "completions",
       completion(R"(,"stream":false,"stream_options":{})"), kJson, 400, "stream_options"},
      {"messages missing", "chat", R"({"model":"m"})", kJson, 400, "messages"},
      {"messages empty", "chat", R"({"messages":[]})", kJson, 400, "messages"},
      {"messages a string", "chat", R"({"messages":"hi"})", kJson, 400, "messages"},
      {"message not an object", "chat", R"({"messages":[3]})", kJson, 400, "messages[0]"},
      {"role missing", "chat", R"({"messages":[{"content":"hi"}]})", kJson, 400,
       "messages[0].role"},
      {"unknown role", "chat", R"({"messages":[{"role":"wizard","content":"hi"}]})", kJson, 400,
       "messages[0].role"},
      {"user content a number", "chat", R"({"messages":[{"role":"user","content":5}]})", kJson, 400,
       "messages[0].content"},
      {"user content null", "chat", R"({"messages":[{"role":"user","content":null}]})", kJson, 400,
       "messages[0].content"},
      {"tool call without arguments", "chat",
       R"({"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f"}}]}]})", kJson,
       400, "messages"},
      {"image part", "chat",
       R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]})", kJson,
       400, "messages[0].content[0].type"},
      {"model a number", "chat", R"({"model":7,"messages":[{"role":"user","content":"hi"}]})",
       kJson, 400, "model"},
      {"n = 129", "chat", chat(R"(,"n":129)"), kJson, 400, "n"},
      {"n = 0", "chat", chat(R"(,"n":0)"), kJson, 400, "n"},
      {"max_tokens 0", "chat", chat(R"(,"max_tokens":0)"), kJson, 400, "max_tokens"},
      {"max_tokens negative", "chat", chat(R"(,"max_tokens":-5)"), kJson, 400, "max_tokens"},
      {"max_tokens huge", "chat", chat(R"(,"max_tokens":1000000000000)"), kJson, 400, "max_tokens"},
      {"max_tokens beyond uint64", "chat", chat(R"(,"max_tokens":99999999999999999999999)"), kJson,
       400, "max_tokens"},
      {"max_tokens a string", "chat", chat(R"(,"max_tokens":"10")"), kJson, 400, "max_tokens"},
      {"max_tokens fractional", "chat", chat(R"(,"max_tokens":10.5)"), kJson, 400, "max_tokens"},
      {"max_completion_tokens 0", "chat", chat(R"(,"max_completion_tokens":0)"), kJson, 400,
       "max_completion_tokens"},
      {"min_tokens above max_tokens", "chat", chat(R"(,"max_tokens":5,"min_tokens":6)"), kJson, 400,
       "min_tokens"},
      {"temperature 3", "chat", chat(R"(,"temperature":3)"), kJson, 400, "temperature"},
      {"temperature negative", "chat", chat(R"(,"temperature":-0.1)"), kJson, 400, "temperature"},
      {"number beyond a double", "chat", chat(R"(,"temperature":1e999)"), kJson, 400, ""},
      {"temperature a string", "chat", chat(R"(,"temperature":"hot")"), kJson, 400, "temperature"},
      {"top_p 0", "chat", chat(R"(,"top_p":0)"), kJson, 400, "top_p"},
      {"top_p above 1", "chat", chat(R"(,"top_p":1.5)"), kJson, 400, "top_p"},
      {"top_k -2", "chat", chat(R"(,"top_k":-2)"), kJson, 400, "top_k"},
      {"seed 2^63", "chat", chat(R"(,"seed":9223372036854775808)"), kJson, 400, "seed"},
      {"seed 2^63 as a float", "chat", chat(R"(,"seed":9223372036854775808.0)"), kJson, 400,
       "seed"},
      {"stop with 20 entries", "chat", chat(twenty_stops), kJson, 400, "stop"},
      {"stop empty string", "chat", chat(R"(,"stop":"")"), kJson, 400, "stop"},
      {"stop a number", "chat", chat(R"(,"stop":5)"), kJson, 400, "stop"},
      {"stop_token_ids negative", "chat", chat(R"(,"stop_token_ids":[-1])"), kJson, 400,
       "stop_token_ids"},
      {"stream a string", "chat", chat(R"(,"stream":"yes")"), kJson, 400, "stream"},
      {"include_usage a number", "chat",
       chat(R"(,"stream":true,"stream_options":{"include_usage":1})"), kJson, 400,
       "stream_options.include_usage"},
      {"presence_penalty above 2", "chat", chat(R"(,"presence_penalty":2.5)"), kJson, 400,
       "presence_penalty"},
      {"frequency_penalty below -2", "chat", chat(R"(,"frequency_penalty":-3)"), kJson, 400,
       "frequency_penalty"},
      {"repetition_penalty 0", "completion", completion(R"(,"repetition_penalty":0)"), kJson, 400,
       "repetition_penalty"},
      {"logit_bias key not an id", "completion", completion(R"(,"logit_bias":{"x":1})"), kJson, 400,
       "logit_bias"},
      {"logprobs a number", "chat", chat(R"(,"logprobs":1)"), kJson, 400, "logprobs"},
      {"top_logprobs 21", "chat", chat(R"(,"logprobs":true,"top_logprobs":21)"), kJson, 400,
       "top_logprobs"},
      {"top_logprobs without logprobs", "chat", chat(R"(,"top_logprobs":2)"), kJson, 400,
       "top_logprobs"},
      {"enable_thinking a string", "chat",
       chat(R"(,"chat_template_kwargs":{"enable_thinking":"no"})"), kJson, 400,
       "chat_template_kwargs.enable_thinking"},
      {"tools an object", "chat", chat(R"(,"tools":{})"), kJson, 400, "tools"},
      {"tool without name", "chat", chat(R"(,"tools":[{"type":"function","function":{}}])"), kJson,
       400, "tools[0].function.name"},
      {"tool_choice unknown", "chat", chat(R"(,"tool_choice":"sometimes")"), kJson, 400,
       "tool_choice"},
      {"tool_choice names a missing tool", "chat",
       chat(R"(,"tools":[{"type":"function","function":{"name":"a"}}],)"
            R"("tool_choice":{"type":"function","function":{"name":"b"}})"),
       kJson, 400, "tool_choice"},
      {"tool_choice required without tools", "chat", chat(R"(,"tool_choice":"required")"), kJson,
       400, "tool_choice"},
      {"response_format json", "chat", chat(R"(,"response_format":{"type":"json_object"})"), kJson,
       400, "response_format"},
      {"prompt missing", "completions", R"({"model":"m"})", kJson, 400, "prompt"},
      {"prompt an object", "completions", R"({"prompt":{"text":"hi"}})", kJson, 400, "prompt"},
      {"prompt empty", "completions", R"({"prompt":""})", kJson, 400, "prompt"},
      {"prompt batch", "completions", R"({"prompt":["a","b"]})", kJson, 400, "prompt"},
      {"prompt ids above int32", "completions", R"({"prompt":[1,2147483648]})", kJson, 400,
       "prompt"},
      {"prompt ids negative", "completions", R"({"prompt":[[1,-3]]})", kJson, 400, "prompt"},
      {"prompt ids mixed", "completions", R"({"prompt":[1,"a"]})", kJson, 400, "prompt"},
      {"echo a string", "completions", completion(R"(,"echo":"yes")"), kJson, 400, "echo"},
      {"completion logprobs 6", "completions", completion(R"(,"logprobs":6)"), kJson, 400,
       "logprobs"},
      {"completion logprobs true", "completions", completion(R"(,"logprobs":true)"), kJson, 400,
       "logprobs"},
      {"best_of 3", "completions", completion(R"(,"best_of":3)"), kJson, 400, "best_of"},
      {"completion n = -1", "completions", completion(R"(,"n":-1)"), kJson, 400, "n"},
      {"completion top_p 0", "completions", completion(R"(,"top_p":0)"), kJson, 400, "top_p"},
  };
}

TEST(OpenAiMalformed, EachIsAnsweredWithItsStatusAndParam) {
  std::vector<Case> all = cases();
  EXPECT_GE(all.size(), 20u);
  for (const Case& c : all) {
    ApiError error = error_of(c);
    EXPECT_EQ(error.status, c.status) << c.name << ": " << error.message;
    EXPECT_EQ(error.param, c.param) << c.name << ": " << error.message;
    EXPECT_EQ(error.type, "invalid_request_error") << c.name;
    EXPECT_FALSE(error.message.empty()) << c.name;
  }
}

TEST(OpenAiMalformed, MalformedJsonNamesTheBytePosition) {
  ApiError error = error_of({"", "chat", R"({"messages": [1,, 2]})", kJson, 0, ""});
  EXPECT_NE(error.message.find("at byte 17"), std::string::npos) << error.message;
}

TEST(OpenAiMalformed, BadUtf8IsCalledSo) {
  ApiError error = error_of({"", "chat", "{\"model\":\"\xFF\"}", kJson, 0, ""});
  EXPECT_NE(error.message.find("UTF-8"), std::string::npos) << error.message;
}

TEST(OpenAiMalformed, WrongContentTypeSaysWhatIsAllowed) {
  ApiError error = error_of({"", "chat", chat(""), "text/plain", 0, ""});
  EXPECT_NE(error.message.find("application/json"), std::string::npos);
  EXPECT_NE(error.message.find("text/plain"), std::string::npos);
}

TEST(OpenAiMalformed, DeepNestingIsRejectedNotRecursedInto) {
  std::string body = R"({"messages":[{"role":"user","content":"hi"}],"x":)" +
                     std::string(100000, '[') + std::string(100000, ']') + "}";
  ApiError error = error_of({"", "chat", body, kJson, 0, ""});
  EXPECT_EQ(error.status, 400);
  EXPECT_NE(error.message.find("deeper"), std::string::npos) << error.message;
}

// The parse is linear in the body: an ordered_json object used to look every new key up among
// the ones before it (n^2/2 comparisons), and the depth-limit callback made arrays of objects
// super-linear. 200k members and 200k small objects each parse in well under a second, and a
// repeated key still keeps its last value, as nlohmann's own parser does.
TEST(OpenAiMalformed, WideObjectsAndManySmallObjectsParseInLinearTime) {
  std::string keys = R"({"messages":[{"role":"user","content":"hi"}],"x":{)";
  for (int i = 0; i < 200000; ++i) keys += (i ? ",\"" : "\"") + std::to_string(i) + "\":0";
  keys += "}}";
  std::string objects = R"({"messages":[{"role":"user","content":"hi"}],"x":[)";
  for (int i = 0; i < 200000; ++i) objects += i ? ",{\"a\":1}" : "{\"a\":1}";
  objects += "]}";
  for (const std::string* body : {&keys, &objects}) {
    auto t0 = std::chrono::steady_clock::now();
    parse_chat_completion_request(*body, kJson);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(seconds, 1.0) << body->size() << " bytes";
  }
  ChatCompletionRequest r = parse_chat_completion_request(
      R"({"max_tokens":3,"messages":[{"role":"user","content":"hi"}],"max_tokens":5})", kJson);
  EXPECT_EQ(r.options.max_tokens, 5);
  // Many members (the hash-map path) with one key repeated at the end.
  std::string wide = R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":3)";
  for (int i = 0; i < 50; ++i) wide += ",\"k" + std::to_string(i) + "\":" + std::to_string(i);
  ChatCompletionRequest w = parse_chat_completion_request(wide + R"(,"max_tokens":9})", kJson);
  EXPECT_EQ(w.options.max_tokens, 9);
}

TEST(OpenAiMalformed, MissingContentTypeIsReadAsJson) {
  EXPECT_NO_THROW(parse_chat_completion_request(chat(""), ""));
  EXPECT_NO_THROW(parse_completion_request(completion(""), ""));
}

TEST(OpenAiMalformed, OutOfRangePenaltyMessageGivesTheRange) {
  ApiError error = error_of({"", "chat", chat(R"(,"presence_penalty":3)"), kJson, 0, ""});
  EXPECT_NE(error.message.find("[-2, 2]"), std::string::npos) << error.message;
}

}  // namespace
}  // namespace paceline
