#pragma once
// Rows of logits of a Qwen3-sized vocabulary in the shapes the GPU sampler and logprobs tests
// need: flat (a dummy model's), peaked (a trained model's), rounded to bf16 (many ties), and a
// handful of distinct values (ties everywhere).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace paceline::testing {

inline constexpr int64_t kLogitRowVocab = 151936;

inline std::vector<float> make_logit_rows(uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> rows;
  for (int kind = 0; kind < 4; ++kind) {
    for (int64_t i = 0; i < kLogitRowVocab; ++i) {
      float v = normal(rng);
      if (kind == 1) v = v * 3.0f + (i % 997 == 0 ? 12.0f : 0.0f);
      if (kind == 2) {
        uint32_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        bits &= 0xffff0000u;  // bf16
        std::memcpy(&v, &bits, sizeof bits);
      }
      if (kind == 3) v = static_cast<float>(static_cast<int>(std::abs(v) * 2.0f));
      rows.push_back(v);
    }
  }
  return rows;
}

}  // namespace paceline::testing
