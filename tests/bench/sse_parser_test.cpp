// SSE framing: events come out whole however the bytes are split.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bench/sse_parser.h"

namespace paceline::bench {
namespace {

std::vector<SseEvent> parse_in_pieces(const std::string& stream, const std::vector<size_t>& cuts) {
  SseParser parser;
  std::vector<SseEvent> out;
  size_t pos = 0;
  for (size_t cut : cuts) {
    parser.feed(std::string_view(stream).substr(pos, cut - pos), out);
    pos = cut;
  }
  parser.feed(std::string_view(stream).substr(pos), out);
  parser.finish(out);
  return out;
}

std::vector<std::string> data_of(const std::vector<SseEvent>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.data);
  return out;
}

TEST(SseParser, SplitsEventsOnBlankLines) {
  auto events = parse_in_pieces("data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: [DONE]\n\n", {});
  EXPECT_EQ(data_of(events), (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}", "[DONE]"}));
}

TEST(SseParser, EverySplitPointGivesTheSameEvents) {
  const std::string stream =
      ": ping\r\n\r\ndata: {\"x\":\"caf\xc3\xa9\"}\r\n\r\nevent: error\r\ndata: one\r\ndata: "
      "two\r\n\r\n"
      "data:no-space\n\ndata: [DONE]\r\n\r\n";
  const std::vector<std::string> want = {"{\"x\":\"caf\xc3\xa9\"}", "one\ntwo", "no-space",
                                         "[DONE]"};
  for (size_t a = 0; a <= stream.size(); ++a) {
    EXPECT_EQ(data_of(parse_in_pieces(stream, {a})), want) << "split at " << a;
    for (size_t b = a; b <= stream.size(); b += 7) {
      ASSERT_EQ(data_of(parse_in_pieces(stream, {a, b})), want) << "splits at " << a << ", " << b;
    }
  }
  // Byte by byte.
  std::vector<size_t> every;
  for (size_t i = 1; i < stream.size(); ++i) every.push_back(i);
  auto events = parse_in_pieces(stream, every);
  EXPECT_EQ(data_of(events), want);
  EXPECT_EQ(events[1].event, "error");
  EXPECT_EQ(events[0].event, "");
}

TEST(SseParser, CarriageReturnAloneEndsALine) {
  EXPECT_EQ(data_of(parse_in_pieces("data: a\r\rdata: b\r\r", {8})),
            (std::vector<std::string>{"a", "b"}));
}

TEST(SseParser, CommentsAndOtherFieldsAreIgnored) {
  auto events = parse_in_pieces(": keep-alive\n\nid: 7\nretry: 100\n\ndata: x\nid: 8\n\n", {});
  EXPECT_EQ(data_of(events), (std::vector<std::string>{"x"}));
}

TEST(SseParser, FinishDispatchesAnUnterminatedEvent) {
  SseParser parser;
  std::vector<SseEvent> out;
  parser.feed("data: [DO", out);
  parser.feed("NE]", out);
  EXPECT_TRUE(out.empty());
  EXPECT_GT(parser.buffered_bytes(), 0u);
  parser.finish(out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].data, "[DONE]");
  EXPECT_EQ(parser.buffered_bytes(), 0u);
}

TEST(SseParser, EmptyDataLineIsAnEmptyEvent) {
  EXPECT_EQ(data_of(parse_in_pieces("data:\n\n\n\n", {})), (std::vector<std::string>{""}));
}

}  // namespace
}  // namespace paceline::bench
