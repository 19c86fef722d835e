#pragma once
// Draws the next token from one row of logits. Greedy is argmax (lowest index on ties).
// Otherwise: temperature, then min_p (drops the tokens less than min_p times as likely as the most
// likely one, as vLLM), then top-k, then top-p (nucleus) over the candidates sorted by
// probability (ties: lower index first), then one draw whose uniform number is a pure function
// of (seed, position). A request therefore samples the same tokens whatever it is batched with,
// and any executor that hands the same logits here gets the same token. Bias and penalties are
// applied before, by the logits processing (exec/logits_processors.h).
#include <cstdint>
#include <span>

#include "sched/sampling_params.h"

namespace paceline {

int32_t sample_token(std::span<const float> logits, const SamplingParams& params, uint64_t seed,
                     int64_t position);

// Index of the largest logit, the lowest index among equals.
int32_t sample_greedy(std::span<const float> logits);

// A uniform number in [0, 1) from a counter-based hash (splitmix64 finalizer) of the pair.
double sample_uniform(uint64_t seed, int64_t position);

}  // namespace paceline
