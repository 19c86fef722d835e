#pragma once
// Log-probabilities of a row of logits for the requests that ask for them (OpenAI `logprobs`):
// log_softmax of the raw logits, before temperature, top-k/p or penalties (vLLM's default
// `raw_logprobs`). The CPU executor calls these on its rows; the CUDA executor's kernel
// (cuda/logprobs.cu) computes the same and is tested against them.
#include <cstdint>
#include <span>
#include <vector>

#include "sched/logprob.h"

namespace paceline {

// log(sum(exp(logits))), in double, the maximum taken out first so that nothing overflows.
double log_sum_exp(std::span<const float> logits);

// The `count` largest logits as logprobs (logit - lse), descending; ties: lower id first.
std::vector<TokenLogprob> top_logprobs(std::span<const float> logits, double lse, int32_t count);

// The chosen token's logprob and the `num_top` highest (num_top in [0, kMaxTopLogprobs]).
RowLogprobs row_logprobs(std::span<const float> logits, int32_t chosen, int32_t num_top);

}  // namespace paceline
