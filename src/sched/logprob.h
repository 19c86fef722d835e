#pragma once
// Log-probabilities of one logit row, as an executor reports them for a request that asked
// (OpenAI's `logprobs`): the chosen token's and the highest few. Values are vLLM's default
// "raw" logprobs, log_softmax of the model's logits before temperature, top-k/p or penalties.
#include <cstdint>
#include <vector>

namespace paceline {

// The most top logprobs any request may ask for (OpenAI's top_logprobs bound).
inline constexpr int32_t kMaxTopLogprobs = 20;

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
};

struct RowLogprobs {
  TokenLogprob chosen;             // the sampled token (for a prompt row: the next prompt token)
  std::vector<TokenLogprob> top;   // the k highest, descending (ties: lower id first)
};

}  // namespace paceline
