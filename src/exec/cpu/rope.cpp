#include "exec/cpu/rope.h"

#include <cmath>
#include <numbers>

#include "base/error.h"

namespace paceline {

std::vector<float> rope_inv_freq(int64_t head_dim, double theta,
                                 const std::optional<RopeScaling>& scaling) {
  if (head_dim <= 0 || head_dim % 2 != 0) fail("RoPE needs an even head_dim, got {}", head_dim);
  int64_t half = head_dim / 2;
  std::vector<float> inv_freq(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    float exponent = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    inv_freq[i] = 1.0f / std::pow(static_cast<float>(theta), exponent);
  }
  if (!scaling) return inv_freq;

  const RopeScaling& s = *scaling;
  if (s.high_freq_factor <= s.low_freq_factor) {
    fail("llama3 rope scaling needs high_freq_factor > low_freq_factor, got {} and {}",
         s.high_freq_factor, s.low_freq_factor);
  }
  double old_context = static_cast<double>(s.original_max_position_embeddings);
  double low_freq_wavelen = old_context / s.low_freq_factor;
  double high_freq_wavelen = old_context / s.high_freq_factor;
  for (float& f : inv_freq) {
    double wavelen = 2.0 * std::numbers::pi / f;
    if (wavelen < high_freq_wavelen) continue;  // high frequencies: untouched
    if (wavelen > low_freq_wavelen) {           // low frequencies: slowed by the full factor
      f = static_cast<float>(f / s.factor);
      continue;
    }
    double smooth =
        (old_context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
    f = static_cast<float>((1.0 - smooth) * f / s.factor + smooth * f);
  }
  return inv_freq;
}

RotaryEmbedding::RotaryEmbedding(int64_t head_dim, double theta,
                                 const std::optional<RopeScaling>& scaling)
    : head_dim_(head_dim), inv_freq_(rope_inv_freq(head_dim, theta, scaling)) {}

void RotaryEmbedding::cos_sin(int64_t position, float* out) const {
  int64_t half = head_dim_ / 2;
  float pos = static_cast<float>(position);
  for (int64_t i = 0; i < half; ++i) {
    float angle = inv_freq_[i] * pos;  // float32 product, as HF's matmul of the two
    out[i] = std::cos(angle);
    out[half + i] = std::sin(angle);
  }
}

void RotaryEmbedding::rotate(float* heads, int64_t num_heads, const float* cos_sin) const {
  int64_t half = head_dim_ / 2;
  const float* cos = cos_sin;
  const float* sin = cos_sin + half;
  for (int64_t h = 0; h < num_heads; ++h) {
    float* x = heads + h * head_dim_;
    for (int64_t i = 0; i < half; ++i) {
      float x1 = x[i];
      float x2 = x[half + i];
      x[i] = x1 * cos[i] - x2 * sin[i];
      x[half + i] = x2 * cos[i] + x1 * sin[i];
    }
  }
}

}  // namespace paceline
