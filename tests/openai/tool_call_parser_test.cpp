// Qwen3 <tool_call> blocks become OpenAI tool calls; streaming and whole-text parsing agree.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "server/tool_call_parser.h"

namespace paceline {
namespace {

constexpr uint64_t kSeed = 1234;

const std::string kTwoCalls =
    "Let me check.\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
    "\"Paris\", \"unit\": \"c\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", "
    "\"arguments\": {}}\n</tool_call>";

ToolCallParse stream(const std::string& text, size_t piece_size) {
  ToolCallStreamParser parser(kSeed);
  ToolCallParse out;
  auto take = [&](ToolCallStreamParser::Delta d) {
    out.content += d.content;
    for (auto& call : d.calls) out.calls.push_back(std::move(call));
  };
  for (size_t i = 0; i < text.size(); i += piece_size)
    take(parser.push(text.substr(i, piece_size)));
  take(parser.flush());
  return out;
}

void expect_same(const ToolCallParse& a, const ToolCallParse& b) {
  EXPECT_EQ(a.content, b.content);
  ASSERT_EQ(a.calls.size(), b.calls.size());
  for (size_t i = 0; i < a.calls.size(); ++i) {
    EXPECT_EQ(a.calls[i].index, b.calls[i].index);
    EXPECT_EQ(a.calls[i].id, b.calls[i].id);
    EXPECT_EQ(a.calls[i].name, b.calls[i].name);
    EXPECT_EQ(a.calls[i].arguments, b.calls[i].arguments);
  }
}

TEST(ToolCalls, BlocksBecomeCallsAndTheRestIsContent) {
  ToolCallParse parsed = parse_tool_calls(kTwoCalls, kSeed);
  EXPECT_EQ(parsed.content, "Let me check.");
  ASSERT_EQ(parsed.calls.size(), 2u);
  EXPECT_EQ(parsed.calls[0].index, 0u);
  EXPECT_EQ(parsed.calls[0].name, "get_weather");
  EXPECT_EQ(nlohmann::json::parse(parsed.calls[0].arguments),
            nlohmann::json::parse(R"({"city":"Paris","unit":"c"})"));
  EXPECT_EQ(parsed.calls[0].arguments, R"({"city":"Paris","unit":"c"})");  // key order kept
  EXPECT_EQ(parsed.calls[1].index, 1u);
  EXPECT_EQ(parsed.calls[1].name, "get_time");
  EXPECT_EQ(parsed.calls[1].arguments, "{}");
}

TEST(ToolCalls, IdsAreCallUnderscoreTwentyFourHexAndDeterministic) {
  std::string id = tool_call_id(kSeed, 0);
  ASSERT_EQ(id.size(), 5u + 24u);
  EXPECT_EQ(id.substr(0, 5), "call_");
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef", 5), std::string::npos);
  EXPECT_EQ(id, tool_call_id(kSeed, 0));
  EXPECT_NE(id, tool_call_id(kSeed, 1));
  EXPECT_NE(id, tool_call_id(kSeed + 1, 0));
  EXPECT_EQ(parse_tool_calls(kTwoCalls, kSeed).calls[1].id, tool_call_id(kSeed, 1));
}

TEST(ToolCalls, StreamingInAnyPieceSizeEqualsWholeText) {
  ToolCallParse whole = parse_tool_calls(kTwoCalls, kSeed);
  for (size_t size : {1u, 2u, 3u, 5u, 7u, 11u, 64u}) {
    SCOPED_TRACE(size);
    expect_same(stream(kTwoCalls, size), whole);
  }
}

TEST(ToolCalls, StreamingEmitsEachCallWholeWhenItsBlockCloses) {
  ToolCallStreamParser parser(kSeed);
  ToolCallStreamParser::Delta a = parser.push("Hi <tool_call>\n{\"name\": \"f\", ");
  EXPECT_EQ(a.content, "Hi");
  EXPECT_TRUE(a.calls.empty());
  ToolCallStreamParser::Delta b = parser.push("\"arguments\": {\"x\": 1}}\n</tool_call>");
  ASSERT_EQ(b.calls.size(), 1u);
  EXPECT_EQ(b.calls[0].arguments, R"({"x":1})");
  EXPECT_EQ(parser.num_calls(), 1u);
}

TEST(ToolCalls, ContentWithoutBlocksPassesThroughAsItStreams) {
  ToolCallStreamParser parser(kSeed);
  EXPECT_EQ(parser.push("Hello").content, "Hello");
  EXPECT_EQ(parser.push(" wor").content, " wor");
  EXPECT_EQ(parser.push("ld <").content, "ld");  // " <" held: a block might follow
  EXPECT_EQ(parser.push("b>").content, " <b>");
  EXPECT_EQ(parser.flush().content, "");
}

TEST(ToolCalls, MalformedBlocksStayContent) {
  for (std::string text : {
           "<tool_call>\nnot json\n</tool_call>",
           "<tool_call>\n{\"arguments\": {}}\n</tool_call>",
           "<tool_call>\n{\"name\": 3}\n</tool_call>",
           "<tool_call>\n{\"name\": \"f\", \"arguments\": [1]}\n</tool_call>",
           "<tool_call>\n[1, 2]\n</tool_call>",
       }) {
    SCOPED_TRACE(text);
    ToolCallParse parsed = parse_tool_calls(text, kSeed);
    EXPECT_TRUE(parsed.calls.empty());
    EXPECT_EQ(parsed.content, text);
    expect_same(stream(text, 3), parsed);
  }
}

TEST(ToolCalls, AnUnclosedBlockAtTheEndIsContent) {
  std::string text = "ok <tool_call>\n{\"name\": \"f\"";
  ToolCallParse parsed = parse_tool_calls(text, kSeed);
  EXPECT_TRUE(parsed.calls.empty());
  EXPECT_EQ(parsed.content, text);
  expect_same(stream(text, 1), parsed);
}

TEST(ToolCalls, ArgumentsGivenAsAStringAreKept) {
  ToolCallParse parsed = parse_tool_calls(
      "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}</tool_call>", kSeed);
  ASSERT_EQ(parsed.calls.size(), 1u);
  EXPECT_EQ(parsed.calls[0].arguments, "{\"a\": 1}");
  EXPECT_EQ(parsed.content, "");
}

TEST(ToolCalls, ContentAfterACallIsKept) {
  std::string text = "<tool_call>{\"name\": \"f\"}</tool_call>\n\nDone.\n";
  ToolCallParse parsed = parse_tool_calls(text, kSeed);
  EXPECT_EQ(parsed.calls.size(), 1u);
  EXPECT_EQ(parsed.content, "Done.\n");
  expect_same(stream(text, 1), parsed);
}

}  // namespace
}  // namespace paceline
