// Qwen3's <think> part becomes reasoning_content, the rest content, streamed or not.
#include <string>

#include <gtest/gtest.h>

#include "server/reasoning_parser.h"

namespace paceline {
namespace {

ReasoningSplit stream(std::string_view text, ReasoningMode mode, size_t piece_size) {
  ReasoningStreamParser parser(mode);
  std::string reasoning, content;
  auto take = [&](const ReasoningStreamParser::Delta& d) {
    reasoning += d.reasoning;
    content += d.content;
  };
  for (size_t i = 0; i < text.size(); i += piece_size)
    take(parser.push(text.substr(i, piece_size)));
  take(parser.flush());
  ReasoningSplit split;
  split.content = content;
  if (parser.saw_reasoning()) split.reasoning = reasoning;
  return split;
}

TEST(Reasoning, ModeFollowsEnableThinkingAndThePrompt) {
  EXPECT_EQ(reasoning_mode_for(false, "<|im_start|>assistant\n<think>\n\n</think>\n\n"),
            ReasoningMode::kOff);
  EXPECT_EQ(reasoning_mode_for(std::nullopt, "<|im_start|>assistant\n"), ReasoningMode::kTagged);
  EXPECT_EQ(reasoning_mode_for(true, "<|im_start|>assistant\n"), ReasoningMode::kTagged);
  EXPECT_EQ(reasoning_mode_for(true, "<|im_start|>assistant\n<think>\n"),
            ReasoningMode::kStartsInside);
}

TEST(Reasoning, Qwen3ThinkingOutputIsSplit) {
  ReasoningSplit split =
      split_reasoning("<think>\nThe user greets.\n</think>\n\nHello!", ReasoningMode::kTagged);
  EXPECT_EQ(split.reasoning, "The user greets.");
  EXPECT_EQ(split.content, "Hello!");
}

TEST(Reasoning, ThinkingOffIsAllContent) {
  ReasoningSplit split = split_reasoning("<think>x</think>Hello", ReasoningMode::kOff);
  EXPECT_FALSE(split.reasoning.has_value());
  EXPECT_EQ(split.content, "<think>x</think>Hello");
}

TEST(Reasoning, NoThinkBlockIsAllContent) {
  ReasoningSplit split = split_reasoning("Just an answer.", ReasoningMode::kTagged);
  EXPECT_FALSE(split.reasoning.has_value());
  EXPECT_EQ(split.content, "Just an answer.");
}

TEST(Reasoning, OutputThatStartsInsideTheBlock) {
  // The prompt opened <think>: the output has only the close tag.
  ReasoningSplit split = split_reasoning("\nhmm\n</think>\n\nAnswer", ReasoningMode::kStartsInside);
  EXPECT_EQ(split.reasoning, "hmm");
  EXPECT_EQ(split.content, "Answer");
  // Whole-text parsing also recognizes it without the prompt's hint.
  ReasoningSplit tagged = split_reasoning("hmm</think>Answer", ReasoningMode::kTagged);
  EXPECT_EQ(tagged.reasoning, "hmm");
  EXPECT_EQ(tagged.content, "Answer");
}

TEST(Reasoning, TruncatedThinkingIsAllReasoning) {
  ReasoningSplit split = split_reasoning("<think>\nstill thinking", ReasoningMode::kTagged);
  EXPECT_EQ(split.reasoning, "still thinking");
  EXPECT_EQ(split.content, "");
}

TEST(Reasoning, EmptyThinkBlock) {
  ReasoningSplit split = split_reasoning("<think>\n\n</think>\n\nHi", ReasoningMode::kTagged);
  EXPECT_EQ(split.reasoning, "");
  EXPECT_EQ(split.content, "Hi");
}

TEST(Reasoning, StreamingInAnyPieceSizeEqualsWholeText) {
  for (std::string text : {
           std::string("<think>\nLet me think.\nStep 2.\n</think>\n\nThe answer\n is 4."),
           std::string("<think></think>x"),
           std::string("plain </think> text"),
           std::string("<thin"),
           std::string("  <think>a\n\n</thi"),
       }) {
    for (ReasoningMode mode :
         {ReasoningMode::kOff, ReasoningMode::kTagged, ReasoningMode::kStartsInside}) {
      ReasoningSplit whole = stream(text, mode, text.size());
      for (size_t size : {1u, 2u, 3u, 5u}) {
        SCOPED_TRACE(text + " / " + std::to_string(size));
        ReasoningSplit pieces = stream(text, mode, size);
        EXPECT_EQ(pieces.reasoning, whole.reasoning);
        EXPECT_EQ(pieces.content, whole.content);
      }
    }
  }
}

TEST(Reasoning, StreamingSendsReasoningAsItComes) {
  ReasoningStreamParser parser(ReasoningMode::kTagged);
  EXPECT_EQ(parser.push("<think>").reasoning, "");
  EXPECT_EQ(parser.push("\nI wonder").reasoning, "I wonder");
  ReasoningStreamParser::Delta d = parser.push("\n</think>\n\nYes");
  EXPECT_EQ(d.reasoning, "");
  EXPECT_EQ(d.content, "Yes");
  EXPECT_EQ(parser.push(" indeed").content, " indeed");
}

TEST(Reasoning, AContentStreamStartsAtOnceWhenNoThinkTagCanCome) {
  ReasoningStreamParser parser(ReasoningMode::kTagged);
  EXPECT_EQ(parser.push("Hello").content, "Hello");
}

}  // namespace
}  // namespace paceline
