#pragma once
// How the next token is drawn from the logits. Randomness is a pure function of (seed, position),
// so a request samples the same tokens whatever it is batched with, on every executor.
#include <cstdint>
#include <optional>

namespace paceline {

struct SamplingParams {
  double temperature = 1.0;  // 0 means greedy
  double top_p = 1.0;        // (0, 1]
  int64_t top_k = -1;        // -1 or 0: all tokens
  std::optional<uint64_t> seed;  // none: the engine assigns one per request

  bool greedy() const { return temperature <= 0.0 || top_k == 1; }
};

}  // namespace paceline
