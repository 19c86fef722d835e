// OpenAI stream chunks: which carry content, the usage chunk, [DONE], errors in and out of band.
#include <gtest/gtest.h>

#include <string>

#include "bench/sse_openai.h"

namespace paceline::bench {
namespace {

TEST(OpenAiChunk, ContentReasoningAndToolCallsCount) {
  EXPECT_TRUE(parse_openai_chunk(R"({"choices":[{"index":0,"delta":{"content":"Hi"}}]})").content);
  EXPECT_TRUE(parse_openai_chunk(R"({"choices":[{"delta":{"reasoning_content":"hmm"}}]})").content);
  EXPECT_TRUE(parse_openai_chunk(R"({"choices":[{"delta":{"reasoning":"hmm"}}]})").content);
  EXPECT_TRUE(
      parse_openai_chunk(
          R"({"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}]})")
          .content);
  EXPECT_TRUE(parse_openai_chunk(R"({"choices":[{"index":0,"text":" the"}]})").content);
}

TEST(OpenAiChunk, RoleEmptyAndFinishChunksDoNot) {
  EXPECT_FALSE(
      parse_openai_chunk(R"({"choices":[{"delta":{"role":"assistant","content":""}}]})").content);
  EXPECT_FALSE(
      parse_openai_chunk(R"({"choices":[{"delta":{},"finish_reason":"length"}]})").content);
  EXPECT_FALSE(parse_openai_chunk(R"({"choices":[{"delta":{"content":null}}]})").content);
  EXPECT_FALSE(parse_openai_chunk(R"({"choices":[{"delta":{"tool_calls":[]}}]})").content);
  EXPECT_FALSE(parse_openai_chunk(R"({"choices":[{"text":""}]})").content);
}

TEST(OpenAiChunk, UsageOnlyChunkIsNoContent) {
  OpenAiChunk c = parse_openai_chunk(
      R"({"id":"x","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":7,)"
      R"("total_tokens":127,"prompt_tokens_details":{"cached_tokens":64}}})");
  EXPECT_FALSE(c.content);
  ASSERT_TRUE(c.usage);
  EXPECT_EQ(c.usage->prompt_tokens, 120);
  EXPECT_EQ(c.usage->completion_tokens, 7);
  EXPECT_EQ(c.usage->cached_tokens, 64);
  // Without details the cached count is unknown; a null usage is no usage.
  c = parse_openai_chunk(R"({"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}})");
  ASSERT_TRUE(c.usage);
  EXPECT_EQ(c.usage->cached_tokens, -1);
  EXPECT_FALSE(parse_openai_chunk(R"({"choices":[{"delta":{"content":"a"}}],"usage":null})").usage);
}

TEST(OpenAiChunk, DoneAndErrors) {
  EXPECT_TRUE(parse_openai_chunk("[DONE]").done);
  OpenAiChunk e = parse_openai_chunk(
      R"({"error":{"object":"error","message":"maximum context length is 40960","code":400}})");
  EXPECT_TRUE(e.error);
  EXPECT_EQ(e.error_status, 400);
  EXPECT_EQ(e.error_text, "maximum context length is 40960");
  e = parse_openai_chunk(R"({"error":"boom"})");
  EXPECT_TRUE(e.error);
  EXPECT_EQ(e.error_status, 500);
  EXPECT_EQ(e.error_text, "boom");
  e = parse_openai_chunk("not json");
  EXPECT_TRUE(e.error);
  EXPECT_NE(e.error_text.find("malformed"), std::string::npos);
}

TEST(OpenAiChunk, ErrorBodies) {
  EXPECT_EQ(
      error_message_from_body(
          R"({"error":{"message":"'messages' is required.","type":"invalid_request_error"}})"),
      "'messages' is required.");
  EXPECT_EQ(error_message_from_body(R"({"object":"error","message":"model not found"})"),
            "model not found");
  EXPECT_EQ(error_message_from_body(R"({"detail":"Not Found"})"), "Not Found");
  EXPECT_EQ(error_message_from_body("upstream timed out"), "upstream timed out");
  EXPECT_LT(error_message_from_body(std::string(10000, 'x')).size(), 2100u);
}

TEST(OpenAiStreamReader, CountsContentAndKeepsTheLastUsage) {
  const std::string stream =
      "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}]}\n\n"
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":2,"
      "\"prompt_tokens_details\":{\"cached_tokens\":0}}}\n\n"
      "data: [DONE]\n\n";
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    OpenAiStreamReader reader;
    auto a = reader.feed(std::string_view(stream).substr(0, cut));
    auto b = reader.feed(std::string_view(stream).substr(cut));
    EXPECT_EQ(a.content_chunks + b.content_chunks, 2) << cut;
    EXPECT_TRUE(a.done || b.done) << cut;
    EXPECT_TRUE(reader.usage_seen());
    EXPECT_EQ(reader.usage().prompt_tokens, 10);
    EXPECT_EQ(reader.usage().completion_tokens, 2);
    EXPECT_EQ(reader.usage().cached_tokens, 0);
  }
}

TEST(OpenAiStreamReader, NoUsageAndNoDone) {
  OpenAiStreamReader reader;
  auto s = reader.feed(
      "data: {\"choices\":[{\"text\":\"x\"}]}\n\ndata: {\"choices\":[{\"text\":\"y\"}]}");
  EXPECT_EQ(s.content_chunks, 1);
  s = reader.finish();  // the server closed without a blank line or [DONE]
  EXPECT_EQ(s.content_chunks, 1);
  EXPECT_FALSE(s.done);
  EXPECT_FALSE(reader.usage_seen());
  EXPECT_EQ(reader.usage().completion_tokens, -1);
}

TEST(OpenAiStreamReader, AnErrorEndsTheStream) {
  OpenAiStreamReader reader;
  auto s = reader.feed(
      "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n"
      "data: {\"error\":{\"message\":\"engine died\",\"code\":500}}\n\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n");
  EXPECT_EQ(s.content_chunks, 1);
  EXPECT_TRUE(s.error);
  EXPECT_EQ(s.error_status, 500);
  EXPECT_EQ(s.error_text, "engine died");
}

}  // namespace
}  // namespace paceline::bench
