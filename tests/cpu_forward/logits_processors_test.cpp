// The logits processing before the draw, field by field on hand-made rows, as vLLM defines it:
// logit_bias adds to a token's logit; repetition_penalty divides a positive logit and multiplies
// a negative one for tokens of the prompt or the output; frequency_penalty subtracts its value
// times the token's count in the output and presence_penalty its value once, for output tokens
// only; bias first, then repetition, then frequency and presence. A row without any of them is
// left alone.
#include "exec/logits_processors.h"

#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "base/error.h"
#include "exec/sampler.h"

namespace paceline {
namespace {

// The processed row: `logits` after the adjustments params and history ask for.
std::vector<float> processed(std::vector<float> logits, const SamplingParams& params,
                             const std::vector<int32_t>& history = {}, int64_t prompt = 0) {
  std::vector<LogitAdjustment> adjustments;
  append_logit_adjustments(params, history, prompt, static_cast<int64_t>(logits.size()), 0,
                           adjustments);
  apply_logit_adjustments(logits, adjustments);
  return logits;
}

SamplingParams with_bias(std::vector<TokenBias> biases) {
  SamplingParams p;
  p.logit_bias = std::make_shared<const std::vector<TokenBias>>(std::move(biases));
  return p;
}

const std::vector<float> kRow = {2.0f, -1.0f, 0.5f, 3.0f, -2.0f};

TEST(LogitsProcessors, NoFieldsNoAdjustments) {
  std::vector<LogitAdjustment> adjustments;
  append_logit_adjustments(SamplingParams{}, std::vector<int32_t>{0, 1, 2, 3}, 2, 5, 0,
                           adjustments);
  EXPECT_TRUE(adjustments.empty());
  EXPECT_EQ(processed(kRow, SamplingParams{}, {0, 1, 2}, 1), kRow);
}

TEST(LogitsProcessors, LogitBiasAddsToTheNamedTokens) {
  EXPECT_EQ(processed(kRow, with_bias({{1, 5.0f}, {3, -100.0f}})),
            (std::vector<float>{2.0f, 4.0f, 0.5f, -97.0f, -2.0f}));
}

TEST(LogitsProcessors, LargeBiasForcesTheGreedyTokenAndMinusHundredBansIt) {
  ScheduledSeq seq;
  seq.sampling = with_bias({{4, 100.0f}});
  seq.sampling.temperature = 0.0;
  EXPECT_EQ(sample_processed(kRow, seq, 0), 4);
  seq.sampling = with_bias({{3, -100.0f}, {0, -100.0f}});
  seq.sampling.temperature = 1.0;
  for (int64_t pos = 0; pos < 200; ++pos) {
    const int32_t t = sample_processed(kRow, seq, pos);
    EXPECT_NE(t, 3);
    EXPECT_NE(t, 0);
  }
}

TEST(LogitsProcessors, PresencePenaltyOnceForEachOutputTokenNotThePrompt) {
  SamplingParams p;
  p.presence_penalty = 1.5;
  // Prompt {0, 3}, output {2, 2, 4}: only 2 and 4 pay, once each.
  EXPECT_EQ(processed(kRow, p, {0, 3, 2, 2, 4}, 2),
            (std::vector<float>{2.0f, -1.0f, -1.0f, 3.0f, -3.5f}));
}

TEST(LogitsProcessors, FrequencyPenaltyTimesTheOutputCount) {
  SamplingParams p;
  p.frequency_penalty = 0.5;
  EXPECT_EQ(processed(kRow, p, {0, 3, 2, 2, 2, 4}, 2),
            (std::vector<float>{2.0f, -1.0f, -1.0f, 3.0f, -2.5f}));
  // Negative values encourage repetition.
  p.frequency_penalty = -1.0;
  EXPECT_EQ(processed(kRow, p, {2, 2}, 0), (std::vector<float>{2.0f, -1.0f, 2.5f, 3.0f, -2.0f}));
}

TEST(LogitsProcessors, RepetitionPenaltyDividesPositiveMultipliesNegativeOverPromptAndOutput) {
  SamplingParams p;
  p.repetition_penalty = 2.0;
  // Prompt {0, 1}, output {4}: 0 (positive) halves, 1 and 4 (negative) double; 2, 3 unseen.
  EXPECT_EQ(processed(kRow, p, {0, 1, 4}, 2), (std::vector<float>{1.0f, -2.0f, 0.5f, 3.0f, -4.0f}));
  // Below 1 it rewards repetition.
  p.repetition_penalty = 0.5;
  EXPECT_EQ(processed(kRow, p, {3}, 1), (std::vector<float>{2.0f, -1.0f, 0.5f, 6.0f, -2.0f}));
}

TEST(LogitsProcessors, BiasThenRepetitionThenFrequencyAndPresence) {
  SamplingParams p = with_bias({{2, 1.5f}});
  p.repetition_penalty = 2.0;
  p.frequency_penalty = 0.25;
  p.presence_penalty = 0.5;
  // Token 2: (0.5 + 1.5) / 2 - 0.25 * 2 - 0.5 = 0.
  EXPECT_EQ(processed(kRow, p, {1, 2, 2}, 1)[2], 0.0f);
}

TEST(LogitsProcessors, PenaltiesStopGreedyRepetition) {
  ScheduledSeq seq;
  seq.sampling.temperature = 0.0;
  seq.sampling.presence_penalty = 2.0;
  const std::vector<int32_t> history = {1, 3};  // token 3 (the argmax) already in the output
  seq.history = history;
  seq.num_prompt_tokens = 1;
  EXPECT_EQ(sample_processed(kRow, seq, 0), 0);
  // The caller's row is not changed.
  EXPECT_EQ(kRow[3], 3.0f);
}

TEST(LogitsProcessors, TokenOutsideTheVocabularyIsAnError) {
  std::vector<LogitAdjustment> adjustments;
  EXPECT_THROW(append_logit_adjustments(with_bias({{5, 1.0f}}), {}, 0, 5, 0, adjustments), Error);
  SamplingParams p;
  p.presence_penalty = 1.0;
  EXPECT_THROW(append_logit_adjustments(p, std::vector<int32_t>{7}, 0, 5, 0, adjustments), Error);
  EXPECT_TRUE(adjustments.empty());
  // And the table of slots is clean afterwards: a later call counts from zero.
  append_logit_adjustments(p, std::vector<int32_t>{2}, 0, 5, 3, adjustments);
  ASSERT_EQ(adjustments.size(), 1u);
  EXPECT_EQ(adjustments[0].row, 3);
  EXPECT_EQ(adjustments[0].offset, 1.0f);
}

}  // namespace
}  // namespace paceline
