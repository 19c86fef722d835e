// The Qwen3 chat template (third_party/qwen3-tokenizer's tokenizer_config.json, run by the Jinja
// interpreter), case by case. Every expected string was rendered by jinja2 with that template,
// configured as Hugging Face transformers configures it.
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "model/chat_message.h"
#include "model/chat_template.h"

namespace paceline {
namespace {

using Json = nlohmann::ordered_json;

std::string render(const char* messages, const char* tools = "null",
                   bool add_generation_prompt = false,
                   std::optional<bool> enable_thinking = std::nullopt) {
  ChatTemplateOptions options;
  options.add_generation_prompt = add_generation_prompt;
  options.enable_thinking = enable_thinking;
  static const ChatTemplate qwen3 =
      *ChatTemplate::from_tokenizer_folder(std::string(PACELINE_SOURCE_DIR) + "/third_party/qwen3-tokenizer");
  return qwen3.render(Json::parse(messages), Json::parse(tools), options);
}

constexpr const char* kHi = R"([{"role": "user", "content": "Hi"}])";

TEST(ChatTemplate, GenerationPromptOpensAnAssistantTurn) {
  EXPECT_EQ(render(kHi, "null", true), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(render(kHi, "null", false), "<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatTemplate, OnlyEnableThinkingFalsePrefillsAnEmptyThinkBlock) {
  EXPECT_EQ(render(kHi, "null", true, false),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  EXPECT_EQ(render(kHi, "null", true, true), render(kHi, "null", true));
  // Without a generation prompt, enable_thinking has nothing to add to.
  EXPECT_EQ(render(kHi, "null", false, false), render(kHi, "null", false));
}

TEST(ChatTemplate, FirstSystemMessageLeadsAndLaterOnesRenderInPlace) {
  EXPECT_EQ(
      render(R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                      {"role": "system", "content": "Late."}])"),
      "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
      "<|im_start|>system\nLate.<|im_end|>\n");
}

TEST(ChatTemplate, ToolsJoinTheSystemMessageOneTojsonLineEach) {
  const char* messages =
      R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather?"}])";
  const char* tools = R"([{"type": "function", "function": {"name": "get_weather", "parameters":
      {"type": "object", "properties": {"city": {"type": "string",
      "description": "Zürich \"quoted\""}}, "required": ["city"]}}}, {"name": "noop"}])";
  EXPECT_EQ(
      render(messages, tools, true),
      "<|im_start|>system\nBe brief.\n\n# Tools\n\nYou may call one or more functions to assist "
      "with the user query.\n\nYou are provided with function signatures within <tools></tools> "
      "XML tags:\n<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", "
      "\"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\", "
      "\"description\": \"Zürich \\\"quoted\\\"\"}}, \"required\": [\"city\"]}}}\n{\"name\": "
      "\"noop\"}\n</tools>\n\nFor each function call, return a json object with function name and "
      "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
      "<function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n"
      "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, EmptyToolListIsNoTools) {
  const char* messages =
      R"([{"role": "system", "content": "S"}, {"role": "user", "content": "Q"}])";
  EXPECT_EQ(render(messages, "[]", true, true),
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatTemplate, ThinkingIsKeptOnlyAfterTheLastQuery) {
  EXPECT_EQ(render(R"([{"role": "user", "content": "Q1"},
                      {"role": "assistant", "content": "A1", "reasoning_content": "R1"},
                      {"role": "user", "content": "Q2"},
                      {"role": "assistant", "content": "\n\nA2", "reasoning_content": "\nR2\n"}])"),
            "<|im_start|>user\nQ1<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n"
            "<|im_start|>user\nQ2<|im_end|>\n<|im_start|>assistant\n<think>\nR2\n</think>\n\nA2"
            "<|im_end|>\n");
}

TEST(ChatTemplate, ThinkTagsInContentSplitLikePythonStrSplit) {
  // Reasoning: before the first </think>, after the last <think>; answer: after the last </think>.
  EXPECT_EQ(render(R"([{"role": "user", "content": "Q"}, {"role": "assistant",
                      "content": "<think>\nfirst</think>mid</think>\n\nanswer"}])"),
            "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n<think>\nfirst\n</think>\n\n"
            "answer<|im_end|>\n");
  // Before the last query the thinking is dropped, and the answer keeps only its own text.
  EXPECT_EQ(render(R"([{"role": "user", "content": "Q"},
                      {"role": "assistant", "content": "<think>\nR\n</think>\n\nA"},
                      {"role": "user", "content": "Q2"}])",
                   "null", true),
            "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\nA<|im_end|>\n"
            "<|im_start|>user\nQ2<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, ToolCallsAndGroupedToolResponsesInAMultiStepTurn) {
  // The wrapped <tool_response> user message is not a query, so thinking after Q is kept.
  EXPECT_EQ(
      render(R"([{"role": "user", "content": "Weather in Paris?"},
          {"role": "assistant", "content": "", "reasoning_content": "Need the tool.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather",
             "arguments": {"city": "Paris", "days": 2, "unit": null}}},
            {"name": "get_time", "arguments": "{\"tz\": \"CET\"}"}]},
          {"role": "tool", "content": "18C"}, {"role": "tool", "content": "12:00"},
          {"role": "user", "content": "<tool_response>\nlate\n</tool_response>"},
          {"role": "assistant", "content": "Sunny.", "reasoning_content": "Got it."}])"),
      "<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n<think>\nNeed the "
      "tool.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\", \"days\": 2, \"unit\": null}}\n</tool_call>\n<tool_call>\n{\"name\": "
      "\"get_time\", \"arguments\": {\"tz\": \"CET\"}}\n</tool_call><|im_end|>\n<|im_start|>user\n"
      "<tool_response>\n18C\n</tool_response>\n<tool_response>\n12:00\n</tool_response><|im_end|>\n"
      "<|im_start|>user\n<tool_response>\nlate\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
      "<think>\nGot it.\n</think>\n\nSunny.<|im_end|>\n");
}

TEST(ChatTemplate, MiddleAssistantWithoutReasoningGetsNoThinkBlockButTheLastDoes) {
  EXPECT_EQ(render(R"([{"role": "user", "content": "Q"}, {"role": "assistant", "content": "\nA",
                      "tool_calls": [{"function": {"name": "f", "arguments": {}}}]},
                      {"role": "tool", "content": "ok"}, {"role": "assistant", "content": "done"}])"),
            "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n\nA\n<tool_call>\n{\"name\": "
            "\"f\", \"arguments\": {}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n"
            "ok\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\ndone"
            "<|im_end|>\n");
}

TEST(ChatTemplate, ToolMessageContentPrintsAsJinjaPrintsIt) {
  EXPECT_EQ(render(R"([{"role": "user", "content": "Q"}, {"role": "tool", "content": null},
                      {"role": "tool"}])"),
            "<|im_start|>user\nQ<|im_end|>\n<|im_start|>user\n<tool_response>\nNone\n"
            "</tool_response>\n<tool_response>\n\n</tool_response><|im_end|>\n");
}

TEST(ChatTemplate, AssistantNullOrMissingContentRendersAsEmpty) {
  // Hugging Face raises a TypeError here (`'</think>' in None`); paceline renders the null or
  // missing content as "" then, as vLLM does, since OpenAI clients send it with tool_calls.
  const std::string expected =
      "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n<tool_call>\n"
      "{\"name\": \"f\", \"arguments\": {\"x\": [1.0, 1e-05, 0.1, 1e+16, -0.0]}}\n</tool_call>"
      "<|im_end|>\n";
  const char* calls = R"("tool_calls": [{"function": {"name": "f",
                         "arguments": {"x": [1.0, 1e-05, 0.1, 1e+16, -0.0]}}}])";
  for (std::string content : {R"("content": "",)", R"("content": null,)", ""}) {
    std::string messages =
        R"([{"role": "user", "content": "Q"}, {"role": "assistant", )" + content + calls + "}]";
    EXPECT_EQ(render(messages.c_str()), expected) << content;
  }
}

// What the server checks before rendering (chat_messages_from_json), and the tools argument.
void expect_error(const char* messages, const char* tools, const std::string& says) {
  try {
    chat_messages_from_json(Json::parse(messages));
    render(messages, tools);
    ADD_FAILURE() << "no error for " << messages;
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr(says));
  }
}

TEST(ChatTemplate, InvalidInputNamesTheMessageAndField) {
  expect_error("{}", "null", "must be an array");
  expect_error("[]", "null", "must not be empty");
  expect_error(R"([{"role": "user", "content": "Q"}, 3])", "null", "messages[1] must be an object");
  expect_error(R"([{"content": "Q"}])", "null", "messages[0]: 'role' must be a string");
  expect_error(R"([{"role": "developer", "content": "Q"}])", "null",
               "messages[0]: unknown role 'developer'");
  expect_error(R"([{"role": "user", "content": null}])", "null",
               "messages[0] (user): 'content' must be a string");
  expect_error(R"([{"role": "system"}])", "null", "messages[0] (system): 'content' must be");
  expect_error(R"([{"role": "user", "content": [{"type": "text", "text": "Q"}]}])", "null",
               "got array");
  expect_error(R"([{"role": "assistant", "content": "", "reasoning_content": 1}])", "null",
               "messages[0]: 'reasoning_content' must be a string or null");
  expect_error(R"([{"role": "assistant", "content": "", "tool_calls": {}}])", "null",
               "messages[0]: 'tool_calls' must be an array");
  expect_error(R"([{"role": "assistant", "content": "", "tool_calls": [{"function": {}}]}])",
               "null", "messages[0].tool_calls[0]: function 'name' must be a string");
  expect_error(R"([{"role": "assistant", "content": "", "tool_calls": [{"name": "f"}]}])", "null",
               "messages[0].tool_calls[0]: function 'arguments' is missing");
  expect_error(kHi, "{}", "tools must be null or an array");
}

}  // namespace
}  // namespace paceline
