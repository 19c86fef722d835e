#pragma once
// The logits processing between the forward and the draw, with vLLM's semantics: logit_bias, then
// the repetition penalty (tokens of the prompt or the output), then the frequency and presence
// penalties (tokens of the output). It runs on a copy of the row (CPU) or just before the sampling
// kernel (CUDA), after anything that reads the raw logits; min_p belongs to the draw
// (sample_token). Both executors build the same sparse adjustments here and apply them with
// adjusted_logit, so they draw from the same processed logits. A row whose parameters ask for
// none of it is not touched and costs nothing.
#include <cstdint>
#include <span>
#include <vector>

#include "exec/logit_adjustment.h"
#include "sched/step_plan.h"

namespace paceline {

// Appends one adjustment (tagged `row`) per token the row's bias or penalties change, in no
// particular order. `history` is the prompt then the output, the output starting at
// num_prompt_tokens. O(entries of logit_bias + tokens of history), with no sort: a long prompt
// with a repetition penalty costs one pass per step. Throws when a token is outside [0, vocab).
void append_logit_adjustments(const SamplingParams& params, std::span<const int32_t> history,
                              int64_t num_prompt_tokens, int64_t vocab, int32_t row,
                              std::vector<LogitAdjustment>& out);

// logits[a.token] = adjusted_logit(logits[a.token], a) for each adjustment (tokens distinct).
void apply_logit_adjustments(std::span<float> logits, std::span<const LogitAdjustment> adjustments);

// The token of one row of `seq`: sample_token on the row itself when seq's parameters adjust
// nothing, else on a processed copy (the caller's logits stay raw).
int32_t sample_processed(std::span<const float> logits, const ScheduledSeq& seq, int64_t position);

}  // namespace paceline
