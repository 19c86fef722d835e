// What a valid request turns into: the fields OpenAI clients send, read into plain structs, with
// the defaults OpenAI and vLLM use.
#include <string>

#include <gtest/gtest.h>

#include "server/openai_error.h"
#include "server/openai_request.h"

namespace paceline {
namespace {

constexpr const char* kJson = "application/json";

ChatCompletionRequest chat(const std::string& extra) {
  return parse_chat_completion_request(
      R"({"model":"qwen","messages":[{"role":"user","content":"hi"}])" + extra + "}", kJson);
}

ApiError error_of(auto&& call) {
  try {
    call();
  } catch (const ApiException& e) {
    return e.error();
  }
  ADD_FAILURE() << "no error";
  return {};
}

TEST(ChatRequest, MinimalRequestGetsOpenAiDefaults) {
  ChatCompletionRequest r = chat("");
  EXPECT_EQ(r.model, "qwen");
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0]["content"], "hi");
  EXPECT_TRUE(r.tools.is_null());
  EXPECT_EQ(r.tool_choice.mode, ToolChoice::Mode::kNone);
  EXPECT_FALSE(r.parses_tool_calls());
  EXPECT_FALSE(r.enable_thinking.has_value());
  const GenerationOptions& o = r.options;
  EXPECT_FALSE(o.max_tokens.has_value());
  EXPECT_EQ(o.min_tokens, 0);
  EXPECT_FALSE(o.ignore_eos);
  EXPECT_EQ(o.sampling.temperature, 1.0);
  EXPECT_EQ(o.sampling.top_p, 1.0);
  EXPECT_EQ(o.sampling.top_k, -1);
  EXPECT_FALSE(o.sampling.seed.has_value());
  EXPECT_TRUE(o.stop.empty());
  EXPECT_FALSE(o.stream);
  EXPECT_FALSE(o.include_usage);
}

TEST(ChatRequest, ContentTypeMayCarryParameters) {
  EXPECT_NO_THROW(check_content_type("application/json"));
  EXPECT_NO_THROW(check_content_type("Application/JSON; charset=utf-8"));
  EXPECT_EQ(error_of([] { check_content_type("application/jsonx"); }).status, 400);
}

TEST(ChatRequest, SamplingAndLengthFields) {
  ChatCompletionRequest r =
      chat(R"(,"max_tokens":7,"min_tokens":2,"ignore_eos":true,"temperature":0,"top_p":0.5,)"
           R"("top_k":40,"seed":-1,"stop":"END","stop_token_ids":[151645],"stream":true,)"
           R"("stream_options":{"include_usage":true},"n":1,"presence_penalty":0,)"
           R"("frequency_penalty":0.0,"logprobs":false,"user":"u","some_future_field":{"x":1})");
  const GenerationOptions& o = r.options;
  EXPECT_EQ(o.max_tokens, 7);
  EXPECT_EQ(o.min_tokens, 2);
  EXPECT_TRUE(o.ignore_eos);
  EXPECT_EQ(o.sampling.temperature, 0.0);
  EXPECT_TRUE(o.sampling.greedy());
  EXPECT_EQ(o.sampling.top_p, 0.5);
  EXPECT_EQ(o.sampling.top_k, 40);
  EXPECT_EQ(o.sampling.seed, ~uint64_t{0});
  EXPECT_EQ(o.stop, std::vector<std::string>{"END"});
  EXPECT_EQ(o.stop_token_ids, std::vector<int32_t>{151645});
  EXPECT_TRUE(o.stream);
  EXPECT_TRUE(o.include_usage);
}

TEST(ChatRequest, MaxCompletionTokensWinsOverMaxTokens) {
  EXPECT_EQ(chat(R"(,"max_tokens":7,"max_completion_tokens":9)").options.max_tokens, 9);
  EXPECT_EQ(chat(R"(,"max_completion_tokens":9)").options.max_tokens, 9);
}

TEST(ChatRequest, MinNewTokensIsAnAliasAndTopKZeroMeansAll) {
  ChatCompletionRequest r = chat(R"(,"min_new_tokens":3,"top_k":0,"max_tokens":5.0)");
  EXPECT_EQ(r.options.min_tokens, 3);
  EXPECT_EQ(r.options.sampling.top_k, -1);
  EXPECT_EQ(r.options.max_tokens, 5);  // an integral float is an integer, as pydantic accepts
}

TEST(ChatRequest, NullMeansNotGiven) {
  ChatCompletionRequest r =
      chat(R"(,"max_tokens":null,"temperature":null,"stop":null,"tools":null)");
  EXPECT_FALSE(r.options.max_tokens.has_value());
  EXPECT_EQ(r.options.sampling.temperature, 1.0);
}

TEST(ChatRequest, StopAcceptsUpToSixteenStrings) {
  std::string stops = R"(,"stop":[)";
  for (int i = 0; i < 16; ++i) stops += (i ? ",\"s" : "\"s") + std::to_string(i) + "\"";
  EXPECT_EQ(chat(stops + "]").options.stop.size(), 16u);
}

TEST(ChatRequest, TextPartsAreJoinedIntoOneString) {
  ChatCompletionRequest r = parse_chat_completion_request(
      R"({"messages":[{"role":"developer","content":"be brief"},)"
      R"({"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]})",
      kJson);
  EXPECT_EQ(r.model, "");
  EXPECT_EQ(r.messages[0]["role"], "system");
  EXPECT_EQ(r.messages[1]["content"], "a\nb");
}

TEST(ChatRequest, AssistantToolCallsAndToolResultsAreAccepted) {
  ChatCompletionRequest r = parse_chat_completion_request(
      R"({"messages":[{"role":"user","content":"weather?"},)"
      R"({"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",)"
      R"("function":{"name":"w","arguments":"{\"c\":\"P\"}"}}]},)"
      R"({"role":"tool","tool_call_id":"call_1","content":"sunny"}]})",
      kJson);
  EXPECT_EQ(r.messages.size(), 3u);
}

TEST(ChatRequest, ToolsDefaultToAutoAndNamedChoiceIsChecked) {
  std::string tools = R"(,"tools":[{"type":"function","function":{"name":"get_weather",)"
                      R"("parameters":{"type":"object","properties":{}}}}])";
  ChatCompletionRequest r = chat(tools);
  EXPECT_EQ(r.tool_choice.mode, ToolChoice::Mode::kAuto);
  EXPECT_TRUE(r.parses_tool_calls());
  EXPECT_EQ(r.tools[0]["function"]["name"], "get_weather");

  EXPECT_EQ(chat(tools + R"(,"tool_choice":"none")").tool_choice.mode, ToolChoice::Mode::kNone);
  EXPECT_FALSE(chat(tools + R"(,"tool_choice":"none")").parses_tool_calls());
  EXPECT_EQ(chat(tools + R"(,"tool_choice":"required")").tool_choice.mode,
            ToolChoice::Mode::kRequired);
  ChatCompletionRequest named =
      chat(tools + R"(,"tool_choice":{"type":"function","function":{"name":"get_weather"}})");
  EXPECT_EQ(named.tool_choice.mode, ToolChoice::Mode::kFunction);
  EXPECT_EQ(named.tool_choice.function_name, "get_weather");
  EXPECT_TRUE(chat(R"(,"tools":[])").tools.is_null());
}

TEST(ChatRequest, EnableThinkingComesFromChatTemplateKwargs) {
  EXPECT_EQ(chat(R"(,"chat_template_kwargs":{"enable_thinking":false})").enable_thinking, false);
  EXPECT_EQ(chat(R"(,"chat_template_kwargs":{"enable_thinking":true,"other":1})").enable_thinking,
            true);
}

TEST(CompletionRequest, PromptAsTextOrTokenIds) {
  auto parse = [](const std::string& prompt) {
    return parse_completion_request(R"({"model":"m","prompt":)" + prompt + "}", kJson);
  };
  EXPECT_EQ(parse(R"("hello")").prompt_text, "hello");
  EXPECT_EQ(parse(R"(["hello"])").prompt_text, "hello");
  CompletionRequest ids = parse("[1,2,3]");
  EXPECT_TRUE(ids.has_token_prompt());
  EXPECT_EQ(ids.prompt_token_ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(parse("[[4,5]]").prompt_token_ids, (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(parse("[2147483647]").prompt_token_ids, (std::vector<int32_t>{2147483647}));
  EXPECT_FALSE(parse(R"("x")").has_token_prompt());
}

TEST(CompletionRequest, SharesTheSamplingFields) {
  CompletionRequest r = parse_completion_request(
      R"({"prompt":"x","max_tokens":3,"temperature":0.7,"stop":["a","b"],"echo":false,"best_of":1})",
      kJson);
  EXPECT_EQ(r.options.max_tokens, 3);
  EXPECT_EQ(r.options.sampling.temperature, 0.7);
  EXPECT_EQ(r.options.stop.size(), 2u);
}

TEST(CompletionRequest, TokenIdsBeyondTheVocabularyAreRejected) {
  std::vector<int32_t> ids{1, 2, 151936};
  ApiError error = error_of([&] { check_prompt_token_ids(ids, 151936); });
  EXPECT_EQ(error.status, 400);
  EXPECT_EQ(error.param, "prompt");
  EXPECT_NO_THROW(check_prompt_token_ids(std::vector<int32_t>{0, 151935}, 151936));
}

TEST(ContextLength, PromptPlusMaxTokensMustFit) {
  EXPECT_NO_THROW(check_context_length(100, 28, 128));
  ApiError error = error_of([] { check_context_length(100, 29, 128); });
  EXPECT_EQ(error.status, 400);
  EXPECT_EQ(error.code, "context_length_exceeded");
  EXPECT_EQ(error.param, "messages");
  EXPECT_EQ(error.message,
            "This model's maximum context length is 128 tokens. However, you requested 129 tokens "
            "(100 in the messages, 29 in the completion). Please reduce the length of the messages "
            "or completion.");
}

TEST(ContextLength, AbsentMaxTokensFillsTheRestOfTheContext) {
  GenerationOptions options;
  EXPECT_EQ(resolve_max_tokens(options, 100, 128), 28);
  options.max_tokens = 10;
  EXPECT_EQ(resolve_max_tokens(options, 100, 128), 10);
}

TEST(ContextLength, APromptThatFillsTheContextLeavesNoRoom) {
  GenerationOptions options;
  ApiError error = error_of([&] { resolve_max_tokens(options, 128, 128, "prompt"); });
  EXPECT_NE(error.message.find("maximum context length"), std::string::npos);
  EXPECT_EQ(error.param, "prompt");
}

TEST(ContextLength, MinTokensMustFitInTheResolvedMaxTokens) {
  GenerationOptions options;
  options.min_tokens = 50;
  EXPECT_EQ(error_of([&] { resolve_max_tokens(options, 100, 128); }).param, "min_tokens");
}

TEST(RequestParamsFromOptions, CarriesSamplingLengthAndStops) {
  ChatCompletionRequest r =
      chat(R"(,"temperature":0.5,"top_k":3,"seed":7,"min_tokens":1,"ignore_eos":true,)"
           R"("stop_token_ids":[9,10])");
  RequestParams params = to_request_params(r.options, 42);
  EXPECT_EQ(params.max_tokens, 42);
  EXPECT_EQ(params.min_tokens, 1);
  EXPECT_TRUE(params.ignore_eos);
  EXPECT_EQ(params.sampling.temperature, 0.5);
  EXPECT_EQ(params.sampling.top_k, 3);
  EXPECT_EQ(params.sampling.seed, 7u);
  EXPECT_EQ(params.stop_token_ids, (std::vector<int32_t>{9, 10}));
  EXPECT_TRUE(params.eos_token_ids.empty());
}

}  // namespace
}  // namespace paceline
