#pragma once
// How the next token is drawn from the logits. Randomness is a pure function of (seed, position),
// so a request samples the same tokens whatever it is batched with, on every executor.
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace paceline {

// One logit_bias entry: `bias` is added to the token's logit before anything else.
struct TokenBias {
  int32_t token = 0;
  float bias = 0.0f;
};

struct SamplingParams {
  double temperature = 1.0;  // 0 means greedy
  double top_p = 1.0;        // (0, 1]
  int64_t top_k = -1;        // -1 or 0: all tokens
  std::optional<uint64_t> seed;  // none: the engine assigns one per request
  // The logits processing of vLLM's sampler, in its order (src/exec/logits_processors.h): bias,
  // then repetition, frequency and presence penalties, all before greedy or temperature; min_p
  // after temperature, before top-k and top-p (so greedy ignores it).
  double min_p = 0.0;               // [0, 1]; 0: off
  double presence_penalty = 0.0;    // [-2, 2], on tokens of the output so far
  double frequency_penalty = 0.0;   // [-2, 2], times the token's count in the output so far
  double repetition_penalty = 1.0;  // > 0, on tokens of the prompt or the output; 1: off
  // Sorted by token, one entry per token; shared, so that a plan's copy of the parameters each
  // step costs no allocation.
  std::shared_ptr<const std::vector<TokenBias>> logit_bias;

  bool greedy() const { return temperature <= 0.0 || top_k == 1; }
  bool has_penalties() const {
    return presence_penalty != 0.0 || frequency_penalty != 0.0 || repetition_penalty != 1.0;
  }
  // Whether the logits are changed before the draw (bias or penalties; min_p is the draw's).
  bool adjusts_logits() const { return has_penalties() || (logit_bias && !logit_bias->empty()); }
};

}  // namespace paceline
